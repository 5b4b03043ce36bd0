"""UI: the widgets each lesson's lab bench is made of (ipywidgets): controls, the ``Explorer`` that ties them
to a figure and a readout, ``Reveal`` for folded answers.

``from roofline import ui`` then ``ui.Explorer``, ``ui.Reveal``, … (the names of ``roofline.ui.widgets``),
loaded on first use.
"""

from __future__ import annotations

from roofline._lazy import submodules

__getattr__ = submodules(__name__, __path__, fallback="widgets")
