"""Prefill against decode, and what one long prompt does to everyone else: lessons 04, 15 and 16.

Taught in lesson 04 (notebooks/04_roofline.ipynb: ridge table, the bytes ÷ FLOP/s trap, roofline readout),
lesson 15 (notebooks/15_prefill_vs_decode.ipynb: prefill vs prompt length, the stall of streaming users)
and lesson 16 (notebooks/16_step_time.ipynb: what batching gains in total and costs each user).

Prefill pushes all P prompt tokens through the model in one pass, so the weights are read once for P
tokens: it turns compute-bound once P passes roughly the ridge point. A decode step at batch 1 reads the
same weights for a single token and stays memory-bound. While an unchunked prefill runs, every streaming
user waits: they miss prefill time ÷ decode step time steps.

>>> s = prefill_stall("llama-3-8b", "h100-sxm", 8000, include_attention=False)
>>> round(s.prefill_time_s * 1e3), round(s.stalled_steps)
(130, 27)
>>> prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm")
295
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass

import numpy as np

from ._arrays import checked, out
from .architecture import kv_bytes_per_token
from .core import ridge_point_flop_per_byte
from .data import get_gpu, gpus
from .decode import decode_step
from .errors import InvalidConfigurationError
from .memory import fits, kv_cache_bytes, memory_capacity_bytes, memory_needed_bytes
from .plots import COLORS, LiveFigure, RooflineChart, describe, nice_limits
from .precision import get_precision, peak_flops_per_s
from .prefill import compute_bound_prompt_tokens, prefill, stalled_decode_steps
from .scenario import Scenario
from .units import MS, TFLOPS

# Prompt lengths every prefill sweep evaluates (1 … 65,536 tokens, log-spaced integers).
PROMPT_SWEEP = np.unique(np.round(np.geomspace(1, 65536, 200)).astype(int))


# --------------------------------------------------------------------------------------------------------
# Physics and plain-number helpers
# --------------------------------------------------------------------------------------------------------
def prefill_crossover_prompt_tokens(
    model,
    gpu,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
    include_attention: bool = True,
    max_tokens: int = 2**24,
) -> int:
    """Shortest prompt (tokens) whose prefill is compute-bound in the full prefill model.

    ``roofline.compute_bound_prompt_tokens`` gives the textbook answer, ridge × bytes per weight ÷ 2,
    which assumes every stored weight is used by every token. This function asks ``roofline.prefill``
    itself (KV writes, attention's P² term, an MoE's expert reads) and returns the smallest integer P
    with compute time > memory time, by bisection. The GPU count cancels (both times divide by G).
    Raises ``InvalidConfigurationError`` if no P up to ``max_tokens`` is compute-bound.

    Parameters: model, gpu (ids or dataclasses); num_gpus G ≥ 1; precisions as in ``roofline.prefill``.

    >>> prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm", include_attention=False)  # + KV writes
    296
    >>> prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm")   # attention's FLOPs pull it back
    295
    >>> round(compute_bound_prompt_tokens("mixtral-8x7b", "h100-sxm"))   # the rule assumes a dense model
    295
    >>> prefill_crossover_prompt_tokens("mixtral-8x7b", "h100-sxm")     # all 8 experts read, 2 used
    1061
    """

    def compute_bound(p: int) -> bool:
        r = prefill(
            model,
            gpu,
            p,
            num_gpus=num_gpus,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            include_attention=include_attention,
        )
        return r.compute_time_s > r.memory_time_s

    if compute_bound(1):
        return 1
    lo, hi = 1, 2  # invariant: lo memory-bound, hi to be tested
    while not compute_bound(hi):
        lo, hi = hi, hi * 2
        if hi > max_tokens:
            raise InvalidConfigurationError(f"prefill stays memory-bound up to {max_tokens:,} prompt tokens")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if compute_bound(mid) else (mid, hi)
    return hi


@dataclass(frozen=True)
class PrefillStall:
    """An unchunked prefill and the streaming users it holds up. Arrays broadcast over P, B and T."""

    prompt_tokens: object  # P, tokens of the pasted prompt
    batch: object  # B, users streaming meanwhile
    context_tokens: object  # T, KV tokens each streaming user holds
    prefill_time_s: object  # how long every stream is frozen
    decode_step_time_s: object  # one decode step of the B streaming users (NaN if they do not fit)
    stalled_steps: object  # decode steps each user misses: prefill ÷ step

    def to_dict(self) -> dict:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in asdict(self).items()}


def prefill_stall(
    model,
    gpu,
    prompt_tokens,
    batch=1,
    context_tokens=0,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
    include_attention: bool = True,
) -> PrefillStall:
    """How long B streaming users freeze while one unchunked prefill of P tokens runs.

    Parameters
    ----------
    prompt_tokens : P, the pasted prompt, ≥ 1 (tokens). Array-like broadcasts.
    batch : B, users decoding when the paste arrives, ≥ 1 (users). Array-like broadcasts.
    context_tokens : T, KV tokens each of them holds, ≥ 0 (tokens).
    include_attention : False gives the card's 2 × N × P prefill; True adds attention's P² term.

    The missed steps are counted against the step time of the B users decoding together (where they do not
    fit in memory the step and the count are NaN). A larger B makes each step longer, so the same freeze
    costs fewer, longer steps.

    >>> s = prefill_stall("llama-3-8b", "h100-sxm", 8000, batch=[1, 30], context_tokens=1000)
    >>> np.round(s.prefill_time_s * 1e3).tolist(), np.round(s.stalled_steps, 1).tolist()
    ([147.0, 147.0], [30.4, 24.6])
    """
    p = prefill(
        model,
        gpu,
        prompt_tokens,
        num_gpus=num_gpus,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        include_attention=include_attention,
    )
    d = decode_step(
        model,
        gpu,
        batch,
        context_tokens,
        num_gpus=num_gpus,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        on_overflow="mask",
    )
    pt, b, t, prefill_s, step_s = np.broadcast_arrays(
        np.asarray(p.prompt_tokens),
        np.asarray(d.batch),
        np.asarray(d.context_tokens),
        np.asarray(p.time_s),
        np.asarray(d.step_time_s),
    )
    steps = np.full(step_s.shape, np.nan)
    ok = np.isfinite(step_s)
    steps[ok] = stalled_decode_steps(prefill_s[ok], step_s[ok])
    return PrefillStall(
        prompt_tokens=out(pt),
        batch=out(b),
        context_tokens=out(t),
        prefill_time_s=out(prefill_s),
        decode_step_time_s=out(step_s),
        stalled_steps=out(steps),
    )


def per_user_slowdown(step_time_batch_s, step_time_single_s):
    """How much slower each user's tokens arrive in a batch than alone: step(B) ÷ step(1) (ratio).

    >>> per_user_slowdown(6.0e-3, 4.8e-3)   # the card's Q3: 32 users, 1.25x slower each, not 32x
    1.25
    """
    b = checked(step_time_batch_s, "step_time_batch_s", above=0)
    one = checked(step_time_single_s, "step_time_single_s", above=0)
    return out(b / one)


def batching_gain(batch, step_time_batch_s, step_time_single_s):
    """Total-throughput gain of a batch of B over one user alone: B × step(1) ÷ step(B) (ratio).

    Each step makes B tokens instead of 1 but lasts step(B) instead of step(1), so the gain is B divided
    by the per-user slowdown.

    >>> round(batching_gain(32, 6.0e-3, 4.8e-3), 1)   # 32 ÷ 1.25 = 25.6x, not 32x
    25.6
    >>> np.round(batching_gain([1, 8], [4.8e-3, 4.9e-3], 4.8e-3), 2).tolist()
    [1.0, 7.84]
    """
    b = checked(batch, "batch", minimum=1)
    return out(b / np.asarray(per_user_slowdown(step_time_batch_s, step_time_single_s)))


def throughput_tokens_per_s(batch, step_time_s):
    """What one decode step of B users gives: (tokens/s each user sees, tokens/s the GPU makes).

    Every user gets one token per step, so per user = 1 ÷ step and in total = B ÷ step.

    >>> per_user, total = throughput_tokens_per_s(32, 6.0e-3)   # the card's Q3
    >>> round(per_user), round(total)
    (167, 5333)
    """
    b = checked(batch, "batch", minimum=1)
    t = checked(step_time_s, "step_time_s", above=0)
    b, t = np.broadcast_arrays(b, t)
    return out(1.0 / t), out(b / t)


def bytes_over_flops_trap(bytes_moved, peak_flops_per_s):
    """The card's trap, computed on purpose: bytes ÷ FLOP/s. NOT a time; its unit is byte·s/FLOP.

    Bytes only turn into seconds over a bandwidth (bytes/s), FLOPs over a FLOP rate. This number is what
    the mistake prints; lesson 04 shows it beside the right answers so the difference is visible.

    >>> bytes_over_flops_trap(16e9, 989e12)   # looks like "16 µs", is meaningless
    1.6177...e-05
    """
    b = checked(bytes_moved, "bytes_moved", minimum=0)
    p = checked(peak_flops_per_s, "peak_flops_per_s", above=0)
    return out(b / p)


def ridge_points(precision: str = "bf16", num_gpus=1) -> dict[str, float]:
    """Ridge point (FLOP/byte) of every GPU in the table at ``precision``; NaN where it lacks that math.

    The ridge is peak FLOP/s ÷ bandwidth; G GPUs multiply both, so it does not depend on ``num_gpus``.

    >>> r = ridge_points("bf16")
    >>> round(r["h100-sxm"]), round(r["h200"]), round(r["a100-80gb-sxm"])
    (295, 206, 153)
    >>> bool(np.isnan(ridge_points("fp8")["a100-80gb-sxm"]))
    True
    """
    get_precision(precision)
    n = checked(num_gpus, "num_gpus", minimum=1)
    table = {}
    for gid, g in gpus().items():
        if get_precision(precision).compute in g.dense_flops_per_s:
            table[gid] = float(
                ridge_point_flop_per_byte(
                    n * peak_flops_per_s(g, precision), n * g.memory_bandwidth_bytes_per_s
                )
            )
        else:
            table[gid] = float("nan")
    return table


def paste_fits(s: Scenario) -> bool:
    """True if the weights, the KV of B users at T tokens and the pasted prompt's P tokens of KV all fit.

    >>> paste_fits(Scenario(batch=30, prompt_tokens=8000))
    True
    >>> paste_fits(Scenario(batch=500, prompt_tokens=8000))   # 65.5 GB of KV + 16 GB of weights
    False
    """
    need = memory_needed_bytes(s.model, s.batch, s.context_tokens, s.weight_precision, s.kv_precision)
    need += kv_cache_bytes(1, s.prompt_tokens, kv_bytes_per_token(s.model, s.kv_precision))
    return bool(need <= memory_capacity_bytes(s.gpu, s.num_gpus))


# --------------------------------------------------------------------------------------------------------
# Tables and readouts (HTML; every number from the library)
# --------------------------------------------------------------------------------------------------------
class HtmlTable:
    """A small HTML table that shows itself in a notebook, with a short stable text form.

    >>> HtmlTable(["a", "b"], [["1", "2"]])
    <HtmlTable: 1 rows>
    """

    def __init__(self, header, rows):
        self.header, self.rows = list(header), [list(r) for r in rows]

    def _repr_html_(self) -> str:
        head = "".join(
            f'<th style="text-align:right;padding:2px 10px">{html.escape(h)}</th>' for h in self.header
        )
        body = "".join(
            "<tr>"
            + "".join(f'<td style="text-align:right;padding:2px 10px">{html.escape(c)}</td>' for c in r)
            + "</tr>"
            for r in self.rows
        )
        return f'<table class="roofline-table" style="font-size:14px"><tr>{head}</tr>{body}</table>'

    def __repr__(self) -> str:
        return f"<HtmlTable: {len(self.rows)} rows>"


def ridge_table(precisions=("bf16", "fp8")) -> HtmlTable:
    """Every GPU's bandwidth, peaks and ridge points, computed from the data tables (lesson 04).

    >>> ridge_table().rows[0][:2]
    ['NVIDIA H100 SXM5 80GB', '3.35']
    """
    ridges = {p: ridge_points(p) for p in precisions}
    header = ["GPU", "bandwidth (TB/s)"]
    header += [f"{p.upper()} dense (TFLOPS)" for p in precisions]
    header += [f"ridge {p.upper()} (FLOP/byte)" for p in precisions]
    rows = []
    for gid, g in gpus().items():
        compute = [get_precision(p).compute for p in precisions]
        peaks = [
            f"{g.dense_flops_per_s[c] / TFLOPS:,.0f}" if c in g.dense_flops_per_s else "—" for c in compute
        ]
        ridge = [("—" if np.isnan(ridges[p][gid]) else f"{ridges[p][gid]:,.0f}") for p in precisions]
        rows.append([g.name, f"{g.memory_bandwidth_bytes_per_s / 1e12:.2f}", *peaks, *ridge])
    return HtmlTable(header, rows)


def _table(rows) -> str:
    from .widgets import table_html  # imported here: widgets pulls in ipywidgets

    return table_html(rows)


def roofline_readout(s: Scenario) -> str:
    """HTML readout for the roofline explorer (lesson 04): ridge, and where decode and prefill sit."""
    g = get_gpu(s.gpu)
    peak = peak_flops_per_s(g, s.weight_precision)
    ridge = ridge_point_flop_per_byte(peak, g.memory_bandwidth_bytes_per_s)
    rows = [
        ("ridge point", f"{ridge:,.0f} FLOP/byte"),
        (
            "peak / bandwidth",
            f"{s.num_gpus * peak / TFLOPS:,.0f} TFLOP/s / "
            f"{s.num_gpus * g.memory_bandwidth_bytes_per_s / 1e12:.2f} TB/s",
        ),
    ]
    d = s.decode()
    if d.fits:
        rows.append(
            (
                f"decode B={s.batch}, T={s.context_tokens:,}",
                f"{d.arithmetic_intensity_flop_per_byte:,.1f} FLOP/byte, {d.step_time_s / MS:.2f} ms "
                f"({d.binding}-bound)",
            )
        )
    else:
        rows.append((f"decode B={s.batch}, T={s.context_tokens:,}", "does not fit in memory: no step time"))
    p = s.prefill()
    if fits(
        s.model,
        s.gpu,
        1,
        s.prompt_tokens,
        num_gpus=s.num_gpus,
        weight_precision=s.weight_precision,
        kv_precision=s.kv_precision,
    ):
        rows.append(
            (
                f"prefill P={s.prompt_tokens:,}",
                f"{p.flops / p.bytes_moved:,.0f} FLOP/byte, {p.time_s / MS:.2f} ms ({p.binding}-bound)",
            )
        )
    else:
        rows.append((f"prefill P={s.prompt_tokens:,}", "does not fit in memory: no time"))
    return _table(rows)


def prefill_readout(s: Scenario) -> str:
    """HTML readout for the prefill explorer (lesson 15): prefill vs one decode step, and the crossover."""
    ok = fits(
        s.model,
        s.gpu,
        1,
        max(s.prompt_tokens, s.context_tokens),
        num_gpus=s.num_gpus,
        weight_precision=s.weight_precision,
        kv_precision=s.kv_precision,
    )
    kw = dict(num_gpus=s.num_gpus, weight_precision=s.weight_precision, kv_precision=s.kv_precision)
    rows = [
        (
            "compute-bound from",
            f"P ≈ {compute_bound_prompt_tokens(s.model, s.gpu, s.weight_precision):,.0f}"
            f" (rule); P = {prefill_crossover_prompt_tokens(s.model, s.gpu, **kw):,} (full)",
        )
    ]
    if not ok:
        return _table(rows + [("prefill", "does not fit in memory: no time")])
    rough, exact = s.prefill(include_attention=False), s.prefill()
    d = s.decode(batch=1)
    rows += [
        (f"prefill P={s.prompt_tokens:,} (2NP)", f"{rough.time_s / MS:.2f} ms ({rough.binding}-bound)"),
        ("with attention's P² term", f"{exact.time_s / MS:.2f} ms ({exact.binding}-bound)"),
        (f"one decode step, B=1, T={s.context_tokens:,}", f"{d.step_time_s / MS:.2f} ms ({d.binding}-bound)"),
        ("prefill in decode steps", f"{stalled_decode_steps(exact.time_s, d.step_time_s):,.1f}"),
    ]
    return _table(rows)


def stall_readout(s: Scenario) -> str:
    """HTML readout for the stall explorer (lesson 15): the freeze and the steps B users miss."""
    kw = dict(num_gpus=s.num_gpus, weight_precision=s.weight_precision, kv_precision=s.kv_precision)
    rough = prefill_stall(s.model, s.gpu, s.prompt_tokens, 1, 0, include_attention=False, **kw)
    exact = prefill_stall(s.model, s.gpu, s.prompt_tokens, s.batch, s.context_tokens, **kw)
    if not np.isfinite(exact.decode_step_time_s):
        return _table([("streaming users", "do not fit in memory: no step time")])
    return _table(
        [
            (
                "freeze, 2NP rule",
                f"{rough.prefill_time_s / MS:.1f} ms = {rough.stalled_steps:.1f} batch-1 steps",
            ),
            ("freeze, with attention", f"{exact.prefill_time_s / MS:.1f} ms"),
            (f"decode step, B={s.batch}, T={s.context_tokens:,}", f"{exact.decode_step_time_s / MS:.2f} ms"),
            ("steps each user misses", f"{exact.stalled_steps:.1f}"),
        ]
    )


# --------------------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------------------
class LessonRooflineChart(RooflineChart):
    """``roofline.plots.RooflineChart`` with its legend in the empty upper-left corner, clear of the ridge
    label (which the course chart draws at the bottom, under its lower-right legend).

    >>> LessonRooflineChart(Scenario()).axes[0].get_legend()._loc
    2
    """

    def _build(self):
        super()._build()
        self.axes[0].legend(loc="upper left")


class PrefillVsPrompt(LiveFigure):
    """Prefill time against prompt length (log-log), split into compute and memory time, with one batch-1
    decode step for reference and the prompt length where prefill turns compute-bound marked.

    >>> PrefillVsPrompt(Scenario())
    <PrefillVsPrompt: llama-3-8b on 1x h100-sxm, bf16 weights, bf16 KV, B=1, T=1000>
    """

    def _build(self):
        ax = self.axes[0]
        m = self._moving
        self.lines = {
            "memory": m(
                ax.plot([], [], color=COLORS["weights"], ls="--", label="memory time (weights + KV writes)")[
                    0
                ]
            ),
            "compute": m(ax.plot([], [], color=COLORS["compute"], ls=":", label="compute time")[0]),
            "prefill": m(ax.plot([], [], color=COLORS["prefill"], label="prefill = max(compute, memory)")[0]),
        }
        self.decode = m(
            ax.axhline(1, color=COLORS["decode"], lw=1.5, ls="-.", label="one decode step, batch 1")
        )
        self.crossover = m(ax.axvline(1, color="grey", lw=1.5, ls="--"))
        self.marker = m(ax.plot([], [], "o", color="black", zorder=5)[0])
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="prompt length P (tokens)",
            ylabel="time (ms)",
            xlim=(1, PROMPT_SWEEP[-1] * 1.05),
        )
        ax.legend(loc="upper left")

    def _draw(self, s: Scenario):
        ax = self.axes[0]
        kw = dict(num_gpus=s.num_gpus, weight_precision=s.weight_precision, kv_precision=s.kv_precision)
        p = s.prefill(PROMPT_SWEEP)
        ok = np.asarray(fits(s.model, s.gpu, 1, PROMPT_SWEEP, **kw))
        masked = lambda x: np.where(ok, np.asarray(x) / MS, np.nan)  # noqa: E731
        self.lines["memory"].set_data(PROMPT_SWEEP, masked(p.memory_time_s))
        self.lines["compute"].set_data(PROMPT_SWEEP, masked(p.compute_time_s))
        self.lines["prefill"].set_data(PROMPT_SWEEP, masked(p.time_s))
        d = s.decode(batch=1)
        self.decode.set_visible(bool(d.fits))
        if d.fits:
            self.decode.set_ydata([d.step_time_s / MS] * 2)
        cross = prefill_crossover_prompt_tokens(s.model, s.gpu, **kw)
        self.crossover.set_xdata([cross, cross])
        self.crossover.set_visible(bool(ok.any()))
        if ok.any():
            self._transient_artist(
                ax.text(
                    cross * 1.12,
                    0.04,
                    f"compute-bound from P ≈ {cross:,}",
                    transform=ax.get_xaxis_transform(),
                    fontsize=11,
                    color="#444444",
                )
            )
        y_all = np.concatenate([masked(p.time_s), masked(p.memory_time_s)])
        ax.set_ylim(nice_limits(y_all if np.isfinite(y_all).any() else [1, 10], log=True))
        here = s.prefill()
        here_ok = bool(fits(s.model, s.gpu, 1, s.prompt_tokens, **kw))
        if here_ok:
            y = here.time_s / MS
            self.marker.set_data([s.prompt_tokens], [y])
            text = f"P={s.prompt_tokens:,}: {y:.1f} ms ({here.binding}-bound)"
            if d.fits:
                text += f"\n= {stalled_decode_steps(here.time_s, d.step_time_s):.1f} decode steps"
            left = s.prompt_tokens >= 100  # the curve climbs to the right: write above-left of the point
            self._transient_artist(
                ax.annotate(
                    text,
                    (s.prompt_tokens, y),
                    xytext=(-12 if left else 10, 8),
                    textcoords="offset points",
                    fontsize=12,
                    ha="right" if left else "left",
                    va="bottom",
                )
            )
        else:
            self.marker.set_data([], [])
        bad = PROMPT_SWEEP[~ok]
        if not ok.any():
            self._transient_artist(
                ax.axvspan(1, PROMPT_SWEEP[-1] * 1.05, color=COLORS["overflow"], alpha=0.25, lw=0)
            )
            self._transient_artist(
                ax.text(
                    0.5,
                    0.5,
                    "the weights alone do not fit in memory:\nno prefill time",
                    transform=ax.transAxes,
                    ha="center",
                    va="center",
                    fontsize=14,
                    color="#444444",
                )
            )
        elif bad.size:
            self._shade_overflow(ax, max(int(bad[0]), 1), PROMPT_SWEEP[-1], label="does not fit in memory")
        ax.set_title(f"Prefill vs prompt length: {describe(s)}", fontsize=12)


class StallTimeline(LiveFigure):
    """A timeline of the GPU while B users stream and one unchunked prompt of P tokens arrives: decode
    steps, the prefill block, and the gap in every user's token stream.

    ``options``: ``steps_around`` decode steps drawn before and after the prefill (default 4);
    ``include_attention`` for the prefill (default True).

    >>> StallTimeline(Scenario(batch=30, prompt_tokens=8000))
    <StallTimeline: llama-3-8b on 1x h100-sxm, bf16 weights, bf16 KV, B=30, T=1000>
    """

    def _build(self):
        ax = self.axes[0]
        ax.set(
            yticks=[0, 1],
            yticklabels=["tokens each\nuser receives", "GPU is busy\nwith"],
            ylim=(-0.9, 1.7),
            xlabel="time (ms)",
        )
        ax.grid(axis="y", visible=False)
        ax.fill_between([], [], color=COLORS["decode"], alpha=0.8, label="decode step (all B users)")
        ax.fill_between([], [], color=COLORS["prefill"], alpha=0.8, label="prefill of the pasted prompt")
        ax.legend(loc="upper right", ncols=2)

    def _draw(self, s: Scenario):
        ax = self.axes[0]
        around = int(self.options.get("steps_around", 4))
        kw = dict(num_gpus=s.num_gpus, weight_precision=s.weight_precision, kv_precision=s.kv_precision)
        st = prefill_stall(
            s.model,
            s.gpu,
            s.prompt_tokens,
            s.batch,
            s.context_tokens,
            include_attention=self.options.get("include_attention", True),
            **kw,
        )
        ok = np.isfinite(st.decode_step_time_s) and bool(paste_fits(s))
        ax.set_title(
            f"A {s.prompt_tokens:,}-token paste arrives while {s.batch} users stream "
            f"({s.model}, {s.num_gpus}x {s.gpu})",
            fontsize=12,
        )
        if not ok:
            ax.set_xlim(0, 1)
            self._transient_artist(ax.axvspan(0, 1, color=COLORS["overflow"], alpha=0.25, lw=0))
            self._transient_artist(
                ax.text(
                    0.5, 0.4, "does not fit in memory: no timeline", ha="center", fontsize=13, color="#444444"
                )
            )
            return
        step, pre = st.decode_step_time_s / MS, st.prefill_time_s / MS
        before = [(i * step, step) for i in range(around)]
        start = around * step
        after = [(start + pre + i * step, step) for i in range(around)]
        bar = dict(edgecolor="white", linewidth=1)
        self._transient_artist(ax.broken_barh(before + after, (0.7, 0.6), facecolors=COLORS["decode"], **bar))
        self._transient_artist(
            ax.broken_barh([(start, pre)], (0.7, 0.6), facecolors=COLORS["prefill"], **bar)
        )
        self._transient_artist(
            ax.text(
                start + pre / 2,
                1.0,
                f"prefill, {pre:.0f} ms",
                ha="center",
                va="center",
                color="white",
                fontsize=12,
                fontweight="bold",
            )
        )
        ticks = [x + w for x, w in before + after]
        self._transient_artist(ax.vlines(ticks, -0.25, 0.25, color="black", lw=2))
        last, first = ticks[around - 1], ticks[around]
        self._transient_artist(
            ax.annotate(
                "",
                (first, -0.45),
                (last, -0.45),
                arrowprops=dict(arrowstyle="<->", color=COLORS["prefill"], lw=2),
            )
        )
        self._transient_artist(
            ax.text(
                (last + first) / 2,
                -0.55,
                f"no token for {first - last:.0f} ms: ≈ {st.stalled_steps:.0f} missed steps of {step:.1f} ms",
                ha="center",
                va="top",
                fontsize=12,
            )
        )
        ax.set_xlim(0, after[-1][0] + step * 1.05)
