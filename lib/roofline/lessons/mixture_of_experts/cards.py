"""Card MOE, "It only reads the active experts, right?": a mixture of experts' weight read at batch 1 and at
batch B, the experts touched, and the batched step.

Taught in notebooks/mixture_of_experts.ipynb (and lesson 25, batching).

A token reads its k of E routed experts plus the shared part; B tokens touch E·(1 − (1 − k/E)^B) experts
per layer (``rl.expected_experts_touched``); the memory-bound step reads those weights and every user's KV.

>>> n = numbers(scenario(MOE.default_params()))
>>> round(n["b1_read_gb"], 1), round(n["touched"], 2)     # shared + 2 experts; 8 × (1 − 0.75^8)
(25.8, 7.2)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from roofline.course.card_scenarios import choice, fitting
from roofline.course.cards import CardCode, read_card, sig
from roofline.data import get_gpu, get_model, models
from roofline.errors import InvalidConfigurationError, RooflineError
from roofline.physics.architecture import (
    expected_experts_touched,
    kv_bytes_per_token,
    parameter_breakdown,
    weight_bytes,
)
from roofline.physics.core import memory_time_s
from roofline.physics.memory import check_fits, kv_cache_bytes
from roofline.physics.precision import bytes_per_element
from roofline.physics.step import decode_step
from roofline.units import GB, MS


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check the model is an MoE and the batch fits; add the quoted shared and per-expert bytes (3 digits)."""
    m, p = get_model(params["model"]), params["weight_precision"]
    if not m.is_moe:
        raise InvalidConfigurationError(f"{m.id} is not a mixture of experts")
    check_fits(m, params["gpu"], params["batch"], params["context_tokens"], num_gpus=params["num_gpus"],
               weight_precision=p)  # fmt: skip
    expert = parameter_breakdown(m)["expert_mlp"] / m.experts * bytes_per_element(p)
    shared = weight_bytes(m, p) - m.experts * expert
    return {
        **params,
        "experts": m.experts,
        "experts_per_token": m.experts_per_token,
        "shared_bytes": sig(shared),
        "expert_bytes": sig(expert),
        "kv_bytes_per_token": sig(kv_bytes_per_token(m)),
    }


def numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """MOE's answers, trap values and the figures its text quotes: experts touched from the library, bytes
    and times from the quoted figures."""
    e, k, b, t = s["experts"], s["experts_per_token"], s["batch"], s["context_tokens"]
    shared, expert, kv = s["shared_bytes"], s["expert_bytes"], s["kv_bytes_per_token"]
    bw = s["num_gpus"] * get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s
    touched = float(expected_experts_touched(s["model"], b))
    kv_all = kv_cache_bytes(b, t, kv)
    big, active = shared + expert * touched, shared + expert * k
    big_step, active_step = memory_time_s(big + kv_all, bw), memory_time_s(active + kv_all, bw)
    return dict(
        b1_read_gb=active / GB,
        touched=touched,
        big_read_gb=big / GB,
        big_step_ms=big_step / MS,
        all_resident_gb=(shared + e * expert) / GB,
        users_times_k=float(b * k),
        k_only=float(k),
        active_read_gb=active / GB,
        active_step_ms=active_step / MS,
        # the figures the text quotes
        kv_gb=kv_all / GB,
        model_name=get_model(s["model"]).name,
        gpu_name=get_gpu(s["gpu"]).name,
        bandwidth_bytes_per_s=bw,
        big_step_s=big_step,
        active_step_s=active_step,
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled MOE scenario: an MoE model whose routed experts are all there is to route (no shared expert,
    no dense layers), GPU, GPU count, precision, batch, context."""
    routed = [m.id for m in models().values() if m.is_moe and not getattr(m, "shared_experts", 0)]
    model = choice(rng, [m for m in routed if not getattr(get_model(m), "first_dense_layers", 0)])
    return dict(
        model=model,
        gpu=choice(rng, ["h100-sxm", "h200", "b200", "mi300x", "a100-80gb-sxm"]),
        num_gpus=int(choice(rng, [1, 2, 4, 8])),
        weight_precision=choice(rng, ["bf16", "fp8"]),
        batch=int(choice(rng, [4, 8, 16, 32, 64])),
        context_tokens=int(choice(rng, fitting((500, 1000, 2000, 4096), model))),
    )


def usable(params: Mapping[str, Any]) -> bool:
    """The step is memory-bound and fits (the card's formula), and the GPU has the precision's math."""
    try:
        step = decode_step(
            params["model"], params["gpu"], params["batch"], params["context_tokens"],
            num_gpus=params["num_gpus"], weight_precision=params["weight_precision"], on_overflow="mask",
        )  # fmt: skip
    except RooflineError:
        return False
    return bool(step.fits) and step.binding == "memory"


MOE = read_card(Path(__file__).with_name("cards.toml"), CardCode(scenario, numbers, draw, usable))
