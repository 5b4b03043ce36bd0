"""Figures and readouts of lesson 60, taught in notebooks/60_amdahl.ipynb; the numbers live in
``roofline.lessons.profiling``."""

from __future__ import annotations

import ipywidgets as W
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from roofline.lessons.profiling import (
    PART_COLORS,
    AmdahlBreakdown,
    amdahl_breakdown,
    fmt_ceiling,
    naive_combined_speedups,
)
from roofline.lessons.scenario import Scenario
from roofline.ui.widgets import Explorer, table_html
from roofline.views.plots import STYLE_PATH, LiveFigure, new_figure, show


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
    """HTML table: untouched share, new time, speedup and ceiling."""
    p, sp = [options["p1"], options["p2"]], [options["s1"], options["s2"]]
    b = amdahl_breakdown(p, sp)
    wrong_sum, wrong_product = naive_combined_speedups(sp)
    return table_html(
        [
            ("untouched share", f"{b.old_parts[0]:.2f}"),
            ("new time (fraction of old)", f"{b.new_time_fraction:.3f}"),
            ("speedup", f"{b.speedup:.2f}x"),
            ("ceiling (both parts free)", fmt_ceiling(b.ceiling)),
            ("wrong: speedups added / multiplied", f"{wrong_sum:g}x / {wrong_product:g}x"),
        ]
    )


def amdahl_explorer(p1=0.3, s1=3.0, p2=0.5, s2=2.0, names=("attention", "MLP")) -> Explorer:
    """Lesson 60's explorer: share and speedup of two non-overlapping optimizations.

    >>> ex = amdahl_explorer()
    >>> ex.set(s2=1.0); "1.25x" in ex.readout.value
    True
    >>> ex.set(p2=0.9); "Not possible" in ex.message.value     # 0.3 + 0.9 > 1: parts would overlap
    True
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
        "p1": frac(p1, f"{names[0]}: share p₁"),
        "s1": speed(s1, f"{names[0]}: speedup s₁"),
        "p2": frac(p2, f"{names[1]}: share p₂"),
        "s2": speed(s2, f"{names[1]}: speedup s₂"),
    }

    def to_options(v):
        return {**v, "names": names}

    presets = {
        "the card: attention 30% made 3x": {"p1": 0.3, "s1": 3.0, "p2": 0.0, "s2": 1.0},
        "the card: attention 3x and MLP (50%) 2x": {"p1": 0.3, "s1": 3.0, "p2": 0.5, "s2": 2.0},
    }
    return Explorer(
        AmdahlBars, [], Scenario(), amdahl_readout, knobs=knobs, to_options=to_options, presets=presets
    )
