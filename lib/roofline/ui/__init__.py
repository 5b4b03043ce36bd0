"""UI: the widgets each lesson's lab bench is made of (ipywidgets): controls, the ``Explorer`` that ties them
to a figure and a readout, ``Reveal`` for folded answers and ``Prediction`` for predict-then-check questions
(``roofline.ui.widgets``), each lesson's explorer (``roofline.ui.explorers``), and the small script that
makes them accessible (``roofline.ui.accessibility``). The figures and HTML readouts they show live one layer
down, in ``roofline.views``.

``from roofline import ui`` then ``ui.Explorer``, ``ui.Prediction``, ``ui.launch_explorer``, … (the names of
``roofline.ui.widgets`` and ``roofline.ui.explorers``), loaded on first use.
"""

from __future__ import annotations

from roofline._lazy import submodules

__getattr__ = submodules(__name__, __path__, fallback=("widgets", "explorers"))
