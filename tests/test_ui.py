"""Behaviour of the explorers' controls (roofline.ui.widgets) and of the Scenario's price rule.

Typed values, menus without dead ends, the cost following the GPU's listed price, set-up buttons, presets,
reset, the pinned baseline, the projector scale and the text an unrun explorer shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import ipywidgets as W
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.lessons.scenario import Scenario, listed_price
from roofline.ui.widgets import RUN_HINT, Explorer, NumberControl, Reveal, combine_readouts, decode_readout
from roofline.views.plots import CostVsBatch, StepTimeVsBatch

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
ALL = ["batch", "context_tokens", "model", "gpu", "num_gpus", "weight_precision", "kv_precision"]


def cell(html_text: str, key: str) -> str:
    """The text of the readout cell whose data-key is ``key`` (what the browser tests read)."""
    match = re.search(rf'data-key="{re.escape(key)}"><b>([^<]*)</b>', html_text)
    assert match, f"no readout cell {key!r}"
    return match.group(1)


def ms(text: str) -> float:
    return float(re.search(r"([0-9.]+) ms", text).group(1))


@pytest.fixture
def explorer():
    return Explorer(StepTimeVsBatch, controls=[*ALL, "usd_per_gpu_hour"], scenario=Scenario(batch=32))


# ---- typed values ----------------------------------------------------------------------------------


def test_a_typed_batch_between_the_slider_stops_is_used_and_joins_the_slider(explorer):
    explorer.controls["batch"].box.value = 37  # 37 is not one of the slider's round stops
    assert explorer.scenario.batch == 37
    assert explorer.controls["batch"].slider.value == 37
    expected = Scenario(batch=37).decode().step_time_s * 1e3
    assert ms(cell(explorer.readout.value, "step time")) == pytest.approx(expected, abs=0.006)


def test_a_slider_move_updates_the_box(explorer):
    explorer.controls["context_tokens"].slider.value = 4096
    assert explorer.controls["context_tokens"].box.value == 4096
    assert explorer.scenario.context_tokens == 4096


def test_context_zero_can_be_typed():
    c = NumberControl([128, 1000], 1000, "context", minimum=0)
    c.box.value = 0
    assert c.value == 0 and c.slider.value == 0


def test_the_box_refuses_values_outside_its_bounds():
    c = NumberControl([1, 2], 2, "batch", minimum=1, maximum=4096)
    c.box.value = 0  # BoundedIntText clamps to its minimum
    assert c.value == 1


# ---- menus without dead ends -------------------------------------------------------------------------


def test_the_model_menu_marks_what_each_model_needs(explorer):
    labels = dict((value, label) for label, value in explorer.controls["model"].options)
    # Llama 3 70B in BF16: 70.6e9 parameters x 2 bytes = 141 GB of weights > one H100's 80 GB; two hold 160.
    assert labels["llama-3-70b"] == "llama-3-70b (needs ≥ 2 GPUs)"
    assert labels["llama-3-8b"] == "llama-3-8b"  # 16 GB fits on one


def test_choosing_a_model_that_needs_more_gpus_raises_g_with_a_note(explorer):
    explorer.set(batch=1)
    explorer.controls["model"].value = "llama-3-70b"
    assert explorer.scenario.num_gpus == 2
    assert explorer.controls["num_gpus"].value == 2
    assert "G raised from 1 to 2" in explorer.message.value
    assert "does not fit" not in cell(explorer.readout.value, "step time")


def test_no_dead_end_even_without_a_gpu_count_control():
    ex = Explorer(StepTimeVsBatch, controls=["model"], scenario=Scenario(batch=1))
    ex.controls["model"].value = "llama-3-70b"
    assert ex.scenario.num_gpus == 2 and "G raised" in ex.message.value


def test_g_is_raised_far_enough_for_the_batch_when_possible():
    ex = Explorer(StepTimeVsBatch, controls=["model", "batch"], scenario=Scenario(batch=64))
    ex.controls["model"].value = "llama-3-70b"
    s = ex.scenario
    assert s.decode().fits  # the chosen G holds the weights and all 64 users
    assert not s.with_(num_gpus=s.num_gpus // 2).decode().fits  # and half of it would not


def test_a_model_that_fits_nowhere_says_so():
    ex = Explorer(StepTimeVsBatch, controls=["model", "gpu"], scenario=Scenario(gpu="l4"))
    ex.controls["model"].value = "llama-3.1-405b"  # 810 GB of BF16 weights; 8 L4s hold 192 GB
    assert "does not fit even on 8" in ex.message.value


def test_precisions_a_gpu_lacks_are_marked(explorer):
    explorer.controls["gpu"].value = "a100-80gb-sxm"
    labels = [label for label, _ in explorer.controls["weight_precision"].options]
    assert "fp8 (not on a100-80gb-sxm)" in labels and "bf16" in labels


# ---- cost follows the GPU ------------------------------------------------------------------------------


def test_switching_gpu_brings_that_gpus_listed_price_into_the_cost(explorer):
    explorer.set(batch=8)  # 8 users x 1,000 tokens x 128 KiB + 16 GB of weights fit in the L4's 24 GB
    explorer.controls["gpu"].value = "l4"
    l4 = rl.get_price("aws-g6-l4").usd_per_gpu_hour
    assert explorer.scenario.usd_per_gpu_hour == l4
    assert explorer.controls["usd_per_gpu_hour"].value == pytest.approx(l4)
    # cost = $/GPU-hour x G / (tokens/s x 3,600 s/h) x 10^6 tokens
    tps = Scenario(gpu="l4", batch=8).decode().tokens_per_s_total
    assert cell(explorer.readout.value, "cost per 1M tokens") == f"${l4 / (tps * 3600) * 1e6:.2f}"
    assert "$3.00" not in explorer.readout.value


def test_a_typed_price_is_used_until_the_gpu_changes(explorer):
    explorer.controls["usd_per_gpu_hour"].value = 2.0
    assert explorer.scenario.usd_per_gpu_hour == 2.0 and explorer.scenario.price_id is None
    tps = Scenario(batch=32).decode().tokens_per_s_total
    assert cell(explorer.readout.value, "cost per 1M tokens") == f"${2.0 / (tps * 3600) * 1e6:.2f}"
    explorer.controls["gpu"].value = "a100-40gb"
    assert explorer.scenario.usd_per_gpu_hour == rl.get_price("lambda-a100-40gb").usd_per_gpu_hour


def test_a_gpu_without_a_listed_price_shows_no_cost_until_one_is_typed(explorer):
    explorer.controls["gpu"].value = "h200"
    assert explorer.scenario.usd_per_gpu_hour is None
    assert "no price" in cell(explorer.readout.value, "cost per 1M tokens")
    explorer.controls["usd_per_gpu_hour"].value = 4.0
    assert cell(explorer.readout.value, "cost per 1M tokens").startswith("$")


def test_cost_is_shown_for_the_ideal_and_the_achievable_step():
    text = decode_readout(Scenario(batch=16))
    ideal, real = cell(text, "cost per 1M tokens"), cell(text, "cost per 1M tokens (achievable)")
    # The achievable step is longer than the floor, so its tokens cost more.
    assert float(real[1:]) > float(ideal[1:])
    assert ms(cell(text, "step time (achievable)")) > ms(cell(text, "step time"))
    assert "a good engine (vllm)" in text


def test_the_cost_figure_draws_no_cost_without_a_price():
    fig = CostVsBatch(Scenario(gpu="h200", batch=8))
    assert np.all(np.isnan(fig.curves[0].get_ydata()))
    assert "no listed price" in fig.fig.get_suptitle()


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(list(rl.gpus())), st.sampled_from(list(rl.gpus())))
def test_scenario_price_always_follows_the_gpu(first, second):
    s = Scenario(gpu=first).with_(gpu=second)
    row = next((p for p in rl.prices().values() if p.gpu == second), None)
    assert s.usd_per_gpu_hour == (None if row is None else row.usd_per_gpu_hour)
    assert listed_price(second) == row


# ---- set-up buttons, presets, reset, pin, scale --------------------------------------------------------


def test_a_setup_button_puts_the_question_in_the_explorer(explorer):
    button = explorer.setup_button("Question 2", model="llama-3-70b", num_gpus=2, weight_precision="fp8")
    button.click()
    s = explorer.scenario
    assert (s.model, s.num_gpus, s.weight_precision) == ("llama-3-70b", 2, "fp8")
    assert explorer.controls["weight_precision"].value == "fp8"
    expected = s.decode().step_time_s * 1e3
    assert ms(cell(explorer.readout.value, "step time")) == pytest.approx(expected, abs=0.006)


def test_a_setup_button_can_set_fields_without_a_control():
    ex = Explorer(StepTimeVsBatch, controls=["batch"])
    ex.setup_button(kv_precision="fp8", batch=64).click()
    assert ex.scenario.kv_precision == "fp8" and ex.scenario.batch == 64


def test_reveal_with_setup_shows_a_button_then_the_folded_answer(explorer, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    Reveal("Check", "<p>x</p>", setup=(explorer, {"batch": 64}, "Set up question 1"))._ipython_display_()
    button, answer = shown
    assert button.description == "Set up question 1"
    assert answer._repr_html_().startswith('<details class="roofline-reveal">')  # plain HTML, readable unrun
    assert "Run the notebook" in button._repr_mimebundle_()["text/plain"]
    button.click()
    assert explorer.scenario.batch == 64
    assert not hasattr(Reveal("Check", "<p>x</p>"), "_ipython_display_")  # plain: an HTML result


def test_a_setup_button_starts_from_the_explorers_starting_scenario(explorer):
    explorer.set(gpu="h200", kv_precision="fp8", context_tokens=8192)
    explorer.setup_button(batch=64).click()
    assert explorer.scenario == Scenario(batch=64)


def test_presets_and_reset():
    ex = Explorer(StepTimeVsBatch, controls=["batch", "context_tokens"], presets={"card": {"batch": 64}})
    ex.apply_preset("card")
    assert ex.scenario.batch == 64
    ex.set(context_tokens=4096)
    ex.reset()
    assert ex.scenario == Scenario()
    assert ex.controls["batch"].value == 1 and ex.controls["context_tokens"].value == 1000


def test_pinning_keeps_grey_curves_that_do_not_move(explorer):
    explorer.pin()
    pinned = [a for a in explorer.live._pinned if hasattr(a, "get_ydata")]
    before = [np.array(line.get_ydata()) for line in pinned]
    explorer.set(batch=256, context_tokens=8192)
    assert pinned and all(
        np.array_equal(b, line.get_ydata(), equal_nan=True) for b, line in zip(before, pinned, strict=True)
    )
    explorer.unpin()
    assert explorer.live._pinned == []


def test_projector_scale_enlarges_the_picture(explorer):
    width = explorer.live.fig.canvas.get_width_height()[0]
    explorer.set_scale(1.5)
    assert explorer.live.fig.canvas.get_width_height()[0] == round(width * 1.5)
    assert "--rs: 1.5" in explorer.style_html.value


# ---- how it shows ------------------------------------------------------------------------------------


def test_an_unrun_explorer_says_how_to_use_it(explorer):
    bundle = explorer._repr_mimebundle_()
    assert bundle["text/plain"].startswith(RUN_HINT)
    assert RUN_HINT == "Run the notebook (Run ▸ Run All Cells) to use the sliders."


def test_the_readout_wraps_below_the_figure_when_narrow(explorer):
    row = explorer.children[-1]
    assert row.layout.flex_flow == "row wrap"
    assert explorer.image.layout.max_width == "900px"


def test_building_and_moving_an_explorer_prints_nothing(capsys):
    ex = Explorer(StepTimeVsBatch, controls=ALL)
    ex.set(batch=64)
    assert capsys.readouterr().out == ""


def test_an_impossible_choice_shows_the_library_error_and_keeps_the_last_state(explorer):
    explorer.controls["gpu"].value = "a100-80gb-sxm"
    explorer.controls["weight_precision"].value = "fp8"
    assert "Not possible" in explorer.message.value
    assert explorer.scenario.weight_precision == "bf16"


def test_controls_are_standard_widgets():
    ex = Explorer(StepTimeVsBatch, controls=["batch", "gpu"])
    assert isinstance(ex.controls["batch"], NumberControl)
    assert isinstance(ex.controls["gpu"], W.Dropdown)


def test_combined_readouts_stack_in_order():
    both = combine_readouts(lambda s: "<p>first</p>", lambda s, options: f"<p>{options.get('k')}</p>")
    assert both(Scenario(), {"k": "second"}) == "<p>first</p><p>second</p>"


def test_menu_marks_follow_the_gpu_count(explorer):
    explorer.set(batch=1)
    explorer.controls["model"].value = "llama-3-70b"  # G raised to 2
    labels = dict((value, label) for label, value in explorer.controls["model"].options)
    assert labels["llama-3-70b"] == "llama-3-70b"  # two GPUs hold it: no longer marked
    assert explorer.controls["model"].value == "llama-3-70b"  # relabelling kept the choice


def test_the_readout_names_the_price_and_the_engine():
    text = decode_readout(Scenario(gpu="l4", batch=8))
    assert "price: AWS list price (aws-g6-l4" in text and "calibration of vllm" in text


# ---- the lessons that use the toolkit --------------------------------------------------------------------

MY_LESSONS = [
    "01_token_cost", "02_decode_floor", "04_roofline", "06_benchmarks_that_lie", "09_gpu_util",
    "16_step_time", "28_kv_cache", "60_amdahl",
]  # fmt: skip
# Questions about a computation beside the lesson's explorer, not about the explorer's settings.
NO_EXPLORER_QUESTION = {("06_benchmarks_that_lie", "latency_summary"), ("60_amdahl", "decode_profile")}


@pytest.mark.parametrize("lesson", MY_LESSONS)
def test_every_question_has_a_setup_button_and_a_hidden_answer(lesson):
    nb = json.loads((NOTEBOOKS / f"{lesson}.ipynb").read_text())
    answers = [c for c in nb["cells"] if c["cell_type"] == "code" and "Reveal(" in "".join(c["source"])]
    assert answers
    for c in answers:
        source = "".join(c["source"])
        assert c["metadata"].get("jupyter", {}).get("source_hidden"), f"answer code visible: {source[:60]}"
        if not any(lesson == name and key in source for name, key in NO_EXPLORER_QUESTION):
            assert re.search(r"setup=\(\s*ex,", source), f"no set-up button: {source[:60]}"


@pytest.mark.parametrize("lesson", [*MY_LESSONS, "00_start_here"])
def test_explorer_cells_are_the_unrun_hint_when_stored(lesson):
    nb = json.loads((NOTEBOOKS / f"{lesson}.ipynb").read_text())
    for c in nb["cells"]:
        for out in c.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                assert "Run the notebook (Run ▸ Run All Cells)" in "".join(data["text/plain"])


def test_gpus_without_the_weight_precision_are_marked(explorer):
    explorer.controls["weight_precision"].value = "fp8"
    labels = dict((value, label) for label, value in explorer.controls["gpu"].options)
    assert labels["a100-80gb-sxm"] == "a100-80gb-sxm (no fp8)"  # Ampere has no FP8 tensor cores
    assert labels["h100-sxm"] == "h100-sxm"


def test_a_setup_with_a_gpu_and_a_price_keeps_the_price(explorer):
    explorer.setup_button(gpu="l4", usd_per_gpu_hour=1.25, batch=8).click()
    assert explorer.scenario.gpu == "l4" and explorer.scenario.usd_per_gpu_hour == 1.25
    explorer.controls["gpu"].value = "h100-sxm"  # a later GPU change by hand brings the listed price again
    assert explorer.scenario.usd_per_gpu_hour == rl.get_price("h100-example-3usd").usd_per_gpu_hour
