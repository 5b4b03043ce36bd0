"""Golden tests: every figure on the study card (Pack 01, Q1–Q7 and follow-ups), reproduced by library calls.

The card rounds: it calls Llama 3 8B "8 B parameters, 16 GB" and its KV "128 KB per token". Where a figure
needs those round inputs, the test says so and uses the plain-number functions; it also checks the
exact-architecture figure from the tables, which rounds to the same value unless noted.

Two simplifications of the card that the exact engine does not make, named where they
change a figure:
- "the card counts the whole embedding table": a decode step reads the weights minus the 128,256 x 4,096
  input table, of which it gathers one row per token: 15.01 GB for Llama 3 8B, not 16.06 GB (4.48 ms, not
  4.8 ms; 223 tok/s, not 209);
- "the card's 2 x N per token": the embedding lookup is not a matmul, and a prefill computes logits for
  its last token only, so a prompt token costs 2 x 6.98e9 FLOP, not 2 x 8.03e9.
"""

import math

import pytest

import roofline as rl

H100 = rl.get_gpu("h100-sxm")
BW = H100.memory_bandwidth_bytes_per_s  # 3.35e12 bytes/s
PEAK = H100.dense_flops_per_s["bf16"]  # 989e12 FLOP/s, dense
CARD_WEIGHTS = 16e9  # "8B in BF16 is 16 GB"
CARD_KV = 128e3  # "128 KB per token" (decimal, as the card's 4.1 GB implies)


def ms(seconds):
    return seconds * 1e3


# Q1 -------------------------------------------------------------------------------------------------------
def test_q1_decode_floor_and_ceiling():
    floor = rl.decode_floor_s(CARD_WEIGHTS, BW)
    assert round(ms(floor), 1) == 4.8
    assert round(1 / floor, -1) == 210  # 209 tok/s: the card's "≈ 200", so 300 cannot be promised
    assert 1 / floor < 300 and 2000 > 1 / floor
    # Exact: the card counts the whole embedding table. (8,030,261,248 - 525,336,576 + 4,096 gathered)
    # x 2 bytes = 15.01 GB / 3.35 TB/s = 4.48 ms, 223 tok/s.
    exact = rl.decode_step("llama-3-8b", "h100-sxm", batch=1, context_tokens=0)
    assert exact.step_time_s == pytest.approx((8_030_261_248 - 525_336_576 + 4096) * 2 / BW)
    assert round(ms(exact.step_time_s), 1) == 4.5 and round(1 / exact.step_time_s) == 223
    assert exact.binding == "memory"


def test_q1_followup_70b_fp8_on_two_h100s():
    floor = rl.decode_floor_s(70e9, 2 * BW)  # card: "70 GB", bandwidths add to 6.7 TB/s
    assert round(ms(floor), 1) == 10.4
    assert round(100 * rl.mbu(70e9, 14e-3, 2 * BW)) == 75  # 10.45 / 14 = 74.6%: the card's "≈ 74%"
    assert math.floor(100 * floor / 14e-3) == 74
    # Exact: FP8 matmul weights (68.45e9 x 1 byte), the LM head in BF16 (1.05e9 x 2), one embedding row:
    # 69.5 + 2.1 ... = 70.55 GB over 6.7 TB/s = 10.5 ms (the 1.05 GB BF16 head replaces the table's bytes).
    exact = rl.decode_step("llama-3-70b", "h100-sxm", num_gpus=2, weight_precision="fp8")
    assert round(ms(exact.step_time_s), 1) == 10.5


# Q2 -------------------------------------------------------------------------------------------------------
def test_q2_prefill_500_tokens_is_about_two_decode_steps():
    flops = rl.prefill_flops(8e9, 500)
    assert flops == pytest.approx(8e12)
    assert round(ms(rl.compute_time_s(flops, PEAK))) == 8
    assert 1.5 < rl.compute_time_s(flops, PEAK) / rl.decode_floor_s(CARD_WEIGHTS, BW) < 2.0  # "about 2x"
    # Exact: the card's 2 x N per token. Matmul weights per token 8.03e9 - 2 x 0.525e9 = 6.98e9, the LM
    # head once (last token): 2 x 6.98e9 x 500 + 2 x 0.525e9 = 6.98e12 FLOP / 989e12 = 7.06 ms.
    exact = rl.prefill("llama-3-8b", "h100-sxm", 500, include_attention=False)
    assert exact.step_time_s == pytest.approx((2 * 6_979_588_096 * 500 + 2 * 525_336_576) / PEAK)
    assert round(ms(exact.step_time_s)) == 7 and exact.binding == "compute"
    assert 1.5 < exact.step_time_s / rl.decode_step("llama-3-8b", "h100-sxm").step_time_s < 2.0
    assert round(ms(rl.prefill("llama-3-8b", "h100-sxm", 500).step_time_s)) == 7  # attention adds < 1%


def test_q2_8000_token_paste_freezes_streams():
    flops = rl.prefill_flops(8e9, 8000)
    assert flops == pytest.approx(1.28e14)  # "≈ 1.3 x 10^14"
    t = rl.compute_time_s(flops, PEAK)
    assert round(ms(t), -1) == 130
    assert round(rl.stalled_decode_steps(t, rl.decode_floor_s(CARD_WEIGHTS, BW))) == 27
    # Exact: two simplifications of the card cancel here. The matmuls cost less than 2 x N per token
    # (2 x 6.98e9 x 8,000 + 2 x 0.525e9 = 1.117e14 FLOP), the causal attention the 2N rule leaves out costs
    # 4 x 32 x 4096 x 8000 x 7999 / 2 = 1.677e13: 1.285e14 FLOP / 989e12 = 129.9 ms (146.9 ms if attention
    # were counted over the whole square, not its causal half).
    exact = rl.prefill("llama-3-8b", "h100-sxm", 8000)
    hand = 2 * 6_979_588_096 * 8000 + 2 * 525_336_576 + 4 * 32 * 4096 * 8000 * 7999 / 2
    assert exact.step_time_s == pytest.approx(hand / PEAK)
    assert round(ms(exact.step_time_s)) == 130
    assert round(rl.stalled_decode_steps(exact.step_time_s, 4.8e-3)) == 27


def test_q2_followup_ridge_point():
    assert round(rl.ridge_point_flop_per_byte(PEAK, BW)) == 295
    assert rl.arithmetic_intensity_flop_per_byte(2 * 8e9, CARD_WEIGHTS) < 295  # decode: memory-bound
    assert rl.arithmetic_intensity_flop_per_byte(2 * 8e9 * 500, CARD_WEIGHTS) > 295  # prefill: compute


# Q3 -------------------------------------------------------------------------------------------------------
def test_q3_32_users_is_not_32x_slower():
    kv = rl.kv_cache_bytes(32, 1000, CARD_KV)
    assert round(kv / 1e9, 1) == 4.1
    step = rl.batched_step_time_s(CARD_WEIGHTS, 32, 1000, CARD_KV, BW)
    assert round(ms(step), 1) == 6.0
    assert round(1 / step) == 167
    assert round(32 / step, -2) == 5300
    floor = rl.decode_floor_s(CARD_WEIGHTS, BW)
    assert round(ms(step), 1) / round(ms(floor), 1) == 1.25  # 6.0 / 4.8: each user 25% slower, not 32x
    assert step / floor == pytest.approx(1.25, abs=0.01)
    assert 25 <= (32 / step) / (1 / floor) <= 26  # 32 / 1.25 = 25.6: "≈ 25x", not 32x
    # Exact: the card counts the whole embedding table. (15.01 GB + 32 x 1000 x 128 KiB = 4.19 GB)
    # / 3.35 TB/s = 5.73 ms, 174 tok/s per user, 5,582 in all; still 1.28x the 4.48 ms floor, not 32x.
    exact = rl.decode_step("llama-3-8b", "h100-sxm", batch=32, context_tokens=1000)
    assert round(ms(exact.step_time_s), 2) == 5.73
    assert 170 < exact.tokens_per_s_per_user < 180 and 5500 < exact.tokens_per_s_total < 5700


def test_q3_llama_3_8b_kv_is_128_kib_per_token():
    assert rl.kv_bytes_per_token("llama-3-8b", "bf16") == 128 * 1024


def test_q3_followup_one_at_a_time_server_queue():
    # 20 requests served one after another: the last waits for the 19 before it. The card's 40 s wait for
    # 20 users means ~2 s per request, e.g. 400 tokens at the batch-1 ceiling (~200 tok/s).
    per_request = 400 * rl.decode_floor_s(CARD_WEIGHTS, BW)
    assert round(20 * per_request) == 38  # ≈ 40 s


# Q4 -------------------------------------------------------------------------------------------------------
def test_q4_decode_turns_compute_bound_near_batch_300():
    step = rl.decode_step("llama-3-8b", "h100-sxm", batch=[256, 290, 300], context_tokens=0)
    assert step.binding.tolist() == ["memory", "memory", "compute"]  # flip at B ≈ ridge ≈ 296
    intensity = rl.decode_step("llama-3-8b", "h100-sxm", batch=64).arithmetic_intensity_flop_per_byte
    assert intensity == pytest.approx(64, rel=0.01)  # intensity ≈ batch for BF16 weights


def test_q4_long_context_keeps_decode_memory_bound():
    long = rl.decode_step("llama-3-8b", "h100-sxm", batch=100, context_tokens=4096)
    assert long.binding == "memory" and long.arithmetic_intensity_flop_per_byte < 40


# Q5 -------------------------------------------------------------------------------------------------------
def test_q5_mbu_from_a_6ms_step():
    assert round(rl.achieved_bandwidth_bytes_per_s(CARD_WEIGHTS, 6e-3) / 1e12, 1) == 2.7
    assert round(rl.mbu(CARD_WEIGHTS, 6e-3, BW), 2) == 0.80
    assert rl.mfu(2 * 8e9, 6e-3, PEAK) < 0.01  # compute nearly idle


# Q6 -------------------------------------------------------------------------------------------------------
def test_q6_cost_per_million_tokens():
    one = rl.cost_per_million_tokens_usd(3.0, 200)
    batched = rl.cost_per_million_tokens_usd(3.0, 4300)
    assert round(one, 2) == 4.17 and round(batched, 2) == 0.19
    assert round(one / batched) == 22  # 21.5: the card's "about 21x"
    assert round(rl.tokens_per_hour(4300) / 1e6, 1) == 15.5
    assert rl.seconds_per_million_tokens(200) == 5000  # not 500: the power-of-ten trap


def test_q6_followup_64_users_at_4096_tokens():
    kv = rl.kv_cache_bytes(64, 4096, 128 * 1024)  # here the card's "≈ 34 GB" uses 128 KiB
    assert round(kv / 1e9) == 34
    # Exact (the card counts the whole embedding table): (15.01 GB + 64 x 4096 x 128 KiB = 34.36 GB)
    # / 3.35 TB/s = 14.74 ms: 67.9 tok/s per user, 4,343 in all.
    step = rl.decode_step("llama-3-8b", "h100-sxm", batch=64, context_tokens=4096)
    assert round(ms(step.step_time_s)) == 15
    assert round(step.tokens_per_s_per_user) == 68
    assert round(step.tokens_per_s_total, -2) == 4300
    # $3 / (4,343 x 3,600 / 1e6) = $0.19 per million, the card's figure.
    assert round(rl.cost_per_million_tokens_usd(3.0, step.tokens_per_s_total), 2) == 0.19


# Q7 -------------------------------------------------------------------------------------------------------
def test_q7_launch_overhead_is_a_quarter_of_the_step():
    overhead = rl.launch_overhead_s(300, 4e-6)
    assert round(ms(overhead), 1) == 1.2
    assert round(overhead / 4.8e-3, 2) == 0.25


def test_q7_amdahl():
    assert round(rl.amdahl_speedup(0.3, 3), 2) == 1.25
    assert round(rl.amdahl_ceiling(0.3), 2) == 1.43
    assert rl.amdahl_new_time_fraction([0.3, 0.5], [3, 2]) == pytest.approx(0.55)
    assert round(rl.amdahl_speedup([0.3, 0.5], [3, 2]), 1) == 1.8
    assert rl.amdahl_speedup([0.3, 0.5], [3, 2]) < 3 + 2  # speedups never add
