"""The roofline: a piece of work takes as long as the slower of its math and its memory traffic.

Taught in lesson 04 (notebooks/04_roofline.ipynb).

    time = max(FLOPs ÷ peak FLOP/s, bytes ÷ bandwidth)

Arithmetic intensity is FLOPs ÷ bytes; the ridge point is peak FLOP/s ÷ bandwidth. Work whose intensity
is below the ridge is memory-bound, above it compute-bound. Bytes divided by FLOP/s is not a time: each
quantity goes over its own rate.

>>> ridge_point_flop_per_byte(989e12, 3.35e12)
295.2...
"""

from __future__ import annotations

import numpy as np

from roofline.checks import checked, out


def memory_time_s(bytes_moved, bandwidth_bytes_per_s):
    """Time to move ``bytes_moved`` (bytes) at ``bandwidth_bytes_per_s`` (bytes/s), in seconds.

    >>> memory_time_s(16e9, 3.35e12) * 1e3   # 16 GB of weights over an H100's HBM
    4.776...
    """
    b = checked(bytes_moved, "bytes_moved", minimum=0)
    bw = checked(bandwidth_bytes_per_s, "bandwidth_bytes_per_s", above=0)
    return out(b / bw)


def compute_time_s(flops, peak_flops_per_s):
    """Time to do ``flops`` (FLOP) at ``peak_flops_per_s`` (FLOP/s), in seconds.

    >>> compute_time_s(8e12, 989e12) * 1e3   # a 500-token prefill of an 8B model
    8.088...
    """
    f = checked(flops, "flops", minimum=0)
    p = checked(peak_flops_per_s, "peak_flops_per_s", above=0)
    return out(f / p)


def roofline_time_s(flops, bytes_moved, peak_flops_per_s, bandwidth_bytes_per_s):
    """Lower bound on the time of a piece of work (s): the slower of its compute and memory times.

    >>> roofline_time_s(flops=16e9, bytes_moved=16e9, peak_flops_per_s=989e12,
    ...                 bandwidth_bytes_per_s=3.35e12) * 1e3
    4.776...
    """
    return out(
        np.maximum(compute_time_s(flops, peak_flops_per_s), memory_time_s(bytes_moved, bandwidth_bytes_per_s))
    )


def arithmetic_intensity_flop_per_byte(flops, bytes_moved):
    """FLOPs done per byte moved (FLOP/byte).

    >>> arithmetic_intensity_flop_per_byte(2 * 8e9 * 32, 2 * 8e9)   # decode at batch 32, BF16 weights
    32.0
    """
    f = checked(flops, "flops", minimum=0)
    b = checked(bytes_moved, "bytes_moved", above=0)
    return out(f / b)


def ridge_point_flop_per_byte(peak_flops_per_s, bandwidth_bytes_per_s):
    """Intensity where the compute and memory roofs meet: peak FLOP/s ÷ bandwidth (FLOP/byte).

    >>> round(ridge_point_flop_per_byte(989e12, 3.35e12))
    295
    """
    p = checked(peak_flops_per_s, "peak_flops_per_s", above=0)
    bw = checked(bandwidth_bytes_per_s, "bandwidth_bytes_per_s", above=0)
    return out(p / bw)


def attainable_flops_per_s(intensity_flop_per_byte, peak_flops_per_s, bandwidth_bytes_per_s):
    """The roofline curve: FLOP/s reachable at a given intensity, min(peak, intensity × bandwidth).

    >>> attainable_flops_per_s(1.0, 989e12, 3.35e12) / 1e12   # decode at batch 1
    3.35
    """
    i = checked(intensity_flop_per_byte, "intensity_flop_per_byte", minimum=0)
    p = checked(peak_flops_per_s, "peak_flops_per_s", above=0)
    bw = checked(bandwidth_bytes_per_s, "bandwidth_bytes_per_s", above=0)
    return out(np.minimum(p, i * bw))


def binding_resource(compute_time, memory_time):
    """``"compute"`` or ``"memory"``: which time is larger (ties go to memory). Broadcasts.

    >>> binding_resource(8.1e-3, 4.8e-3)
    'compute'
    >>> binding_resource([1e-3, 5e-3], 4.8e-3).tolist()
    ['memory', 'compute']
    """
    c, m = np.broadcast_arrays(np.asarray(compute_time, float), np.asarray(memory_time, float))
    res = np.where(c > m, "compute", "memory")
    return str(res) if res.ndim == 0 else res
