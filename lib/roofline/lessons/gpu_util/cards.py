"""Card Q5, "GPU-util is 100%, we need more GPUs": achieved bandwidth and MBU instead of GPU-util.

Taught in notebooks/09_gpu_util.ipynb (also lessons 16, 59 and 60); practised in
notebooks/pack01_speed_physics.ipynb.

A batch-1 decode step reads every weight: achieved bandwidth = weight bytes ÷ measured step, MBU =
achieved ÷ peak bandwidth. GPU-util (a duty cycle) and power say neither.

>>> n = numbers(scenario(Q5.default_params()))
>>> round(n["achieved_tbps"], 3), round(n["mbu_pct"], 1)     # 16e9 / 6e-3 = 2.667e12 B/s; / 3.35e12
(2.667, 79.6)
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
    gpu_peak_flops_per_s,
    memory_floor_s,
    quoted_parameters,
    quoted_weight_bytes,
)
from roofline.course.cards import CardCode, read_card, sig
from roofline.data import get_gpu, get_model
from roofline.physics.memory import check_fits
from roofline.physics.metrics import achieved_bandwidth_bytes_per_s, mbu, mfu
from roofline.physics.step import decode_floor_s, prefill_flops
from roofline.units import TB

PERCENT = 100.0


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that the weights fit; add the parameter count and weight bytes the scenario quotes."""
    check_fits(params["model"], params["gpu"], 1, 0, weight_precision=params["weight_precision"])
    return {**params, "parameters": quoted_parameters(params), "weight_bytes": quoted_weight_bytes(params)}


def numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """Q5's answers, trap values and the figures its text quotes, from the roofline library."""
    g = get_gpu(s["gpu"])
    bw, w, step = g.memory_bandwidth_bytes_per_s, s["weight_bytes"], s["measured_step_s"]
    one_token_flops = prefill_flops(s["parameters"], 1)  # 2 × N FLOP
    read = float(exact_decode(s, 1, 0).bytes_moved)
    mbu_pct = mbu(w, step, bw) * PERCENT
    mfu_pct = mfu(one_token_flops, step, gpu_peak_flops_per_s(s)) * PERCENT
    power_share_pct = s["power_w"] / g.power_w * PERCENT
    return dict(
        achieved_tbps=achieved_bandwidth_bytes_per_s(w, step) / TB,
        mbu_pct=mbu_pct,
        gpu_util_pct=float(s["gpu_util_pct"]),  # the dashboard's GPU-util, read as a utilisation
        power_share_pct=power_share_pct,  # power draw ÷ power cap
        mfu_pct=mfu_pct,  # one token's 2·N FLOP over the step, ÷ peak FLOP/s
        inverted_mbu_pct=step / decode_floor_s(w, bw) * PERCENT,  # measured ÷ floor
        # the library's exact answers (the bytes ``decode_step`` reads)
        achieved_tbps_exact=achieved_bandwidth_bytes_per_s(read, step) / TB,
        mbu_pct_exact=mbu(read, step, bw) * PERCENT,
        exact_read_bytes=read,
        # the figures the text quotes
        model_name=get_model(s["model"]).name,
        gpu_name=g.name,
        bandwidth_bytes_per_s=bw,
        power_cap_w=g.power_w,
        mbu=mbu_pct / PERCENT,
        mfu=mfu_pct / PERCENT,
        power_share=power_share_pct / PERCENT,
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled Q5 scenario: model, GPU, precision, and a measured step, power and GPU-util."""
    setup = draw_setup(rng)
    floor = memory_floor_s(setup["model"], setup["gpu"], setup["weight_precision"])
    return dict(
        **setup,
        measured_step_s=sig(floor / rng.uniform(0.45, 0.92), 2),
        power_w=float(round(get_gpu(setup["gpu"]).power_w * rng.uniform(0.35, 0.6), -1)),
        gpu_util_pct=float(choice(rng, [97, 99, 100])),
    )


Q5 = read_card(Path(__file__).with_name("cards.toml"), CardCode(scenario, numbers, draw))
