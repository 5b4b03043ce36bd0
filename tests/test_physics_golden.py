"""Golden tests of what a step counts: embedding lookups, logits, precision per tensor, memory models,
communication, launches. Each writes out its hand arithmetic."""

import json
from dataclasses import replace

import numpy as np
import pytest

import roofline as rl
from roofline.assumptions import ASSUMPTIONS
from roofline.physics import architecture as arch
from roofline.physics import memory, parallel, precision

H100 = rl.get_gpu("h100-sxm")
BW = 3.35e12
PEAK = 989e12
GIB = 2**30
LLAMA8_N = 8_030_261_248
LLAMA8_TABLE = 128_256 * 4_096  # 525,336,576 parameters in the input embedding (and again in the head)


# ------------------------------------------------------------------------- 1. sliding-window attention
def test_mistral_window_caps_kv_read_at_4096_tokens():
    # Mistral 7B v0.1: 32 layers, all sliding with W = 4096 (config.json sliding_window 4096).
    # Weights read: 7,241,732,096 - 32,000 x 4,096 (the input table) + 8 rows x 4,096 = 7,110,692,864
    # params x 2 B = 14.221 GB. KV read: 8 users x min(32768, 4096) x 131,072 B = 4.295 GB.
    # (14.221 + 4.295) GB / 3.35 TB/s = 5.527 ms (before: 8 x 32,768 x 131,072 B of KV, 14.6 ms).
    s = rl.decode_step("mistral-7b", "h100-sxm", batch=8, context_tokens=32768)
    weights = (7_241_732_096 - 32_000 * 4_096 + 8 * 4_096) * 2
    kv = 8 * 4096 * 131_072
    assert s.kv_bytes_read == kv
    assert s.step_time_s == pytest.approx((weights + kv) / BW)
    assert round(s.step_time_s * 1e3, 2) == 5.53


def test_mistral_window_caps_kv_stored_and_max_batch_8x():
    # One user at 32,768 tokens keeps 4,096 x 128 KiB = 0.5 GiB (not 4 GiB).
    assert arch.sequence_kv_bytes("mistral-7b", 32768) == 4096 * 131_072
    # Ideal memory: 80 GiB - 14,483,464,192 B of weights = 71.416e9 B free.
    # Without the window each user needs 32,768 x 131,072 = 4.295 GB -> 16 users; with it 0.537 GB -> 133.
    free = 80 * GIB - 7_241_732_096 * 2
    with_window = rl.max_batch("mistral-7b", "h100-sxm", 32768, memory="ideal")
    assert with_window == int(free // (4096 * 131_072)) == 133
    assert with_window // int(free // (32768 * 131_072)) == 8  # 133 // 16: 8x more users


def test_mistral_window_caps_attention_flops():
    # One decode token attends to min(T, W) = 4,096 earlier tokens: 4 x 32 layers x 32 heads x 128 x 4,096.
    assert rl.attention_flops_per_token("mistral-7b", 32768) == 4 * 32 * 32 * 128 * 4096
    # A causal 8,000-token prefill in a W = 4,096 layer: token x sees min(x, 4096) earlier tokens:
    # sum_{x<4097} x + (8000 - 4097) x 4096 = 8,390,656 + 15,986,688 = 24,377,344 pairs (not 31,996,000).
    assert arch.attention_pairs("mistral-7b", 0, 8000) == 4096 * 4097 / 2 + (8000 - 4097) * 4096 == 24_377_344


def test_mistral_context_limit_is_still_the_position_limit():
    # The window bounds what a layer keeps, not how long a sequence may be: max_position_embeddings 32768.
    with pytest.raises(rl.ContextTooLongError):
        rl.decode_step("mistral-7b", "h100-sxm", 1, 40_000)


def test_alternating_sliding_and_full_layers_gpt_oss():
    # gpt-oss-120b: 36 layers, 18 slide with W = 128, 18 keep every token; 2 x 8 KV heads x 64 x 2 B =
    # 2,048 B per layer per token. At T = 1,000 a sequence holds 18 x 2,048 x 1,000 + 18 x 2,048 x 128
    # = 36,864,000 + 4,718,592 = 41,582,592 B (without the window: 73,728 x 1,000 = 73,728,000 B).
    assert rl.kv_bytes_per_token("gpt-oss-120b") == 36 * 2048
    assert arch.sequence_kv_bytes("gpt-oss-120b", 1000) == 36_864 * 1000 + 4_718_592
    # Below the window every layer keeps all tokens.
    assert arch.sequence_kv_bytes("gpt-oss-120b", 100) == 73_728 * 100


# ------------------------------------------------------------------------- 2. prefill FLOPs, embedding read
def test_prefill_8000_tokens_llama_8b_about_130_ms():
    # Matmul weights per token: 8,030,261,248 - 2 x 525,336,576 = 6,979,588,096 (the lookup is not a
    # matmul; the LM head is counted separately, once per prompt). Logits for the last token only.
    # FLOPs = 2 x 6,979,588,096 x 8,000 + 2 x 525,336,576 + 4 x 32 x 4096 x (8000 x 7999 / 2)
    #       = 1.11673e14 + 1.05e9 + 1.6775e13 = 1.28449e14 -> / 989e12 = 129.9 ms (before: 146.9 ms).
    p = rl.prefill("llama-3-8b", "h100-sxm", 8000)
    flops = 2 * (LLAMA8_N - 2 * LLAMA8_TABLE) * 8000 + 2 * LLAMA8_TABLE + 4 * 32 * 4096 * 8000 * 7999 / 2
    assert p.flops == pytest.approx(flops)
    assert round(p.step_time_s * 1e3, 1) == 129.9


def test_decode_gathers_b_rows_of_the_embedding():
    # A step of B tokens gathers B rows of 4,096 BF16 values: 64 tokens read 63 x 8,192 B more than 1.
    one = rl.weight_bytes_read("llama-3-8b", "bf16", 1)
    many = rl.weight_bytes_read("llama-3-8b", "bf16", 64)
    assert many - one == 63 * 4096 * 2
    assert one == (LLAMA8_N - LLAMA8_TABLE + 4096) * 2  # 15.01 GB, the card's 16 GB minus the table
    # Decode FLOPs: every sequence's one token gets logits: 2 x (6,979,588,096 + 525,336,576) per token.
    s = rl.decode_step("llama-3-8b", "h100-sxm", batch=4, include_attention=False)
    assert s.flops == 4 * 2 * (LLAMA8_N - LLAMA8_TABLE)


def test_tied_embedding_is_read_whole_by_the_lm_head():
    # Llama 3.2 1B ties its 128,256 x 2,048 table to the LM head: the head reads it whole every step.
    assert rl.weight_bytes_read("llama-3.2-1b", "bf16", 1) == rl.weight_bytes("llama-3.2-1b", "bf16")


def test_a_pass_without_logits_reads_no_lm_head():
    """A pass in the middle of a prompt asks for no logits: it reads the weights less the LM head
    (128,256 × 4,096 × 2 bytes = 1.05 GB in BF16) and does none of its math; a tied table is then only
    gathered, one row per token."""
    lm_head = 128256 * 4096 * 2
    with_head, without = (rl.forward_step("llama-3-8b", "h100-sxm", 1, 100, new_tokens=4, logits=lg)
                          for lg in ("last", "none"))  # fmt: skip
    assert float(with_head.weight_bytes_read - without.weight_bytes_read) == pytest.approx(lm_head)
    assert float(with_head.flops - without.flops) == pytest.approx(2 * 128256 * 4096)
    # Llama 3.2 1B ties its 128,256 x 2,048 table to the LM head: without logits, 4 rows of it are read
    tied = rl.forward_step("llama-3.2-1b", "h100-sxm", 1, 100, new_tokens=4, logits="none")
    whole = rl.weight_bytes("llama-3.2-1b", "bf16")
    assert float(tied.weight_bytes_read) == pytest.approx(whole - (128256 - 4) * 2048 * 2)


def test_card_figures_still_come_from_the_card_functions():
    # 16 GB / 3.35 TB/s = 4.78 ms -> 4.8 ms, 209 tok/s: the card's "weights / bandwidth", whole table counted.
    assert round(rl.decode_floor_s(16e9, 3.35e12) * 1e3, 1) == 4.8
    assert round(1 / rl.decode_floor_s(16e9, 3.35e12)) == 209
    assert rl.weight_bytes("llama-3-8b", "bf16") / BW == pytest.approx(4.794e-3, rel=1e-3)


# ------------------------------------------------------------------------- 3. MoE balance point
def test_mixtral_balance_point_on_h200_counts_total_over_active():
    # ridge = 989e12 / 4.8e12 = 206.04 FLOP/B; W = 2 x 46,702,792,704 B; N_active = 12,879,925,248
    # tokens* = 206.04 x 93.41e9 / (2 x 12.88e9) = 747 (a dense rule would say 206).
    expected = 989e12 / 4.8e12 * 2 * 46_702_792_704 / (2 * 12_879_925_248)
    assert rl.compute_bound_prompt_tokens("mixtral-8x7b", "h200") == pytest.approx(expected)
    assert round(expected) == 747


def test_cli_prefill_uses_the_moe_aware_balance_point(capsys):
    # In-process: a crash of the CLI is a failure here, never a skip.
    from roofline.apps.cli import main

    argv = ["prefill", "--model", "mixtral-8x7b", "--gpu", "h200", "--prompt", "1000", "--weights", "bf16"]
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert round(json.loads(captured.out)["compute_bound_prompt_tokens"]) == 747


# ------------------------------------------------------------------------- 4. memory capacity
def test_hbm_is_binary_and_the_engine_takes_its_share():
    # 80 GiB = 85,899,345,920 B. Engine: x 0.98975 (79.18 GiB CUDA-visible) x 0.9 (vLLM's budget)
    # - 4.8 GiB activations - 0.13 GiB non-torch = 71.264 - 4.93 = 66.33 GiB = 71.22e9 B.
    assert H100.memory_bytes == 80 * GIB
    engine = 80 * GIB * 0.98975 * 0.9 - 4.8 * GIB - 0.13 * GIB
    assert memory.memory_available_bytes("h100-sxm") == pytest.approx(engine, rel=1e-9)
    assert memory.memory_available_bytes("h100-sxm", memory="ideal") == 80 * GIB


def test_70b_fp8_on_one_h100_under_vllm_defaults():
    # Weights: 68,452,424,704 FP8 matmul params x 1 B + (2 x 1,050,673,152 + 1,318,912 norms) x 2 B
    # = 72.66e9 B = 67.67 GiB (vLLM logs 67.72 GiB for Llama-3.3-70B-FP8). KV per user at 4,096 tokens:
    # 327,680 x 4,096 = 1.25 GiB.
    w = rl.weight_bytes("llama-3-70b", "fp8")
    assert w / GIB == pytest.approx(67.67, abs=0.01)
    # Engine: 66.33 GiB available < 67.67 GiB of weights: no user fits (llm-d measured vLLM failing to
    # start this model on one H100 at its defaults); a model with every tensor in FP8 would fit 7 users.
    assert rl.max_batch("llama-3-70b", "h100-sxm", 4096, weight_precision="fp8") == 0
    with pytest.raises(rl.DoesNotFitError):
        rl.check_fits("llama-3-70b", "h100-sxm", 1, 4096, weight_precision="fp8")
    # Ideal (all 80 GiB): (85.90e9 - 72.66e9) / 1.342e9 = 9 users.
    assert (
        rl.max_batch("llama-3-70b", "h100-sxm", 4096, weight_precision="fp8", memory="ideal")
        == int((80 * GIB - w) // (327_680 * 4096))
        == 9
    )
    # With the budget alone (no activation reserve), as the issue counted: (71.26 - 67.67) GiB / 1.25 = 2.
    budget_only = 80 * GIB * 0.98975 * 0.9
    assert int((budget_only - w) // (327_680 * 4096)) == 2


def test_memory_terms_are_read_from_the_assumptions_table(monkeypatch):
    # The newer vLLM default 0.92: 80 GiB x 0.98975 x 0.92 - 4.93 GiB = 67.91 GiB.
    newer = replace(ASSUMPTIONS["engine_memory_fraction"], value=0.92)
    monkeypatch.setitem(ASSUMPTIONS, "engine_memory_fraction", newer)
    want = 80 * GIB * 0.98975 * 0.92 - 4.93 * GIB
    assert memory.memory_available_bytes("h100-sxm") == pytest.approx(want, rel=1e-9)


def test_fits_max_batch_and_the_step_agree():
    # One place: the largest batch fits and one more does not, in fits(), check_fits() and the step.
    for model, ctx in (("llama-3-8b", 4096), ("mistral-7b", 32768), ("gpt-oss-20b", 8192)):
        b = int(rl.max_batch(model, "h100-sxm", ctx))
        assert rl.fits(model, "h100-sxm", b, ctx) and not rl.fits(model, "h100-sxm", b + 1, ctx)
        fmt = rl.get_model(model).checkpoint_format if model.startswith("gpt") else "bf16"
        if fmt == "bf16":
            assert rl.decode_step(model, "h100-sxm", b, ctx).fits
            with pytest.raises(rl.DoesNotFitError):
                rl.decode_step(model, "h100-sxm", b + 1, ctx)


def test_runtime_reserved_is_capacity_minus_available():
    assert memory.runtime_reserved_bytes("h100-sxm", 2) == pytest.approx(
        2 * 80 * GIB - float(memory.memory_available_bytes("h100-sxm", 2))
    )


# ------------------------------------------------------------------------- 5. precision per tensor
def test_llama_8b_int4_footprint_and_read_with_16_bit_embedding_and_head():
    # Body 6,979,321,856 matmul params x 0.515625 B = 3,598,713,582 B; embedding + head + norms
    # 1,050,939,392 x 2 B = 2,101,878,784 B -> 5.7006 GB stored (before: 8.03e9 x 0.515625 = 4.1406 GB,
    # 27% too small). Read at batch 1: minus the table, plus one row: 4.6499 GB (before 4.1406, 11% low).
    body = 6_979_321_856
    stored = body * 0.515625 + (2 * LLAMA8_TABLE + 266_240) * 2
    read = stored - LLAMA8_TABLE * 2 + 4096 * 2
    assert rl.weight_bytes("llama-3-8b", "int4") == pytest.approx(stored)
    assert rl.weight_bytes_read("llama-3-8b", "int4", 1) == pytest.approx(read)
    assert 1 - 8_030_261_248 * 0.515625 / stored == pytest.approx(0.274, abs=0.002)
    assert 1 - 8_030_261_248 * 0.515625 / read == pytest.approx(0.110, abs=0.002)


@pytest.mark.parametrize(
    ("fmt", "bits"),
    [("mxfp4", 4.25), ("nvfp4", 4.5), ("q4_0", 4.5), ("q8_0", 8.5), ("q4_k_m", 4.8944), ("awq-int4", 4.15625),
     ("fp8-block128", 8 + 32 / 16384)],
)  # fmt: skip
def test_bits_per_weight_of_checkpoint_formats(fmt, bits):
    # MXFP4: (32 x 4 + 8) / 32; NVFP4: 4 + 8/16; Q4_0: 18 B / 32; Q8_0: 34 B / 32; Q4_K_M: llama.cpp's
    # measured Llama-3.1-8B average; AWQ: 4 + (16 + 4) / 128; FP8 block: 8 + 32 / (128 x 128).
    assert precision.bytes_per_element(fmt) * 8 == pytest.approx(bits)


def test_gguf_presets_cover_every_tensor():
    # Q4_0: body and embedding at 18/32 B, the output tensor in Q6_K (210/256 B), norms in FP32.
    body = LLAMA8_N - 2 * LLAMA8_TABLE - 266_240
    want = (body + LLAMA8_TABLE) * 18 / 32 + LLAMA8_TABLE * 210 / 256 + 266_240 * 4
    assert rl.weight_bytes("llama-3-8b", "gguf-q4_0") == pytest.approx(want)
    # Q4_K_M: 4.8944 bits for every weight tensor: 8.03e9 params -> 4.91 GB (llama.cpp's file: 4.58 GiB
    # = 4.92 GB for Llama-3.1-8B).
    q4km = rl.weight_bytes("llama-3-8b", "gguf-q4_k_m")
    assert q4km == pytest.approx((LLAMA8_N - 266_240) * 4.8944 / 8 + 266_240 * 4)
    assert q4km / GIB == pytest.approx(4.58, abs=0.02)


def test_simple_ids_keep_working_and_presets_run_in_the_step():
    s = rl.decode_step("llama-3-8b", "h100-sxm", weight_precision="int4")
    assert s.weight_bytes_read == rl.weight_bytes_read("llama-3-8b", "int4", 1)
    q = rl.decode_step("llama-3-8b", "h100-sxm", weight_precision="gguf-q4_k_m")
    assert q.step_time_s < s.step_time_s * 1.1
    assert precision.weight_format("int4").embedding.id == "bf16"
    with pytest.raises(rl.UnsupportedPrecisionError):
        rl.peak_flops_per_s(rl.get_gpu("a100-80gb-sxm"), "fp8-block128")


# ------------------------------------------------------------------------- 6. parallelism
def test_ring_and_tree_allreduce_latency_per_link():
    # NVLink ring, 8 GPUs: 6.6 + 2 x 7 x 0.6 = 15.0 us; tree: 6.6 + 2 x 3 x 0.6 = 10.2 us.
    assert parallel.collective_latency_s(8, "NVLink 4") == pytest.approx(15.0e-6)
    assert parallel.collective_latency_s(8, "NVLink 4", "tree") == pytest.approx(10.2e-6)
    # PCIe ring, 2 GPUs: 6.6 + 2 x 3.0 = 12.6 us (before: 10 us for every link and GPU count).
    assert parallel.collective_latency_s(2, "PCIe Gen5 x16") == pytest.approx(12.6e-6)
    # Bandwidth term: ring 2(N-1)/N x 1 MB / (900/2 GB/s) at N = 8: 1.75 x 2.222 us = 3.889 us.
    t = parallel.allreduce_time_s(1e6, 8, 900e9, link="NVLink")
    assert t == pytest.approx(15.0e-6 + 1.75 * 1e6 / 450e9)


def test_nvlink_beats_pcie_at_batch_one_once_latency_depends_on_the_link():
    # Llama 3 8B, batch 1, 64 all-reduces of 8 KB. NVLink (2 GPUs): 64 x (7.8 + 0.018) us = 0.50 ms;
    # PCIe: 64 x (12.6 + 0.128) us = 0.81 ms. Before, both paid 64 x 10 us = 0.64 ms.
    sxm = rl.decode_step("llama-3-8b", "h100-sxm", num_gpus=2, include_communication=True)
    pcie = rl.decode_step("llama-3-8b", "h100-pcie", num_gpus=2, include_communication=True)
    assert sxm.communication_time_s == pytest.approx(64 * (7.8e-6 + 8192 / 450e9))
    assert pcie.communication_time_s == pytest.approx(64 * (12.6e-6 + 8192 / 64e9))
    assert pcie.communication_time_s > 1.5 * sxm.communication_time_s
    # Speedups (lesson 24): equal within 1% at 2 GPUs, NVLink clearly ahead at 4 and 8.
    from roofline.lessons.tensor_parallel.numbers import tensor_parallel_scaling

    a = tensor_parallel_scaling("llama-3-8b", "h100-sxm", [2, 4, 8]).speedup
    b = tensor_parallel_scaling("llama-3-8b", "h100-pcie", [2, 4, 8]).speedup
    assert abs(a[0] - b[0]) < 0.01 * a[0] and a[1] > b[1] and a[2] > b[2]


def test_pipeline_split_sums_the_stages():
    # llama.cpp's layer split of Llama 3 70B (BF16, 141 GB) over 4 L40S (48 GiB each): memory adds up, but
    # the stages run one after another: the step is one GPU's 141.1e9 B / 864 GB/s = 163 ms plus 3
    # hand-offs (6.6 + 3.0 + 16 KB / 32 GB/s = 10.1 us each); tensor parallel would be 163 / 4 ms.
    l40s = rl.get_gpu("l40s")
    pipe = rl.decode_step(
        "llama-3-70b", "l40s", num_gpus=4, parallelism="pipeline", include_communication=True, memory="ideal"
    )
    tensor = rl.decode_step("llama-3-70b", "l40s", num_gpus=4, memory="ideal")
    read = float(rl.weight_bytes_read("llama-3-70b", "bf16", 1))
    hand_off = 6.6e-6 + 3.0e-6 + 8192 * 2 / (l40s.interconnect_bytes_per_s / 2)
    assert pipe.step_time_s == pytest.approx(read / l40s.memory_bandwidth_bytes_per_s + 3 * hand_off)
    assert pipe.step_time_s == pytest.approx(4 * tensor.step_time_s, rel=1e-3)


def test_tensor_parallel_communication_in_prefill():
    # A 4,000-token prompt of Llama 3 70B on 2 H100s: 160 all-reduces of 4,000 x 8,192 x 2 B = 65.5 MB,
    # each 7.8 us + 1 x 65.5 MB / 450 GB/s = 145.6 us: 23.3 ms on top of the ideal prefill.
    p = rl.prefill(
        "llama-3-70b", "h100-sxm", 4000, num_gpus=2, weight_precision="fp8", include_communication=True
    )
    msg = 4000 * 8192 * 2
    assert p.communication_time_s == pytest.approx(160 * (7.8e-6 + msg / 450e9))


def test_expert_parallel_all_to_all():
    # DeepSeek-V3, 256 tokens over 8 GPUs on NVLink: per MoE layer two all-to-alls, each
    # 6.6 + 7 x 0.6 = 10.8 us + 32 tokens x 8 experts x 7,168 x 2 B x 7/8 = 3.21 MB / 450 GB/s = 7.14 us;
    # 58 MoE layers x 2 x 17.94 us = 2.08 ms.
    sent = 32 * 8 * 7168 * 2 * 7 / 8
    assert parallel.all_to_all_time_s("deepseek-v3", 256, 8, 900e9) == pytest.approx(
        58 * 2 * (10.8e-6 + sent / 450e9)
    )
    assert parallel.all_to_all_time_s("llama-3-8b", 256, 8, 900e9) == 0.0


def test_vectorized_over_gpu_counts_and_links():
    t = parallel.allreduce_time_s(np.array([0.0, 1e6]), np.array([[1], [2], [8]]), 900e9)
    assert t.shape == (3, 2) and (t[0] == 0).all() and (t[2] > t[1]).all()


def test_fits_counts_replicated_kv_like_the_step():
    # DeepSeek-V3 (FP8 block, 673.15 GB) on 8 H200s (141 GiB each): the MLA latent is held by all 8 GPUs.
    b = int(rl.max_batch("deepseek-v3", "h200", 32768, num_gpus=8, weight_precision="fp8-block128"))
    per_user = 8 * 32768 * 70_272
    free = 8 * (141 * GIB * 0.98975 * 0.9 - 4.93 * GIB) - rl.weight_bytes("deepseek-v3", "fp8-block128")
    assert b == int(free // per_user)
    kw = dict(num_gpus=8, weight_precision="fp8-block128")
    assert rl.decode_step("deepseek-v3", "h200", b, 32768, **kw).fits
    with pytest.raises(rl.DoesNotFitError):
        rl.decode_step("deepseek-v3", "h200", b + 1, 32768, **kw)
