"""The assumptions table: every number the library uses that is not from a data sheet.

Each one lives once, in ``data/assumptions.toml``, with its unit, meaning and the reason for its value;
code reads it here and never types a copy. The README lists them.

>>> assumption("allreduce_latency_s")
1e-05
>>> ASSUMPTIONS["achieved_bandwidth_fraction"].unit
'fraction of peak memory bandwidth'
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from roofline.data import DATA_DIR
from roofline.errors import RooflineError, UnknownNameError


@dataclass(frozen=True)
class Assumption:
    """One assumed number: ``value`` in ``unit``, what it means and why it has this value."""

    id: str
    value: float
    unit: str
    meaning: str
    reason: str
    used_by: str


def _load() -> dict[str, Assumption]:
    path = DATA_DIR / "assumptions.toml"
    rows = tomllib.loads(path.read_text())["assumption"]
    table: dict[str, Assumption] = {}
    for row in rows:
        missing = {"id", "value", "unit", "meaning", "reason", "used_by"} - row.keys()
        if missing or row.get("id") in table:
            problem = f"missing {sorted(missing)}" if missing else "a duplicate id"
            raise RooflineError(f"{path}: assumption {row.get('id')!r} has {problem}")
        table[row["id"]] = Assumption(**{**row, "value": float(row["value"])})
    return table


ASSUMPTIONS: dict[str, Assumption] = _load()


def assumption(assumption_id: str) -> float:
    """The value of one assumption, in the unit the table states.

    >>> assumption("kernels_per_decode_step")
    300.0
    """
    try:
        return ASSUMPTIONS[assumption_id].value
    except KeyError:
        raise UnknownNameError("assumption", assumption_id, sorted(ASSUMPTIONS)) from None
