"""How well a measured step uses the hardware: MBU, MFU, achieved bandwidth.

Taught in lesson 09 (GPU-util is a duty cycle) and lesson 59 (the dashboard).

    MBU = bytes read ÷ (step time × peak bandwidth)   = floor ÷ measured step, for batch-1 decode
    MFU = FLOPs done ÷ (step time × peak FLOP/s)

>>> round(mbu(16e9, 6e-3, 3.35e12), 2)    # the card's Q5: 16 GB read in 6 ms on an H100
0.8
"""

from __future__ import annotations

from roofline.checks import checked, out


def achieved_bandwidth_bytes_per_s(bytes_moved, step_time_s):
    """Bytes moved ÷ measured time (bytes/s).

    >>> achieved_bandwidth_bytes_per_s(16e9, 6e-3) / 1e12
    2.666...
    """
    b = checked(bytes_moved, "bytes_moved", minimum=0)
    t = checked(step_time_s, "step_time_s", above=0)
    return out(b / t)


def mbu(bytes_moved, step_time_s, peak_bandwidth_bytes_per_s):
    """Memory-bandwidth utilization: achieved ÷ peak bandwidth (fraction, 0–1 for a real measurement).

    ``peak_bandwidth_bytes_per_s`` is that of all GPUs the step ran on (G × one GPU's).

    >>> round(mbu(70e9, 14e-3, 2 * 3.35e12), 2)   # 70B FP8 on two H100s at 14 ms per token
    0.75
    """
    bw = checked(peak_bandwidth_bytes_per_s, "peak_bandwidth_bytes_per_s", above=0)
    return out(achieved_bandwidth_bytes_per_s(bytes_moved, step_time_s) / bw)


def mfu(flops, step_time_s, peak_flops_per_s):
    """Model FLOPs utilization: FLOPs done ÷ (time × peak FLOP/s) (fraction).

    >>> round(mfu(2 * 8e9, 6e-3, 989e12), 4)   # batch-1 decode: the tensor cores are nearly idle
    0.0027
    """
    f = checked(flops, "flops", minimum=0)
    t = checked(step_time_s, "step_time_s", above=0)
    p = checked(peak_flops_per_s, "peak_flops_per_s", above=0)
    return out(f / (t * p))
