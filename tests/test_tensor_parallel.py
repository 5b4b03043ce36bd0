"""Lesson 24: tensor parallelism, ideal and with the all-reduces (roofline.lessons.tensor_parallel)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.course.widgets import Explorer
from roofline.errors import InvalidConfigurationError
from roofline.lessons.tensor_parallel.lab import (
    SpeedupVsGPUs,
    scaling_comparison_figure,
    tensor_parallel_explorer,
    tensor_parallel_readout,
)
from roofline.lessons.tensor_parallel.numbers import GPU_COUNTS, tensor_parallel_scaling, weight_bytes_per_gpu
from roofline.scenario import Scenario


def test_card_70b_fp8_on_two_h100s():
    s = tensor_parallel_scaling("llama-3-70b", "h100-sxm", 2, weight_precision="fp8")
    # 70.55e9 bytes / (2 x 3.35e12 bytes/s) = 10.53 ms: the card's 10.4 ms uses a round 70 GB. (The lookup
    # reads one row of the embedding instead of its 1.05 GB, and the FP8 preset keeps the LM head at 16 bits,
    # +1.05 GB: the two cancel; scales add under 0.01%.)
    assert s.step_time_ideal_s == pytest.approx(70.553706496e9 / 6.7e12, rel=1e-4)
    # 2 all-reduces x 80 layers, each 6.6 µs + 2 hops x 0.6 µs (ring over 2 GPUs, NVLink)
    # + 2 x (1/2) x 16,384 bytes / 450e9 bytes/s = 7.8 + 0.036 = 7.836 µs
    assert s.communication_time_s == pytest.approx(160 * (6.6e-6 + 2 * 0.6e-6 + 16384 / 450e9))
    assert s.step_time_s == pytest.approx(s.step_time_ideal_s + s.communication_time_s)
    # MBU at the measured 14 ms: floor / measured = 10.53 / 14 = 75%
    assert round(100 * s.step_time_ideal_s / 14e-3) == 75


def test_ideal_speedup_is_g_and_real_speedup_is_less():
    s = tensor_parallel_scaling("llama-3-8b", "h100-sxm", [1, 2, 4, 8])
    assert s.speedup_ideal.tolist() == pytest.approx([1, 2, 4, 8])
    assert s.speedup[0] == pytest.approx(1.0)
    assert np.all(s.speedup[1:] < s.speedup_ideal[1:])
    # 8B BF16 at G=8: a step reads 15,009,857,536 B (one embedding row, not the table): 4.48 / 8 = 0.560 ms,
    # + 64 all-reduces x (6.6 µs + 14 hops x 0.6 µs + 2 x 7/8 x 8,192 B / 450e9 B/s) = 64 x 15.03 µs
    # = 0.962 ms; 1.522 ms in all: 4.48 / 1.522 = 2.94x
    w_read = 16_060_522_496 - 128_256 * 4096 * 2 + 4096 * 2
    assert s.step_time_s[-1] == pytest.approx(
        w_read / 8 / 3.35e12 + 64 * (6.6e-6 + 14 * 0.6e-6 + 2 * 7 / 8 * 8192 / 450e9)
    )
    assert round(s.speedup[-1], 2) == 2.94


def test_small_models_scale_worse_than_large_ones():
    small = tensor_parallel_scaling("llama-3-8b", "h100-sxm", [2, 8])
    large = tensor_parallel_scaling("llama-3-70b", "h100-sxm", [2, 8], weight_precision="fp8")
    # 70B FP8 does not leave room on one H100 under the engine's memory budget, so compare 2 -> 8 GPUs
    gain = lambda x: x.step_time_s[0] / x.step_time_s[1]  # noqa: E731
    assert gain(small) < gain(large) <= 4
    assert np.all(small.communication_fraction > large.communication_fraction)


def test_pcie_link_costs_more_at_large_batch():
    # batch 256 x 4096 x 2 bytes = 2 MiB messages: bytes / link now matter, and PCIe is 7x slower
    nv = tensor_parallel_scaling("llama-3-8b", "h100-sxm", 8, batch=256)
    pcie = tensor_parallel_scaling("llama-3-8b", "h100-pcie", 8, batch=256)
    assert pcie.communication_time_s > 3 * nv.communication_time_s


def test_one_gpu_that_cannot_hold_the_model_has_no_baseline():
    s = tensor_parallel_scaling("llama-3-70b", "h100-sxm", [1, 2])  # 141 GB of BF16
    assert s.fits.tolist() == [False, True]
    assert np.isnan(s.speedup).all() and not s.fits_one_gpu.any()
    assert np.isnan(s.step_time_s[0]) and np.isfinite(s.step_time_s[1])


def test_weight_bytes_per_gpu_and_errors():
    assert weight_bytes_per_gpu("llama-3-8b", "bf16", 4) == pytest.approx(16.060522496e9 / 4)
    with pytest.raises(InvalidConfigurationError):
        tensor_parallel_scaling("llama-3-8b", "h100-sxm", 0)
    with pytest.raises(InvalidConfigurationError):
        weight_bytes_per_gpu("llama-3-8b", "bf16", 0.5)


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(["llama-3-8b", "llama-3.2-1b", "qwen2.5-7b"]),
    gpu=st.sampled_from(["h100-sxm", "h100-pcie", "a100-80gb-sxm", "b200"]),
    g=st.sampled_from([2, 4, 8]),
    batch=st.integers(1, 64),
    context=st.integers(0, 4096),
)
def test_communication_never_helps(model, gpu, g, batch, context):
    s = tensor_parallel_scaling(model, gpu, g, batch, context)
    if s.fits:
        assert s.step_time_s > s.step_time_ideal_s
        assert 0 < s.efficiency < 1
        assert 0 < s.communication_fraction < 1


def test_figures_and_explorer():
    fig = SpeedupVsGPUs(Scenario(model="llama-3-70b", num_gpus=2))  # G=1 does not fit: shaded
    assert len(fig.png()) > 5_000
    assert "speedup vs GPUs" in repr(scaling_comparison_figure())
    ex = tensor_parallel_explorer()
    ex.set(communication=False)
    assert "switched off" in ex.readout.value
    ex.set(num_gpus=8)
    assert ex.scenario.num_gpus == 8
    assert "does not fit" in tensor_parallel_readout(Scenario(model="llama-3-70b"), {})
    assert isinstance(ex, Explorer)


def test_comparison_figure_shows_absolute_time_beside_the_speedup():
    # A speedup alone hides absolute time. Bottom row: ms per step with the all-reduces.
    fig = scaling_comparison_figure(batches=(1,), models=(("llama-3-8b", "bf16"),), picture=False)
    axes = fig.get_axes()
    assert len(axes) == 4  # speedup and time, for each of the two GPUs
    sxm_time = axes[2]
    assert sxm_time.get_yscale() == "log" and "ms per decode step" in sxm_time.get_ylabel()
    (line,) = sxm_time.get_lines()
    expected = tensor_parallel_scaling("llama-3-8b", "h100-sxm", GPU_COUNTS, 1, 0).step_time_s / 1e-3
    assert np.asarray(line.get_ydata()) == pytest.approx(np.asarray(expected))
    # by hand at G = 1: the decode floor, weight bytes read ÷ 3.35e12 B/s, a few ms (not a ratio)
    assert 4.0 < line.get_ydata()[0] < 5.0


def test_the_engine_column_prices_the_step_with_its_all_reduces_as_the_knob_says():
    from roofline.course.readouts import case_readout
    from roofline.lessons.tensor_parallel.lab import tensor_parallel_case

    # 8B BF16 on 2 H100s, 1 user: 2.74 ms per step -> 365 tokens/s; 2 GPUs × $3 / (365 × 3,600) × 1e6 = $4.57
    s = Scenario(num_gpus=2, context_tokens=0, usd_per_gpu_hour=3.0)
    step = tensor_parallel_scaling("llama-3-8b", "h100-sxm", 2).step_time_s
    with_comm = case_readout(s, tensor_parallel_case(s, {"communication": True}))
    assert "with their all-reduces" in with_comm and f"${2 * 3 / (1 / step * 3600) * 1e6:.2f}" in with_comm
    floor = rl.decode_step("llama-3-8b", "h100-sxm", num_gpus=2).step_time_s  # 15.01 GB / 6.7 TB/s = 2.24 ms
    without = case_readout(s, tensor_parallel_case(s, {"communication": False}))
    assert "without all-reduces" in without and f"{floor * 1e3:.2f} ms" in without
    assert tensor_parallel_case(s, {"communication": False}).communication is False  # the engine too
    ex = tensor_parallel_explorer()
    assert (
        "cost per 1M tokens (achievable)" in ex.readout.value and "with their all-reduces" in ex.readout.value
    )
    ex.set(communication=False)
    assert "without all-reduces" in ex.readout.value
