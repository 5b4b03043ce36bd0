"""Shuffled self-check cards: reproducible from a seed, valid scenarios, answers that check themselves."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.course.cards import TRAP_POWER_OF_TEN
from roofline.lessons import pack01_speed_physics as sc
from roofline.lessons.pack01_speed_physics.cards import SPECS


def test_shuffle_is_seeded_and_changes_the_answers():
    a = sc.shuffled_card("Q3", np.random.default_rng(7))
    b = sc.shuffled_card("Q3", np.random.default_rng(7))
    assert a.params == b.params and a.expected() == b.expected() and a.traps == b.traps
    assert not a.is_default and a.expected() != sc.card("Q3").expected()
    assert sc.shuffled_card("Q3", 7).params == a.params  # an int seed works too


@pytest.mark.parametrize("qid", sc.QIDS)
def test_a_sequence_of_shuffles_is_reproducible(qid):
    def sequence(seed):
        rng = np.random.default_rng(seed)
        return [dict(sc.shuffled_card(qid, rng).params) for _ in range(3)]

    first = sequence(11)
    assert first == sequence(11)
    assert len({repr(p) for p in first}) > 1  # the generator moves on between shuffles
    assert first != sequence(12)


def test_a_shuffled_card_is_the_card_built_from_its_own_scenario():
    shuffled = sc.shuffled_card("Q6", 5)
    again = sc.card("Q6", {k: v for k, v in shuffled.params.items() if k in SPECS["Q6"].default_params()})
    assert again.expected() == shuffled.expected() and again.scenario == shuffled.scenario


def test_an_impossible_shuffle_says_so():
    with pytest.raises(rl.InvalidConfigurationError, match="no valid shuffled scenario"):
        sc.shuffled_card("Q3", 0, max_tries=0)


def fits(card):
    p = card.params
    if "tp_model" in p:
        ok = rl.fits(
            p["tp_model"], p["gpu"], 1, 0, num_gpus=p["tp_num_gpus"], weight_precision=p["tp_precision"]
        )
        if not ok:
            return False
    batch = p.get("batch", 1)
    context = p.get("context_tokens", p.get("paste_tokens", 0))
    return bool(rl.fits(p["model"], p["gpu"], batch, context, weight_precision=p["weight_precision"],
                        kv_precision=p.get("kv_precision", "bf16")))  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), qid=st.sampled_from(sc.QIDS))
def test_shuffled_cards_check_their_own_answers(seed, qid):
    card = sc.shuffled_card(qid, np.random.default_rng(seed))
    assert card.qid == qid and not card.is_default
    assert fits(card)
    assert len(card.traps) == card.trap_count_built  # every trap stays distinguishable
    results = sc.check(card, card.expected())
    assert all(r.status == "right" for r in results)
    assert all(r.status == "right" for r in sc.check(card, card.exact()))  # the lessons' exact figures too
    for trap in card.traps:
        (r,) = [r for r in sc.check(card, {trap.answer: trap.value}) if r.name == trap.answer]
        assert r.status == "trap" and trap.name in r.trap_names
    slipped = sc.check(card, {name: 10 * v for name, v in card.expected().items()})
    assert all(r.status == "trap" and TRAP_POWER_OF_TEN in r.trap_names for r in slipped)
    shrunk = sc.check(card, {name: v / 10 for name, v in card.expected().items()})
    assert all(TRAP_POWER_OF_TEN in r.trap_names for r in shrunk)
