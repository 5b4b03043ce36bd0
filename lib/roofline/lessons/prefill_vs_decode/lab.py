"""Lesson 15's figures, readouts and explorers: prefill time against the prompt, and the stall it causes.

>>> prefill_explorer()
<Explorer PrefillVsPrompt: prompt_tokens, weight_precision, num_gpus, gpu, model, engine>
"""

from __future__ import annotations

import numpy as np

from roofline.course.figures import COLORS, LOG_LOG, LiveFigure, describe, nice_limits
from roofline.course.readouts import StepCase, case_readout_for, combine_readouts, decode_readout, table_html
from roofline.course.widgets import Explorer
from roofline.lessons.prefill_vs_decode.numbers import PROMPT_SWEEP, card_prefill_s, paste_fits, prefill_stall
from roofline.physics.balance import compute_bound_prompt_tokens, prefill_crossover_prompt_tokens
from roofline.physics.memory import fits
from roofline.physics.step import stalled_decode_steps
from roofline.scenario import Scenario
from roofline.units import MS


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
            "memory": self._line(
                ax, color=COLORS["weights"], ls="--", label="memory time (weights + KV writes)"
            ),
            "compute": self._line(ax, color=COLORS["compute"], ls=":", label="compute time"),
            "prefill": self._line(ax, color=COLORS["prefill"], label="prefill = max(compute, memory)"),
        }
        self.decode = m(
            ax.axhline(1, color=COLORS["decode"], lw=1.5, ls="-.", label="one decode step, batch 1")
        )
        self.crossover = m(ax.axvline(1, color="grey", lw=1.5, ls="--"))
        self.marker = self._line(ax, "o", color="black", zorder=5)
        ax.set(**LOG_LOG, xlabel="prompt length P (tokens)", ylabel="time (ms)")
        ax.set_xlim(1, PROMPT_SWEEP[-1] * 1.05)
        ax.legend(loc="upper left")

    def _draw(self, s: Scenario):
        ax = self.axes[0]
        kw = s.deployment
        p = s.prefill(PROMPT_SWEEP)
        ok = np.asarray(fits(s.model, s.gpu, 1, PROMPT_SWEEP, **kw))
        masked = lambda x: np.where(ok, np.asarray(x) / MS, np.nan)  # noqa: E731
        self.lines["memory"].set_data(PROMPT_SWEEP, masked(p.memory_time_s))
        self.lines["compute"].set_data(PROMPT_SWEEP, masked(p.compute_time_s))
        self.lines["prefill"].set_data(PROMPT_SWEEP, masked(p.step_time_s))
        d = s.decode(batch=1)
        self.decode.set_visible(bool(d.fits))
        if d.fits:
            self.decode.set_ydata([d.step_time_s / MS] * 2)
        cross = prefill_crossover_prompt_tokens(s.model, s.gpu, **kw)
        self.crossover.set_xdata([cross, cross])
        self.crossover.set_visible(bool(ok.any()))
        if ok.any():
            style = dict(transform=ax.get_xaxis_transform(), fontsize=11, color="#444444")
            self._transient_artist(ax.text(cross * 1.12, 0.04, f"compute-bound from P ≈ {cross:,}", **style))
        y_all = np.concatenate([masked(p.step_time_s), masked(p.memory_time_s)])
        ax.set_ylim(nice_limits(y_all if np.isfinite(y_all).any() else [1, 10], log=True))
        here = s.prefill()
        y = here.step_time_s / MS
        if self._mark(self.marker, fits(s.model, s.gpu, 1, s.prompt_tokens, **kw), [s.prompt_tokens], [y]):
            text = f"P={s.prompt_tokens:,}: {y:.1f} ms ({here.binding}-bound)"
            if d.fits:
                text += f"\n= {stalled_decode_steps(here.step_time_s, d.step_time_s):.1f} decode steps"
            left = s.prompt_tokens >= 100  # the curve climbs to the right: write above-left of the point
            style = dict(fontsize=12, ha="right" if left else "left", va="bottom")
            self._note(ax, text, (s.prompt_tokens, y), (-12 if left else 10, 8), **style)
        if not ok.any():
            self._no_fit(ax, "the weights alone do not fit in memory:\nno prefill time", fontsize=14)
        elif not ok.all():
            self._shade_overflow(ax, max(int(PROMPT_SWEEP[~ok][0]), 1), PROMPT_SWEEP[-1])
        ax.set_title(f"Prefill vs prompt length: {describe(s)}", fontsize=12)


class StallTimeline(LiveFigure):
    """A timeline of the GPU while B users stream and one unchunked prompt of P tokens arrives: four decode
    steps, the prefill block, four more, and the gap in every user's token stream.

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
        around = 4
        st = prefill_stall(s)
        ok = np.isfinite(st.decode_step_time_s) and bool(paste_fits(s))
        ax.set_title(
            f"A {s.prompt_tokens:,}-token paste arrives while {s.batch} users stream "
            f"({s.model}, {s.num_gpus}x {s.gpu})",
            fontsize=12,
        )
        if not ok:
            ax.set_xlim(0, 1)
            self._no_fit(ax, "does not fit in memory: no timeline", fontsize=13, va="baseline")
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
        style = dict(ha="center", va="center", color="white", fontsize=12, fontweight="bold")
        self._transient_artist(ax.text(start + pre / 2, 1.0, f"prefill, {pre:.0f} ms", **style))
        ticks = [x + w for x, w in before + after]
        self._transient_artist(ax.vlines(ticks, -0.25, 0.25, color="black", lw=2))
        last, first = ticks[around - 1], ticks[around]
        arrow = dict(arrowstyle="<->", color=COLORS["prefill"], lw=2)
        self._transient_artist(ax.annotate("", (first, -0.45), (last, -0.45), arrowprops=arrow))
        gap = f"no token for {first - last:.0f} ms: ≈ {st.stalled_steps:.0f} missed steps of {step:.1f} ms"
        self._transient_artist(ax.text((last + first) / 2, -0.55, gap, ha="center", va="top", fontsize=12))
        ax.set_xlim(0, after[-1][0] + step * 1.05)


def prefill_readout(s: Scenario) -> str:
    """HTML readout for the prefill explorer (lesson 15): what each prefill estimate counts, one decode
    step, and where prefill turns compute-bound. The prefill priced, floor beside a good engine, is the
    engine readout of ``prefill_case``.

    >>> text = prefill_readout(Scenario(prompt_tokens=500))
    >>> "8.12 ms" in text and "7.06 ms" in text and "7.12 ms" in text   # 2·N·P, 2·N′·P, the full prefill
    True
    """
    kw = s.deployment
    ok = fits(s.model, s.gpu, 1, max(s.prompt_tokens, s.context_tokens), **kw)
    crossover = (
        f"P ≈ {compute_bound_prompt_tokens(s.model, s.gpu, s.weight_precision):,.0f} (rule); "
        f"P = {prefill_crossover_prompt_tokens(s.model, s.gpu, **kw):,} (full)"
    )
    if not ok:
        return table_html([("prefill", "does not fit in memory: no time"), ("compute-bound from", crossover)])
    card = card_prefill_s(s)
    rough, exact = s.prefill(include_attention=False), s.prefill()
    d = s.decode(batch=1)
    p = f"{s.prompt_tokens:,}"
    rows = [
        (f"the card's 2·N·P (all N × {p} tokens)", f"{card / MS:.2f} ms"),
        (
            f"the layers' matmuls (2·N′·P, P = {p})",
            f"{rough.step_time_s / MS:.2f} ms ({rough.binding}-bound)",
        ),
        ("+ attention's P² term: the prefill", f"{exact.step_time_s / MS:.2f} ms ({exact.binding}-bound)"),
        (f"one decode step, B=1, T={s.context_tokens:,}", f"{d.step_time_s / MS:.2f} ms ({d.binding}-bound)"),
        ("the prefill in decode steps", f"{stalled_decode_steps(exact.step_time_s, d.step_time_s):,.1f}"),
        ("compute-bound from", crossover),
    ]
    return table_html(rows)


def prefill_case(s: Scenario, options: dict | None = None) -> StepCase:
    """The step lesson 15's prefill explorer is about: one prefill of a P-token prompt; it computes P
    prompt tokens (priced per 1M prompt tokens).

    >>> prefill_case(Scenario(prompt_tokens=500)).title
    'one prefill of a 500-token prompt'
    """
    step = s.prefill()
    title = f"one prefill of a {s.prompt_tokens:,}-token prompt"
    return StepCase(title, ((step, 1.0),), float(s.prompt_tokens), 1.0, unit="prompt tokens")


def stall_readout(s: Scenario) -> str:
    """HTML readout for the stall explorer (lesson 15): the freeze (the card's 2·N·P and the full prefill)
    and the steps the B streaming users miss; their step, priced, is the engine readout below it.

    >>> "129.9 ms" in stall_readout(Scenario(batch=30, prompt_tokens=8000))   # 2 × 8.03e9 × 8,000 ÷ 989e12
    True
    """
    exact = prefill_stall(s)
    if not np.isfinite(exact.decode_step_time_s):
        return table_html([("streaming users", "do not fit in memory: no step time")])
    card = card_prefill_s(s)
    return table_html(
        [
            (f"freeze: the card's 2·N·P (P = {s.prompt_tokens:,})", f"{card / MS:.1f} ms"),
            ("freeze: the prefill (with attention)", f"{exact.prefill_time_s / MS:.1f} ms"),
            (f"decode step, B={s.batch}, T={s.context_tokens:,}", f"{exact.decode_step_time_s / MS:.2f} ms"),
            ("steps each user misses", f"{exact.stalled_steps:.1f}"),
        ]
    )


def prefill_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 15's first explorer: one prompt's prefill against its length P (the context it fills).

    >>> prefill_explorer()
    <Explorer PrefillVsPrompt: prompt_tokens, weight_precision, num_gpus, gpu, model, engine>
    """
    return Explorer(
        PrefillVsPrompt,
        ["prompt_tokens", "weight_precision", "num_gpus", "gpu", "model"],
        scenario or Scenario(prompt_tokens=500),
        combine_readouts(prefill_readout, case_readout_for(prefill_case)),
    )


def stall_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 15's second explorer: B users streaming at T tokens each when a P-token paste arrives.

    >>> stall_explorer().scenario.prompt_tokens
    8000
    """
    return Explorer(
        StallTimeline,
        ["batch", "context_tokens", "prompt_tokens", "weight_precision", "num_gpus", "gpu", "model"],
        scenario or Scenario(batch=30, context_tokens=1000, prompt_tokens=8000),
        combine_readouts(stall_readout, decode_readout),  # the streaming users' step, both ways, priced
    )
