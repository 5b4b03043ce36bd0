"""Chunked prefill (lesson 44): mixed steps, the prompt-arrival timeline and the chunk-size trade-off."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.lessons.chunked_prefill.lab import (
    ChunkTradeoffChart,
    PrefillTimeline,
    chunk_explorer,
    chunk_readout,
)
from roofline.lessons.chunked_prefill.numbers import (
    ChunkScenario,
    chunk_size_tradeoff,
    chunk_tradeoff_under_arrivals,
    prompt_arrival_timeline,
)
from roofline.physics.step import mixed_step
from roofline.scenario import Scenario

M, G = "llama-3-8b", "h100-sxm"
BW, PEAK = 3.35e12, 989e12
N = rl.parameter_count(M)  # 8,030,261,248 parameters
VD = 128_256 * 4096  # embedding (and LM head) parameters: 525,336,576
ROW = 4096 * 2  # one embedding row looked up per token, bytes
W = rl.weight_bytes(M)  # 2 bytes each: 16.06 GB
KV = 128 * 1024  # bytes per token


def test_mixed_step_by_hand():
    # 30 decoders at T=1000 plus a 256-token chunk after 512 done, no attention terms. Each of the 286
    # tokens multiplies the layers (N − 2·V·d parameters); the LM head runs for the 30 decoders and once
    # for the chunk: FLOPs = 286 × 2 × 6,979,588,096 + 31 × 2 × 525,336,576 = 4.025e12. Bytes: the
    # weights but the embedding table (W − 2·V·d), 286 looked-up rows, (30 × 1000 + 512 + 256) × KV.
    s = mixed_step(M, G, 30, 1000, 256, 512, include_attention=False)
    assert s.flops == pytest.approx(286 * 2 * (N - 2 * VD) + 31 * 2 * VD)
    moved = W - 2 * VD + 286 * ROW + 30_768 * KV
    assert s.bytes_moved == pytest.approx(moved)
    # memory 19.05 GB / 3.35 TB/s = 5.685 ms > compute 4.025e12 / 989e12 = 4.070 ms
    assert s.step_time_s == pytest.approx(moved / BW)
    assert s.binding == "memory"


def test_mixed_step_with_attention_by_hand():
    # Attention: decoders 30 × 4·32·32·128·1000; chunk 4·32·32·128·(256·512 + 256·255/2)
    per_pair = 4 * 32 * 32 * 128
    s = mixed_step(M, G, 30, 1000, 256, 512)
    expect = 286 * 2 * (N - 2 * VD) + 31 * 2 * VD + per_pair * (30 * 1000 + 256 * 512 + 256 * 255 / 2)
    assert s.flops == pytest.approx(expect)


def test_whole_prompt_alone_equals_prefill():
    for p in (1, 500, 8000):
        alone = mixed_step(M, G, 0, 0, p)
        ref = rl.prefill(M, G, p)
        assert alone.flops == pytest.approx(ref.flops)
        assert alone.bytes_moved == pytest.approx(ref.bytes_moved)
        assert alone.step_time_s == pytest.approx(ref.step_time_s)


def test_decode_only_step_equals_decode_step():
    s = mixed_step(M, G, [1, 32, 64], [0, 1000, 4096], 0)
    ref = rl.decode_step(M, G, [1, 32, 64], [0, 1000, 4096])
    np.testing.assert_allclose(s.step_time_s, ref.step_time_s)


def test_empty_step_takes_no_time():
    assert mixed_step(M, G, 0, 1000, 0).step_time_s == 0.0


def test_chunks_sum_to_whole_attention():
    # 8000 = 3000 + 3000 + 2000: chunk i attends to its prefix S and causally to itself
    parts = sum(
        mixed_step(M, G, 0, 0, c, s).attention_flops for c, s in ((3000, 0), (3000, 3000), (2000, 6000))
    )
    assert parts == pytest.approx(rl.causal_attention_flops(M, 8000))


def test_card_8000_token_paste():
    # The card: 2 × 8e9 × 8000 / 989e12 ≈ 130 ms; 130 / 4.8 ≈ 27 steps missed by a batch-1 decoder.
    # Without attention the library's prefill is (2 × 6.98e9 × 8000 + 2 × 525.3e6) / 989e12 = 112.9 ms (no
    # lookup FLOPs, the LM head once), 112.9 / 4.48 = 25.2 steps; with attention 130 ms, lesson 15's freeze.
    t = prompt_arrival_timeline(
        Scenario(batch=1, context_tokens=0, prompt_tokens=8000), include_attention=False
    )
    assert t.ttft_s == pytest.approx((2 * (N - 2 * VD) * 8000 + 2 * VD) / PEAK)
    assert round(t.stalled_steps) == 25
    assert t.stalled_steps == pytest.approx(rl.stalled_decode_steps(t.ttft_s, t.normal_gap_s))
    exact = prompt_arrival_timeline(Scenario(batch=1, context_tokens=0, prompt_tokens=8000))
    assert round(exact.ttft_s * 1e3) == 130


def test_unchunked_gap_is_prefill_plus_one_step():
    t = prompt_arrival_timeline(Scenario(batch=30, context_tokens=1000, prompt_tokens=8000))
    # the decoders' token before the prompt, then the prefill alone, then one step at B + 1 = 31
    after = rl.decode_step(M, G, 31, 1000).step_time_s
    assert t.worst_gap_s == pytest.approx(rl.prefill(M, G, 8000).step_time_s + after)
    assert t.prefill_steps == 1 and t.decoders_in_step[4] == 0


def test_chunked_timeline_structure():
    t = prompt_arrival_timeline(
        Scenario(batch=30, context_tokens=1000, prompt_tokens=8000),
        chunk_tokens=3000,
        steps_before=2,
        steps_after=3,
    )
    # chunks 3000, 3000, 2000 between 2 steps before and 3 after
    assert t.prompt_tokens_in_step.tolist() == [0, 0, 3000, 3000, 2000, 0, 0, 0]
    assert t.decoders_in_step.tolist() == [30, 30, 30, 30, 30, 31, 31, 31]
    assert t.step_start_s[2] == pytest.approx(0.0, abs=1e-12)
    assert t.ttft_s == pytest.approx(t.step_time_s[2:5].sum())
    assert t.worst_gap_s == pytest.approx(t.step_time_s[2:5].max())


def test_chunking_trades_ttft_for_gap():
    base = prompt_arrival_timeline(Scenario(batch=30, context_tokens=1000, prompt_tokens=8000))
    ch = prompt_arrival_timeline(
        Scenario(batch=30, context_tokens=1000, prompt_tokens=8000), chunk_tokens=512
    )
    assert ch.worst_gap_s < base.worst_gap_s / 10
    assert ch.ttft_s > base.ttft_s


PASTE = Scenario(batch=30, context_tokens=1000, prompt_tokens=8000)


def test_tradeoff_matches_timeline_and_broadcasts():
    chunks = np.array([64, 512, 3000])
    r = chunk_size_tradeoff(PASTE, chunks)
    for i, c in enumerate(chunks):
        t = prompt_arrival_timeline(PASTE, int(c))
        assert r.ttft_s[i] == pytest.approx(t.ttft_s)
        assert r.worst_gap_s[i] == pytest.approx(t.worst_gap_s)
    assert r.prefill_steps.tolist() == [125, 16, 3]  # ceil(8000 / C)
    assert chunk_size_tradeoff(PASTE, [[64], [512]]).ttft_s.shape == (2, 1)


def test_tradeoff_masks_what_does_not_fit():
    assert chunk_size_tradeoff(PASTE.with_(batch=10, context_tokens=4096), 512).fits
    r = chunk_size_tradeoff(PASTE.with_(batch=1000, context_tokens=4096), 512)
    assert not r.fits and np.isnan(r.ttft_s)
    with pytest.raises(rl.DoesNotFitError):
        prompt_arrival_timeline(PASTE.with_(batch=1000, context_tokens=4096), 512)


def test_bad_inputs():
    with pytest.raises(rl.InvalidConfigurationError):
        chunk_size_tradeoff(PASTE, 0)
    with pytest.raises(rl.InvalidConfigurationError):
        prompt_arrival_timeline(PASTE.with_(batch=0))
    with pytest.raises(rl.InvalidConfigurationError):
        mixed_step(M, G, -1, 1000, 10)
    with pytest.raises(rl.InvalidConfigurationError):
        chunk_size_tradeoff(PASTE.with_(prompt_tokens=10_000_000), 1)  # ten million steps: refuse the grid


@settings(max_examples=60, deadline=None)
@given(b=st.integers(1, 64), p=st.integers(1, 20_000), c=st.integers(16, 20_000))
def test_chunking_never_beats_the_work(b, p, c):
    r = chunk_size_tradeoff(PASTE.with_(batch=b, prompt_tokens=p), c)
    alone = rl.prefill(M, G, p, on_overflow="ignore").step_time_s  # prompts beyond the window, as the lesson
    # Total prompt FLOPs are the same however they are cut, so TTFT ≥ the prompt's compute time;
    # and every decoder's worst gap is at least a normal step and at most the unchunked gap's prefill + step.
    assert r.ttft_s >= rl.prefill(M, G, p, on_overflow="ignore").compute_time_s * (1 - 1e-9)
    assert r.normal_gap_s <= r.worst_gap_s
    if c >= p:
        assert r.prefill_steps == 1 and r.ttft_s >= alone * (1 - 1e-9)


@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 64), p=st.integers(100, 20_000))
def test_smaller_chunks_never_raise_the_worst_gap_much(b, p):
    # The worst gap grows with C (a bigger chunk is more work in one step), up to rounding of the last chunk.
    r = chunk_size_tradeoff(PASTE.with_(batch=b, prompt_tokens=p), [64, 256, 1024, 4096])
    assert np.all(np.diff(r.worst_gap_s) >= -1e-4)


def test_figures_and_explorer_render():
    s = ChunkScenario(batch=30, prompt_tokens=8000, chunk_tokens=512)
    for fig_cls in (PrefillTimeline, ChunkTradeoffChart):
        fig = fig_cls(s)
        assert len(fig.png()) > 5_000
        fig.update(s.with_(batch=1000, context_tokens=4096))  # does not fit: still draws, with the label
        assert len(fig.png()) > 5_000
    assert (
        "TTFT" in chunk_readout(s)
        and "does not fit" in chunk_readout(s.with_(batch=1000, context_tokens=4096)).lower()
    )
    ex = chunk_explorer(s)
    ex.set(chunk_tokens=128, prompt_tokens=16000)
    assert ex.scenario.chunk_tokens == 128 and ex.scenario.prompt_tokens == 16000


def test_chunk_size_tradeoff_under_random_arrivals():
    # The same Poisson load (6 requests/s, lognormal prompts of mean 2,000 tokens) for each chunk size.
    r = chunk_tradeoff_under_arrivals("llama-3-8b", "h100-sxm", (64, 512, None), requests=200)
    assert r.chunk_tokens.tolist() == [64, 512, 0]
    # unchunked prompts freeze the streams: the inter-token tail grows
    assert r.tpot_p99_s[2] > 1.2 * r.tpot_p99_s[1]
    # tiny chunks re-read the weights for every 64 prompt tokens: prompts wait longer for their first token
    assert r.ttft_p99_s[0] > 1.5 * r.ttft_p99_s[1]
    # the floor: no TPOT below the batch-1 decode step (weights ÷ bandwidth)
    assert np.all(r.tpot_p50_s >= rl.decode_step("llama-3-8b", "h100-sxm").step_time_s * (1 - 1e-9))


def test_a_figure_first_drawn_for_a_scenario_that_does_not_fit_says_so():
    # 70B in BF16 on one H100: its 141 GB of weights do not fit, so the figures show the overlay, not an error
    from roofline.course.figures import alt_text
    from roofline.lessons.chunked_prefill import lab

    big = Scenario(model="llama-3-70b")
    for figure in (lab.PrefillTimeline, lab.ChunkTradeoffChart):
        assert "does not fit" in alt_text(figure(big))
