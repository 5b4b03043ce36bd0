"""Tensor parallelism in practice: the ideal speedup (bandwidths add) and what the all-reduces take back.

Taught in lesson 24 (notebooks/24_tensor_parallel.ipynb).

With G GPUs each holding 1/G of every weight matrix, each GPU reads only its share per step, so the
memory floor is divided by G. Each layer then pays two all-reduces of the batch's activations
(``roofline.parallel``): a fixed start-up latency plus bytes ÷ link bandwidth. That cost does not shrink
with G, so the speedup falls below G, most for small models whose floor is already short.

    step(G)    = max(bytes ÷ (G × bandwidth), FLOPs ÷ (G × peak)) + 2 × L × all-reduce(B × d × 2 bytes)
    speedup(G) = step(1) ÷ step(G)           (ideal: G)

>>> s = tensor_parallel_scaling("llama-3-70b", "h100-sxm", num_gpus=[1, 2, 8], weight_precision="fp8")
>>> s.speedup_ideal.tolist(), s.speedup.round(2).tolist()
([1.0, 2.0, 8.0], [1.0, 1.74, 4.96])
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np

from ._arrays import checked, out
from .data import get_gpu, get_model
from .decode import decode_step
from .parallel import DEFAULT_ALLREDUCE_LATENCY_S
from .plots import COLORS, STYLE_PATH, LiveFigure, new_figure, nice_limits, show
from .scenario import Scenario
from .units import GB, MS
from .widgets import Explorer, table_html

# GPU counts the lesson's figures sweep (tensor parallelism splits heads, so powers of two).
GPU_COUNTS = np.array([1, 2, 4, 8])


@dataclass(frozen=True)
class TensorParallelScaling:
    """Decode step time on G GPUs with and without communication, and the speedup over one GPU.

    Array fields broadcast over ``num_gpus``, ``batch`` and ``context_tokens``. Times are NaN where the
    configuration does not fit in the G GPUs' memory; speedups are NaN also where one GPU cannot hold it
    (there is no one-GPU time to compare with).
    """

    num_gpus: object  # G
    step_time_ideal_s: object  # s, bandwidths and FLOP/s add up, no communication
    communication_time_s: object  # s, 2 all-reduces per layer
    step_time_s: object  # s, ideal + communication
    step_time_one_gpu_s: object  # s, the baseline
    speedup_ideal: object  # step(1) ÷ ideal step(G): G wherever both fit
    speedup: object  # step(1) ÷ step(G) with communication
    efficiency: object  # speedup ÷ G (1 = perfect scaling)
    communication_fraction: object  # share of the step spent in all-reduces (0–1)
    fits: object  # bool: weights + KV fit in G GPUs
    fits_one_gpu: object  # bool: the baseline exists


def tensor_parallel_scaling(
    model,
    gpu,
    num_gpus,
    batch=1,
    context_tokens=0,
    *,
    weight_precision="bf16",
    kv_precision="bf16",
    allreduce_latency_s=DEFAULT_ALLREDUCE_LATENCY_S,
):
    """How a decode step scales over ``num_gpus`` GPUs (G) in tensor parallel, ideal and with all-reduces.

    Parameters
    ----------
    model, gpu : ids (``"llama-3-8b"``, ``"h100-sxm"``) or dataclasses from ``roofline.data``. The link
        bandwidth is the GPU's ``interconnect_bytes_per_s`` (NVLink or PCIe).
    num_gpus : GPUs in tensor parallel, ≥ 1. Array-like broadcasts (a sweep over G is one call).
    batch : users decoding together, ≥ 1 (users). context_tokens : KV tokens per user, ≥ 0 (tokens).
    weight_precision, kv_precision : precision ids. allreduce_latency_s : start-up of one all-reduce (s).

    Taught in lesson 24.

    >>> s = tensor_parallel_scaling("llama-3-8b", "h100-sxm", num_gpus=[1, 2, 4, 8])
    >>> (s.step_time_s / 1e-3).round(2).tolist()      # ms: 64 all-reduces of ~10 µs each stay put
    [4.79, 3.04, 1.84, 1.24]
    >>> s.efficiency.round(2).tolist()
    [1.0, 0.79, 0.65, 0.48]
    >>> tensor_parallel_scaling("llama-3-70b", "h100-sxm", 2).fits_one_gpu   # 141 GB of BF16 on 80 GB
    False
    """
    n = checked(num_gpus, "num_gpus", minimum=1)
    common = dict(weight_precision=weight_precision, kv_precision=kv_precision, on_overflow="mask")
    ideal = decode_step(model, gpu, batch, context_tokens, num_gpus=n, **common)
    real = decode_step(
        model,
        gpu,
        batch,
        context_tokens,
        num_gpus=n,
        include_communication=True,
        allreduce_latency_s=allreduce_latency_s,
        **common,
    )
    one = decode_step(model, gpu, batch, context_tokens, num_gpus=1, **common)
    ideal_t, real_t, one_t = np.broadcast_arrays(
        np.asarray(ideal.step_time_s), np.asarray(real.step_time_s), np.asarray(one.step_time_s)
    )
    g = np.broadcast_to(n, ideal_t.shape)
    speedup = one_t / real_t
    return TensorParallelScaling(
        num_gpus=out(g),
        step_time_ideal_s=out(ideal_t),
        communication_time_s=out(np.broadcast_to(real.communication_time_s, ideal_t.shape)),
        step_time_s=out(real_t),
        step_time_one_gpu_s=out(one_t),
        speedup_ideal=out(one_t / ideal_t),
        speedup=out(speedup),
        efficiency=out(speedup / g),
        communication_fraction=out(np.broadcast_to(real.communication_time_s, ideal_t.shape) / real_t),
        fits=out(np.broadcast_to(ideal.fits, ideal_t.shape)),
        fits_one_gpu=out(np.broadcast_to(one.fits, ideal_t.shape)),
    )


def weight_bytes_per_gpu(model, weight_precision="bf16", num_gpus=1):
    """Weight bytes each of ``num_gpus`` GPUs holds and reads per step under tensor parallelism (bytes).

    Taught in lesson 24.

    >>> weight_bytes_per_gpu("llama-3-70b", "fp8", [1, 2]) / 1e9   # 70.6 GB split in two
    array([70.55..., 35.27...])
    """
    from .architecture import weight_bytes

    n = checked(num_gpus, "num_gpus", minimum=1)
    return out(weight_bytes(model, weight_precision) / n)


class SpeedupVsGPUs(LiveFigure):
    """Left: decode step time against G (ideal, with all-reduces, the all-reduce part). Right: speedup
    over one GPU against G, beside the ideal line (speedup = G). Option ``communication`` (bool, default
    True) hides the communication curves when False."""

    ncols = 2

    def _build(self):
        left, right = self.axes
        m = self._moving
        self.ideal_t = m(left.plot([], [], "o--", color=COLORS["weights"], label="ideal: floor ÷ G")[0])
        self.real_t = m(left.plot([], [], "o-", color=COLORS["step"], label="with all-reduces")[0])
        self.comm_t = m(left.plot([], [], "s:", color=COLORS["prefill"], label="all-reduce time")[0])
        self.ideal_s = m(right.plot([], [], "o--", color=COLORS["weights"], label="ideal (= G)")[0])
        self.real_s = m(right.plot([], [], "o-", color=COLORS["step"], label="with all-reduces")[0])
        self.markers = [
            m(ax.plot([], [], "o", ms=14, mfc="none", mec="red", mew=2.5, zorder=6)[0]) for ax in self.axes
        ]
        for ax in self.axes:
            ax.set(xscale="log", xlabel="GPUs in tensor parallel, G", xlim=(0.8, 10))
            ax.set_xticks(GPU_COUNTS, [str(g) for g in GPU_COUNTS])
            ax.minorticks_off()
        left.set(ylabel="ms per decode step", title="Step time")
        right.set(ylabel="speedup over 1 GPU", title="Speedup", ylim=(0, 9))
        left.legend(loc="upper right")
        right.legend(loc="upper left")

    def _draw(self, s):
        left, right = self.axes
        comm_on = self.options.get("communication", True)
        sc = tensor_parallel_scaling(
            s.model,
            s.gpu,
            GPU_COUNTS,
            s.batch,
            s.context_tokens,
            weight_precision=s.weight_precision,
            kv_precision=s.kv_precision,
        )
        self.ideal_t.set_data(GPU_COUNTS, sc.step_time_ideal_s / MS)
        self.ideal_s.set_data(GPU_COUNTS, sc.speedup_ideal)
        if comm_on:
            self.real_t.set_data(GPU_COUNTS, sc.step_time_s / MS)
            self.comm_t.set_data(GPU_COUNTS[1:], sc.communication_time_s[1:] / MS)
            self.real_s.set_data(GPU_COUNTS, sc.speedup)
        else:
            for line in (self.real_t, self.comm_t, self.real_s):
                line.set_data([], [])
        left.set_ylim(nice_limits(np.concatenate([sc.step_time_ideal_s, sc.step_time_s]) / MS, log=False))
        g = s.num_gpus
        here = tensor_parallel_scaling(
            s.model,
            s.gpu,
            g,
            s.batch,
            s.context_tokens,
            weight_precision=s.weight_precision,
            kv_precision=s.kv_precision,
        )
        t_here = here.step_time_s if comm_on else here.step_time_ideal_s
        sp_here = here.speedup if comm_on else here.speedup_ideal
        if here.fits:
            self.markers[0].set_data([g], [t_here / MS])
            self._transient_artist(
                left.text(
                    0.97,
                    0.55,
                    f"G={g}: {t_here / MS:.2f} ms per step",
                    transform=left.transAxes,
                    ha="right",
                    fontsize=12,
                    color="red",
                )
            )
        else:
            self.markers[0].set_data([], [])
        if np.isfinite(sp_here):
            self.markers[1].set_data([g], [sp_here])
            self._transient_artist(
                right.text(
                    0.97,
                    0.04,
                    f"G={g}: {sp_here:.2f}x ({sp_here / g:.0%} of ideal)",
                    transform=right.transAxes,
                    ha="right",
                    fontsize=12,
                    color="red",
                )
            )
        else:
            self.markers[1].set_data([], [])
        bad = GPU_COUNTS[~np.asarray(sc.fits)]
        for ax in self.axes:
            if bad.size:
                self._transient_artist(
                    ax.axvspan(0.8, bad.max() * 1.3, color=COLORS["overflow"], alpha=0.25, lw=0)
                )
                self._transient_artist(
                    ax.text(
                        0.85,
                        0.5,
                        "does not fit\nin memory",
                        transform=ax.get_xaxis_transform(),
                        va="center",
                        ha="left",
                        color="#444444",
                        fontsize=11,
                    )
                )
        if not sc.fits_one_gpu[0]:
            self._transient_artist(
                right.text(
                    0.97,
                    0.12,
                    "one GPU cannot hold it:\nno 1-GPU time to compare with",
                    transform=right.transAxes,
                    ha="right",
                    fontsize=11,
                    color="#444444",
                )
            )
        link = get_gpu(s.gpu).interconnect
        self.fig.suptitle(
            f"{s.model} ({s.weight_precision}) on {s.gpu} over {link}, B={s.batch}, T={s.context_tokens:,}",
            fontsize=12,
        )


def scaling_comparison_figure(
    models=(("llama-3-8b", "bf16"), ("llama-3-70b", "fp8")),
    gpus=("h100-sxm", "h100-pcie"),
    batches=(1, 64),
    context_tokens=0,
):
    """Static figure: speedup over one GPU against G, one panel per GPU (and so per link), one colour per
    model, one line style per batch, beside the ideal line. Configurations that do not fit are left out
    (NaN). Taught in lesson 24."""
    fig, axes = new_figure(len(gpus))
    colors = [COLORS["weights"], COLORS["prefill"], COLORS["compute"], COLORS["capacity"]]
    styles = ["o-", "s:", "^-.", "d--"]
    with plt.style.context(STYLE_PATH):
        for ax, gpu in zip(axes, gpus, strict=True):
            ax.plot(GPU_COUNTS, GPU_COUNTS, "--", color="grey", lw=2, label="ideal (= G)")
            for (model, prec), color in zip(models, colors, strict=False):
                for batch, style in zip(batches, styles, strict=False):
                    sc = tensor_parallel_scaling(
                        model, gpu, GPU_COUNTS, batch, context_tokens, weight_precision=prec
                    )
                    ax.plot(GPU_COUNTS, sc.speedup, style, color=color, label=f"{model} {prec}, B={batch}")
                    if np.isfinite(sc.speedup[-1]):
                        ax.annotate(
                            f"{sc.speedup[-1]:.1f}x",
                            (8, sc.speedup[-1]),
                            xytext=(6, -4),
                            textcoords="offset points",
                            fontsize=11,
                            color=color,
                        )
            g = get_gpu(gpu)
            ax.set(
                xscale="log",
                xlabel="GPUs in tensor parallel, G",
                ylabel="speedup over 1 GPU",
                ylim=(0, 9),
                xlim=(0.8, 11),
                title=f"{gpu}: {g.interconnect}, {g.interconnect_bytes_per_s / GB:.0f} GB/s",
            )
            ax.set_xticks(GPU_COUNTS, [str(x) for x in GPU_COUNTS])
            ax.minorticks_off()
            ax.legend(loc="upper left", fontsize=10)
        fig.suptitle(f"Decode speedup from tensor parallelism (T={context_tokens:,})", fontsize=13)
    return show(fig, "speedup vs GPUs")


def tensor_parallel_readout(s: Scenario, options: dict | None = None) -> str:
    """HTML table for the lesson-24 explorer: per-GPU weights, floor, all-reduces, step and speedup.
    ``options["communication"]`` (default True) says whether the all-reduces count. Taught in lesson 24.

    >>> s = Scenario(model="llama-3-70b", weight_precision="fp8", num_gpus=2, context_tokens=0)
    >>> "12.14 ms" in tensor_parallel_readout(s)
    True
    """
    comm_on = (options or {}).get("communication", True)
    m = get_model(s.model)
    sc = tensor_parallel_scaling(
        s.model,
        s.gpu,
        s.num_gpus,
        s.batch,
        s.context_tokens,
        weight_precision=s.weight_precision,
        kv_precision=s.kv_precision,
    )
    rows = [
        ("weights per GPU", f"{weight_bytes_per_gpu(s.model, s.weight_precision, s.num_gpus) / GB:.1f} GB")
    ]
    if not sc.fits:
        return table_html(rows + [("step time", "does not fit in memory: no step time")])
    t = sc.step_time_s if comm_on else sc.step_time_ideal_s
    rows += [
        ("ideal step (no all-reduce)", f"{sc.step_time_ideal_s / MS:.2f} ms"),
        (
            f"all-reduces ({2 * m.layers} per step)",
            f"{sc.communication_time_s / MS:.2f} ms" + ("" if comm_on else " (switched off)"),
        ),
        ("step time", f"{t / MS:.2f} ms"),
        ("tokens/s per user", f"{1 / t:,.0f}"),
        (
            "speedup over 1 GPU",
            "no 1-GPU baseline (does not fit)"
            if not sc.fits_one_gpu
            else f"{(sc.speedup if comm_on else sc.speedup_ideal):.2f}x of an ideal {s.num_gpus}x",
        ),
    ]
    return table_html(rows)


def tensor_parallel_explorer(scenario: Scenario | None = None) -> Explorer:
    """The lesson-24 explorer: model, GPU, weight precision, G, batch, and all-reduces on/off.
    Taught in lesson 24.

    >>> tensor_parallel_explorer()
    <Explorer SpeedupVsGPUs: model, gpu, weight_precision, num_gpus, batch, communication>
    """
    scenario = scenario or Scenario(model="llama-3-70b", weight_precision="fp8", num_gpus=2, context_tokens=0)
    knob = W.Checkbox(value=True, description="include the all-reduces", indent=False)
    return Explorer(
        SpeedupVsGPUs,
        ["model", "gpu", "weight_precision", "num_gpus", "batch"],
        scenario,
        tensor_parallel_readout,
        knobs={"communication": knob},
    )
