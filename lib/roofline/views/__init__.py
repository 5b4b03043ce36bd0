"""Views: figures, readouts and HTML tables on top of the numbers (matplotlib, no widgets).

``plots`` holds the shared LiveFigure machinery and course style; one module per lesson topic holds that
lesson's figures and readouts (``views.phases``, ``views.kvcache``, ``views.sim``, …).
"""

from __future__ import annotations

import importlib
import pkgutil

_MODULES = frozenset(m.name for m in pkgutil.iter_modules(__path__))


def __getattr__(name: str):  # ``from roofline import views; views.plots`` imports the module on first use
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULES])
