"""Card Q3, "32 users means 32× slower, right?": the batched step, each user's and the GPU's tokens/s.

Taught in notebooks/02_decode_floor.ipynb, notebooks/16_step_time.ipynb, notebooks/25_batching.ipynb and
notebooks/28_kv_cache.ipynb; practised in notebooks/pack01_speed_physics.ipynb.

The batch shares one weight read per step and adds every user's KV: step = (weights + B × context × KV per
token) ÷ bandwidth; each user gets a token per step, the GPU B tokens.

>>> n = numbers(scenario(SPEC.default_params()))
>>> round(n.step_ms, 3), round(n.total_tps)     # (16e9 + 32 × 1,000 × 131,072) / 3.35e12; 32 / step
(6.028, 5308)
>>> kv_per_token_text(131072.0), kv_per_token_text(65536.0), kv_per_token_text(131000.0)
('128 KiB', '64 KiB', '131 KB')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.physics.memory import check_fits, kv_cache_bytes
from roofline.physics.step import batched_step_time_s, decode_floor_s
from roofline.selfcheck.common import (
    choice,
    draw_setup,
    exact_decode,
    fitting,
    memory_bound_decode,
    quoted_kv_bytes_per_token,
    quoted_weight_bytes,
)
from roofline.selfcheck.spec import (
    TRAP_B_TIMES_SLOWER,
    TRAP_FULL_B_GAIN,
    TRAP_ONE_USER_KV,
    AnswerSpec,
    CardCode,
    CardSpec,
    CardText,
    TrapSpec,
)
from roofline.selfcheck.text import gb, ms, prec, tbps, ul
from roofline.units import MS

# What the card simplifies (lesson 16 explains it): its round weights against what a step reads.
EXACT_WHY = (
    "The card's {weight_bytes!B} of weights are the stored ones; the library counts the bytes a step reads "
    "({exact_weight_read_bytes!E} of weights: the embedding table is looked up one row per token) and, in "
    "the single-user step, that user's own KV cache too."
)

ANSWERS = (
    AnswerSpec("step_ms", "decode step with {batch} users", "ms", exact="step_ms_exact", exact_why=EXACT_WHY),
    AnswerSpec(
        "per_user_tps", "tokens/s per user", "tokens/s", exact="per_user_tps_exact", exact_why=EXACT_WHY
    ),
    AnswerSpec("total_tps", "tokens/s in total", "tokens/s", exact="total_tps_exact", exact_why=EXACT_WHY),
    AnswerSpec("gain_x", "total ÷ single-user tokens/s", "×", exact="gain_x_exact", exact_why=EXACT_WHY),
)  # fmt: skip

_WHY_KV = (
    "Every user reads their own KV cache each step; with {batch} users the byte sum needs "
    "{batch} × {context_tokens:,} × {kv_per_token_text}, not one user's share."
)
TRAPS = (
    TrapSpec("step_ms", TRAP_ONE_USER_KV, "one_kv_step_ms", _WHY_KV),
    TrapSpec("per_user_tps", TRAP_ONE_USER_KV, "one_kv_per_user_tps", _WHY_KV),
    TrapSpec("total_tps", TRAP_ONE_USER_KV, "one_kv_total_tps", _WHY_KV),
    TrapSpec(
        "step_ms",
        TRAP_B_TIMES_SLOWER,
        "b_times_step_ms",
        "The weights are read once per step for the whole batch, so the step does not grow "
        "{batch}-fold; only the KV part grows.",
    ),
    TrapSpec(
        "per_user_tps",
        TRAP_B_TIMES_SLOWER,
        "b_times_per_user_tps",
        "Each user still gets one token per step, and the step grew only by the KV bytes.",
    ),
    TrapSpec(
        "gain_x",
        TRAP_FULL_B_GAIN,
        "full_gain_x",
        "The step got {stretch:.2f}× longer, so the gain is {batch} ÷ {stretch:.2f}, not {batch}.",
    ),
)


@dataclass(frozen=True)
class Numbers:
    """Q3's answers and trap values (in the learner's units), and the SI figures its text quotes."""

    step_ms: float
    per_user_tps: float
    total_tps: float
    gain_x: float
    one_kv_step_ms: float  # one user's KV in the byte sum instead of everyone's
    one_kv_per_user_tps: float
    one_kv_total_tps: float
    b_times_step_ms: float  # the PM's claim: B single-user steps
    b_times_per_user_tps: float
    full_gain_x: float  # B
    stretch: float  # batched step ÷ single-user step
    floor_s: float
    kv_all_bytes: float
    bandwidth_bytes_per_s: float
    # the library's exact answers (``decode_step``: the bytes a step reads)
    step_ms_exact: float
    per_user_tps_exact: float
    total_tps_exact: float
    gain_x_exact: float
    exact_weight_read_bytes: float


def kv_per_token_text(kv_bytes_per_token: float) -> str:
    """KV bytes per token in words: a whole number of KiB (the model's true size, 128 KiB = 131,072 bytes
    for Llama 3 8B in BF16) is said in KiB, so Q3 and Q6 name the same value the same way; other sizes in
    decimal units.

    Display only (cards Q3 and Q6); the value itself comes from ``rl.kv_bytes_per_token``.
    """
    kib = kv_bytes_per_token / 1024
    if kib == int(kib) and kib >= 1:
        return f"{kib:,.0f} KiB"
    return gb(kv_bytes_per_token)


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that the batch fits; add the weight bytes and KV bytes per token the scenario quotes."""
    m, g = get_model(params["model"]), get_gpu(params["gpu"])
    check_fits(
        m,
        g,
        params["batch"],
        params["context_tokens"],
        weight_precision=params["weight_precision"],
        kv_precision=params["kv_precision"],
    )
    kv = quoted_kv_bytes_per_token(params, params["kv_precision"])
    return {
        **params,
        "weight_bytes": quoted_weight_bytes(params),
        "kv_bytes_per_token": kv,
        "kv_per_token_text": kv_per_token_text(kv),
    }


def numbers(s: Mapping[str, Any]) -> Numbers:
    """Q3's numbers for scenario ``s`` (see ``scenario``), from the roofline library."""
    bw = get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s
    w, kv, b, t = s["weight_bytes"], s["kv_bytes_per_token"], s["batch"], s["context_tokens"]
    floor = decode_floor_s(w, bw)
    single = 1.0 / floor
    step = batched_step_time_s(w, b, t, kv, bw)
    one_kv = batched_step_time_s(w, 1, t, kv, bw)
    exact = exact_decode(s, b, t)
    exact_one = exact_decode(s, 1, t)
    return Numbers(
        step_ms=step / MS,
        per_user_tps=1.0 / step,
        total_tps=b / step,
        gain_x=(b / step) / single,
        one_kv_step_ms=one_kv / MS,
        one_kv_per_user_tps=1.0 / one_kv,
        one_kv_total_tps=b / one_kv,
        b_times_step_ms=b * floor / MS,
        b_times_per_user_tps=single / b,
        full_gain_x=float(b),
        stretch=step / floor,
        floor_s=floor,
        kv_all_bytes=kv_cache_bytes(b, t, kv),
        bandwidth_bytes_per_s=bw,
        step_ms_exact=float(exact.step_time_s) / MS,
        per_user_tps_exact=float(exact.tokens_per_s_per_user),
        total_tps_exact=float(exact.tokens_per_s_total),
        gain_x_exact=float(exact.tokens_per_s_total * exact_one.step_time_s),
        exact_weight_read_bytes=float(exact.weight_bytes_read),
    )


def text(s: Mapping[str, Any], n: Numbers) -> CardText:
    """Q3's scenario, worked answer, common mistake and follow-up, in HTML."""
    m, g = get_model(s["model"]), get_gpu(s["gpu"])
    w, kv, b, t = s["weight_bytes"], s["kv_bytes_per_token"], s["batch"], s["context_tokens"]
    bw, floor, kv_all, step = n.bandwidth_bytes_per_s, n.floor_s, n.kv_all_bytes, n.step_ms * MS
    single, queued = 1.0 / floor, s["queued_users"]
    return CardText(
        scenario=(
            f"<p>A PM claims that serving {b} users at once makes each of them {b}× slower. The setup: "
            f"{m.name}, {prec(s['weight_precision'])} weights ({gb(w)}), on one {g.name} ({tbps(bw)}); "
            f"each user holds about {t:,} tokens of context at {kv_per_token_text(kv)} of KV cache per token "
            f"({prec(s['kv_precision'])}). What happens to one user's speed, and to the GPU's total? Give "
            "the batched step time, tokens/s per user, tokens/s in total, and the total's gain over a "
            "single user.</p>"
        ),
        worked=ul(
            f"Alone, a user's step reads the {gb(w)} of weights: {gb(w)} ÷ {tbps(bw)} = {ms(floor)}, "
            f"so {single:,.0f} tokens/s.",
            f"With {b} users the weights are still read once per step, shared by the batch. What is added "
            f"is each user's own KV: {b} × {t:,} × {kv_per_token_text(kv)} = {gb(kv_all)}. The step reads "
            f"{gb(w + kv_all)}: {gb(w + kv_all)} ÷ {tbps(bw)} = <b>{ms(step)}</b>, and it yields {b} "
            "tokens, one per user.",
            f"Each user: one token per {ms(step)} = <b>{n.per_user_tps:,.0f} tokens/s</b>, "
            f"{n.stretch - 1:.0%} slower than alone, not {b}× slower.",
            f"The GPU: {b} tokens per {ms(step)} = <b>{n.total_tps:,.0f} tokens/s</b>, "
            f"<b>{n.gain_x:.1f}×</b> the single user's {single:,.0f}. Not the full {b}× because the step "
            f"got {n.stretch:.2f}× longer: {b} ÷ {n.stretch:.2f} = {b / n.stretch:.1f}.",
            "What batching costs is KV memory, which grows as batch × context.",
        ),
        mistake=(
            f"<p>Adding one user's KV ({gb(kv_cache_bytes(1, t, kv))}) instead of {b} users' "
            f"({gb(kv_all)}) gives a step of {ms(n.one_kv_step_ms * MS)}, almost the single-user floor. "
            f"If the question says {b} users, {b} must appear in the byte sum.</p>"
            f"<p>A sanity check that catches unit slips: at batch 1, {ms(floor)} per step must come out "
            f"as about {single:,.0f} tokens/s.</p>"
        ),
        followup_question=(
            f"A FastAPI server calls generate() per request; {queued} users wait "
            f"{s['queued_wait_s']:.0f} s and the GPU's math units sit mostly idle. Buy a bigger GPU?"
        ),
        followup_answer=ul(
            "No. The requests run one after another, so the queue is the bottleneck, not the chip: each "
            "request reads all the weights per token on its own.",
            f"Continuous batching lets all {queued} share each weight read: by the numbers above a step "
            f"for them would take about {ms(batched_step_time_s(w, queued, t, kv, bw))} instead of "
            f"{queued} separate steps of {ms(floor)}.",
        ),
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


SPEC = CardSpec(
    qid="Q3",
    title="{batch} users means {batch}× slower, right?",
    lessons=("02", "16", "25", "28"),
    defaults=dict(
        model="llama-3-8b",
        gpu="h100-sxm",
        weight_precision="bf16",
        kv_precision="bf16",
        batch=32,
        context_tokens=1000,
        queued_users=20,
        queued_wait_s=40.0,
    ),
    # One value for one quantity (as in Q6): Llama 3 8B's KV is 128 KiB = 131,072 bytes per token. The printed
    # card's "128 KB" and "4.1 GB" read it as 128,000 bytes; the exact 4.19 GB moves the step from 5.999 ms to
    # 6.028 ms (+0.5%), well inside the answer tolerance, so an answer worked from the card's figures passes.
    stated=dict(weight_bytes=16e9, kv_bytes_per_token=128 * 1024),
    answers=ANSWERS,
    traps=TRAPS,
    code=CardCode(scenario, numbers, text, draw, memory_bound_decode),
)
