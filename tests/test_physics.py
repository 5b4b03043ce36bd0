"""Hand-derived checks on models and GPUs other than the card's (the arithmetic is in each test)."""

import numpy as np
import pytest

import roofline as rl


def test_llama_70b_kv_per_token_gqa_vs_mha():
    # 2 (K,V) x 80 layers x 8 KV heads x 128 dims x 2 bytes = 327,680 bytes = 320 KiB
    assert rl.kv_bytes_per_token("llama-3-70b", "bf16") == 327_680
    # Full MHA would have 64 KV heads: 8x more
    assert rl.kv_bytes_per_token_mha("llama-3-70b", "bf16") == 8 * 327_680
    # FP8 KV halves it
    assert rl.kv_bytes_per_token("llama-3-70b", "fp8") == 163_840


def test_llama_8b_on_a100_decode_floor():
    # 8,030,261,248 params, minus the 128,256 x 4,096 = 525,336,576 input-embedding table of which one
    # 4,096-value row is gathered: 7,504,928,768 params x 2 bytes = 15.01 GB; / 2.039e12 B/s = 7.361 ms
    step = rl.decode_step("llama-3-8b", "a100-80gb-sxm")
    assert step.step_time_s == pytest.approx(2 * (8_030_261_248 - 525_336_576 + 4096) / 2.039e12, rel=1e-9)


def test_llama_8b_parameter_count_exact():
    # embed 128256x4096 = 525,336,576 (x2, untied) + 32 x (attn 41,943,040 + mlp 3x4096x14336 = 176,160,768
    # + norms 8,192) + final norm 4,096 = 8,030,261,248
    assert rl.parameter_count("llama-3-8b") == 2 * 525_336_576 + 32 * (41_943_040 + 176_160_768 + 8192) + 4096


def test_int4_weights_with_group_scale():
    # "int4" quantizes the blocks' matmul weights: 4 bits + a 16-bit scale per 128 = 0.5 + 2/128 bytes.
    # Those are 8,030,261,248 - 2 x 525,336,576 (embedding, LM head) - 266,240 (norms: 32 x 8,192 + 4,096)
    # = 6,979,321,856. The embedding, LM head and norms stay BF16: 1,050,939,392 x 2 bytes.
    body = 8_030_261_248 - 2 * 525_336_576 - 266_240
    assert body == 6_979_321_856
    expected = body * (0.5 + 2 / 128) + (2 * 525_336_576 + 266_240) * 2  # 3.599 + 2.102 = 5.70 GB
    assert rl.weight_bytes("llama-3-8b", "int4") == pytest.approx(expected)


def test_mixtral_batch_one_reads_two_experts_large_batch_reads_all():
    # Batch 1 touches k = 2 of 8 experts per layer; the expert MLPs are 32 x 8 x 3 x 4096 x 14336 params.
    # The input embedding (32,000 x 4,096) is gathered: one 4,096-value row per token.
    expert_params = 32 * 8 * 3 * 4096 * 14336
    embedding = 32000 * 4096
    total = rl.parameter_count("mixtral-8x7b")
    one = rl.weight_bytes_read("mixtral-8x7b", "bf16", 1)
    assert one == pytest.approx(2 * (total - expert_params + expert_params * 2 / 8 - embedding + 4096))
    # With 256 tokens P(an expert unused) = (6/8)^256 ~ 1e-32: every expert byte is read, 256 rows gathered
    many = rl.weight_bytes_read("mixtral-8x7b", "bf16", 256)
    assert many == pytest.approx(2 * (total - embedding + 256 * 4096))


def test_tensor_parallel_ideal_halves_the_memory_time():
    one = rl.decode_step("llama-3-70b", "h100-sxm", batch=8, context_tokens=2000, num_gpus=4)
    two = rl.decode_step("llama-3-70b", "h100-sxm", batch=8, context_tokens=2000, num_gpus=8)
    assert two.memory_time_s == pytest.approx(one.memory_time_s / 2)


def test_tensor_parallel_communication_latency_dominated_at_batch_one():
    # 80 layers x 2 all-reduces x (start-up + 2 x 1/2 x 16 KB / 450 GB/s). Ring start-up over NVLink,
    # NCCL's model: 6.6 us + 2(N-1) = 2 hops x 0.6 us = 7.8 us. 160 x 7.836 us = 1.254 ms
    t = rl.tensor_parallel_comm_time_s("llama-3-70b", 1, 2, 900e9)
    assert t == pytest.approx(160 * (7.8e-6 + 8192 * 2 / 450e9), rel=1e-9)
    with_comm = rl.decode_step(
        "llama-3-70b", "h100-sxm", num_gpus=2, weight_precision="fp8", include_communication=True
    )
    ideal = rl.decode_step("llama-3-70b", "h100-sxm", num_gpus=2, weight_precision="fp8")
    assert with_comm.step_time_s - ideal.step_time_s == pytest.approx(t)


def test_prefill_crossover_on_l4_is_ridge_times_bytes_over_two():
    # L4: 121 TFLOPS bf16 / 300 GB/s = 403 FLOP/byte; BF16 weights -> P* = 403 x 2 / 2 = 403 tokens
    assert rl.compute_bound_prompt_tokens("llama-3-8b", "l4") == pytest.approx(121e12 / 300e9)
    # FP8 weights: 242.5 TFLOPS / 300 GB/s x W / (2 N). W = 6,979,321,856 FP8 body bytes + 1,050,939,392
    # BF16 params (embedding, LM head, norms) x 2 = 9.081e9 bytes: 1.131 bytes per weight -> 457 tokens
    w = 6_979_321_856 + 2 * 1_050_939_392
    assert rl.compute_bound_prompt_tokens("llama-3-8b", "l4", "fp8") == pytest.approx(
        242.5e12 / 300e9 * w / (2 * 8_030_261_248)
    )


def test_max_batch_for_qwen_72b_on_mi300x():
    # 72.7 B x 2 bytes = 145.4 GB of weights; KV per token 2 x 80 x 8 x 128 x 2 = 327,680 B; at 8192
    # tokens one user needs 2.68 GB.
    # Ideal (all 192 GiB = 206.2 GB): 60.7 GB free -> 22 users.
    # Engine (vLLM defaults): 192 GiB x 0.98975 (CUDA-visible) x 0.9 - 4.8 GiB (activations) - 0.13 GiB
    # (non-torch) = 178.35 GB; 32.9 GB free -> 12 users.
    w = rl.weight_bytes("qwen2.5-72b", "bf16")
    ideal = int((192 * 2**30 - w) // (8192 * 327_680))
    engine = int((192 * 2**30 * 0.98975 * 0.9 - 4.8 * 2**30 - 0.13 * 2**30 - w) // (8192 * 327_680))
    assert rl.max_batch("qwen2.5-72b", "mi300x", 8192, memory="ideal") == ideal == 22
    assert rl.max_batch("qwen2.5-72b", "mi300x", 8192) == engine == 12


def test_cost_scales_with_gpu_count():
    # 2 GPUs at $3 each making 1,000 tok/s: $6/h / 3.6 M tokens/h = $1.667 per million
    assert rl.cost_per_million_tokens_usd(3.0, 1000, num_gpus=2) == pytest.approx(6 / 3.6)


def test_launch_overhead_adds_to_step():
    base = rl.decode_step("llama-3.2-1b", "h100-sxm")
    with_launch = rl.decode_step("llama-3.2-1b", "h100-sxm", launch_overhead_s=1.2e-3)
    assert with_launch.step_time_s == pytest.approx(base.step_time_s + 1.2e-3)
    # A 1B model's floor is short (2.47 GB / 3.35 TB/s = 0.74 ms), so 1.2 ms of launches more than doubles it
    assert with_launch.step_time_s > 2 * base.step_time_s


def test_ridge_point_of_each_gpu_is_computed_not_stored():
    for gpu in rl.gpus().values():
        assert not hasattr(gpu, "ridge_point")
    mi300x = rl.get_gpu("mi300x")
    assert rl.ridge_point_flop_per_byte(
        mi300x.dense_flops_per_s["bf16"], mi300x.memory_bandwidth_bytes_per_s
    ) == pytest.approx(1307.4e12 / 5.3e12)


def test_vectorized_equals_scalar_calls():
    batches = np.array([1, 7, 64])
    contexts = np.array([[0], [1000], [32000]])
    grid = rl.decode_step("llama-3-8b", "h200", batches, contexts, on_overflow="mask")
    for i, t in enumerate(contexts[:, 0]):
        for j, b in enumerate(batches):
            single = rl.decode_step("llama-3-8b", "h200", int(b), int(t), on_overflow="mask")
            assert grid.step_time_s[i, j] == pytest.approx(single.step_time_s, nan_ok=True)
