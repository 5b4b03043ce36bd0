"""The figures, readouts and explorer of lesson 03, taught in notebooks/03_launch_overhead.ipynb."""

from __future__ import annotations

from dataclasses import replace

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

from roofline.course.figures import COLORS, STYLE_PATH, LiveFigure, new_figure, nice_limits, show
from roofline.course.readouts import (
    StepCase,
    case_readout_for,
    combine_readouts,
    decode_case,
    table_html,
)
from roofline.course.widgets import STEP, Explorer
from roofline.data import get_gpu, get_model, gpus, models
from roofline.lessons.launch_overhead.numbers import (
    CARD_CPU_S_PER_LAUNCH,
    CARD_KERNELS_PER_STEP,
    KERNELS_PER_LAYER,
    launch_budget,
    share_grid,
)
from roofline.physics.architecture import weight_bytes
from roofline.physics.overheads import launch_overhead_s
from roofline.scenario import Scenario
from roofline.units import MS, TB, US

SHARE_GRID_GPUS = (
    "l4", "a10g", "rtx-4090", "l40s", "a100-40gb", "a100-80gb-sxm", "h100-pcie", "h100-sxm", "gh200", "h200",
    "mi300x", "b200",
)  # fmt: skip


def share_grid_figure():
    """Heat map of ``share_grid`` for the first seven dense models and ``SHARE_GRID_GPUS``, with the value
    in each cell; grey "does not fit" cells. A Picture.
    """
    # models by size (rows), GPUs by bandwidth (columns), so the corner with short steps stands out
    model_ids = sorted([m for m in models() if not get_model(m).is_moe][:7], key=weight_bytes)
    gpu_ids = [g for g in SHARE_GRID_GPUS if g in gpus()]
    gpu_ids.sort(key=lambda g: get_gpu(g).memory_bandwidth_bytes_per_s)
    grid = share_grid(model_ids, gpu_ids)
    fig, (ax,) = new_figure(figsize=(11, 5.2))
    with plt.style.context(STYLE_PATH):
        ax.grid(False)
        ax.set_facecolor("#dddddd")
        im = ax.imshow(grid * 100, cmap="viridis", vmin=0, vmax=100, aspect="auto")
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                v = grid[i, j]
                text = "does not\nfit" if np.isnan(v) else f"{v * 100:.0f}%"
                color = "#444444" if np.isnan(v) else ("black" if v > 0.5 else "white")
                ax.text(j, i, text, ha="center", va="center", fontsize=8 if np.isnan(v) else 11, color=color)
        ax.set_xticks(
            range(len(gpu_ids)),
            [f"{g}\n{get_gpu(g).memory_bandwidth_bytes_per_s / TB:.2g} TB/s" for g in gpu_ids],
            fontsize=9,
            rotation=35,
            ha="right",
        )
        ax.set_yticks(
            range(len(model_ids)), [f"{m} ({get_model(m).layers} layers)" for m in model_ids], fontsize=11
        )
        ax.set_xlabel("GPU (sorted by memory bandwidth)")
        fig.colorbar(im, ax=ax, label="% of the step spent launching")
        ax.set_title(
            f"Launch overhead share of a batch-1 BF16 decode step, no CUDA graph "
            f"({KERNELS_PER_LAYER:.3g} kernels per layer x {CARD_CPU_S_PER_LAUNCH / US:g} µs)",
            fontsize=12,
        )
    return show(fig, "launch overhead share, models x GPUs")


class LaunchBars(LiveFigure):
    """Two stacked bars, eager launches vs one CUDA-graph replay: roofline time + launch overhead (ms).

    Options: ``kernels_per_step``, ``cpu_s_per_launch`` (s), ``cuda_graphs`` (highlights the chosen bar).
    """

    def _build(self):
        ax = self.axes[0]
        m = self._moving
        self.roof_bars = [m(ax.barh(i, 0, color=COLORS["weights"], height=0.55)[0]) for i in range(2)]
        self.over_bars = [m(ax.barh(i, 0, color=COLORS["prefill"], height=0.55)[0]) for i in range(2)]
        handles = [
            Patch(color=COLORS["weights"], label="GPU time (roofline: bytes over bandwidth)"),
            Patch(color=COLORS["prefill"], label="CPU time launching kernels"),
        ]
        ax.set_yticks([0, 1], ["eager\n(one launch\nper kernel)", "CUDA graph\n(one replay)"])
        ax.set_ylim(1.5, -1.0)
        ax.set_xlabel("time per decode step (ms)")
        ax.legend(handles=handles, loc="upper left", ncols=2)

    def _draw(self, s):
        ax = self.axes[0]
        k = self.options.get("kernels_per_step", CARD_KERNELS_PER_STEP)
        c = self.options.get("cpu_s_per_launch", CARD_CPU_S_PER_LAUNCH)
        chosen = 1 if self.options.get("cuda_graphs", False) else 0
        budgets = [launch_budget(s, k, c, cuda_graphs=g) for g in (False, True)]
        if not budgets[0].fits:
            for bar in self.roof_bars + self.over_bars:
                bar.set_width(0)
            self._no_fit(ax, "does not fit in memory: no step time", shade=False, fontsize=14, va="baseline")
            ax.set_title(f"{s.model} on {s.num_gpus}x {s.gpu}", fontsize=12)
            return
        widths = []
        for i, b in enumerate(budgets):
            self.roof_bars[i].set_width(b.roofline_time_s / MS)
            self.over_bars[i].set_x(b.roofline_time_s / MS)
            self.over_bars[i].set_width(b.overhead_s / MS)
            for bar in (self.roof_bars[i], self.over_bars[i]):
                bar.set_alpha(1.0 if i == chosen else 0.35)
            widths.append(b.step_time_s / MS)
            pct = f"{b.share * 100:.0f}" if b.share >= 0.01 else f"{b.share * 100:.1f}"
            label = f" {b.step_time_s / MS:.2f} ms, {pct}% launching, {b.tokens_per_s_per_user:.0f} tok/s"
            style = dict(va="center", fontsize=11, fontweight="bold" if i == chosen else "normal")
            self._transient_artist(ax.text(b.step_time_s / MS, i, label, **style))
        ax.set_xlim(nice_limits([max(widths) * 1.3], log=False))
        ax.set_title(
            f"{s.model} ({s.weight_precision}) on {s.num_gpus}x {s.gpu}, B={s.batch}: "
            f"{k:g} kernels x {c / US:g} µs",
            fontsize=12,
        )


def launch_readout(s: Scenario, options) -> str:
    """HTML table of the launch budget for the explorer's current settings (the step it gives, priced, is
    the engine readout of ``launch_case``).

    >>> text = launch_readout(Scenario(context_tokens=0), dict(kernels_per_step=300, cpu_s_per_launch=4e-6,
    ...                                                         cuda_graphs=False))
    >>> "1.200 ms" in text and "21.1%" in text      # 300 × 4 µs beside the 4.48 ms floor
    True
    """
    k, c = options["kernels_per_step"], options["cpu_s_per_launch"]
    b = launch_budget(s, k, c, cuda_graphs=options["cuda_graphs"])
    if not b.fits:
        return table_html([("GPU (roofline) time", "does not fit in memory: no step time")])
    queued = max(b.roofline_time_s, b.overhead_s)  # the CPU queues ahead: the slower side sets the pace
    cpu_bound = b.overhead_s > b.roofline_time_s
    return table_html(
        [
            ("kernel launches per step", f"{b.kernels_launched:,.0f}"),
            ("GPU (roofline) time", f"{b.roofline_time_s / MS:.2f} ms"),
            ("launch overhead", f"{b.overhead_s / MS:.3f} ms"),
            ("share spent launching", f"{b.share * 100:.1f}%"),
            ("step if the CPU queues ahead", f"{queued / MS:.2f} ms" + (" (CPU-bound)" if cpu_bound else "")),
        ]
    )


def launch_case(s: Scenario, options) -> StepCase:
    """The step lesson 03's explorer is about: the decode step with its launches added (K × c CPU time, or
    one replay with CUDA graphs), the same launches for the ideal and for a good engine.

    >>> c = launch_case(Scenario(context_tokens=0), dict(kernels_per_step=300, cpu_s_per_launch=4e-6,
    ...                                                   cuda_graphs=False))
    >>> round(float(c.step.step_time_s) * 1e3, 2), c.title      # 4.48 ms floor + 1.2 ms of launches
    (5.68, 'one decode step of one user with no context yet, with 300 launches of 4 µs')
    """
    launches = 1 if options["cuda_graphs"] else options["kernels_per_step"]
    cpu_s = options["cpu_s_per_launch"]
    case = decode_case(s, launch_overhead_s=launch_overhead_s(launches, cpu_s))
    how = " (a CUDA graph)" if options["cuda_graphs"] else ""
    title = f"{case.title}, with {launches:,} launch{'es' if launches != 1 else ''} of {cpu_s / US:g} µs{how}"
    return replace(case, title=title, ideal_label="floor + launches")


def launch_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 03's explorer: kernels per step, CPU µs per launch, CUDA graphs on/off, and the step they act
    on.

    >>> ex = launch_explorer()
    >>> ex.set(kernels_per_step=100, cuda_graphs=True); ex.live.options["kernels_per_step"]
    100
    """
    knobs = {
        "kernels_per_step": W.IntSlider(
            value=CARD_KERNELS_PER_STEP, min=10, max=1000, step=10, description="kernels per step"
        ),
        "cpu_us_per_launch": W.FloatSlider(
            value=CARD_CPU_S_PER_LAUNCH / US, min=1, max=20, step=0.5, description="CPU µs per launch"
        ),
        "cuda_graphs": W.Checkbox(value=False, description="CUDA graphs (one replay per step)"),
    }

    def to_options(v):
        return {
            "kernels_per_step": v["kernels_per_step"],
            "cpu_s_per_launch": v["cpu_us_per_launch"] * US,
            "cuda_graphs": v["cuda_graphs"],
            "engine": v.get("engine"),
        }

    return Explorer(
        LaunchBars,
        STEP,
        scenario or Scenario(context_tokens=0),
        # the launch budget, then the step with its launches: the floor beside a good engine, the cost
        combine_readouts(launch_readout, case_readout_for(launch_case)),
        knobs=knobs,
        to_options=to_options,
    )
