"""Declared argument constraints: what a public function accepts, written once beside its signature,
checked on every call, and listed in one registry so a single test can try every rule with a bad value.

The model is scikit-learn's ``validate_params`` (``Interval``, ``StrOptions``). Three kinds of rule:

- ``Real(least=, above=, most=, below=)``: finite numbers (scalars or numpy arrays, every element) in a
  range: ``least`` ≤ x, ``above`` < x, x ≤ ``most``, x < ``below``; ``allow_inf=True`` lets ±inf through.
- ``Integer(...)``: the same, and whole numbers (2.0 passes, 2.5 is rejected, never rounded).
- ``Options("tensor", "pipeline")``: one of a few fixed values.

Any of them takes ``allow_none=True`` (None passes: "not given") and the numeric ones ``scalar=True``
(one number, not an array). A bad value raises ``roofline.errors.InvalidConfigurationError`` whose
message names the parameter, the rule and the value.

Two ways to use them:

- ``@constrained(name=Rule, ...)`` on a public function declares its parameters' rules. Every call checks
  the arguments given (defaults are the author's and are not re-checked), before the body runs. The
  decorated function keeps its name, signature and docstring, carries ``.constraints``, and is listed in
  ``CONSTRAINED`` (``"module.function"`` → the function), which ``tests/test_constraints.py`` walks.
  The check only validates: the body still converts what it uses (``np.asarray(x, dtype=float)``).
- ``check(value, name, Rule)`` checks one value inline and returns it as a float array (numeric rules)
  or unchanged (``Options``); ``roofline._arrays.checked`` is this with a ``Real``.

Replacing a hand-written check: a helper like ``_positive_int(batch, "batch")`` or a loop raising "must
be a whole number" becomes ``batch=Integer(least=1)`` in the decorator and ``int(batch)`` (or
``np.asarray``) in the body. A rule may name a parameter passed through ``**options``; methods work too
(``__init__``: the rules name the parameters after ``self``). A value that is not a parameter (an element
of a list, a field read from a file) takes ``check`` inline.

>>> @constrained(batch=Integer(least=1), acceptance=Real(least=0, most=1),
...              parallelism=Options("tensor", "pipeline"))
... def tokens(batch, acceptance=0.5, parallelism="tensor"):
...     return float(np.sum(np.asarray(batch, dtype=float) * (1 + acceptance)))
>>> tokens(4, 0.5)
6.0
>>> tokens(2.5)
Traceback (most recent call last):
...
roofline.errors.InvalidConfigurationError: batch must be a whole number >= 1, got 2.5
>>> tokens([1, 2, 0])
Traceback (most recent call last):
...
roofline.errors.InvalidConfigurationError: batch must be a whole number >= 1, got 0 (at index 2 of [1, 2, 0])
>>> try:
...     tokens(1, parallelism="tensr")
... except InvalidConfigurationError as err:
...     print(err)
parallelism must be one of 'tensor' or 'pipeline', got 'tensr'. Did you mean 'tensor'?
>>> tokens.constraints["acceptance"]
Real(least=0, most=1)
>>> check([0.2, 0.9], "acceptance", Real(least=0, most=1))
array([0.2, 0.9])
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
from collections.abc import Callable
from types import MappingProxyType

import numpy as np

from roofline.errors import InvalidConfigurationError

__all__ = ["CONSTRAINED", "Integer", "Options", "Real", "check", "constrained"]


def _fail(name: str, rule: str, shown: str):
    raise InvalidConfigurationError(f"{name} must be {rule}, got {shown}")


class Real:
    """Finite numbers within optional bounds: ``least`` ≤ x, ``above`` < x, x ≤ ``most``, x < ``below``."""

    whole = False  # Integer: whole numbers only

    def __init__(
        self,
        *,
        least: float | None = None,
        above: float | None = None,
        most: float | None = None,
        below: float | None = None,
        allow_inf: bool = False,
        allow_none: bool = False,
        scalar: bool = False,
    ):
        self.least, self.above, self.most, self.below = least, above, most, below
        self.allow_inf, self.allow_none, self.scalar = allow_inf, allow_none, scalar

    def __repr__(self) -> str:
        fields = ("least", "above", "most", "below", "allow_inf", "allow_none", "scalar")
        values = {f: getattr(self, f) for f in fields}
        given = [f"{f}={v!r}" for f, v in values.items() if v is not None and v is not False]
        return f"{type(self).__name__}({', '.join(given)})"

    def rule(self) -> str:
        """The rule in words, as error messages say it: "a whole number >= 1", ">= 0 and <= 1", …"""
        bounds = [
            f"{op} {bound:g}"
            for op, bound in ((">=", self.least), (">", self.above), ("<=", self.most), ("<", self.below))
            if bound is not None
        ]
        kind = "a whole number" if self.whole else ("a number" if self.allow_inf else "a finite number")
        if self.scalar:
            kind = "one " + kind.split(" ", 1)[1]
        if not bounds:
            return kind
        return " and ".join(bounds) if not (self.whole or self.scalar) else f"{kind} {' and '.join(bounds)}"

    def _finite_rule(self) -> str:
        """The rule a NaN (or, unless allowed, an infinity) breaks."""
        if self.whole:
            return self.rule()
        return "a number, not NaN" if self.allow_inf else "a finite number"

    def _broken(self, x: float) -> bool:
        """Whether one finite-or-inf float breaks a bound or (Integer) is not whole."""
        return (
            (self.least is not None and x < self.least)
            or (self.above is not None and x <= self.above)
            or (self.most is not None and x > self.most)
            or (self.below is not None and x >= self.below)
            or (self.whole and math.isfinite(x) and x != math.floor(x))
        )

    def check(self, value, name: str):
        """``value`` as a float array, or an error naming ``name``, the rule and the value."""
        if value is None and self.allow_none:
            return None
        if type(value) in (int, float):  # the common case, without numpy's per-call overhead
            try:
                x = float(value)
            except OverflowError:  # an int beyond a float's range
                x = math.inf
            if not math.isfinite(x) and (math.isnan(x) or not self.allow_inf):
                _fail(name, self._finite_rule(), repr(value))
            if self._broken(x):
                _fail(name, self.rule(), repr(value))
            return np.asarray(x)
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            _fail(name, "a number", repr(value))
        if self.scalar and arr.ndim != 0:
            _fail(name, self.rule(), repr(value))
        finite = np.isfinite(arr) if not self.allow_inf else ~np.isnan(arr)
        bad = ~finite
        if self.least is not None:
            bad |= arr < self.least
        if self.above is not None:
            bad |= arr <= self.above
        if self.most is not None:
            bad |= arr > self.most
        if self.below is not None:
            bad |= arr >= self.below
        if self.whole:
            bad |= finite & (arr != np.floor(arr))
        if np.any(bad):
            rule = self.rule() if np.all(finite) else self._finite_rule()
            if arr.ndim == 0:
                _fail(name, rule, repr(value))
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            index = where[0] if len(where) == 1 else where
            _fail(name, rule, f"{arr[where]:g} (at index {index} of {value!r})")
        return arr

    def bad_values(self) -> list:
        """Values this rule must reject (for the generic test): NaN, text, and each bound's far side."""
        bad: list = [float("nan"), "lots"]
        low = self.least if self.least is not None else self.above
        high = self.most if self.most is not None else self.below
        if low is not None:
            bad += [low - 1, [low + 1, low - 1]]
        if self.above is not None:
            bad.append(self.above)
        if high is not None:
            bad.append(high + 1)
        if self.below is not None:
            bad.append(self.below)
        if self.whole:
            base = max(low if low is not None else 0, 0)
            bad += [base + 1.5, [base + 1, base + 1.5]]
        if self.scalar:
            bad.append([max(low if low is not None else 0, 0) + 1] * 2)
        if not self.allow_inf:
            bad.append(float("inf"))
        return bad


class Integer(Real):
    """Whole numbers within optional bounds (a value like 2.0 passes; 2.5 is rejected, never rounded)."""

    whole = True


class Options:
    """One of a few fixed values (strings, usually): ``Options("raise", "mask", "ignore")``."""

    def __init__(self, *choices, allow_none: bool = False):
        self.choices, self.allow_none = choices, allow_none

    def __repr__(self) -> str:
        return f"Options({', '.join(map(repr, self.choices))})"

    def rule(self) -> str:
        *first, last = [repr(c) for c in self.choices]
        return "one of " + (f"{', '.join(first)} or {last}" if first else last)

    def check(self, value, name: str):
        """``value`` unchanged, or an error naming ``name``, the options and the value (and the closest)."""
        if value is None and self.allow_none:
            return None
        try:
            known = value in self.choices
        except (TypeError, ValueError):  # an array or another unhashable, uncomparable value
            known = False
        if not known:
            close = difflib.get_close_matches(str(value), [str(c) for c in self.choices], n=1, cutoff=0.6)
            hint = f". Did you mean {close[0]!r}?" if close else ""
            _fail(name, self.rule(), f"{value!r}{hint}")
        return value

    def bad_values(self) -> list:
        """Values this rule must reject (for the generic test)."""
        return ["no-such-option", 1.5]


Constraint = Real | Options


def check(value, name: str, constraint: Constraint):
    """Check one value against one rule: a float array (numeric rules) or the value (``Options``).

    >>> check(2, "num_gpus", Integer(least=1))
    array(2.)
    >>> check("mask", "on_overflow", Options("raise", "mask", "ignore"))
    'mask'
    """
    return constraint.check(value, name)


# Every function declared with ``constrained``: "module.function" -> the (checking) function.
CONSTRAINED: dict[str, Callable] = {}


def constrained(**constraints: Constraint) -> Callable[[Callable], Callable]:
    """Declare the rules of a function's parameters; each call checks the arguments it is given.

    A rule may name a parameter the function takes through ``**options`` (it is checked when passed).
    """

    def decorate(func: Callable) -> Callable:
        params = inspect.signature(func).parameters
        takes_options = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        positional = [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        for name in constraints:
            if name not in params and not takes_options:
                raise TypeError(f"{func.__qualname__} has no parameter {name!r} to constrain")
        rules = [
            (name, positional.index(name) if name in positional else None, rule)
            for name, rule in constraints.items()
        ]

        @functools.wraps(func)
        def checked_call(*args, **kwargs):
            for name, position, rule in rules:
                if name in kwargs:
                    rule.check(kwargs[name], name)
                elif position is not None and position < len(args):
                    rule.check(args[position], name)
            return func(*args, **kwargs)

        checked_call.constraints = MappingProxyType(dict(constraints))
        CONSTRAINED[f"{func.__module__}.{func.__qualname__}"] = checked_call
        return checked_call

    return decorate
