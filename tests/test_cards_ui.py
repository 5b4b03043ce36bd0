"""The self-check card widget: boxes, Check, Reveal, Shuffle, and how it displays."""

import pytest

import roofline as rl
from roofline.lessons import pack01_speed_physics as sc
from roofline.lessons.pack01_speed_physics import CardWidget

BW = 3.35e12


def test_widget_check_names_right_wrong_and_trap():
    w = CardWidget(sc.card("Q3"))
    w.enter("step_ms", 6.0)  # right: 5.999 ms
    w.enter("per_user_tps", BW / (16e9 + 1000 * 128e3))  # one user's KV: 208 tokens/s
    w.enter("total_tps", 9000)  # wrong, no trap
    results = w.press_check()
    assert [r.status for r in results] == ["right", "trap", "wrong", "unanswered"]
    text = w.result_text().splitlines()
    assert "is right" in text[0]
    assert "known trap: one user's KV" in text[1]
    assert "is wrong" in text[2] and "no answer yet" in text[3]
    assert 'data-status="trap"' in w.result_area.value


def test_an_empty_box_is_unanswered_and_a_typed_zero_is_judged():
    w = CardWidget(sc.card("Q7"))
    assert all(box.value == "" for box in w.inputs.values())  # boxes start empty, not at 0
    assert all(v is None for v in w.answers().values())
    w.inputs["launch_ms"].value = "0"  # what a learner types
    w.enter("launch_pct", 0)
    assert w.answers()["launch_ms"] == 0.0 and w.answers()["launch_pct"] == 0.0
    statuses = [r.status for r in w.press_check()]
    assert statuses == ["wrong", "wrong", "unanswered", "unanswered", "unanswered"]
    w.enter("launch_ms", None)
    assert w.press_check()[0].status == "unanswered"


def test_a_box_that_is_not_a_number_is_named_not_raised():
    w = CardWidget(sc.card("Q5"))
    w.inputs["mbu_pct"].value = "about eighty"
    w.enter("achieved_tbps", 2.67)
    results = w.press_check()
    assert results[0].status == "right" and results[1].status == "unanswered"
    assert "'about eighty' is not a number" in w.result_text().splitlines()[1]
    assert 'data-status="unreadable"' in w.result_area.value


def test_widget_buttons_drive_the_same_methods():
    w = CardWidget(sc.card("Q7"))
    w.enter("two_speedup_x", 5)
    w.check_button.click()
    assert w.results[-1].trap == "added the speedups"
    w.reveal_button.click()
    assert w.revealed and "Worked answer" in w.answer_area.value and "1.25×" in w.answer_area.value
    w.reveal_button.click()
    assert not w.revealed and w.answer_area.value == ""


def test_widget_shuffle_swaps_the_card_and_still_checks():
    w = CardWidget(sc.card("Q6"), seed=3)
    first = w.card
    w.enter("cost_single_usd", 4.17)
    shuffled = w.press_shuffle()
    assert shuffled is w.card and not shuffled.is_default and shuffled.expected() != first.expected()
    assert w.result_text() == "" and set(w.inputs) == set(shuffled.answer_names())
    assert all(v is None for v in w.answers().values())  # the boxes were cleared
    assert "(shuffled numbers)" in w.header.value
    for name, value in shuffled.expected().items():
        w.enter(name, value)
    assert all(r.status == "right" for r in w.press_check())
    assert w.press_reset().is_default


def test_two_widgets_with_one_seed_shuffle_alike():
    a, b = CardWidget(sc.card("Q2"), seed=4), CardWidget(sc.card("Q2"), seed=4)
    assert [dict(a.press_shuffle().params) for _ in range(3)] == [
        dict(b.press_shuffle().params) for _ in range(3)
    ]


def test_widget_rejects_unknown_answer_names():
    w = CardWidget(sc.card("Q5"))
    with pytest.raises(rl.InvalidConfigurationError, match="no answer"):
        w.enter("mbu", 80)
    assert repr(w) == "<CardWidget Q5: achieved_tbps, mbu_pct>"


def test_the_question_is_shown_once_with_a_static_fallback():
    c = sc.card("Q1")
    w = CardWidget(c)
    bundle = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/html"] == c.question_html()  # what a front end without widgets shows
    assert w.header.value == c.question_html(answer_table=False)  # the widget shows it itself, once,
    assert "<table" not in w.header.value  # with the answers to give listed at the boxes instead
    units = [row.children[2].value for row in w.input_box.children]
    assert units == ["ms  (±5%)", "tokens/s  (±5%)", "ms  (±5%)", "%  (±5%)"]
    assert bundle["text/plain"] == repr(w)


def test_labels_and_buttons_get_the_width_they_need():
    w = CardWidget(sc.card("Q7"))
    assert w.shuffle_button.description == "Shuffle the numbers"
    for button in (w.check_button, w.reveal_button, w.shuffle_button, w.reset_button):
        assert button.layout.width == "auto" and button.layout.min_width == "max-content"
    labels = [row.children[0] for row in w.input_box.children]
    assert [lab.value for lab in labels] == [a.label for a in w.card.answers]  # full text, in HTML that wraps
