"""What every result dataclass shares: numbers that may be scalars or arrays, and one ``to_dict``."""

from __future__ import annotations

from dataclasses import fields
from typing import Union

import numpy as np

# A quantity that is a Python float for scalar inputs and a numpy array when the inputs broadcast.
Number = Union[float, np.ndarray]  # noqa: UP007  (a runtime alias, readable in signatures and docs)
Flag = Union[bool, np.ndarray]  # noqa: UP007
Label = Union[str, np.ndarray]  # noqa: UP007


def plain(value):
    """``value`` as plain Python: arrays become lists, numpy scalars become Python scalars, recursively.

    >>> plain({"a": np.arange(2), "b": np.float64(1.5), "c": [np.int64(3)]})
    {'a': [0, 1], 'b': 1.5, 'c': [3]}
    """
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    return value


class Result:
    """Mixin for the library's frozen result dataclasses: ``to_dict()`` gives JSON-ready plain Python."""

    def to_dict(self) -> dict:
        """Every field as plain Python (lists for arrays), ready for ``json.dumps``."""
        return plain(self)
