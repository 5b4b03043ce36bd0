"""The figures, readouts and explorer of lesson 24, taught in notebooks/24_tensor_parallel.ipynb."""

from __future__ import annotations

from dataclasses import replace

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np

from roofline.course.figures import COLORS, STYLE_PATH, LiveFigure, new_figure, nice_limits, show
from roofline.course.readouts import StepCase, case_readout_for, combine_readouts, decode_case, table_html
from roofline.course.widgets import STEP, Explorer
from roofline.data import get_gpu, get_model
from roofline.lessons.tensor_parallel.numbers import GPU_COUNTS, tensor_parallel_scaling, weight_bytes_per_gpu
from roofline.scenario import Scenario
from roofline.units import GB, MS


def _scaling(s: Scenario, num_gpus):
    """``tensor_parallel_scaling`` of the scenario's model, GPU, batch, context and precisions."""
    precisions = dict(weight_precision=s.weight_precision, kv_precision=s.kv_precision)
    return tensor_parallel_scaling(s.model, s.gpu, num_gpus, s.batch, s.context_tokens, **precisions)


def _gpu_axis(ax, right_end: float) -> None:
    """A log x axis of GPU counts, ticked at each count the lesson sweeps."""
    ax.set(xscale="log", xlabel="GPUs in tensor parallel, G", xlim=(0.8, right_end))
    ax.set_xticks(GPU_COUNTS, [str(g) for g in GPU_COUNTS])
    ax.minorticks_off()


class SpeedupVsGPUs(LiveFigure):
    """Left: decode step time against G (ideal, with all-reduces, the all-reduce part). Right: speedup
    over one GPU against G, beside the ideal line (speedup = G). Option ``communication`` (bool, default
    True) hides the communication curves when False."""

    ncols = 2

    def _build(self):
        left, right = self.axes
        self.ideal_t = self._line(left, "o--", color=COLORS["weights"], label="ideal: floor ÷ G")
        self.real_t = self._line(left, "o-", color=COLORS["step"], label="with all-reduces")
        self.comm_t = self._line(left, "s:", color=COLORS["prefill"], label="all-reduce time")
        self.ideal_s = self._line(right, "o--", color=COLORS["weights"], label="ideal (= G)")
        self.real_s = self._line(right, "o-", color=COLORS["step"], label="with all-reduces")
        self.markers = [
            self._line(ax, "o", ms=14, mfc="none", mec="red", mew=2.5, zorder=6) for ax in self.axes
        ]
        for ax in self.axes:
            _gpu_axis(ax, 10)
        left.set(ylabel="ms per decode step", title="Step time")
        right.set(ylabel="speedup over 1 GPU", title="Speedup", ylim=(0, 9))
        left.legend(loc="upper right")
        right.legend(loc="upper left")

    def _draw(self, s):
        comm_on = self.options.get("communication", True)
        sc = _scaling(s, GPU_COUNTS)
        self.ideal_t.set_data(GPU_COUNTS, sc.step_time_ideal_s / MS)
        self.ideal_s.set_data(GPU_COUNTS, sc.speedup_ideal)
        if comm_on:
            self.real_t.set_data(GPU_COUNTS, sc.step_time_s / MS)
            self.comm_t.set_data(GPU_COUNTS[1:], sc.communication_time_s[1:] / MS)
            self.real_s.set_data(GPU_COUNTS, sc.speedup)
        else:
            for line in (self.real_t, self.comm_t, self.real_s):
                line.set_data([], [])
        times_ms = np.concatenate([sc.step_time_ideal_s, sc.step_time_s]) / MS
        self.axes[0].set_ylim(nice_limits(times_ms, log=False))
        self._mark_here(s, comm_on)
        self._shade_what_does_not_fit(sc)
        link = get_gpu(s.gpu).interconnect
        self.fig.suptitle(
            f"{s.model} ({s.weight_precision}) on {s.gpu} over {link}, B={s.batch}, T={s.context_tokens:,}",
            fontsize=12,
        )

    def _mark_here(self, s, comm_on: bool):
        """Circle the scenario's G on both panels, with its step time and speedup."""
        g, here = s.num_gpus, _scaling(s, s.num_gpus)
        t_ms = (here.step_time_s if comm_on else here.step_time_ideal_s) / MS
        speedup = here.speedup if comm_on else here.speedup_ideal
        marks = (
            (bool(here.fits), t_ms, 0.55, f"G={g}: {t_ms:.2f} ms per step"),
            (np.isfinite(speedup), speedup, 0.04, f"G={g}: {speedup:.2f}x ({speedup / g:.0%} of ideal)"),
        )
        for ax, marker, (shown, y, y_text, text) in zip(self.axes, self.markers, marks, strict=True):
            if self._mark(marker, shown, [g], [y]):
                red = dict(transform=ax.transAxes, ha="right", fontsize=12, color="red")
                self._transient_artist(ax.text(0.97, y_text, text, **red))

    def _shade_what_does_not_fit(self, sc):
        """Shade the GPU counts whose memory cannot hold the model, and say when one GPU cannot."""
        bad = GPU_COUNTS[~np.asarray(sc.fits)]
        for ax in self.axes if bad.size else ():
            self._shade(ax, 0.8, bad.max() * 1.3, "does not fit\nin memory", 0.85, va="center")
        if not sc.fits_one_gpu[0]:
            right = self.axes[1]
            text = "one GPU cannot hold it:\nno 1-GPU time to compare with"
            grey = dict(transform=right.transAxes, ha="right", fontsize=11, color="#444444")
            self._transient_artist(right.text(0.97, 0.12, text, **grey))


def scaling_comparison_figure(
    models=(("llama-3-8b", "bf16"), ("llama-3-70b", "fp8")), batches=(1, 64), *, picture=True
):
    """One column per GPU (H100 SXM over NVLink, H100 PCIe over PCIe), one colour per model and precision,
    one line style per batch, at no context. Top: the speedup over one GPU against G. Bottom: the time per
    decode step (ms) the speedup hides, also where one GPU cannot hold the model. ``picture`` False returns
    the matplotlib Figure."""
    gpus = ("h100-sxm", "h100-pcie")
    colors = [COLORS["weights"], COLORS["prefill"], COLORS["compute"], COLORS["capacity"]]
    styles = ["o-", "s:", "^-.", "d--"]
    fig, axes = new_figure(2, figsize=(9, 8), nrows=2)
    top, bottom = axes[:2], axes[2:]
    with plt.style.context(STYLE_PATH):
        times = []
        for ax, low, gpu in zip(top, bottom, gpus, strict=True):
            ax.plot(GPU_COUNTS, GPU_COUNTS, "--", color="grey", lw=2, label="ideal (= G)")
            for (model, prec), color in zip(models, colors, strict=False):
                for batch, style in zip(batches, styles, strict=False):
                    sc = tensor_parallel_scaling(model, gpu, GPU_COUNTS, batch, weight_precision=prec)
                    t_ms = np.asarray(sc.step_time_s) / MS
                    ax.plot(GPU_COUNTS, sc.speedup, style, color=color, label=f"{model} {prec}, B={batch}")
                    low.plot(GPU_COUNTS, t_ms, style, color=color)
                    times.append(t_ms)
                    ends = (
                        (ax, sc.speedup[-1], f"{sc.speedup[-1]:.1f}x", 11),
                        (low, t_ms[-1], f"{t_ms[-1]:.1f} ms", 10),
                    )
                    note = dict(xytext=(6, -4), textcoords="offset points", color=color)
                    for a, y, text, size in ends:
                        if np.isfinite(y):
                            a.annotate(text, (8, y), fontsize=size, **note)
            g = get_gpu(gpu)
            link = f"{gpu}: {g.interconnect}, {g.interconnect_bytes_per_s / GB:.0f} GB/s"
            ax.set(ylabel="speedup over 1 GPU", ylim=(0, 9), title=link)
            low.set(ylabel="ms per decode step (with all-reduces)", yscale="log")
            _gpu_axis(ax, 14)
            _gpu_axis(low, 14)
            ax.legend(loc="upper left", fontsize=9)
        for low in bottom:
            low.set_ylim(nice_limits(np.concatenate(times), log=True))
        fig.suptitle("Decode from tensor parallelism (T=0): speedup and absolute time", fontsize=13)
    return show(fig, "speedup vs GPUs") if picture else fig


def tensor_parallel_readout(s: Scenario, options: dict | None = None) -> str:
    """HTML table for the lesson-24 explorer: per-GPU weights, the floor without all-reduces, the
    all-reduces and the speedup over one GPU; ``options["communication"]`` (default True) says whether the
    all-reduces count. The step itself, priced, is the engine readout of ``tensor_parallel_case``.

    >>> s = Scenario(model="llama-3-70b", weight_precision="fp8", num_gpus=2, context_tokens=0)
    >>> "10.53 ms" in tensor_parallel_readout(s)        # 70.55 GB over 2 × 3.35 TB/s
    True
    """
    comm_on = (options or {}).get("communication", True)
    sc = _scaling(s, s.num_gpus)
    split = weight_bytes_per_gpu(s.model, s.weight_precision, s.num_gpus) / GB
    rows = [("weights per GPU", f"{split:.1f} GB")]
    if not sc.fits:
        return table_html(rows + [("ideal step (no all-reduce)", "does not fit in memory: no step time")])
    speedup = sc.speedup if comm_on else sc.speedup_ideal
    comm = f"{sc.communication_time_s / MS:.2f} ms" + ("" if comm_on else " (switched off)")
    gain = (
        f"{speedup:.2f}x of an ideal {s.num_gpus}x" if sc.fits_one_gpu else "no 1-GPU baseline (does not fit)"
    )
    rows += [
        ("ideal step (no all-reduce)", f"{sc.step_time_ideal_s / MS:.2f} ms"),
        (f"all-reduces ({2 * get_model(s.model).layers} per step)", comm),
        ("speedup over 1 GPU", gain),
    ]
    return table_html(rows)


def tensor_parallel_case(s: Scenario, options: dict | None = None) -> StepCase:
    """The step lesson 24's explorer is about: the decode step on G GPUs, with its all-reduces when
    ``options["communication"]`` (default True) says so, for the ideal and for a good engine alike.

    >>> c = tensor_parallel_case(Scenario(model="llama-3-70b", weight_precision="fp8", num_gpus=2,
    ...                                   context_tokens=0))
    >>> c.title, c.communication
    ('one decode step of one user with no context yet, on 2 GPUs with their all-reduces', True)
    """
    comm_on = bool((options or {}).get("communication", True))
    case = decode_case(s, include_communication=comm_on)
    gpus = "on one GPU" if s.num_gpus == 1 else f"on {s.num_gpus} GPUs"
    how = "" if s.num_gpus == 1 else (" with their all-reduces" if comm_on else " without all-reduces")
    return replace(case, title=f"{case.title}, {gpus}{how}", communication=comm_on)


def tensor_parallel_explorer(scenario: Scenario | None = None) -> Explorer:
    """The lesson-24 explorer: model, GPU, weight precision, G, batch, context, and all-reduces on/off.

    >>> tensor_parallel_explorer()   # doctest: +NORMALIZE_WHITESPACE
    <Explorer SpeedupVsGPUs: batch, context_tokens, weight_precision, num_gpus, gpu, model, communication,
     engine>
    """
    scenario = scenario or Scenario(model="llama-3-70b", weight_precision="fp8", num_gpus=2, context_tokens=0)
    knob = W.Checkbox(value=True, description="include the all-reduces", indent=False)
    return Explorer(
        SpeedupVsGPUs,
        STEP,
        scenario,
        # the split, then the step on G GPUs priced: the floor beside a good engine, the cost
        combine_readouts(tensor_parallel_readout, case_readout_for(tensor_parallel_case)),
        knobs={"communication": knob},
    )
