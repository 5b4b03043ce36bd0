"""Lesson 60: Amdahl and profiling. Expected values derived by hand in the comments."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import roofline as rl
from roofline.lessons.amdahl.lab import amdahl_explorer
from roofline.lessons.amdahl.numbers import (
    amdahl_breakdown,
    decode_profile,
    naive_combined_speedups,
    profile_fractions,
    speedup_of_each_part,
)
from roofline.scenario import Scenario

CARD = Scenario(context_tokens=0)  # Llama 3 8B in BF16, one user, one H100


def test_card_one_optimization():
    b = amdahl_breakdown(0.3, 3, ["attention"])
    # untouched 0.7, attention 0.3 / 3 = 0.1: new 0.8, speedup 1.25, ceiling 1 / 0.7 = 1.43
    assert b.new_parts == pytest.approx([0.7, 0.1])
    assert b.speedup == pytest.approx(1.25) and b.ceiling == pytest.approx(1 / 0.7)


def test_card_two_optimizations():
    b = amdahl_breakdown([0.3, 0.5], [3, 2], ["attention", "MLP"])
    # 0.2 + 0.1 + 0.25 = 0.55; 1 / 0.55 = 1.818; ceiling 1 / 0.2 = 5
    assert b.names == ["untouched", "attention", "MLP"]
    assert b.old_parts == pytest.approx([0.2, 0.3, 0.5])
    assert b.new_parts == pytest.approx([0.2, 0.1, 0.25])
    assert b.new_time_fraction == pytest.approx(0.55)
    assert b.speedup == pytest.approx(1 / 0.55) and b.ceiling == pytest.approx(5)
    assert naive_combined_speedups([3, 2]) == (5.0, 6.0)  # the wrong answers


def test_speed_up_what_dominates():
    # 2x on 10 %, 30 %, 60 %: 1/0.95, 1/0.85, 1/0.7
    got = speedup_of_each_part([0.1, 0.3, 0.6], 2)
    assert got == pytest.approx([1 / 0.95, 1 / 0.85, 1 / 0.7])


def test_decode_profile_adds_up_to_the_step():
    p = decode_profile(CARD)
    # memory-bound at B=1, T=0: the parts' bytes add to all weight bytes (8,030,261,248 x 2 = 16.06 GB),
    # so the times add to 16.06e9 / 3.35e12 = 4.794 ms. (The step engine gathers one embedding row instead of
    # reading the whole 1.05 GB table, so its step is 0.31 ms shorter; the profile keeps the card's count.)
    assert sum(p.values()) == pytest.approx(8_030_261_248 * 2 / 3.35e12)
    assert sum(p.values()) >= rl.decode_step("llama-3-8b", "h100-sxm").step_time_s
    assert p["MLP"] == pytest.approx(5_637_144_576 * 2 / 3.35e12)  # 3.365 ms
    assert p["attention over KV"] == 0 and p["kernel launches"] == 0
    with_launch = decode_profile(CARD, kernels_per_step=300)
    assert with_launch["kernel launches"] == pytest.approx(1.2e-3)
    f = profile_fractions(with_launch)
    assert sum(f.values()) == pytest.approx(1.0)


def test_long_context_makes_attention_dominate():
    p = profile_fractions(decode_profile(Scenario(batch=32, context_tokens=4096)))
    # KV: 32 x 4096 x 131,072 B = 17.2 GB against 16.06 GB of weights
    assert max(p, key=p.get) == "attention over KV"


def test_bad_input():
    with pytest.raises(rl.InvalidConfigurationError):
        amdahl_breakdown([0.6, 0.5], [2, 2])  # overlapping parts
    with pytest.raises(rl.InvalidConfigurationError):
        amdahl_breakdown([0.3, 0.5], [2])
    with pytest.raises(rl.InvalidConfigurationError):
        decode_profile(CARD.with_(model="mixtral-8x7b"))


@given(st.floats(0, 0.5), st.floats(0, 0.5), st.floats(1, 100), st.floats(1, 100))
def test_speedup_between_one_and_ceiling(p1, p2, s1, s2):
    b = amdahl_breakdown([p1, p2], [s1, s2])
    assert 1 - 1e-12 <= b.speedup <= b.ceiling * (1 + 1e-12)
    assert b.speedup <= max(s1, s2) * (1 + 1e-12)  # never more than the best part's own speedup
    assert sum(b.new_parts) == pytest.approx(b.new_time_fraction)


def test_explorer():
    ex = amdahl_explorer()
    assert "1.82x" in ex.readout.value
    ex.set(p2=0.9)
    # the message says why; no stale number stays under it
    assert "Not possible" in ex.message.value and "1.82x" not in ex.readout.value
    assert "No numbers for this choice" in ex.readout.value
    assert np.isfinite(ex.live.options["p2"])
