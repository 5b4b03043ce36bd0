"""Kernel-launch overhead: the CPU time of starting ~300 kernels per decode step, and what cuts it.

Taught in lesson 03 (notebooks/03_launch_overhead.ipynb).

    launch overhead = kernels per step × CPU time per launch          (eager PyTorch: K launches)
                    = 1 × CPU time per launch                         (CUDA graph: one replay)
    step            = roofline time + launch overhead                 (the CPU cannot run ahead)
    share           = launch overhead ÷ step

The roofline time does not depend on how many kernels launch it, so the overhead hurts most where the
roofline time is short: small models on fast GPUs. Reading fewer bytes (quantization) shortens the
roofline part only, so the overhead's share of the step grows.

>>> b = launch_budget("llama-3-8b", "h100-sxm", kernels_per_step=300, cpu_s_per_launch=4e-6)
>>> round(b.overhead_s * 1e3, 2), round(b.step_time_s * 1e3, 2), round(b.share, 2)
(1.2, 5.99, 0.2)
>>> round(b.overhead_vs_roofline, 2)   # the card's "a quarter of the 4.8 ms step"
0.25
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

from ._arrays import checked, out
from .architecture import weight_bytes
from .data import get_gpu, get_model, gpus, models
from .decode import decode_step
from .memory import fits
from .overheads import launch_overhead_s
from .plots import COLORS, STYLE_PATH, LiveFigure, new_figure, nice_limits, show
from .scenario import Scenario
from .units import MS, TB, US
from .widgets import Explorer, table_html

CARD_KERNELS_PER_STEP = 300  # kernels one eager decode step launches (the card's round figure)
CARD_CPU_S_PER_LAUNCH = 4e-6  # CPU time to launch one kernel (s)


def overhead_share(roofline_time_s, overhead_s):
    """Fraction of a step spent launching kernels: overhead ÷ (roofline time + overhead). Broadcasts.

    ``roofline_time_s`` : the GPU's own time for the step (s); ``overhead_s`` : launch time added (s).

    Taught in lesson 03.

    >>> round(overhead_share(4.8e-3, 1.2e-3), 2)     # 1.2 ms of launches on a 4.8 ms step
    0.2
    >>> overhead_share([4.8e-3, 2.4e-3], 1.2e-3).round(2).tolist()   # half the bytes: share grows
    [0.2, 0.33]
    """
    t = checked(roofline_time_s, "roofline_time_s", minimum=0)
    o = checked(overhead_s, "overhead_s", minimum=0)
    total = t + o
    if np.any(total <= 0):
        raise ValueError("roofline_time_s + overhead_s must be > 0")
    return out(o / total)


@dataclass(frozen=True)
class LaunchBudget:
    """One decode step split into its roofline time and its launch overhead (seconds; arrays broadcast)."""

    model_id: str
    gpu_id: str
    weight_precision: str
    kernels_launched: object  # launches per step: K eager, 1 with a CUDA graph
    roofline_time_s: object  # max(memory, compute) time of the step on the GPU
    overhead_s: object  # CPU time spent launching
    step_time_s: object  # roofline + overhead
    share: object  # overhead ÷ step
    overhead_vs_roofline: object  # overhead ÷ roofline time (how much longer the step gets)
    tokens_per_s_per_user: object  # 1 ÷ step
    fits: object  # bool: weights + KV fit in memory (times NaN where not)


def launch_budget(
    model,
    gpu,
    kernels_per_step=CARD_KERNELS_PER_STEP,
    cpu_s_per_launch=CARD_CPU_S_PER_LAUNCH,
    *,
    cuda_graphs=False,
    batch=1,
    context_tokens=0,
    weight_precision="bf16",
    kv_precision="bf16",
    num_gpus=1,
) -> LaunchBudget:
    """Decode step with launch overhead: roofline time (``decode_step``) + kernels × CPU time per launch.

    Parameters
    ----------
    model, gpu : ids or dataclasses from ``roofline.data``.
    kernels_per_step : kernels one eager step launches (count, ≥ 0). Fusion lowers it. Broadcasts.
    cpu_s_per_launch : CPU time to launch one kernel (s, ≥ 0), a few µs in eager PyTorch. Broadcasts.
    cuda_graphs : True = the step was recorded once as a CUDA graph and is replayed with one launch.
    batch, context_tokens, weight_precision, kv_precision, num_gpus : as in ``decode_step``.

    Where the model does not fit in memory, times are NaN and ``fits`` is False.

    Taught in lesson 03.

    >>> b = launch_budget("llama-3-8b", "h100-sxm", 300, 4e-6, cuda_graphs=True)
    >>> round(b.overhead_s * 1e6, 1), round(b.share * 100, 2)    # one launch: 4 µs, under 0.1 %
    (4.0, 0.08)
    >>> launch_budget("llama-3-8b", "h100-sxm", [100, 300, 600]).share.round(2).tolist()
    [0.08, 0.2, 0.33]
    """
    k = checked(kernels_per_step, "kernels_per_step", minimum=0)
    c = checked(cpu_s_per_launch, "cpu_s_per_launch", minimum=0)
    launched = np.ones_like(k) if cuda_graphs else k
    overhead = np.asarray(launch_overhead_s(launched, c))
    step = decode_step(
        model,
        gpu,
        batch,
        context_tokens,
        num_gpus=num_gpus,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        on_overflow="mask",
    )
    roof = np.maximum(step.memory_time_s, step.compute_time_s)
    roof, overhead, ok = np.broadcast_arrays(np.asarray(roof), overhead, np.asarray(step.fits))
    total = np.where(ok, roof + overhead, np.nan)
    return LaunchBudget(
        model_id=step.model_id,
        gpu_id=step.gpu_id,
        weight_precision=weight_precision,
        kernels_launched=out(np.broadcast_to(launched, total.shape)),
        roofline_time_s=out(np.where(ok, roof, np.nan)),
        overhead_s=out(overhead),
        step_time_s=out(total),
        share=out(overhead / total),
        overhead_vs_roofline=out(np.where(ok, overhead / np.where(ok, roof, 1.0), np.nan)),
        tokens_per_s_per_user=out(1.0 / total),
        fits=out(ok),
    )


def kernels_per_step_estimate(model, kernels_per_layer=CARD_KERNELS_PER_STEP / 32):
    """Kernels one eager decode step launches, scaled by layer count (count; may be fractional).

    The card's ~300 kernels belong to Llama 3 8B's 32 layers: about 9.4 per layer (norms, projections,
    attention, activation, residual adds), plus a few outside the layers that this estimate ignores.

    Taught in lesson 03.

    >>> kernels_per_step_estimate("llama-3-8b"), kernels_per_step_estimate("llama-3-70b")
    (300.0, 750.0)
    """
    k = checked(kernels_per_layer, "kernels_per_layer", minimum=0)
    return out(get_model(model).layers * k)


def share_grid(
    model_ids,
    gpu_ids,
    kernels_per_layer=CARD_KERNELS_PER_STEP / 32,
    cpu_s_per_launch=CARD_CPU_S_PER_LAUNCH,
    weight_precision="bf16",
):
    """Launch-overhead share of a batch-1 eager decode step for every model (rows) × GPU (columns).

    Each model launches ``kernels_per_step_estimate(model, kernels_per_layer)`` kernels at
    ``cpu_s_per_launch`` (s) each. One broadcast over a column of weight bytes (and overheads) and a row
    of bandwidths; NaN where the weights do not fit on one GPU. Returns shape (models, GPUs) (fraction).

    Taught in lesson 03.

    >>> g = share_grid(["llama-3.2-1b", "llama-3-8b", "llama-3-70b"], ["a10g", "h100-sxm"])
    >>> g.round(2).tolist()     # 1B on an H100: nearly half the step is launching; 70B does not fit
    [[0.13, 0.45], [0.04, 0.2], [nan, nan]]
    """
    w = np.array([weight_bytes(m, weight_precision) for m in model_ids], dtype=float)[:, None]
    k = np.array([kernels_per_step_estimate(m, kernels_per_layer) for m in model_ids])[:, None]
    bw = np.array([get_gpu(g).memory_bandwidth_bytes_per_s for g in gpu_ids], dtype=float)[None, :]
    ok = np.array(
        [[bool(fits(m, g, 1, 0, weight_precision=weight_precision)) for g in gpu_ids] for m in model_ids]
    )
    share = np.asarray(overhead_share(w / bw, launch_overhead_s(k, cpu_s_per_launch)))
    return np.where(ok, share, np.nan)


def share_grid_figure(
    model_ids=None,
    gpu_ids=None,
    kernels_per_layer=CARD_KERNELS_PER_STEP / 32,
    cpu_s_per_launch=CARD_CPU_S_PER_LAUNCH,
):
    """Heat map of ``share_grid`` with the value in each cell; grey "does not fit" cells. A Picture.

    Taught in lesson 03.
    """
    model_ids = list(model_ids or [m for m in models() if not get_model(m).is_moe])
    gpu_ids = list(gpu_ids or gpus())
    grid = share_grid(model_ids, gpu_ids, kernels_per_layer, cpu_s_per_launch)
    # sort: models by size (rows), GPUs by bandwidth (columns), so the corner with short steps stands out
    rows = np.argsort([weight_bytes(m) for m in model_ids])
    cols = np.argsort([get_gpu(g).memory_bandwidth_bytes_per_s for g in gpu_ids])
    grid = grid[rows][:, cols]
    model_ids = [model_ids[i] for i in rows]
    gpu_ids = [gpu_ids[i] for i in cols]
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
            f"({kernels_per_layer:.3g} kernels per layer x {cpu_s_per_launch / US:g} µs)",
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
        budgets = [
            launch_budget(
                s.model,
                s.gpu,
                k,
                c,
                cuda_graphs=g,
                batch=s.batch,
                context_tokens=s.context_tokens,
                weight_precision=s.weight_precision,
                kv_precision=s.kv_precision,
                num_gpus=s.num_gpus,
            )
            for g in (False, True)
        ]
        if not budgets[0].fits:
            for bar in self.roof_bars + self.over_bars:
                bar.set_width(0)
            self._transient_artist(
                ax.text(
                    0.5,
                    0.5,
                    "does not fit in memory: no step time",
                    transform=ax.transAxes,
                    ha="center",
                    fontsize=14,
                    color="#444444",
                )
            )
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
            self._transient_artist(
                ax.text(
                    b.step_time_s / MS,
                    i,
                    label,
                    va="center",
                    fontsize=11,
                    fontweight="bold" if i == chosen else "normal",
                )
            )
        ax.set_xlim(nice_limits([max(widths) * 1.3], log=False))
        ax.set_title(
            f"{s.model} ({s.weight_precision}) on {s.num_gpus}x {s.gpu}, B={s.batch}: "
            f"{k:g} kernels x {c / US:g} µs",
            fontsize=12,
        )


def launch_readout(s: Scenario, options) -> str:
    """HTML table of the launch budget for the explorer's current settings."""
    b = launch_budget(
        s.model,
        s.gpu,
        options["kernels_per_step"],
        options["cpu_s_per_launch"],
        cuda_graphs=options["cuda_graphs"],
        batch=s.batch,
        context_tokens=s.context_tokens,
        weight_precision=s.weight_precision,
        kv_precision=s.kv_precision,
        num_gpus=s.num_gpus,
    )
    if not b.fits:
        return table_html([("step time", "does not fit in memory: no step time")])
    return table_html(
        [
            ("kernel launches per step", f"{b.kernels_launched:,.0f}"),
            ("GPU (roofline) time", f"{b.roofline_time_s / MS:.2f} ms"),
            ("launch overhead", f"{b.overhead_s / MS:.3f} ms"),
            ("step time", f"{b.step_time_s / MS:.2f} ms"),
            ("share spent launching", f"{b.share * 100:.1f}%"),
            ("tokens/s per user", f"{b.tokens_per_s_per_user:,.0f}"),
        ]
    )


def launch_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 03's explorer: kernels per step, CPU µs per launch, CUDA graphs on/off, model, GPU, precision.

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
        }

    return Explorer(
        LaunchBars,
        ["model", "gpu", "weight_precision"],
        scenario or Scenario(context_tokens=0),
        launch_readout,
        knobs=knobs,
        to_options=to_options,
    )
