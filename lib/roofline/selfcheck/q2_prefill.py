"""Card Q2, "Why is a 500-token prefill so close to one decode step?": prefill time, a paste's stall, ridge.

Taught in notebooks/04_roofline.ipynb, notebooks/15_prefill_vs_decode.ipynb, notebooks/16_step_time.ipynb
and notebooks/44_chunked_prefill.ipynb; practised in notebooks/pack01_speed_physics.ipynb.

A prompt's tokens share one weight read and each does 2 FLOP per parameter, so prefill time is
max(2·N·P ÷ peak FLOP/s, weight bytes ÷ bandwidth); an unchunked paste stalls every stream for its whole
prefill, and the ridge point (peak ÷ bandwidth) says which limit binds.

>>> n = numbers(scenario(SPEC.default_params()))
>>> round(n.prefill_ms, 2), round(n.paste_ms, 1), round(n.ridge, 1)   # 8e12/989e12; 1.28e14/989e12
(8.09, 129.4, 295.2)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.errors import InvalidConfigurationError
from roofline.physics.core import (
    binding_resource,
    compute_time_s,
    memory_time_s,
    ridge_point_flop_per_byte,
    roofline_time_s,
)
from roofline.physics.memory import check_fits
from roofline.physics.step import decode_floor_s, decode_step, prefill, prefill_flops, stalled_decode_steps
from roofline.selfcheck.common import (
    choice,
    draw_model_and_gpu,
    fitting,
    gpu_peak_flops_per_s,
    quoted_parameters,
    quoted_weight_bytes,
    supports,
)
from roofline.selfcheck.spec import (
    TRAP_BYTES_OVER_FLOPS,
    TRAP_FORGOT_TWO,
    TRAP_INVERTED_RIDGE,
    TRAP_NO_PROMPT_SCALING,
    TRAP_PREFILL_AS_WEIGHT_READ,
    AnswerSpec,
    CardCode,
    CardSpec,
    CardText,
    TrapSpec,
)
from roofline.selfcheck.text import gb, ms, prec, tbps, tflops, ul
from roofline.units import MS

# What the card simplifies (lesson 15 explains it): its 2·N·P against the library's prefill.
EXACT_WHY = (
    "The card's 2·N·P multiplies all {parameters:.3g} parameters by every prompt token and leaves attention "
    "out; the library multiplies the layers' matmul weights by every token, the LM head by the last one "
    "only (the embedding is a lookup), and adds causal attention (lesson 15)."
)
STEPS_WHY = EXACT_WHY + " Both count steps of a lone user's step; batched users miss fewer, longer steps."

ANSWERS = (
    AnswerSpec(
        "prefill_ms", "prefill of {prompt_tokens:,} tokens", "ms", exact="prefill_ms_exact",
        exact_why=EXACT_WHY,
    ),
    AnswerSpec(
        "paste_ms", "prefill of the {paste_tokens:,}-token paste", "ms", exact="paste_ms_exact",
        exact_why=EXACT_WHY,
    ),
    AnswerSpec(
        "stalled_steps", "decode steps each user misses", "steps", exact="stalled_steps_exact",
        exact_why=STEPS_WHY,
    ),
    AnswerSpec("ridge", "follow-up: ridge point", "FLOP/byte"),
)  # fmt: skip

_TWO_FLOPS = "Each parameter costs a multiply and an add per token: 2 × N × P FLOPs."
TRAPS = (
    TrapSpec(
        "prefill_ms",
        TRAP_BYTES_OVER_FLOPS,
        "bytes_over_flops_ms",
        "Bytes go over bandwidth and FLOPs over FLOP/s; bytes ÷ FLOP/s is not a time.",
    ),
    TrapSpec(
        "prefill_ms",
        TRAP_PREFILL_AS_WEIGHT_READ,
        "weight_read_ms",
        "That is the weight read, the decode floor. {prompt_tokens:,} tokens share that read and each needs "
        "2 FLOP per parameter, so the math takes longer than the read.",
    ),
    TrapSpec("prefill_ms", TRAP_FORGOT_TWO, "half_prefill_ms", _TWO_FLOPS),
    TrapSpec(
        "paste_ms",
        TRAP_BYTES_OVER_FLOPS,
        "bytes_over_flops_ms",
        "Bytes ÷ FLOP/s is not a time, and the prefill cost must grow with the prompt.",
    ),
    TrapSpec("paste_ms", TRAP_FORGOT_TWO, "half_paste_ms", _TWO_FLOPS),
    TrapSpec(
        "paste_ms",
        TRAP_NO_PROMPT_SCALING,
        "prefill_ms",
        "A {paste_tokens:,}-token prompt does {paste_ratio:.0f}× the math of a {prompt_tokens:,}-token one.",
    ),
    TrapSpec(
        "ridge",
        TRAP_INVERTED_RIDGE,
        "inverted_ridge",
        "The ridge is peak FLOP/s ÷ bandwidth: FLOPs per byte, a number in the hundreds on a GPU.",
    ),
)


@dataclass(frozen=True)
class Numbers:
    """Q2's answers and trap values (in the learner's units), and the SI figures its text quotes."""

    prefill_ms: float
    paste_ms: float
    stalled_steps: float
    ridge: float
    bytes_over_flops_ms: float  # weight bytes pushed through a FLOP/s rate
    weight_read_ms: float  # the decode floor
    half_prefill_ms: float  # N·P FLOPs instead of 2·N·P
    half_paste_ms: float
    inverted_ridge: float
    paste_ratio: float  # paste tokens ÷ prompt tokens
    floor_s: float
    prefill_flops: float
    paste_flops: float
    bandwidth_bytes_per_s: float
    peak_flops_per_s: float
    # the library's exact answers (``prefill`` and ``decode_step``)
    prefill_ms_exact: float
    paste_ms_exact: float
    stalled_steps_exact: float


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that the paste fits (memory and context window); add the quoted parameters and weight bytes."""
    m, g = get_model(params["model"]), get_gpu(params["gpu"])
    check_fits(m, g, 1, params["paste_tokens"], weight_precision=params["weight_precision"])
    if params["paste_tokens"] > m.max_context_tokens:
        raise InvalidConfigurationError(f"{m.name} takes at most {m.max_context_tokens:,} tokens of context")
    return {**params, "parameters": quoted_parameters(params), "weight_bytes": quoted_weight_bytes(params)}


def numbers(s: Mapping[str, Any]) -> Numbers:
    """Q2's numbers for scenario ``s`` (see ``scenario``), from the roofline library."""
    bw, peak = get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s, gpu_peak_flops_per_s(s)
    w, n_params = s["weight_bytes"], s["parameters"]
    short, paste = s["prompt_tokens"], s["paste_tokens"]
    floor = decode_floor_s(w, bw)
    f_short, f_paste = prefill_flops(n_params, short), prefill_flops(n_params, paste)
    t_short = roofline_time_s(f_short, w, peak, bw)
    t_paste = roofline_time_s(f_paste, w, peak, bw)
    ridge = ridge_point_flop_per_byte(peak, bw)
    kw = dict(weight_precision=s["weight_precision"])
    exact_short = float(prefill(s["model"], s["gpu"], short, **kw).step_time_s)
    exact_paste = float(prefill(s["model"], s["gpu"], paste, **kw).step_time_s)
    exact_step = float(decode_step(s["model"], s["gpu"], 1, 0, **kw).step_time_s)
    return Numbers(
        prefill_ms=t_short / MS,
        paste_ms=t_paste / MS,
        stalled_steps=stalled_decode_steps(t_paste, floor),
        ridge=ridge,
        bytes_over_flops_ms=compute_time_s(w, peak) / MS,
        weight_read_ms=floor / MS,
        half_prefill_ms=compute_time_s(f_short / 2, peak) / MS,
        half_paste_ms=compute_time_s(f_paste / 2, peak) / MS,
        inverted_ridge=1.0 / ridge,
        paste_ratio=paste / short,
        floor_s=floor,
        prefill_flops=f_short,
        paste_flops=f_paste,
        bandwidth_bytes_per_s=bw,
        peak_flops_per_s=peak,
        prefill_ms_exact=exact_short / MS,
        paste_ms_exact=exact_paste / MS,
        stalled_steps_exact=stalled_decode_steps(exact_paste, exact_step),
    )


def text(s: Mapping[str, Any], n: Numbers) -> CardText:
    """Q2's scenario, worked answer, common mistake and follow-up, in HTML."""
    m, g = get_model(s["model"]), get_gpu(s["gpu"])
    w, n_params = s["weight_bytes"], s["parameters"]
    bw, peak, floor = n.bandwidth_bytes_per_s, n.peak_flops_per_s, n.floor_s
    short, paste = s["prompt_tokens"], s["paste_tokens"]
    f_short, f_paste = n.prefill_flops, n.paste_flops
    t_short, t_paste = n.prefill_ms * MS, n.paste_ms * MS
    binding = binding_resource(compute_time_s(f_short, peak), memory_time_s(w, bw))
    return CardText(
        scenario=(
            f"<p>{m.name} in {prec(s['weight_precision'])} ({n_params / 1e9:.3g} B parameters, {gb(w)}) "
            f"runs on one {g.name} ({tflops(peak)} dense, {tbps(bw)}). Prefilling a {short:,}-token prompt "
            f"takes barely longer than producing one decode token. Why so close? Give the prefill time, the "
            f"time of an unchunked {paste:,}-token paste, and how many decode steps each of the "
            f"{s['users']} streaming users misses meanwhile; then the follow-up: where is this GPU's ridge "
            "point?</p>"
        ),
        worked=ul(
            "The time of a piece of work is whichever limit is slower: max(FLOPs ÷ peak FLOP/s, bytes ÷ "
            "bandwidth).",
            f"A decode token does about 2 FLOP per parameter while reading every weight: far too little "
            f"math per byte, so the read decides, {gb(w)} ÷ {tbps(bw)} = <b>{ms(floor)}</b>.",
            f"Prefill pushes all {short:,} prompt tokens through one read of the weights. Its math: 2 × "
            f"{n_params:.3g} × {short:,} = {f_short:.3g} FLOP, taking {f_short:.3g} ÷ {tflops(peak)} = "
            f"{ms(compute_time_s(f_short, peak))} against a {ms(memory_time_s(w, bw))} read: "
            f"{binding}-bound, <b>{ms(t_short)}</b>, only {t_short / floor:.1f}× a decode step.",
            f"A {paste:,}-token paste: 2 × {n_params:.3g} × {paste:,} = {f_paste:.3g} FLOP, so "
            f"<b>{ms(t_paste)}</b>. Every other stream waits for it: {ms(t_paste)} ÷ {ms(floor)} ≈ "
            f"<b>{n.stalled_steps:.0f} decode steps</b> of frozen output. Chunked prefill (lesson 44) "
            "slices the paste so decode steps keep flowing.",
        ),
        mistake=(
            f"<p>Dividing bytes by FLOP/s: {gb(w)} ÷ {tflops(peak)} = {ms(n.bytes_over_flops_ms * MS)}, "
            "which is not the time of anything. Each quantity goes over its own rate: bytes over bandwidth, "
            "FLOPs over FLOP/s.</p>"
            f"<p>The other slip is a prefill time that does not grow with the prompt: the {paste:,}-token "
            f"paste does {n.paste_ratio:.0f}× the work of the {short:,}-token prompt, so its time grows "
            "with it.</p>"
        ),
        followup_question="Where is the ridge point, and what does it tell you?",
        followup_answer=ul(
            f"The ridge is the intensity where both limits meet: {tflops(peak)} ÷ {tbps(bw)} = "
            f"<b>{n.ridge:.0f} FLOP per byte</b>.",
            "Work doing fewer FLOPs per byte than that is memory-bound (decode at small batch); work doing "
            f"more is compute-bound (a {short:,}-token prefill does about {f_short / w:.0f} FLOP per "
            "weight byte).",
        ),
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


SPEC = CardSpec(
    qid="Q2",
    title="Why is a {prompt_tokens:,}-token prefill so close to one decode step?",
    lessons=("04", "15", "16", "44"),
    defaults=dict(
        model="llama-3-8b",
        gpu="h100-sxm",
        weight_precision="bf16",
        prompt_tokens=500,
        paste_tokens=8000,
        users=30,
    ),
    stated=dict(parameters=8e9, weight_bytes=16e9),  # the card's "8 B parameters, 16 GB"
    answers=ANSWERS,
    traps=TRAPS,
    code=CardCode(scenario, numbers, text, draw),
)
