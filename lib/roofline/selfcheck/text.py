"""Numbers in words for the self-check cards: rounding for reading, units for display, templates.

Taught in notebooks/pack01_speed_physics.ipynb. Display only: every value arrives here in SI units (or in
the unit the learner types) and leaves as a string; nothing here computes physics.

>>> fmt_value(4.776, "ms"), ms(4.776e-3), gb(16e9), tbps(3.35e12), tflops(989e12)
('4.78 ms', '4.78 ms', '16 GB', '3.35 TB/s', '989 TFLOPS')
>>> fill("{batch} × {context_tokens:,} × {kv_bytes_per_token!B}", dict(batch=32, context_tokens=1000,
...      kv_bytes_per_token=128e3))
'32 × 1,000 × 128 KB'
>>> fill("{w!B} stated, {r!E} read", dict(w=16e9, r=15.0136e9))
'16 GB stated, 15.01 GB read'
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping
from typing import Any

from roofline.units import GB, MS, TB, TFLOPS, fmt_bytes


def _num(v: float) -> str:
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def fmt_value(value: float, unit: str) -> str:
    """A number with its unit (``"ms"``, ``"tokens/s"``, ``"%"``, ``"×"``, ``"$"``, …), rounded for reading.

    >>> fmt_value(4.776, "ms"), fmt_value(4.1667, "$"), fmt_value(79.6, "%"), fmt_value(1.25, "×")
    ('4.78 ms', '$4.17', '79.6%', '1.25×')
    >>> fmt_value(5333.3, "tokens/s"), fmt_value(0, "ms")
    ('5,333 tokens/s', '0 ms')
    """
    if unit == "$":
        if abs(value) >= 1000:
            return f"${value:,.0f}"
        return f"${value:.2f}" if abs(value) >= 0.01 else f"${value:.2g}"
    if unit in ("%", "×"):
        return f"{_num(value)}{unit}"
    return f"{_num(value)} {unit}"


def sig(x: float, digits: int = 3) -> float:
    """``x`` rounded to ``digits`` significant digits: how a figure is quoted in a scenario.

    >>> sig(16.06e9), sig(131072.0), sig(0.0)
    (16100000000.0, 131000.0, 0.0)
    """
    if x == 0:
        return 0.0
    return float(round(x, digits - 1 - math.floor(math.log10(abs(x)))))


def ms(seconds: float) -> str:
    """A time in seconds, shown in ms."""
    return fmt_value(seconds / MS, "ms")


def gb(n_bytes: float) -> str:
    """A size in bytes, shown in the decimal unit that suits it (``roofline.units.fmt_bytes``)."""
    return fmt_bytes(n_bytes)


def tbps(bytes_per_s: float) -> str:
    """A bandwidth in bytes/s, shown in TB/s."""
    return f"{bytes_per_s / TB:.3g} TB/s"


def tflops(flops_per_s: float) -> str:
    """A FLOP rate in FLOP/s, shown in TFLOPS."""
    return f"{flops_per_s / TFLOPS:,.0f} TFLOPS"


def prec(precision: str) -> str:
    """A precision id as it is written in prose (``bf16`` → ``BF16``)."""
    return precision.upper()


def ul(*items: str) -> str:
    """An HTML bullet list of ``items`` (already HTML)."""
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


class _CardFormatter(string.Formatter):
    """``str.format`` plus two conversions: ``!B``, a size in bytes written with ``fmt_bytes``; ``!E``, an
    exact size in GB to four digits (15.01 GB), beside the card's round one."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "B":
            return fmt_bytes(value)
        if conversion == "E":
            return f"{value / GB:.4g} GB"
        return super().convert_field(value, conversion)


_FORMATTER = _CardFormatter()


def fill(template: str, fields: Mapping[str, Any]) -> str:
    """``template`` with its ``{name:spec}`` fields taken from ``fields`` (``{name!B}``: bytes, in words).

    >>> fill("floor on {n} GPUs, {share:.0%} of the step", dict(n=2, share=0.25))
    'floor on 2 GPUs, 25% of the step'
    """
    return _FORMATTER.vformat(template, (), fields)
