"""Card Q5, "GPU-util is 100%, we need more GPUs": achieved bandwidth and MBU instead of GPU-util.

Taught in notebooks/09_gpu_util.ipynb, notebooks/16_step_time.ipynb, notebooks/59_dashboard.ipynb and
notebooks/60_amdahl.ipynb; practised in notebooks/pack01_speed_physics.ipynb.

A batch-1 decode step reads every weight: achieved bandwidth = weight bytes ÷ measured step, MBU =
achieved ÷ peak bandwidth. GPU-util (a duty cycle) and power say neither.

>>> n = numbers(scenario(SPEC.default_params()))
>>> round(n.achieved_tbps, 3), round(n.mbu_pct, 1)     # 16e9 / 6e-3 = 2.667e12 B/s; / 3.35e12
(2.667, 79.6)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.physics.memory import check_fits
from roofline.physics.metrics import achieved_bandwidth_bytes_per_s, mbu, mfu
from roofline.physics.step import decode_floor_s, prefill_flops
from roofline.selfcheck.common import (
    choice,
    draw_setup,
    exact_decode,
    gpu_peak_flops_per_s,
    memory_floor_s,
    quoted_parameters,
    quoted_weight_bytes,
)
from roofline.selfcheck.spec import (
    PERCENT,
    TRAP_GPU_UTIL,
    TRAP_INVERTED_MBU,
    TRAP_MFU_FOR_MBU,
    TRAP_POWER_AS_UTIL,
    AnswerSpec,
    CardCode,
    CardSpec,
    CardText,
    TrapSpec,
)
from roofline.selfcheck.text import gb, ms, prec, sig, tbps, ul
from roofline.units import TB

# What the card simplifies (lessons 09 and 16 explain it): its round weights against what a step reads.
EXACT_WHY = (
    "The card counts its {weight_bytes!B} of stored weights; the library counts the {exact_read_bytes!E} a "
    "step reads (the embedding table is looked up one row per token, not read whole)."
)

ANSWERS = (
    AnswerSpec(
        "achieved_tbps", "achieved memory bandwidth", "TB/s", exact="achieved_tbps_exact", exact_why=EXACT_WHY
    ),
    AnswerSpec("mbu_pct", "MBU", "%", exact="mbu_pct_exact", exact_why=EXACT_WHY),
)  # fmt: skip

TRAPS = (
    TrapSpec(
        "mbu_pct",
        TRAP_GPU_UTIL,
        "gpu_util_pct",
        "GPU-util is a duty cycle: the share of time some kernel was running, not how much of the chip it "
        "used.",
    ),
    TrapSpec(
        "mbu_pct",
        TRAP_POWER_AS_UTIL,
        "power_share_pct",
        "Power says how hard the chip works, not what share of the memory bandwidth is used; a "
        "memory-bound step leaves the tensor cores waiting, which draws little power.",
    ),
    TrapSpec(
        "mbu_pct",
        TRAP_MFU_FOR_MBU,
        "mfu_pct",
        "That is MFU, the compute share; decode at batch 1 is memory-bound, so MBU is the one to read.",
    ),
    TrapSpec(
        "mbu_pct",
        TRAP_INVERTED_MBU,
        "inverted_mbu_pct",
        "MBU is achieved ÷ peak bandwidth (floor ÷ measured), at most 100%.",
    ),
)


@dataclass(frozen=True)
class Numbers:
    """Q5's answers and trap values (in the learner's units), and the figures its text quotes."""

    achieved_tbps: float
    mbu_pct: float
    gpu_util_pct: float  # the dashboard's GPU-util, read as a utilisation
    power_share_pct: float  # power draw ÷ power cap
    mfu_pct: float  # one token's 2·N FLOP over the step, ÷ peak FLOP/s
    inverted_mbu_pct: float  # measured ÷ floor
    bandwidth_bytes_per_s: float
    power_cap_w: float
    # the library's exact answers (the bytes ``decode_step`` reads)
    achieved_tbps_exact: float
    mbu_pct_exact: float
    exact_read_bytes: float


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that the weights fit; add the parameter count and weight bytes the scenario quotes."""
    m = get_model(params["model"])
    check_fits(m, params["gpu"], 1, 0, weight_precision=params["weight_precision"])
    return {**params, "parameters": quoted_parameters(params), "weight_bytes": quoted_weight_bytes(params)}


def numbers(s: Mapping[str, Any]) -> Numbers:
    """Q5's numbers for scenario ``s`` (see ``scenario``), from the roofline library."""
    g = get_gpu(s["gpu"])
    bw, w, step = g.memory_bandwidth_bytes_per_s, s["weight_bytes"], s["measured_step_s"]
    one_token_flops = prefill_flops(s["parameters"], 1)  # 2 × N FLOP
    read = float(exact_decode(s, 1, 0).bytes_moved)
    return Numbers(
        achieved_tbps=achieved_bandwidth_bytes_per_s(w, step) / TB,
        mbu_pct=mbu(w, step, bw) * PERCENT,
        gpu_util_pct=float(s["gpu_util_pct"]),
        power_share_pct=s["power_w"] / g.power_w * PERCENT,
        mfu_pct=mfu(one_token_flops, step, gpu_peak_flops_per_s(s)) * PERCENT,
        inverted_mbu_pct=step / decode_floor_s(w, bw) * PERCENT,
        bandwidth_bytes_per_s=bw,
        power_cap_w=g.power_w,
        achieved_tbps_exact=achieved_bandwidth_bytes_per_s(read, step) / TB,
        mbu_pct_exact=mbu(read, step, bw) * PERCENT,
        exact_read_bytes=read,
    )


def text(s: Mapping[str, Any], n: Numbers) -> CardText:
    """Q5's scenario, worked answer, common mistake and follow-up, in HTML."""
    m, g = get_model(s["model"]), get_gpu(s["gpu"])
    w, step, bw, cap = s["weight_bytes"], s["measured_step_s"], n.bandwidth_bytes_per_s, n.power_cap_w
    return CardText(
        scenario=(
            f"<p>One user chats with {m.name} ({prec(s['weight_precision'])}, {gb(w)} of weights) on a "
            f"{g.name} ({tbps(bw)}). The dashboard shows GPU-util {s['gpu_util_pct']:.0f}%, power "
            f"{s['power_w']:.0f} W of a {cap:.0f} W cap, and {ms(step)} per decode token. Your manager "
            "wants more GPUs. Is this one maxed out? Give the bandwidth the step achieves and its MBU.</p>"
        ),
        worked=ul(
            "GPU-util reports the share of sampling windows in which any kernel ran, a duty cycle. A "
            "kernel that uses a sliver of the chip still counts as 100%.",
            f"Measure memory instead. Each step reads the {gb(w)} of weights: {gb(w)} ÷ {ms(step)} = "
            f"<b>{n.achieved_tbps:.2f} TB/s</b>, which is <b>{n.mbu_pct / PERCENT:.0%}</b> of the "
            f"{tbps(bw)} peak (MBU). Compute is nearly idle: MFU is {n.mfu_pct / PERCENT:.2%}.",
            f"So {s['power_w']:.0f} W of {cap:.0f} W is expected: a memory-bound step keeps the tensor "
            "cores waiting for data.",
            "The fix is more users per GPU (batching shares each weight read), not more GPUs.",
        ),
        mistake=(
            f"<p>Reading the power ({n.power_share_pct / PERCENT:.0%} of the cap) as 'half the units are "
            "idle, the kernels need work', or taking GPU-util at face value. Neither measures the "
            "bottleneck. Divide the achieved bandwidth by the peak bandwidth, not by the ridge or by "
            "anything in FLOP/s.</p>"
        ),
        followup_question="What would you put on the dashboard instead?",
        followup_answer=ul(
            "MBU and MFU, to see how busy memory and compute really are.",
            "Next to them: tokens/s, KV-cache usage, running and waiting requests, and percentiles of TTFT "
            "(time to first token) and TPOT (time per output token).",
        ),
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


SPEC = CardSpec(
    qid="Q5",
    title="GPU-util is 100%, we need more GPUs",
    lessons=("09", "16", "59", "60"),
    defaults=dict(
        model="llama-3-8b",
        gpu="h100-sxm",
        weight_precision="bf16",
        measured_step_s=6e-3,
        power_w=350.0,
        gpu_util_pct=100.0,
    ),
    stated=dict(parameters=8e9, weight_bytes=16e9),
    answers=ANSWERS,
    traps=TRAPS,
    code=CardCode(scenario, numbers, text, draw),
)
