"""Card QUANT, "INT4 makes it 4× faster?": the speed-up of weight-only INT4 over BF16 at batch 1 and at a
large, compute-bound batch.

Taught in notebooks/quantization.ipynb (and lessons 16 and 61: the step-time model, the compute-bound flip).

The card's step: max((weights + B × T × KV per token) ÷ bandwidth, 2 × N × B ÷ peak). Weight-only INT4
(W4A16) shrinks the weights but multiplies in BF16, so its peak is BF16's.

>>> n = numbers(scenario(SPEC.default_params()))
>>> round(n.b1_speedup_x, 2), round(n.big_speedup_x, 2)   # (16.1 + 128 × 131e3) ÷ (5.7 + …); same math
(2.82, 1.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.errors import RooflineError
from roofline.physics.architecture import active_parameter_count, kv_bytes_per_token, weight_bytes
from roofline.physics.core import compute_time_s
from roofline.physics.memory import check_fits
from roofline.physics.precision import peak_flops_per_s
from roofline.physics.step import batched_step_time_s
from roofline.selfcheck.common import choice, dense_models, fitting, gpu_ids, supports
from roofline.selfcheck.lever_common import TRAP_BITS_RATIO, TRAP_BYTES_AT_LARGE_BATCH
from roofline.selfcheck.spec import AnswerSpec, CardCode, CardSpec, CardText, TrapSpec
from roofline.selfcheck.text import gb, ms, sig, tbps, tflops, ul
from roofline.units import MS

ANSWERS = (
    AnswerSpec("b1_speedup_x", "INT4 over BF16 at batch 1", "×"),
    AnswerSpec("big_bf16_ms", "BF16 step at batch {batch}", "ms"),
    AnswerSpec("big_int4_ms", "INT4 step at batch {batch}", "ms"),
    AnswerSpec("big_speedup_x", "INT4 over BF16 at batch {batch}", "×"),
)

TRAPS = (
    TrapSpec(
        "b1_speedup_x",
        TRAP_BITS_RATIO,
        "bits_ratio",
        "16 ÷ 4 bits is not the bytes read: the group scales, and the KV cache, are read too.",
    ),  # fmt: skip
    TrapSpec(
        "big_speedup_x",
        TRAP_BITS_RATIO,
        "bits_ratio",
        "At batch {batch} the step is compute-bound and INT4 weights are multiplied in BF16.",
    ),  # fmt: skip
    TrapSpec(
        "big_speedup_x",
        TRAP_BYTES_AT_LARGE_BATCH,
        "bytes_ratio_big",
        "The bytes ratio only counts while the step is memory-bound; at batch {batch} the math binds both.",
    ),
    TrapSpec(
        "big_int4_ms",
        TRAP_BYTES_AT_LARGE_BATCH,
        "int4_memory_ms",
        "That is the INT4 step's memory time; its math, at the BF16 rate, takes longer.",
    ),  # fmt: skip
)


@dataclass(frozen=True)
class Numbers:
    """QUANT's answers and trap values (learner's units)."""

    b1_speedup_x: float
    big_bf16_ms: float
    big_int4_ms: float
    big_speedup_x: float
    bits_ratio: float
    bytes_ratio_big: float
    int4_memory_ms: float
    bf16_memory_ms: float
    compute_ms: float
    fp8_speedup_x: float | None


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that BF16 fits at the large batch; add the figures the scenario quotes (3 digits)."""
    m, g = get_model(params["model"]), get_gpu(params["gpu"])
    check_fits(m, g, params["batch"], params["context_tokens"])
    return {
        **params,
        "bf16_bytes": params.get("bf16_bytes") or sig(weight_bytes(m, "bf16")),
        "int4_bytes": params.get("int4_bytes") or sig(weight_bytes(m, "int4")),
        "parameters": params.get("parameters") or sig(active_parameter_count(m)),
        "kv_bytes_per_token": params.get("kv_bytes_per_token") or sig(kv_bytes_per_token(m)),
    }


def _step(weights, s, batch, peak):
    bw = get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s
    memory = batched_step_time_s(weights, batch, s["context_tokens"], s["kv_bytes_per_token"], bw)
    return max(memory, compute_time_s(2 * s["parameters"] * batch, peak)), memory


def numbers(s: Mapping[str, Any]) -> Numbers:
    """QUANT's numbers from the quoted figures, with the library's step formulas."""
    g = get_gpu(s["gpu"])
    bf16_peak = peak_flops_per_s(g, "bf16")
    b = s["batch"]
    b1_bf, _ = _step(s["bf16_bytes"], s, 1, bf16_peak)
    b1_q4, _ = _step(s["int4_bytes"], s, 1, bf16_peak)
    big_bf, mem_bf = _step(s["bf16_bytes"], s, b, bf16_peak)
    big_q4, mem_q4 = _step(s["int4_bytes"], s, b, bf16_peak)
    fp8 = None
    if supports(s["gpu"], "fp8"):
        big_f8, _ = _step(s["bf16_bytes"] / 2, s, b, peak_flops_per_s(g, "fp8"))
        fp8 = big_bf / big_f8
    return Numbers(
        b1_speedup_x=b1_bf / b1_q4,
        big_bf16_ms=big_bf / MS,
        big_int4_ms=big_q4 / MS,
        big_speedup_x=big_bf / big_q4,
        bits_ratio=4.0,
        bytes_ratio_big=mem_bf / mem_q4,
        int4_memory_ms=mem_q4 / MS,
        bf16_memory_ms=mem_bf / MS,
        compute_ms=compute_time_s(2 * s["parameters"] * b, bf16_peak) / MS,
        fp8_speedup_x=fp8,
    )


def text(s: Mapping[str, Any], n: Numbers) -> CardText:
    """QUANT's scenario, worked answer, common mistake and follow-up, in HTML."""
    m, g = get_model(s["model"]), get_gpu(s["gpu"])
    bw, peak = g.memory_bandwidth_bytes_per_s, peak_flops_per_s(g, "bf16")
    t, b, kv = s["context_tokens"], s["batch"], s["kv_bytes_per_token"]
    wb, wq, p = s["bf16_bytes"], s["int4_bytes"], s["parameters"]
    fp8 = (
        f"FP8 weights with FP8 math (W8A8) halve the math time too: {n.fp8_speedup_x:.2f}× over BF16 here."
        if n.fp8_speedup_x
        else f"The {g.name} has no FP8 tensor-core math, so no format here speeds up the compute-bound step."
    )
    return CardText(
        scenario=(
            f"<p>{m.name}: {p / 1e9:.3g} B parameters, {gb(wb)} in BF16 or {gb(wq)} as INT4 "
            f"weight-only (AWQ-style, multiplied in BF16), {gb(kv)} of KV per token. One {g.name}: "
            f"{tbps(bw)}, {tflops(peak)} BF16. Users hold {t:,} tokens each. A vendor promises INT4 makes "
            "serving 4× faster. "
            f"Give INT4's speed-up at batch 1; then at batch {b}, both step times and the speed-up "
            "(ignore attention's own math).</p>"
        ),
        worked=ul(
            f"Batch 1, memory-bound: ({gb(wb)} + {t:,} × {gb(kv)}) ÷ ({gb(wq)} + {t:,} × {gb(kv)}) = "
            f"<b>{n.b1_speedup_x:.2f}×</b>, not 4×: the scales and the KV are read too.",
            f"Batch {b}: the math is 2 × {p / 1e9:.3g} B × {b} ÷ {tflops(peak)} = {ms(n.compute_ms * MS)} "
            f"for both, since INT4 multiplies in BF16. BF16's memory time is {ms(n.bf16_memory_ms * MS)}, "
            "so its "
            f"step is <b>{ms(n.big_bf16_ms * MS)}</b>; INT4's memory time is {ms(n.int4_memory_ms * MS)}, so "
            f"its step is <b>{ms(n.big_int4_ms * MS)}</b>: the larger of the two each time.",
            f"Speed-up at batch {b}: <b>{n.big_speedup_x:.2f}×</b>.",
        ),
        mistake=(
            "<p>Taking the 16 ÷ 4 ratio of bits as the speed-up. It is an upper bound on the bytes saved, "
            "and "
            "bytes only set the time while the step is memory-bound.</p>"
        ),
        followup_question=f"What would FP8 (W8A8) buy at batch {b}?",
        followup_answer=ul(fp8),
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
        s = scenario(params)
    except RooflineError:
        return False
    n = numbers(s)
    return n.compute_ms > n.int4_memory_ms


SPEC = CardSpec(
    qid="QUANT",
    title="INT4 makes it 4× faster?",
    lessons=("quantization", "16", "61"),
    defaults=dict(model="llama-3-8b", gpu="h100-sxm", context_tokens=128, batch=512),
    stated={},
    answers=ANSWERS,
    traps=TRAPS,
    code=CardCode(scenario, numbers, text, draw, usable),
)
