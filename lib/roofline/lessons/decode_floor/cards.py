"""Card Q1, "Can we advertise 300 tokens/s?": the decode floor, its tokens/s ceiling, and MBU on 2 GPUs.

Taught in notebooks/02_decode_floor.ipynb (also lessons 06, 16 and 24); practised in
notebooks/pack01_speed_physics.ipynb. The card's data rows are in ``cards.toml`` beside this module.

One user, so each decode step reads every weight once: floor = weight bytes ÷ bandwidth, ceiling = 1 ÷
floor. In tensor parallel over n GPUs the bandwidths add, and MBU = floor ÷ measured.

>>> n = numbers(scenario(Q1.default_params()))
>>> n["floor_ms"], n["ceiling_tps"], round(n["tp_floor_ms"], 3)   # the card's ≈ 4.8 ms, ≈ 200; 70e9 / 6.7e12
(4.8, 200.0, 10.448)
>>> round(Q1.card({"weight_bytes": 16e9}).answer("floor_ms").value, 2)   # the arithmetic: 16e9 / 3.35e12
4.78
>>> Q1.card().answer("floor_ms").exact        # the 15.01 GB a step reads, lesson 02's figure
4.48...
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from roofline.course.card_scenarios import (
    choice,
    dense_models,
    draw_setup,
    gpu_peak_flops_per_s,
    memory_floor_s,
    quoted_weight_bytes,
    stated_or_worked,
    weight_precisions,
)
from roofline.course.cards import CardCode, read_card, sig
from roofline.data import get_gpu, get_model
from roofline.physics.architecture import weight_bytes
from roofline.physics.core import compute_time_s, ridge_point_flop_per_byte
from roofline.physics.memory import check_fits
from roofline.physics.metrics import mbu
from roofline.physics.precision import bytes_per_element
from roofline.physics.step import decode_floor_s, decode_step
from roofline.units import MS

PERCENT = 100.0
TYPICAL_MBU = (0.70, 0.85)  # share of the decode floor that tuned production kernels reach


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that both setups fit; add the weight sizes, the floor and the ceiling the worked answer quotes
    (the card's own round figures, else worked out)."""
    g = get_gpu(params["gpu"])
    check_fits(params["model"], g, 1, 0, weight_precision=params["weight_precision"])
    check_fits(
        params["tp_model"], g, 1, 0, num_gpus=params["tp_num_gpus"], weight_precision=params["tp_precision"]
    )
    bw = g.memory_bandwidth_bytes_per_s
    w = quoted_weight_bytes(params)
    floor = stated_or_worked(params, "floor_s", lambda: decode_floor_s(w, bw))
    return {
        **params,
        "weight_bytes": w,
        "tp_weight_bytes": quoted_weight_bytes(params, "tp_weight_bytes", "tp_model", "tp_precision"),
        "floor_s": floor,
        "ceiling_tps": stated_or_worked(params, "ceiling_tps", lambda: 1.0 / floor),
    }


def verdict(advert: float, ceiling: float, low: float, high: float) -> str:
    """Whether the advertised tokens/s can be promised, against the ceiling and what real kernels reach."""
    if advert > ceiling:
        return (
            f"{advert:,.0f} tokens/s is above even the perfect ceiling, so no: it cannot be promised "
            "on this setup."
        )
    if advert > high:
        return (
            f"{advert:,.0f} tokens/s is under the perfect ceiling but above what real kernels reach "
            f"(about {low:,.0f}–{high:,.0f}), so it would be a promise with no margin: no."
        )
    return (
        f"{advert:,.0f} tokens/s sits inside what real kernels reach (about {low:,.0f}–{high:,.0f}), "
        "so yes, with some margin."
    )


def health(tp_mbu: float) -> str:
    """A measured MBU in words."""
    if tp_mbu >= TYPICAL_MBU[0]:
        return "healthy"
    return "workable, with headroom to find" if tp_mbu >= 0.5 else "worth a profile: something else eats time"


def numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """Q1's answers, trap values and the figures its text quotes, from the roofline library."""
    bw, peak, n = get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s, gpu_peak_flops_per_s(s), s["tp_num_gpus"]
    floor, ceiling = s["floor_s"], s["ceiling_tps"]
    unrounded_floor = decode_floor_s(s["weight_bytes"], bw)
    tp_floor = decode_floor_s(s["tp_weight_bytes"], n * bw)
    wrong_floor = compute_time_s(s["weight_bytes"], peak)
    one_gpu = decode_floor_s(s["tp_weight_bytes"], bw)
    exact = decode_step(s["model"], s["gpu"], 1, 0, weight_precision=s["weight_precision"])
    tp_exact = decode_step(s["tp_model"], s["gpu"], 1, 0, num_gpus=n, weight_precision=s["tp_precision"])
    tp_mbu_pct = mbu(s["tp_weight_bytes"], s["tp_measured_s"], n * bw) * PERCENT
    low, high = (sig(f / unrounded_floor, 2) for f in TYPICAL_MBU)  # "about 150 to 180", as the card says
    return dict(
        floor_ms=floor / MS,
        ceiling_tps=ceiling,
        tp_floor_ms=tp_floor / MS,
        tp_mbu_pct=tp_mbu_pct,
        bytes_over_flops_ms=wrong_floor / MS,  # weight bytes pushed through a FLOP/s rate
        bytes_over_flops_tps=1.0 / wrong_floor,
        one_gpu_floor_ms=one_gpu / MS,  # the tensor-parallel floor on one GPU's bandwidth
        one_gpu_mbu_pct=mbu(s["tp_weight_bytes"], s["tp_measured_s"], bw) * PERCENT,
        inverted_mbu_pct=s["tp_measured_s"] / tp_floor * PERCENT,  # measured ÷ floor
        # the library's exact answers: the bytes a step really reads
        floor_ms_exact=float(exact.step_time_s) / MS,
        ceiling_tps_exact=float(exact.tokens_per_s_per_user),
        tp_floor_ms_exact=float(tp_exact.step_time_s) / MS,
        tp_mbu_pct_exact=float(mbu(tp_exact.bytes_moved, s["tp_measured_s"], n * bw)) * PERCENT,
        exact_read_bytes=float(exact.bytes_moved),
        tp_exact_read_bytes=float(tp_exact.bytes_moved),
        # the figures the text quotes
        model_name=get_model(s["model"]).name,
        gpu_name=get_gpu(s["gpu"]).name,
        tp_model_name=get_model(s["tp_model"]).name,
        bandwidth_bytes_per_s=bw,
        peak_flops_per_s=peak,
        tp_bandwidth_bytes_per_s=n * bw,
        tp_floor_s=tp_floor,
        bytes_over_flops_s=wrong_floor,
        one_gpu_floor_s=one_gpu,
        typical_mbu_low=TYPICAL_MBU[0],
        typical_mbu_high=TYPICAL_MBU[1],
        typical_low_tps=low,
        typical_high_tps=high,
        verdict=verdict(s["advertised_tps"], ceiling, low, high),
        benchmark_over_ceiling=s["benchmark_tps"] / ceiling,
        floor_over_wrong=unrounded_floor / wrong_floor,
        flop_per_weight_byte=2 / bytes_per_element(s["weight_precision"]),
        ridge=ridge_point_flop_per_byte(peak, bw),
        tp_mbu=tp_mbu_pct / PERCENT,
        health=health(tp_mbu_pct / PERCENT),
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled Q1 scenario: model, GPU, precisions, the advertised and benchmark speeds, the TP setup."""
    setup = draw_setup(rng)
    m, g, weight_precision = setup["model"], setup["gpu"], setup["weight_precision"]
    tp_precision = choice(rng, weight_precisions(g))
    ceiling = 1.0 / memory_floor_s(m, g, weight_precision)
    tp_model = choice(rng, dense_models())
    n = int(choice(rng, [2, 4, 8]))
    tp_floor = decode_floor_s(
        weight_bytes(tp_model, tp_precision), n * get_gpu(g).memory_bandwidth_bytes_per_s
    )
    return dict(
        **setup,
        advertised_tps=sig(ceiling * rng.uniform(0.5, 2.0), 2),
        benchmark_tps=sig(ceiling * rng.uniform(5, 15), 2),
        tp_model=tp_model,
        tp_precision=tp_precision,
        tp_num_gpus=n,
        tp_measured_s=sig(tp_floor / rng.uniform(0.45, 0.92), 2),
    )


Q1 = read_card(Path(__file__).with_name("cards.toml"), CardCode(scenario, numbers, draw))
