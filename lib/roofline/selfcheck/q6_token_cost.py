"""Card Q6, "What does a million tokens cost?": price per million tokens alone and batched, and why.

Taught in notebooks/01_token_cost.ipynb and notebooks/02_decode_floor.ipynb; practised in
notebooks/pack01_speed_physics.ipynb.

A GPU-hour costs the same whatever it yields: $ per million tokens = $ per hour × hours per million =
price ÷ (tokens/s × 3,600) × 10⁶. The batched rate comes from the batched step (weights + everyone's KV
over the bandwidth).

>>> n = numbers(scenario(SPEC.default_params()))
>>> round(n.cost_single_usd, 3), round(n.cost_batched_usd, 4)   # 3 / (200 × 3600) × 1e6; 4,300 tokens/s
(4.167, 0.1938)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.physics.cost import cost_per_million_tokens_usd, seconds_per_million_tokens, tokens_per_hour
from roofline.physics.memory import check_fits, kv_cache_bytes
from roofline.physics.step import batched_step_time_s, decode_floor_s
from roofline.selfcheck.common import (
    choice,
    draw_setup,
    exact_decode,
    fitting,
    given_or,
    memory_bound_decode,
    quoted_kv_bytes_per_token,
    quoted_weight_bytes,
)
from roofline.selfcheck.q3_batching import kv_per_token_text
from roofline.selfcheck.spec import (
    TRAP_DOLLARS_HOURS,
    TRAP_FORGOT_3600,
    TRAP_ONE_STREAM_PRICE,
    TRAP_ONE_USER_KV,
    TRAP_TOTAL_FOR_USER,
    AnswerSpec,
    CardCode,
    CardSpec,
    CardText,
    TrapSpec,
)
from roofline.selfcheck.text import gb, ms, prec, sig, tbps, ul
from roofline.units import MS, SECONDS_PER_HOUR, TOKENS_PER_MILLION

# What the card simplifies (lessons 01 and 16 explain it): round rates and weights against the library's.
RATE_WHY = (
    "The card prices its round {tps_single:,.0f} and {tps_batched:,.0f} tokens/s; the library prices the "
    "rates its step model gives at {context_tokens:,} tokens of context ({exact_tps_single:,.0f} and "
    "{exact_tps_batched:,.0f} tokens/s, lesson 01)."
)
STEP_WHY = (
    "The card's {weight_bytes!B} of weights are the stored ones; the library counts the "
    "{exact_weight_read_bytes!E} a step reads (the embedding table is looked up one row per token)."
)

ANSWERS = (
    AnswerSpec(
        "cost_single_usd", "cost per 1M tokens, one user", "$", exact="cost_single_usd_exact",
        exact_why=RATE_WHY,
    ),
    AnswerSpec(
        "cost_batched_usd", "cost per 1M tokens, {batch} users", "$", exact="cost_batched_usd_exact",
        exact_why=RATE_WHY,
    ),
    AnswerSpec(
        "step_ms", "follow-up: step with {batch} users", "ms", exact="step_ms_exact", exact_why=STEP_WHY
    ),
    AnswerSpec(
        "per_user_tps", "follow-up: tokens/s per user", "tokens/s", exact="per_user_tps_exact",
        exact_why=STEP_WHY,
    ),
)  # fmt: skip


def _price_traps(answer: str, case: str) -> tuple[TrapSpec, ...]:
    """The four pricing slips, for the single-user (``case="single"``) or batched cost."""
    return (
        TrapSpec(
            answer,
            TRAP_DOLLARS_HOURS,
            f"price_over_hours_{case}",
            f"A million tokens takes {{hours_{case}:.3g}} GPU-hours, and each hour costs "
            "${usd_per_gpu_hour:.2f}: multiply the price by the hours, do not divide.",
        ),
        TrapSpec(
            answer,
            TRAP_DOLLARS_HOURS,
            f"tokens_per_dollar_{case}",
            "Tokens per hour ÷ $ per hour is tokens per dollar, the inverse of a price.",
        ),
        TrapSpec(
            answer,
            TRAP_DOLLARS_HOURS,
            f"million_tokens_per_dollar_{case}",
            "That is millions of tokens per dollar, the inverse of the price per million.",
        ),
        TrapSpec(
            answer,
            TRAP_FORGOT_3600,
            f"per_second_price_{case}",
            "The price is per hour and the speed per second: turn tokens/s into tokens per hour (× 3,600) "
            "first.",
        ),
    )


_WHY_KV = (
    "Each of the {batch} users reads their own KV every step: "
    "{batch} × {context_tokens:,} × {kv_per_token_text}."
)
TRAPS = (
    *_price_traps("cost_single_usd", "single"),
    *_price_traps("cost_batched_usd", "batched"),
    TrapSpec(
        "cost_batched_usd",
        TRAP_ONE_STREAM_PRICE,
        "one_stream_usd",
        "The GPU-hour buys the tokens of all {batch} users; price the total rate.",
    ),
    TrapSpec("step_ms", TRAP_ONE_USER_KV, "one_kv_step_ms", _WHY_KV),
    TrapSpec("per_user_tps", TRAP_ONE_USER_KV, "one_kv_per_user_tps", _WHY_KV),
    TrapSpec(
        "per_user_tps",
        TRAP_TOTAL_FOR_USER,
        "total_tps",
        "That is the GPU's total; each user gets one token per step.",
    ),
)


@dataclass(frozen=True)
class Numbers:
    """Q6's answers and trap values (in the learner's units), and the figures its text quotes."""

    cost_single_usd: float
    cost_batched_usd: float
    step_ms: float
    per_user_tps: float
    price_over_hours_single: float  # $/hour ÷ hours per million
    tokens_per_dollar_single: float
    million_tokens_per_dollar_single: float
    per_second_price_single: float  # × 3,600: the speed left per second
    price_over_hours_batched: float
    tokens_per_dollar_batched: float
    million_tokens_per_dollar_batched: float
    per_second_price_batched: float
    one_stream_usd: float  # priced one user's share of the batched rate
    one_kv_step_ms: float
    one_kv_per_user_tps: float
    total_tps: float  # the GPU's total, given as one user's rate
    hours_single: float  # GPU-hours per million tokens
    hours_batched: float
    bandwidth_bytes_per_s: float
    # the library's exact answers (``decode_step``, priced with the same formula)
    cost_single_usd_exact: float
    cost_batched_usd_exact: float
    step_ms_exact: float
    per_user_tps_exact: float
    exact_tps_single: float
    exact_tps_batched: float
    exact_weight_read_bytes: float


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check that the batch fits; add the sizes and the round speeds the scenario quotes."""
    m, g = get_model(params["model"]), get_gpu(params["gpu"])
    b, t = params["batch"], params["context_tokens"]
    check_fits(m, g, b, t, weight_precision=params["weight_precision"])
    bw = g.memory_bandwidth_bytes_per_s
    w, kv = quoted_weight_bytes(params), quoted_kv_bytes_per_token(params, "bf16")
    return {
        **params,
        "weight_bytes": w,
        "kv_bytes_per_token": kv,
        "kv_per_token_text": kv_per_token_text(kv),
        "tps_single": given_or(params, "tps_single", lambda: sig(1.0 / decode_floor_s(w, bw), 2)),
        "tps_batched": given_or(
            params, "tps_batched", lambda: sig(b / batched_step_time_s(w, b, t, kv, bw), 2)
        ),
    }


def numbers(s: Mapping[str, Any]) -> Numbers:
    """Q6's numbers for scenario ``s`` (see ``scenario``), from the roofline library."""
    bw = get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s
    price, b, t = s["usd_per_gpu_hour"], s["batch"], s["context_tokens"]
    w, kv, r1, rb = s["weight_bytes"], s["kv_bytes_per_token"], s["tps_single"], s["tps_batched"]
    c1, cb = cost_per_million_tokens_usd(price, r1), cost_per_million_tokens_usd(price, rb)
    hours1 = seconds_per_million_tokens(r1) / SECONDS_PER_HOUR
    hoursb = seconds_per_million_tokens(rb) / SECONDS_PER_HOUR
    step = batched_step_time_s(w, b, t, kv, bw)
    one_kv = batched_step_time_s(w, 1, t, kv, bw)
    exact1, exact = exact_decode(s, 1, t), exact_decode(s, b, t)
    e1, eb = float(exact1.tokens_per_s_total), float(exact.tokens_per_s_total)
    return Numbers(
        cost_single_usd=c1,
        cost_batched_usd=cb,
        step_ms=step / MS,
        per_user_tps=1.0 / step,
        price_over_hours_single=price / hours1,
        tokens_per_dollar_single=tokens_per_hour(r1) / price,
        million_tokens_per_dollar_single=tokens_per_hour(r1) / price / TOKENS_PER_MILLION,
        per_second_price_single=c1 * SECONDS_PER_HOUR,
        price_over_hours_batched=price / hoursb,
        tokens_per_dollar_batched=tokens_per_hour(rb) / price,
        million_tokens_per_dollar_batched=tokens_per_hour(rb) / price / TOKENS_PER_MILLION,
        per_second_price_batched=cb * SECONDS_PER_HOUR,
        one_stream_usd=cost_per_million_tokens_usd(price, rb / b),
        one_kv_step_ms=one_kv / MS,
        one_kv_per_user_tps=1.0 / one_kv,
        total_tps=b * (1.0 / step),
        hours_single=hours1,
        hours_batched=hoursb,
        bandwidth_bytes_per_s=bw,
        cost_single_usd_exact=cost_per_million_tokens_usd(price, e1),
        cost_batched_usd_exact=cost_per_million_tokens_usd(price, eb),
        step_ms_exact=float(exact.step_time_s) / MS,
        per_user_tps_exact=float(exact.tokens_per_s_per_user),
        exact_tps_single=e1,
        exact_tps_batched=eb,
        exact_weight_read_bytes=float(exact.weight_bytes_read),
    )


def text(s: Mapping[str, Any], n: Numbers) -> CardText:
    """Q6's scenario, worked answer, common mistake and follow-up, in HTML."""
    m, g = get_model(s["model"]), get_gpu(s["gpu"])
    price, b, t = s["usd_per_gpu_hour"], s["batch"], s["context_tokens"]
    w, kv, r1, rb = s["weight_bytes"], s["kv_bytes_per_token"], s["tps_single"], s["tps_batched"]
    bw, step, c1, cb, hours1 = (
        n.bandwidth_bytes_per_s,
        n.step_ms * MS,
        n.cost_single_usd,
        n.cost_batched_usd,
        n.hours_single,
    )
    kv_all = kv_cache_bytes(b, t, kv)
    per_hour_1, per_hour_b = tokens_per_hour(r1), tokens_per_hour(rb)
    million_s = seconds_per_million_tokens(r1)
    return CardText(
        scenario=(
            f"<p>A {g.name} rents for ${price:.2f} per hour. Serving {m.name} "
            f"({prec(s['weight_precision'])}), one user alone gets about {r1:,.0f} tokens/s, and {b} users "
            f"batched produce about {rb:,.0f} tokens/s in total. What does a million output tokens cost in "
            f"each case? Follow-up: where does the batched figure come from, with {b} users at {t:,} tokens "
            f"of context ({gb(w)} of weights, {kv_per_token_text(kv)} of KV per token, {tbps(bw)})? Give the "
            "step time and one user's tokens/s.</p>"
        ),
        worked=ul(
            "The GPU is billed per hour, so first turn speed into tokens per hour: tokens/s × 3,600.",
            f"One user: {r1:,.0f} × 3,600 = {per_hour_1:,.0f} tokens per hour, so a million takes "
            f"{hours1:.2f} hours: ${price:.2f} × {hours1:.2f} = <b>${c1:.2f}</b> per million.",
            f"{b} users: {rb:,.0f} × 3,600 = {per_hour_b / 1e6:.1f} M tokens per hour, so a million "
            f"costs ${price:.2f} ÷ {per_hour_b / 1e6:.1f} = <b>${cb:.2f}</b>, {c1 / cb:.0f}× cheaper.",
            "The GPU-hour costs the same either way; only the tokens it yields change. That makes batching "
            "the main cost lever.",
        ),
        mistake=(
            f"<p>Dividing the hourly price by the hours (${price:.2f} ÷ {hours1:.2f} h = "
            f"${price / hours1:.2f}) or dividing tokens by dollars ({per_hour_1 / price:,.0f} tokens "
            "per dollar is not a price). Multiply: dollars per hour × hours per million.</p>"
            f"<p>And the powers of ten: a million tokens at {r1:,.0f} tokens/s takes "
            f"{million_s:,.0f} s, not {million_s / 10:,.0f}.</p>"
        ),
        followup_question=f"Where does the {b}-user figure of about {rb:,.0f} tokens/s come from?",
        followup_answer=ul(
            f"Each step reads the {gb(w)} of weights once, plus every user's KV: {b} × {t:,} × "
            f"{kv_per_token_text(kv)} = {gb(kv_all)}. Together {gb(w + kv_all)}, so the step takes "
            f"{gb(w + kv_all)} ÷ {tbps(bw)} = "
            f"<b>{ms(step)}</b>.",
            f"Each user gets a token per step: <b>{n.per_user_tps:,.0f} tokens/s</b>; all {b} together "
            f"{n.total_tps:,.0f} tokens/s.",
        ),
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled Q6 scenario: model, GPU, precision, price per GPU-hour, batch, context."""
    setup = draw_setup(rng)
    return dict(
        **setup,
        usd_per_gpu_hour=float(round(rng.uniform(0.8, 7.0), 2)),
        batch=int(choice(rng, [8, 16, 32, 48, 64, 96, 128])),
        context_tokens=int(choice(rng, fitting((512, 1000, 2048, 4096, 8192), setup["model"]))),
    )


SPEC = CardSpec(
    qid="Q6",
    title="What does a million tokens cost?",
    lessons=("01", "02"),
    defaults=dict(
        model="llama-3-8b",
        gpu="h100-sxm",
        weight_precision="bf16",
        usd_per_gpu_hour=3.0,
        batch=64,
        context_tokens=4096,
    ),
    # The card's round speeds (~200 and ~4,300 tokens/s); its 34 GB of KV uses 128 KiB per token.
    stated=dict(weight_bytes=16e9, kv_bytes_per_token=128 * 1024, tps_single=200.0, tps_batched=4300.0),
    answers=ANSWERS,
    traps=TRAPS,
    code=CardCode(scenario, numbers, text, draw, memory_bound_decode),
)
