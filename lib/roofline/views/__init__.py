"""Views: figures, readouts and HTML tables on top of the numbers (matplotlib, no widgets).

``plots`` holds the shared LiveFigure machinery and course style; one module per lesson topic holds that
lesson's figures and readouts (``views.phases``, ``views.kvcache``, ``views.sim``, …).
"""

from __future__ import annotations

from roofline._lazy import submodules

__getattr__ = submodules(__name__, __path__)
