"""roofline.lessons.phases: prefill vs decode, the stall of streaming users, batching gain, ridge tables
(lessons 04,
15, 16). Expected values are derived by hand in the comments."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.lessons.prefill_vs_decode.lab import (
    PrefillVsPrompt,
    StallTimeline,
    prefill_readout,
    stall_readout,
)
from roofline.lessons.prefill_vs_decode.numbers import paste_fits, prefill_stall
from roofline.lessons.roofline.lab import ridge_table, roofline_readout
from roofline.lessons.roofline.numbers import bytes_over_flops_trap, ridge_points, throughput_tokens_per_s
from roofline.lessons.step_time.numbers import batching_gain, per_user_slowdown
from roofline.physics.balance import prefill_crossover_prompt_tokens
from roofline.scenario import Scenario

N_8B = rl.parameter_count("llama-3-8b")  # 8,030,261,248 parameters
PEAK = 989e12  # H100 dense BF16, FLOP/s
BW = 3.35e12  # H100 HBM3, bytes/s
KV = 131072  # Llama 3 8B BF16 KV bytes per token (128 KiB)
VD = 128_256 * 4096  # Llama 3 8B embedding (and LM head) parameters, 525,336,576 each
N_MM = N_8B - 2 * VD  # parameters a prompt token multiplies: 6,979,588,096 (no lookup, no LM head)
W_READ = 2 * N_8B - 2 * VD  # bytes a step reads besides embedding rows: 15,009,849,344
ROW = 4096 * 2  # one embedding row, bytes


def test_crossover_without_attention_matches_hand_formula():
    # A prompt token multiplies N_MM = N − 2·V·d parameters; the LM head runs once (2·V·d FLOPs); the step
    # reads W_READ bytes plus P embedding rows and writes P tokens of KV:
    # (2·N_MM·P + 2·V·d)/peak > (W_READ + P·(row + KV))/BW
    #   ⇔ P > (W_READ/BW − 2·V·d/peak) / (2·N_MM/peak − (row + KV)/BW) = 318.3 → smallest integer 319
    exact = (W_READ / BW - 2 * VD / PEAK) / (2 * N_MM / PEAK - (ROW + KV) / BW)
    assert 318.2 < exact < 318.4
    assert rl.prefill("llama-3-8b", "h100-sxm", 318, include_attention=False).binding == "memory"
    assert rl.prefill("llama-3-8b", "h100-sxm", 319, include_attention=False).binding == "compute"
    assert prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm", include_attention=False) == 319


def test_crossover_is_where_binding_flips():
    p = prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm")
    below, at = rl.prefill("llama-3-8b", "h100-sxm", [p - 1, p]).binding.tolist()
    assert (below, at) == ("memory", "compute")


def test_crossover_moe_is_later_than_the_dense_rule():
    # Mixtral reads all 8 experts for a long prompt (≈ 93 GB) but each token uses 2 (≈ 12.9 B active):
    # P ≈ ridge × 93.4e9 / (2 × 12.9e9) ≈ 295 × 3.6 ≈ 1,070; a dense model's rule would say 295.
    p = prefill_crossover_prompt_tokens("mixtral-8x7b", "h100-sxm")
    assert 1000 < p < 1100
    ridge = 989e12 / 3.35e12
    m = rl.get_model("mixtral-8x7b")
    rule = ridge * rl.weight_bytes(m, "bf16") / (2 * rl.active_parameter_count(m))
    assert rl.compute_bound_prompt_tokens(m, "h100-sxm") == pytest.approx(rule)
    assert 1060 < rule < 1080


def test_crossover_independent_of_gpu_count_and_scales_with_ridge():
    one = prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm")
    assert prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm", num_gpus=4) == one
    # H200: same FLOP/s, 4.8 TB/s: the same balance with BW = 4.8e12 (attention adds ~1 token of FLOPs):
    # (W_READ/4.8e12 − 2·V·d/peak) / (2·N_MM/peak − (row + KV)/4.8e12) = 222.1
    h200 = (W_READ / 4.8e12 - 2 * VD / PEAK) / (2 * N_MM / PEAK - (ROW + KV) / 4.8e12)
    assert abs(prefill_crossover_prompt_tokens("llama-3-8b", "h200") - h200) <= 2


def test_crossover_raises_when_never_compute_bound():
    with pytest.raises(rl.InvalidConfigurationError):
        prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm", max_tokens=100)


def test_stall_of_the_cards_8000_token_paste():
    # The card: 2 × 8.03e9 × 8000 / 989e12 = 129.9 ms over 16.06e9 / 3.35e12 = 4.79 ms → 27.1 steps.
    # The library, no attention: (2 × 6.98e9 × 8000 + 2 × 525.3e6) / 989e12 = 112.9 ms (no lookup FLOPs, the
    # LM head once); a batch-1 step reads 15.01e9 + one 8 KiB row: 4.48 ms → 25.2 steps.
    s = prefill_stall(Scenario(context_tokens=0, prompt_tokens=8000), include_attention=False)
    assert s.prefill_time_s == pytest.approx((2 * N_MM * 8000 + 2 * VD) / PEAK)
    assert s.decode_step_time_s == pytest.approx((W_READ + ROW) / BW)
    assert round(s.stalled_steps, 1) == 25.2
    assert round((2 * N_8B * 8000 / PEAK) / (2 * N_8B / BW), 1) == 27.1  # the card's count


def test_stall_batched_users_miss_fewer_longer_steps():
    # 30 users × 1000 tokens × 128 KiB = 3.93 GB of KV: step (15.01 + 30 rows + 3.93) / 3.35 = 5.65 ms
    # exact prefill 130 ms → 130 / 5.65 ≈ 23.0 steps (vs ≈ 28.7 at batch 1, T=1000)
    one, many = (prefill_stall(Scenario(batch=b, prompt_tokens=8000)) for b in (1, 30))
    assert many.decode_step_time_s == pytest.approx((W_READ + 30 * ROW + 30 * 1000 * KV) / BW)
    assert round(many.prefill_time_s * 1e3) == 130
    assert many.stalled_steps < one.stalled_steps
    assert round(many.stalled_steps, 1) == 23.0


def test_stall_is_nan_where_users_do_not_fit():
    s = prefill_stall(Scenario(batch=1024, context_tokens=4096, prompt_tokens=8000))
    assert np.isfinite(s.prefill_time_s) and np.isnan(s.stalled_steps)


def test_stall_rejects_bad_input():
    with pytest.raises(rl.InvalidConfigurationError):
        prefill_stall(Scenario(prompt_tokens=0))
    with pytest.raises(rl.UnknownNameError):
        prefill_stall(Scenario(gpu="h100"))


def test_batching_gain_and_slowdown_card_q3():
    # 6.0 / 4.8 = 1.25; 32 / 1.25 = 25.6
    assert per_user_slowdown(6.0e-3, 4.8e-3) == pytest.approx(1.25)
    assert batching_gain(32, 6.0e-3, 4.8e-3) == pytest.approx(25.6)
    with pytest.raises(rl.InvalidConfigurationError):
        batching_gain(0, 6e-3, 4.8e-3)
    with pytest.raises(rl.InvalidConfigurationError):
        per_user_slowdown(0, 4.8e-3)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 512), st.integers(0, 8192))
def test_batching_gain_never_exceeds_batch(batch, context):
    one = rl.decode_step("llama-3-8b", "h100-sxm", 1, context, on_overflow="mask").step_time_s
    many = rl.decode_step("llama-3-8b", "h100-sxm", batch, context, on_overflow="mask").step_time_s
    if math.isnan(many):
        return
    gain = batching_gain(batch, many, one)
    assert 1 - 1e-9 <= gain <= batch + 1e-9


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 32000), st.integers(1, 32000))
def test_longer_paste_never_stalls_less(p1, p2):
    lo, hi = sorted((p1, p2))
    short, long = (prefill_stall(Scenario(batch=8, context_tokens=500, prompt_tokens=p)) for p in (lo, hi))
    assert short.stalled_steps <= long.stalled_steps


def test_bytes_over_flops_trap_is_the_wrong_number():
    # 16e9 / 989e12 = 1.618e-5 (byte·s/FLOP): ~300x smaller than the 4.8 ms the bytes really take
    wrong = bytes_over_flops_trap(16e9, PEAK)
    assert wrong == pytest.approx(1.6178e-5, rel=1e-4)
    assert rl.memory_time_s(16e9, BW) / wrong == pytest.approx(PEAK / BW)  # off by exactly the ridge


def test_ridge_points_every_gpu():
    r = ridge_points("bf16")
    assert set(r) == set(rl.gpus())
    assert r["h100-sxm"] == pytest.approx(989 / 3.35)  # 295.2
    assert r["a100-80gb-sxm"] == pytest.approx(312 / 2.039)  # 153.0
    assert math.isnan(ridge_points("fp8")["a100-80gb-sxm"])  # Ampere has no FP8 math
    with pytest.raises(rl.UnknownNameError):
        ridge_points("float8")


def test_ridge_table_has_a_row_per_gpu():
    t = ridge_table()
    assert len(t.rows) == len(rl.gpus())
    h100 = t.rows[0]
    assert h100[0] == "NVIDIA H100 SXM5 80GB" and h100[-2:] == ["295", "591"]  # 989/3.35, 1979/3.35
    assert "—" in dict(zip(rl.gpus(), t.rows, strict=True))["a100-80gb-sxm"]
    assert "<table" in t._repr_html_()


def test_paste_fits():
    # 16.06 GB + 30 × 1000 × 131072 (3.93 GB) + 8000 × 131072 (1.05 GB) = 21 GB < 71.2 GB, what vLLM leaves
    # of 80 GiB by default (0.9 × 79.18 GiB − 4.8 − 0.13 GiB = 66.33 GiB = 71.22e9 bytes)
    assert paste_fits(Scenario(batch=30, prompt_tokens=8000))
    # 500 × 1000 × 131072 = 65.5 GB + 16.06 + 1.05 = 82.6 GB > 71.2 GB
    assert not paste_fits(Scenario(batch=420, prompt_tokens=8000))  # 55.1 + 17.1 = 72.2 GB > 71.2 GB
    assert not paste_fits(Scenario(batch=500, prompt_tokens=8000))


def test_readouts_give_numbers_or_say_it_does_not_fit():
    assert "295" in roofline_readout(Scenario())
    assert "does not fit" in roofline_readout(Scenario(model="llama-3-70b"))
    text = prefill_readout(Scenario())
    assert (
        "7.12 ms" in text
    )  # (2 × 6.98e9 × 500 + 2 × 525.3e6) / 989e12 = 7.06 ms, + attention's P² = 7.12 ms
    assert "does not fit" in prefill_readout(Scenario(model="llama-3-70b"))
    assert "23.0" in stall_readout(Scenario(batch=30, prompt_tokens=8000))
    assert "do not fit" in stall_readout(Scenario(batch=1024, context_tokens=4096, prompt_tokens=8000))


def _texts(fig):
    return [t.get_text() for t in fig._transient if hasattr(t, "get_text")]


def test_prefill_figure_marks_crossover_and_overflow():
    fig = PrefillVsPrompt(Scenario())
    # the engine's own crossover with attention (the no-attention one is 319, see above): 317
    assert any("compute-bound from P ≈ 317" in t for t in _texts(fig))
    assert any("P=500" in t and "compute-bound" in t for t in _texts(fig))
    assert len(fig.png()) > 5_000
    fig.update(Scenario(model="llama-3-70b"))  # 141 GB of weights on one 80 GB GPU
    assert any("do not fit" in t for t in _texts(fig))
    assert not any("ms" in t for t in _texts(fig))  # no time shown where it cannot run
    assert np.isnan(fig.lines["prefill"].get_ydata()).all()


def test_stall_figure_labels_the_gap_or_says_it_does_not_fit():
    fig = StallTimeline(Scenario(batch=30, prompt_tokens=8000))
    assert any("≈ 23 missed steps" in t for t in _texts(fig))
    fig.update(Scenario(batch=1024, context_tokens=4096, prompt_tokens=8000))
    assert any("does not fit" in t for t in _texts(fig))
    assert len(fig.png()) > 5_000


def test_throughput_per_user_and_total():
    # 1 / 6 ms = 166.7 tok/s each; 32 / 6 ms = 5,333 tok/s in total
    per_user, total = throughput_tokens_per_s(32, 6.0e-3)
    assert per_user == pytest.approx(1000 / 6) and total == pytest.approx(32000 / 6)
    per_user, total = throughput_tokens_per_s([1, 64], [4.8e-3, 15e-3])
    assert total.tolist() == pytest.approx([1 / 4.8e-3, 64 / 15e-3])
    with pytest.raises(rl.InvalidConfigurationError):
        throughput_tokens_per_s(32, 0)


def test_one_freeze_for_the_8000_token_paste_in_lessons_15_and_44():
    # One function, one value per quantity: lessons 15 and 44 show the same freeze.
    from roofline.lessons.chunked_prefill.numbers import prompt_arrival_timeline
    from roofline.lessons.prefill_vs_decode.numbers import paste_freeze

    f = paste_freeze()
    assert (f.prompt_tokens, f.batch, f.context_tokens) == (8000, 30, 1000)
    assert f.freeze_s == rl.prefill("llama-3-8b", "h100-sxm", 8000).step_time_s
    # lesson 44's unchunked time to first token is the same pass
    assert prompt_arrival_timeline(
        Scenario(batch=30, context_tokens=1000, prompt_tokens=8000)
    ).ttft_s == pytest.approx(f.freeze_s)
    # the card's rounding: 2 × 8,030,261,248 × 8,000 ÷ 989e12 = 129.9 ms
    assert f.card_estimate_s == pytest.approx(2 * 8_030_261_248 * 8000 / 989e12)
    assert f.steps_missed == pytest.approx(f.freeze_s / f.decode_step_s)
    assert f.batch1_steps_missed == pytest.approx(
        f.freeze_s / rl.decode_step("llama-3-8b", "h100-sxm").step_time_s
    )
