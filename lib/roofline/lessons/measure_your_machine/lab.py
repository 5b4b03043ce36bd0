"""Figures for "measure it yourself": this machine's roofline, and the numpy transformer's decode on it.
The numbers come from ``roofline.measure`` (numpy only); this module only draws them."""

from __future__ import annotations

import numpy as np

from roofline.course.figures import COLORS, Picture, new_figure, show
from roofline.measure.bench import Measurement
from roofline.measure.transformer import DecodeTiming, TransformerConfig, achieved_mbu, roofline_prediction
from roofline.units import GB, MS

GFLOPS = 1e9


def compute_bound_batch(cfg: TransformerConfig, machine: Measurement, context_tokens: int = 0) -> float:
    """The smallest batch whose predicted step is compute-bound (users), NaN if none up to 4,096.

    >>> m = Measurement(20e9, 100e9, 5.0, 1e-6, 50e9)
    >>> from roofline.measure.transformer import SMALL
    >>> compute_bound_batch(SMALL, m)     # fp32: 2 FLOP per 4 bytes per user, ridge 5 → B = 10
    10.0
    """
    batches = np.arange(1, 4097)
    s = roofline_prediction(cfg, machine, batches, context_tokens)
    bound = np.flatnonzero(np.asarray(s.compute_time_s) >= np.asarray(s.memory_time_s))
    return float(batches[bound[0]]) if bound.size else float("nan")


def machine_roofline(machine: Measurement, cfg: TransformerConfig, timing: DecodeTiming) -> Picture:
    """Attainable FLOP/s vs arithmetic intensity for this machine: the bandwidth roof, the fp32 and fp64
    matmul roofs, the ridge, and the decode steps of ``cfg`` measured in ``timing`` as points."""
    bw, peak = machine.memory_bandwidth_bytes_per_s, machine.matmul_flops_per_s
    fig, (ax,) = new_figure(figsize=(9, 4.5))
    x = np.geomspace(0.05, 1000, 300)
    ax.loglog(x, np.minimum(x * bw, peak) / GFLOPS, color=COLORS["step"], lw=2.5, label="roofline (fp32)")
    ax.loglog(
        x, np.minimum(x * bw, machine.matmul_fp64_flops_per_s) / GFLOPS, color=COLORS["step"], lw=1, ls="--",
        label="fp64 matmul roof",
    )  # fmt: skip
    ridge = machine.ridge_flop_per_byte
    ax.axvline(ridge, color=COLORS["compute"], ls=":", lw=1.5)
    ax.annotate(
        f"ridge {ridge:.1f} FLOP/byte", (ridge, peak / GFLOPS), xytext=(8, -28), textcoords="offset points",
        color=COLORS["compute"],
    )  # fmt: skip
    ax.annotate(
        f"bandwidth {bw / GB:.0f} GB/s", (0.1, 0.1 * bw / GFLOPS), xytext=(0, 10), textcoords="offset points",
        rotation=22, color=COLORS["weights"],
    )  # fmt: skip
    ax.annotate(
        f"matmul {peak / GFLOPS:.0f} GFLOP/s", (200, peak / GFLOPS), xytext=(-60, 6),
        textcoords="offset points",
    )  # fmt: skip
    b = timing.batch
    s = roofline_prediction(cfg, machine, b, int(timing.context_tokens[0]))
    intensity = np.asarray(s.flops) / np.asarray(s.bytes_read)
    achieved = np.asarray(s.flops) / timing.min_s[:, 0]
    ax.loglog(intensity, achieved / GFLOPS, "o", color=COLORS["decode"], label="numpy decode, measured")
    for xi, yi, bi in zip(intensity, achieved, b, strict=True):
        ax.annotate(f"B={bi}", (xi, yi / GFLOPS), xytext=(4, -12), textcoords="offset points", fontsize=9)
    ax.set(xlabel="arithmetic intensity (FLOP per byte)", ylabel="attainable GFLOP/s")
    ax.set_title("This machine's roofline, measured")
    ax.legend(loc="lower right")
    return show(fig, "machine roofline")


def decode_vs_roofline(cfg: TransformerConfig, machine: Measurement, by_batch: DecodeTiming, by_context):
    """Two panels: measured decode step time vs batch (at the first context) and vs context (at the first
    batch), over the roofline prediction from the measured bandwidth and FLOP/s; MBU at batch 1, the batch
    where decode turns compute-bound, and the weight vs KV read."""
    fig, (ax1, ax2) = new_figure(ncols=2, figsize=(11, 4.5))
    t0 = int(by_batch.context_tokens[0])
    batches = np.unique(np.round(np.geomspace(1, max(by_batch.batch.max(), 2) * 1.5, 120)).astype(int))
    pred = roofline_prediction(cfg, machine, batches, t0)
    ax1.loglog(batches, np.asarray(pred.memory_time_s) / MS, color=COLORS["weights"], label="memory floor")
    ax1.loglog(batches, np.asarray(pred.compute_time_s) / MS, color=COLORS["compute"], label="compute floor")
    ax1.loglog(batches, np.asarray(pred.step_time_s) / MS, color=COLORS["step"], lw=2.5, label="roofline")
    ax1.loglog(by_batch.batch, by_batch.median_s[:, 0] / MS, "o", mfc="none", color=COLORS["prefill"],
               label="measured median")  # fmt: skip
    ax1.loglog(by_batch.batch, by_batch.min_s[:, 0] / MS, "o", color=COLORS["prefill"], label="measured best")
    b_star = compute_bound_batch(cfg, machine, t0)
    if np.isfinite(b_star):
        ax1.axvline(b_star, color=COLORS["compute"], ls=":", lw=1.5)
        ax1.annotate(f"compute-bound from B≈{b_star:.0f}", (b_star, ax1.get_ylim()[0]), xytext=(4, 8),
                     textcoords="offset points", color=COLORS["compute"])  # fmt: skip
    mbu1 = achieved_mbu(cfg, machine, by_batch.min_s[0, 0], int(by_batch.batch[0]), t0)
    ax1.set_title(f"vs batch (context {t0}); at B={by_batch.batch[0]}, MBU measured: {mbu1:.0%}")

    b0 = int(by_context.batch[0])
    contexts = np.linspace(0, max(by_context.context_tokens.max(), 1) * 1.1, 120)
    pc = roofline_prediction(cfg, machine, b0, contexts)
    weights_ms = np.asarray(pc.weight_bytes_read) / machine.memory_bandwidth_bytes_per_s / MS
    kv_ms = np.asarray(pc.kv_bytes_read) / machine.memory_bandwidth_bytes_per_s / MS
    ax2.fill_between(contexts, 0, weights_ms, color=COLORS["weights"], alpha=0.35, label="weight read")
    ax2.fill_between(contexts, weights_ms, weights_ms + kv_ms, color=COLORS["kv"], alpha=0.5, label="KV read")
    ax2.plot(contexts, np.asarray(pc.step_time_s) / MS, color=COLORS["step"], lw=2.5, label="roofline")
    ax2.plot(by_context.context_tokens, by_context.median_s[0] / MS, "o", mfc="none", color=COLORS["prefill"],
             label="measured median")  # fmt: skip
    ax2.plot(by_context.context_tokens, by_context.min_s[0] / MS, "o", color=COLORS["prefill"],
             label="measured best")  # fmt: skip
    ax2.set_ylim(0, max(np.nanmax(by_context.median_s) / MS, np.nanmax(pc.step_time_s) / MS) * 1.15)
    ax2.set_title(f"vs context (batch {b0}): the KV read grows with T")
    for ax, what in ((ax1, "batch (users)"), (ax2, "context (tokens per user)")):
        ax.set(xlabel=what, ylabel="decode step time (ms)")
        ax.legend(loc="upper left", fontsize=9)
    return show(fig, "decode vs roofline")
