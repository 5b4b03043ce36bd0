"""Formulas: the physics of one forward step, in numpy only (no plotting, no widgets).

``core`` (the roofline), ``precision``, ``architecture`` (parameters, weight and KV bytes, FLOPs), ``memory``
(what fits), ``step`` (the one step engine: decode, prefill, mixed), ``balance`` (balance points),
``parallel`` (tensor-parallel communication), ``overheads`` (launch, Amdahl), ``metrics`` (MBU, MFU),
``cost``. Everything public is re-exported as ``roofline.<name>``.
"""

from __future__ import annotations

import importlib
import pkgutil

_MODULES = frozenset(m.name for m in pkgutil.iter_modules(__path__))


def __getattr__(name: str):  # ``from roofline import physics; physics.core`` imports the module on first use
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULES])
