"""Kernel-launch overhead: the CPU time of starting ~300 kernels per decode step, and what cuts it.

Taught in lesson 03 (notebooks/03_launch_overhead.ipynb).

    launch overhead = kernels per step × CPU time per launch          (eager PyTorch: K launches)
                    = 1 × CPU time per launch                         (CUDA graph: one replay)
    step            = roofline time + launch overhead                 (the CPU cannot run ahead)
    share           = launch overhead ÷ step

The roofline time does not depend on how many kernels launch it, so the overhead hurts most where the
roofline time is short: small models on fast GPUs. Reading fewer bytes (quantization) shortens the
roofline part only, so the overhead's share of the step grows.

>>> b = launch_budget(Scenario(context_tokens=0), kernels_per_step=300, cpu_s_per_launch=4e-6)
>>> round(b.overhead_s * 1e3, 2), round(b.step_time_s * 1e3, 2), round(b.share, 2)
(1.2, 5.68, 0.21)
>>> round(b.overhead_vs_roofline, 2)   # the card's "a quarter of the 4.8 ms step" (4.48 ms read here)
0.27
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.assumptions import assumption
from roofline.checks import checked, out
from roofline.data import get_gpu, get_model
from roofline.physics.architecture import weight_bytes
from roofline.physics.memory import fits
from roofline.physics.overheads import launch_overhead_s
from roofline.results import Flag, Number, Result
from roofline.scenario import Scenario

# Kernels one eager decode step launches (the card's round figure) and the CPU time to launch one (s).
CARD_KERNELS_PER_STEP = int(assumption("kernels_per_decode_step"))
CARD_CPU_S_PER_LAUNCH = assumption("cpu_s_per_kernel_launch")
# The card's ~300 kernels belong to Llama 3 8B's 32 layers: about 9.4 per layer (norms, projections,
# attention, activation, residual adds); other models launch as many per layer, a few outside ignored.
KERNELS_PER_LAYER = CARD_KERNELS_PER_STEP / 32


@dataclass(frozen=True)
class LaunchBudget(Result):
    """One decode step split into its roofline time and its launch overhead (seconds; arrays broadcast)."""

    kernels_launched: Number  # launches per step: K eager, 1 with a CUDA graph
    roofline_time_s: Number  # max(memory, compute) time of the step on the GPU
    overhead_s: Number  # CPU time spent launching
    step_time_s: Number  # roofline + overhead
    share: Number  # overhead ÷ step
    overhead_vs_roofline: Number  # overhead ÷ roofline time (how much longer the step gets)
    tokens_per_s_per_user: Number  # 1 ÷ step
    fits: Flag  # bool: weights + KV fit in memory (times NaN where not)


def launch_budget(
    s: Scenario,
    kernels_per_step=CARD_KERNELS_PER_STEP,
    cpu_s_per_launch=CARD_CPU_S_PER_LAUNCH,
    *,
    cuda_graphs=False,
) -> LaunchBudget:
    """The scenario's decode step with launch overhead: roofline time (``decode_step``) + kernels × CPU time
    per launch.

    ``kernels_per_step``: kernels one eager step launches (count, ≥ 0; fusion lowers it);
    ``cpu_s_per_launch``: CPU time to launch one kernel (s, ≥ 0), a few µs in eager PyTorch; both broadcast.
    ``cuda_graphs`` True: the step was recorded once as a CUDA graph and is replayed with one launch. Where
    the model does not fit in memory, times are NaN and ``fits`` is False.

    >>> b = launch_budget(Scenario(context_tokens=0), 300, 4e-6, cuda_graphs=True)
    >>> round(b.overhead_s * 1e6, 1), round(b.share * 100, 2)    # one launch: 4 µs, under 0.1 %
    (4.0, 0.08)
    """
    k = checked(kernels_per_step, "kernels_per_step", minimum=0)
    c = checked(cpu_s_per_launch, "cpu_s_per_launch", minimum=0)
    launched = np.ones_like(k) if cuda_graphs else k
    overhead = np.asarray(launch_overhead_s(launched, c))
    step = s.decode()
    roof = np.maximum(step.memory_time_s, step.compute_time_s)
    roof, overhead, ok = np.broadcast_arrays(np.asarray(roof), overhead, np.asarray(step.fits))
    total = np.where(ok, roof + overhead, np.nan)
    return LaunchBudget(
        kernels_launched=out(np.broadcast_to(launched, total.shape)),
        roofline_time_s=out(np.where(ok, roof, np.nan)),
        overhead_s=out(overhead),
        step_time_s=out(total),
        share=out(overhead / total),
        overhead_vs_roofline=out(np.where(ok, overhead / np.where(ok, roof, 1.0), np.nan)),
        tokens_per_s_per_user=out(1.0 / total),
        fits=out(ok),
    )


def share_grid(model_ids, gpu_ids):
    """Launch-overhead share of a batch-1 eager BF16 decode step for every model (rows) × GPU (columns):
    overhead ÷ (weight bytes ÷ bandwidth + overhead), each model launching ``KERNELS_PER_LAYER`` kernels per
    layer at ``CARD_CPU_S_PER_LAUNCH`` each. NaN where the weights do not fit on one GPU. Returns shape
    (models, GPUs) (fraction).

    >>> g = share_grid(["llama-3.2-1b", "llama-3-8b", "llama-3-70b"], ["a10g", "h100-sxm"])
    >>> g.round(2).tolist()     # 1B on an H100: nearly half the step is launching; 70B does not fit
    [[0.13, 0.45], [0.04, 0.2], [nan, nan]]
    """
    w = np.array([weight_bytes(m) for m in model_ids], dtype=float)[:, None]
    k = np.array([get_model(m).layers * KERNELS_PER_LAYER for m in model_ids])[:, None]
    bw = np.array([get_gpu(g).memory_bandwidth_bytes_per_s for g in gpu_ids], dtype=float)[None, :]
    ok = np.array([[bool(fits(m, g, 1, 0)) for g in gpu_ids] for m in model_ids])
    overhead = np.asarray(launch_overhead_s(k, CARD_CPU_S_PER_LAUNCH))
    return np.where(ok, overhead / (w / bw + overhead), np.nan)


@dataclass(frozen=True)
class LaunchHiding(Result):
    """Batch-1 decode step with its CPU time, synchronous and queued ahead (seconds; arrays broadcast)."""

    gpu_time_s: Number  # the roofline step on the GPU
    cpu_time_s: Number  # launches (K × per-launch) + scheduler per step
    synchronous_step_s: Number  # GPU + CPU
    queued_step_s: Number  # max(GPU, CPU)
    cpu_bound: Number  # True where the CPU is the slower side even when queued ahead
    hidden_fraction: Number  # share of the CPU time that queuing ahead hides: min(CPU, GPU) ÷ CPU


def launch_hiding(s: Scenario, *, scheduler_s_per_step=0.0) -> LaunchHiding:
    """When does queuing launches ahead hide them? The scenario's decode step with its CPU work, both ways.

    The CPU launches asynchronously: a launch returns at once and the kernel waits in the GPU's queue. If
    nothing forces the CPU to wait for the GPU (no ``.item()``, no host copy), it runs ahead and launch time
    hides under the previous kernels:

        queued ahead   step = max(GPU time, CPU time)     (the slower of the two sets the pace)
        synchronous    step = GPU time + CPU time         (the CPU waits each step, e.g. for the token)

    The CPU time is ``KERNELS_PER_LAYER`` launches per layer at ``CARD_CPU_S_PER_LAUNCH`` each, plus
    ``scheduler_s_per_step`` (s of CPU per step outside launches: batching, sampling, detokenizing in
    Python; broadcasts); the GPU time is ``decode_step``'s roofline time.

    >>> h = launch_hiding(Scenario(context_tokens=0))       # 300 × 4 µs = 1.2 ms under a 4.48 ms step
    >>> round(h.queued_step_s * 1e3, 2), round(h.synchronous_step_s * 1e3, 2), bool(h.cpu_bound)
    (4.48, 5.68, False)
    """
    k = get_model(s.model).layers * KERNELS_PER_LAYER
    cpu = np.asarray(launch_overhead_s(k, CARD_CPU_S_PER_LAUNCH)) + checked(
        scheduler_s_per_step, "scheduler_s_per_step", minimum=0
    )
    step = s.decode()
    gpu_s = np.maximum(np.asarray(step.memory_time_s), np.asarray(step.compute_time_s))
    gpu_s, cpu = np.broadcast_arrays(gpu_s, cpu)
    with np.errstate(invalid="ignore", divide="ignore"):
        hidden = np.where(cpu > 0, np.minimum(cpu, gpu_s) / np.where(cpu > 0, cpu, 1.0), 1.0)
    return LaunchHiding(
        gpu_time_s=out(gpu_s),
        cpu_time_s=out(cpu),
        synchronous_step_s=out(gpu_s + cpu),
        queued_step_s=out(np.maximum(gpu_s, cpu)),
        cpu_bound=out(cpu > gpu_s),
        hidden_fraction=out(hidden),
    )
