"""The figures, readouts and explorer of lesson 09, taught in notebooks/09_gpu_util.ipynb."""

from __future__ import annotations

import ipywidgets as W
from matplotlib.colors import to_rgba
from matplotlib.patches import Patch

from roofline.course.figures import COLORS, LiveFigure, describe
from roofline.course.readouts import decode_readout, table_html
from roofline.course.widgets import STEP, Explorer, stops_slider
from roofline.lessons.gpu_util.numbers import decode_timeline, sample_busy, timeline_metrics
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.scenario import Scenario
from roofline.units import MS


class UtilTimeline(LiveFigure):
    """Kernels as bars on a time axis, the sampler's windows shaded busy/idle, and the three figures.
    Options: ``gap_s`` (idle time after each step, s), ``window_s`` (sampling window, s), ``step_time_s``
    (None: the step a good engine takes)."""

    def _build(self):
        ax = self.axes[0]
        ax.set_yticks([0.5, 1.5], ["sampler\nwindows", "kernels"])
        ax.set(ylim=(0, 2.6), xlabel="time (ms)")
        ax.grid(False)
        kernel = Patch(color=COLORS["weights"], label="kernel running")
        busy = Patch(color=COLORS["compute"], alpha=0.5, label='window counted "busy"')
        idle = Patch(color=COLORS["overflow"], alpha=0.3, label="window idle")
        ax.legend(handles=[kernel, busy, idle], loc="upper right", ncols=3)

    def _draw(self, s):
        ax = self.axes[0]
        window = self.options.get("window_s", 1e-3)
        t = _timeline(s, self.options)
        m = timeline_metrics(t, window)
        w0, busy = sample_busy(t.starts_s, t.ends_s, window, t.t_end_s)
        tr = self._transient_artist
        # one artist per row (a list of bars with per-bar colours) keeps a slider move cheap
        kernel_bars = [(a / MS, (b - a) / MS * 0.97) for a, b in zip(t.starts_s, t.ends_s, strict=True)]
        shades = [to_rgba(COLORS["weights"], 1.0 if i % 2 else 0.8) for i in range(len(kernel_bars))]
        tr(ax.broken_barh(kernel_bars, (1.1, 0.8), facecolors=shades))
        window_bars = [(a / MS, min(window, t.t_end_s - a) / MS * 0.96) for a in w0]
        fills = [to_rgba(COLORS["compute"], 0.5) if on else to_rgba(COLORS["overflow"], 0.3) for on in busy]
        tr(ax.broken_barh(window_bars, (0.1, 0.8), facecolors=fills))
        for i in range(int(t.step_index.max()) + 1):
            x = i * (t.step_time_s + t.gap_s) / MS + t.step_time_s / MS / 2
            tr(ax.text(x, 2.0, f"step {i + 1}", ha="center", va="bottom", fontsize=10))
        ax.set_xlim(0, t.t_end_s / MS)
        ax.set_title(
            f'"GPU-util" {m.gpu_util * 100:.0f}%   |   MBU {m.mbu * 100:.0f}%   |   '
            f"MFU {m.mfu * 100:.2g}%\n{describe(s)}, B={s.batch}, sampler window {window / MS:g} ms",
            fontsize=12,
        )


def _timeline(s: Scenario, options: dict):
    """Three steps of the scenario, ``options["gap_s"]`` (s) apart, each ``options["step_time_s"]`` long."""
    return decode_timeline(
        s,
        step_time_s=options.get("step_time_s"),
        gap_s=options.get("gap_s", 0.0),
        engine=options.get("engine"),
    )


def utilization_readout(s: Scenario, options) -> str:
    """HTML table: GPU-util, busy time, MBU and MFU for the explorer's settings."""
    t = _timeline(s, options)
    m = timeline_metrics(t, options.get("window_s", 1e-3))
    rows = [
        ("step time + idle gap", f"{t.step_time_s / MS:.2f} ms + {t.gap_s / MS:.1f} ms"),
        ('"GPU-util"', f"{m.gpu_util * 100:.0f}%"),
        ("time any kernel ran", f"{m.busy_time_fraction * 100:.0f}%"),
        ("MBU (memory)", f"{m.mbu * 100:.0f}%"),
        ("MFU (math)", f"{m.mfu * 100:.2g}%"),
    ]
    if s.usd_per_gpu_hour is not None:  # the gaps are paid for too
        tokens_per_s = s.batch / (t.step_time_s + t.gap_s)
        cost = cost_per_million_tokens_usd(s.usd_per_gpu_hour, tokens_per_s, s.num_gpus)
        rows.append(("cost per 1M tokens, gaps included", f"${cost:.2f}"))
    # The step without gaps: floor beside what a good engine reaches (its overheads are gaps too).
    return table_html(rows) + decode_readout(s, options)


def utilization_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 09's explorer: batch (MFU rises, GPU-util stays at 100 %) and the gap between steps.

    >>> ex = utilization_explorer()
    >>> ex.set(gap_ms=6.0); 'data-key="&quot;GPU-util&quot;"><b>100%' in ex.readout.value
    False
    """
    lazy = dict(continuous_update=False)
    knobs = {
        "gap_ms": W.FloatSlider(
            value=0.0, min=0.0, max=12.0, step=0.5, description="idle gap after each step (ms)", **lazy
        ),
        "window_ms": stops_slider([0.5, 1.0, 2.0, 5.0], 1.0, "sampler window (ms)"),
    }

    def to_options(v):
        return {"gap_s": v["gap_ms"] * MS, "window_s": v["window_ms"] * MS, "engine": v.get("engine")}

    return Explorer(
        UtilTimeline,
        STEP,
        scenario or Scenario(context_tokens=0),
        utilization_readout,
        knobs=knobs,
        to_options=to_options,
        presets={
            "one user, steps back to back": {"batch": 1, "gap_ms": 0.0},
            "64 users, steps back to back": {"batch": 64, "gap_ms": 0.0},
            "one user, a 6 ms gap after each step": {"batch": 1, "gap_ms": 6.0},
        },
    )
