"""Lesson 25: a one-at-a-time queue against continuous batching (roofline.lessons.serving)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.errors import InvalidConfigurationError
from roofline.lessons.batching.lab import QueueVsBatching, serving_explorer, serving_readout
from roofline.lessons.batching.numbers import (
    gpu_upgrade_vs_batching,
    serve_continuous_batching,
    serve_one_at_a_time,
)
from roofline.scenario import Scenario

W8B = 16.060522496e9  # Llama 3 8B BF16 weight bytes
ROW = 4096 * 2  # one embedding row: a decode step looks up one per user, not the 1,050,673,152-byte table
W_READ = W8B - 128_256 * 4096 * 2  # bytes a step reads besides the rows: 15,009,849,344
BW = 3.35e12  # H100 SXM bytes/s
KV = 131072  # bytes per token


def test_card_twenty_users_queue_for_about_forty_seconds():
    q = serve_one_at_a_time("llama-3-8b", "h100-sxm", 20, 400, context_tokens=0)
    step = (W_READ + ROW) / BW  # 4.48 ms (the card's 4.8 ms reads the whole embedding table)
    assert q.step_time_s == pytest.approx(step)
    # the last of 20 requests ends after 20 x 400 x 4.48 ms = 35.8 s (the card: 20 x 400 x 4.8 ms = 38 s)
    assert q.finish_last_s == pytest.approx(20 * 400 * step)
    assert round(q.finish_last_s) == 36
    # it starts after 19 requests and gets its first token one step later
    assert q.wait_last_s == pytest.approx(19 * 400 * step + step)
    # mean finish = (1 + 2 + ... + 20) / 20 requests = 10.5 requests
    assert q.finish_mean_s == pytest.approx(10.5 * 400 * step)
    assert q.tokens_per_s_total == pytest.approx(1 / step)


def test_continuous_batching_shares_the_weight_read():
    b = serve_continuous_batching("llama-3-8b", "h100-sxm", 20, 400, context_tokens=1000, prompt_tokens=0)
    # (15.01 GB + 20 rows + 20 x 1,000 x 128 KiB = 2.62 GB) / 3.35 TB/s = 5.26 ms per step, 400 steps
    step = (W_READ + 20 * ROW + 20 * 1000 * KV) / BW
    assert b.step_time_s == pytest.approx(step)
    assert b.finish_last_s == pytest.approx(400 * step) and b.finish_mean_s == b.finish_last_s
    assert b.tokens_per_s_total == pytest.approx(20 / step)
    assert b.wait_last_s == pytest.approx(step)


def test_vectorized_over_users():
    users = np.array([1, 2, 10, 100])
    q = serve_one_at_a_time("llama-3-8b", "h100-sxm", users, 100, 500)
    b = serve_continuous_batching("llama-3-8b", "h100-sxm", users, 100, 500)
    assert q.finish_last_s.shape == users.shape == b.finish_last_s.shape
    assert q.finish_last_s[0] == pytest.approx(b.finish_last_s[0])  # one user: same thing
    assert np.all(np.diff(b.tokens_per_s_total) > 0)


def test_batch_that_does_not_fit_has_no_time():
    # 8B: (71.22 GB the engine leaves of 80 GiB − 16.06 GB) / (32,768 x 128 KiB = 4.29 GB per user) = 12.8:
    # 12 users at most
    b = serve_continuous_batching("llama-3-8b", "h100-sxm", [12, 13], 100, 32768)
    assert b.fits.tolist() == [True, False]
    assert np.isfinite(b.finish_last_s[0]) and np.isnan(b.finish_last_s[1])


def test_bigger_gpu_does_not_fix_a_queue():
    r = gpu_upgrade_vs_batching("llama-3-8b", 20, 400, 1000)
    # H200: 4.8 TB/s instead of 3.35 speeds the 399 decode steps by 1.43x, and not the compute-bound prefill
    # of each 1,000-token prompt (same tensor cores): under 1.43x in all; batching is ~15x
    p1, p2 = (rl.prefill("llama-3-8b", g, 1000).step_time_s for g in ("h100-sxm", "h200"))
    s1, s2 = (rl.decode_step("llama-3-8b", g, 1, 1000).step_time_s for g in ("h100-sxm", "h200"))
    assert s1 / s2 == pytest.approx(4.8 / 3.35)
    ratio = r["one at a time"] / r["one at a time, bigger GPU"]
    assert ratio == pytest.approx((p1 + 399 * s1) / (p2 + 399 * s2)) and ratio < 4.8 / 3.35
    assert r["batched"] < r["one at a time, bigger GPU"] / 10


def test_bad_inputs():
    with pytest.raises(InvalidConfigurationError):
        serve_one_at_a_time("llama-3-8b", "h100-sxm", 0, 100)
    with pytest.raises(InvalidConfigurationError):
        serve_continuous_batching("llama-3-8b", "h100-sxm", 2.5, 100)
    with pytest.raises(InvalidConfigurationError):
        serve_continuous_batching("llama-3-8b", "h100-sxm", 2, 0)


@settings(max_examples=80, deadline=None)
@given(
    users=st.integers(1, 300),
    n=st.integers(1, 2000),
    context=st.integers(0, 8192),
    gpu=st.sampled_from(["h100-sxm", "a100-80gb-sxm", "h200", "l40s"]),
)
def test_batching_never_finishes_later_and_never_makes_fewer_tokens(users, n, context, gpu):
    q = serve_one_at_a_time("llama-3-8b", gpu, users, n, context)
    b = serve_continuous_batching("llama-3-8b", gpu, users, n, context)
    if b.fits:
        assert b.finish_last_s <= q.finish_last_s * (1 + 1e-12)
        assert b.tokens_per_s_total >= q.tokens_per_s_total * (1 - 1e-12)
        # With the prefill in the first token, the first user in the queue may get its token sooner alone;
        # but everyone's first token comes before the last queued user's (U prompts in one pass ≤ U passes).
        assert b.wait_last_s <= q.wait_last_s * (1 + 1e-12)


def test_batched_time_to_first_token_includes_the_prefill():
    # 20 users with 1,000-token prompts: the 20 prompts
    # are prefilled in one pass first. The layers' matmuls alone (8,030,261,248 parameters minus the embedding
    # and the LM head, 2 × 128,256 × 4,096 = 1,050,673,152, which a prompt token does not multiply) take
    # 20 × 1,000 tokens × 2 × 6,979,588,096 FLOP ÷ 989e12 FLOP/s = 0.282 s.
    b = serve_continuous_batching("llama-3-8b", "h100-sxm", 20, 400, 1000)
    lower = 20 * 1000 * 2 * (8_030_261_248 - 2 * 128_256 * 4096) / 989e12  # 0.2823 s
    assert b.wait_last_s >= lower
    assert b.wait_last_s == pytest.approx(rl.prefill("llama-3-8b", "h100-sxm", 1000, batch=20).step_time_s)
    assert b.finish_last_s == pytest.approx(b.wait_last_s + 399 * b.step_time_s)  # then 399 decode steps
    # No prompt (P = 0): the first token is one decode step.
    b0 = serve_continuous_batching("llama-3-8b", "h100-sxm", 20, 400, 1000, prompt_tokens=0)
    assert b0.wait_last_s == pytest.approx(b0.step_time_s) and b0.finish_last_s == pytest.approx(
        400 * b0.step_time_s
    )
    # One at a time: the i-th user waits i × (prefill + 399 steps) + its own prefill.
    q = serve_one_at_a_time("llama-3-8b", "h100-sxm", 20, 400, 1000)
    one = rl.prefill("llama-3-8b", "h100-sxm", 1000).step_time_s
    assert q.wait_last_s == pytest.approx(19 * (one + 399 * q.step_time_s) + one)


def test_figure_and_explorer():
    fig = QueueVsBatching(Scenario(context_tokens=32768), users=20, output_tokens=400)
    assert len(fig.png()) > 5_000
    ex = serving_explorer()
    ex.set(users=64, output_tokens=100, context_tokens=500)
    assert ex.live.options == {"users": 64, "output_tokens": 100, "engine": "vllm"}
    assert "batched: everyone done" in ex.readout.value
    # the engine column describes the lesson's case: the batched server's step of all 64 users
    assert "the batched server: one decode step of 64 users at 500 tokens each" in ex.readout.value
    step = serve_continuous_batching("llama-3-8b", "h100-sxm", 64, 100, 500).step_time_s
    assert f'data-key="step time"><b>{step * 1e3:.2f} ms' in ex.readout.value
    assert "does not fit" in serving_readout(
        Scenario(context_tokens=32768), {"users": 100, "output_tokens": 10}
    )


def test_readout_prices_both_policies_and_the_first_token():
    from roofline.scenario import Scenario

    html = serving_readout(Scenario(usd_per_gpu_hour=3.0), {"users": 20, "output_tokens": 400})
    b = serve_continuous_batching("llama-3-8b", "h100-sxm", 20, 400, 1000)
    # $3 / (tokens/s × 3,600) × 1e6 for each policy's GPU output
    assert f"${3 / (b.tokens_per_s_total * 3600) * 1e6:.2f}" in html
    assert "one at a time: cost per 1M tokens" in html and "batched: first token" in html
