"""The serving dashboard (lesson 59): analytic steady state, seeded simulation, diagnosis, figure."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.engines import StepTimer, decode_step_times, engine_params
from roofline.lessons.dashboard.lab import DashboardFigure, dashboard_explorer
from roofline.lessons.dashboard.numbers import (
    card_to_dashboard,
    dashboard,
    diagnose,
    simulated_latency,
    steady_state,
)
from roofline.scenario import Scenario

M, G = "llama-3-8b", "h100-sxm"
BW, PEAK = 3.35e12, 989e12
KV = 128 * 1024
W_READ = 16_060_522_496 - 128_256 * 4096 * 2 + 4096 * 2  # a batch-1 step reads one embedding row: 15.01e9 B
# what vLLM's defaults leave of an "80 GB" (80 GiB) H100 for weights and KV: 0.9 × 79.18 − 4.8 − 0.13 GiB
AVAILABLE = (0.9 * 79.18 - 4.8 - 0.13) * 2**30  # 71.22e9 bytes
# The card's server: kernels at 80 % of peak bandwidth and nothing else (an engine with those numbers)
CARD = engine_params("ideal", G).replace(bandwidth_fraction=0.8)


def test_card_q5_mbu_and_mfu():
    # 16 GB read in 6 ms: 2.67 TB/s of 3.35 = 80%; 2 × 8e9 FLOP in 6 ms of 989 TFLOP/s = 0.27%.
    assert round(rl.mbu(16e9, 6e-3, BW), 2) == 0.80
    assert rl.mfu(16e9, 6e-3, PEAK) == pytest.approx(16e9 / 6e-3 / 989e12)
    # A dashboard on the card's server (kernels at 80 % of bandwidth), with no prompts, shows the same: the
    # step is 15.01e9 B / 3.35e12 / 0.8 = 5.60 ms, so MBU = 0.8 and
    # MFU = 2 × 7.50e9 (no lookup FLOPs) / 5.60 ms / 989e12 = 0.27%.
    s = steady_state(Scenario(prompt_tokens=0), 1, 1, params=CARD)
    assert s.mbu == pytest.approx(0.8, abs=0.001)
    assert s.step_time_s == pytest.approx(W_READ / BW / 0.8, rel=1e-3)
    assert s.mfu == pytest.approx(0.0027, abs=0.0002)


def test_steady_state_by_hand():
    # 300 users at T = 4096: max batch = floor((71.22e9 − 16.06e9) / (4096 × 131072)) = floor(102.7):
    # 102 run, 198 wait.
    assert int((AVAILABLE - 16_060_522_496) // (4096 * KV)) == 102
    s = steady_state(Scenario(prompt_tokens=0), 300, 4096)
    assert (s.max_batch, s.running, s.waiting) == (102, 102, 198)
    free = AVAILABLE - rl.weight_bytes(M)
    assert s.kv_use_fraction == pytest.approx(102 * 4096 * KV / free, rel=1e-3)
    # With no prompts it is a plain decode step of 102 users, on the default engine (vLLM): the readout's.
    step = float(decode_step_times(StepTimer("vllm", M, G), 102, 4096)["total"])
    assert s.step_time_s == pytest.approx(step)
    assert s.tokens_per_s == pytest.approx(102 / step)


def test_steady_state_broadcasts_and_masks():
    s = steady_state(Scenario(), [[1], [64]], [1000, 4096])
    assert s.tokens_per_s.shape == (2, 2)
    big = steady_state(Scenario(model="llama-3-70b"), 8, 1000)  # 141 GB of weights on 80 GB
    assert not big.fits and np.isnan(big.tokens_per_s)
    two = steady_state(Scenario(model="llama-3-70b", num_gpus=2), 8, 1000)
    assert two.fits


def test_simulation_agrees_with_steady_state():
    # Where the chunk budget is not binding (64 × 500 / 250 = 128 < 512 prompt tokens per step), the
    # averages of the simulation and the analytic model agree within a few per cent on the roofline. (A real
    # engine whose compute fraction is low turns the steps that carry a whole prompt chunk compute-bound,
    # so the simulation's mean step exceeds the analytic step of the mean load: max() is convex.)
    d = dashboard(Scenario(batch=64, context_tokens=4096), engine="ideal")
    s = steady_state(Scenario(), 64, 4096, engine="ideal")
    assert d.tokens_per_s == pytest.approx(s.tokens_per_s, rel=0.05)
    assert d.mbu == pytest.approx(s.mbu, rel=0.03)
    assert d.running == 64 and d.waiting == 0


def test_simulation_is_seeded():
    a, b = (
        dashboard(Scenario(batch=32, context_tokens=1000), seed=3),
        dashboard(Scenario(batch=32, context_tokens=1000), seed=3),
    )
    assert a == b
    assert dashboard(Scenario(batch=32, context_tokens=1000), seed=4) != a  # another seed, another run


def test_queue_makes_ttft_not_tpot():
    full = dashboard(Scenario(batch=300, context_tokens=4096))
    healthy = dashboard(Scenario(batch=64, context_tokens=4096))
    assert full.running == 102 and full.waiting == 198
    assert full.kv_use_fraction == pytest.approx(1.0, abs=0.01)
    # 198 users ahead, 102 slots, ~250 tokens per answer at ~27 ms per step: ≈ 198/102 × 250 × 0.027 ≈ 13 s
    assert 8 < full.ttft_p50_s < 18
    assert healthy.ttft_p99_s < 0.2
    assert full.tpot_p99_s < 0.05  # the ones inside still stream smoothly


def test_percentiles_ordered_and_cost_consistent():
    d = dashboard(Scenario(batch=100, context_tokens=2000))
    assert d.ttft_p50_s <= d.ttft_p99_s and d.tpot_p50_s <= d.tpot_p99_s
    assert d.cost_per_million_usd == pytest.approx(rl.cost_per_million_tokens_usd(3.0, d.tokens_per_s))
    assert 0 < d.mfu < d.mbu <= 0.8 + 1e-9


def test_weights_do_not_fit():
    d = dashboard(Scenario(model="llama-3-70b", batch=10, context_tokens=1000))
    assert not d.fits and np.isnan(d.tokens_per_s)
    assert diagnose(d).startswith("does not fit")


def test_diagnose_three_servers():
    assert diagnose(dashboard(Scenario(batch=1, context_tokens=1000))).startswith("under-batched")
    assert diagnose(dashboard(Scenario(batch=64, context_tokens=4096))).startswith("healthy")
    assert diagnose(dashboard(Scenario(batch=300, context_tokens=4096))).startswith("memory-full")


def test_bad_inputs():
    with pytest.raises(rl.InvalidConfigurationError):
        dashboard(Scenario(batch=0, context_tokens=1000))
    with pytest.raises(rl.InvalidConfigurationError):
        dashboard(Scenario(batch=10, context_tokens=1000), params=CARD.replace(bandwidth_fraction=1.5))
    with pytest.raises(rl.UnknownNameError):
        dashboard(Scenario(batch=10, context_tokens=1000), engine="vlm")
    with pytest.raises(rl.InvalidConfigurationError):
        steady_state(Scenario(), 10, 0)
    with pytest.raises(rl.UnknownNameError):
        dashboard(Scenario(model="llama-9", batch=10, context_tokens=1000))


@settings(max_examples=25, deadline=None)
@given(u=st.integers(1, 400), t=st.sampled_from([256, 1000, 4096, 16384]))
def test_dashboard_invariants(u, t):
    d = dashboard(Scenario(batch=u, context_tokens=t), steps=300)
    assert d.running + d.waiting == pytest.approx(u)
    assert d.running <= d.max_batch
    assert 0 <= d.kv_use_fraction <= 1 + 1e-9
    # memory traffic runs at most at the engine's bandwidth fraction; math at most at peak
    assert d.mbu <= engine_params("vllm", G).bandwidth_fraction + 1e-9 and d.mfu <= 1 + 1e-9
    assert d.best_tokens_per_s >= steady_state(Scenario(), d.max_batch, t).tokens_per_s


def test_figure_readout_explorer():
    fig = DashboardFigure(Scenario(batch=64, context_tokens=4096))
    assert len(fig.png()) > 5_000 and fig.dashboard.running == 64
    fig.update(Scenario(model="llama-3-70b"))
    assert not fig.dashboard.fits and len(fig.png()) > 5_000
    ex = dashboard_explorer()
    assert "healthy" in ex.readout.value and "how it was made" in ex.readout.value
    ex.set(batch=300)
    assert ex.live.dashboard.waiting == 198 and "memory-full" in ex.readout.value


def test_two_gpus_pay_for_the_all_reduces():
    # On the card's server: step(G) = memory ÷ (G × 3.35e12 × 0.8) + all-reduces; with G = 2 the
    # all-reduce time c (NCCL's latencies, as lesson 24) is added: speedup = t1 / (t1 / 2 + c) < 2.
    one = steady_state(Scenario(prompt_tokens=0), 1, 1, params=CARD)
    two = steady_state(Scenario(prompt_tokens=0, num_gpus=2), 1, 1, params=CARD)
    t1 = rl.decode_step(M, G, 1, 1).memory_time_s / 0.8
    c = rl.decode_step(M, G, 1, 1, num_gpus=2, include_communication=True).communication_time_s
    assert c > 0
    assert one.step_time_s == pytest.approx(t1)
    assert two.step_time_s == pytest.approx(t1 / 2 + c)
    assert two.tokens_per_s / one.tokens_per_s == pytest.approx(t1 / (t1 / 2 + c))
    assert 1.4 < two.tokens_per_s / one.tokens_per_s < 1.9
    # the simulated dashboard too, and its MBU drops below 80%: all-reduce time moves no HBM bytes
    d1, d2 = (
        dashboard(Scenario(batch=1, context_tokens=1000), params=CARD),
        dashboard(Scenario(batch=1, context_tokens=1000, num_gpus=2), params=CARD),
    )
    assert d2.tokens_per_s < 1.9 * d1.tokens_per_s
    assert d2.mbu < 0.75
    assert "roofline.engines" in dashboard(Scenario(batch=1, context_tokens=1000)).source


def test_mfu_of_the_decode_tokens_is_the_cards_mfu():
    # Lesson 02 / card Q5: MFU = 2 × N × tokens/s ÷ peak = 2 × 8.03e9 / 6 ms / 989e12 = 0.27%. The dashboard's
    # panel MFU also counts the prompt FLOPs (P = 500 per O = 250 answer: two prompt tokens per output token),
    # so it reads about 3× that; ``mfu_decode`` is the card's definition.
    d = dashboard(Scenario(batch=1, context_tokens=1000), params=CARD)
    n = rl.active_parameter_count(M)
    assert d.mfu_decode == pytest.approx(2 * n * d.tokens_per_s / PEAK, rel=0.01)
    assert 0.0025 < d.mfu_decode < 0.0032  # the step is 5.6–6 ms: 0.27–0.29%
    assert 2.0 < d.mfu / d.mfu_decode < 3.5


def test_card_to_dashboard_explains_4300_against_3400():
    c = card_to_dashboard(Scenario(batch=64, context_tokens=4096))
    # 1. the card's arithmetic: 64 ÷ ((16,060,522,496 + 64 × 4,096 × 131,072) ÷ 3.35e12) = 64 ÷ 15.05 ms
    card = 64 / ((16_060_522_496 + 64 * 4096 * 131072) / BW)
    assert c.tokens_per_s[0] == pytest.approx(card)  # 4,252, "about 4,300" on the card
    assert c.usd_per_million[0] == pytest.approx(3 / (card * 3600) * 1e6)  # $0.196
    # 3. the same step on the default engine: 64 ÷ the readouts' vLLM step
    step = float(decode_step_times(StepTimer("vllm", M, G), 64, 4096)["total"])
    assert c.tokens_per_s[2] == pytest.approx(64 / step)
    # 5. the last row is the dashboard's own number
    assert c.tokens_per_s[-1] == dashboard(Scenario(batch=64, context_tokens=4096)).tokens_per_s
    assert c.usd_per_million[-1] > c.usd_per_million[0]


def test_percentiles_come_from_the_simulator():
    d = dashboard(Scenario(batch=100, context_tokens=2000))
    assert d.ttft_p50_s <= d.ttft_p90_s <= d.ttft_p99_s and d.tpot_p50_s <= d.tpot_p90_s <= d.tpot_p99_s
    assert d.latency_source.startswith("roofline.sim")
    lat = simulated_latency(Scenario(batch=100, context_tokens=2000), batch_limit=d.max_batch)
    assert d.tpot_p99_s == lat["tpot_s"]["p99"] and lat["result"].requests_completed == lat["result"].requests
    # one user alone: no queue, every token one step: TPOT ≥ the achievable decode step at T = 1,000
    one = simulated_latency(Scenario(batch=1, context_tokens=1000))
    assert one["tpot_s"]["p50"] >= rl.decode_step(M, G, 1, 1000).memory_time_s / 0.8 * (1 - 1e-9)


def test_kv_use_counts_sliding_windows():
    # Mistral 7B v0.1 keeps at most its 4,096-token window per layer: at T = 32,768 a user holds
    # 4,096 × 128 KiB = 0.5 GiB of KV, not 4 GiB (lesson 28; rl.sequence_kv_bytes).
    s = steady_state(Scenario(model="mistral-7b", prompt_tokens=0), 8, 32768)
    free = AVAILABLE - rl.weight_bytes("mistral-7b")
    assert s.kv_use_fraction == pytest.approx(8 * 4096 * KV / free, rel=1e-3)
