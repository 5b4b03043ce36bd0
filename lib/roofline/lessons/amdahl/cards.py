"""Card Q7, "Kernel launches and Amdahl": launch overhead per step, and speedups accounted in times.

Taught in notebooks/60_amdahl.ipynb (also lessons 03, 04 and 09); practised in
notebooks/pack01_speed_physics.ipynb. The card's data rows are in ``cards.toml`` beside this module.

Launching costs kernels × CPU time per launch. A part taking a fraction p of the time made s× faster
leaves a new time (1 − p) + p ÷ s; the speedup is its inverse and the ceiling (the part free) 1 ÷ (1 − p).
Several parts combine through their new times, never by adding or multiplying speedups.

>>> n = numbers(scenario(Q7.default_params()))
>>> round(n["launch_ms"], 3), n["speedup_x"], round(n["two_speedup_x"], 3)   # 300 × 4 µs; 1 / 0.8; 1 / 0.55
(1.2, 1.25, 1.818)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from roofline.course.card_scenarios import choice, draw_setup, exact_decode, memory_floor_s
from roofline.course.cards import CardCode, fmt_value, read_card, sig
from roofline.physics.memory import check_fits
from roofline.physics.overheads import (
    amdahl_ceiling,
    amdahl_new_time_fraction,
    amdahl_speedup,
    launch_overhead_s,
)
from roofline.units import MS, US

PERCENT = 100.0
# The card's ideal step stands for the decode floor of its model; an ideal step typed far from that floor
# (more than this fraction away) is another step, with no exact counterpart.
SAME_STEP = 0.15


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Q7 quotes no rounded figures: the scenario is its parameters, once its model's weights fit (the
    model is the one whose decode floor the ideal step stands for)."""
    check_fits(params["model"], params["gpu"], 1, 0, weight_precision=params["weight_precision"])
    return dict(params)


def exact_floor_s(s: Mapping[str, Any]) -> float:
    """The library's decode floor (s) of the scenario's model, GPU and precision, which the card's ideal
    step rounds; the ideal step itself where it is another step."""
    floor, ideal = float(exact_decode(s, 1, 0).step_time_s), s["ideal_step_s"]
    return floor if abs(ideal - floor) <= SAME_STEP * floor else ideal


def numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """Q7's answers, trap values and the fractions its text quotes, from the roofline library."""
    k, c, ideal = s["kernels_per_step"], s["launch_s"], s["ideal_step_s"]
    p1, s1, p2, s2 = s["part_fraction"], s["part_speedup"], s["part2_fraction"], s["part2_speedup"]
    overhead = launch_overhead_s(k, c)
    exact = exact_floor_s(s)
    left = amdahl_new_time_fraction(p1, np.inf)  # the untouched time when the part becomes free
    launch_pct = overhead / ideal * PERCENT
    return dict(
        launch_ms=overhead / MS,
        launch_pct=launch_pct,
        speedup_x=amdahl_speedup(p1, s1),
        ceiling_x=amdahl_ceiling(p1),
        two_speedup_x=amdahl_speedup([p1, p2], [s1, s2]),
        share_of_total_pct=overhead / (ideal + overhead) * PERCENT,  # launch ÷ (ideal + launch)
        part_speedup_x=float(s1),  # the part's own speedup
        time_left=left,
        time_left_pct=left * PERCENT,
        added_x=float(s1 + s2),
        multiplied_x=float(s1 * s2),
        launch_pct_exact=overhead / exact * PERCENT,  # the overhead over the library's decode floor
        exact_step_ms=exact / MS,
        # the figures the text quotes
        launch_us=c / US,
        launch_s_total=overhead,
        launch_fraction=launch_pct / PERCENT,
        graph_launch=fmt_value(launch_overhead_s(1, c) / US, "µs"),  # one launch: a CUDA graph's replay
        rest_fraction=1 - p1,
        new_time_one=amdahl_new_time_fraction(p1, s1),
        new_time_two=amdahl_new_time_fraction([p1, p2], [s1, s2]),
        untouched_two=amdahl_new_time_fraction([p1, p2], [np.inf, np.inf]),
        part_name_capitalized=s["part_name"].capitalize(),
        part_new_time=p1 / s1,
        part2_new_time=p2 / s2,
    )


def usable(params: Mapping[str, Any]) -> bool:
    """A shuffled Q7 scenario must not spend longer launching than the step it launches."""
    return launch_overhead_s(params["kernels_per_step"], params["launch_s"]) <= params["ideal_step_s"]


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled Q7 scenario: kernels, launch cost, an ideal step from a real model, two parts."""
    setup = draw_setup(rng)
    ideal = sig(memory_floor_s(setup["model"], setup["gpu"], setup["weight_precision"]), 2)
    p1 = float(round(rng.uniform(0.1, 0.6), 2))
    p2 = float(round(rng.uniform(0.1, 0.9 - p1), 2))
    names = [("attention", "the MLP"), ("the MLP", "attention")][int(rng.integers(2))]
    return dict(
        **setup,
        kernels_per_step=int(rng.integers(10, 101)) * 10,
        launch_s=float(choice(rng, [2, 3, 4, 5, 6, 8, 10])) * US,
        ideal_step_s=ideal,
        part_name=names[0],
        part_fraction=p1,
        part_speedup=float(choice(rng, [1.5, 2, 2.5, 3, 4, 5, 8])),
        part2_name=names[1],
        part2_fraction=p2,
        part2_speedup=float(choice(rng, [1.5, 2, 2.5, 3, 4])),
    )


Q7 = read_card(Path(__file__).with_name("cards.toml"), CardCode(scenario, numbers, draw, usable))
