"""Card Q3, "32 users means 32× slower, right?": the batched step, each user's and the GPU's tokens/s.

Taught in notebooks/16_step_time.ipynb (also lessons 02, 25 and 28); practised in
notebooks/pack01_speed_physics.ipynb.

The batch shares one weight read per step and adds every user's KV: step = (weights + B × context × KV per
token) ÷ bandwidth; each user gets a token per step, the GPU B tokens.

>>> n = numbers(scenario(Q3.default_params()))     # the card's round figures
>>> n["step_ms"], n["total_tps"], n["gain_x"], round(n["per_user_tps"])    # 32 ÷ (6.0 / 4.8); 1 ÷ 6.0 ms
(6.0, 5300.0, 25.6, 167)
>>> round(Q3.card({"weight_bytes": 16e9, "kv_bytes_per_token": 131072}).answer("step_ms").value, 2)
6.03
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
    stated_or_worked,
)
from roofline.course.cards import CardCode, read_card
from roofline.data import get_gpu, get_model
from roofline.physics.memory import check_fits, kv_cache_bytes
from roofline.physics.step import batched_step_time_s, decode_floor_s
from roofline.units import MS


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that the batch fits; add the weight bytes, KV bytes per token, steps and speeds the worked
    answer quotes (the card's own round figures, else worked out)."""
    check_fits(params["model"], params["gpu"], params["batch"], params["context_tokens"],
               weight_precision=params["weight_precision"], kv_precision=params["kv_precision"])  # fmt: skip
    bw = get_gpu(params["gpu"]).memory_bandwidth_bytes_per_s
    w, kv = quoted_weight_bytes(params), quoted_kv_bytes_per_token(params, params["kv_precision"])
    b, t = params["batch"], params["context_tokens"]
    floor = stated_or_worked(params, "floor_s", lambda: decode_floor_s(w, bw))
    step = stated_or_worked(params, "step_s", lambda: batched_step_time_s(w, b, t, kv, bw))
    return {
        **params,
        "weight_bytes": w,
        "kv_bytes_per_token": kv,
        "floor_s": floor,
        "single_tps": stated_or_worked(params, "single_tps", lambda: 1.0 / floor),
        "step_s": step,
        "total_tps": stated_or_worked(params, "total_tps", lambda: b / step),
    }


def batched_step_numbers(s: Mapping[str, Any], step_s: float | None = None) -> dict[str, Any]:
    """Cards Q3 and Q6's batched step from the quoted weights and KV per token over the bandwidth (or the
    ``step_s`` the scenario quotes), with one user's KV instead of everyone's (the slip), beside the
    library's exact step (ms, s, tokens/s, bytes)."""
    bw = get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s
    w, kv, b, t = s["weight_bytes"], s["kv_bytes_per_token"], s["batch"], s["context_tokens"]
    step = batched_step_time_s(w, b, t, kv, bw) if step_s is None else step_s
    one_kv = batched_step_time_s(w, 1, t, kv, bw)
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
    shared = batched_step_numbers(s, s["step_s"])
    w, kv, b, t = s["weight_bytes"], s["kv_bytes_per_token"], s["batch"], s["context_tokens"]
    bw, step, one_kv = shared["bandwidth_bytes_per_s"], shared["step_s"], shared["one_kv_step_s"]
    floor, single = s["floor_s"], s["single_tps"]
    exact, exact_one = exact_decode(s, b, t), exact_decode(s, 1, t)
    return dict(
        **shared,
        total_tps=s["total_tps"],
        gain_x=b / (step / floor),  # the card's 32 ÷ 1.25
        one_kv_total_tps=b / one_kv,
        b_times_step_ms=b * floor / MS,  # the PM's claim: B single-user steps
        b_times_per_user_tps=single / b,
        full_gain_x=float(b),
        stretch=step / floor,  # batched step ÷ single-user step
        total_tps_exact=float(exact.tokens_per_s_total),
        gain_x_exact=float(exact.tokens_per_s_total * exact_one.step_time_s),
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
