"""Argument checks: a bad value is an error naming the parameter, the rule and the value, never a quiet NaN.

Every public function checks what it is given at its top, in one line per argument:

>>> batch = checked(32, "batch", minimum=1, whole=True)
>>> checked(2.5, "batch", minimum=1, whole=True)
Traceback (most recent call last):
...
roofline.errors.InvalidConfigurationError: batch must be a whole number >= 1, got 2.5
>>> checked([1, 2, 0], "batch", minimum=1, whole=True)
Traceback (most recent call last):
...
roofline.errors.InvalidConfigurationError: batch must be a whole number >= 1, got 0 (at index 2 of [1, 2, 0])
"""

from __future__ import annotations

import difflib
import math

import numpy as np

from roofline.errors import InvalidConfigurationError


def _rule(bounds: dict, whole: bool, allow_inf: bool, scalar: bool) -> str:
    """The rule in words, as error messages say it: "a whole number >= 1", ">= 0 and <= 1", …"""
    said = " and ".join(f"{op} {b:g}" for op, b in bounds.items() if b is not None)
    kind = "a whole number" if whole else ("a number" if allow_inf else "a finite number")
    if scalar:
        kind = "one " + kind.split(" ", 1)[1]
    if not said:
        return kind
    return said if not (whole or scalar) else f"{kind} {said}"


def checked(value, name: str, *, minimum=None, above=None, maximum=None, below=None, whole: bool = False,
            allow_inf: bool = False, allow_none: bool = False, scalar: bool = False):  # fmt: skip
    """``value`` (a number or an array of them) as a float array, once every element is finite (or ±inf
    with ``allow_inf``), at least ``minimum``, more than ``above``, at most ``maximum``, less than
    ``below``, whole (``whole``: 2.0 passes, 2.5 does not, nothing is rounded) and, with ``scalar``, one
    number. ``None`` passes with ``allow_none``. Otherwise ``InvalidConfigurationError`` naming ``name``.

    >>> checked([0.5, 1], "acceptance", minimum=0, maximum=1)
    array([0.5, 1. ])
    """
    if value is None and allow_none:
        return None
    bounds = {">=": minimum, ">": above, "<=": maximum, "<": below}
    rule = _rule(bounds, whole, allow_inf, scalar)
    finite_rule = rule if whole else ("a number, not NaN" if allow_inf else "a finite number")

    def fail(shown: str, broken_rule: str = rule):
        raise InvalidConfigurationError(f"{name} must be {broken_rule}, got {shown}")

    try:
        arr = np.asarray(value, dtype=float)
    except OverflowError:  # an int beyond a float's range
        arr = np.asarray(math.inf)
    except (TypeError, ValueError):
        fail(repr(value), "a number")
    if scalar and arr.ndim != 0:
        fail(repr(value))
    finite = np.isfinite(arr) if not allow_inf else ~np.isnan(arr)
    bad = ~finite
    for op, b in bounds.items():
        if b is not None:
            bad |= {">=": arr < b, ">": arr <= b, "<=": arr > b, "<": arr >= b}[op]
    if whole:
        bad |= finite & (arr != np.floor(arr))
    if np.any(bad):
        broken = rule if np.all(finite) else finite_rule
        if arr.ndim == 0:
            fail(repr(value), broken)
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        fail(f"{arr[where]:g} (at index {where[0] if len(where) == 1 else where} of {value!r})", broken)
    return arr


def one_of(value, name: str, choices):
    """``value`` unchanged if it is one of ``choices``, else an error naming ``name``, the choices and the
    closest of them.

    >>> one_of("tensr", "parallelism", ("tensor", "pipeline"))
    Traceback (most recent call last):
    ...
    roofline.errors.InvalidConfigurationError: parallelism must be one of 'tensor' or 'pipeline', ...
    """
    try:
        known = value in choices
    except (TypeError, ValueError):  # an array or another uncomparable value
        known = False
    if not known:
        *first, last = [repr(c) for c in choices]
        options = f"{', '.join(first)} or {last}" if first else last
        close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.6)
        hint = f". Did you mean {close[0]!r}?" if close else ""
        raise InvalidConfigurationError(f"{name} must be one of {options}, got {value!r}{hint}")
    return value


def out(arr):
    """A Python float for a 0-d result (readable doctests and prints), arrays unchanged.

    >>> out(np.asarray(2.0)), out(np.arange(2))
    (2.0, array([0, 1]))
    """
    arr = np.asarray(arr)
    return arr.item() if arr.ndim == 0 else arr
