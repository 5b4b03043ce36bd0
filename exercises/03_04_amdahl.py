# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Amdahl's law for several optimizations at once: keep the books in time, never in speedups.

Speed Physics, lessons 03-04 (exercise). The library's version is ``roofline.amdahl_speedup``.

Call the old step time 1. Optimization i covers a share p_i of that time and makes it s_i times faster.
The shares must not overlap, so together they cover at most the whole step (sum of p_i <= 1). The part
nobody touched keeps its old time. Add the new times up, then compare with the old total:

    new time = (1 - sum of p_i) + sum of (p_i / s_i)    fraction of the old step (dimensionless)
    speedup  = 1 / new time                             (x)
    ceiling  = 1 / (1 - sum of p_i)                     (x): every optimized part costs nothing

A speedup of ``inf`` (or the word ``free``) means the part disappears, and a speedup between 0 and 1 is
a slowdown. The card's case: attention is 30 % of the step and gets 3x faster, the MLP is 50 % and gets
2x faster. New time 0.2 + 0.1 + 0.25 = 0.55, so 1.82x overall: not 3 + 2 = 5x, not 3 x 2 = 6x. Even if
both parts became free, the untouched 20 % would cap the gain at 1 / 0.2 = 5x.

Run it:

    uv run exercises/03_04_amdahl.py                     # the card: attention=0.3:3 MLP=0.5:2
    uv run exercises/03_04_amdahl.py 0.3:3               # one part: 1.25x, ceiling 1.43x
    uv run exercises/03_04_amdahl.py attention=30%:free  # the part vanishes entirely
    uv run exercises/03_04_amdahl.py --check             # compare the functions with the card

>>> round(new_time_fraction([0.3, 0.5], [3, 2]), 3)
0.55
>>> round(amdahl_speedup([0.3], [3]), 2), round(amdahl_ceiling([0.3]), 2)
(1.25, 1.43)
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

TOLERANCE = 1e-9  # shares written as decimals may add up to 1.0000000000000002

# The functions a learner writes in exercises/starters/03_04_amdahl.py.
PHYSICS = ("part_new_time", "new_time_fraction", "amdahl_speedup", "amdahl_ceiling")

# (function, arguments, expected, source): the card's figures, worked out by hand.
CHECKS = [
    ("part_new_time", (0.3, 3), 0.1, "attention: 0.3 / 3"),
    ("part_new_time", (0.3, math.inf), 0.0, "a part that became free costs nothing"),
    ("new_time_fraction", ([0.3, 0.5], [3, 2]), 0.55, "the card: 0.2 + 0.1 + 0.25"),
    ("amdahl_speedup", ([0.3], [3]), 1.25, "the card: 1 / (0.7 + 0.1)"),
    ("amdahl_speedup", ([0.3, 0.5], [3, 2]), 1.82, "the card: 1 / 0.55, about 1.8x"),
    ("amdahl_ceiling", ([0.3],), 1.43, "the card: 1 / 0.7"),
    ("amdahl_ceiling", ([0.3, 0.5],), 5.0, "1 / 0.2"),
]


def validate_parts(fractions, speedups) -> None:
    """Raise ``ValueError`` unless the shares are in [0, 1], add up to at most 1, and speedups are > 0."""
    if len(fractions) != len(speedups):
        raise ValueError(f"{len(fractions)} fractions but {len(speedups)} speedups")
    for p in fractions:
        if not 0 <= p <= 1:
            raise ValueError(f"a fraction of the step must lie between 0 and 1, got {p:g}")
    for s in speedups:
        if math.isnan(s) or s <= 0:
            raise ValueError(
                f"a speedup must be above 0, got {s:g} (a part that got twice as slow has speedup 0.5; "
                "write 'free' or 'inf' for a part that vanished)"
            )
    total = sum(fractions)
    if total > 1 + TOLERANCE:
        raise ValueError(
            f"the fractions add up to {total:.3g}, more than the whole step: each one must be a separate, "
            "non-overlapping part of the old time"
        )


def part_new_time(fraction, speedup) -> float:
    """New time of one part, as a fraction of the old step: p / s (0 if the part became free)."""
    return fraction / speedup


def new_time_fraction(fractions, speedups) -> float:
    """New step time as a fraction of the old one: untouched remainder plus each part's new time."""
    validate_parts(fractions, speedups)
    untouched = max(0.0, 1.0 - sum(fractions))
    return untouched + sum(part_new_time(p, s) for p, s in zip(fractions, speedups, strict=True))


def amdahl_speedup(fractions, speedups) -> float:
    """Overall speedup, old time / new time (x); infinite if nothing at all is left."""
    new = new_time_fraction(fractions, speedups)
    return math.inf if new == 0 else 1.0 / new


def amdahl_ceiling(fractions) -> float:
    """Speedup if every optimized part became free: 1 / (untouched share) (x); infinite if none is left."""
    validate_parts(fractions, [math.inf] * len(fractions))
    untouched = 1.0 - sum(fractions)
    return math.inf if untouched <= TOLERANCE else 1.0 / untouched


# --- command line -------------------------------------------------------------------------------------

CARD_PARTS = ["attention=0.3:3", "MLP=0.5:2"]


def parse_part(text: str) -> tuple[str, float, float]:
    """``[name=]fraction:speedup`` -> (name, fraction, speedup). Fractions may be written ``30%``."""
    name, _, spec = text.rpartition("=")
    fraction_text, colon, speedup_text = spec.partition(":")
    if not colon:
        raise argparse.ArgumentTypeError(f"expected FRACTION:SPEEDUP such as 0.3:3, got {text!r}")
    try:
        fraction_text = fraction_text.strip()
        if fraction_text.endswith("%"):
            fraction = float(fraction_text[:-1]) / 100
        else:
            fraction = float(fraction_text)
        speedup_text = speedup_text.strip().lower().rstrip("x×")
        speedup = math.inf if speedup_text in ("free", "inf") else float(speedup_text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected FRACTION:SPEEDUP such as 0.3:3 or 30%:free, got {text!r}"
        ) from None
    return name, fraction, speedup


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Amdahl's law for several non-overlapping optimizations: add new times, not speedups.",
        epilog="Example: 03_04_amdahl.py attention=0.3:3 MLP=0.5:2  (the card; also the default)",
    )
    parser.add_argument(
        "parts",
        nargs="*",
        type=parse_part,
        metavar="[NAME=]FRACTION:SPEEDUP",
        help="share of the old step time (0.3 or 30%%) and how many times faster it got "
        "('inf' or 'free' = it costs nothing now). Default: the card's attention=0.3:3 MLP=0.5:2",
    )
    parser.add_argument("--check", action="store_true", help="check the functions against the card and exit")
    return parser


def _times(x: float) -> str:
    return "infinite" if math.isinf(x) else f"{x:.2f}×"


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.check:
        return _self_check()
    parts = args.parts or [parse_part(p) for p in CARD_PARTS]
    names = [name or f"part {i}" for i, (name, _, _) in enumerate(parts, start=1)]
    fractions = [p for _, p, _ in parts]
    speedups = [s for _, _, s in parts]
    try:
        validate_parts(fractions, speedups)
    except ValueError as exc:
        parser.error(str(exc))

    untouched = max(0.0, 1.0 - sum(fractions))
    new = new_time_fraction(fractions, speedups)
    width = max(12, *(len(n) for n in names))
    print("Time accounting, with the old step time = 1:\n")
    print(f"  {'part':<{width}}  {'old fraction':>12}  {'speedup':>8}  {'new time':>8}")
    for name, p, s in zip(names, fractions, speedups, strict=True):
        shown = "free" if math.isinf(s) else f"{s:.2f}×"
        print(f"  {name:<{width}}  {p:12.3f}  {shown:>8}  {part_new_time(p, s):8.3f}")
    print(f"  {'untouched':<{width}}  {untouched:12.3f}  {'1.00×':>8}  {untouched:8.3f}")
    print(f"  {'total':<{width}}  {1.0:12.3f}  {'':>8}  {new:8.3f}\n")

    speedup = amdahl_speedup(fractions, speedups)
    if math.isinf(speedup):
        print("Overall speedup: infinite (every part became free and nothing was left untouched).")
    else:
        about = math.floor(speedup * 10 + 0.5) / 10  # round half up: 1.25 reads "about 1.3"
        print(f"Overall speedup: 1 ÷ {new:.3f} = {speedup:.2f}× (about {about:.1f}×)")
    ceiling = amdahl_ceiling(fractions)
    if math.isinf(ceiling):
        print("Ceiling if the optimized parts became free: infinite (nothing is left untouched).")
    else:
        print(f"Ceiling if the optimized parts became free: 1 ÷ {untouched:.3f} = {ceiling:.2f}×")
    finite = [s for s in speedups if not math.isinf(s)]
    if len(parts) > 1 and len(finite) == len(speedups):
        print(
            f"Adding the speedups would claim {_times(sum(finite))}, multiplying them "
            f"{_times(math.prod(finite))}. Neither is a time: add the new times instead."
        )
    return 0


def _self_check() -> int:
    # Load the shared checker by path: these scripts run standalone (PEP 723), outside any package.
    spec = importlib.util.spec_from_file_location("_selfcheck", Path(__file__).with_name("_selfcheck.py"))
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    return 0 if checker.run_checks(globals(), CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
