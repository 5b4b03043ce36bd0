"""Card Q4, "When does decode become compute-bound?": the ridge point and the batch where decode crosses it.

Taught in notebooks/61_compute_bound.ipynb (also lessons 02 and 04); practised in
notebooks/pack01_speed_physics.ipynb. The card's data rows are in ``cards.toml`` beside this module.

B users do 2·B FLOP per parameter read, and a parameter takes b bytes, so the intensity of a short-context
decode step is 2·B ÷ b FLOP per byte: it reaches the ridge (peak ÷ bandwidth) at B = ridge × b ÷ 2. The
flip batch is ``rl.compute_bound_batch`` (the function lesson 61 uses): the smallest WHOLE batch whose
decode step is compute-bound, so 296 where the hand formula gives 295.2; the tolerance accepts either.

>>> n = numbers(scenario(Q4.default_params()))
>>> round(n["ridge"], 1), n["flip_batch"], n["flip_if_2_bytes"]   # 989e12 / 3.35e12; BF16 takes 2 bytes
(295.2, 296.0, None)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from roofline.course.card_scenarios import (
    choice,
    dense_models,
    gpu_ids,
    gpu_peak_flops_per_s,
    weight_precisions,
)
from roofline.course.cards import CardCode, read_card
from roofline.data import get_gpu, get_model
from roofline.physics.balance import compute_bound_batch
from roofline.physics.core import ridge_point_flop_per_byte
from roofline.physics.memory import check_fits, fits
from roofline.physics.precision import bytes_per_element
from roofline.physics.step import decode_step


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that the weights fit; Q4 quotes no rounded figures."""
    check_fits(params["model"], params["gpu"], 1, 0, weight_precision=params["weight_precision"])
    return dict(params)


def numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """Q4's answers and trap values (a wrong-bytes slip is ``None`` where it is the scenario's own size),
    and the figures its text quotes, from the roofline library."""
    m, g, precision = get_model(s["model"]), get_gpu(s["gpu"]), s["weight_precision"]
    bw, peak = g.memory_bandwidth_bytes_per_s, gpu_peak_flops_per_s(s)
    bpe = bytes_per_element(precision)
    ridge = ridge_point_flop_per_byte(peak, bw)
    flip = float(compute_bound_batch(m, g, 0, weight_precision=precision))  # one function with lesson 61

    def as_if(other_bytes: float) -> float | None:  # the flip batch computed as if a weight took other bytes
        return None if abs(other_bytes - bpe) <= 1e-9 else ridge * other_bytes / 2

    eb, et = s["example_batch"], s["example_context"]
    example = decode_step(m, g, eb, et, weight_precision=precision, on_overflow="mask")
    if example.fits:
        kv_line = (
            f"For instance at batch {eb} with {et:,}-token contexts the step does only "
            f"{float(example.arithmetic_intensity_flop_per_byte):.0f} FLOP per byte, far below the ridge."
        )
    else:
        kv_line = f"At batch {eb} with {et:,}-token contexts the KV does not even fit in memory."
    return dict(
        ridge=ridge,
        flip_batch=flip,
        inverted_ridge=1.0 / ridge,
        flip_if_1_byte=as_if(1.0),
        flip_if_2_bytes=as_if(2.0),
        flip_if_4_bytes=as_if(4.0),
        model_name=m.name,
        gpu_name=g.name,
        bytes_per_weight=bpe,
        bandwidth_bytes_per_s=bw,
        peak_flops_per_s=peak,
        flop_per_byte_per_user=2 / bpe,
        ridge_batch=ridge * bpe / 2,
        wrong_flip_batch=ridge * (2 if bpe != 2 else 1) / 2,
        kv_line=kv_line,
    )


def usable(params: Mapping[str, Any]) -> bool:
    """A shuffled Q4 scenario needs its example batch and context to fit in memory."""
    return bool(fits(params["model"], params["gpu"], params["example_batch"], params["example_context"],
                     weight_precision=params["weight_precision"]))  # fmt: skip


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled Q4 scenario: GPU, model, precision, and an example batch and context."""
    g = choice(rng, gpu_ids())
    return dict(
        model=choice(rng, dense_models()),
        gpu=g,
        weight_precision=choice(rng, weight_precisions(g)),
        example_batch=int(choice(rng, [32, 64, 100, 128])),
        example_context=int(choice(rng, [1000, 2000, 4096])),
    )


Q4 = read_card(Path(__file__).with_name("cards.toml"), CardCode(scenario, numbers, draw, usable))
