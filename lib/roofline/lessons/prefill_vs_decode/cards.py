"""Card Q2, "Why is a 500-token prefill so close to one decode step?": prefill time, a paste's stall, ridge.

Taught in notebooks/15_prefill_vs_decode.ipynb (also lessons 04, 16 and 44); practised in
notebooks/pack01_speed_physics.ipynb. The card's data rows are in ``cards.toml`` beside this module.

A prompt's tokens share one weight read and each does 2 FLOP per parameter, so prefill time is
max(2·N·P ÷ peak FLOP/s, weight bytes ÷ bandwidth); an unchunked paste stalls every stream for its whole
prefill, and the ridge point (peak ÷ bandwidth) says which limit binds.

>>> n = numbers(scenario(Q2.default_params()))
>>> round(n["prefill_ms"], 2), round(n["paste_ms"], 1), round(n["ridge"], 1)   # 8e12/989e12; 1.28e14/989e12
(8.09, 129.4, 295.2)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from roofline.course.card_scenarios import (
    choice,
    draw_model_and_gpu,
    fitting,
    gpu_peak_flops_per_s,
    quoted_parameters,
    quoted_weight_bytes,
    stated_or_worked,
    supports,
)
from roofline.course.cards import CardCode, read_card
from roofline.data import get_gpu, get_model
from roofline.errors import InvalidConfigurationError
from roofline.physics.core import (
    binding_resource,
    compute_time_s,
    ridge_point_flop_per_byte,
    roofline_time_s,
)
from roofline.physics.memory import check_fits
from roofline.physics.step import decode_floor_s, decode_step, prefill, prefill_flops, stalled_decode_steps
from roofline.units import MS


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that the paste fits (memory and context window); add the quoted parameters, weight bytes and
    decode step (the card's own round figures, else worked out)."""
    m = get_model(params["model"])
    check_fits(m, params["gpu"], 1, params["paste_tokens"], weight_precision=params["weight_precision"])
    if params["paste_tokens"] > m.max_context_tokens:
        raise InvalidConfigurationError(f"{m.name} takes at most {m.max_context_tokens:,} tokens of context")
    w, bw = quoted_weight_bytes(params), get_gpu(params["gpu"]).memory_bandwidth_bytes_per_s
    floor = stated_or_worked(params, "floor_s", lambda: decode_floor_s(w, bw))
    return {**params, "parameters": quoted_parameters(params), "weight_bytes": w, "floor_s": floor}


def numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """Q2's answers, trap values and the figures its text quotes, from the roofline library."""
    bw, peak = get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s, gpu_peak_flops_per_s(s)
    w, n_params, short, paste = s["weight_bytes"], s["parameters"], s["prompt_tokens"], s["paste_tokens"]
    floor = s["floor_s"]
    f_short, f_paste = prefill_flops(n_params, short), prefill_flops(n_params, paste)
    t_short, t_paste = roofline_time_s(f_short, w, peak, bw), roofline_time_s(f_paste, w, peak, bw)
    ridge = ridge_point_flop_per_byte(peak, bw)
    kw = dict(weight_precision=s["weight_precision"])
    exact_paste = float(prefill(s["model"], s["gpu"], paste, **kw).step_time_s)
    exact_step = float(decode_step(s["model"], s["gpu"], 1, 0, **kw).step_time_s)
    return dict(
        prefill_ms=t_short / MS,
        paste_ms=t_paste / MS,
        stalled_steps=stalled_decode_steps(t_paste, floor),
        ridge=ridge,
        bytes_over_flops_ms=compute_time_s(w, peak) / MS,  # weight bytes pushed through a FLOP/s rate
        weight_read_ms=floor / MS,  # the decode floor
        half_prefill_ms=compute_time_s(f_short / 2, peak) / MS,  # N·P FLOPs instead of 2·N·P
        half_paste_ms=compute_time_s(f_paste / 2, peak) / MS,
        inverted_ridge=1.0 / ridge,
        paste_ratio=paste / short,
        # the library's exact answers (``prefill`` and ``decode_step``)
        prefill_ms_exact=float(prefill(s["model"], s["gpu"], short, **kw).step_time_s) / MS,
        paste_ms_exact=exact_paste / MS,
        stalled_steps_exact=stalled_decode_steps(exact_paste, exact_step),
        # the figures the text quotes
        model_name=get_model(s["model"]).name,
        gpu_name=get_gpu(s["gpu"]).name,
        parameters_billions=n_params / 1e9,
        bandwidth_bytes_per_s=bw,
        peak_flops_per_s=peak,
        prefill_flops=f_short,
        paste_flops=f_paste,
        prefill_s=t_short,
        paste_s=t_paste,
        prefill_compute_s=compute_time_s(f_short, peak),
        weight_read_s=floor,
        binding=binding_resource(compute_time_s(f_short, peak), floor),
        prefill_over_floor=t_short / floor,
        bytes_over_flops_s=compute_time_s(w, peak),
        prefill_flops_per_weight_byte=f_short / w,
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled Q2 scenario: model, GPU, precision, prompt and paste lengths, streaming users."""
    m, g = draw_model_and_gpu(rng)
    pastes = fitting((2000, 4000, 8000, 16000, 32000), m)
    return dict(
        model=m,
        gpu=g,
        weight_precision=choice(rng, [p for p in ("bf16", "fp8") if supports(g, p)]),
        prompt_tokens=int(choice(rng, [300, 400, 500, 800, 1000, 1500])),
        paste_tokens=int(choice(rng, pastes)),
        users=int(choice(rng, [10, 20, 30, 50, 64])),
    )


Q2 = read_card(Path(__file__).with_name("cards.toml"), CardCode(scenario, numbers, draw))
