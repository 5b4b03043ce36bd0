# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Starter: Amdahl's law for several optimizations at once (Speed Physics, lessons 03-04).

Fill in the four functions below, then run this file. It first checks each function against the study
card's worked example and tells you, function by function, what is ok, what is still to do and what
is wrong. Once every check passes it runs the calculator on your code:

    uv run exercises/starters/03_04_amdahl.py                # self-check, then the card's example
    uv run exercises/starters/03_04_amdahl.py 0.3:3 0.5:2    # any parts you like, once the checks pass
    uv run exercises/starters/03_04_amdahl.py --check        # self-check only

Old step time = 1. Part i takes a share p_i of it and gets s_i times faster; the rest is untouched.
New time = untouched + sum of p_i / s_i; speedup = 1 / new time; ceiling = 1 / untouched.
Speedups never add or multiply: add the new times. The command line, the printing and the checks are
shared with the worked version, exercises/03_04_amdahl.py (open it when you are done, or stuck).
"""

from __future__ import annotations

import math  # noqa: F401  (math.inf is how a part that became "free" arrives)


def part_new_time(fraction, speedup) -> float:
    """New time of one part, as a fraction of the old step (0 if the part became free)."""
    raise NotImplementedError("TODO: the part's old share divided by how many times faster it got")


def new_time_fraction(fractions, speedups) -> float:
    """New step time as a fraction of the old one. ``fractions`` and ``speedups`` are equal-length lists."""
    raise NotImplementedError(
        "TODO: the untouched share (1 minus all the fractions) plus each part's new time"
    )


def amdahl_speedup(fractions, speedups) -> float:
    """Overall speedup, old time / new time (x)."""
    raise NotImplementedError("TODO: the old time was 1, so the speedup is 1 divided by the new time")


def amdahl_ceiling(fractions) -> float:
    """Speedup if every optimized part cost nothing at all (x); math.inf if nothing is left."""
    raise NotImplementedError("TODO: only the untouched share would remain: 1 divided by that share")


def _main() -> int:
    import importlib.util
    from pathlib import Path

    # Load the shared checker by path: starters run standalone (PEP 723), outside any package.
    path = Path(__file__).resolve().parents[1] / "_selfcheck.py"
    spec = importlib.util.spec_from_file_location("_selfcheck", path)
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    return checker.run_starter(__file__, globals())


if __name__ == "__main__":
    raise SystemExit(_main())
