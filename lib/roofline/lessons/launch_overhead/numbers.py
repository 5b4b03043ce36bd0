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
from roofline.physics.step import decode_step
from roofline.results import Flag, Number, Result

CARD_KERNELS_PER_STEP = int(
    assumption("kernels_per_decode_step")
)  # kernels one eager decode step launches (the card's round figure)


CARD_CPU_S_PER_LAUNCH = assumption("cpu_s_per_kernel_launch")  # CPU time to launch one kernel (s)


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
class LaunchBudget(Result):
    """One decode step split into its roofline time and its launch overhead (seconds; arrays broadcast)."""

    model_id: str
    gpu_id: str
    weight_precision: str
    kernels_launched: Number  # launches per step: K eager, 1 with a CUDA graph
    roofline_time_s: Number  # max(memory, compute) time of the step on the GPU
    overhead_s: Number  # CPU time spent launching
    step_time_s: Number  # roofline + overhead
    share: Number  # overhead ÷ step
    overhead_vs_roofline: Number  # overhead ÷ roofline time (how much longer the step gets)
    tokens_per_s_per_user: Number  # 1 ÷ step
    fits: Flag  # bool: weights + KV fit in memory (times NaN where not)


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
    [0.08, 0.21, 0.35]
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


def step_time_with_launches_s(gpu_time_s, cpu_time_s, *, queued_ahead=True):
    """Step time (s) when the CPU spends ``cpu_time_s`` per step launching (and scheduling) the GPU's work.

    The CPU launches asynchronously: a launch returns at once and the kernel waits in the GPU's queue. If
    nothing forces the CPU to wait for the GPU (no ``.item()``, no host copy, the next step's inputs already
    known), it runs ahead and launch time hides under the previous kernels:

        queued ahead   step = max(GPU time, CPU time)     (the slower of the two sets the pace)
        synchronous    step = GPU time + CPU time         (the CPU waits for the GPU each step, e.g. to
                                                           read the sampled token, then launches again)

    So launch overhead costs nothing while CPU time < GPU time and the queue stays ahead: big models, slow
    GPUs, CUDA graphs. It shows when the CPU is slower than the GPU (small models on fast GPUs, a Python
    scheduler adding milliseconds per step: the server is CPU-bound) or when each step synchronizes.

    ``gpu_time_s`` : the GPU's time for the step (s, ≥ 0); ``cpu_time_s`` : CPU time per step, launches plus
    scheduling (s, ≥ 0); ``queued_ahead`` : True for max, False for the sum. Broadcasts.

    Taught in lesson 03.

    >>> round(step_time_with_launches_s(4.79e-3, 1.2e-3) * 1e3, 2)   # 8B on an H100, 300 × 4 µs: hidden
    4.79
    >>> round(step_time_with_launches_s(4.79e-3, 1.2e-3, queued_ahead=False) * 1e3, 2)   # synchronous
    5.99
    >>> round(step_time_with_launches_s(0.74e-3, 1.2e-3) * 1e3, 2)   # a 1B model: the CPU sets the pace
    1.2
    """
    g = checked(gpu_time_s, "gpu_time_s", minimum=0)
    c = checked(cpu_time_s, "cpu_time_s", minimum=0)
    return out(np.maximum(g, c) if queued_ahead else g + c)


@dataclass(frozen=True)
class LaunchHiding(Result):
    """Batch-1 decode step with its CPU time, synchronous and queued ahead (seconds; arrays broadcast)."""

    gpu_time_s: Number  # the roofline step on the GPU
    cpu_time_s: Number  # launches (K × per-launch) + scheduler per step
    synchronous_step_s: Number  # GPU + CPU
    queued_step_s: Number  # max(GPU, CPU)
    cpu_bound: Number  # True where the CPU is the slower side even when queued ahead
    hidden_fraction: Number  # share of the CPU time that queuing ahead hides: min(CPU, GPU) ÷ CPU


def launch_hiding(
    model,
    gpu,
    kernels_per_step=None,
    cpu_s_per_launch=CARD_CPU_S_PER_LAUNCH,
    *,
    scheduler_s_per_step=0.0,
    batch=1,
    context_tokens=0,
    weight_precision="bf16",
) -> LaunchHiding:
    """When does queuing launches ahead hide them? A decode step with its CPU work, both ways.

    ``kernels_per_step`` defaults to ``kernels_per_step_estimate(model)``; ``cpu_s_per_launch`` (s) and
    ``scheduler_s_per_step`` (s of CPU per step outside launches: batching, sampling, detokenizing in Python)
    add up to the CPU time; the GPU time is ``decode_step``'s roofline time. Broadcasts over the numbers.

    Taught in lesson 03.

    >>> h = launch_hiding("llama-3-8b", "h100-sxm")            # 300 × 4 µs = 1.2 ms under a 4.48 ms step
    >>> round(h.queued_step_s * 1e3, 2), round(h.synchronous_step_s * 1e3, 2), bool(h.cpu_bound)
    (4.48, 5.68, False)
    >>> bool(launch_hiding("llama-3-8b", "h100-sxm", scheduler_s_per_step=5e-3).cpu_bound)  # slow scheduler
    True
    """
    k = kernels_per_step_estimate(model) if kernels_per_step is None else kernels_per_step
    cpu = np.asarray(
        launch_overhead_s(checked(k, "kernels_per_step", minimum=0), cpu_s_per_launch)
    ) + checked(scheduler_s_per_step, "scheduler_s_per_step", minimum=0)
    step = decode_step(model, gpu, batch, context_tokens, weight_precision=weight_precision)
    gpu_s = np.maximum(np.asarray(step.memory_time_s), np.asarray(step.compute_time_s))
    gpu_s, cpu = np.broadcast_arrays(gpu_s, cpu)
    queued = np.asarray(step_time_with_launches_s(gpu_s, cpu))
    with np.errstate(invalid="ignore", divide="ignore"):
        hidden = np.where(cpu > 0, np.minimum(cpu, gpu_s) / np.where(cpu > 0, cpu, 1.0), 1.0)
    return LaunchHiding(
        gpu_time_s=out(gpu_s),
        cpu_time_s=out(cpu),
        synchronous_step_s=out(np.asarray(step_time_with_launches_s(gpu_s, cpu, queued_ahead=False))),
        queued_step_s=out(queued),
        cpu_bound=out(cpu > gpu_s),
        hidden_fraction=out(hidden),
    )
