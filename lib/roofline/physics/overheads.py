"""Time that is not the roofline: kernel launches, and what optimizations of parts of a step can buy.

Taught in lesson 03 (launch overhead) and lesson 60 (Amdahl and profiling).

Kernel launches: a step that launches K kernels at c seconds of CPU time each spends K × c launching.
Amdahl: an optimization that makes a fraction p of the time s× faster leaves the rest untouched, so
work in times, not speedups: new time = untouched + Σ pᵢ ÷ sᵢ; speedup = old ÷ new.

>>> round(launch_overhead_s(300, 4e-6) * 1e3, 1)
1.2
>>> round(amdahl_speedup([0.3, 0.5], [3, 2]), 2)
1.82
"""

from __future__ import annotations

import numpy as np

from roofline.checks import checked, out
from roofline.errors import InvalidConfigurationError


def launch_overhead_s(kernels_per_step, cpu_s_per_launch):
    """CPU time spent launching kernels in one step (s).

    With CUDA graphs the whole step is one launch: ``launch_overhead_s(1, ...)``.

    >>> launch_overhead_s(300, 4e-6) / 4.8e-3   # a quarter of a 4.8 ms step
    0.25
    """
    k = checked(kernels_per_step, "kernels_per_step", minimum=0)
    c = checked(cpu_s_per_launch, "cpu_s_per_launch", minimum=0)
    return out(k * c)


def _fractions_and_speedups(fractions, speedups):
    p = checked(fractions, "fractions", minimum=0, maximum=1)
    s = checked(speedups, "speedups", above=0, allow_inf=True)
    p, s = np.broadcast_arrays(np.atleast_1d(p), np.atleast_1d(s))
    total = p.sum(axis=-1)
    if np.any(total > 1 + 1e-12):
        raise InvalidConfigurationError(
            f"the optimized fractions add up to {np.max(total):.3g} > 1: they must be non-overlapping "
            "parts of one step"
        )
    return p, s


def amdahl_new_time_fraction(fractions, speedups):
    """New time as a fraction of the old (dimensionless): (1 − Σp) + Σ p ÷ s.

    ``fractions``: the parts of the old time each optimization touches (non-overlapping, sum ≤ 1);
    ``speedups``: how much faster each part got (``np.inf`` = the part became free). The last axis
    lists the optimizations.

    >>> amdahl_new_time_fraction([0.3, 0.5], [3, 2])
    0.55
    """
    p, s = _fractions_and_speedups(fractions, speedups)
    return out((1 - p.sum(axis=-1)) + (p / s).sum(axis=-1))


def amdahl_speedup(fractions, speedups):
    """Overall speedup: old time ÷ new time (×).

    >>> round(amdahl_speedup(0.3, 3), 2)     # attention, 30% of the step, made 3x faster
    1.25
    """
    return out(1.0 / np.asarray(amdahl_new_time_fraction(fractions, speedups)))


def amdahl_ceiling(fractions):
    """Speedup if the optimized parts became free: 1 ÷ (1 − Σp) (×); infinite if nothing is left.

    >>> round(amdahl_ceiling(0.3), 2)
    1.43
    """
    p = np.atleast_1d(checked(fractions, "fractions", minimum=0, maximum=1))
    rest = 1 - p.sum(axis=-1)
    if np.any(rest < -1e-12):
        raise InvalidConfigurationError("the fractions add up to more than 1")
    with np.errstate(divide="ignore"):
        return out(np.where(rest > 1e-12, 1.0 / np.maximum(rest, 1e-300), np.inf))
