"""The figures, readouts and explorer of lesson 60, taught in notebooks/60_amdahl.ipynb."""

from __future__ import annotations

import html

import ipywidgets as W
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from roofline import engines
from roofline.course.figures import STYLE_PATH, LiveFigure, new_figure, show
from roofline.course.readouts import (
    cost_text,
    decode_case,
    engine_step_s,
    table_html,
)
from roofline.course.widgets import STEP, Explorer
from roofline.lessons.amdahl.numbers import (
    AmdahlBreakdown,
    amdahl_breakdown,
    fmt_ceiling,
    naive_combined_speedups,
)
from roofline.scenario import Scenario
from roofline.units import MS

PART_COLORS = ["#999999", "#D55E00", "#0072B2", "#E69F00", "#009E73", "#CC79A7"]  # the untouched rest first


def _draw_bars(ax, b: AmdahlBreakdown, artist=lambda a: a):
    """Stacked horizontal bars, before (top) and after (bottom), one colour per part."""
    in_bar = dict(ha="center", va="center", color="white", fontsize=11, fontweight="bold")
    for row, parts in ((0, b.old_parts), (1, b.new_parts)):
        left = 0.0
        for i, width in enumerate(parts):
            color = PART_COLORS[i % len(PART_COLORS)]
            artist(ax.barh(row, width, left=left, color=color, height=0.6, edgecolor="white")[0])
            if width > 0.06:
                artist(ax.text(left + width / 2, row, f"{width:.2f}", **in_bar))
            left += width
    text = f" {b.speedup:.2f}x faster (ceiling {fmt_ceiling(b.ceiling)})"
    artist(ax.text(b.new_time_fraction + 0.01, 1, text, va="center", fontsize=12, fontweight="bold"))


def amdahl_bars_figure(fractions, speedups, names=None, title=None):
    """Static before/after stacked bars for ``amdahl_breakdown`` (a Picture for a notebook)."""
    b = amdahl_breakdown(fractions, speedups, names)
    fig, (ax,) = new_figure(figsize=(9, 3.6))
    with plt.style.context(STYLE_PATH):
        _draw_bars(ax, b)
        _style_axes(ax, b.names)
        ax.set_title(title or "Step time before and after, as fractions of the old step", fontsize=12)
    return show(fig, "Amdahl bars")


def _style_axes(ax, names):
    ax.set_yticks([0, 1], ["before", "after"])
    ax.set_ylim(1.6, -0.9)
    ax.set_xlim(0, 1.45)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_xlabel("time per step (fraction of the old step)")
    handles = [Patch(color=PART_COLORS[i % len(PART_COLORS)], label=n) for i, n in enumerate(names)]
    ax.legend(handles=handles, loc="upper left", ncols=min(len(names), 4), fontsize=11)


PARTS = ("attention", "MLP")  # the card's two optimizations


class AmdahlBars(LiveFigure):
    """Before/after stacked time bars for the card's two optimizations; options ``p1, s1, p2, s2`` (the
    share of the step each covers, and its speedup)."""

    def _build(self):
        _style_axes(self.axes[0], ["untouched", *PARTS])

    def _draw(self, s):
        ax = self.axes[0]
        o = self.options
        b = amdahl_breakdown([o["p1"], o["p2"]], [o["s1"], o["s2"]], PARTS)
        _draw_bars(ax, b, self._transient_artist)
        ax.set_title(
            f"new time = {b.new_parts[0]:.2f} + {b.new_parts[1]:.2f} + {b.new_parts[2]:.2f} = "
            f"{b.new_time_fraction:.2f} of the old step",
            fontsize=12,
        )


def amdahl_readout(s: Scenario, options) -> str:
    """HTML table: untouched share, new time, speedup and ceiling; then the step the four controls set
    (one decode step on a good engine) before and after, and its cost per 1M tokens before and after.

    >>> text = amdahl_readout(Scenario(), dict(p1=0.3, s1=3.0, p2=0.0, s2=1.0))
    >>> "1.25x" in text and "cost per 1M tokens" in text
    True
    """
    p, sp = [options["p1"], options["p2"]], [options["s1"], options["s2"]]
    b = amdahl_breakdown(p, sp)
    wrong_sum, wrong_product = naive_combined_speedups(sp)
    rows = [
        ("untouched share", f"{b.old_parts[0]:.2f}"),
        ("new time (fraction of old)", f"{b.new_time_fraction:.3f}"),
        ("speedup", f"{b.speedup:.2f}x"),
        ("ceiling (both parts free)", fmt_ceiling(b.ceiling)),
        ("wrong: speedups added / multiplied", f"{wrong_sum:g}x / {wrong_product:g}x"),
    ]
    case = decode_case(s)
    engine = engines.get_engine(options.get("engine") or engines.default_engine(s.gpu)).id
    step_s = engine_step_s(s, case, engine) if s.decode().fits else float("nan")
    if step_s == step_s:  # not NaN: the step these fractions act on, before and after
        after_s = step_s * b.new_time_fraction
        rows += [
            (f"the step, a good engine ({engine})", f"{step_s / MS:.2f} ms → {after_s / MS:.2f} ms"),
            ("cost per 1M tokens", f"{cost_text(s, s.batch / step_s)} → {cost_text(s, s.batch / after_s)}"),
        ]
    else:
        rows.append((f"the step, a good engine ({engine})", "does not fit in memory: no step time"))
    return table_html(rows) + f'<div class="roofline-note">the step: {html.escape(case.title)}</div>'


def amdahl_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 60's explorer: share and speedup of two non-overlapping optimizations, acting on the decode
    step the four controls set (its time and cost before and after).

    >>> ex = amdahl_explorer()
    >>> ex.set(p1=0.3, s1=7.0, p2=0.0); "1.35x" in ex.readout.value   # 1 / (0.7 + 0.3 / 7) = 1.346
    True
    """

    # Sliders that move on release; their readouts take typed values (e.g. a share of 0.37, a 7x speedup).
    def frac(v, d):
        return W.FloatSlider(value=v, min=0.0, max=1.0, step=0.01, description=d, continuous_update=False)

    def speed(v, d):  # 1x to 1,000x on a log scale
        return W.FloatLogSlider(
            value=v,
            base=10,
            min=0,
            max=3,
            step=0.01,
            description=d,
            continuous_update=False,
            readout_format=".3g",
        )

    knobs = {
        "p1": frac(0.3, f"{PARTS[0]}: share p₁"),
        "s1": speed(3.0, f"{PARTS[0]}: speedup s₁"),
        "p2": frac(0.5, f"{PARTS[1]}: share p₂"),
        "s2": speed(2.0, f"{PARTS[1]}: speedup s₂"),
    }
    presets = {
        "the card: attention 30% made 3x": {"p1": 0.3, "s1": 3.0, "p2": 0.0, "s2": 1.0},
        "the card: attention 3x and MLP (50%) 2x": {"p1": 0.3, "s1": 3.0, "p2": 0.5, "s2": 2.0},
    }
    return Explorer(
        AmdahlBars, STEP, scenario or Scenario(), amdahl_readout, knobs=knobs, presets=presets,
    )  # fmt: skip
