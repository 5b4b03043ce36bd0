"""Card Q3, "32 users means 32× slower, right?": the batched step, each user's and the GPU's tokens/s.

Taught in notebooks/16_step_time.ipynb (also lessons 02, 25 and 28); practised in
notebooks/pack01_speed_physics.ipynb.

The batch shares one weight read per step and adds every user's KV: step = (weights + B × context × KV per
token) ÷ bandwidth; each user gets a token per step, the GPU B tokens.

>>> n = numbers(scenario(Q3.default_params()))
>>> round(n["step_ms"], 3), round(n["total_tps"])     # (16e9 + 32 × 1,000 × 131,072) / 3.35e12; 32 / step
(6.028, 5308)
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
from roofline.course.cards import CardCode, read_card
from roofline.data import get_gpu, get_model
from roofline.physics.memory import check_fits, kv_cache_bytes
from roofline.physics.step import batched_step_time_s, decode_floor_s
from roofline.units import MS


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that the batch fits; add the weight bytes and KV bytes per token the scenario quotes."""
    check_fits(params["model"], params["gpu"], params["batch"], params["context_tokens"],
               weight_precision=params["weight_precision"], kv_precision=params["kv_precision"])  # fmt: skip
    return {
        **params,
        "weight_bytes": quoted_weight_bytes(params),
        "kv_bytes_per_token": quoted_kv_bytes_per_token(params, params["kv_precision"]),
    }


def batched_step_numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """Cards Q3 and Q6's batched step from the quoted weights and KV per token over the bandwidth, with one
    user's KV instead of everyone's (the slip), beside the library's exact step (ms, s, tokens/s, bytes)."""
    bw = get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s
    w, kv, b, t = s["weight_bytes"], s["kv_bytes_per_token"], s["batch"], s["context_tokens"]
    step, one_kv = batched_step_time_s(w, b, t, kv, bw), batched_step_time_s(w, 1, t, kv, bw)
    exact, kv_all = exact_decode(s, b, t), kv_cache_bytes(b, t, kv)
    return dict(
        step_ms=step / MS,
        per_user_tps=1.0 / step,
        one_kv_step_ms=one_kv / MS,  # one user's KV in the byte sum instead of everyone's
        one_kv_per_user_tps=1.0 / one_kv,
        # the library's exact answers (``decode_step``: the bytes a step reads)
        step_ms_exact=float(exact.step_time_s) / MS,
        per_user_tps_exact=float(exact.tokens_per_s_per_user),
        exact_weight_read_bytes=float(exact.weight_bytes_read),
        # the figures the text quotes
        model_name=get_model(s["model"]).name,
        gpu_name=get_gpu(s["gpu"]).name,
        bandwidth_bytes_per_s=bw,
        step_s=step,
        one_kv_step_s=one_kv,
        kv_all_bytes=kv_all,
        read_bytes=w + kv_all,
    )


def numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """Q3's answers, trap values and the figures its text quotes, from the roofline library."""
    shared = batched_step_numbers(s)
    w, kv, b, t = s["weight_bytes"], s["kv_bytes_per_token"], s["batch"], s["context_tokens"]
    bw, step, one_kv = shared["bandwidth_bytes_per_s"], shared["step_s"], shared["one_kv_step_s"]
    floor = decode_floor_s(w, bw)
    single = 1.0 / floor
    exact, exact_one = exact_decode(s, b, t), exact_decode(s, 1, t)
    return dict(
        **shared,
        total_tps=b / step,
        gain_x=(b / step) / single,
        one_kv_total_tps=b / one_kv,
        b_times_step_ms=b * floor / MS,  # the PM's claim: B single-user steps
        b_times_per_user_tps=single / b,
        full_gain_x=float(b),
        stretch=step / floor,  # batched step ÷ single-user step
        total_tps_exact=float(exact.tokens_per_s_total),
        gain_x_exact=float(exact.tokens_per_s_total * exact_one.step_time_s),
        floor_s=floor,
        single_tps=single,
        one_user_kv_bytes=kv_cache_bytes(1, t, kv),
        slowdown=step / floor - 1,
        batch_over_stretch=b / (step / floor),
        queued_step_s=batched_step_time_s(w, s["queued_users"], t, kv, bw),
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled Q3 scenario: model, GPU, weight and KV precisions, batch, context."""
    setup = draw_setup(rng)
    return dict(
        **setup,
        kv_precision=choice(rng, ["bf16", "fp8"]),
        batch=int(choice(rng, [4, 8, 16, 24, 32, 48, 64, 96, 128])),
        context_tokens=int(choice(rng, fitting((500, 1000, 2000, 4096, 8192), setup["model"]))),
    )


Q3 = read_card(Path(__file__).with_name("cards.toml"), CardCode(scenario, numbers, draw, memory_bound_decode))
