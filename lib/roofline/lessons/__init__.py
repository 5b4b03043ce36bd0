"""Lesson models: the numbers each lesson studies, built on ``roofline.physics`` (numpy only).

One module per lesson topic (``phases`` for lessons 04/15/16, ``kvcache`` for 28, ``saturation`` for 61, …)
plus ``scenario`` (the settings every explorer passes around). Their figures live in ``roofline.views``.
"""

from __future__ import annotations

from roofline._lazy import submodules

__getattr__ = submodules(__name__, __path__)
