"""The assumptions table: every number the library uses that is not from a data sheet.

Each one lives once, in ``data/assumptions.toml``, with its unit, its kind (which fixes its physical range:
a fraction in (0, 1], an overhead at least 0, …), meaning and the reason for its value; code reads it here
and never types a copy. The README lists them. The table is read and checked on first use, like every
table of ``roofline.data``.

>>> assumption("allreduce_latency_s")
1e-05
>>> ASSUMPTIONS["achieved_bandwidth_fraction"].unit
'fraction of peak memory bandwidth'
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping

from roofline.data import Assumption, assumptions
from roofline.errors import UnknownNameError

__all__ = ["ASSUMPTIONS", "Assumption", "assumption"]


class _Table(MutableMapping):
    """The cached assumptions table as a mapping, loaded on first access (writable, for tests that patch
    one value; ``clear_cache`` undoes a patch)."""

    def __getitem__(self, key: str) -> Assumption:
        return assumptions()[key]

    def __setitem__(self, key: str, value: Assumption) -> None:
        assumptions()[key] = value

    def __delitem__(self, key: str) -> None:
        del assumptions()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(assumptions())

    def __len__(self) -> int:
        return len(assumptions())

    def __repr__(self) -> str:
        return f"<assumptions table: {', '.join(self)}>"


ASSUMPTIONS: MutableMapping[str, Assumption] = _Table()


def assumption(assumption_id: str) -> float:
    """The value of one assumption, in the unit the table states.

    >>> assumption("kernels_per_decode_step")
    300.0
    >>> assumption("engine_memory_fractoin")
    Traceback (most recent call last):
    ...
    roofline.errors.UnknownNameError: Unknown assumption ...Did you mean 'engine_memory_fraction'...
    """
    table = assumptions()
    try:
        return table[assumption_id].value
    except KeyError:
        raise UnknownNameError("assumption", assumption_id, sorted(table)) from None
