"""Formulas: the physics of one forward step, in numpy only (no plotting, no widgets).

``core`` (the roofline), ``precision``, ``architecture`` (parameters, weight and KV bytes, FLOPs), ``memory``
(what fits), ``step`` (the one step engine: decode, prefill, mixed), ``balance`` (balance points),
``parallel`` (tensor-parallel communication), ``overheads`` (launch, Amdahl), ``metrics`` (MBU, MFU),
``cost``. Everything public is re-exported as ``roofline.<name>``.
"""

from __future__ import annotations
