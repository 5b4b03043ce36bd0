"""The Pack 01 self-check cards: expected answers, trap recognition, shuffling and the widget.

Expected values are worked out by hand from the study card's own inputs (16 GB of weights, 3.35 TB/s,
989 TFLOPS, 128 KB of KV per token, $3 per GPU-hour); the arithmetic is in the comments.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline import selfcheck as sc

# (card, answer, the study card's figure, how far the card's rounding lets it be, hand arithmetic)
CARD_FIGURES = [
    ("Q1", "floor_ms", 4.8, 0.05, "16e9 / 3.35e12 = 4.776 ms"),
    ("Q1", "ceiling_tps", 200, 10, "1 / 4.776 ms = 209.4 tokens/s, the card's '≈ 200'"),
    ("Q1", "tp_floor_ms", 10.4, 0.05, "70e9 / (2 × 3.35e12) = 10.448 ms"),
    ("Q1", "tp_mbu_pct", 74, 1, "10.448 / 14 = 74.6 %; the card divides its rounded 10.4 ms: 74.3 %"),
    ("Q2", "prefill_ms", 8, 0.5, "2 × 8e9 × 500 = 8e12 FLOP; / 989e12 = 8.09 ms"),
    ("Q2", "paste_ms", 130, 5, "2 × 8e9 × 8000 = 1.28e14 FLOP; / 989e12 = 129.4 ms"),
    ("Q2", "stalled_steps", 27, 0.5, "129.4 / 4.776 = 27.1 steps"),
    ("Q2", "ridge", 295, 0.5, "989e12 / 3.35e12 = 295.2 FLOP/byte"),
    ("Q3", "step_ms", 6.0, 0.05, "(16e9 + 32 × 1000 × 128e3) / 3.35e12 = 20.096e9 / 3.35e12 = 5.999 ms"),
    ("Q3", "per_user_tps", 167, 0.5, "1 / 5.999 ms = 166.7"),
    ("Q3", "total_tps", 5300, 50, "32 / 5.999 ms = 5,334"),
    ("Q3", "gain_x", 25, 0.6, "5,334 / 209.4 = 25.5 (the card: 32 / 1.25 = 25.6, '≈ 25×')"),
    ("Q4", "flip_batch", 295, 0.5, "intensity = 2B FLOP / 2 bytes = B; B = ridge = 295"),
    ("Q5", "mbu_pct", 80, 0.5, "16e9 / 6e-3 = 2.667e12 B/s; / 3.35e12 = 79.6 %"),
    ("Q6", "cost_single_usd", 4.17, 0.005, "3 / (200 × 3600) × 1e6 = 4.1667"),
    ("Q6", "cost_batched_usd", 0.19, 0.005, "3 / (4300 × 3600) × 1e6 = 0.1938"),
    ("Q6", "step_ms", 15, 0.5, "(16e9 + 64 × 4096 × 131072) / 3.35e12 = 50.36e9 / 3.35e12 = 15.03 ms"),
    ("Q6", "per_user_tps", 67, 0.5, "1 / 15.03 ms = 66.5"),
    ("Q7", "launch_ms", 1.2, 1e-9, "300 × 4 µs = 1.2 ms"),
    ("Q7", "launch_pct", 25, 1e-9, "1.2 / 4.8 = 25 %"),
    ("Q7", "speedup_x", 1.25, 1e-9, "1 / (0.7 + 0.3 / 3) = 1 / 0.8 = 1.25"),
    ("Q7", "ceiling_x", 1.43, 0.005, "1 / 0.7 = 1.4286"),
    ("Q7", "two_speedup_x", 1.8, 0.05, "1 / (0.2 + 0.3 / 3 + 0.5 / 2) = 1 / 0.55 = 1.818"),
]


@pytest.mark.parametrize("qid, name, figure, within, arithmetic", CARD_FIGURES)
def test_default_card_reproduces_the_study_card(qid, name, figure, within, arithmetic):
    value = sc.card(qid).answer(name).value
    assert value == pytest.approx(figure, abs=within), arithmetic


@pytest.mark.parametrize("qid, name, figure, within, arithmetic", CARD_FIGURES)
def test_the_study_cards_round_figure_is_accepted(qid, name, figure, within, arithmetic):
    (result,) = [r for r in sc.check(sc.card(qid), {name: figure}) if r.name == name]
    assert result.status == "right" and result.trap is None


# (card, answer, a wrong answer worked out by hand, the trap it must be recognised as)
TRAPS = [
    ("Q1", "floor_ms", 16e9 / 989e12 * 1e3, sc.TRAP_BYTES_OVER_FLOPS),  # 0.016 ms: bytes over FLOP/s
    ("Q1", "ceiling_tps", 989e12 / 16e9, sc.TRAP_BYTES_OVER_FLOPS),  # 61,812 tokens/s
    ("Q1", "tp_floor_ms", 70e9 / 3.35e12 * 1e3, sc.TRAP_ONE_GPU_BANDWIDTH),  # 20.9 ms on one GPU's 3.35 TB/s
    ("Q1", "tp_mbu_pct", 14 / 10.448 * 100, sc.TRAP_INVERTED_MBU),  # 134 %
    ("Q2", "prefill_ms", 16e9 / 989e12 * 1e3, sc.TRAP_BYTES_OVER_FLOPS),
    ("Q2", "prefill_ms", 4.8, sc.TRAP_PREFILL_AS_WEIGHT_READ),  # the decode floor
    ("Q2", "prefill_ms", 8e9 * 500 / 989e12 * 1e3, sc.TRAP_FORGOT_TWO),  # 4.04 ms
    ("Q2", "paste_ms", 8e9 * 8000 / 989e12 * 1e3, sc.TRAP_FORGOT_TWO),  # 64.7 ms
    ("Q2", "paste_ms", 8.1, sc.TRAP_NO_PROMPT_SCALING),  # the 500-token time again
    ("Q2", "ridge", 3.35 / 989, sc.TRAP_INVERTED_RIDGE),  # 0.0034
    ("Q3", "step_ms", (16e9 + 1 * 1000 * 128e3) / 3.35e12 * 1e3, sc.TRAP_ONE_USER_KV),  # 4.81 ms
    ("Q3", "per_user_tps", 3.35e12 / (16e9 + 1000 * 128e3), sc.TRAP_ONE_USER_KV),  # 208 tokens/s
    ("Q3", "total_tps", 32 * 3.35e12 / (16e9 + 1000 * 128e3), sc.TRAP_ONE_USER_KV),  # 6,647 tokens/s
    ("Q3", "step_ms", 32 * 4.776, sc.TRAP_B_TIMES_SLOWER),  # 153 ms
    ("Q3", "per_user_tps", 209.4 / 32, sc.TRAP_B_TIMES_SLOWER),  # 6.5 tokens/s
    ("Q3", "gain_x", 32, sc.TRAP_FULL_B_GAIN),
    ("Q3", "total_tps", 533, sc.TRAP_POWER_OF_TEN),  # 5,334 / 10
    ("Q4", "flip_batch", 295.2 / 2, sc.TRAP_BYTES_PER_WEIGHT),  # as if BF16 weights took 1 byte
    ("Q5", "mbu_pct", 100, sc.TRAP_GPU_UTIL),
    ("Q5", "mbu_pct", 50, sc.TRAP_POWER_AS_UTIL),  # 350 W / 700 W
    ("Q5", "mbu_pct", 2 * 8e9 / (6e-3 * 989e12) * 100, sc.TRAP_MFU_FOR_MBU),  # 0.27 %
    ("Q5", "mbu_pct", 6 / 4.776 * 100, sc.TRAP_INVERTED_MBU),  # 126 %
    ("Q5", "mbu_pct", 0.796, sc.TRAP_POWER_OF_TEN),  # a fraction typed for a percentage
    ("Q6", "cost_single_usd", 3 / (1e6 / (200 * 3600)), sc.TRAP_DOLLARS_HOURS),  # $3 ÷ 1.39 h = 2.16
    ("Q6", "cost_single_usd", 200 * 3600 / 3, sc.TRAP_DOLLARS_HOURS),  # 240,000 tokens per dollar
    ("Q6", "cost_batched_usd", 3 / (1e6 / (4300 * 3600)), sc.TRAP_DOLLARS_HOURS),  # 46.4
    ("Q6", "cost_single_usd", 3 / 200 * 1e6, sc.TRAP_FORGOT_3600),  # 15,000
    ("Q6", "cost_single_usd", 0.417, sc.TRAP_POWER_OF_TEN),  # 4.17 / 10
    ("Q6", "cost_batched_usd", 3 / (4300 / 64 * 3600) * 1e6, sc.TRAP_ONE_STREAM_PRICE),  # 12.4
    ("Q6", "step_ms", (16e9 + 4096 * 131072) / 3.35e12 * 1e3, sc.TRAP_ONE_USER_KV),  # 4.94 ms
    ("Q6", "per_user_tps", 64 * 66.52, sc.TRAP_TOTAL_FOR_USER),  # 4,257
    ("Q7", "launch_ms", 1200, sc.TRAP_POWER_OF_TEN),  # microseconds typed as milliseconds
    ("Q7", "launch_pct", 1.2 / 6.0 * 100, sc.TRAP_SHARE_OF_TOTAL),  # 20 %
    ("Q7", "speedup_x", 3, sc.TRAP_PART_SPEEDUP),
    ("Q7", "ceiling_x", 0.7, sc.TRAP_CEILING_AS_TIME_LEFT),
    ("Q7", "ceiling_x", 70, sc.TRAP_CEILING_AS_TIME_LEFT),
    ("Q7", "two_speedup_x", 3 + 2, sc.TRAP_ADDED_SPEEDUPS),
    ("Q7", "two_speedup_x", 3 * 2, sc.TRAP_MULTIPLIED_SPEEDUPS),
]


@pytest.mark.parametrize("qid, name, typed, trap", TRAPS)
def test_known_traps_are_recognised_and_named(qid, name, typed, trap):
    (result,) = [r for r in sc.check(sc.card(qid), {name: typed}) if r.name == name]
    assert result.status == "trap"
    assert result.correct is False
    assert trap in result.trap_names
    assert trap in result.text()


def test_card_traps_come_before_a_power_of_ten():
    # 14 / 10.448 = 134 % is the inverted MBU; it is not a power of ten of 74.6 %, so only one trap
    r = sc.check(sc.card("Q1"), {"tp_mbu_pct": 134})[3]
    assert r.trap == sc.TRAP_INVERTED_MBU and sc.TRAP_POWER_OF_TEN not in r.trap_names


# (card, answer, a wrong answer that matches no trap)
WRONG = [
    ("Q1", "floor_ms", 7.0),  # not 4.78 ± 5 %, not 0.016, not 47.8
    ("Q1", "ceiling_tps", 300),  # the PM's wish is not the ceiling
    ("Q2", "paste_ms", 90),
    ("Q3", "step_ms", 9.0),
    ("Q3", "gain_x", 16),
    ("Q5", "mbu_pct", 65),
    ("Q6", "cost_single_usd", 6.0),
    ("Q7", "speedup_x", 1.5),
    ("Q7", "two_speedup_x", 2.5),
]


@pytest.mark.parametrize("qid, name, typed", WRONG)
def test_wrong_answers_that_match_no_trap_are_just_wrong(qid, name, typed):
    (result,) = [r for r in sc.check(sc.card(qid), {name: typed}) if r.name == name]
    assert result.status == "wrong" and result.trap is None and result.traps == ()
    assert "is wrong" in result.text()


def test_tolerance_edges():
    # 4.776 ms ± 5 %: 4.54 .. 5.01 ms
    card = sc.card("Q1")
    assert [r.status for r in sc.check(card, {"floor_ms": 4.56})][:1] == ["right"]
    assert [r.status for r in sc.check(card, {"floor_ms": 5.00})][:1] == ["right"]
    assert [r.status for r in sc.check(card, {"floor_ms": 5.10})][:1] == ["wrong"]
    assert card.answer("floor_ms").tolerance_text == "±5%"


def test_right_answer_text_shows_the_library_value_but_a_wrong_one_does_not():
    right, _, _, _ = sc.check(sc.card("Q1"), {"floor_ms": 4.8})
    assert "4.78 ms" in right.text() and "is right" in right.text()
    wrong = sc.check(sc.card("Q1"), {"floor_ms": 7})[0]
    assert "4.78" not in wrong.text()


def test_unanswered_and_bad_input():
    results = sc.check(sc.card("Q5"), {})
    assert [r.status for r in results] == ["unanswered", "unanswered"]
    assert sc.check(sc.card("Q5"), {"mbu_pct": None})[1].status == "unanswered"
    with pytest.raises(rl.InvalidConfigurationError, match="no answer 'mbu'"):
        sc.check(sc.card("Q5"), {"mbu": 80})
    with pytest.raises(rl.InvalidConfigurationError, match="must be a number"):
        sc.check(sc.card("Q5"), {"mbu_pct": "eighty"})
    with pytest.raises(rl.InvalidConfigurationError, match="finite"):
        sc.check(sc.card("Q5"), {"mbu_pct": float("nan")})


def test_every_default_trap_differs_from_its_answer():
    for card in sc.cards():
        assert len(card.traps) == card.trap_count_built, card.qid  # none was dropped
        for trap in card.traps:
            assert not card.answer(trap.answer).accepts(trap.value), (card.qid, trap.name)


def test_a_trap_equal_to_the_answer_is_dropped():
    # With 1 token of context the KV is 32 × 131 KB = 4 MB next to 16.1 GB of weights: one user's KV gives
    # the same step, so that trap cannot be told apart from the right answer and leaves the card.
    card = sc.card("Q3", {"context_tokens": 1})
    assert sc.TRAP_ONE_USER_KV not in {t.name for t in card.traps}
    assert len(card.traps) < card.trap_count_built
    assert sc.TRAP_ONE_USER_KV in {t.name for t in sc.card("Q3").traps}


def test_cards_link_their_lessons():
    expected = {
        "Q1": ("02", "06", "16", "24"),
        "Q2": ("04", "15", "16", "44"),
        "Q3": ("02", "16", "25", "28"),
        "Q4": ("02", "04", "61"),
        "Q5": ("09", "16", "59", "60"),
        "Q6": ("01", "02"),
        "Q7": ("03", "04", "09", "60"),
    }
    assert {c.qid: c.lessons for c in sc.cards()} == expected
    assert "[02 · The decode floor](02_decode_floor.ipynb)" in sc.card("Q1").lesson_links()
    assert '<a href="61_compute_bound.ipynb">' in sc.card("Q4").lesson_links("html")


def test_every_card_has_its_parts_and_computed_numbers():
    for card in sc.cards():
        assert card.is_default and card.answers and card.worked and card.mistake
        assert card.followup_question and card.followup_answer
        html = card.reveal_html()
        assert "Worked answer" in html and "Common mistake" in html and "Likely follow-up" in html
        assert "<table" in card._repr_html_() and card.qid in repr(card)
    assert "4.78 ms" in sc.card("Q1").worked  # 16 GB / 3.35 TB/s
    assert "5,334 tokens/s" in sc.card("Q3").worked  # 32 / 5.999 ms
    assert "1.82×" in sc.card("Q7").followup_answer  # 1 / 0.55


def test_scenario_text_follows_the_parameters():
    card = sc.card("Q3", {"batch": 64, "context_tokens": 2000})
    assert "64 users" in card.scenario and "2,000 tokens" in card.scenario and not card.is_default
    # 16.1 GB + 64 × 2,000 × 131 KB = 16.1 + 16.77 GB = 32.87 GB; / 3.35 TB/s = 9.81 ms
    assert card.answer("step_ms").value == pytest.approx((16.1e9 + 64 * 2000 * 131e3) / 3.35e12 * 1e3)
    # Passing the card's own scenario back gives the default card
    assert sc.card("Q3", sc.default_params("Q3")).is_default


def test_card_rejects_bad_scenarios():
    with pytest.raises(rl.InvalidConfigurationError, match="unknown card"):
        sc.card("Q8")
    with pytest.raises(rl.InvalidConfigurationError, match="no parameter 'users'"):
        sc.card("Q3", {"users": 4})
    with pytest.raises(rl.DoesNotFitError):
        sc.card("Q6", {"batch": 1024, "context_tokens": 8192})  # 16 GB + 1,024 × 8,192 × 131 KB = 1.1 TB
    with pytest.raises(rl.UnsupportedPrecisionError):
        sc.card("Q4", {"gpu": "a100-80gb-sxm", "weight_precision": "fp8"})
    with pytest.raises(rl.UnknownNameError):
        sc.card("Q1", {"model": "llama-9"})
    with pytest.raises(rl.InvalidConfigurationError, match="whole number"):
        sc.card("Q3", {"batch": 2.5})


def test_shuffle_is_seeded_and_changes_the_answers():
    a = sc.shuffled_card("Q3", np.random.default_rng(7))
    b = sc.shuffled_card("Q3", np.random.default_rng(7))
    assert a.params == b.params and a.expected() == b.expected()
    assert not a.is_default and a.expected() != sc.card("Q3").expected()
    assert sc.shuffled_card("Q3", 7).params == a.params  # an int seed works too


def _fits(card):
    p = card.params
    if "tp_model" in p:
        ok = rl.fits(
            p["tp_model"], p["gpu"], 1, 0, num_gpus=p["tp_num_gpus"], weight_precision=p["tp_precision"]
        )
        if not ok:
            return False
    if "model" not in p:
        return True
    batch = p.get("batch", 1)
    context = p.get("context_tokens", p.get("paste_tokens", 0))
    return bool(
        rl.fits(
            p["model"],
            p["gpu"],
            batch,
            context,
            weight_precision=p["weight_precision"],
            kv_precision=p.get("kv_precision", "bf16"),
        )
    )


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), qid=st.sampled_from(sc.QIDS))
def test_shuffled_cards_check_their_own_answers(seed, qid):
    card = sc.shuffled_card(qid, np.random.default_rng(seed))
    assert card.qid == qid and not card.is_default
    assert _fits(card)
    results = sc.check(card, card.expected())
    assert all(r.status == "right" for r in results)
    slipped = sc.check(card, {name: 10 * v for name, v in card.expected().items()})
    assert all(r.status == "trap" and sc.TRAP_POWER_OF_TEN in r.trap_names for r in slipped)
    shrunk = sc.check(card, {name: v / 10 for name, v in card.expected().items()})
    assert all(sc.TRAP_POWER_OF_TEN in r.trap_names for r in shrunk)


# --- the widget ---------------------------------------------------------------------------------------
def test_widget_check_names_right_wrong_and_trap():
    w = sc.CardWidget(sc.card("Q3"))
    w.enter("step_ms", 6.0)  # right: 5.999 ms
    w.enter("per_user_tps", 3.35e12 / (16e9 + 1000 * 128e3))  # one user's KV: 208 tokens/s
    w.enter("total_tps", 9000)  # wrong, no trap
    results = w.press_check()
    assert [r.status for r in results] == ["right", "trap", "wrong", "unanswered"]
    text = w.result_text().splitlines()
    assert "is right" in text[0]
    assert "known trap: one user's KV" in text[1]
    assert "is wrong" in text[2] and "no answer yet" in text[3]
    assert 'data-status="trap"' in w.result_area.value


def test_widget_buttons_drive_the_same_methods():
    w = sc.CardWidget("Q7")
    w.enter("two_speedup_x", 5)
    w.check_button.click()
    assert w.results[-1].trap == sc.TRAP_ADDED_SPEEDUPS
    w.reveal_button.click()
    assert w.revealed and "Worked answer" in w.revealed_text() and "1.25×" in w.revealed_text()
    w.reveal_button.click()
    assert not w.revealed and w.revealed_text() == ""


def test_widget_shuffle_swaps_the_card_and_still_checks():
    w = sc.CardWidget(sc.card("Q6"), seed=3)
    first = w.card
    w.enter("cost_single_usd", 4.17)
    shuffled = w.press_shuffle()
    assert shuffled is w.card and not shuffled.is_default and shuffled.expected() != first.expected()
    assert w.result_text() == "" and set(w.inputs) == set(shuffled.answer_names())
    assert all(v is None for v in w.answers().values())  # the boxes were cleared
    for name, value in shuffled.expected().items():
        w.enter(name, value)
    assert all(r.status == "right" for r in w.press_check())
    assert w.press_reset().is_default


def test_widget_rejects_unknown_answer_names():
    w = sc.CardWidget("Q5")
    with pytest.raises(rl.InvalidConfigurationError, match="no answer"):
        w.enter("mbu", 80)
    assert repr(w) == "<CardWidget Q5: achieved_tbps, mbu_pct>"
