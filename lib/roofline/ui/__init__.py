"""UI: the widgets each lesson's lab bench is made of (ipywidgets): controls, the ``Explorer`` that ties them
to a figure and a readout, ``Reveal`` for folded answers.

``from roofline import ui`` then ``ui.Explorer``, ``ui.Reveal``, … (the names of ``roofline.ui.widgets``),
loaded on first use.
"""

from __future__ import annotations

import importlib
import pkgutil

_MODULES = frozenset(m.name for m in pkgutil.iter_modules(__path__))


def __getattr__(name: str):  # ``ui.widgets`` or any public name of it (``ui.Explorer``), on first use
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if not name.startswith("_"):
        widgets = importlib.import_module(f"{__name__}.widgets")
        if hasattr(widgets, name):
            return getattr(widgets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
