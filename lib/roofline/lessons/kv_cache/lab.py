"""The figures, readouts and explorer of lesson 28, taught in notebooks/28_kv_cache.ipynb."""

from __future__ import annotations

import html

import numpy as np

from roofline.course.figures import COLORS, LiveFigure, nice_limits
from roofline.course.readouts import decode_readout, table_html
from roofline.course.widgets import STEP, Explorer
from roofline.data import get_model
from roofline.lessons.kv_cache.numbers import (
    COMPARE_GPUS,
    COMPARE_KV_PRECISIONS,
    CONTEXT_SWEEP,
    kv_table_rows,
)
from roofline.lessons.step_time.lab import MemoryUse
from roofline.physics.architecture import kv_bytes_per_token
from roofline.physics.memory import (
    max_batch,
    memory_available_bytes,
    memory_capacity_bytes,
    memory_needed_bytes,
)
from roofline.scenario import Scenario
from roofline.units import GB, KiB


def kv_table_html(kv_precision="bf16") -> str:
    """``kv_table_rows`` as an HTML table (KiB per token, GB per user at the longest context).

    >>> "320 KiB" in kv_table_html("bf16")   # Llama 3 70B
    True
    """
    head = ["model", "L", "H", "H_kv", "d_h", "KV per token", "if full MHA", "GQA saves"]
    head.append("one user at max context")
    body = ""
    for r in kv_table_rows(kv_precision):
        shape = [r[k] for k in ("model", "layers", "heads", "kv_heads", "head_dim")]
        kib = [f"{r[k] / KiB:,.0f} KiB" for k in ("kv_bytes_per_token", "kv_bytes_per_token_mha")]
        longest = f"{r['kv_bytes_at_max_context'] / GB:.1f} GB ({r['max_context_tokens']:,} tokens)"
        cells = [*shape, *kib, f"{r['gqa_factor']:.0f}x", longest]
        body += "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>"
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return (
        f'<table class="roofline-kv-table" style="font-size:14px"><caption>KV cache in {kv_precision}'
        f"</caption><tr>{header}</tr>{body}</table>"
    )


class MaxBatchVsContext(LiveFigure):
    """The largest batch that fits against context per user (log-log), one line per KV precision
    (option ``by="kv_precision"``, the default) or per GPU (``by="gpu"``); the scenario is marked."""

    def _build(self):
        ax = self.axes[0]
        self.by = self.options.get("by", "kv_precision")
        keys = COMPARE_GPUS if self.by == "gpu" else COMPARE_KV_PRECISIONS
        palette = [COLORS["weights"], COLORS["kv"], COLORS["compute"], COLORS["prefill"], COLORS["capacity"]]
        self.lines = {k: self._line(ax, color=c, label=k) for k, c in zip(keys, palette, strict=False)}
        self.marker = self._line(ax, "o", color="black", zorder=6)
        self.window = self._moving(ax.axvspan(1, 2, color=COLORS["overflow"], alpha=0.2, lw=0))
        ax.set(xscale="log", yscale="log", xlim=(CONTEXT_SWEEP[0], CONTEXT_SWEEP[-1]))
        ax.set(xlabel="context per user, T (tokens)", ylabel="largest batch that fits (users)")
        ax.legend(loc="upper right", title="KV precision" if self.by != "gpu" else "GPU")

    def _draw(self, s):
        tr = self._transient_artist
        ax = self.axes[0]
        kw = s.deployment
        texts = {t.get_text().split(":")[0]: t for t in ax.get_legend().get_texts()}
        values = []
        for key, line in self.lines.items():
            if self.by == "gpu":
                b = max_batch(s.model, key, CONTEXT_SWEEP, **kw).astype(float)
            else:
                b = max_batch(s.model, s.gpu, CONTEXT_SWEEP, **{**kw, "kv_precision": key}).astype(float)
            texts[key].set_text(key if np.any(b >= 1) else f"{key}: weights do not fit")
            b[b < 1] = np.nan  # nobody fits: no point on a log axis
            line.set_data(CONTEXT_SWEEP, b)
            values.append(b)
        ax.set_ylim(nice_limits(np.concatenate(values + [[1.0]]), log=True))
        here = max_batch(s.model, s.gpu, s.context_tokens, **kw)
        if self._mark(self.marker, here >= 1, [s.context_tokens], [here]):
            side = "right" if s.context_tokens > 2000 else "left"
            at, text = (s.context_tokens, here), f"T={s.context_tokens:,}: {here:,} users"
            self._note(ax, text, at, (-8, -22), fontsize=12, ha=side)
        else:
            text = f"{s.gpu}: the weights alone do not fit, no user fits"
            tr(ax.text(0.03, 0.05, text, transform=ax.transAxes, fontsize=12, color="#444"))
        window = get_model(s.model).max_context_tokens
        self.window.set_x(window)
        self.window.set_width(max(CONTEXT_SWEEP[-1] * 1.1 - window, 0))
        if window < CONTEXT_SWEEP[-1]:
            text = "beyond the model's\ncontext window"
            where = ax.get_xaxis_transform()
            tr(ax.text(window * 1.1, 0.04, text, transform=where, fontsize=11, color="#444"))
        what = f"{s.num_gpus}x {s.gpu}, {s.weight_precision} weights"
        if self.by == "gpu":
            what = f"{s.num_gpus} GPU(s), {s.weight_precision} weights, {s.kv_precision} KV"
        ax.set_title(f"Largest batch: {s.model} on {what}", fontsize=12)


def kv_readout(s: Scenario, options: dict | None = None) -> str:
    """HTML table for the lesson-28 explorer: KV per token, KV for B × T, memory, largest batch.

    >>> "34.4 GB" in kv_readout(Scenario(batch=64, context_tokens=4096))   # 64 x 4,096 x 128 KiB
    True
    """
    per_token = kv_bytes_per_token(s.model, s.kv_precision)
    kv = s.batch * s.context_tokens * per_token
    need = memory_needed_bytes(s.model, s.batch, s.context_tokens, s.weight_precision, s.kv_precision)
    total = memory_capacity_bytes(s.gpu, s.num_gpus)
    have = memory_available_bytes(s.gpu, s.num_gpus)  # what an engine leaves weights and KV (max_batch's)
    limit = max_batch(s.model, s.gpu, max(s.context_tokens, 1), **s.deployment)
    memory = f"{need / GB:.1f} GB of {have / GB:.0f} GB usable ({total / GB:.0f} GB on the GPUs)"
    rows = [
        ("KV per token", f"{per_token / KiB:,.0f} KiB ({s.kv_precision})"),
        (f"KV for {s.batch} x {s.context_tokens:,} tokens", f"{kv / GB:.1f} GB"),
        ("weights + KV", memory),
        ("largest batch at this context", f"{max(limit, 0):,} users"),
    ]
    # Then the decode step it allows: floor beside achievable, and the cost per 1M tokens.
    return table_html(rows) + decode_readout(s, options)


def kv_cache_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 28's explorer: weights and KV against the memory, with the KV precision.

    >>> kv_cache_explorer().scenario.context_tokens
    4096
    """
    return Explorer(
        MemoryUse,
        [*STEP[:4], "kv_precision", *STEP[4:]],
        scenario or Scenario(batch=64, context_tokens=4096),
        kv_readout,  # the KV per token and the largest batch, then the step: floor, a good engine, the cost
        presets={
            "the card: 64 users x 4,096 tokens": {"batch": 64, "context_tokens": 4096},
            "the card's 32 users x 1,000 tokens": {"batch": 32, "context_tokens": 1000},
        },
    )
