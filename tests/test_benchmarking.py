"""Lesson 06: benchmarks that lie. Expected values derived by hand in the comments."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.lessons.benchmarks_that_lie.lab import plausibility_explorer
from roofline.lessons.benchmarks_that_lie.numbers import (
    EDGE_OF_POSSIBLE,
    AsyncStream,
    latency_summary,
    plausibility,
    reported_tokens_per_s,
    request_time_s,
    simulated_latencies_s,
    time_decode,
)
from roofline.scenario import Scenario

CARD = Scenario(context_tokens=0)  # the card's setup: Llama 3 8B in BF16, one user, one H100


def test_launch_returns_before_the_work_is_done():
    with AsyncStream() as stream:
        start = time.perf_counter()
        stream.launch(0.05)
        launched = time.perf_counter() - start
        stream.synchronize()
        synced = time.perf_counter() - start
    assert launched < 0.02 <= 0.05 <= synced


def test_unsynchronized_timer_inflates_the_rate():
    real = time_decode(10, 2e-3, synchronize=True)
    fake = time_decode(10, 2e-3, synchronize=False)
    assert real.elapsed_s >= 10 * 2e-3  # the work really takes 20 ms
    assert fake.elapsed_s < real.elapsed_s / 10
    assert fake.tokens_per_s > 10 * real.tokens_per_s


def test_stream_rejects_negative_work():
    with AsyncStream() as stream, pytest.raises(rl.InvalidConfigurationError):
        stream.launch(-1.0)
    with pytest.raises(rl.InvalidConfigurationError):
        time_decode(0, 1e-3, synchronize=True)


def test_prompt_tokens_counted_as_output():
    # 100 output tokens in 0.5 s is 200 tok/s; adding the 2,000-token prompt reports 2,100 / 0.5 = 4,200
    assert reported_tokens_per_s(100, 0.5) == 200
    assert reported_tokens_per_s(100, 0.5, 2000, count_prompt_tokens=True) == 4200
    assert reported_tokens_per_s([100, 200], 0.5).tolist() == [200, 400]


def test_request_time_adds_prefill_and_each_step():
    t = request_time_s(CARD.with_(prompt_tokens=500), 2)
    pre = rl.prefill("llama-3-8b", "h100-sxm", 500).step_time_s
    d = rl.decode_step("llama-3-8b", "h100-sxm", 1, [500, 501]).step_time_s
    assert t == pytest.approx(pre + d[0] + d[1])
    # prefill: 2 x (8.03e9 - 2 x 0.525e9 embedding and LM-head parameters) x 500 tokens FLOPs (logits only for
    # the last token) / 989e12 FLOP/s = 7.06 ms, plus two decode steps of at least the 4.48 ms floor
    assert t > 7.0e-3 + 2 * 4.48e-3


def test_latency_summary_by_hand():
    x = [1.0] + [0.01] * 99
    s = latency_summary(x)
    assert s.mean_s == pytest.approx((1.0 + 99 * 0.01) / 100)  # 0.0199: twice the typical call
    assert s.p50_s == pytest.approx(0.01)
    warm = latency_summary(x, warmup_calls=1)
    assert warm.calls == 99 and warm.mean_s == pytest.approx(0.01)
    with pytest.raises(rl.InvalidConfigurationError):
        latency_summary(x, warmup_calls=100)


def test_simulated_latencies_are_seeded():
    a = simulated_latencies_s(100, 6e-3, first_call_s=2.0, seed=3)
    b = simulated_latencies_s(100, 6e-3, first_call_s=2.0, seed=3)
    assert np.array_equal(a, b) and a[0] == 2.0
    assert np.all(a[1:] > 0)
    assert latency_summary(a).mean_s > 2.0 / 100  # one cold call alone adds 20 ms to the mean


# A batch-B step of Llama 3 8B reads every weight once except the input embedding, of which it gathers B rows:
# (8,030,261,248 - 128,256 x 4,096 + B x 4,096) parameters x 2 bytes.
def read_8b(batch: int) -> int:
    return (8_030_261_248 - 128_256 * 4096 + batch * 4096) * 2


def test_card_claim_is_impossible():
    p = plausibility(CARD, 2000)
    ceiling = 3.35e12 / read_8b(1)  # 3.35e12 / 15,009,857,536 = 223.2 tok/s (the card's 16 GB: 209)
    assert p.ceiling_tokens_per_s == pytest.approx(ceiling)
    assert p.ratio == pytest.approx(2000 / ceiling)  # 8.96x
    assert not p.plausible and p.verdict.startswith("impossible")
    assert plausibility(CARD, 300).verdict.startswith("impossible")  # the PM's 300


def test_verdict_tiers():
    ceiling = 3.35e12 / read_8b(1)
    assert plausibility(CARD, 0.5 * ceiling).verdict.startswith("plausible")
    edge = plausibility(CARD, 0.95 * ceiling)
    assert edge.verdict.startswith("suspicious") and not edge.plausible
    big = plausibility(CARD.with_(model="llama-3-70b"), 2000)
    assert big.verdict.startswith("does not fit") and not big.plausible


def test_batch_raises_the_ceiling():
    p = plausibility(Scenario(batch=32), 2000)
    # (15.01 GB + 32 x 1000 x 131,072 B) / 3.35 TB/s = 5.733 ms; 32 / 5.733 ms = 5,582 tok/s
    assert p.ceiling_tokens_per_s == pytest.approx(32 / ((read_8b(32) + 32 * 1000 * 131072) / 3.35e12))
    assert p.plausible


@settings(max_examples=50, deadline=None)
@given(claim=st.floats(1, 1e6), batch=st.integers(1, 64))
def test_plausible_iff_below_edge(claim, batch):
    p = plausibility(CARD.with_(batch=batch), claim)
    assert p.plausible == (claim <= EDGE_OF_POSSIBLE * p.ceiling_tokens_per_s)


def test_bad_claim():
    with pytest.raises(rl.InvalidConfigurationError):
        plausibility(CARD, 0)


def test_explorer():
    ex = plausibility_explorer()
    assert "impossible" in ex.readout.value
    ex.set(batch=32)
    assert "plausible" in ex.readout.value and "impossible" not in ex.readout.value
