"""Speculative decoding (roofline.physics.speculative) and ``roofline speculate``: the geometric sum, the
verify step as a forward step over k + 1 tokens, the draft's cost, and the collapse at large batch."""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.apps.cli import main
from roofline.physics.speculative import (
    expected_tokens_per_step,
    speculative_collapse_batch,
    speculative_step,
)

H100_BW = 3.35e12  # bytes/s, H100 SXM HBM3
H100_BF16 = 989e12  # FLOP/s, dense BF16
KV_8B = 2 * 32 * 8 * 128 * 2  # bytes per token, Llama 3 8B in BF16: 131,072


# --- the geometric sum ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alpha", "k", "expected"),
    [
        (0.8, 4, 1 + 0.8 + 0.64 + 0.512 + 0.4096),  # 3.3616
        (0.5, 2, 1 + 0.5 + 0.25),  # 1.75
        (0.0, 7, 1.0),  # nothing accepted: the target's own token
        (1.0, 7, 8.0),  # everything accepted: k + 1
        (0.9, 0, 1.0),  # no drafts: plain decode
    ],
)
def test_expected_tokens_golden(alpha, k, expected):
    assert math.isclose(expected_tokens_per_step(alpha, k), expected, rel_tol=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1), st.integers(0, 16))
def test_expected_tokens_is_the_sum_of_powers(alpha, k):
    e = expected_tokens_per_step(alpha, k)
    assert math.isclose(e, sum(alpha**i for i in range(k + 1)), rel_tol=1e-9)
    assert 1 - 1e-12 <= e <= k + 1 + 1e-12
    # α^k (the chance the last draft survives) is not the expectation: it is below 1 whenever α < 1
    assert e >= alpha**k


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 0.99), st.floats(0, 0.99), st.integers(0, 12))
def test_expected_tokens_grows_with_acceptance_and_drafts(a1, a2, k):
    lo, hi = sorted((a1, a2))
    assert expected_tokens_per_step(lo, k) <= expected_tokens_per_step(hi, k) + 1e-12
    assert expected_tokens_per_step(hi, k) <= expected_tokens_per_step(hi, k + 1) + 1e-12


def test_expected_tokens_broadcasts_and_rejects_bad_input():
    e = expected_tokens_per_step(np.array([[0.5], [1.0]]), np.array([1, 2, 3]))
    assert e.shape == (2, 3)
    assert e[0].tolist() == [1.5, 1.75, 1.875] and e[1].tolist() == [2.0, 3.0, 4.0]
    for bad in ({"acceptance": 1.2, "draft_tokens": 2}, {"acceptance": 0.5, "draft_tokens": 2.5}):
        with pytest.raises(rl.InvalidConfigurationError):
            expected_tokens_per_step(**bad)


# --- one speculative cycle -----------------------------------------------------------------------


def test_free_proposer_perfect_acceptance_batch_1_by_hand():
    """Batch 1, T = 0, k = 3, α = 1, r = 0: the verify reads the weights once and writes 4 tokens' KV."""
    w = lambda tokens: rl.weight_bytes_read("llama-3-8b", "bf16", tokens)  # noqa: E731  (every weight once)
    plain = (w(1) + 1 * KV_8B) / H100_BW  # one new token's KV written (the engine's forward_step)
    verify = (w(4) + 4 * KV_8B) / H100_BW
    s = speculative_step("llama-3-8b", "h100-sxm", draft_tokens=3, acceptance=1.0, draft_cost_ratio=0.0)
    assert s.verify_binding == "memory"
    assert math.isclose(s.verify_time_s, verify, rel_tol=1e-12)
    assert math.isclose(s.plain_step_time_s, plain, rel_tol=1e-12)
    assert s.draft_time_s == 0.0
    assert math.isclose(s.expected_tokens_per_step, 4.0)
    assert math.isclose(s.tokens_per_s_per_user, 4 / verify, rel_tol=1e-12)
    assert math.isclose(s.speedup, 4 * plain / verify, rel_tol=1e-12)  # 3.9999: almost the full 4x


def test_draft_cost_ratio_adds_k_r_plain_steps():
    """k = 4, r = 0.05, α = 0.7 at batch 1: cycle = 4 × 0.05 × S + V, speedup = E × S ÷ cycle."""
    s = speculative_step("llama-3-8b", "h100-sxm", draft_tokens=4, acceptance=0.7, draft_cost_ratio=0.05)
    w = lambda tokens: rl.weight_bytes_read("llama-3-8b", "bf16", tokens)  # noqa: E731
    plain, verify = (w(1) + KV_8B) / H100_BW, (w(5) + 5 * KV_8B) / H100_BW
    e = 1 + 0.7 + 0.49 + 0.343 + 0.2401  # 2.7731
    cycle = 4 * 0.05 * plain + verify
    assert math.isclose(s.draft_time_s, 4 * 0.05 * plain, rel_tol=1e-12)
    assert math.isclose(s.step_time_s, cycle, rel_tol=1e-12)
    assert math.isclose(s.speedup, e * plain / cycle, rel_tol=1e-12)  # about 2.31


def test_draft_model_costs_k_of_its_decode_steps_and_its_memory():
    opts = dict(num_gpus=4, draft_tokens=5, acceptance=0.75, context_tokens=2000)
    s = speculative_step("llama-3-70b", "h100-sxm", draft_model="llama-3.2-1b", **opts)
    d = rl.decode_step("llama-3.2-1b", "h100-sxm", 1, 2000, num_gpus=4)
    v = rl.forward_step("llama-3-70b", "h100-sxm", 1, 2000, new_tokens=6, num_gpus=4)
    assert math.isclose(s.draft_time_s, 5 * d.step_time_s, rel_tol=1e-12)
    assert math.isclose(s.verify_time_s, v.step_time_s, rel_tol=1e-12)
    assert math.isclose(s.memory_needed_bytes, v.memory_needed_bytes + d.memory_needed_bytes, rel_tol=1e-12)
    assert s.proposer == "llama-3.2-1b"
    # the draft model's weights are about 1/28 of the target's: the ratio says what one draft costs
    assert 0.01 < s.draft_cost_ratio < 0.05


def test_k0_free_proposer_is_plain_decode():
    s = speculative_step("llama-3-8b", "h100-sxm", [1, 8, 64], 500, draft_tokens=0, acceptance=0.3,
                         draft_cost_ratio=0.0)  # fmt: skip
    assert np.allclose(s.speedup, 1.0, rtol=1e-12)


def test_forgetting_the_draft_cost_overstates_the_gain():
    free = speculative_step("llama-3-8b", "h100-sxm", draft_tokens=4, acceptance=0.6, draft_cost_ratio=0)
    paid = speculative_step("llama-3-8b", "h100-sxm", draft_tokens=4, acceptance=0.6, draft_cost_ratio=0.2)
    assert paid.speedup < free.speedup
    # with r = 1 (a draft as costly as the target) and α < 1, speculation loses
    lose = speculative_step("llama-3-8b", "h100-sxm", draft_tokens=4, acceptance=0.6, draft_cost_ratio=1.0)
    assert lose.speedup < 1


def test_large_batch_verify_is_compute_bound():
    """B = 256, T = 128, k = 4: the verify is the engine's step over 1,280 tokens, compute-bound, and
    2.77 tokens per user no longer pay for it against the memory-bound plain step."""
    s = speculative_step(
        "llama-3-8b", "h100-sxm", 256, 128, draft_tokens=4, acceptance=0.7, draft_cost_ratio=0
    )
    v = rl.forward_step("llama-3-8b", "h100-sxm", 256, 128, new_tokens=5)
    plain = rl.forward_step("llama-3-8b", "h100-sxm", 256, 128, new_tokens=1)
    assert s.verify_binding == v.binding == "compute" and plain.binding == "memory"
    assert math.isclose(s.verify_time_s, v.step_time_s, rel_tol=1e-12)
    assert math.isclose(v.step_time_s, v.flops / H100_BF16, rel_tol=1e-12)
    e = 1 + 0.7 + 0.49 + 0.343 + 0.2401
    assert math.isclose(s.speedup, e * plain.step_time_s / v.step_time_s, rel_tol=1e-12)
    assert s.speedup < 1


def test_collapse_batch_is_where_speedup_first_drops_below_one():
    opts = dict(draft_tokens=4, acceptance=0.7, draft_cost_ratio=0.0)
    b = speculative_collapse_batch("llama-3-8b", "h100-sxm", 128, **opts)
    assert np.isfinite(b)
    s = speculative_step("llama-3-8b", "h100-sxm", [b - 1, b], 128, **opts)
    assert s.speedup[0] >= 1 > s.speedup[1]
    # better drafts hold on longer
    assert speculative_collapse_batch("llama-3-8b", "h100-sxm", 128, **{**opts, "acceptance": 0.9}) > b


def test_no_collapse_at_long_context_before_memory_runs_out():
    b = speculative_collapse_batch("llama-3-8b", "h100-sxm", 4096, draft_tokens=4, acceptance=0.7,
                                   draft_cost_ratio=0.0)  # fmt: skip
    assert math.isnan(b)


def test_vectorized_over_batch_acceptance_and_k():
    s = speculative_step(
        "llama-3-8b", "h100-sxm", np.array([1, 64])[:, None, None], 256,
        draft_tokens=np.array([2, 4, 8])[None, :, None], acceptance=np.array([0.5, 0.9])[None, None, :],
        draft_cost_ratio=0.02,
    )  # fmt: skip
    assert np.shape(s.speedup) == (2, 3, 2)
    one = speculative_step(
        "llama-3-8b", "h100-sxm", 64, 256, draft_tokens=4, acceptance=0.9, draft_cost_ratio=0.02
    )
    assert math.isclose(s.speedup[1, 1, 1], one.speedup, rel_tol=1e-12)


def test_errors():
    with pytest.raises(rl.InvalidConfigurationError):
        speculative_step("llama-3-8b", "h100-sxm", draft_tokens=4, acceptance=0.5)  # no proposer
    with pytest.raises(rl.InvalidConfigurationError):
        speculative_step("llama-3-8b", "h100-sxm", draft_tokens=4, acceptance=0.5, draft_cost_ratio=0.1,
                         draft_model="llama-3.2-1b")  # fmt: skip
    with pytest.raises(rl.UnknownNameError):
        speculative_step("llama-3-8b", "h100-sxm", draft_tokens=4, acceptance=0.5, draft_model="tiny")
    with pytest.raises(rl.DoesNotFitError):
        speculative_step(
            "llama-3-8b", "h100-sxm", 1000, 8000, draft_tokens=4, acceptance=0.5, draft_cost_ratio=0
        )
    with pytest.raises(rl.ContextTooLongError):
        speculative_step(
            "llama-3-8b", "h100-sxm", 1, 8190, draft_tokens=4, acceptance=0.5, draft_cost_ratio=0
        )
    masked = speculative_step("llama-3-8b", "h100-sxm", [1, 1000], 8000, draft_tokens=4, acceptance=0.5,
                              draft_cost_ratio=0, on_overflow="mask")  # fmt: skip
    assert masked.fits.tolist() == [True, False] and np.isnan(masked.speedup[1])


# --- the command line -----------------------------------------------------------------------------


def _cli(*args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        code = main(["speculate", *args])
    return code, json.loads(buf.getvalue()) if buf.getvalue().strip().startswith("{") else buf.getvalue()


def test_cli_reproduces_the_formula_by_hand():
    """k = 4, α = 0.8, r = 0.1, batch 8, T = 1,000 on one H100, Llama 3 8B."""
    args = ("--draft-cost-ratio", "0.1", "--draft-tokens", "4", "--acceptance", "0.8", "--batch", "8")
    code, d = _cli("--model", "llama-3-8b", "--gpu", "h100-sxm", *args, "--context", "1000", "--json")
    assert code == 0
    e = (1 - 0.8**5) / (1 - 0.8)  # 3.3616
    assert math.isclose(d["expected_tokens_per_step"], e, rel_tol=1e-12)
    w = lambda tokens: rl.weight_bytes_read("llama-3-8b", "bf16", tokens)  # noqa: E731
    plain = (w(8) + 8 * 1000 * KV_8B + 8 * KV_8B) / H100_BW  # memory-bound: weights + KV read + written
    verify = (w(40) + 8 * 1000 * KV_8B + 8 * 5 * KV_8B) / H100_BW
    step = 4 * 0.1 * plain + verify
    assert math.isclose(d["plain_step_time_s"], plain, rel_tol=1e-12)
    assert math.isclose(d["step_time_s"], step, rel_tol=1e-12)
    assert math.isclose(d["tokens_per_s_per_user"], e / step, rel_tol=1e-12)
    assert math.isclose(d["speedup"], e * plain / step, rel_tol=1e-12)
    assert d["verify_binding"] == "memory" and d["command"] == "speculate"


def test_cli_draft_model_and_human_output():
    code, text = _cli("--model", "llama-3-70b", "--gpu", "h100-sxm", "--gpus", "4", "--draft", "llama-3.2-1b",
                      "--draft-tokens", "4", "--acceptance", "0.8", "--context", "1000")  # fmt: skip
    assert code == 0 and "speedup per user" in text and "3.362" in text


@pytest.mark.parametrize(
    ("args", "kind"),
    [
        (("--draft-cost-ratio", "0", "--draft-tokens", "4", "--acceptance", "2"), "UsageError"),
        (("--draft", "llama-3.2-1b", "--draft-cost-ratio", "0.1", "--draft-tokens", "4",
          "--acceptance", "0.5"), "UsageError"),  # two proposers
        (("--draft", "nope", "--draft-tokens", "4", "--acceptance", "0.5"), "UnknownNameError"),
        (("--draft-cost-ratio", "0", "--draft-tokens", "4", "--acceptance", "0.5", "--batch", "5000",
          "--context", "8000"), "DoesNotFitError"),
    ],
)  # fmt: skip
def test_cli_json_errors(args, kind):
    code, d = _cli("--model", "llama-3-8b", "--gpu", "h100-sxm", *args, "--json")
    assert code == 2
    assert d["error"]["type"] == kind and d["error"]["message"]


def test_without_a_proposer_the_draft_is_free():
    code, d = _cli(
        "--model", "llama-3-8b", "--gpu", "h100-sxm", "--draft-tokens", "3", "--acceptance", "1", "--json"
    )
    assert code == 0 and d["draft_cost_ratio"] == 0.0 and d["draft_time_s"] == 0.0
    assert d["expected_tokens_per_step"] == 4.0  # α = 1: k + 1


def test_every_speculate_json_field_is_documented():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    section = doc[doc.index("## `roofline speculate`") :]
    proposer = ("--draft-cost-ratio", "0", "--draft-tokens", "2", "--acceptance", "0.5")
    _, d = _cli("--model", "llama-3-8b", "--gpu", "h100-sxm", *proposer, "--json")
    missing = sorted(k for k in d if f"`{k}`" not in section)
    assert not missing, f"speculate JSON fields not described in docs/cli.md: {missing}"
