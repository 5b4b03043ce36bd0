"""Card Q4, "When does decode become compute-bound?": the ridge point and the batch where decode crosses it.

Taught in notebooks/02_decode_floor.ipynb, notebooks/04_roofline.ipynb and notebooks/61_compute_bound.ipynb;
practised in notebooks/pack01_speed_physics.ipynb.

B users do 2·B FLOP per parameter read, and a parameter takes b bytes, so the intensity of a short-context
decode step is 2·B ÷ b FLOP per byte: it reaches the ridge (peak ÷ bandwidth) at B = ridge × b ÷ 2.

The flip batch is ``rl.compute_bound_batch`` (decode's balance point, the function lesson 61 uses): the
smallest WHOLE batch whose decode step is compute-bound, so 296 where the hand formula gives 295.2 (a batch
of 295 users is still 0.07% short of the ridge). The answer tolerance (5%) accepts either.

>>> n = numbers(scenario(SPEC.default_params()))
>>> round(n.ridge, 1), n.flip_batch, n.flip_if_2_bytes   # 989e12 / 3.35e12; ceil(295.2 × 2 bytes ÷ 2)
(295.2, 296.0, None)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.physics.balance import compute_bound_batch
from roofline.physics.core import ridge_point_flop_per_byte
from roofline.physics.memory import check_fits, fits
from roofline.physics.precision import bytes_per_element
from roofline.physics.step import decode_step
from roofline.selfcheck.common import choice, dense_models, gpu_ids, gpu_peak_flops_per_s, weight_precisions
from roofline.selfcheck.spec import (
    TRAP_BYTES_PER_WEIGHT,
    TRAP_INVERTED_RIDGE,
    AnswerSpec,
    CardCode,
    CardSpec,
    CardText,
    TrapSpec,
)
from roofline.selfcheck.text import prec, tbps, tflops, ul

ANSWERS = (
    AnswerSpec("ridge", "ridge point", "FLOP/byte"),
    AnswerSpec("flip_batch", "batch where decode turns compute-bound", "users"),
)

_WHY_BYTES = (
    "A token does 2 FLOP per parameter, and a parameter here takes {bytes_per_weight:g} byte(s), so the "
    "intensity is 2·B ÷ {bytes_per_weight:g} FLOP per byte."
)
TRAPS = (
    TrapSpec(
        "ridge",
        TRAP_INVERTED_RIDGE,
        "inverted_ridge",
        "The ridge is peak FLOP/s ÷ bandwidth, in FLOPs per byte.",
    ),
    TrapSpec("flip_batch", TRAP_BYTES_PER_WEIGHT, "flip_if_1_byte", _WHY_BYTES),
    TrapSpec("flip_batch", TRAP_BYTES_PER_WEIGHT, "flip_if_2_bytes", _WHY_BYTES),
    TrapSpec("flip_batch", TRAP_BYTES_PER_WEIGHT, "flip_if_4_bytes", _WHY_BYTES),
)


@dataclass(frozen=True)
class Numbers:
    """Q4's answers and trap values; a wrong-bytes trap is ``None`` when it is the scenario's own size."""

    ridge: float
    flip_batch: float
    inverted_ridge: float
    flip_if_1_byte: float | None  # the flip batch computed as if a weight took 1 byte
    flip_if_2_bytes: float | None
    flip_if_4_bytes: float | None
    bytes_per_weight: float
    example_intensity: float | None  # FLOP/byte of the example step; None if it does not fit
    bandwidth_bytes_per_s: float
    peak_flops_per_s: float


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that the weights fit; Q4 quotes no rounded figures."""
    check_fits(params["model"], params["gpu"], 1, 0, weight_precision=params["weight_precision"])
    return dict(params)


def numbers(s: Mapping[str, Any]) -> Numbers:
    """Q4's numbers for scenario ``s``, from the roofline library."""
    m, g, precision = get_model(s["model"]), get_gpu(s["gpu"]), s["weight_precision"]
    bw, peak = g.memory_bandwidth_bytes_per_s, gpu_peak_flops_per_s(s)
    bpe = bytes_per_element(precision)
    ridge = ridge_point_flop_per_byte(peak, bw)

    def as_if(other_bytes: float) -> float | None:
        return None if abs(other_bytes - bpe) <= 1e-9 else ridge * other_bytes / 2

    example = decode_step(
        m, g, s["example_batch"], s["example_context"], weight_precision=precision, on_overflow="mask"
    )
    return Numbers(
        ridge=ridge,
        flip_batch=float(
            compute_bound_batch(m, g, 0, weight_precision=precision)
        ),  # one function with lesson 61
        inverted_ridge=1.0 / ridge,
        flip_if_1_byte=as_if(1.0),
        flip_if_2_bytes=as_if(2.0),
        flip_if_4_bytes=as_if(4.0),
        bytes_per_weight=bpe,
        example_intensity=float(example.arithmetic_intensity_flop_per_byte) if example.fits else None,
        bandwidth_bytes_per_s=bw,
        peak_flops_per_s=peak,
    )


def text(s: Mapping[str, Any], n: Numbers) -> CardText:
    """Q4's scenario, worked answer, common mistake and follow-up, in HTML."""
    m, g = get_model(s["model"]), get_gpu(s["gpu"])
    bw, peak, bpe, ridge, flip = (
        n.bandwidth_bytes_per_s,
        n.peak_flops_per_s,
        n.bytes_per_weight,
        n.ridge,
        n.flip_batch,
    )
    eb, et = s["example_batch"], s["example_context"]
    if n.example_intensity is not None:
        kv_line = (
            f"For instance at batch {eb} with {et:,}-token contexts the step does only "
            f"{n.example_intensity:.0f} FLOP per byte, far below the ridge."
        )
    else:
        kv_line = f"At batch {eb} with {et:,}-token contexts the KV does not even fit in memory."
    return CardText(
        scenario=(
            f"<p>{m.name} with {prec(s['weight_precision'])} weights ({bpe:g} byte(s) per parameter) decodes "
            f"on one {g.name} ({tflops(peak)} dense at that precision, {tbps(bw)}). Contexts are short, and "
            "you keep raising the batch. Give the ridge point and the batch at which decode turns "
            "compute-bound; then say why real servers reach that point much later.</p>"
        ),
        worked=ul(
            f"Per token, decode does 2 FLOP per parameter and reads {bpe:g} byte(s) per parameter. The "
            f"weight bytes are shared by the batch, so B users do 2·B FLOP per {bpe:g} byte(s): intensity ≈ "
            f"{2 / bpe:g}·B FLOP per byte.",
            f"Ridge: {tflops(peak)} ÷ {tbps(bw)} = <b>{ridge:.0f} FLOP per byte</b>. Decode crosses it at "
            f"B ≈ {ridge:.1f} × {bpe:g} ÷ 2 = {ridge * bpe / 2:.1f}, so the first whole batch past it is "
            f"<b>{flip:.0f} users</b>.",
            "In practice the KV cache keeps it memory-bound much longer: its bytes grow with batch × "
            f"context and, unlike the weights, no two users share them. {kv_line}",
        ),
        mistake=(
            "<p>Naming the ratio without its unit or its reason. Say it is FLOPs per byte, and that the "
            "weight bytes are shared by the batch while the KV bytes are not: that is why intensity grows "
            "with batch only while contexts are short.</p>"
            f"<p>Also watch the bytes per weight: with {bpe:g} byte(s) per parameter the flip is at "
            f"{flip:.0f}, not at {ridge * (2 if bpe != 2 else 1) / 2:.0f}.</p>"
        ),
        followup_question="Once decode is compute-bound, what does a bigger batch buy?",
        followup_answer=ul(
            "No more tokens per weight read: the math is now the limit, so the total tokens/s flattens "
            "while each user's step keeps getting longer.",
            "In a concurrency sweep that is the saturation wall: throughput plateaus and latency climbs.",
        ),
    )


def usable(params: Mapping[str, Any]) -> bool:
    """A shuffled Q4 scenario needs its example batch and context to fit in memory."""
    return bool(
        fits(
            params["model"],
            params["gpu"],
            params["example_batch"],
            params["example_context"],
            weight_precision=params["weight_precision"],
        )
    )


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


SPEC = CardSpec(
    qid="Q4",
    title="When does decode become compute-bound?",
    lessons=("02", "04", "61"),
    defaults=dict(
        model="llama-3-8b",
        gpu="h100-sxm",
        weight_precision="bf16",
        example_batch=100,
        example_context=4096,
    ),
    stated={},
    answers=ANSWERS,
    traps=TRAPS,
    code=CardCode(scenario, numbers, text, draw, usable),
)
