"""The figures, readouts and explorer of lesson 44, taught in notebooks/44_chunked_prefill.ipynb."""

from __future__ import annotations

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from roofline.course.figures import COLORS, LOG_LOG, LiveFigure, new_figure, nice_limits, show
from roofline.course.readouts import StepCase, case_readout_for, combine_readouts, table_html
from roofline.course.widgets import STEP, Explorer, stops_slider
from roofline.errors import DoesNotFitError
from roofline.lessons.chunked_prefill.numbers import (
    CHUNK_OPTIONS,
    SWEEP_CHUNKS,
    ChunkScenario,
    chunk_scenario,
    chunk_size_tradeoff,
    prompt_arrival_timeline,
    prompt_fits,
)
from roofline.physics.memory import memory_available_bytes, memory_needed_bytes
from roofline.physics.step import mixed_step
from roofline.scenario import Scenario
from roofline.units import GB, MS


def _no_fit_text(s: Scenario) -> str:
    need = memory_needed_bytes(
        s.model, s.batch, s.context_tokens + s.prompt_tokens / s.batch, s.weight_precision, s.kv_precision
    )
    cap = memory_available_bytes(s.gpu, s.num_gpus)
    return (
        f"does not fit in memory:\n{s.batch} users x {s.context_tokens:,} tokens + "
        f"{s.prompt_tokens:,}-token prompt\nneed {need / GB:.0f} GB of {cap / GB:.0f} GB"
    )


class PrefillTimeline(LiveFigure):
    """Step durations around a long prompt's arrival: unchunked (left) and chunked (right), log scale (ms)."""

    ncols = 2

    def _build(self):
        # 10 in: shown at 3/4 of that beside a projector-scale readout, its 11 pt text stays at least 11 px
        self.fig.set_size_inches(10, 4.6)
        self.lines = [self._line(ax, color="black", lw=1.2, drawstyle="steps-post") for ax in self.axes]
        self.ttft = [
            self._moving(ax.axvline(0, color=COLORS["prefill"], ls="--", lw=1.5)) for ax in self.axes
        ]
        for ax in self.axes:
            ax.set(yscale="log", xlabel="time since the prompt arrived (ms)")
        self.axes[0].set_ylabel("duration of each step (ms)")
        handles = [
            Patch(color=COLORS["decode"], alpha=0.6, label="decode-only step"),
            Patch(color=COLORS["prefill"], alpha=0.6, label="step carrying prompt tokens"),
            Line2D([], [], color=COLORS["prefill"], ls="--", lw=1.5, label="new prompt's first token"),
        ]
        self.fig.legend(handles=handles, loc="outside lower center", ncols=3)

    def _draw(self, s):
        s = chunk_scenario(s)
        if not prompt_fits(s):
            for ax, line, v in zip(self.axes, self.lines, self.ttft, strict=True):
                line.set_data([], [])
                v.set_xdata([np.nan, np.nan])
                self._no_fit(ax, _no_fit_text(s))
            self.fig.suptitle("Prompt arrival: does not fit in memory", fontsize=12)
            return
        runs = [prompt_arrival_timeline(s, chunk) for chunk in (None, s.chunk_tokens)]
        x_hi = max(r.step_start_s[-1] + r.step_time_s[-1] for r in runs) / MS
        x_lo = min(r.step_start_s[0] for r in runs) / MS
        y_lo, y_hi = nice_limits(np.concatenate([r.step_time_s for r in runs]) / MS, log=True)
        titles = ["No chunking: the prompt runs alone", f"Chunks of {s.chunk_tokens:,} prompt tokens"]
        for ax, line, v, r, title in zip(self.axes, self.lines, self.ttft, runs, titles, strict=True):
            x = np.append(r.step_start_s, r.step_start_s[-1] + r.step_time_s[-1]) / MS
            y = np.append(r.step_time_s, r.step_time_s[-1]) / MS
            line.set_data(x, y)
            colors = np.where(r.prompt_tokens_in_step > 0, COLORS["prefill"], COLORS["decode"])
            boxes = [
                [(x0, y_lo), (x0, y1), (x1, y1), (x1, y_lo)]
                for x0, x1, y1 in zip(x[:-1], x[1:], y[:-1], strict=True)
            ]
            self._transient_artist(
                ax.add_collection(PolyCollection(boxes, facecolors=colors, alpha=0.6, lw=0))
            )
            v.set_xdata([r.ttft_s / MS] * 2)
            style = dict(
                transform=ax.get_xaxis_transform(), va="top", ha="right", fontsize=11, color=COLORS["prefill"]
            )
            self._transient_artist(ax.text(r.ttft_s / MS, 0.97, f"TTFT {r.ttft_s / MS:.0f} ms ", **style))
            gaps = f"worst gap {r.worst_gap_s / MS:.1f} ms\n(normal {r.normal_gap_s / MS:.1f} ms)"
            self._transient_artist(ax.text(0.02, 0.97, gaps, transform=ax.transAxes, fontsize=11, va="top"))
            ax.set_xlim(x_lo, x_hi * 1.02)
            ax.set_ylim(y_lo, y_hi)
            ax.set_title(title, fontsize=12)
        decoding = "1 user decodes" if s.batch == 1 else f"{s.batch} users decode"
        self.fig.suptitle(
            f"{s.prompt_tokens:,}-token prompt arrives while {decoding} "
            f"(T={s.context_tokens:,}): {s.model} on {s.num_gpus}x {s.gpu}",
            fontsize=12,
        )


LABELLED_CHUNKS = (64, 256, 1024, 4096)


class ChunkTradeoffChart(LiveFigure):
    """The new prompt's TTFT against the decoders' worst gap as the chunk size sweeps (ms, log-log)."""

    def _build(self):
        ax = self.axes[0]
        m = self._moving
        self.curve = self._line(ax, color=COLORS["prefill"], label="chunked, C from 16 to 32k")
        self.unchunked = self._line(ax, "s", color="black", label="no chunking (prompt alone)")
        self.marker = self._line(ax, "o", color=COLORS["decode"], zorder=5, label="chosen C")
        self.labels = [
            m(
                ax.annotate(
                    "", (1, 1), xytext=(6, 4), textcoords="offset points", fontsize=10, color="#444444"
                )
            )
            for _ in LABELLED_CHUNKS
        ]
        ax.set(**LOG_LOG, xlabel="decoders' worst inter-token gap (ms)", ylabel="new prompt's TTFT (ms)")
        ax.legend(loc="upper right")

    def _draw(self, s):
        s = chunk_scenario(s)
        ax = self.axes[0]
        r = chunk_size_tradeoff(s, SWEEP_CHUNKS)
        if not r.fits:
            for a in (self.curve, self.unchunked, self.marker):
                a.set_data([], [])
            for lab in self.labels:
                lab.set_text("")
            self._no_fit(ax, _no_fit_text(s))
            ax.set_title("Chunk size trade-off: does not fit in memory", fontsize=12)
            return
        gap, ttft = r.worst_gap_s / MS, r.ttft_s / MS
        self.curve.set_data(gap, ttft)
        base = prompt_arrival_timeline(s, None)
        self.unchunked.set_data([base.worst_gap_s / MS], [base.ttft_s / MS])
        here = chunk_size_tradeoff(s, s.chunk_tokens)
        self.marker.set_data([here.worst_gap_s / MS], [here.ttft_s / MS])
        labelled = chunk_size_tradeoff(s, LABELLED_CHUNKS)
        for lab, c, x, y in zip(
            self.labels, LABELLED_CHUNKS, labelled.worst_gap_s / MS, labelled.ttft_s / MS, strict=True
        ):
            lab.xy = (x, y)
            lab.set_text(f"C={c:,}" if c < s.prompt_tokens else "")
        text = f"C={s.chunk_tokens:,}: TTFT {here.ttft_s / MS:.0f} ms, gap {here.worst_gap_s / MS:.1f} ms"
        at = (here.worst_gap_s / MS, here.ttft_s / MS)
        self._note(ax, text, at, (10, 18), fontsize=11, color=COLORS["decode"])
        xs = np.concatenate([gap, [base.worst_gap_s / MS]])
        ys = np.concatenate([ttft, [base.ttft_s / MS]])
        ax.set_xlim(nice_limits(xs, log=True))
        ax.set_ylim(nice_limits(ys, log=True))
        ax.set_title(
            f"{s.prompt_tokens:,}-token prompt, {s.batch} decoders at T={s.context_tokens:,}: "
            f"{s.model} on {s.num_gpus}x {s.gpu}",
            fontsize=12,
        )


def chunk_readout(s: Scenario) -> str:
    """HTML table of the numbers behind the chunked-prefill explorer (from the library)."""
    s = chunk_scenario(s)
    try:
        base = prompt_arrival_timeline(s, None)
        ch = prompt_arrival_timeline(s, s.chunk_tokens)
    except DoesNotFitError as err:
        return table_html([("memory", str(err))])
    return table_html(
        [
            ("normal decode step", f"{base.normal_gap_s / MS:.2f} ms"),
            ("no chunking: TTFT", f"{base.ttft_s / MS:.1f} ms"),
            (
                "no chunking: worst gap",
                f"{base.worst_gap_s / MS:.1f} ms ({base.stalled_steps:.0f} steps missed)",
            ),
            (f"C={s.chunk_tokens:,}: steps", f"{ch.prefill_steps}"),
            (f"C={s.chunk_tokens:,}: TTFT", f"{ch.ttft_s / MS:.1f} ms"),
            (f"C={s.chunk_tokens:,}: worst gap", f"{ch.worst_gap_s / MS:.2f} ms"),
        ]
    )


def chunk_case(s: Scenario, options: dict | None = None) -> StepCase:
    """The step lesson 44's explorer is about: the mixed step, B users decoding while a chunk of C prompt
    tokens (or the whole prompt, if shorter) rides along; its output is the B users' tokens.

    >>> from roofline.lessons.chunked_prefill import ChunkScenario
    >>> c = chunk_case(ChunkScenario(batch=30, prompt_tokens=8000, chunk_tokens=512))
    >>> c.title, round(float(c.step.step_time_s) * 1e3, 2)
    ('the mixed step: 30 users decoding at 1,000 tokens each + a 512-token prompt chunk', 7.77)
    """
    s = chunk_scenario(s)
    chunk = min(s.chunk_tokens, s.prompt_tokens) if s.chunk_tokens else s.prompt_tokens
    step = mixed_step(s.model, s.gpu, s.batch, s.context_tokens, chunk, **s.deployment)
    title = (
        f"the mixed step: {s.batch:,} users decoding at {s.context_tokens:,} tokens each + a "
        f"{chunk:,}-token prompt chunk"
    )
    return StepCase(title, ((step, 1.0),), 1.0, float(s.batch))


def arrivals_tradeoff_figure(r):
    """The chunk-size trade-off under random arrivals (``chunk_tradeoff_under_arrivals``): TTFT p50/p99 (left)
    and TPOT p50/p99 (right) against the chunk size, the unchunked server at the right. Returns a picture."""
    fig, (left, right) = new_figure(2, figsize=(10, 4.2))
    labels = [("whole" if c == 0 else f"{c:,}") for c in np.asarray(r.chunk_tokens)]
    x = np.arange(len(labels))
    for ax, p50, p99, name in (
        (left, r.ttft_p50_s, r.ttft_p99_s, "TTFT"),
        (right, r.tpot_p50_s, r.tpot_p99_s, "TPOT"),
    ):
        ax.plot(x, np.asarray(p50) / MS, "o-", color=COLORS["decode"], label=f"{name} p50")
        ax.plot(x, np.asarray(p99) / MS, "s--", color=COLORS["prefill"], label=f"{name} p99")
        ax.set_xticks(x, labels)
        ax.set(xlabel="chunk size (prompt tokens per step)", ylabel="ms", title=f"{name} against chunk size")
        ax.legend(loc="upper center", fontsize=10)
    left.set_yscale("log")
    fig.suptitle(
        f"The same Poisson load ({r.rate_per_s:g} requests/s) for every chunk size (roofline.sim)",
        fontsize=12,
    )
    return show(fig, "chunk size under arrivals")


def chunk_explorer(scenario: Scenario | None = None):
    """An ``Explorer`` with sliders for decoding users, prompt length and the chunk size C (a slider of its
    own: the chunk size is a ``ChunkScenario`` field).

    >>> ex = chunk_explorer(ChunkScenario(batch=30, prompt_tokens=8000))
    >>> ex.set(chunk_tokens=256); ex.scenario.chunk_tokens
    256
    """
    s = chunk_scenario(scenario or ChunkScenario(batch=30, prompt_tokens=8000))
    slider = stops_slider(
        sorted(set(CHUNK_OPTIONS) | {s.chunk_tokens}), s.chunk_tokens, "chunk size C (tokens)"
    )
    # the lesson's table, then the mixed step (the decoders plus one chunk): floor, engine, cost
    readout = combine_readouts(chunk_readout, case_readout_for(chunk_case))
    controls = ["batch", "prompt_tokens", ("chunk_tokens", slider), "context_tokens", *STEP[2:]]
    ex = Explorer(PrefillTimeline, controls, s, readout)
    ex.controls["batch"].description = "decoding users B"
    return ex
