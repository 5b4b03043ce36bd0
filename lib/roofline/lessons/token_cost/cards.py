"""Card Q6, "What does a million tokens cost?": price per million tokens alone and batched, and why.

Taught in notebooks/01_token_cost.ipynb (also lesson 02); practised in notebooks/pack01_speed_physics.ipynb.

A GPU-hour costs the same whatever it yields: $ per million tokens = $ per hour × hours per million =
price ÷ (tokens/s × 3,600) × 10⁶. The batched rate comes from the batched step (weights + everyone's KV
over the bandwidth).

>>> n = numbers(scenario(Q6.default_params()))
>>> round(n["cost_single_usd"], 3), round(n["cost_batched_usd"], 4)   # 3 / (200 × 3600) × 1e6; 4,300 tokens/s
(4.167, 0.1938)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from roofline.course.card_scenarios import (
    choice,
    draw_setup,
    exact_decode,
    fitting,
    memory_bound_decode,
    quoted_kv_bytes_per_token,
    quoted_weight_bytes,
)
from roofline.course.cards import CardCode, read_card, sig
from roofline.data import get_gpu
from roofline.lessons.step_time.cards import batched_step_numbers
from roofline.physics.cost import cost_per_million_tokens_usd, seconds_per_million_tokens, tokens_per_hour
from roofline.physics.memory import check_fits
from roofline.physics.step import batched_step_time_s, decode_floor_s
from roofline.units import SECONDS_PER_HOUR, TOKENS_PER_MILLION


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that the batch fits; add the sizes and the round speeds (2 digits) the scenario quotes."""
    b, t = params["batch"], params["context_tokens"]
    check_fits(params["model"], params["gpu"], b, t, weight_precision=params["weight_precision"])
    bw = get_gpu(params["gpu"]).memory_bandwidth_bytes_per_s
    w, kv = quoted_weight_bytes(params), quoted_kv_bytes_per_token(params, "bf16")
    single, batched = params.get("tps_single"), params.get("tps_batched")
    return {
        **params,
        "weight_bytes": w,
        "kv_bytes_per_token": kv,
        "tps_single": sig(1.0 / decode_floor_s(w, bw), 2) if single is None else single,
        "tps_batched": sig(b / batched_step_time_s(w, b, t, kv, bw), 2) if batched is None else batched,
    }


def price_slips(price: float, tokens_per_s: float, case: str) -> dict[str, float]:
    """The four pricing slips for one rate (``case`` names it: ``single`` or ``batched``)."""
    hours = seconds_per_million_tokens(tokens_per_s) / SECONDS_PER_HOUR  # GPU-hours per million tokens
    return {
        f"hours_{case}": hours,
        f"price_over_hours_{case}": price / hours,  # $/hour ÷ hours per million
        f"tokens_per_dollar_{case}": tokens_per_hour(tokens_per_s) / price,
        f"million_tokens_per_dollar_{case}": tokens_per_hour(tokens_per_s) / price / TOKENS_PER_MILLION,
        # × 3,600: the price of the speed left per second
        f"per_second_price_{case}": cost_per_million_tokens_usd(price, tokens_per_s) * SECONDS_PER_HOUR,
    }


def numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """Q6's answers, trap values and the figures its text quotes, from the roofline library."""
    shared = batched_step_numbers(s)
    price, b, t = s["usd_per_gpu_hour"], s["batch"], s["context_tokens"]
    r1, rb = s["tps_single"], s["tps_batched"]
    c1, cb = cost_per_million_tokens_usd(price, r1), cost_per_million_tokens_usd(price, rb)
    e1, eb = (float(exact_decode(s, n, t).tokens_per_s_total) for n in (1, b))
    million_s = seconds_per_million_tokens(r1)
    return dict(
        **shared,
        cost_single_usd=c1,
        cost_batched_usd=cb,
        **price_slips(price, r1, "single"),
        **price_slips(price, rb, "batched"),
        one_stream_usd=cost_per_million_tokens_usd(price, rb / b),  # priced one user's share
        total_tps=b * (1.0 / shared["step_s"]),  # the GPU's total, given as one user's rate
        # the library's exact answers (``decode_step``, priced with the same formula)
        cost_single_usd_exact=cost_per_million_tokens_usd(price, e1),
        cost_batched_usd_exact=cost_per_million_tokens_usd(price, eb),
        exact_tps_single=e1,
        exact_tps_batched=eb,
        # the figures the text quotes
        tokens_per_hour_single=tokens_per_hour(r1),
        million_tokens_per_hour_batched=tokens_per_hour(rb) / 1e6,
        cost_ratio=c1 / cb,
        million_tokens_s=million_s,
        million_tokens_s_tenth=million_s / 10,
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled Q6 scenario: model, GPU, precision, price per GPU-hour, batch, context."""
    setup = draw_setup(rng)
    return dict(
        **setup,
        usd_per_gpu_hour=float(round(rng.uniform(0.8, 7.0), 2)),
        batch=int(choice(rng, [8, 16, 32, 48, 64, 96, 128])),
        context_tokens=int(choice(rng, fitting((512, 1000, 2048, 4096, 8192), setup["model"]))),
    )


Q6 = read_card(Path(__file__).with_name("cards.toml"), CardCode(scenario, numbers, draw, memory_bound_decode))
