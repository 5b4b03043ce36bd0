"""The lever self-check cards (QUANT, SPEC, MOE, ATTN), each in its lesson: answers worked by hand from the
figures each card states, traps recognised by name, shuffled scenarios valid."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.course.cards import check
from roofline.lessons import attention_variants, mixture_of_experts, quantization, speculative_decoding

LEVERS = {"QUANT": quantization.QUANT, "SPEC": speculative_decoding.SPEC, "MOE": mixture_of_experts.MOE,
          "ATTN": attention_variants.ATTN}  # fmt: skip
H100_BW, H100_BF16 = 3.35e12, 989e12


def test_each_lever_card_lives_in_its_lesson_and_links_it_first():
    for lesson in (quantization, speculative_decoding, mixture_of_experts, attention_variants):
        (qid,) = [q for q in LEVERS if getattr(lesson, q, None) is LEVERS[q]]  # the façade exports its card
        c = LEVERS[qid].card()
        assert c.qid == qid and c.lessons[0] == lesson.__name__.rsplit(".", 1)[1]


def test_spec_by_hand():
    c = LEVERS["SPEC"].card()
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
    c = LEVERS["QUANT"].card()
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
    c = LEVERS["MOE"].card()
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
        ("SPEC", "tokens_per_step", "α^k instead of the geometric sum"),
        ("SPEC", "tokens_per_step", "every draft accepted"),
        ("SPEC", "cycle_ms", "verify priced as k + 1 steps"),
        ("SPEC", "cycle_ms", "forgot the draft's cost"),
        ("SPEC", "speedup_x", "forgot the draft's cost"),
        ("QUANT", "b1_speedup_x", "the ratio of bits (4× for INT4)"),
        ("QUANT", "big_speedup_x", "the ratio of bits (4× for INT4)"),
        ("QUANT", "big_speedup_x", "bytes ratio at a compute-bound batch"),
        ("MOE", "b1_read_gb", "every expert read at batch 1"),
        ("MOE", "touched", "users × experts per token"),
        ("MOE", "big_read_gb", "only the active experts at any batch"),
        ("MOE", "big_step_ms", "only the active experts at any batch"),
        ("ATTN", "kv_token_kib", "query heads instead of KV heads"),
        ("ATTN", "kv_user_gb", "ignored the sliding window"),
        ("ATTN", "users", "ignored the sliding window"),
    ],
)
def test_traps_are_named(qid, answer, trap):
    c = LEVERS[qid].card()
    value = next(t.value for t in c.traps if t.answer == answer and t.name == trap)
    result = next(r for r in check(c, {answer: value}) if r.name == answer)
    assert result.status == "trap" and result.trap == trap


def test_alpha_to_the_k_trap_by_hand():
    c = LEVERS["SPEC"].card()
    value = next(
        t.value
        for t in c.traps
        if t.name == "α^k instead of the geometric sum" and t.answer == "tokens_per_step"
    )
    assert value == pytest.approx(0.8**4)  # 0.41: the chance all four drafts survive


def test_attn_by_hand():
    c = LEVERS["ATTN"].card()  # Mistral 7B at 32,768 tokens: every layer slides over 4,096
    per_token = 2 * 32 * 8 * 128 * 2  # 131,072 bytes = 128 KiB
    per_user = per_token * 4096  # the window caps what each layer keeps: 0.537 GB
    got = c.expected()
    assert got["kv_token_kib"] == 128.0
    assert got["kv_user_gb"] == pytest.approx(per_user / 1e9, rel=1e-12)
    assert got["users"] == float(int(c.params["free_bytes"] // per_user))


def test_attn_mla_and_partial_windows():
    ds = LEVERS["ATTN"].card({"model": "deepseek-v3", "gpu": "h200", "num_gpus": 8, "weight_precision": "fp8",
                             "context_tokens": 32768})  # fmt: skip
    assert ds.expected()["kv_token_kib"] == pytest.approx(61 * (512 + 64) * 2 / 1024)  # no factor 2
    assert "doubled MLA's shared latent" in {t.name for t in ds.traps}
    setup = {"gpu": "h100-sxm", "num_gpus": 1, "weight_precision": "int4", "context_tokens": 32768}
    oss = LEVERS["ATTN"].card({"model": "gpt-oss-120b", **setup})
    # 18 of 36 layers keep 128 tokens, the others all 32,768: (18 × 32,768 + 18 × 128) / 36 = 16,448
    assert oss.expected()["kv_user_gb"] == pytest.approx(16448 * 2 * 36 * 8 * 64 * 2 / 1e9, rel=1e-12)
    assert "window applied to every layer" in {t.name for t in oss.traps}


@pytest.mark.parametrize("qid", ["QUANT", "SPEC", "MOE", "ATTN"])
def test_right_answers_are_right(qid):
    c = LEVERS[qid].card()
    assert all(r.status == "right" for r in check(c, c.expected()))


@pytest.mark.parametrize("qid", ["QUANT", "SPEC", "MOE", "ATTN"])
@pytest.mark.parametrize("seed", range(8))
def test_shuffled_cards_are_valid(qid, seed):
    c = LEVERS[qid].shuffled_card(np.random.default_rng(seed))
    assert not c.is_default
    assert all(np.isfinite(v) and v > 0 for v in c.expected().values())
    assert len(c.traps) == c.trap_count_built  # every trap distinguishable from its answer
    assert all(r.status == "right" for r in check(c, c.expected()))
    assert c.scenario.startswith("<p>") and c.worked.startswith("<ul>")
