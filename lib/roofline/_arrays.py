"""Small helpers that let every public function take scalars or numpy arrays alike."""

from __future__ import annotations

import numpy as np

from roofline.errors import InvalidConfigurationError


def checked(
    value,
    name: str,
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
    allow_inf: bool = False,
) -> np.ndarray:
    """``value`` as a float array, after checking bounds; the error names the parameter and the rule."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidConfigurationError(f"{name} must be a number, got {value!r}") from None
    if np.any(np.isnan(arr)) or (not allow_inf and np.any(np.isinf(arr))):
        raise InvalidConfigurationError(f"{name} must be a finite number, got {value!r}")
    if minimum is not None and np.any(arr < minimum):
        raise InvalidConfigurationError(f"{name} must be >= {minimum:g}, got {value!r}")
    if above is not None and np.any(arr <= above):
        raise InvalidConfigurationError(f"{name} must be > {above:g}, got {value!r}")
    if maximum is not None and np.any(arr > maximum):
        raise InvalidConfigurationError(f"{name} must be <= {maximum:g}, got {value!r}")
    return arr


def out(arr):
    """Return a Python float for 0-d results (readable doctests and prints), arrays unchanged."""
    arr = np.asarray(arr)
    if arr.ndim == 0:
        return arr.item()
    return arr
