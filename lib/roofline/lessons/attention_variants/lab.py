"""The attention-variants lesson's figures, readout and explorer: KV bytes per token and per user, for MHA,
GQA, MQA, MLA and sliding windows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from roofline.course.figures import COLORS, PALETTE, LiveFigure, new_figure, nice_limits
from roofline.course.readouts import combine_readouts, decode_readout, table_html
from roofline.course.widgets import STEP, Explorer
from roofline.data import get_model, models
from roofline.errors import RooflineError
from roofline.lessons.kv_cache.numbers import CONTEXT_SWEEP
from roofline.physics.architecture import kv_bytes_per_token, kv_bytes_per_token_mha, sequence_kv_bytes
from roofline.physics.memory import max_batch
from roofline.scenario import Scenario
from roofline.units import GB, KiB

ATTENTION_MODELS = ("llama-2-7b", "llama-3-8b", "mistral-7b", "gpt-oss-120b", "deepseek-v3")


def as_mqa(model):
    """The same model with one KV head (multi-query attention): a hypothetical row for comparison.

    >>> kv_bytes_per_token(as_mqa("llama-3-8b")) / KiB      # 2 x 32 x 1 x 128 x 2 bytes
    16.0
    """
    m = get_model(model)
    return replace(m, id=f"{m.id} as MQA", kv_heads=1)


def attention_kind(model) -> str:
    """A short label for a model's attention: MHA, GQA, MQA, MLA, plus any sliding window."""
    m = get_model(model)
    if getattr(m, "is_mla", False):
        kind = "MLA"
    elif m.kv_heads == m.attention_heads:
        kind = "MHA"
    elif m.kv_heads == 1:
        kind = "MQA"
    else:
        kind = f"GQA {m.attention_heads}:{m.kv_heads}"
    w = getattr(m, "sliding_window", 0)
    if w:
        layers = getattr(m, "sliding_window_layers", m.layers)
        kind += f", window {w:,}" + ("" if layers == m.layers else f" in {layers}/{m.layers} layers")
    return kind


class KvPerUserVsContext(LiveFigure):
    """KV-cache bytes one user holds against context, per attention variant (log-log): sliding windows
    flatten, MLA and GQA shift the line down. The scenario's model and context are marked."""

    def _build(self):
        ax = self.axes[0]
        self.lines = {
            mid: self._line(ax, color=c, label=f"{mid} ({attention_kind(mid)})")
            for mid, c in zip([m for m in ATTENTION_MODELS if m in models()], PALETTE, strict=False)
        }
        self.marker = self._line(ax, "o", color="black", ms=9, zorder=6)
        ax.set(xscale="log", yscale="log", xlabel="context per user, T (tokens)", ylabel="KV per user (GB)",
               xlim=(CONTEXT_SWEEP[0], CONTEXT_SWEEP[-1]))  # fmt: skip
        ax.legend(loc="upper left", fontsize=10)

    def _draw(self, s):
        ax = self.axes[0]
        values = []
        for mid, line in self.lines.items():
            kv = np.asarray(sequence_kv_bytes(mid, CONTEXT_SWEEP, s.kv_precision)) / GB
            line.set_data(CONTEXT_SWEEP, kv)
            values.append(kv)
        ax.set_ylim(nice_limits(np.concatenate(values), log=True))
        here = float(sequence_kv_bytes(s.model, s.context_tokens, s.kv_precision)) / GB
        self.marker.set_data([s.context_tokens], [here])
        text, at = f"{s.model}, T={s.context_tokens:,}: {here:.3g} GB", (s.context_tokens, here)
        self._note(ax, text, at, (-10, -22), ha="right", fontsize=11)
        ax.set_title(f"KV cache per user, {s.kv_precision}", fontsize=12)


def kv_per_token_figure(kv_precision: str = "bf16"):
    """A static bar chart: KV bytes per token for MHA → GQA → MQA → MLA (KiB, log scale), with the
    MHA equivalent of the GQA and MLA models as grey bars. Returns a matplotlib Figure."""
    cases = [(f"{m}\n{attention_kind(m)}", m) for m in ("llama-2-7b", "llama-3-8b") if m in models()]
    cases.append(("llama-3-8b as MQA\n(hypothetical)", as_mqa("llama-3-8b")))
    cases += [(f"{m}\n{attention_kind(m)}", m) for m in ("deepseek-v3",) if m in models()]
    built = [kv_bytes_per_token(m, kv_precision) / KiB for _, m in cases]
    full = [kv_bytes_per_token_mha(m, kv_precision) / KiB for _, m in cases]
    fig, (ax,) = new_figure(1, figsize=(9, 4.5))
    x = np.arange(len(cases))
    ax.bar(x - 0.2, full, 0.4, color="#bbbbbb", label="if full multi-head")
    ax.bar(x + 0.2, built, 0.4, color=COLORS["kv"], label="as built")
    for i, (b, f) in enumerate(zip(built, full, strict=True)):
        ax.text(i + 0.2, b * 1.1, f"{b:,.0f}", ha="center", fontsize=11)
        ax.text(i - 0.2, f * 1.1, f"{f:,.0f}", ha="center", fontsize=10, color="#555555")
    ax.set_xticks(x, [label for label, _ in cases], fontsize=10)
    ax.set(yscale="log", ylabel=f"KV per token (KiB, {kv_precision})", ylim=(8, 30000))
    ax.legend(loc="upper left")
    return fig


def attention_readout(s: Scenario) -> str:
    """HTML table: attention kind, KV per token, KV per user at T, the batch's KV and the largest batch."""
    m = get_model(s.model)
    per_user = float(sequence_kv_bytes(m, s.context_tokens, s.kv_precision))
    rows = [
        ("attention", attention_kind(m)),
        ("KV per token (full layers)", f"{kv_bytes_per_token(m, s.kv_precision) / KiB:,.1f} KiB"),
        ("KV per user at T", f"{per_user / GB:.3f} GB"),
        ("KV of the batch", f"{s.batch * per_user / GB:,.1f} GB"),
    ]
    try:
        most = max_batch(m, s.gpu, max(s.context_tokens, 1), **s.deployment)
        rows.append(("largest batch that fits", f"{most:,} users"))
    except RooflineError as err:
        rows.append(("largest batch that fits", str(err)))
    return table_html(rows)


def attention_explorer(scenario: Scenario | None = None) -> Explorer:
    """The attention-variants lesson's explorer: every control of a step, and the KV precision."""
    return Explorer(
        KvPerUserVsContext,
        controls=[*STEP[:4], "kv_precision", *STEP[4:]],
        scenario=scenario or Scenario(model="mistral-7b", context_tokens=32768, batch=16),
        readout=combine_readouts(attention_readout, decode_readout),
    )
