"""The KV cache: what every token of context costs in memory, and how many users that leaves room for.

Taught in lesson 28 (notebooks/28_kv_cache.ipynb). The per-token formula lives in
``roofline.architecture.kv_bytes_per_token``; the fit test in ``roofline.memory``. This module adds the
views lesson 28 needs: the saving from grouped-query attention, the pool of KV tokens a GPU can hold,
a table over every model, and a figure of the largest batch against context.

    KV bytes per token = 2 (K and V) × L × H_kv × d_h × bytes per element
    KV token capacity  = (G × memory per GPU − weight bytes) ÷ KV bytes per token
    largest batch      = floor(capacity ÷ T)

>>> gqa_factor("llama-3-8b"), gqa_factor("llama-3-70b")
(4.0, 8.0)
>>> kv_token_capacity("llama-3-8b", "h100-sxm")          # tokens of context, all users together
487819
"""

from __future__ import annotations

import html

import numpy as np

from ._arrays import checked, out
from .architecture import kv_bytes_per_token, kv_bytes_per_token_mha, weight_bytes
from .data import get_gpu, get_model, models
from .memory import max_batch, memory_capacity_bytes, memory_needed_bytes
from .plots import COLORS, LiveFigure, nice_limits
from .scenario import Scenario
from .units import GB, MS, KiB
from .widgets import table_html

# Contexts the lesson's batch-vs-context figure sweeps (tokens per user, log-spaced).
CONTEXT_SWEEP = np.unique(np.round(np.geomspace(128, 131072, 120)).astype(int))
COMPARE_GPUS = ("h100-sxm", "h200", "b200", "a100-80gb-sxm", "l40s")
COMPARE_KV_PRECISIONS = ("bf16", "fp8", "int4")


def gqa_factor(model) -> float:
    """How many times smaller the KV cache is with grouped-query attention than it would be with full
    multi-head attention: KV bytes (H_kv = H) ÷ KV bytes (H_kv), i.e. H ÷ H_kv (a ratio).

    Taught in lesson 28.

    >>> gqa_factor("qwen2.5-7b")    # 28 query heads share 4 KV heads
    7.0
    """
    return kv_bytes_per_token_mha(model) / kv_bytes_per_token(model)


def kv_token_capacity(model, gpu, *, num_gpus=1, weight_precision="bf16", kv_precision="bf16"):
    """Tokens of KV cache that fit in ``num_gpus`` GPUs beside the weights (tokens, all users together).

    Users share this pool: B users at T tokens each fit while B × T ≤ capacity. 0 where the weights alone
    do not fit. Broadcasts over ``num_gpus``.

    Taught in lesson 28.

    >>> kv_token_capacity("llama-3-70b", "h100-sxm", num_gpus=[1, 2])   # 141 GB of BF16 weights
    array([    0, 57655])
    """
    n = checked(num_gpus, "num_gpus", minimum=1)
    free = np.asarray(memory_capacity_bytes(gpu, n)) - weight_bytes(model, weight_precision)
    return out(np.floor(np.maximum(free, 0) / kv_bytes_per_token(model, kv_precision)).astype(int))


def kv_table_rows(kv_precision="bf16") -> list[dict]:
    """One row per model in the table: its attention shape and KV bytes per token, computed (bytes).

    Keys: ``model``, ``layers``, ``heads``, ``kv_heads``, ``head_dim``, ``kv_bytes_per_token``,
    ``kv_bytes_per_token_mha``, ``gqa_factor``, ``kv_bytes_at_max_context`` (one user at the model's
    longest context). Taught in lesson 28.

    >>> row = kv_table_rows()[0]
    >>> row["model"], row["kv_bytes_per_token"] / 1024
    ('llama-3-8b', 128.0)
    """
    rows = []
    for m in models().values():
        per_token = kv_bytes_per_token(m, kv_precision)
        rows.append(
            {
                "model": m.id,
                "layers": m.layers,
                "heads": m.attention_heads,
                "kv_heads": m.kv_heads,
                "head_dim": m.head_dim,
                "kv_bytes_per_token": per_token,
                "kv_bytes_per_token_mha": kv_bytes_per_token_mha(m, kv_precision),
                "gqa_factor": gqa_factor(m),
                "max_context_tokens": m.max_context_tokens,
                "kv_bytes_at_max_context": per_token * m.max_context_tokens,
            }
        )
    return rows


def kv_table_html(kv_precision="bf16") -> str:
    """``kv_table_rows`` as an HTML table (KiB per token, GB per user at the longest context).
    Taught in lesson 28.

    >>> "320 KiB" in kv_table_html("bf16")   # Llama 3 70B
    True
    """
    head = [
        "model",
        "L",
        "H",
        "H_kv",
        "d_h",
        "KV per token",
        "if full MHA",
        "GQA saves",
        "one user at max context",
    ]
    body = ""
    for r in kv_table_rows(kv_precision):
        cells = [
            r["model"],
            r["layers"],
            r["heads"],
            r["kv_heads"],
            r["head_dim"],
            f"{r['kv_bytes_per_token'] / KiB:,.0f} KiB",
            f"{r['kv_bytes_per_token_mha'] / KiB:,.0f} KiB",
            f"{r['gqa_factor']:.0f}x",
            f"{r['kv_bytes_at_max_context'] / GB:.1f} GB ({r['max_context_tokens']:,} tokens)",
        ]
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
        m = self._moving
        self.by = self.options.get("by", "kv_precision")
        keys = COMPARE_GPUS if self.by == "gpu" else COMPARE_KV_PRECISIONS
        palette = [COLORS["weights"], COLORS["kv"], COLORS["compute"], COLORS["prefill"], COLORS["capacity"]]
        self.lines = {k: m(ax.plot([], [], color=c, label=k)[0]) for k, c in zip(keys, palette, strict=False)}
        self.marker = m(ax.plot([], [], "o", color="black", zorder=6)[0])
        self.window = m(ax.axvspan(1, 2, color=COLORS["overflow"], alpha=0.2, lw=0))
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="context per user, T (tokens)",
            ylabel="largest batch that fits (users)",
            xlim=(CONTEXT_SWEEP[0], CONTEXT_SWEEP[-1]),
        )
        ax.legend(loc="upper right", title="KV precision" if self.by != "gpu" else "GPU")

    def _draw(self, s):
        ax = self.axes[0]
        values = []
        for key, line in self.lines.items():
            kw = dict(num_gpus=s.num_gpus, weight_precision=s.weight_precision, kv_precision=s.kv_precision)
            kw["kv_precision" if self.by != "gpu" else "gpu"] = key
            gpu = kw.pop("gpu", s.gpu)
            b = max_batch(s.model, gpu, CONTEXT_SWEEP, **kw).astype(float)
            none_fit = not np.any(b >= 1)
            b[b < 1] = np.nan  # nobody fits: no point on a log axis
            line.set_data(CONTEXT_SWEEP, b)
            values.append(b)
            texts = {t.get_text().split(":")[0]: t for t in ax.get_legend().get_texts()}
            texts[key].set_text(f"{key}: weights do not fit" if none_fit else key)
        ax.set_ylim(nice_limits(np.concatenate(values + [[1.0]]), log=True))
        here = max_batch(
            s.model,
            s.gpu,
            s.context_tokens,
            num_gpus=s.num_gpus,
            weight_precision=s.weight_precision,
            kv_precision=s.kv_precision,
        )
        if here >= 1:
            self.marker.set_data([s.context_tokens], [here])
            self._transient_artist(
                ax.annotate(
                    f"T={s.context_tokens:,}: {here:,} users",
                    (s.context_tokens, here),
                    xytext=(-8, -22),
                    textcoords="offset points",
                    fontsize=12,
                    ha="right" if s.context_tokens > 2000 else "left",
                )
            )
        else:
            self.marker.set_data([], [])
            self._transient_artist(
                ax.text(
                    0.03,
                    0.05,
                    f"{s.gpu}: the weights alone do not fit, no user fits",
                    transform=ax.transAxes,
                    fontsize=12,
                    color="#444444",
                )
            )
        window = get_model(s.model).max_context_tokens
        self.window.set_x(window)
        self.window.set_width(max(CONTEXT_SWEEP[-1] * 1.1 - window, 0))
        if window < CONTEXT_SWEEP[-1]:
            self._transient_artist(
                ax.text(
                    window * 1.1,
                    0.04,
                    "beyond the model's\ncontext window",
                    transform=ax.get_xaxis_transform(),
                    fontsize=11,
                    color="#444444",
                )
            )
        what = (
            f"{s.num_gpus}x {s.gpu}, {s.weight_precision} weights"
            if self.by != "gpu"
            else f"{s.num_gpus} GPU(s), {s.weight_precision} weights, {s.kv_precision} KV"
        )
        ax.set_title(f"Largest batch: {s.model} on {what}", fontsize=12)


def kv_readout(s: Scenario) -> str:
    """HTML table for the lesson-28 explorer: KV per token, KV for B × T, memory, largest batch.
    Taught in lesson 28.

    >>> "34.4 GB" in kv_readout(Scenario(batch=64, context_tokens=4096))   # 64 x 4,096 x 128 KiB
    True
    """
    per_token = kv_bytes_per_token(s.model, s.kv_precision)
    kv = s.batch * s.context_tokens * per_token
    need = memory_needed_bytes(s.model, s.batch, s.context_tokens, s.weight_precision, s.kv_precision)
    have = memory_capacity_bytes(s.gpu, s.num_gpus)
    limit = max_batch(
        s.model,
        s.gpu,
        max(s.context_tokens, 1),
        num_gpus=s.num_gpus,
        weight_precision=s.weight_precision,
        kv_precision=s.kv_precision,
    )
    rows = [
        ("KV per token", f"{per_token / KiB:,.0f} KiB ({s.kv_precision})"),
        (f"KV for {s.batch} x {s.context_tokens:,} tokens", f"{kv / GB:.1f} GB"),
        ("weights + KV", f"{need / GB:.1f} GB of {have / GB:.0f} GB"),
        ("largest batch at this context", f"{limit:,} users"),
    ]
    step = s.decode()
    rows.append(
        ("decode step", f"{step.step_time_s / MS:.2f} ms" if step.fits else "does not fit: no step time")
    )
    return table_html(rows)


def compare_gpus_memory(model, context_tokens, gpus=COMPARE_GPUS, **kwargs) -> dict[str, int]:
    """Largest batch at ``context_tokens`` on each GPU in ``gpus`` (users). Taught in lesson 28.

    >>> compare_gpus_memory("llama-3-8b", 4096, gpus=("h100-sxm", "h200"))
    {'h100-sxm': 119, 'h200': 232}
    """
    return {g: int(max_batch(model, get_gpu(g), context_tokens, **kwargs)) for g in gpus}
