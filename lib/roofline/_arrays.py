"""Small helpers that let every public function take scalars or numpy arrays alike."""

from __future__ import annotations

import numpy as np

from roofline._constraints import Real


def checked(
    value,
    name: str,
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
    allow_inf: bool = False,
) -> np.ndarray:
    """``value`` as a float array, after checking bounds; the error names the parameter and the rule.

    Shorthand for ``roofline._constraints.check(value, name, Real(least=minimum, above=above,
    most=maximum))``: one mechanism for every range check.

    >>> checked([0.5, 1], "acceptance", minimum=0, maximum=1)
    array([0.5, 1. ])
    """
    return Real(least=minimum, above=above, most=maximum, allow_inf=allow_inf).check(value, name)


def out(arr):
    """Return a Python float for 0-d results (readable doctests and prints), arrays unchanged."""
    arr = np.asarray(arr)
    if arr.ndim == 0:
        return arr.item()
    return arr
