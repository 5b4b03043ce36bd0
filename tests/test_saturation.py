"""Lesson 61: when decode turns compute-bound, and the saturation wall (roofline.lessons.saturation)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.errors import InvalidConfigurationError
from roofline.lessons.saturation import context_limit_tokens, throughput_ceiling_tokens_per_s
from roofline.lessons.scenario import Scenario
from roofline.physics.balance import compute_bound_batch
from roofline.views.saturation import FlipBatchVsContext, ThroughputVsLatency, saturation_readout

N8B = 8_030_261_248  # Llama 3 8B parameters (16,060,522,496 bytes / 2)
RIDGE = 989e12 / 3.35e12  # 295.22 FLOP/byte
KV = 131072
ATT = 4 * 32 * 32 * 128  # attention FLOPs per context token, Llama 3 8B


def test_flip_at_the_ridge_with_no_context():
    # intensity = B x 2N / 2N = B exactly, so the first B above 295.22 is 296
    assert compute_bound_batch("llama-3-8b", "h100-sxm", 0) == 296 == math.floor(RIDGE) + 1
    s = rl.decode_step("llama-3-8b", "h100-sxm", [295, 296], 0)
    assert s.binding.tolist() == ["memory", "compute"]


def test_flip_moves_out_with_context():
    # T = 128: B > ridge x W / (2N + a T - ridge T k) = 4.741e12 / 11.16e9 = 424.8 -> 425
    expected = math.floor(RIDGE * 2 * N8B / (2 * N8B + ATT * 128 - RIDGE * 128 * KV)) + 1
    assert compute_bound_batch("llama-3-8b", "h100-sxm", 128) == expected == 425
    flips = compute_bound_batch("llama-3-8b", "h100-sxm", [0, 64, 128, 256, 1000, 4096])
    assert np.all(np.diff(flips[:4]) > 0)
    assert np.isinf(flips[4:]).all()
    assert compute_bound_batch("llama-3-8b", "h100-sxm", 1000) is None


def test_context_limit():
    # T* = 2N / (ridge x k - a) = 16.06e9 / (38.70e6 - 0.524e6) = 420.7 tokens
    t_star = context_limit_tokens("llama-3-8b", "h100-sxm")
    assert t_star == pytest.approx(2 * N8B / (RIDGE * KV - ATT))
    assert compute_bound_batch("llama-3-8b", "h100-sxm", math.floor(t_star)) is not None
    assert compute_bound_batch("llama-3-8b", "h100-sxm", math.ceil(t_star)) is None
    # fp8 KV halves k: the limit roughly doubles
    assert context_limit_tokens("llama-3-8b", "h100-sxm", kv_precision="fp8") > 2 * t_star


def test_throughput_ceiling():
    assert throughput_ceiling_tokens_per_s("llama-3-8b", "h100-sxm") == pytest.approx(989e12 / (2 * N8B))
    assert throughput_ceiling_tokens_per_s("llama-3-8b", "h100-sxm", num_gpus=2) == pytest.approx(
        2 * 989e12 / (2 * N8B)
    )
    with pytest.raises(InvalidConfigurationError):
        compute_bound_batch("llama-3-8b", "h100-sxm", -1)


def test_moe_flip_uses_its_growing_weight_reads():
    b = compute_bound_batch("mixtral-8x7b", "h100-sxm", 0)
    s = rl.decode_step("mixtral-8x7b", "h100-sxm", [b - 1, b], 0, num_gpus=2, on_overflow="mask")
    assert s.binding.tolist() == ["memory", "compute"]


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(["llama-3-8b", "llama-3.2-1b", "qwen2.5-7b", "mistral-7b"]),
    gpu=st.sampled_from(["h100-sxm", "a100-80gb-sxm", "l40s", "b200"]),
    context=st.integers(0, 2000),
)
def test_flip_batch_is_the_first_compute_bound_batch(model, gpu, context):
    b = compute_bound_batch(model, gpu, context)
    big = rl.decode_step(model, gpu, 1e9, context, on_overflow="mask")
    flops_s = big.flops / rl.get_gpu(gpu).dense_flops_per_s["bf16"]
    bytes_s = big.bytes_read / rl.get_gpu(gpu).memory_bandwidth_bytes_per_s
    if b is None:
        assert flops_s <= bytes_s * (1 + 1e-6)  # even a billion users stay memory-bound
        return
    for batch, want in ((b, True), (b - 1, False)):
        if batch < 1:
            continue
        s = rl.decode_step(model, gpu, batch, context, on_overflow="mask")
        g = rl.get_gpu(gpu)
        assert (s.flops / g.dense_flops_per_s["bf16"] > s.bytes_read / g.memory_bandwidth_bytes_per_s) == want


def test_figures_and_readout():
    fig = ThroughputVsLatency(Scenario(context_tokens=128))
    assert len(fig.png()) > 10_000
    fig.update(Scenario(context_tokens=8192))  # never compute-bound, memory full at 59 users
    assert len(fig.png()) > 10_000
    assert len(FlipBatchVsContext(Scenario()).png()) > 10_000
    html = saturation_readout(Scenario(context_tokens=128))
    assert "B = 425" in html and "295 FLOP/byte" in html
    assert "never" in saturation_readout(Scenario(context_tokens=4096))
