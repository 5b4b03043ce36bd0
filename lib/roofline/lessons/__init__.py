"""Lesson models: the numbers each lesson studies, built on ``roofline.physics`` (numpy only).

One module per lesson topic (``phases`` for lessons 04/15/16, ``kvcache`` for 28, ``saturation`` for 61, …)
plus ``scenario`` (the settings every explorer passes around). Their figures live in ``roofline.views``.
"""

from __future__ import annotations

import importlib
import pkgutil

_MODULES = frozenset(m.name for m in pkgutil.iter_modules(__path__))


def __getattr__(name: str):
    # ``from roofline import lessons; lessons.phases`` imports the module on first use
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULES])
