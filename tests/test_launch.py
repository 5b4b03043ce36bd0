"""Lesson 03: launch overhead. Expected values derived by hand in the comments."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import roofline as rl
from roofline.lessons.launch_overhead.lab import launch_case, launch_explorer, launch_readout
from roofline.lessons.launch_overhead.numbers import launch_budget, launch_hiding, share_grid
from roofline.scenario import Scenario

W_8B = 16_060_522_496  # Llama 3 8B BF16 weight bytes (8,030,261,248 parameters x 2)
EMB_8B = 128_256 * 4096 * 2  # its embedding table, 1,050,673,152 bytes: a decode step looks up one row of it
W_READ_8B = W_8B - EMB_8B + 4096 * 2  # bytes one batch-1 decode step reads: 15,009,857,536
BW = 3.35e12  # H100 SXM bytes/s
CARD = Scenario(context_tokens=0)  # the card's step: Llama 3 8B in BF16, one user, one H100


def test_card_budget_eager():
    b = launch_budget(CARD, 300, 4e-6)
    roof = W_READ_8B / BW  # 4.481 ms (the card's 4.8 ms counts the whole embedding table)
    assert b.overhead_s == pytest.approx(300 * 4e-6)  # 1.2 ms
    assert b.roofline_time_s == pytest.approx(roof)
    assert b.step_time_s == pytest.approx(roof + 1.2e-3)  # 5.681 ms
    assert b.overhead_vs_roofline == pytest.approx(1.2e-3 / roof)  # 0.268: the card's "a quarter" of 4.8 ms
    assert round(1.2e-3 / (W_8B / BW), 2) == 0.25  # the card's own figure, with its 16 GB read
    assert b.share == pytest.approx(1.2e-3 / (roof + 1.2e-3))  # 0.211
    assert b.tokens_per_s_per_user == pytest.approx(1 / (roof + 1.2e-3))  # 176.0 tok/s


def test_cuda_graph_is_one_launch():
    b = launch_budget(CARD, 300, 4e-6, cuda_graphs=True)
    assert b.kernels_launched == 1
    assert b.overhead_s == pytest.approx(4e-6)
    assert b.step_time_s == pytest.approx(W_READ_8B / BW + 4e-6)


def test_fewer_bytes_grows_the_share():
    # FP8 halves the layers' bytes; the LM head stays 16-bit (the FP8 preset), plus one BF16 embedding row:
    # (6,979,588,096 + 1,050,673,152 + 8,192) B / 3.35e12 = 2.397 ms (block scales add ~0.003%);
    # 1.2 / (2.397 + 1.2) = 0.334 > 0.211
    bf16 = launch_budget(CARD, 300, 4e-6)
    fp8 = launch_budget(CARD.with_(weight_precision="fp8"), 300, 4e-6)
    assert fp8.overhead_s == pytest.approx(bf16.overhead_s)  # unchanged
    w_fp8 = (8_030_261_248 - 2 * 128_256 * 4096) + 128_256 * 4096 * 2 + 4096 * 2
    assert fp8.roofline_time_s == pytest.approx(w_fp8 / BW, rel=1e-4)
    assert fp8.share == pytest.approx(1.2e-3 / (w_fp8 / BW + 1.2e-3), rel=1e-4)
    assert fp8.share > bf16.share


def test_broadcast_over_kernels():
    b = launch_budget(CARD, [100, 300, 600], 4e-6)
    assert b.overhead_s == pytest.approx([0.4e-3, 1.2e-3, 2.4e-3])
    assert np.all(np.diff(b.share) > 0)


def test_does_not_fit_gives_nan():
    b = launch_budget(CARD.with_(model="llama-3-70b"))  # 141 GB of BF16 weights on 80 GB
    assert not b.fits and math.isnan(b.step_time_s) and math.isnan(b.share)


def test_share_grid_by_hand():
    g = share_grid(["llama-3.2-1b", "llama-3-70b"], ["h100-sxm"])
    # 1B: 2,471,628,800 bytes / 3.35e12 = 0.7378 ms; 150 kernels x 4 us = 0.6 ms; 0.6 / 1.3378 = 0.4485
    assert g[0, 0] == pytest.approx(0.6e-3 / (2_471_628_800 / BW + 0.6e-3))
    assert math.isnan(g[1, 0])  # 70B BF16 does not fit on one H100


def test_bad_input():
    with pytest.raises(rl.InvalidConfigurationError):
        launch_budget(CARD, -1, 4e-6)
    with pytest.raises(rl.UnknownNameError):
        launch_budget(CARD.with_(gpu="h1000"))


@given(k=st.floats(0, 5000), c=st.floats(0, 50e-6))
def test_share_properties(k, c):
    eager = launch_budget(CARD, k, c)
    graph = launch_budget(CARD, k, c, cuda_graphs=True)
    assert 0 <= eager.share < 1
    assert eager.step_time_s == pytest.approx(eager.roofline_time_s + eager.overhead_s)
    if k >= 1:
        assert graph.step_time_s <= eager.step_time_s + 1e-15


def test_explorer_moves():
    ex = launch_explorer()
    ex.set(kernels_per_step=600)
    assert ex.live.options["kernels_per_step"] == 600 and "2.400 ms" in ex.readout.value
    ex.set(cuda_graphs=True)
    assert "0.004 ms" in ex.readout.value
    ex.set(model="llama-3-70b")  # the explorer raises the GPU count so the weights fit (no dead end)
    assert "does not fit" not in ex.readout.value and "tokens/s per user" in ex.readout.value


def test_launch_hiding_small_models_fast_gpus_and_slow_schedulers_are_cpu_bound():
    # Launch overhead is not always added: queued ahead the step is max(GPU, CPU), synchronous the sum.
    big = launch_hiding(CARD)  # 300 × 4 µs = 1.2 ms of CPU under a ~4.5 ms GPU step
    assert big.cpu_time_s == pytest.approx(300 * 4e-6)
    assert big.queued_step_s == pytest.approx(big.gpu_time_s) and not big.cpu_bound
    assert big.synchronous_step_s == pytest.approx(big.gpu_time_s + 1.2e-3)
    assert big.hidden_fraction == pytest.approx(1.0)
    # Llama 3.2 1B: 16 layers × 9.375 = 150 launches = 0.6 ms of CPU; a 1 ms Python scheduler: 1.6 ms of CPU
    # against ~2.5 GB ÷ 3.35 TB/s ≈ 0.7 ms of GPU. The CPU sets the pace even queued ahead.
    small = launch_hiding(CARD.with_(model="llama-3.2-1b"), scheduler_s_per_step=1e-3)
    assert small.cpu_time_s == pytest.approx(150 * 4e-6 + 1e-3)
    assert small.cpu_bound and small.queued_step_s == pytest.approx(small.cpu_time_s)
    assert small.hidden_fraction == pytest.approx(small.gpu_time_s / small.cpu_time_s)


def test_readout_shows_the_queued_step_and_the_engine_column_prices_the_step_with_its_launches():
    from roofline.course.readouts import case_readout

    # 8B on an H100: 300 × 4 µs = 1.2 ms of launches under a 4.48 ms GPU step; queued ahead, 4.48 ms a step;
    # one user's 1 / 5.68 ms = 176 tokens/s at $3 per GPU-hour costs 3 / (176 × 3,600) × 1e6 = $4.73 per 1M
    s = Scenario(context_tokens=0, usd_per_gpu_hour=3.0)
    options = {"kernels_per_step": 300, "cpu_s_per_launch": 4e-6, "cuda_graphs": False}
    html = launch_readout(s, options)
    assert "step if the CPU queues ahead" in html and "4.48 ms" in html
    case = case_readout(s, launch_case(s, options))  # the lesson's step: the floor plus the launches
    assert "with 300 launches of 4 µs" in case and "5.68 ms" in case and "$4.73" in case
    text = launch_explorer().readout.value
    assert (
        "cost per 1M tokens (achievable)" in text and "with 300 launches" in text
    )  # ideal beside achievable
