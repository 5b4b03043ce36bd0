"""The Pack 01 self-check cards: data rows in each lesson, answers computed by the library, scenarios, the
lessons each card revisits.

Golden values are worked out by hand from the study card's own inputs and the H100 SXM's data sheet
(16 GB of weights, 3.35 TB/s, 989 TFLOPS dense BF16, 700 W, 128 KiB (131,072 bytes) of KV per token,
$3 per GPU-hour); the arithmetic is written in each row.
"""

import dataclasses
import importlib
import subprocess
import sys

import pytest

import roofline as rl
from roofline.course.cards import read_card
from roofline.course.course_map import course_map
from roofline.errors import DataTableError
from roofline.lessons import pack01_speed_physics as sc

cards_module = importlib.import_module("roofline.lessons.pack01_speed_physics.cards")

BW = 3.35e12  # H100 SXM memory bandwidth, bytes/s
PEAK = 989e12  # H100 SXM dense BF16, FLOP/s
FLOOR = 16e9 / BW  # 4.776 ms: the study card's 16 GB read once; the card rounds it to 4.8 ms
STEP_Q3 = (16e9 + 32 * 1000 * 131072) / BW  # 20.194e9 B / 3.35e12 B/s = 6.028 ms; the card's 6.0 ms
STEP_Q6 = (16e9 + 64 * 4096 * 131072) / BW  # 50.36e9 B / 3.35e12 B/s = 15.03 ms

# (card, answer, hand-derived value in the answer's unit, the arithmetic)
GOLDEN = [
    ("Q1", "floor_ms", 4.8, "16e9 B / 3.35e12 B/s = 4.776 ms, which the card rounds to ≈ 4.8 ms"),
    ("Q1", "ceiling_tps", 200, "1 / 4.8 ms = 208, which the card rounds to ≈ 200 tokens/s"),
    ("Q1", "tp_floor_ms", 70e9 / (2 * BW) * 1e3, "70e9 / (2 × 3.35e12) = 10.448 ms"),
    ("Q1", "tp_mbu_pct", 70e9 / (2 * BW) / 14e-3 * 100, "10.448 ms / 14 ms = 74.6 %"),
    ("Q2", "prefill_ms", 2 * 8e9 * 500 / PEAK * 1e3, "2 × 8e9 × 500 = 8e12 FLOP / 989e12 = 8.09 ms > 4.78"),
    ("Q2", "paste_ms", 2 * 8e9 * 8000 / PEAK * 1e3, "2 × 8e9 × 8,000 = 1.28e14 FLOP / 989e12 = 129.4 ms"),
    ("Q2", "stalled_steps", (2 * 8e9 * 8000 / PEAK) / 4.8e-3, "129.4 ms / the card's 4.8 ms = 27.0 steps"),
    ("Q2", "ridge", PEAK / BW, "989e12 / 3.35e12 = 295.2 FLOP/byte"),
    ("Q3", "step_ms", 6.0, "(16e9 + 32 × 1,000 × 131,072) / 3.35e12 = 6.028 ms: the card's ≈ 6.0 ms"),
    ("Q3", "per_user_tps", 1 / 6e-3, "1 / 6.0 ms = 166.7 tokens/s"),
    ("Q3", "total_tps", 5300, "32 / 6.0 ms = 5,333: the card's ≈ 5,300 tokens/s"),
    ("Q3", "gain_x", 32 / (6.0 / 4.8), "32 / (6.0 ms / 4.8 ms) = 32 / 1.25 = 25.6×"),
    ("Q4", "ridge", PEAK / BW, "989e12 / 3.35e12 = 295.2 FLOP/byte"),
    (
        "Q4",
        "flip_batch",
        296.0,
        "2·B FLOP per 2 bytes = ridge at B = 295.2; the first whole batch past it: 296",
    ),
    ("Q5", "achieved_tbps", 16e9 / 6e-3 / 1e12, "16e9 B / 6 ms = 2.667 TB/s"),
    ("Q5", "mbu_pct", 16e9 / 6e-3 / BW * 100, "2.667e12 / 3.35e12 = 79.6 %"),
    ("Q6", "cost_single_usd", 3 / (200 * 3600) * 1e6, "$3 / (200 × 3,600 tokens) × 1e6 = $4.17"),
    ("Q6", "cost_batched_usd", 3 / (4300 * 3600) * 1e6, "$3 / (4,300 × 3,600) × 1e6 = $0.194"),
    ("Q6", "step_ms", STEP_Q6 * 1e3, "(16e9 + 64 × 4,096 × 131,072) / 3.35e12 = 15.03 ms"),
    ("Q6", "per_user_tps", 1 / STEP_Q6, "1 / 15.03 ms = 66.5 tokens/s"),
    ("Q7", "launch_ms", 300 * 4e-6 * 1e3, "300 × 4 µs = 1.2 ms"),
    ("Q7", "launch_pct", 1.2 / 4.8 * 100, "1.2 ms / 4.8 ms = 25 %"),
    ("Q7", "speedup_x", 1 / (0.7 + 0.3 / 3), "1 / (0.7 + 0.3 / 3) = 1 / 0.8 = 1.25"),
    ("Q7", "ceiling_x", 1 / 0.7, "1 / 0.7 = 1.43"),
    ("Q7", "two_speedup_x", 1 / (0.2 + 0.3 / 3 + 0.5 / 2), "1 / (0.2 + 0.1 + 0.25) = 1 / 0.55 = 1.82"),
]


@pytest.mark.parametrize("qid, name, value, arithmetic", GOLDEN)
def test_default_answers_are_computed_by_the_library(qid, name, value, arithmetic):
    assert sc.card(qid).answer(name).value == pytest.approx(value, rel=1e-9), arithmetic


def test_every_default_answer_has_a_golden_value():
    assert {(q, n) for q, n, _, _ in GOLDEN} == {
        (c.qid, a.name) for c in map(sc.card, sc.QIDS) for a in c.answers
    }


# (card, answer, the round figure the study card prints, how far its rounding lets it be)
STUDY_CARD = [
    ("Q1", "ceiling_tps", 200, 10),  # "≈ 200 tokens/s"
    ("Q1", "tp_mbu_pct", 74, 1),  # the card divides its rounded 10.4 ms: 74.3 %
    ("Q2", "prefill_ms", 8, 0.5),
    ("Q2", "paste_ms", 130, 5),
    ("Q3", "total_tps", 5300, 50),
    ("Q3", "gain_x", 25, 0.6),  # the card: 32 / 1.25 = 25.6, "≈ 25×"
    ("Q6", "cost_batched_usd", 0.19, 0.005),
    ("Q7", "ceiling_x", 1.43, 0.005),
]


@pytest.mark.parametrize("qid, name, figure, within", STUDY_CARD)
def test_the_study_cards_round_figures_are_accepted(qid, name, figure, within):
    assert sc.card(qid).answer(name).value == pytest.approx(figure, abs=within)
    (result,) = [r for r in sc.check(sc.card(qid), {name: figure}) if r.name == name]
    assert result.status == "right" and result.trap is None


def test_each_card_lives_in_its_lesson_and_the_pack_gathers_them():
    homes = {"Q1": "decode_floor", "Q2": "prefill_vs_decode", "Q3": "step_time", "Q4": "compute_bound",
             "Q5": "gpu_util", "Q6": "token_cost", "Q7": "amdahl"}  # fmt: skip
    assert sc.QIDS == tuple(homes)
    for qid, lesson in homes.items():
        facade = importlib.import_module(f"roofline.lessons.{lesson}")
        assert getattr(facade, qid) is cards_module.SPECS[qid]  # the lesson's façade exports its card
        number = next(r.number for r in course_map() if r.notebook.endswith(f"_{lesson}.ipynb"))
        assert number in facade.__dict__[qid].lessons, (qid, number)  # and the card revisits its lesson


def test_card_data_is_consistent():
    for qid, spec in cards_module.SPECS.items():
        assert spec.qid == qid and spec.lessons and spec.answers
        names = [a.name for a in spec.answers]
        assert len(names) == len(set(names)), qid
        numbers = spec.code.numbers(spec.code.scenario(spec.default_params()))
        for a in spec.answers:
            assert isinstance(numbers[a.name], float), (qid, a.name)
            assert a.exact is None or isinstance(numbers[a.exact], float), (qid, a.exact)
        for t in spec.traps:
            assert t.answer in names and t.value in numbers, (qid, t)
        assert set(spec.positive) <= set(spec.defaults), qid
        with pytest.raises(TypeError):
            spec.defaults["model"] = "llama-9"  # the study card's figures are read-only


def test_the_cards_lessons_agree_with_the_course_map():
    # The map lists, for each lesson, the study card's questions it answers: the same links both ways.
    rows = {r.number: r for r in course_map() if r.part == "card"}
    for card in map(sc.card, sc.QIDS):
        for number in card.lessons:
            assert card.qid in rows[number].card, (card.qid, number)
    for number, row in rows.items():
        for qid in row.card:
            assert number in sc.card(qid).lessons, (qid, number)


def test_building_a_card_never_changes_the_callers_dict():
    params = {"batch": 64, "context_tokens": 2000}
    snapshot = dict(params)
    card = sc.card("Q3", params)
    assert params == snapshot  # the stated figures were derived into a new dict
    assert card.params["weight_bytes"] == 16.1e9 and "weight_bytes" not in params
    with pytest.raises(TypeError):
        card.params["batch"] = 1  # a built card's scenario is read-only too
    for spec in cards_module.SPECS.values():
        given = spec.default_params()
        spec.code.scenario(given)
        assert given == spec.default_params(), spec.qid


def test_every_default_trap_differs_from_its_answer():
    for card in map(sc.card, sc.QIDS):
        assert len(card.traps) == card.trap_count_built, card.qid  # none was dropped
        for trap in card.traps:
            assert not card.answer(trap.answer).accepts(trap.value), (card.qid, trap.name)


def test_a_trap_equal_to_the_answer_is_dropped():
    # With 1 token of context the KV is 32 × 131 KB = 4 MB next to 16.1 GB of weights: one user's KV gives
    # the same step, so that trap cannot be told apart from the right answer and leaves the card.
    card = sc.card("Q3", {"context_tokens": 1})
    assert "one user's KV" not in {t.name for t in card.traps}
    assert len(card.traps) < card.trap_count_built
    assert "one user's KV" in {t.name for t in sc.card("Q3").traps}


def test_a_slip_that_is_the_scenarios_own_size_is_not_a_trap():
    # BF16 weights take 2 bytes: "as if 2 bytes" is the right answer, so only the 1- and 4-byte slips exist
    values = sorted(t.value for t in sc.card("Q4").traps if t.name == "wrong bytes per weight")
    assert values == pytest.approx([PEAK / BW * 1 / 2, PEAK / BW * 4 / 2])
    fp8 = sc.card("Q4", {"weight_precision": "fp8"})  # 1 byte: the 2- and 4-byte slips
    assert len([t for t in fp8.traps if t.name == "wrong bytes per weight"]) == 2


def test_every_card_has_its_parts_and_computed_numbers():
    for card in map(sc.card, sc.QIDS):
        assert card.is_default and card.answers and card.worked and card.mistake
        assert card.followup_question and card.followup_answer
        html = card.reveal_html()
        assert "Worked answer" in html and "Common mistake" in html and "Likely follow-up" in html
        assert "<table" in card._repr_html_() and card.qid in repr(card)
        assert "{" not in card.scenario + html  # every template field was filled
    assert "≈ <b>4.80 ms</b>" in sc.card("Q1").worked  # 16 GB / 3.35 TB/s, as the card rounds it
    assert "≈ <b>5,300 tokens/s</b>" in sc.card("Q3").worked  # 32 / 6.0 ms, as the card rounds it
    assert "1.82×" in sc.card("Q7").followup_answer  # 1 / 0.55
    assert "4.48 ms" in sc.card("Q1").reveal_html()  # the exact figures beside the card's (15.01 GB read)
    assert "the library's exact figure" not in sc.card("Q4").reveal_html()  # Q4 has none


def test_labels_and_trap_explanations_are_filled_from_the_scenario():
    card = sc.card("Q1", {"tp_num_gpus": 4, "tp_measured_s": 7e-3})
    assert card.answer("tp_floor_ms").label == "follow-up: floor on 4 GPUs"
    assert any("the 4 bandwidths add up" in t.why for t in card.traps)
    q3 = sc.card("Q3")
    (kv,) = [t for t in q3.traps if t.answer == "step_ms" and t.name == "one user's KV"]
    assert "32 × 1,000 × 128 KiB" in kv.why  # {kv_bytes_per_token!K} written as a size
    (gain,) = [t for t in q3.traps if t.name == "the full B× gain"]
    assert "got 1.25× longer" in gain.why  # the card's 6.0 ms / 4.8 ms
    assert "15.01 GB a step reads" in sc.card("Q1").answer("floor_ms").exact_why  # a shared phrase, filled


def test_scenario_text_follows_the_parameters():
    card = sc.card("Q3", {"batch": 64, "context_tokens": 2000})
    assert "64 users" in card.scenario and "2,000 tokens" in card.scenario and not card.is_default
    # 16.1 GB + 64 × 2,000 × 131 KB = 16.1 + 16.77 GB = 32.87 GB; / 3.35 TB/s = 9.81 ms
    assert card.answer("step_ms").value == pytest.approx((16.1e9 + 64 * 2000 * 131e3) / BW * 1e3)
    assert sc.card(
        "Q3", cards_module.SPECS["Q3"].default_params()
    ).is_default  # the card's own scenario, passed back


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
    with pytest.raises(rl.InvalidConfigurationError, match="must be > 0"):
        sc.card("Q6", {"usd_per_gpu_hour": 0})


def test_a_malformed_card_file_names_itself(tmp_path):
    path = tmp_path / "cards.toml"
    path.write_text('qid = "QX"\ntitle = "no answers"\nlessons = ["02"]\n[defaults]\n')
    with pytest.raises(DataTableError, match="cards.toml"):
        read_card(path, sc.card("Q1").spec.code)


def test_a_phrase_may_not_hide_a_figure():
    clash = dataclasses.replace(sc.card("Q4").spec, phrases={"ridge": "a sentence"})
    with pytest.raises(DataTableError, match="phrase 'ridge'"):
        clash.card()


def test_the_card_machinery_imports_neither_widgets_nor_plotting():
    code = (
        "import sys\n"
        "import roofline.course.cards, roofline.course.card_scenarios\n"
        "print(sorted(m for m in ('matplotlib', 'ipywidgets') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
