"""Card Q7, "Kernel launches and Amdahl": launch overhead per step, and speedups accounted in times.

Taught in notebooks/03_launch_overhead.ipynb, notebooks/04_roofline.ipynb, notebooks/09_gpu_util.ipynb and
notebooks/60_amdahl.ipynb; practised in notebooks/pack01_speed_physics.ipynb.

Launching costs kernels × CPU time per launch. A part taking a fraction p of the time made s× faster
leaves a new time (1 − p) + p ÷ s; the speedup is its inverse and the ceiling (the part free) 1 ÷ (1 − p).
Several parts combine through their new times, never by adding or multiplying speedups.

>>> n = numbers(scenario(SPEC.default_params()))
>>> round(n.launch_ms, 3), n.speedup_x, round(n.two_speedup_x, 3)   # 300 × 4 µs; 1 / 0.8; 1 / 0.55
(1.2, 1.25, 1.818)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.physics.memory import check_fits
from roofline.physics.overheads import (
    amdahl_ceiling,
    amdahl_new_time_fraction,
    amdahl_speedup,
    launch_overhead_s,
)
from roofline.selfcheck.common import (
    choice,
    draw_setup,
    exact_decode,
    memory_floor_s,
)
from roofline.selfcheck.spec import (
    PERCENT,
    TRAP_ADDED_SPEEDUPS,
    TRAP_CEILING_AS_TIME_LEFT,
    TRAP_MULTIPLIED_SPEEDUPS,
    TRAP_PART_SPEEDUP,
    TRAP_SHARE_OF_TOTAL,
    AnswerSpec,
    CardCode,
    CardSpec,
    CardText,
    TrapSpec,
)
from roofline.selfcheck.text import fmt_value, ms, sig, ul
from roofline.units import MS, US

ANSWERS = (
    AnswerSpec("launch_ms", "launch overhead per step", "ms"),
    AnswerSpec(
        "launch_pct",
        "overhead as a share of the ideal step",
        "%",
        exact="launch_pct_exact",
        exact_why=(
            "The card's ideal step is a round {ideal_step_s:.2g} s (its 16 GB of weights ÷ the bandwidth); "
            "the library's decode floor is {exact_step_ms:.2f} ms (the bytes a step reads, lesson 02), so "
            "lesson 03 prints the larger share."
        ),
    ),  # fmt: skip
    AnswerSpec("speedup_x", "overall speedup", "×"),
    AnswerSpec("ceiling_x", "ceiling if {part_name} were free", "×"),
    AnswerSpec("two_speedup_x", "follow-up: speedup of both", "×"),
)

TRAPS = (
    TrapSpec(
        "launch_pct",
        TRAP_SHARE_OF_TOTAL,
        "share_of_total_pct",
        "The question compares the launch time with the ideal step, not with the step that already "
        "includes it.",
    ),
    TrapSpec(
        "speedup_x",
        TRAP_PART_SPEEDUP,
        "part_speedup_x",
        "Only {part_fraction:.0%} of the step got faster; the other {rest_fraction:.0%} takes as long as "
        "before.",
    ),
    TrapSpec(
        "ceiling_x",
        TRAP_CEILING_AS_TIME_LEFT,
        "time_left",
        "{time_left:.0%} is the time that is left, a fraction of the old time; the ceiling is the ratio of "
        "times, 1 ÷ {time_left:.2f}.",
    ),
    TrapSpec(
        "ceiling_x",
        TRAP_CEILING_AS_TIME_LEFT,
        "time_left_pct",
        "{time_left:.0%} is the time that is left; the ceiling is a speedup, 1 ÷ {time_left:.2f}.",
    ),
    TrapSpec(
        "two_speedup_x",
        TRAP_ADDED_SPEEDUPS,
        "added_x",
        "Speedups never add: add the new times of the parts, then divide the old time by the sum.",
    ),
    TrapSpec(
        "two_speedup_x",
        TRAP_MULTIPLIED_SPEEDUPS,
        "multiplied_x",
        "Speedups multiply only when one applies to the whole of the other's result; these touch "
        "different parts of the step. Add the new times instead.",
    ),
)


@dataclass(frozen=True)
class Numbers:
    """Q7's answers and trap values (in the learner's units), and the fractions its text quotes."""

    launch_ms: float
    launch_pct: float
    speedup_x: float
    ceiling_x: float
    two_speedup_x: float
    share_of_total_pct: float  # launch ÷ (ideal + launch)
    part_speedup_x: float  # the part's own speedup
    time_left: float  # the untouched fraction of the time, when the part is free
    time_left_pct: float
    added_x: float
    multiplied_x: float
    rest_fraction: float  # 1 − the part's fraction
    new_time_one: float  # new time ÷ old, one part sped up
    new_time_two: float  # new time ÷ old, both parts sped up
    untouched_two: float  # the fraction neither part touches
    graph_launch_s: float  # one launch: a CUDA graph replaying the step
    launch_pct_exact: float  # the overhead over the library's decode floor of the scenario's model
    exact_step_ms: float


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Q7 quotes no rounded figures: the scenario is its parameters, once its model's weights fit (the
    model is the one whose decode floor the ideal step stands for)."""
    if "model" in params:
        check_fits(params["model"], params["gpu"], 1, 0, weight_precision=params["weight_precision"])
    return dict(params)


def numbers(s: Mapping[str, Any]) -> Numbers:
    """Q7's numbers for scenario ``s``, from the roofline library."""
    k, c, ideal = s["kernels_per_step"], s["launch_s"], s["ideal_step_s"]
    p1, s1, p2, s2 = s["part_fraction"], s["part_speedup"], s["part2_fraction"], s["part2_speedup"]
    overhead = launch_overhead_s(k, c)
    exact = exact_floor_s(s, ideal)
    left = amdahl_new_time_fraction(p1, np.inf)  # the untouched time when the part becomes free
    return Numbers(
        launch_ms=overhead / MS,
        launch_pct=overhead / ideal * PERCENT,
        speedup_x=amdahl_speedup(p1, s1),
        ceiling_x=amdahl_ceiling(p1),
        two_speedup_x=amdahl_speedup([p1, p2], [s1, s2]),
        share_of_total_pct=overhead / (ideal + overhead) * PERCENT,
        part_speedup_x=float(s1),
        time_left=left,
        time_left_pct=left * PERCENT,
        added_x=float(s1 + s2),
        multiplied_x=float(s1 * s2),
        rest_fraction=1 - p1,
        new_time_one=amdahl_new_time_fraction(p1, s1),
        new_time_two=amdahl_new_time_fraction([p1, p2], [s1, s2]),
        untouched_two=amdahl_new_time_fraction([p1, p2], [np.inf, np.inf]),
        graph_launch_s=launch_overhead_s(1, c),
        launch_pct_exact=overhead / exact * PERCENT,
        exact_step_ms=exact / MS,
    )


# The card's ideal step stands for the decode floor of its model; an ideal step typed far from that floor
# (more than this fraction away) is another step, with no exact counterpart.
SAME_STEP = 0.15


def exact_floor_s(s: Mapping[str, Any], ideal_s: float) -> float:
    """The library's decode floor (s) of the scenario's model, GPU and precision, which the card's ideal
    step rounds; ``ideal_s`` itself where the scenario names no model or its ideal step is another one."""
    if "model" not in s:
        return ideal_s
    floor = float(exact_decode(s, 1, 0).step_time_s)
    return floor if abs(ideal_s - floor) <= SAME_STEP * floor else ideal_s


def text(s: Mapping[str, Any], n: Numbers) -> CardText:
    """Q7's scenario, worked answer, common mistake and follow-up, in HTML."""
    k, c, ideal = s["kernels_per_step"], s["launch_s"], s["ideal_step_s"]
    p1, s1, p2, s2 = s["part_fraction"], s["part_speedup"], s["part2_fraction"], s["part2_speedup"]
    part, part2 = s["part_name"], s["part2_name"]
    overhead, left = n.launch_ms * MS, n.time_left
    return CardText(
        scenario=(
            f"<p>A decode step launches about {k:,} kernels at about {c / US:.0f} µs of CPU time each, "
            f"against an ideal step of {ms(ideal)}. What does launching cost, as time and as a share of the "
            f"step, and how would you cut it? Separately, a teammate made {part} ({p1:.0%} of the step) "
            f"{s1:g}× faster and claims decode is now {s1:g}× faster. Give the real speedup and its "
            f"ceiling; then the follow-up: {part} ({p1:.0%}) {s1:g}× faster and {part2} ({p2:.0%}) {s2:g}× "
            "faster together.</p>"
        ),
        worked=ul(
            f"Launching: {k:,} × {c / US:.0f} µs = <b>{ms(overhead)}</b> of CPU time per step, which is "
            f"{ms(overhead)} ÷ {ms(ideal)} = <b>{n.launch_pct / PERCENT:.0%}</b> of the ideal step.",
            f"Cut it by launching less: CUDA graphs record the step once and replay it as one launch "
            f"({fmt_value(n.graph_launch_s / US, 'µs')}), and kernel fusion leaves fewer kernels to launch. "
            "Fewer bytes would not help here: that shortens the memory part, not the launching.",
            f"Amdahl: {part} is {p1:.0%} of the step and the other {1 - p1:.0%} does not change. New "
            f"time: {1 - p1:.2f} + {p1:.2f} ÷ {s1:g} = {n.new_time_one:.3g} of the old, so the speedup is "
            f"1 ÷ {n.new_time_one:.3g} = <b>{n.speedup_x:.2f}×</b>, not {s1:g}×.",
            f"Even if {part} cost nothing, the {1 - p1:.0%} remains: the ceiling is 1 ÷ {left:.2f} = "
            f"<b>{n.ceiling_x:.2f}×</b>. Speed up the part that dominates the time.",
        ),
        mistake=(
            "<p>Offering 'fewer bytes' (quantization) as the cure for launch overhead: it shortens the "
            "memory part of the step, while the CPU keeps spending the same time launching.</p>"
            f"<p>Giving the ceiling as '{left:.0%}': that is the fraction of the time left, not a speedup. "
            f"The ceiling is a ratio of times, {n.ceiling_x:.2f}×.</p>"
        ),
        followup_question=(
            f"Two optimizations: {part} ({p1:.0%}) made {s1:g}× faster and {part2} ({p2:.0%}) made "
            f"{s2:g}× faster. Overall?"
        ),
        followup_answer=ul(
            f"Work in times. Untouched: {n.untouched_two:.0%}. {part.capitalize()} shrinks to "
            f"{p1:.2f} ÷ {s1:g} = {p1 / s1:.3g}; {part2} to {p2:.2f} ÷ {s2:g} = {p2 / s2:.3g}.",
            f"New time: {n.new_time_two:.3g} of the old, so the speedup is 1 ÷ {n.new_time_two:.3g} = "
            f"<b>{n.two_speedup_x:.2f}×</b>. Not {s1 + s2:g}× (added) nor {s1 * s2:g}× (multiplied): "
            "speedups combine only through the new times.",
        ),
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


SPEC = CardSpec(
    qid="Q7",
    title="Kernel launches and Amdahl",
    lessons=("03", "04", "09", "60"),
    defaults=dict(
        model="llama-3-8b",  # the step the card's 4.8 ms ideal rounds: Llama 3 8B in BF16 on one H100
        gpu="h100-sxm",
        weight_precision="bf16",
        kernels_per_step=300,
        launch_s=4e-6,
        ideal_step_s=4.8e-3,
        part_name="attention",
        part_fraction=0.3,
        part_speedup=3.0,
        part2_name="the MLP",
        part2_fraction=0.5,
        part2_speedup=2.0,
    ),
    stated={},
    answers=ANSWERS,
    traps=TRAPS,
    code=CardCode(scenario, numbers, text, draw, usable),
)
