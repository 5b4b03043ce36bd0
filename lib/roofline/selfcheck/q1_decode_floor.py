"""Card Q1, "Can we advertise 300 tokens/s?": the decode floor, its tokens/s ceiling, and MBU on 2 GPUs.

Taught in notebooks/02_decode_floor.ipynb, notebooks/06_benchmarks_that_lie.ipynb,
notebooks/16_step_time.ipynb and notebooks/24_tensor_parallel.ipynb; practised in
notebooks/pack01_speed_physics.ipynb.

One user, so each decode step reads every weight once: floor = weight bytes ÷ bandwidth, ceiling = 1 ÷
floor. In tensor parallel over n GPUs the bandwidths add, and MBU = floor ÷ measured.

>>> n = numbers(scenario(SPEC.default_params()))
>>> round(n.floor_ms, 3), round(n.tp_floor_ms, 3)     # 16e9 / 3.35e12; 70e9 / (2 × 3.35e12)
(4.776, 10.448)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.physics.architecture import weight_bytes
from roofline.physics.core import compute_time_s, ridge_point_flop_per_byte
from roofline.physics.memory import check_fits
from roofline.physics.metrics import mbu
from roofline.physics.precision import bytes_per_element
from roofline.physics.step import decode_floor_s, decode_step
from roofline.selfcheck.common import (
    choice,
    dense_models,
    draw_setup,
    gpu_peak_flops_per_s,
    memory_floor_s,
    quoted_weight_bytes,
    weight_precisions,
)
from roofline.selfcheck.spec import (
    PERCENT,
    TRAP_BYTES_OVER_FLOPS,
    TRAP_INVERTED_MBU,
    TRAP_ONE_GPU_BANDWIDTH,
    AnswerSpec,
    CardCode,
    CardSpec,
    CardText,
    TrapSpec,
)
from roofline.selfcheck.text import gb, ms, prec, sig, tbps, tflops, ul
from roofline.units import MS

TYPICAL_MBU = (0.70, 0.85)  # share of the decode floor that tuned production kernels reach

# What the card simplifies, said where a right answer is judged (lesson 02 explains it first).
EXACT_WHY = (
    "The card divides the {weight_bytes!B} of weights it states by the bandwidth; the library counts the "
    "{exact_read_bytes!E} a step reads (the embedding table is looked up one row per token, not read whole)."
)
TP_EXACT_WHY = (
    "The card uses its round {tp_weight_bytes!B}; the library counts the {tp_exact_read_bytes!E} a step "
    "reads in this weight format (the embedding table is looked up, not read)."
)

ANSWERS = (
    AnswerSpec("floor_ms", "decode floor, batch 1", "ms", exact="floor_ms_exact", exact_why=EXACT_WHY),
    AnswerSpec(
        "ceiling_tps", "tokens/s ceiling for one user", "tokens/s", exact="ceiling_tps_exact",
        exact_why=EXACT_WHY,
    ),
    AnswerSpec(
        "tp_floor_ms", "follow-up: floor on {tp_num_gpus} GPUs", "ms", exact="tp_floor_ms_exact",
        exact_why=TP_EXACT_WHY,
    ),
    AnswerSpec("tp_mbu_pct", "follow-up: MBU", "%", exact="tp_mbu_pct_exact", exact_why=TP_EXACT_WHY),
)  # fmt: skip

TRAPS = (
    TrapSpec(
        "floor_ms",
        TRAP_BYTES_OVER_FLOPS,
        "bytes_over_flops_ms",
        "Bytes travel at a bandwidth (bytes/s); FLOP/s is a rate for arithmetic. At batch 1 the step is set "
        "by reading the weights, so divide bytes by bandwidth.",
    ),
    TrapSpec(
        "ceiling_tps",
        TRAP_BYTES_OVER_FLOPS,
        "bytes_over_flops_tps",
        "That ceiling comes from dividing bytes by FLOP/s, which is not a time; the weight read over the "
        "memory bandwidth sets the step.",
    ),
    TrapSpec(
        "tp_floor_ms",
        TRAP_ONE_GPU_BANDWIDTH,
        "one_gpu_floor_ms",
        "In tensor parallel each GPU reads only its share of the weights, at the same time, so the "
        "{tp_num_gpus} bandwidths add up.",
    ),
    TrapSpec(
        "tp_mbu_pct",
        TRAP_ONE_GPU_BANDWIDTH,
        "one_gpu_mbu_pct",
        "MBU compares with the peak of every GPU the step runs on; a value above 100% is the hint.",
    ),
    TrapSpec(
        "tp_mbu_pct",
        TRAP_INVERTED_MBU,
        "inverted_mbu_pct",
        "MBU is floor ÷ measured (achieved ÷ peak bandwidth), at most 100%.",
    ),
)


@dataclass(frozen=True)
class Numbers:
    """Q1's answers and trap values (in the learner's units), and the SI figures its text quotes."""

    floor_ms: float
    ceiling_tps: float
    tp_floor_ms: float
    tp_mbu_pct: float
    bytes_over_flops_ms: float  # weight bytes pushed through a FLOP/s rate
    bytes_over_flops_tps: float
    one_gpu_floor_ms: float  # the tensor-parallel floor on one GPU's bandwidth
    one_gpu_mbu_pct: float
    inverted_mbu_pct: float  # measured ÷ floor
    bandwidth_bytes_per_s: float
    peak_flops_per_s: float
    # the library's exact answers: the bytes a step really reads (``decode_step``)
    floor_ms_exact: float
    ceiling_tps_exact: float
    tp_floor_ms_exact: float
    tp_mbu_pct_exact: float
    exact_read_bytes: float
    tp_exact_read_bytes: float


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that both setups fit; add the weight sizes the scenario quotes (tables, 3 digits) if missing."""
    m, g = get_model(params["model"]), get_gpu(params["gpu"])
    check_fits(m, g, 1, 0, weight_precision=params["weight_precision"])
    check_fits(
        params["tp_model"],
        g,
        1,
        0,
        num_gpus=params["tp_num_gpus"],
        weight_precision=params["tp_precision"],
    )
    return {
        **params,
        "weight_bytes": quoted_weight_bytes(params),
        "tp_weight_bytes": quoted_weight_bytes(params, "tp_weight_bytes", "tp_model", "tp_precision"),
    }


def numbers(s: Mapping[str, Any]) -> Numbers:
    """Q1's numbers for scenario ``s`` (see ``scenario``), from the roofline library."""
    bw, peak, n = get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s, gpu_peak_flops_per_s(s), s["tp_num_gpus"]
    floor = decode_floor_s(s["weight_bytes"], bw)
    tp_floor = decode_floor_s(s["tp_weight_bytes"], n * bw)
    wrong_floor = compute_time_s(s["weight_bytes"], peak)
    exact = decode_step(s["model"], s["gpu"], 1, 0, weight_precision=s["weight_precision"])
    tp_exact = decode_step(s["tp_model"], s["gpu"], 1, 0, num_gpus=n, weight_precision=s["tp_precision"])
    return Numbers(
        floor_ms=floor / MS,
        ceiling_tps=1.0 / floor,
        tp_floor_ms=tp_floor / MS,
        tp_mbu_pct=mbu(s["tp_weight_bytes"], s["tp_measured_s"], n * bw) * PERCENT,
        bytes_over_flops_ms=wrong_floor / MS,
        bytes_over_flops_tps=1.0 / wrong_floor,
        one_gpu_floor_ms=decode_floor_s(s["tp_weight_bytes"], bw) / MS,
        one_gpu_mbu_pct=mbu(s["tp_weight_bytes"], s["tp_measured_s"], bw) * PERCENT,
        inverted_mbu_pct=s["tp_measured_s"] / tp_floor * PERCENT,
        bandwidth_bytes_per_s=bw,
        peak_flops_per_s=peak,
        floor_ms_exact=float(exact.step_time_s) / MS,
        ceiling_tps_exact=float(exact.tokens_per_s_per_user),
        tp_floor_ms_exact=float(tp_exact.step_time_s) / MS,
        tp_mbu_pct_exact=float(mbu(tp_exact.bytes_moved, s["tp_measured_s"], n * bw)) * PERCENT,
        exact_read_bytes=float(exact.bytes_moved),
        tp_exact_read_bytes=float(tp_exact.bytes_moved),
    )


def _verdict(advert: float, ceiling: float, lo: float, hi: float) -> str:
    if advert > ceiling:
        return (
            f"{advert:,.0f} tokens/s is above even the perfect ceiling, so no: it cannot be promised "
            "on this setup."
        )
    if advert > hi:
        return (
            f"{advert:,.0f} tokens/s is under the perfect ceiling but above what real kernels reach "
            f"(about {lo:,.0f}–{hi:,.0f}), so it would be a promise with no margin: no."
        )
    return (
        f"{advert:,.0f} tokens/s sits inside what real kernels reach (about {lo:,.0f}–{hi:,.0f}), "
        "so yes, with some margin."
    )


def _health(tp_mbu: float) -> str:
    if tp_mbu >= TYPICAL_MBU[0]:
        return "healthy"
    return "workable, with headroom to find" if tp_mbu >= 0.5 else "worth a profile: something else eats time"


def text(s: Mapping[str, Any], n: Numbers) -> CardText:
    """Q1's scenario, worked answer, common mistake and follow-up, in HTML."""
    m, g = get_model(s["model"]), get_gpu(s["gpu"])
    w, tp_w, k = s["weight_bytes"], s["tp_weight_bytes"], s["tp_num_gpus"]
    bw, peak = n.bandwidth_bytes_per_s, n.peak_flops_per_s
    floor, tp_floor, measured = n.floor_ms * MS, n.tp_floor_ms * MS, s["tp_measured_s"]
    wrong_floor, one_gpu = n.bytes_over_flops_ms * MS, n.one_gpu_floor_ms * MS
    ceiling, tp_mbu = n.ceiling_tps, n.tp_mbu_pct / PERCENT
    advert, bench = s["advertised_tps"], s["benchmark_tps"]
    lo, hi = (f * ceiling for f in TYPICAL_MBU)
    tp_name = get_model(s["tp_model"]).name
    tp_prec = prec(s["tp_precision"])
    return CardText(
        scenario=(
            f"<p>You serve {m.name} with {prec(s['weight_precision'])} weights ({gb(w)}) on one {g.name} "
            f"({tbps(bw)} of memory bandwidth, {tflops(peak)} dense), and exactly one user is online. "
            f"Product wants to advertise {advert:,.0f} tokens/s of streaming, and a colleague's benchmark "
            f"already prints {bench:,.0f} tokens/s.</p><p>Can you promise it? Give the shortest possible "
            f"decode step and the tokens/s ceiling it allows; then the follow-up: {tp_name} in "
            f"{tp_prec} ({gb(tp_w)}) split over {k} of these GPUs in tensor parallel "
            f"measures {ms(measured)} per token. What is its floor, and its MBU?</p>"
        ),
        worked=ul(
            f"With one user, each decode step must stream every weight out of HBM once, and no trick "
            f"shortens that read: {gb(w)} ÷ {tbps(bw)} = <b>{ms(floor)}</b> per step.",
            f"A step gives that user one token, so the ceiling is 1 ÷ {ms(floor)} = "
            f"<b>{ceiling:,.0f} tokens/s</b>; tuned kernels get {TYPICAL_MBU[0]:.0%}–{TYPICAL_MBU[1]:.0%} "
            f"of it, about {lo:,.0f}–{hi:,.0f}. {_verdict(advert, ceiling, lo, hi)}",
            f"The benchmark's {bench:,.0f} tokens/s is {bench / ceiling:.1f}× the physical ceiling, so the "
            "benchmark is wrong, not the physics: usually the timer stopped before the GPU finished "
            "(kernels launch asynchronously; synchronize before reading the clock), or prompt tokens were "
            "counted as output.",
            "Two levers make one user faster: read fewer bytes per step (quantized weights), or get more "
            "than one token per weight read (speculative decoding).",
        ),
        mistake=(
            f"<p>Reaching for TFLOPS. Dividing the weight bytes by the FLOP rate, {gb(w)} ÷ {tflops(peak)}, "
            f"gives {ms(wrong_floor)}: a number without meaning, {floor / wrong_floor:.0f}× too short. At "
            f"batch 1 the GPU does about {2 / bytes_per_element(s['weight_precision']):g} FLOP per "
            f"weight byte it reads, far below the ridge of {ridge_point_flop_per_byte(peak, bw):.0f}, "
            "so the memory read, not the arithmetic, decides the step.</p>"
            f"<p>In the follow-up, using one GPU's bandwidth gives {ms(one_gpu)}, a floor {k}× too slow: "
            f"the {k} GPUs read their shares of the weights in parallel, so their bandwidths add.</p>"
        ),
        followup_question=(
            f"Is {tp_name} in {tp_prec} at {ms(measured)} per token on {k} GPUs in tensor parallel a "
            "healthy baseline?"
        ),
        followup_answer=ul(
            f"Tensor parallelism gives each GPU 1/{k} of the weights, and they all read at once, so the "
            f"bandwidths add: {k} × {tbps(bw)} = {tbps(k * bw)}.",
            f"Floor: {gb(tp_w)} ÷ {tbps(k * bw)} = <b>{ms(tp_floor)}</b>.",
            f"MBU = floor ÷ measured = {ms(tp_floor)} ÷ {ms(measured)} = <b>{tp_mbu:.0%}</b>: "
            f"{_health(tp_mbu)}. (The all-reduces between the GPUs cost a little on top; lesson 24.)",
        ),
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled Q1 scenario: model, GPU, precisions, the advertised and benchmark speeds, the TP setup."""
    setup = draw_setup(rng)
    m, g, weight_precision = setup["model"], setup["gpu"], setup["weight_precision"]
    tp_precision = choice(rng, weight_precisions(g))
    ceiling = 1.0 / memory_floor_s(m, g, weight_precision)
    tp_model = choice(rng, dense_models())
    n = int(choice(rng, [2, 4, 8]))
    tp_bandwidth = n * get_gpu(g).memory_bandwidth_bytes_per_s
    tp_floor = decode_floor_s(weight_bytes(tp_model, tp_precision), tp_bandwidth)
    return dict(
        **setup,
        advertised_tps=sig(ceiling * rng.uniform(0.5, 2.0), 2),
        benchmark_tps=sig(ceiling * rng.uniform(5, 15), 2),
        tp_model=tp_model,
        tp_precision=tp_precision,
        tp_num_gpus=n,
        tp_measured_s=sig(tp_floor / rng.uniform(0.45, 0.92), 2),
    )


SPEC = CardSpec(
    qid="Q1",
    title="Can we advertise {advertised_tps:,.0f} tokens/s?",
    lessons=("02", "06", "16", "24"),
    defaults=dict(
        model="llama-3-8b",
        gpu="h100-sxm",
        weight_precision="bf16",
        advertised_tps=300.0,
        benchmark_tps=2000.0,
        tp_model="llama-3-70b",
        tp_precision="fp8",
        tp_num_gpus=2,
        tp_measured_s=14e-3,
    ),
    # The card quotes 16 GB (8.03 B × 2 bytes = 16.06 GB) and 70 GB (the tables: 70.55 GB).
    stated=dict(weight_bytes=16e9, tp_weight_bytes=70e9),
    answers=ANSWERS,
    traps=TRAPS,
    code=CardCode(scenario, numbers, text, draw),
)
