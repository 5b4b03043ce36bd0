"""Prefill against decode, and what one long prompt does to everyone else: lessons 04, 15 and 16.

Taught in lesson 04 (notebooks/04_roofline.ipynb: ridge table, the bytes ÷ FLOP/s trap, roofline readout),
lesson 15 (notebooks/15_prefill_vs_decode.ipynb: prefill vs prompt length, the stall of streaming users)
and lesson 16 (notebooks/16_step_time.ipynb: what batching gains in total and costs each user).

Prefill pushes all P prompt tokens through the model in one pass, so the weights are read once for P
tokens: it turns compute-bound once P passes roughly the ridge point. A decode step at batch 1 reads the
same weights for a single token and stays memory-bound. While an unchunked prefill runs, every streaming
user waits: they miss prefill time ÷ decode step time steps.

>>> import roofline as rl
>>> s = prefill_stall("llama-3-8b", "h100-sxm", 8000)
>>> round(s.prefill_time_s * 1e3), round(s.stalled_steps)
(130, 29)
>>> rl.prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm")
317
"""

from __future__ import annotations

import numpy as np

from roofline.checks import checked, out
from roofline.data import gpus
from roofline.physics.core import ridge_point_flop_per_byte
from roofline.physics.precision import get_precision, peak_flops_per_s


def bytes_over_flops_trap(bytes_moved, peak_flops_per_s):
    """The card's trap, computed on purpose: bytes ÷ FLOP/s. NOT a time; its unit is byte·s/FLOP.

    Bytes only turn into seconds over a bandwidth (bytes/s), FLOPs over a FLOP rate. This number is what
    the mistake prints; lesson 04 shows it beside the right answers so the difference is visible.

    >>> bytes_over_flops_trap(16e9, 989e12)   # looks like "16 µs", is meaningless
    1.6177...e-05
    """
    b = checked(bytes_moved, "bytes_moved", minimum=0)
    p = checked(peak_flops_per_s, "peak_flops_per_s", above=0)
    return out(b / p)


def ridge_points(precision: str = "bf16", num_gpus=1) -> dict[str, float]:
    """Ridge point (FLOP/byte) of every GPU in the table at ``precision``; NaN where it lacks that math.

    The ridge is peak FLOP/s ÷ bandwidth; G GPUs multiply both, so it does not depend on ``num_gpus``.

    >>> r = ridge_points("bf16")
    >>> round(r["h100-sxm"]), round(r["h200"]), round(r["a100-80gb-sxm"])
    (295, 206, 153)
    >>> bool(np.isnan(ridge_points("fp8")["a100-80gb-sxm"]))
    True
    """
    get_precision(precision)
    n = checked(num_gpus, "num_gpus", minimum=1)
    table = {}
    for gid, g in gpus().items():
        if get_precision(precision).compute in g.dense_flops_per_s:
            table[gid] = float(
                ridge_point_flop_per_byte(
                    n * peak_flops_per_s(g, precision), n * g.memory_bandwidth_bytes_per_s
                )
            )
        else:
            table[gid] = float("nan")
    return table


def throughput_tokens_per_s(batch, step_time_s):
    """What one decode step of B users gives: (tokens/s each user sees, tokens/s the GPU makes).

    Every user gets one token per step, so per user = 1 ÷ step and in total = B ÷ step.

    >>> per_user, total = throughput_tokens_per_s(32, 6.0e-3)   # the card's Q3
    >>> round(per_user), round(total)
    (167, 5333)
    """
    b = checked(batch, "batch", minimum=1)
    t = checked(step_time_s, "step_time_s", above=0)
    b, t = np.broadcast_arrays(b, t)
    return out(1.0 / t), out(b / t)
