"""Figures of the engine model's parts: kernels measured against the kernel model, and the gap by engine.

Taught in notebooks/calibration_validation.ipynb. The numbers come from ``roofline.engines`` (its kernel
timings and fits); this module only draws them.

>>> kernel_fit_figure("h100-sxm", "vllm")
<kernel fit>
"""

from __future__ import annotations

import numpy as np

from roofline.calibration import kernels
from roofline.units import TFLOPS
from roofline.views.plots import COLORS, Picture, new_figure

SHAPES = ((1024, 4096), (4096, 4096), (16384, 16384))  # (n, k): a small, a middling, a large matrix


def kernel_fit_figure(gpu: str = "h100-sxm", engine: str = "vllm", dtype: str = "bf16") -> Picture:
    """A GEMM's achieved TFLOP/s against the tokens in the step (m), for three layer shapes: the measured
    kernels (points), the kernel model fitted to them (lines: a smooth roofline with a fixed cost), and
    the data sheet's roofline (dashed). Small m is bandwidth-bound, large m reaches the compute fraction."""
    s = kernels.kernel_samples("gemm", gpu, engine, dtype)
    t = kernels.load_kernel_table("gemm.csv")
    sel = (t["gpu"] == gpu) & (t["engine"] == engine) & (t["dtype"] == dtype)
    n_all, k_all = t["n"][sel], t["k"][sel]
    fig, (ax,) = new_figure(figsize=(6.4, 3.6))
    m_line = np.geomspace(1, 16384, 120)
    colors = [COLORS["step"], COLORS["prefill"], COLORS["decode"]]
    for (n, k), color in zip(SHAPES, colors, strict=False):
        here = (n_all == n) & (k_all == k)
        if not here.any():
            continue
        m = s["m"][here]
        ax.plot(m, s["flops"][here] / s["measured_s"][here] / TFLOPS, "o", ms=3.5, color=color, alpha=0.8)
        model = kernels.gemm_time_s(m_line, n, k, gpu, engine, dtype)
        flops = 2 * m_line * n * k
        ax.plot(m_line, flops / model / TFLOPS, color=color, label=f"n={n:,}, k={k:,}")
        bytes_ = (m_line * k + k * n) * 2 + m_line * n * 2
        roof = np.minimum(s["peak"], flops / (bytes_ / s["bandwidth"]))
        ax.plot(m_line, roof / TFLOPS, ls="--", lw=0.8, color=color, alpha=0.6)
    p = kernels.kernel_parameters(gpu, engine, dtype=dtype)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="tokens in the step (m)",
        ylabel="achieved TFLOP/s",
        title=f"{dtype.upper()} GEMMs on {gpu} ({engine}): measured (points), model (lines), roofline (- -)",
    )
    ax.title.set_fontsize(9)
    ax.text(
        0.02,
        0.97,
        f"fitted: {p['gemm_compute_fraction']:.0%} of peak math, {p['gemm_bandwidth_fraction']:.0%} "
        f"of bandwidth, {p['gemm_overhead_s'] * 1e6:.1f} µs per kernel",
        transform=ax.transAxes,
        va="top",
        fontsize=8,
    )
    ax.legend(fontsize=7, loc="lower right")
    return Picture(fig, "kernel fit")
