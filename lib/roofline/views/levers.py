"""Figures and readouts for the lever lessons: quantization, speculative decoding, mixture of experts and
attention variants (their explorers are in ``roofline.ui.explorers``). Numbers come from the library
(``roofline.physics``); this module only draws and formats them.

Taught in notebooks/quantization.ipynb, notebooks/speculative_decoding.ipynb,
notebooks/mixture_of_experts.ipynb and notebooks/attention_variants.ipynb.

>>> from roofline.scenario import Scenario
>>> QuantizationVsBatch(Scenario(batch=64))
<QuantizationVsBatch: llama-3-8b on 1x h100-sxm, bf16 weights, bf16 KV, B=64, T=1000>
>>> "tokens per verify step" in speculative_readout(Scenario(), SPECULATIVE_DEFAULTS)
True
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from roofline.data import get_gpu, get_model, models
from roofline.errors import RooflineError
from roofline.physics.architecture import (
    expected_experts_touched,
    kv_bytes_per_token,
    kv_bytes_per_token_mha,
    sequence_kv_bytes,
    weight_bytes,
    weight_bytes_read,
)
from roofline.physics.memory import max_batch
from roofline.physics.precision import get_precision
from roofline.physics.speculative import (
    expected_tokens_per_step,
    speculative_collapse_batch,
    speculative_step,
)
from roofline.physics.step import decode_step, forward_step
from roofline.scenario import Scenario
from roofline.units import GB, MS, KiB
from roofline.views.plots import BATCH_SWEEP, COLORS, LiveFigure, new_figure, nice_limits
from roofline.views.readouts import StepCase, table_html

PALETTE = ["#000000", "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#999999"]

# --------------------------------------------------------------------------------------------------
# Quantization
# --------------------------------------------------------------------------------------------------

# Weight precisions the quantization lesson compares (those the GPU has no math for are left out).
QUANT_PRECISIONS = ("bf16", "fp8", "int8", "int4", "fp4")


def supported_precisions(gpu, precisions=QUANT_PRECISIONS) -> list[str]:
    """The precisions of ``precisions`` whose matrix math ``gpu`` has (ids, in order).

    >>> supported_precisions("h100-sxm")
    ['bf16', 'fp8', 'int8', 'int4']
    """
    g = get_gpu(gpu)
    return [p for p in precisions if get_precision(p).compute in g.dense_flops_per_s]


def _decode_sweep(s: Scenario, precision: str, batch=BATCH_SWEEP):
    return decode_step(
        s.model, s.gpu, batch, s.context_tokens, num_gpus=s.num_gpus, weight_precision=precision,
        kv_precision=s.kv_precision, on_overflow="mask",
    )  # fmt: skip


class QuantizationVsBatch(LiveFigure):
    """Left: decode step time against batch for each weight precision (log-log). Right: each precision's
    tokens/s per user over BF16's at the same batch: what quantization buys, batch by batch."""

    ncols = 2

    def _build(self):
        left, right = self.axes
        m = self._moving
        styles = {"int8": "--"}  # int8 and fp8 coincide on GPUs that run both at the same rate
        self.lines = {
            p: (
                m(left.plot([], [], color=c, ls=styles.get(p, "-"), label=p)[0]),
                m(right.plot([], [], color=c, ls=styles.get(p, "-"), label=p)[0]),
            )
            for p, c in zip(QUANT_PRECISIONS, PALETTE, strict=False)
        }
        self.marker = m(left.plot([], [], "o", color="black", zorder=6)[0])
        left.set(xscale="log", yscale="log", xlabel="batch B (users)", ylabel="decode step (ms)",
                 xlim=(1, BATCH_SWEEP[-1] * 1.05))  # fmt: skip
        right.set(xscale="log", xlabel="batch B (users)", ylabel="speed-up per user over BF16 (×)",
                  xlim=(1, BATCH_SWEEP[-1] * 1.05))  # fmt: skip
        right.axhline(1.0, color="#777777", lw=1)
        left.legend(loc="upper left", title="weights")

    @property
    def background_key(self):  # the legend lists the precisions this GPU has
        return tuple(supported_precisions(self.scenario.gpu))

    def _draw(self, s):
        left, right = self.axes
        have = supported_precisions(s.gpu)
        base = _decode_sweep(s, "bf16")
        times = []
        for p, (line, ratio) in self.lines.items():
            if p not in have:
                line.set_data([], []), ratio.set_data([], [])
                continue
            sweep = _decode_sweep(s, p)
            line.set_data(BATCH_SWEEP, sweep.step_time_s / MS)
            ratio.set_data(BATCH_SWEEP, base.step_time_s / sweep.step_time_s)
            times.append(sweep.step_time_s / MS)
        left.set_ylim(nice_limits(np.concatenate(times), log=True))
        right.set_ylim(0, 4.5)
        if s.weight_precision in have:
            here = _decode_sweep(s, s.weight_precision, s.batch)
            if here.fits:
                self.marker.set_data([s.batch], [here.step_time_s / MS])
            else:
                self.marker.set_data([], [])
        texts = {t.get_text().split(" ")[0]: t for t in left.get_legend().get_texts()}
        for p, t in texts.items():
            t.set_text(p if p in have else f"{p} (no math on this GPU)")
        left.set_title(f"{s.model} on {s.num_gpus}x {s.gpu}, T={s.context_tokens:,}", fontsize=12)
        right.set_title("BF16 step ÷ this precision's step", fontsize=12)


def quantization_readout(s: Scenario) -> str:
    """HTML table: for each weight precision the GPU has, weight bytes, step at the scenario's batch and
    what binds it, tokens/s per user, the gain over BF16 and the largest batch that fits."""
    rows = []
    base = _decode_sweep(s, "bf16", s.batch)
    for p in supported_precisions(s.gpu):
        step = _decode_sweep(s, p, s.batch)
        w = weight_bytes(s.model, p)
        most = max_batch(s.model, s.gpu, max(s.context_tokens, 1), num_gpus=s.num_gpus,
                            weight_precision=p, kv_precision=s.kv_precision)  # fmt: skip
        if not step.fits:
            rows.append((p, f"{w / GB:.1f} GB of weights; B={s.batch} does not fit (at most {most})"))
            continue
        gain = base.step_time_s / step.step_time_s if base.fits else float("nan")
        rows.append(
            (
                p,
                f"{w / GB:.1f} GB; {step.step_time_s / MS:.2f} ms ({step.binding}); "
                f"{step.tokens_per_s_per_user:,.0f} tok/s/user; "
                + (f"{gain:.2f}x BF16; " if gain == gain else "")
                + f"fits {most:,} users",
            )
        )
    return table_html(rows)


# --------------------------------------------------------------------------------------------------
# Speculative decoding
# --------------------------------------------------------------------------------------------------

SPECULATIVE_DEFAULTS = {"draft_tokens": 4, "acceptance": 0.7, "draft_cost_ratio": 0.05}
ACCEPTANCES = (0.5, 0.7, 0.9)


def _spec(s: Scenario, batch, options, **changes):
    o = {**SPECULATIVE_DEFAULTS, **(options or {}), **changes}
    return speculative_step(
        s.model, s.gpu, batch, s.context_tokens, draft_tokens=o["draft_tokens"], acceptance=o["acceptance"],
        draft_cost_ratio=o["draft_cost_ratio"], num_gpus=s.num_gpus, weight_precision=s.weight_precision,
        kv_precision=s.kv_precision, on_overflow="mask",
    )  # fmt: skip


class ExpectedTokens(LiveFigure):
    """Expected tokens per verify step, (1 − α^(k+1)) ÷ (1 − α), against the drafts k, for a few α;
    the dashed line is k + 1 (every draft accepted). Does not depend on the scenario."""

    def _build(self):
        ax = self.axes[0]
        k = np.arange(0, 13)
        ax.plot(k, k + 1, ls="--", color="#777777", label="α = 1: k + 1")
        for a, c in zip((0.9, 0.8, 0.7, 0.6, 0.5), PALETTE[1:], strict=False):
            ax.plot(k, expected_tokens_per_step(a, k), "o-", ms=4, color=c, label=f"α = {a}")
            ax.axhline(1 / (1 - a), color=c, lw=0.8, ls=":")
        ax.set(xlabel="drafted tokens per step, k", ylabel="expected tokens per verify step", ylim=(0, 14))
        ax.legend(loc="upper left", fontsize=11)
        ax.set_title("Dotted: the limit 1 ÷ (1 − α) however many tokens are drafted", fontsize=12)

    def _draw(self, s):
        pass


class SpeculativeSpeedupVsBatch(LiveFigure):
    """Left: speculative and plain tokens/s per user against batch (log-log). Right: the speed-up per user
    against batch for a few acceptance rates and the explorer's own (bold), with 1× marked and the batch
    where the gain first drops below 1. Options: ``draft_tokens``, ``acceptance``, ``draft_cost_ratio``."""

    ncols = 2

    def _build(self):
        left, right = self.axes
        m = self._moving
        self.plain = m(left.plot([], [], color=COLORS["decode"], label="plain decode")[0])
        self.spec = m(left.plot([], [], color=COLORS["prefill"], label="speculative")[0])
        self.marker = m(right.plot([], [], "o", color="black", zorder=6)[0])
        self.others = {
            a: m(right.plot([], [], color=c, lw=1.2, label=f"α = {a}")[0])
            for a, c in zip(ACCEPTANCES, PALETTE[1:], strict=False)
        }
        self.mine = m(right.plot([], [], color="black", lw=2.6, label="your α")[0])
        left.set(xscale="log", yscale="log", xlabel="batch B (users)", ylabel="tokens/s per user",
                 xlim=(1, BATCH_SWEEP[-1] * 1.05))  # fmt: skip
        right.set(xscale="log", xlabel="batch B (users)", ylabel="speed-up per user (×)",
                  xlim=(1, BATCH_SWEEP[-1] * 1.05))  # fmt: skip
        right.axhline(1.0, color="#777777", lw=1)
        left.legend(loc="lower left")
        right.legend(loc="upper right", fontsize=11)

    def _draw(self, s):
        left, right = self.axes
        o = {**SPECULATIVE_DEFAULTS, **self.options}
        sweep = _spec(s, BATCH_SWEEP, o)
        self.plain.set_data(BATCH_SWEEP, sweep.plain_tokens_per_s_per_user)
        self.spec.set_data(BATCH_SWEEP, sweep.tokens_per_s_per_user)
        left.set_ylim(nice_limits(np.concatenate([sweep.plain_tokens_per_s_per_user,
                                                  sweep.tokens_per_s_per_user]), log=True))  # fmt: skip
        tops = [np.nanmax(np.append(sweep.speedup, 1.0))]
        for a, line in self.others.items():
            other = _spec(s, BATCH_SWEEP, o, acceptance=a)
            line.set_data(BATCH_SWEEP, other.speedup)
            tops.append(np.nanmax(np.append(other.speedup, 1.0)))
        self.mine.set_data(BATCH_SWEEP, sweep.speedup)
        right.set_ylim(nice_limits(tops, log=False))
        here = _spec(s, s.batch, o)
        if here.fits:
            self.marker.set_data([s.batch], [here.speedup])
        else:
            self.marker.set_data([], [])
        below = np.asarray(sweep.speedup) < 1
        if below.any():
            b = BATCH_SWEEP[np.argmax(below)]
            self._transient_artist(right.axvline(b, color=COLORS["prefill"], ls="--", lw=1))
            self._transient_artist(
                right.text(
                    b * 1.08,
                    0.05,
                    f"< 1× from B ≈ {b}",
                    transform=right.get_xaxis_transform(),
                    fontsize=11,
                    color=COLORS["prefill"],
                )  # fmt: skip
            )
        self._shade_overflow(right, self._first_overflow_batch(s), BATCH_SWEEP[-1])
        left.set_title(f"{s.model} on {s.num_gpus}x {s.gpu}, T={s.context_tokens:,}", fontsize=12)
        right.set_title(
            f"k = {o['draft_tokens']}, draft cost r = {o['draft_cost_ratio']:g}, "
            f"your α = {o['acceptance']:g}",
            fontsize=12,
        )


def speculative_readout(s: Scenario, options: dict | None = None) -> str:
    """HTML table of one speculative cycle at the scenario: E, draft, verify, cycle, speed-up, collapse."""
    o = {**SPECULATIVE_DEFAULTS, **(options or {})}
    x = _spec(s, s.batch, o)
    if not x.fits:
        return table_html([("memory", "does not fit: no step time")])
    collapse = speculative_collapse_batch(
        s.model, s.gpu, s.context_tokens, draft_tokens=o["draft_tokens"], acceptance=o["acceptance"],
        draft_cost_ratio=o["draft_cost_ratio"], num_gpus=s.num_gpus, weight_precision=s.weight_precision,
        kv_precision=s.kv_precision,
    )  # fmt: skip
    never = "never (up to 4,096 users that fit)"
    plain = x.plain_tokens_per_s_per_user
    return table_html(
        [
            ("tokens per verify step", f"{x.expected_tokens_per_step:.2f}"),
            ("draft time", f"{x.draft_time_s / MS:.2f} ms"),
            ("verify time", f"{x.verify_time_s / MS:.2f} ms ({x.verify_binding}-bound)"),
            ("plain step", f"{x.plain_step_time_s / MS:.2f} ms"),
            ("tokens/s per user", f"{x.tokens_per_s_per_user:,.0f} (plain {plain:,.0f})"),
            ("speed-up", f"{x.speedup:.2f}x"),
            ("below 1x from batch", never if collapse != collapse else f"{collapse:,.0f}"),
        ]
    )  # fmt: skip


def speculative_case(s: Scenario, options: dict | None = None) -> StepCase:
    """The step the speculative lesson's explorer is about: one speculative cycle of B users, the verify
    step (k + 1 new tokens each) plus k drafts at r plain decode steps each, giving each user E tokens.

    >>> c = speculative_case(Scenario(context_tokens=128), {"draft_tokens": 4, "acceptance": 0.7,
    ...                                                     "draft_cost_ratio": 0.05})
    >>> c.title, round(c.tokens_per_user, 2)        # E = (1 - 0.7^5) / (1 - 0.7)
    ('one speculative cycle of one user at 128 tokens: 4 drafts, then the verify step', 2.77)
    """
    o = {**SPECULATIVE_DEFAULTS, **(options or {})}
    k, a, r = int(o["draft_tokens"]), float(o["acceptance"]), float(o["draft_cost_ratio"])
    kw = dict(num_gpus=s.num_gpus, weight_precision=s.weight_precision, kv_precision=s.kv_precision,
              on_overflow="mask")  # fmt: skip
    verify = forward_step(s.model, s.gpu, s.batch, s.context_tokens, new_tokens=k + 1, **kw)
    plain = forward_step(s.model, s.gpu, s.batch, s.context_tokens, new_tokens=1, **kw)
    who = "one user" if s.batch == 1 else f"{s.batch:,} users"
    title = f"one speculative cycle of {who} at {s.context_tokens:,} tokens: {k} drafts, then the verify step"
    parts = ((verify, 1.0), (plain, k * r))
    return StepCase(title, parts, float(expected_tokens_per_step(a, k)), float(s.batch))


# --------------------------------------------------------------------------------------------------
# Mixture of experts
# --------------------------------------------------------------------------------------------------

MOE_MODELS = ("mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-120b", "deepseek-v3")


def _known(ids):
    table = models()
    return [m for m in ids if m in table]


class MoEReadVsBatch(LiveFigure):
    """Left: fraction of the routed experts a step touches against the tokens in the step, per MoE model.
    Right: the scenario model's weight bytes read per step against batch, between the active-only read
    (one token) and everything resident; and the weight bytes per token produced."""

    ncols = 2

    def _build(self):
        left, right = self.axes
        m = self._moving
        self.touched = {
            mid: m(left.plot([], [], color=c, label=mid)[0])
            for mid, c in zip(_known(MOE_MODELS), PALETTE[1:], strict=False)
        }
        self.read = m(right.plot([], [], color=COLORS["weights"], lw=2.4, label="weights read per step")[0])
        self.per_token = m(right.plot([], [], color=COLORS["kv"], ls="--", label="weights read per token")[0])
        self.resident = m(
            right.plot([], [], color=COLORS["capacity"], ls=":", label="resident (all experts)")[0]
        )
        self.marker = m(right.plot([], [], "o", color="black", zorder=6)[0])
        left.set(
            xscale="log",
            xlabel="tokens in the step (batch × new tokens)",
            ylabel="routed experts touched (fraction)",
            ylim=(0, 1.05),
            xlim=(1, BATCH_SWEEP[-1] * 1.05),
        )
        right.set(xscale="log", yscale="log", xlabel="batch B (users, one token each)", ylabel="GB",
                  xlim=(1, BATCH_SWEEP[-1] * 1.05))  # fmt: skip
        left.legend(loc="lower right", fontsize=11)
        right.legend(loc="lower left", fontsize=11)

    def _draw(self, s):
        left, right = self.axes
        for mid, line in self.touched.items():
            m = get_model(mid)
            shared = getattr(m, "shared_experts", 0)  # always read; the fraction is of the routed ones
            routed = np.asarray(expected_experts_touched(mid, BATCH_SWEEP)) - shared
            line.set_data(BATCH_SWEEP, routed / m.experts)
        read = np.asarray(weight_bytes_read(s.model, s.weight_precision, BATCH_SWEEP)) / GB
        resident = weight_bytes(s.model, s.weight_precision) / GB
        self.read.set_data(BATCH_SWEEP, read)
        self.per_token.set_data(BATCH_SWEEP, read / BATCH_SWEEP)
        self.resident.set_data([1, BATCH_SWEEP[-1] * 1.05], [resident, resident])
        right.set_ylim(nice_limits(np.concatenate([read / BATCH_SWEEP, [resident]]), log=True))
        here = float(weight_bytes_read(s.model, s.weight_precision, s.batch)) / GB
        self.marker.set_data([s.batch], [here])
        self._transient_artist(
            right.annotate(
                f"B={s.batch}: {here:,.1f} GB read",
                (s.batch, here),
                xytext=(8, -20),
                textcoords="offset points",
                fontsize=11,
            )  # fmt: skip
        )
        right.set_title(f"{s.model}, {s.weight_precision} weights", fontsize=12)
        left.set_title("E·(1 − (1 − k/E)^n) ÷ E", fontsize=12)


def moe_readout(s: Scenario) -> str:
    """HTML table: resident vs read weights, experts touched, step and tokens/s at the scenario."""
    m = get_model(s.model)
    step = s.decode()
    touched = float(expected_experts_touched(m, s.batch))
    read = float(weight_bytes_read(m, s.weight_precision, s.batch))
    have = step.memory_capacity_bytes
    rows = [
        ("experts", f"{m.experts} routed, {m.experts_per_token} per token" if m.is_moe else "dense model"),
        ("experts touched per layer", f"{touched:.1f} of {m.experts}"),
        ("weights resident", f"{weight_bytes(m, s.weight_precision) / GB:,.1f} GB"),
        ("weights read per step", f"{read / GB:,.1f} GB"),
        ("memory needed", f"{step.memory_needed_bytes / GB:,.0f} GB of {have / GB:,.0f} GB"),
    ]  # fmt: skip
    if step.fits:
        rows += [
            ("step time", f"{step.step_time_s / MS:.2f} ms ({step.binding}-bound)"),
            ("tokens/s per user", f"{step.tokens_per_s_per_user:,.0f}"),
            ("tokens/s total", f"{step.tokens_per_s_total:,.0f}"),
        ]
    else:
        rows.append(("step time", "does not fit in memory: no step time"))
    return table_html(rows)


# --------------------------------------------------------------------------------------------------
# Attention variants
# --------------------------------------------------------------------------------------------------

ATTENTION_MODELS = ("llama-2-7b", "llama-3-8b", "mistral-7b", "gpt-oss-120b", "deepseek-v3")
CONTEXT_SWEEP = np.unique(np.round(np.geomspace(128, 131072, 120)).astype(int))


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
        m = self._moving
        self.lines = {
            mid: m(ax.plot([], [], color=c, label=f"{mid} ({attention_kind(mid)})")[0])
            for mid, c in zip(_known(ATTENTION_MODELS), PALETTE, strict=False)
        }
        self.marker = m(ax.plot([], [], "o", color="black", ms=9, zorder=6)[0])
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
        self._transient_artist(
            ax.annotate(
                f"{s.model}, T={s.context_tokens:,}: {here:.3g} GB",
                (s.context_tokens, here),
                xytext=(-10, -22),
                textcoords="offset points",
                ha="right",
                fontsize=11,
            )  # fmt: skip
        )
        ax.set_title(f"KV cache per user, {s.kv_precision}", fontsize=12)


def kv_per_token_figure(kv_precision: str = "bf16"):
    """A static bar chart: KV bytes per token for MHA → GQA → MQA → MLA (KiB, log scale), with the
    MHA equivalent of the GQA and MLA models as grey bars. Returns a matplotlib Figure."""
    rows = []
    for mid in _known(("llama-2-7b", "llama-3-8b")):
        rows.append((f"{mid}\n{attention_kind(mid)}", kv_bytes_per_token(mid, kv_precision),
                     kv_bytes_per_token_mha(mid, kv_precision)))  # fmt: skip
    mqa = as_mqa("llama-3-8b")
    rows.append(("llama-3-8b as MQA\n(hypothetical)", kv_bytes_per_token(mqa, kv_precision),
                 kv_bytes_per_token_mha(mqa, kv_precision)))  # fmt: skip
    for mid in _known(("deepseek-v3",)):
        rows.append((f"{mid}\n{attention_kind(mid)}", kv_bytes_per_token(mid, kv_precision),
                     kv_bytes_per_token_mha(mid, kv_precision)))  # fmt: skip
    fig, (ax,) = new_figure(1, figsize=(9, 4.5))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r[2] / KiB for r in rows], 0.4, color="#bbbbbb", label="if full multi-head")
    ax.bar(x + 0.2, [r[1] / KiB for r in rows], 0.4, color=COLORS["kv"], label="as built")
    for i, r in enumerate(rows):
        ax.text(i + 0.2, r[1] / KiB * 1.1, f"{r[1] / KiB:,.0f}", ha="center", fontsize=11)
        ax.text(i - 0.2, r[2] / KiB * 1.1, f"{r[2] / KiB:,.0f}", ha="center", fontsize=10, color="#555555")
    ax.set_xticks(x, [r[0] for r in rows], fontsize=10)
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
        most = max_batch(m, s.gpu, max(s.context_tokens, 1), num_gpus=s.num_gpus,
                            weight_precision=s.weight_precision, kv_precision=s.kv_precision)  # fmt: skip
        rows.append(("largest batch that fits", f"{most:,} users"))
    except RooflineError as err:
        rows.append(("largest batch that fits", str(err)))
    return table_html(rows)
