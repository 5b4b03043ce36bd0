"""Figures and readouts of lesson 60, taught in notebooks/60_amdahl.ipynb; the numbers live in
``roofline.lessons.profiling``."""

from __future__ import annotations

import html

import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from roofline.lessons.profiling import (
    PART_COLORS,
    AmdahlBreakdown,
    amdahl_breakdown,
    fmt_ceiling,
    naive_combined_speedups,
)
from roofline.scenario import Scenario
from roofline.units import MS
from roofline.views.cost_text import cost_text
from roofline.views.plots import STYLE_PATH, LiveFigure, new_figure, show
from roofline.views.readouts import decode_case, engine_step_s, table_html


def _draw_bars(ax, b: AmdahlBreakdown, artist=lambda a: a):
    """Stacked horizontal bars, before (top) and after (bottom), one colour per part."""
    for row, parts in ((0, b.old_parts), (1, b.new_parts)):
        left = 0.0
        for i, width in enumerate(parts):
            color = PART_COLORS[i % len(PART_COLORS)]
            artist(ax.barh(row, width, left=left, color=color, height=0.6, edgecolor="white")[0])
            if width > 0.06:
                artist(
                    ax.text(
                        left + width / 2,
                        row,
                        f"{width:.2f}",
                        ha="center",
                        va="center",
                        color="white",
                        fontsize=11,
                        fontweight="bold",
                    )
                )
            left += width
    artist(
        ax.text(
            b.new_time_fraction + 0.01,
            1,
            f" {b.speedup:.2f}x faster (ceiling {fmt_ceiling(b.ceiling)})",
            va="center",
            fontsize=12,
            fontweight="bold",
        )
    )


def amdahl_bars_figure(fractions, speedups, names=None, title=None):
    """Static before/after stacked bars for ``amdahl_breakdown`` (a Picture for a notebook).

    Taught in lesson 60.
    """
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


class AmdahlBars(LiveFigure):
    """Before/after stacked time bars for two optimizations; options ``p1, s1, p2, s2, names``."""

    def _build(self):
        _style_axes(
            self.axes[0], ["untouched", *self.options.get("names", ("optimization 1", "optimization 2"))]
        )

    def _draw(self, s):
        ax = self.axes[0]
        o = self.options
        names = o.get("names", ("optimization 1", "optimization 2"))
        b = amdahl_breakdown(
            [o.get("p1", 0.3), o.get("p2", 0.5)], [o.get("s1", 3.0), o.get("s2", 2.0)], names
        )
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
    step_s = engine_step_s(s, case) if s.decode().fits else float("nan")
    if step_s == step_s:  # not NaN: the step these fractions act on, before and after
        after_s = step_s * b.new_time_fraction
        rows += [
            ("the step, a good engine", f"{step_s / MS:.2f} ms → {after_s / MS:.2f} ms"),
            ("cost per 1M tokens", f"{cost_text(s, s.batch / step_s)} → {cost_text(s, s.batch / after_s)}"),
        ]
    else:
        rows.append(("the step, a good engine", "does not fit in memory: no step time"))
    return table_html(rows) + f'<div class="roofline-note">the step: {html.escape(case.title)}</div>'
