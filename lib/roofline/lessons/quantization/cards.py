"""Card QUANT, "INT4 makes it 4× faster?": the speed-up of weight-only INT4 over BF16 at batch 1 and at a
large, compute-bound batch.

Taught in notebooks/quantization.ipynb (and lessons 16 and 61: the step-time model, the compute-bound flip).

The card's step: max((weights + B × T × KV per token) ÷ bandwidth, 2 × N × B ÷ peak). Weight-only INT4
(W4A16) shrinks the weights but multiplies in BF16, so its peak is BF16's.

>>> n = numbers(scenario(QUANT.default_params()))
>>> round(n["b1_speedup_x"], 2), round(n["big_speedup_x"], 2)   # (16.1 + 128 × 131e3) ÷ (5.7 + …); same math
(2.82, 1.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from roofline.course.card_scenarios import choice, dense_models, fitting, gpu_ids, supports
from roofline.course.cards import CardCode, read_card, sig
from roofline.data import get_gpu, get_model
from roofline.errors import RooflineError
from roofline.physics.architecture import active_parameter_count, kv_bytes_per_token, weight_bytes
from roofline.physics.core import compute_time_s
from roofline.physics.memory import check_fits
from roofline.physics.precision import peak_flops_per_s
from roofline.physics.step import batched_step_time_s
from roofline.units import MS


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that BF16 fits at the large batch; add the figures the scenario quotes (3 digits)."""
    m = get_model(params["model"])
    check_fits(m, params["gpu"], params["batch"], params["context_tokens"])
    return {
        **params,
        "bf16_bytes": sig(weight_bytes(m, "bf16")),
        "int4_bytes": sig(weight_bytes(m, "int4")),
        "parameters": sig(active_parameter_count(m)),
        "kv_bytes_per_token": sig(kv_bytes_per_token(m)),
    }


def step_s(weights: float, s: Mapping[str, Any], batch: int, peak: float) -> tuple[float, float]:
    """The card's step (s) with ``weights`` bytes at ``batch`` and ``peak`` FLOP/s, and its memory time."""
    bw = get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s
    memory = batched_step_time_s(weights, batch, s["context_tokens"], s["kv_bytes_per_token"], bw)
    return max(memory, compute_time_s(2 * s["parameters"] * batch, peak)), memory


def numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """QUANT's answers, trap values and the figures its text quotes, with the library's step formulas."""
    g = get_gpu(s["gpu"])
    bf16_peak, b = peak_flops_per_s(g, "bf16"), s["batch"]
    b1_bf, _ = step_s(s["bf16_bytes"], s, 1, bf16_peak)
    b1_q4, _ = step_s(s["int4_bytes"], s, 1, bf16_peak)
    big_bf, mem_bf = step_s(s["bf16_bytes"], s, b, bf16_peak)
    big_q4, mem_q4 = step_s(s["int4_bytes"], s, b, bf16_peak)
    compute = compute_time_s(2 * s["parameters"] * b, bf16_peak)
    if supports(s["gpu"], "fp8"):
        big_f8, _ = step_s(s["bf16_bytes"] / 2, s, b, peak_flops_per_s(g, "fp8"))
        speedup = big_bf / big_f8
        fp8_line = f"FP8 weights with FP8 math (W8A8) halve the math time too: {speedup:.2f}× over BF16 here."
    else:
        fp8_line = (
            f"The {g.name} has no FP8 tensor-core math, so no format here speeds up the compute-bound step."
        )
    return dict(
        b1_speedup_x=b1_bf / b1_q4,
        big_bf16_ms=big_bf / MS,
        big_int4_ms=big_q4 / MS,
        big_speedup_x=big_bf / big_q4,
        bits_ratio=4.0,
        bytes_ratio_big=mem_bf / mem_q4,
        int4_memory_ms=mem_q4 / MS,
        compute_ms=compute / MS,
        # the figures the text quotes
        model_name=get_model(s["model"]).name,
        gpu_name=g.name,
        parameters_billions=s["parameters"] / 1e9,
        bandwidth_bytes_per_s=g.memory_bandwidth_bytes_per_s,
        peak_flops_per_s=bf16_peak,
        compute_s=compute,
        bf16_memory_s=mem_bf,
        int4_memory_s=mem_q4,
        big_bf16_s=big_bf,
        big_int4_s=big_q4,
        fp8_line=fp8_line,
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled QUANT scenario: dense model, GPU, a short context and a large batch."""
    model, gpu = choice(rng, dense_models()), choice(rng, [g for g in gpu_ids() if supports(g, "bf16")])
    return dict(
        model=model,
        gpu=gpu,
        context_tokens=int(choice(rng, fitting((128, 256, 500), model))),
        batch=int(choice(rng, [256, 384, 512, 768, 1024])),
    )


def usable(params: Mapping[str, Any]) -> bool:
    """BF16 fits at the large batch, and there the INT4 step is compute-bound (the card's point)."""
    try:
        n = numbers(scenario(params))
    except RooflineError:
        return False
    return n["compute_ms"] > n["int4_memory_ms"]


QUANT = read_card(Path(__file__).with_name("cards.toml"), CardCode(scenario, numbers, draw, usable))
