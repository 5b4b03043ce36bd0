"""Unit constants and display helpers.

The library computes in SI base units: bytes, FLOP, seconds, bytes/s, FLOP/s, watts, US dollars.
Spec sheets print decimal prefixes (1 GB = 10⁹ bytes, 1 TB/s = 10¹² bytes/s, 1 TFLOPS = 10¹² FLOP/s),
so the constants below are decimal; ``KiB``/``MiB``/``GiB`` are the binary ones, for KV-cache sizes that
come out as powers of two. Convert to these only for display.

>>> 16e9 / GB
16.0
>>> 128 * KiB
131072
"""

from __future__ import annotations

KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12
KiB = 2**10
MiB = 2**20
GiB = 2**30

TFLOPS = 10**12  # FLOP/s
MS = 1e-3  # seconds
US = 1e-6  # seconds
SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1e6


def fmt_bytes(n_bytes: float) -> str:
    """Human-readable decimal size.

    >>> fmt_bytes(16.06e9)
    '16.1 GB'
    >>> fmt_bytes(131072)
    '131 KB'
    """
    for unit, size in (("TB", TB), ("GB", GB), ("MB", MB), ("KB", KB)):
        if abs(n_bytes) >= size:
            value = n_bytes / size
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{n_bytes:.0f} B"


def fmt_time(seconds: float) -> str:
    """Human-readable duration, in the unit that suits it.

    >>> fmt_time(0.0048)
    '4.80 ms'
    >>> fmt_time(40.0)
    '40.0 s'
    >>> fmt_time(4e-6)
    '4.00 µs'
    """
    if abs(seconds) >= 1:
        return f"{seconds:.1f} s"
    if abs(seconds) >= 1e-3:
        return f"{seconds / MS:.2f} ms"
    return f"{seconds / US:.2f} µs"
