"""Behaviour of the explorers' controls (roofline.ui.widgets) and of the Scenario's price rule.

Typed values, menus without dead ends, the cost following the GPU's listed price, set-up buttons, presets,
reset, the pinned baseline and the text an unrun explorer shows.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import ipywidgets as W
import matplotlib.colors
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lesson_registry import lesson_explorers

import roofline as rl
from roofline import engines
from roofline.course.figures import alt_text
from roofline.course.readouts import combine_readouts, decode_readout
from roofline.course.widgets import RUN_HINT, Explorer, NumberControl, Prediction
from roofline.lessons import (
    batching,
    chunked_prefill,
    compute_bound,
    gpu_util,
    speculative_decoding,
    step_time,
    tensor_parallel,
)
from roofline.lessons.step_time.lab import StepTimeVsBatch
from roofline.lessons.token_cost.lab import CostVsBatch
from roofline.measure import userdata
from roofline.measure.bench import Measurement
from roofline.pricing import default_price
from roofline.scenario import Scenario

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
OTHERS_NOTEBOOKS = {"slos_and_capacity"}  # owned by others: their cells may differ
ALL = ["batch", "context_tokens", "model", "gpu", "num_gpus", "weight_precision", "kv_precision"]
MY_BOX = Measurement(  # a measured machine: 200 GB/s, 2 TFLOP/s of FP32, 64 GB of memory
    memory_bandwidth_bytes_per_s=200e9,
    matmul_flops_per_s=2e12,
    ridge_flop_per_byte=10.0,
    call_overhead_s=1e-6,
    matmul_fp64_flops_per_s=1e12,
    threads={"cpu_count": 2, "blas": "test", "blas_threads": None},
    details={"ram_bytes": 64e9, "quick": True, "stream": {}},
)


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
    assert labels["llama-3-70b"] == "llama-3-70b (≥ 2 GPUs)"
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


@pytest.fixture
def my_machine(tmp_path, monkeypatch):
    """A machine the learner measured and saved (``roofline measure --save``): a GPU row with no price."""
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    userdata.save_user_gpu("my-box", MY_BOX)  # reloads the tables
    yield "my-box"
    monkeypatch.undo()
    userdata.reload_tables()


def test_a_gpu_without_a_listed_price_shows_no_cost_until_one_is_typed(my_machine):
    ex = Explorer(
        StepTimeVsBatch, controls=[*ALL, "usd_per_gpu_hour"], scenario=Scenario(model="llama-3.2-1b")
    )
    ex.controls["gpu"].value = my_machine
    assert ex.scenario.gpu == my_machine and ex.scenario.usd_per_gpu_hour is None
    assert "no price" in cell(ex.readout.value, "cost per 1M tokens")
    ex.controls["usd_per_gpu_hour"].value = 4.0
    assert cell(ex.readout.value, "cost per 1M tokens").startswith("$")


def test_every_gpu_in_the_tables_brings_a_price_and_a_cost():
    ex = Explorer(StepTimeVsBatch, controls=["gpu", "weight_precision", "usd_per_gpu_hour"],
                  scenario=Scenario(model="llama-3.2-1b", context_tokens=128))  # fmt: skip
    for gpu in rl.gpus():
        ex.controls["gpu"].value = gpu
        assert ex.scenario.gpu == gpu and ex.scenario.usd_per_gpu_hour > 0, gpu
        assert cell(ex.readout.value, "cost per 1M tokens").startswith("$"), (gpu, ex.message.value)


def test_a_gpu_without_the_weights_precision_switches_to_the_nearest_it_has():
    ex = Explorer(
        StepTimeVsBatch, controls=["gpu", "weight_precision"], scenario=Scenario(model="llama-3.2-1b")
    )
    ex.controls["gpu"].value = "m4-max"  # Apple GPUs compute FP16, not BF16
    assert ex.scenario.weight_precision == "fp16" and ex.controls["weight_precision"].value == "fp16"
    assert "no bf16 math" in ex.message.value and "Not possible" not in ex.message.value
    labels = dict((value, label) for label, value in ex.controls["weight_precision"].options)
    assert labels["bf16"] == "bf16 (not on m4-max)" and labels["fp16"] == "fp16"


def test_cost_is_shown_for_the_ideal_and_the_achievable_step():
    text = decode_readout(Scenario(batch=16))
    ideal, real = cell(text, "cost per 1M tokens"), cell(text, "cost per 1M tokens (achievable)")
    # The achievable step is longer than the floor, so its tokens cost more.
    assert float(real[1:]) > float(ideal[1:])
    assert ms(cell(text, "step time (achievable)")) > ms(cell(text, "step time"))
    assert "a good engine (vllm)" in text


def test_the_cost_figure_draws_no_cost_without_a_price(my_machine):
    fig = CostVsBatch(Scenario(model="llama-3.2-1b", gpu=my_machine, weight_precision="fp32", batch=8))
    assert np.all(np.isnan(fig.curves[0].get_ydata()))
    assert "no listed price" in fig.fig.get_suptitle()


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(list(rl.gpus())), st.sampled_from(list(rl.gpus())))
def test_scenario_price_always_follows_the_gpu(first, second):
    s = Scenario(gpu=first).with_(gpu=second)
    row = next((p for p in rl.prices().values() if p.gpu == second), None)
    assert s.usd_per_gpu_hour == (None if row is None else row.usd_per_gpu_hour)
    assert default_price(second) == row


# ---- set-up buttons, presets, reset, pin --------------------------------------------------------------


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


# ---- how it shows ------------------------------------------------------------------------------------


def test_an_unrun_explorer_says_how_to_use_it(explorer):
    bundle = explorer._repr_mimebundle_()
    assert bundle["text/plain"].startswith(RUN_HINT)
    assert RUN_HINT == "Run the notebook (Run ▸ Run All Cells) to use the sliders."


def test_the_readout_wraps_below_the_figure_when_narrow(explorer):
    row = explorer.children[-1]
    assert row is explorer.figure_row and row.layout.flex_flow == "row wrap"
    assert explorer.image.layout.max_width == "720px"  # beside a readout, within a 1440 px screen


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
NO_EXPLORER_QUESTION = {
    ("06_benchmarks_that_lie", "latency_summary"),
    ("06_benchmarks_that_lie", "benchmark_ttft"),
    ("60_amdahl", "decode_profile"),
}


@pytest.mark.parametrize("lesson", MY_LESSONS)
def test_every_question_has_a_setup_button_and_a_hidden_answer(lesson):
    nb = json.loads((NOTEBOOKS / f"{lesson}.ipynb").read_text())
    answers = [c for c in nb["cells"] if c["cell_type"] == "code" and "Prediction(" in "".join(c["source"])]
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


# ---- the engine column describes the lesson's case ---------------------------------------------------


def _engine_ms(s, *parts, communication=None):
    """What a good engine takes for the lesson's step(s), computed here from the engine itself: each
    (physics step, times it runs) timed by ``StepTimer.of_step``."""
    timer = engines.StepTimer(
        "vllm", s.model, s.gpu, num_gpus=s.num_gpus, weight_precision=s.weight_precision,
        communication=communication,
    )  # fmt: skip
    return sum(float(timer.of_step(step).total_s) * n for step, n in parts) * 1e3


def test_the_engine_column_describes_each_lessons_case():
    # lesson 25: the batched server's step of all U users, not the scenario's batch of 1
    ex = batching.serving_explorer()
    s = ex.scenario
    assert s.batch == 1 and "one decode step of 20 users" in ex.readout.value
    want = _engine_ms(s, (rl.decode_step(s.model, s.gpu, 20, s.context_tokens), 1))
    assert ms(cell(ex.readout.value, "step time (achievable)")) == pytest.approx(want, abs=0.006)

    # lesson 24: the step on G GPUs with its all-reduces, or without them when the knob is off
    ex = tensor_parallel.tensor_parallel_explorer()
    s = ex.scenario
    with_comm = rl.decode_step(
        s.model, s.gpu, 1, 0, num_gpus=2, weight_precision="fp8", include_communication=True
    )
    assert ms(cell(ex.readout.value, "step time")) == pytest.approx(with_comm.step_time_s * 1e3, abs=0.006)
    want = _engine_ms(s, (with_comm, 1), communication=True)
    assert ms(cell(ex.readout.value, "step time (achievable)")) == pytest.approx(want, abs=0.006)
    ex.set(communication=False)
    want_off = _engine_ms(s, (rl.decode_step(s.model, s.gpu, 1, 0, num_gpus=2, weight_precision="fp8"), 1),
                          communication=False)  # fmt: skip
    assert ms(cell(ex.readout.value, "step time (achievable)")) == pytest.approx(want_off, abs=0.006)
    assert want_off < want  # the all-reduces cost a real engine time too

    # lesson 44: the mixed step (the decoders plus one prompt chunk), not plain decode
    ex = chunked_prefill.chunk_explorer()
    s = ex.scenario
    mixed = rl.mixed_step(s.model, s.gpu, s.batch, s.context_tokens, s.chunk_tokens)
    assert "the mixed step" in ex.readout.value
    assert ms(cell(ex.readout.value, "step time")) == pytest.approx(mixed.step_time_s * 1e3, abs=0.006)
    want = _engine_ms(s, (mixed, 1))
    assert ms(cell(ex.readout.value, "step time (achievable)")) == pytest.approx(want, abs=0.006)

    # the speculative lesson: a cycle of k drafts at r plain steps each, then the verify step of k + 1 tokens
    ex = speculative_decoding.speculative_explorer()
    s, o = ex.scenario, ex.live.options
    k, r = o["draft_tokens"], o["draft_cost_ratio"]
    verify = rl.forward_step(s.model, s.gpu, s.batch, s.context_tokens, new_tokens=k + 1)
    plain = rl.forward_step(s.model, s.gpu, s.batch, s.context_tokens, new_tokens=1)
    assert "then the verify step" in ex.readout.value
    want = _engine_ms(s, (verify, 1), (plain, k * r))
    assert ms(cell(ex.readout.value, "step time (achievable)")) == pytest.approx(want, abs=0.006)

    # lesson 61: its own batch, past the flip (compute-bound), not batch 1
    ex = compute_bound.saturation_explorer()
    assert ex.scenario.batch > rl.compute_bound_batch("llama-3-8b", "h100-sxm", ex.scenario.context_tokens)
    assert "(compute-bound)" in cell(ex.readout.value, "step time")


def test_an_impossible_choice_leaves_no_stale_number_under_the_message():
    ex = gpu_util.utilization_explorer()  # lesson 09, where the reviewer found stale numbers
    ex.controls["gpu"].value = "a100-80gb-sxm"
    ex.controls["weight_precision"].value = "fp8"  # no FP8 math on an A100
    assert "Not possible" in ex.message.value
    assert "data-key" not in ex.readout.value and "No numbers for this choice" in ex.readout.value
    assert "roofline-stale" in ex.image._dom_classes
    ex.controls["weight_precision"].value = "bf16"
    assert "Not possible" not in ex.message.value and "roofline-stale" not in ex.image._dom_classes
    assert cell(ex.readout.value, "cost per 1M tokens").startswith("$")


def test_a_setup_button_asks_the_page_to_bring_the_explorer_into_view(explorer):
    explorer.setup_button("Set up question 1", batch=64).click()
    assert 'class="roofline-scroll-request"' in explorer.message.value
    explorer.setup_button("Set up question 2", batch=8).click()  # a new request each time
    assert explorer.message.value.count("roofline-scroll-request") == 1


def test_a_prediction_must_be_written_before_the_answer_opens(explorer):
    p = Prediction(
        "Check your prediction", "<p>14.7 ms</p>", setup=(explorer, {"batch": 64}, "Set up question 1")
    )
    button, row, answer = p.children
    assert button.description == "Set up question 1"
    assert "Run the notebook" in button._repr_mimebundle_()["text/plain"]  # unrun, it says how to use it
    assert p.open_button.disabled and "14.7 ms" not in answer.value  # the answer is not in the page yet
    p.open_answer()  # nothing written: nothing opens
    assert "14.7 ms" not in answer.value
    p.box.value = "  "
    assert p.open_button.disabled
    p.box.value = "about 15 ms"
    p.open_button.click()
    assert "14.7 ms" in answer.value and "about 15 ms" in answer.value
    bundle = p._repr_mimebundle_()  # unrun: the folded answer for a static viewer, a hint for JupyterLab
    assert (
        bundle["text/html"].startswith('<details class="roofline-reveal">')
        and "Run the notebook" in bundle["text/plain"]
    )


def test_figures_carry_alt_text_and_controls_mark_the_four_axes():
    ex = step_time.step_time_explorer()
    assert alt_text(ex.live).startswith("Figure (StepTimeVsBatch):") and "B=32" in alt_text(ex.live)
    assert html.escape(alt_text(ex.live)) in ex.alt.value
    ex.set(batch=64)
    assert "B=64" in ex.alt.value  # the description follows the figure
    axes = {c for w in ex.controls.values() for c in w._dom_classes if c.startswith("roofline-axis-")}
    assert axes == {"roofline-axis-B", "roofline-axis-T", "roofline-axis-P", "roofline-axis-G"}
    bundle = StepTimeVsBatch(
        Scenario()
    )._repr_mimebundle_()  # a static figure in a notebook: an image with alt
    assert bundle["text/html"].startswith('<img alt="Figure (StepTimeVsBatch):')


def test_every_lesson_notebook_shows_the_explorers_its_lesson_offers():
    for lesson, makers in lesson_explorers().items():
        source = "".join(
            "".join(c["source"]) for c in json.loads((NOTEBOOKS / f"{lesson}.ipynb").read_text())["cells"]
        )
        called = set(re.findall(r"lesson\.(\w+_explorer)\(", source))
        assert called == {m.__name__ for m in makers}, lesson
        if lesson not in OTHERS_NOTEBOOKS:
            assert "lesson.Explorer(" not in source, f"{lesson} builds an explorer inline"


def test_the_dashboards_latency_gauges_are_colour_blind_safe():
    from roofline.lessons.dashboard.lab import GAUGE_OK, GAUGE_OVER, DashboardFigure

    okabe_ito = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"}
    assert {
        GAUGE_OK,
        GAUGE_OVER,
    } <= okabe_ito  # blue and vermillion: told apart by every kind of colour vision
    # 300 users at 4,096 tokens: 198 wait for a slot, so TTFT is far past its 1 s target; TPOT is not
    fig = DashboardFigure(Scenario(batch=300, context_tokens=4096))
    ttft, tpot = fig.bars["ttft"][0], fig.bars["tpot"][0]
    assert fig.dashboard.ttft_p50_s > 1.0 and fig.dashboard.tpot_p99_s < 0.05
    assert matplotlib.colors.to_hex(ttft.get_facecolor()).upper() == GAUGE_OVER.upper() and ttft.get_hatch()
    assert matplotlib.colors.to_hex(tpot.get_facecolor()).upper() == GAUGE_OK.upper() and not tpot.get_hatch()
