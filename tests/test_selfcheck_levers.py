"""The lever self-check cards (QUANT, SPEC, MOE): answers worked by hand from the figures each card states,
traps recognised by name, shuffled scenarios valid, and Pack 01's seven cards untouched."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from roofline.selfcheck import check
from roofline.selfcheck.lever_common import (
    TRAP_ACTIVE_ONLY,
    TRAP_ALL_ACCEPTED,
    TRAP_ALL_RESIDENT,
    TRAP_ALPHA_TO_THE_K,
    TRAP_BITS_RATIO,
    TRAP_BYTES_AT_LARGE_BATCH,
    TRAP_FREE_DRAFT,
    TRAP_MLA_DOUBLED,
    TRAP_QUERY_HEADS,
    TRAP_USERS_TIMES_EXPERTS,
    TRAP_VERIFY_K_STEPS,
    TRAP_WINDOW_ALL_LAYERS,
    TRAP_WINDOW_IGNORED,
)

cards = importlib.import_module("roofline.selfcheck.cards")
H100_BW, H100_BF16 = 3.35e12, 989e12


def test_pack01_is_unchanged_and_lever_cards_are_registered():
    assert cards.QIDS == ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7")
    assert [c.qid for c in cards.cards()] == list(cards.QIDS)
    assert set(cards.LEVER_QIDS) == {"QUANT", "SPEC", "MOE", "ATTN"}
    for qid in cards.LEVER_QIDS:
        c = cards.card(qid.lower())  # any case, like the others
        assert c.qid == qid and c.lesson_links("html").count("<a ") == len(c.lessons)


def test_spec_by_hand():
    c = cards.card("SPEC")
    s, v = c.params["plain_step_s"], c.params["verify_step_s"]  # the figures the card states
    e = 1 + 0.8 + 0.64 + 0.512 + 0.4096  # 3.3616
    cycle = 4 * 0.05 * s + v  # 4 drafts at 5 % of a plain step, then the verify
    got = c.expected()
    assert got["tokens_per_step"] == pytest.approx(e, rel=1e-12)
    assert got["cycle_ms"] == pytest.approx(cycle * 1e3, rel=1e-12)
    assert got["per_user_tps"] == pytest.approx(e / cycle, rel=1e-12)
    assert got["speedup_x"] == pytest.approx(e * s / cycle, rel=1e-12)
    assert 4.4e-3 < s < 4.6e-3 and abs(v - s) / s < 0.01  # Llama 3 8B, one H100: the verify costs a step


def test_quant_by_hand():
    c = cards.card("QUANT")
    p = c.params
    wb, wq, n, kv = p["bf16_bytes"], p["int4_bytes"], p["parameters"], p["kv_bytes_per_token"]
    b1 = (wb + 128 * kv) / (wq + 128 * kv)  # batch 1, memory-bound both ways
    compute = 2 * n * 512 / H100_BF16  # 8.3 ms: INT4 multiplies in BF16 too
    bf16 = max((wb + 512 * 128 * kv) / H100_BW, compute)
    int4 = max((wq + 512 * 128 * kv) / H100_BW, compute)
    got = c.expected()
    assert got["b1_speedup_x"] == pytest.approx(b1, rel=1e-12)
    assert got["big_bf16_ms"] == pytest.approx(bf16 * 1e3, rel=1e-12)
    assert got["big_int4_ms"] == pytest.approx(int4 * 1e3, rel=1e-12)
    assert got["big_speedup_x"] == pytest.approx(1.0, rel=1e-12)  # both compute-bound: no gain at all
    assert 2.5 < got["b1_speedup_x"] < 3.5  # well short of the 4× of the bits


def test_moe_by_hand():
    c = cards.card("MOE")
    p = c.params
    shared, expert, kv = p["shared_bytes"], p["expert_bytes"], p["kv_bytes_per_token"]
    touched = 8 * (1 - (1 - 2 / 8) ** 8)  # 7.199
    got = c.expected()
    assert got["b1_read_gb"] == pytest.approx((shared + 2 * expert) / 1e9, rel=1e-12)
    assert got["touched"] == pytest.approx(touched, rel=1e-12)
    assert got["big_read_gb"] == pytest.approx((shared + touched * expert) / 1e9, rel=1e-12)
    step = (shared + touched * expert + 8 * 1000 * kv) / (2 * H100_BW)
    assert got["big_step_ms"] == pytest.approx(step * 1e3, rel=1e-12)


@pytest.mark.parametrize(
    ("qid", "answer", "trap"),
    [
        ("SPEC", "tokens_per_step", TRAP_ALPHA_TO_THE_K),
        ("SPEC", "tokens_per_step", TRAP_ALL_ACCEPTED),
        ("SPEC", "cycle_ms", TRAP_VERIFY_K_STEPS),
        ("SPEC", "cycle_ms", TRAP_FREE_DRAFT),
        ("SPEC", "speedup_x", TRAP_FREE_DRAFT),
        ("QUANT", "b1_speedup_x", TRAP_BITS_RATIO),
        ("QUANT", "big_speedup_x", TRAP_BITS_RATIO),
        ("QUANT", "big_speedup_x", TRAP_BYTES_AT_LARGE_BATCH),
        ("MOE", "b1_read_gb", TRAP_ALL_RESIDENT),
        ("MOE", "touched", TRAP_USERS_TIMES_EXPERTS),
        ("MOE", "big_read_gb", TRAP_ACTIVE_ONLY),
        ("MOE", "big_step_ms", TRAP_ACTIVE_ONLY),
        ("ATTN", "kv_token_kib", TRAP_QUERY_HEADS),
        ("ATTN", "kv_user_gb", TRAP_WINDOW_IGNORED),
        ("ATTN", "users", TRAP_WINDOW_IGNORED),
    ],
)
def test_traps_are_named(qid, answer, trap):
    c = cards.card(qid)
    value = next(t.value for t in c.traps if t.answer == answer and t.name == trap)
    result = next(r for r in check(c, {answer: value}) if r.name == answer)
    assert result.status == "trap" and result.trap == trap


def test_alpha_to_the_k_trap_by_hand():
    c = cards.card("SPEC")
    value = next(t.value for t in c.traps if t.name == TRAP_ALPHA_TO_THE_K and t.answer == "tokens_per_step")
    assert value == pytest.approx(0.8**4)  # 0.41: the chance all four drafts survive


def test_attn_by_hand():
    c = cards.card("ATTN")  # Mistral 7B at 32,768 tokens: every layer slides over 4,096
    per_token = 2 * 32 * 8 * 128 * 2  # 131,072 bytes = 128 KiB
    per_user = per_token * 4096  # the window caps what each layer keeps: 0.537 GB
    got = c.expected()
    assert got["kv_token_kib"] == 128.0
    assert got["kv_user_gb"] == pytest.approx(per_user / 1e9, rel=1e-12)
    assert got["users"] == float(int(c.params["free_bytes"] // per_user))


def test_attn_mla_and_partial_windows():
    ds = cards.card("ATTN", {"model": "deepseek-v3", "gpu": "h200", "num_gpus": 8, "weight_precision": "fp8",
                             "context_tokens": 32768})  # fmt: skip
    assert ds.expected()["kv_token_kib"] == pytest.approx(61 * (512 + 64) * 2 / 1024)  # no factor 2
    assert TRAP_MLA_DOUBLED in {t.name for t in ds.traps}
    setup = {"gpu": "h100-sxm", "num_gpus": 1, "weight_precision": "int4", "context_tokens": 32768}
    oss = cards.card("ATTN", {"model": "gpt-oss-120b", **setup})
    # 18 of 36 layers keep 128 tokens, the others all 32,768: (18 × 32,768 + 18 × 128) / 36 = 16,448
    assert oss.expected()["kv_user_gb"] == pytest.approx(16448 * 2 * 36 * 8 * 64 * 2 / 1e9, rel=1e-12)
    assert TRAP_WINDOW_ALL_LAYERS in {t.name for t in oss.traps}


@pytest.mark.parametrize("qid", ["QUANT", "SPEC", "MOE", "ATTN"])
def test_right_answers_are_right(qid):
    c = cards.card(qid)
    assert all(r.status == "right" for r in check(c, c.expected()))


@pytest.mark.parametrize("qid", ["QUANT", "SPEC", "MOE", "ATTN"])
@pytest.mark.parametrize("seed", range(8))
def test_shuffled_cards_are_valid(qid, seed):
    c = cards.shuffled_card(qid, np.random.default_rng(seed))
    assert not c.is_default
    assert all(np.isfinite(v) and v > 0 for v in c.expected().values())
    assert len(c.traps) == c.trap_count_built  # every trap distinguishable from its answer
    assert all(r.status == "right" for r in check(c, c.expected()))
    assert c.scenario.startswith("<p>") and c.worked.startswith("<ul>")
