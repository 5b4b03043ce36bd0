"""Lesson 61: when decode turns compute-bound, and the saturation wall (roofline.lessons.saturation)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.errors import InvalidConfigurationError
from roofline.lessons.compute_bound.lab import FlipBatchVsContext, ThroughputVsLatency, saturation_readout
from roofline.lessons.compute_bound.numbers import context_limit_tokens, throughput_ceiling_tokens_per_s
from roofline.physics.balance import compute_bound_batch
from roofline.scenario import Scenario

N8B = 8_030_261_248  # Llama 3 8B parameters (16,060,522,496 bytes / 2)
RIDGE = 989e12 / 3.35e12  # 295.22 FLOP/byte
KV = 131072
ATT = 4 * 32 * 32 * 128  # attention FLOPs per context token, Llama 3 8B
F2 = 2 * (N8B - 128_256 * 4096)  # decode FLOPs per token: every matrix but the embedding (a lookup), 15.01e9
W_READ = 2 * N8B - 128_256 * 4096 * 2  # weight bytes a decode step reads besides the rows: 15,009,849,344
ROW = 4096 * 2  # the embedding row each user looks up, bytes


def test_flip_at_the_ridge_with_no_context():
    # B × F2 / peak > (W_READ + B × ROW) / BW ⇔ B > ridge × W_READ / (F2 − ridge × ROW) = 295.27 → 296
    first = math.floor(RIDGE * W_READ / (F2 - RIDGE * ROW)) + 1
    assert compute_bound_batch("llama-3-8b", "h100-sxm", 0) == 296 == first
    s = rl.decode_step("llama-3-8b", "h100-sxm", [295, 296], 0)
    assert s.binding.tolist() == ["memory", "compute"]


def test_flip_moves_out_with_context():
    # T = 128: B > ridge × W_READ / (F2 + a T − ridge (ROW + T k)) = 4.431e12 / 10.12e9 = 437.8 -> 438
    expected = math.floor(RIDGE * W_READ / (F2 + ATT * 128 - RIDGE * (ROW + 128 * KV))) + 1
    assert compute_bound_batch("llama-3-8b", "h100-sxm", 128) == expected == 438
    flips = compute_bound_batch("llama-3-8b", "h100-sxm", [0, 64, 128, 256, 1000, 4096])
    assert np.all(np.diff(flips[:4]) > 0)
    assert np.isinf(flips[4:]).all()
    assert compute_bound_batch("llama-3-8b", "h100-sxm", 1000) is None


def test_context_limit():
    # T* = (F2 − ridge × ROW) / (ridge × k − a) = (15.01e9 − 2.42e6) / (38.70e6 − 0.524e6) = 393.2 tokens
    t_star = context_limit_tokens("llama-3-8b", "h100-sxm")
    assert t_star == pytest.approx((F2 - RIDGE * ROW) / (RIDGE * KV - ATT))
    assert compute_bound_batch("llama-3-8b", "h100-sxm", math.floor(t_star)) is not None
    assert compute_bound_batch("llama-3-8b", "h100-sxm", math.ceil(t_star)) is None
    # fp8 KV halves k: the limit roughly doubles
    assert context_limit_tokens("llama-3-8b", "h100-sxm", kv_precision="fp8") > 2 * t_star


def test_throughput_ceiling():
    # 989e12 / 15.01e9 = 65,890 tokens/s (the embedding lookup is no matmul)
    assert throughput_ceiling_tokens_per_s("llama-3-8b", "h100-sxm") == pytest.approx(989e12 / F2)
    two = throughput_ceiling_tokens_per_s("llama-3-8b", "h100-sxm", num_gpus=2)
    assert two == pytest.approx(2 * 989e12 / F2)
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
    assert len(fig.png()) > 5_000
    fig.update(Scenario(context_tokens=8192))  # never compute-bound, memory full at 59 users
    assert len(fig.png()) > 5_000
    assert len(FlipBatchVsContext(Scenario()).png()) > 5_000
    html = saturation_readout(Scenario(context_tokens=128))
    assert "B = 438" in html and "295 FLOP/byte" in html
    assert "never" in saturation_readout(Scenario(context_tokens=4096))


def test_per_kernel_matmuls_flip_near_the_ridge_whatever_the_context():
    # The whole-step roofline hides that the matmuls flip near B ≈ ridge (989e12 / 3.35e12 = 295.2;
    # 2·B FLOP per 2-byte weight) at any context, while attention stays memory-bound.
    from roofline.lessons.compute_bound.numbers import matmul_flip_batch, per_kernel_decode

    assert (
        matmul_flip_batch("llama-3-8b", "h100-sxm") == rl.compute_bound_batch("llama-3-8b", "h100-sxm") == 296
    )
    k = per_kernel_decode("llama-3-8b", "h100-sxm", [295, 296, 2048], [0, 4096, 32768])
    assert k.matmul_binding.tolist() == ["memory", "compute", "compute"]  # at T = 4,096 and 32,768 too
    assert k.attention_binding.tolist()[1:] == ["memory", "memory"]
    # a ÷ k for Llama 3 8B: 4 × 32 layers × 32 heads × 128 dims = 524,288 FLOP per context token per token,
    # over 2 × 32 × 8 KV heads × 128 × 2 bytes = 131,072 bytes per token: 4 FLOP/byte, at every batch.
    assert k.attention_intensity_flop_per_byte[1:].tolist() == pytest.approx([4.0, 4.0])
    # the kernels run one after the other: per-kernel step = matmuls + attention ≥ the whole-step roofline
    assert np.all(k.per_kernel_step_s >= k.whole_step_s * (1 - 1e-12))
    assert k.per_kernel_step_s == pytest.approx(k.matmul_time_s + k.attention_time_s)


def test_per_kernel_ceiling_moves_with_context():
    from roofline.lessons.compute_bound.numbers import per_kernel_ceiling_tokens_per_s

    # A decode token multiplies every weight matrix except the embedding table (a lookup, not a matmul):
    # 2 × (8,030,261,248 − 128,256 × 4,096) = 2 × 7,504,924,672 = 15.01e9 FLOP.
    f_mm = 2 * (8_030_261_248 - 128_256 * 4096)
    # T = 0: 989e12 / 15.01e9 = 65,890 tokens/s, the whole-step ceiling
    assert per_kernel_ceiling_tokens_per_s("llama-3-8b", "h100-sxm", 0) == pytest.approx(989e12 / f_mm)
    assert throughput_ceiling_tokens_per_s("llama-3-8b", "h100-sxm", 0) == pytest.approx(989e12 / f_mm)
    # T = 4,096: 1 / (15.01e9 / 989e12 + 4,096 × 131,072 / 3.35e12) = 1 / (15.18 + 160.3 µs) = 5,699 tokens/s
    expected = 1 / (f_mm / 989e12 + 4096 * 131072 / 3.35e12)
    assert per_kernel_ceiling_tokens_per_s("llama-3-8b", "h100-sxm", 4096) == pytest.approx(expected)
    assert (
        expected < throughput_ceiling_tokens_per_s("llama-3-8b", "h100-sxm", 4096) / 9
    )  # one roofline: 9.6× higher


def test_simulated_saturation_wall():
    # The wall under a closed loop. Each output token brings one prompt token (128 in, 128 out):
    # the layers' matmuls of a prompt token, 2 × (8.03e9 − 2 × 525.3e6) = 13.96e9 FLOP, plus a decode token's
    # 2 × (8.03e9 − 525.3e6) = 15.01e9 FLOP: 28.97e9 FLOP per output token, so at most
    # 989e12 / 28.97e9 = 34,140 output tokens/s (attention only lowers it). Throughput flattens below that
    # ceiling while TPOT keeps climbing.
    from roofline.lessons.compute_bound.numbers import simulated_saturation

    s = simulated_saturation("llama-3-8b", "h100-sxm", (1, 1024, 2048), requests_per_client=1)
    vd = 128_256 * 4096
    ceiling = 989e12 / (2 * (N8B - 2 * vd) + 2 * (N8B - vd))
    assert np.all(s.throughput_output_tokens_per_s <= ceiling)
    assert s.throughput_output_tokens_per_s[1] > 0.9 * ceiling  # at the wall
    assert s.throughput_output_tokens_per_s[2] < 1.05 * s.throughput_output_tokens_per_s[1]  # no further
    assert s.tpot_p50_s[2] > 1.8 * s.tpot_p50_s[1]  # twice the users, about twice the time per token
