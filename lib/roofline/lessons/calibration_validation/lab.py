"""Figures of the engine model's parts: kernels measured against the kernel model, and the gap by engine.
The numbers come from ``roofline.calibration`` (its kernel timings and fits); this module only draws them.

>>> kernel_fit_figure("h100-sxm", "vllm")
<kernel fit>
"""

from __future__ import annotations

import ipywidgets as W
import numpy as np
from matplotlib.ticker import NullFormatter

from roofline.calibration import kernels, validation
from roofline.course.figures import COLORS, Picture, new_figure, nice_limits
from roofline.lessons.floor_to_real_server.lab import ENGINE_COLORS, REGIME_MARKERS
from roofline.units import TFLOPS

SHAPES = ((1024, 4096), (4096, 4096), (16384, 16384))  # (n, k): a small, a middling, a large matrix


def kernel_fit_figure(gpu: str = "h100-sxm", engine: str = "vllm", dtype: str = "bf16") -> Picture:
    """A GEMM's achieved TFLOP/s against the tokens in the step (m), for three layer shapes: the measured
    kernels (points), the kernel model fitted to them (lines: a smooth roofline with a fixed cost), and
    the data sheet's roofline (dashed). Small m is bandwidth-bound, large m reaches the compute fraction."""
    s = kernels.kernel_samples("gemm", gpu, engine, dtype)
    t = kernels.load_kernel_table("gemm.csv")
    sel = (t["gpu"] == gpu) & (t["engine"] == engine) & (t["dtype"] == dtype)
    n_all, k_all = t["n"][sel], t["k"][sel]
    fig, (ax,) = new_figure(figsize=(8, 4.8))
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
    title = f"{dtype.upper()} GEMMs on {gpu} ({engine})\nmeasured (points), model (lines), roofline (dashed)"
    ax.set(
        xscale="log", yscale="log", xlabel="tokens in the step (m)", ylabel="achieved TFLOP/s", title=title
    )
    fitted = (
        f"fitted: {p['gemm_compute_fraction']:.0%} of peak math,\n{p['gemm_bandwidth_fraction']:.0%} "
        f"of bandwidth, {p['gemm_overhead_s'] * 1e6:.1f} µs per kernel"
    )
    ax.text(0.97, 0.35, fitted, transform=ax.transAxes, va="bottom", ha="right")  # above the legend
    ax.legend(loc="lower right")
    return Picture(fig, "kernel fit")


def residuals_figure(validation: validation.Validation, in_sample: np.ndarray) -> Picture:
    """Predicted against measured time, one panel per regime: held-out predictions filled (each from a
    fit that never saw its group), in-sample predictions as grey rings; the diagonal and ±20 % lines."""
    ms = validation.measurements
    regimes = [r for r in REGIME_MARKERS if (ms.regime == r).any()]
    fig, axes = new_figure(len(regimes), figsize=(12, 3.8))
    for ax, reg in zip(axes, regimes, strict=True):
        sel = ms.regime == reg
        y = ms.measured_s[sel]
        ring = dict(s=14, facecolors="none", edgecolors="#AAAAAA", lw=0.7)
        ax.scatter(y, in_sample[sel], label="in-sample", **ring)
        for eng, color in ENGINE_COLORS.items():
            e = sel & (ms.engine == eng)
            if e.any():
                ax.scatter(
                    ms.measured_s[e], validation.predicted_s[e], s=10, color=color,
                    marker=REGIME_MARKERS[reg], label=f"{eng} (held out)", alpha=0.8,
                )  # fmt: skip
        lo, hi = nice_limits(np.concatenate([y, validation.predicted_s[sel]]), log=True)
        xs = np.array([lo, hi])
        ax.plot(xs, xs, color="black", lw=1)
        ax.plot(xs, xs * 1.2, color="black", lw=0.6, ls=":")
        ax.plot(xs, xs / 1.2, color="black", lw=0.6, ls=":")
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel="measured (s)")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(reg, fontsize=12)
    axes[0].set_ylabel("predicted (s)")
    handles = {}  # one legend entry per label, whichever panel has it
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncols=4)
    return Picture(fig, "residuals")


def kernel_fit_explorer() -> W.VBox:
    """``kernel_fit_figure`` for any timed GPU, engine and GEMM format. Not a step explorer: it shows the
    data a step's kernel numbers come from. The picture is an ``Image`` widget, so a saved notebook keeps
    the last one."""
    t = kernels.load_kernel_table("gemm.csv")
    timed = set(zip(t["gpu"].tolist(), t["engine"].tolist(), t["dtype"].tolist(), strict=True))
    menus = [
        W.Dropdown(options=sorted({c[i] for c in timed}), value=v, description=name)
        for i, (name, v) in enumerate((("GPU", "h100-sxm"), ("engine", "vllm"), ("GEMM format", "bf16")))
    ]
    image = W.Image(format="png", layout=W.Layout(max_width="100%"))
    note = W.HTML()

    def redraw(_=None):
        key = tuple(m.value for m in menus)
        if key not in timed:
            note.value = f"<p>{key[1]} has no {key[2]} GEMM timings on {key[0]}: pick another format.</p>"
            return
        note.value = ""
        image.value = kernel_fit_figure(*key).png_bytes

    for m in menus:
        m.observe(redraw, names="value")
    redraw()
    return W.VBox([W.HBox(menus, layout=W.Layout(flex_flow="row wrap")), image, note])
