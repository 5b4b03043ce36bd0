"""Figures, readouts and explorers of the lever lessons (quantization, speculative decoding, mixture of
experts, attention variants): they draw what the library computes, survive every control, and say so when a
configuration is impossible."""

from __future__ import annotations

import re

import numpy as np
import pytest

import roofline as rl
from roofline.lessons import attention_variants, mixture_of_experts, quantization, speculative_decoding
from roofline.physics.speculative import speculative_step
from roofline.scenario import Scenario
from roofline.units import MS, KiB


def _cells(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-key="([^"]+)"><b>([^<]*)</b>', html))


def test_supported_precisions_follow_the_gpu_table():
    assert quantization.supported_precisions("h100-sxm") == ["bf16", "fp8", "int8", "int4"]
    # the A100 has no FP8 math: the quantization figure leaves it out instead of inventing a rate
    assert "fp8" not in quantization.supported_precisions("a100-80gb-sxm")


def test_quantization_figure_draws_the_library_ratio():
    s = Scenario(batch=64, context_tokens=128)
    fig = quantization.QuantizationVsBatch(s)
    _, ratio = fig.lines["int4"]
    x, y = ratio.get_data()
    i = 20
    b = int(x[i])  # a batch of the sweep
    bf = rl.decode_step("llama-3-8b", "h100-sxm", b, 128)
    q4 = rl.decode_step("llama-3-8b", "h100-sxm", b, 128, weight_precision="int4")
    assert np.isclose(y[i], bf.step_time_s / q4.step_time_s)
    assert len(fig.png()) > 5_000
    fig.update(s.with_(gpu="a100-80gb-sxm"))  # no fp8 on this GPU: its curve is empty, no error
    assert len(fig.lines["fp8"][0].get_data()[0]) == 0


def test_quantization_readout_lists_each_precision():
    cells = _cells(quantization.quantization_readout(Scenario(batch=1, context_tokens=1000)))
    assert {k for k in cells if " (" not in k} == {"bf16", "fp8", "int8", "int4"}  # a row each
    q4 = rl.decode_step("llama-3-8b", "h100-sxm", 1, 1000, weight_precision="int4")
    assert cells["int4 (step)"] == f"{q4.step_time_s / MS:.2f}\u00a0ms"


def test_speculative_readout_matches_the_physics():
    s = Scenario(batch=8, context_tokens=128)
    options = {"draft_tokens": 3, "acceptance": 0.6, "draft_cost_ratio": 0.1}
    cells = _cells(speculative_decoding.speculative_readout(s, options))
    x = speculative_step(
        "llama-3-8b", "h100-sxm", 8, 128, draft_tokens=3, acceptance=0.6, draft_cost_ratio=0.1
    )
    assert (
        cells["tokens per verify step"] == f"{x.expected_tokens_per_step:.2f}"
    )  # 1 + .6 + .36 + .216 = 2.18
    assert cells["tokens per verify step"] == "2.18"
    assert cells["speed-up"] == f"{x.speedup:.2f}x"


def test_speculative_figure_marks_the_collapse_and_follows_the_knobs():
    fig = speculative_decoding.SpeculativeSpeedupVsBatch(
        Scenario(context_tokens=128), acceptance=0.7, draft_tokens=4
    )
    assert any("< 1×" in t.get_text() for t in fig.axes[1].texts)
    fig.options.update(acceptance=1.0, draft_cost_ratio=0.0)
    fig.update(Scenario(context_tokens=4096))  # long context: memory runs out before the gain does
    assert not any("< 1×" in t.get_text() for t in fig.axes[1].texts)


def test_speculative_explorer_knobs_move_the_readout():
    ex = speculative_decoding.speculative_explorer()
    before = _cells(ex.readout.value)["tokens per verify step"]
    ex.set(acceptance=1.0, draft_tokens=2)
    assert _cells(ex.readout.value)["tokens per verify step"] == "3.00" != before


def test_moe_figure_and_readout():
    s = Scenario(model="mixtral-8x7b", num_gpus=2, batch=8)
    fig = mixture_of_experts.MoEReadVsBatch(s)
    x, y = fig.touched["mixtral-8x7b"].get_data()
    assert np.isclose(y[0], 2 / 8) and np.isclose(y[-1], 1.0)  # one token: k/E; a big batch: all
    cells = _cells(mixture_of_experts.moe_readout(s))
    assert cells["experts touched per layer"] == f"{8 * (1 - 0.75**8):.1f} of 8"  # 7.2
    dense = _cells(mixture_of_experts.moe_readout(Scenario(batch=8)))
    assert dense["experts"] == "dense model"


def test_attention_helpers():
    assert rl.kv_bytes_per_token(attention_variants.as_mqa("llama-3-8b")) == 2 * 32 * 1 * 128 * 2
    assert attention_variants.attention_kind("llama-2-7b") == "MHA"
    assert attention_variants.attention_kind("llama-3-8b") == "GQA 32:8"
    assert attention_variants.attention_kind(attention_variants.as_mqa("llama-3-8b")) == "MQA"
    if "mistral-7b" in rl.models() and rl.get_model("mistral-7b").sliding_window:
        assert "window" in attention_variants.attention_kind("mistral-7b")


def test_attention_readout_and_figure():
    s = Scenario(context_tokens=4096, batch=16)
    cells = _cells(attention_variants.attention_readout(s))
    assert cells["KV per token (full layers)"] == f"{128:.1f} KiB"
    assert cells["largest batch that fits"] == f"{rl.max_batch('llama-3-8b', 'h100-sxm', 4096):,} users"
    fig = attention_variants.KvPerUserVsContext(s)
    assert len(fig.png()) > 5_000
    assert rl.kv_bytes_per_token("llama-3-8b") / KiB == 128


def test_kv_bar_figure_builds():
    fig = attention_variants.kv_per_token_figure("bf16")
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert any("MQA" in label for label in labels)


@pytest.mark.parametrize(
    "factory",
    [
        quantization.quantization_explorer,
        speculative_decoding.speculative_explorer,
        mixture_of_experts.moe_explorer,
        attention_variants.attention_explorer,
    ],
)
def test_explorers_show_an_error_instead_of_a_wrong_figure(factory):
    ex = factory()
    ex.set(batch=1024, context_tokens=131072)  # beyond memory or context for the default models
    assert ex.message.value == "" or "Not possible" in ex.message.value
    ex.set(batch=1, context_tokens=1000)
    assert ex.message.value == ""
