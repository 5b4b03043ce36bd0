"""The serving simulator's edges: stability verdicts, bad traces, zero-token draws, occupancy."""

import numpy as np
import pytest

import roofline as rl
from roofline import sim


def test_a_run_that_sees_no_arrival_is_not_unstable():
    # at 1e-9 req/s the first request comes after ~1e9 s, long after max_sim_time_s: nothing queued
    r = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1e-9, requests=10))
    assert r.truncated and not r.unstable
    assert "grows without bound" not in r.message
    assert "10 of them had not arrived yet" in r.message
    # an overload that did queue is still reported
    busy = sim.simulate(
        sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1000, requests=3000, max_sim_time_s=10.0)
    )
    assert busy.truncated and busy.unstable and "grows without bound" in busy.message


GOOD = dict(arrival_s=[0.0, 0.1, 0.2], input_tokens=[10, 20, 30], output_tokens=[5, 5, 5])


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("arrival_s", [0.0, float("nan"), 0.2], "must be finite"),
        ("arrival_s", [0.0, -1.0, 0.2], "must be finite and >= 0"),
        ("arrival_s", [0.0, float("inf"), 0.2], "must be finite"),
        ("input_tokens", [10, "twenty", 30], "must be a number"),
        ("output_tokens", [5, 2**70, 5], "at most 10,000,000 tokens"),
        ("input_tokens", [10, 2**2000, 30], "absurdly large"),
        ("input_tokens", [10, 2.5, 30], "whole number"),
        ("output_tokens", [5, 0, 5], ">= 1 tokens"),
        ("input_tokens", [10, True, 30], "must be a number"),
    ],
)
def test_a_bad_trace_names_the_field_and_row(field, value, words):
    with pytest.raises(rl.RooflineError) as e:
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", trace={**GOOD, field: value}, requests=3))
    assert field in str(e.value) and "row 1" in str(e.value) and words in str(e.value)


def test_a_trace_missing_a_field_or_empty_is_refused():
    with pytest.raises(rl.RooflineError, match="missing field.*'output_tokens'"):
        sim.simulate(
            sim.SimConfig("llama-3-8b", "h100-sxm", trace={k: GOOD[k] for k in ("arrival_s", "input_tokens")})
        )
    with pytest.raises(rl.RooflineError, match="no requests"):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", trace={k: [] for k in GOOD}))
    with pytest.raises(rl.RooflineError, match="differ in length"):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", trace={**GOOD, "input_tokens": [1, 2]}))
    with pytest.raises(rl.RooflineError, match="list of numbers"):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", trace={**GOOD, "arrival_s": "0.0, 0.1"}))


def test_a_lognormal_length_never_draws_zero_tokens():
    # mean 1 token, σ = 2: half of exp(N(−2, 4)) lies below 0.14, which rounds to 0 without the floor
    spec = sim.LengthSpec("lognormal", 1, sigma=2.0)
    x = sim.sample_lengths(spec, 20_000, np.random.default_rng(0))
    assert x.min() == 1
    r = sim.simulate(
        sim.SimConfig(
            "llama-3-8b", "h100-sxm", rate_per_s=50, requests=50, input_tokens=spec, output_tokens=spec
        )
    )
    assert r.requests_completed == 50 and r.output_tokens.min() >= 1 and r.input_tokens.min() >= 1


def _occupancy_integral(r) -> float:
    """∫ (requests in worker 0) dt from the engine's own per-step bookkeeping (request-seconds)."""
    inside = r.timeline_prefilling + r.timeline_decoding + r.timeline_waiting
    return float(np.sum(inside * r.timeline_step_s))


def test_the_timeline_counts_admitted_sequences_that_wait_for_a_chunk():
    # 64 long prompts at once, 512-token chunks in a 1,024-token budget: all 64 are admitted at t = 0 but
    # only two get a chunk a step. Every request is inside from t = 0 to its finish, so the engine's count
    # integrated over its steps must equal Σ e2e exactly (the old timeline left the chunkless ones out).
    trace = dict(arrival_s=np.zeros(64), input_tokens=np.full(64, 2000), output_tokens=np.full(64, 32))
    r = sim.simulate(
        sim.SimConfig("llama-3-8b", "h100-sxm", trace=trace, requests=64, chunk_tokens=512, token_budget=1024)
    )
    assert r.timeline_waiting.max() == 0  # everyone admitted: the queue is inside the batch
    assert _occupancy_integral(r) == pytest.approx(float(np.sum(r.e2e_s)), rel=1e-9)
    assert (r.timeline_prefilling + r.timeline_decoding).max() == 64


def test_littles_law_on_the_engines_own_occupancy():
    # L = λ W: the time-average number of requests inside the engine (admitted + waiting, from its own
    # per-step state) equals the arrival rate times the mean time in the system. Arrivals are counted from
    # the next step's start, so L is low by about λ × half a step (< 1 % here).
    kw = dict(requests=3000, seed=3, chunk_tokens=512, token_budget=1024,
              input_tokens=sim.LengthSpec("lognormal", 1500, sigma=0.6),
              output_tokens=sim.LengthSpec("uniform", low=20, high=200))  # fmt: skip
    steady = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=20.0, **kw))
    assert steady.requests_completed == steady.requests and not steady.unstable
    engine_l = _occupancy_integral(steady) / steady.duration_s
    assert engine_l == pytest.approx(20.0 * float(np.mean(steady.e2e_s)), rel=0.05)
    # bursts (gaps with a coefficient of variation of 4) admit many prompts that wait for a chunk; over a
    # run that empties, λ is the measured rate, requests ÷ duration (the undercounting timeline was 15 % low)
    bursty = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=20.0, interarrival_cv=4.0, **kw))
    assert bursty.requests_completed == bursty.requests and bursty.load == "bursty"
    engine_l = _occupancy_integral(bursty) / bursty.duration_s
    measured_rate = bursty.requests / bursty.duration_s
    assert engine_l == pytest.approx(measured_rate * float(np.mean(bursty.e2e_s)), rel=0.02)
