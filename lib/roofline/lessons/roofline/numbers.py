"""Lesson 04's numbers: the ridge point of every GPU, and the bytes ÷ FLOP/s trap computed on purpose.

time = max(FLOPs ÷ peak FLOP/s, bytes ÷ bandwidth); the ridge point is peak ÷ bandwidth, the FLOP per byte
where the two roofs meet.
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


def ridge_points(precision: str = "bf16") -> dict[str, float]:
    """Ridge point (FLOP/byte) of every GPU in the table at ``precision``: its peak FLOP/s ÷ its bandwidth
    (G GPUs multiply both, so the ridge does not depend on G); NaN where it lacks that math.

    >>> r = ridge_points("bf16")
    >>> round(r["h100-sxm"]), round(r["h200"]), round(r["a100-80gb-sxm"])   # 989 TFLOP/s ÷ 3.35 TB/s, …
    (295, 206, 153)
    >>> bool(np.isnan(ridge_points("fp8")["a100-80gb-sxm"]))
    True
    """
    compute = get_precision(precision).compute
    return {
        gid: float(ridge_point_flop_per_byte(peak_flops_per_s(g, precision), g.memory_bandwidth_bytes_per_s))
        if compute in g.dense_flops_per_s
        else float("nan")
        for gid, g in gpus().items()
    }


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
