"""Every explorer's controls do what they say: moving any one of them changes the figure or the readout;
the engine menu starts on the engine people run on the GPU; the explorers the learner's path named as dead
or missing now have their controls."""

from __future__ import annotations

import ipywidgets as W
import pytest
from lesson_registry import lesson_explorers

from roofline import engines
from roofline.course.widgets import NumberControl
from roofline.lessons.compute_bound import saturation_explorer
from roofline.lessons.floor_to_real_server import achievable_explorer
from roofline.lessons.your_own_hardware.lab import home_explorer

MAKERS = [m for makers in lesson_explorers().values() for m in makers] + [home_explorer]


def _values(widget) -> list:
    """Other values a control can take, nearest first."""
    if isinstance(widget, NumberControl):
        stops = list(widget.slider.options)
        i = stops.index(widget.value)
        near = stops[i + 1 : i + 2] + stops[max(i - 1, 0) : i] + stops[-1:]
        return [v for v in near if v != widget.value]
    if isinstance(widget, W.Checkbox):
        return [not widget.value]
    options = [o[1] if isinstance(o, tuple) else o for o in getattr(widget, "options", ())]
    if options:
        return [o for o in options if o != widget.value][:6]
    step = getattr(widget, "step", None) or 1
    return [widget.value + step, widget.value * 2 or 1]


def _state(ex) -> tuple:
    return ex.image.value, ex.readout.value


def moves(ex, name: str, widget) -> bool:
    """Whether setting the control ``name`` to one of its other values changes the figure or the readout."""
    for value in _values(widget):
        before = _state(ex)
        ex.set(**{name: value})
        if _state(ex) != before and "Not possible" not in ex.message.value:
            return True
    return False


@pytest.mark.parametrize("maker", MAKERS, ids=lambda m: m.__name__)
def test_moving_any_control_changes_the_figure_or_the_readout(maker):
    """Each control is moved from where the previous one left the explorer (one redraw a control, not two:
    a control that changes nothing changes nothing from any state). An explorer that shows an engine's
    figure has an engine menu."""
    ex = maker()
    if "a good engine (" in ex.readout.value or "achievable (" in ex.readout.value:
        assert "engine" in ex.knobs, f"{maker.__name__} shows an engine's figure without an engine menu"
    dead = []
    for name, widget in {**ex.controls, **ex.knobs}.items():
        if name == "usd_per_gpu_hour":
            continue  # a price moves the cost only where the GPU has one: tests/test_ui.py
        if not moves(ex, name, widget):
            ex.reset()  # back to the start: the earlier moves may have led where it cannot move
            if not moves(ex, name, widget):
                dead.append(name)
    assert not dead, f"{maker.__name__}: moving {dead} changes neither the figure nor the readout"


def test_the_engine_people_run_is_the_default_and_one_rule_says_so():
    # Macs run llama.cpp, GeForce cards its 2025 CUDA builds; datacenter GPUs a serving engine (vLLM)
    for gpu in ("m4-max", "m2-ultra"):
        assert engines.default_engine(gpu) == "llama.cpp"
    for gpu in ("rtx-4090", "rtx-3090", "rtx-5090"):
        assert engines.default_engine(gpu) == "llama.cpp-2025"
    for gpu in ("h100-sxm", "a100-80gb-sxm", "l4", "mi300x", "b200"):
        assert engines.default_engine(gpu) == "vllm"
    known = set(engines.engine_ids())
    from roofline.data import gpus

    for e in engines.engine_ids():  # every GPU a row names exists
        assert set(engines.get_engine(e).default_on) <= set(gpus()), e
    assert "llama.cpp" in known


def test_the_engine_menu_follows_the_gpu_until_the_learner_picks_one():
    ex = achievable_explorer()
    assert ex.knobs["engine"].value == "vllm" and "achievable (vllm)" in ex.readout.value
    ex.set(gpu="m4-max")
    assert ex.knobs["engine"].value == "llama.cpp" and "achievable (llama.cpp)" in ex.readout.value
    ex.set(engine="sglang")
    ex.set(gpu="h100-sxm")
    assert ex.knobs["engine"].value == "sglang"  # a chosen engine stays


def test_lesson_61s_batch_moves_its_figure():
    ex = saturation_explorer()
    before = ex.image.value
    ex.set(batch=64)
    assert ex.image.value != before
    # the ring at B sits at B's step: 64 users at 128 tokens read the 15.01 GB of weights and
    # 64 × 128 × 131,072 B of KV: (15.01e9 + 1.07e9) / 3.35e12 = 4.80 ms
    x, y = ex.live.here.get_data()
    assert x[0] == pytest.approx((15.01e9 + 64 * 128 * 131072) / 3.35e12 * 1e3, rel=0.002)
    assert y[0] == pytest.approx(64 / (x[0] / 1e3), rel=1e-6)


def test_the_floor_to_a_real_server_has_a_precision_control_and_a_cost():
    ex = achievable_explorer()
    assert "weight_precision" in ex.controls
    assert "cost per 1M tokens" in ex.readout.value
    bf16 = ex.readout.value
    ex.set(weight_precision="fp8")
    assert ex.readout.value != bf16


def test_your_own_hardware_has_a_figure_and_batch_and_gpu_count_controls():
    ex = home_explorer(model="llama-3-8b")
    assert {"batch", "num_gpus", "weight_precision", "model"} <= set(ex.controls) and "engine" in ex.knobs
    rows = {r["gpu"]: r for r in ex.live.rows}
    assert rows["m4-max"]["engine"] == "llama.cpp"
    one = rows["rtx-4090"]["engine_tokens_per_s_total"]
    ex.set(batch=8)
    rows = {r["gpu"]: r for r in ex.live.rows}
    # 8 users share each weight read: more tokens/s in all, fewer for each
    assert rows["rtx-4090"]["engine_tokens_per_s_total"] > 4 * one
    assert rows["rtx-4090"]["engine_tokens_per_s"] < one
