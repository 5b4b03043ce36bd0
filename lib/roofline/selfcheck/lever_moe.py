"""Card MOE, "It only reads the active experts, right?": a mixture of experts' weight read at batch 1 and at
batch B, the experts touched, and the batched step.

Taught in notebooks/mixture_of_experts.ipynb (and lesson 25, batching).

A token reads its k of E routed experts plus the shared part; B tokens touch E·(1 − (1 − k/E)^B) experts
per layer (``rl.expected_experts_touched``); the memory-bound step reads those weights and every user's KV.

>>> n = numbers(scenario(SPEC.default_params()))
>>> round(n.b1_read_gb, 1), round(n.touched, 2)     # shared + 2 experts; 8 × (1 − 0.75^8)
(25.8, 7.2)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.data import get_gpu, get_model, models
from roofline.errors import InvalidConfigurationError, RooflineError
from roofline.physics.architecture import (
    expected_experts_touched,
    kv_bytes_per_token,
    parameter_breakdown,
    weight_bytes,
)
from roofline.physics.core import memory_time_s
from roofline.physics.memory import check_fits, kv_cache_bytes
from roofline.physics.precision import bytes_per_element
from roofline.physics.step import decode_step
from roofline.selfcheck.common import choice, fitting
from roofline.selfcheck.lever_common import TRAP_ACTIVE_ONLY, TRAP_ALL_RESIDENT, TRAP_USERS_TIMES_EXPERTS
from roofline.selfcheck.spec import AnswerSpec, CardCode, CardSpec, CardText, TrapSpec
from roofline.selfcheck.text import gb, ms, prec, sig, tbps, ul
from roofline.units import GB, MS

ANSWERS = (
    AnswerSpec("b1_read_gb", "weights read per step, one user", "GB"),
    AnswerSpec("touched", "experts touched per layer, {batch} users", "experts"),
    AnswerSpec("big_read_gb", "weights read per step, {batch} users", "GB"),
    AnswerSpec("big_step_ms", "decode step, {batch} users", "ms"),
)

TRAPS = (
    TrapSpec(
        "b1_read_gb",
        TRAP_ALL_RESIDENT,
        "all_resident_gb",
        "One token goes through only its {experts_per_token} experts; the other experts stay unread.",
    ),  # fmt: skip
    TrapSpec(
        "touched",
        TRAP_USERS_TIMES_EXPERTS,
        "users_times_k",
        "Experts are shared: two users who pick the same expert read it once. At most {experts} exist.",
    ),  # fmt: skip
    TrapSpec(
        "touched",
        TRAP_ACTIVE_ONLY,
        "k_only",
        "{experts_per_token} experts is one token's pick; {batch} tokens pick far more between them.",
    ),  # fmt: skip
    TrapSpec(
        "big_read_gb",
        TRAP_ACTIVE_ONLY,
        "active_read_gb",
        "The active-parameter read holds for one token; {batch} users touch {touched:.1f} experts.",
    ),  # fmt: skip
    TrapSpec(
        "big_step_ms",
        TRAP_ACTIVE_ONLY,
        "active_step_ms",
        "With {batch} users the step reads {touched:.1f} experts per layer, not {experts_per_token}.",
    ),  # fmt: skip
)


def moe_models() -> list[str]:
    """MoE models whose routed experts are all there is to route (no shared expert, no dense layers)."""
    return [
        m.id
        for m in models().values()
        if m.is_moe and not getattr(m, "shared_experts", 0) and not getattr(m, "first_dense_layers", 0)
    ]


@dataclass(frozen=True)
class Numbers:
    """MOE's answers and trap values (learner's units)."""

    b1_read_gb: float
    touched: float
    big_read_gb: float
    big_step_ms: float
    all_resident_gb: float
    users_times_k: float
    k_only: float
    active_read_gb: float
    active_step_ms: float
    kv_gb: float


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check the model is an MoE and the batch fits; add the quoted shared and per-expert bytes (3 digits)."""
    m, g = get_model(params["model"]), get_gpu(params["gpu"])
    if not m.is_moe:
        raise InvalidConfigurationError(f"{m.id} is not a mixture of experts")
    p = params["weight_precision"]
    check_fits(
        m, g, params["batch"], params["context_tokens"], num_gpus=params["num_gpus"], weight_precision=p
    )
    expert = parameter_breakdown(m)["expert_mlp"] / m.experts * bytes_per_element(p)
    shared = weight_bytes(m, p) - m.experts * expert
    return {
        **params,
        "experts": m.experts,
        "experts_per_token": m.experts_per_token,
        "shared_bytes": params.get("shared_bytes") or sig(shared),
        "expert_bytes": params.get("expert_bytes") or sig(expert),
        "kv_bytes_per_token": params.get("kv_bytes_per_token") or sig(kv_bytes_per_token(m)),
    }


def numbers(s: Mapping[str, Any]) -> Numbers:
    """MOE's numbers: experts touched from the library, bytes and times from the quoted figures."""
    e, k, b, t = s["experts"], s["experts_per_token"], s["batch"], s["context_tokens"]
    shared, expert, kv = s["shared_bytes"], s["expert_bytes"], s["kv_bytes_per_token"]
    bw = s["num_gpus"] * get_gpu(s["gpu"]).memory_bandwidth_bytes_per_s
    touched = float(expected_experts_touched(s["model"], b))
    kv_all = kv_cache_bytes(b, t, kv)
    big = shared + expert * touched
    active = shared + expert * k
    return Numbers(
        b1_read_gb=active / GB,
        touched=touched,
        big_read_gb=big / GB,
        big_step_ms=memory_time_s(big + kv_all, bw) / MS,
        all_resident_gb=(shared + e * expert) / GB,
        users_times_k=float(b * k),
        k_only=float(k),
        active_read_gb=active / GB,
        active_step_ms=memory_time_s(active + kv_all, bw) / MS,
        kv_gb=kv_all / GB,
    )


def text(s: Mapping[str, Any], n: Numbers) -> CardText:
    """MOE's scenario, worked answer, common mistake and follow-up, in HTML."""
    m, g = get_model(s["model"]), get_gpu(s["gpu"])
    e, k, b, t, G = s["experts"], s["experts_per_token"], s["batch"], s["context_tokens"], s["num_gpus"]
    shared, expert, kv = s["shared_bytes"], s["expert_bytes"], s["kv_bytes_per_token"]
    bw = G * g.memory_bandwidth_bytes_per_s
    return CardText(
        scenario=(
            f"<p>{m.name} in {prec(s['weight_precision'])}: {e} routed experts, {k} per token. Outside the "
            f"experts it has {gb(shared)} of weights; each expert (its MLP in every layer) is {gb(expert)}. "
            f"It runs on {G} × {g.name} ({tbps(bw)} together), users holding {t:,} tokens at {gb(kv)} of KV "
            f"per token. Give the weights a step reads for one user; the experts touched per layer with {b} "
            f"users decoding together, the weights that step reads, and its time (memory-bound).</p>"
        ),
        worked=ul(
            f"One user: {gb(shared)} + {k} × {gb(expert)} = <b>{n.b1_read_gb:.1f} GB</b>, of "
            f"{n.all_resident_gb:.0f} GB resident.",
            f"{b} users: an expert escapes one token with probability 1 − {k}/{e}, all {b} with "
            f"(1 − {k}/{e})<sup>{b}</sup>; touched: {e} × (1 − (1 − {k}/{e})<sup>{b}</sup>) = "
            f"<b>{n.touched:.1f}</b>.",
            f"Read: {gb(shared)} + {n.touched:.1f} × {gb(expert)} = <b>{n.big_read_gb:.1f} GB</b>.",
            f"Step: ({n.big_read_gb:.1f} GB + {b} × {t:,} × {gb(kv)} = {n.kv_gb:.2f} GB of KV) "
            f"÷ {tbps(bw)} = <b>{ms(n.big_step_ms * MS)}</b>.",
        ),
        mistake=(
            f"<p>Using the active parameters at every batch: {b} users read {n.touched:.1f} experts per "
            f"layer, not {k}, so the step takes {ms(n.big_step_ms * MS)}, "
            f"not {ms(n.active_step_ms * MS)}.</p>"
            "<p>Under expert parallelism over a few GPUs it is worse at batch 1: one token's experts sit "
            "on at "
            "most k of them, which read at one GPU's bandwidth while the others wait.</p>"
        ),
        followup_question="Why do MoE models reward large batches, then?",
        followup_answer=ul(
            f"Past a few users every expert is read each step anyway ({n.all_resident_gb:.0f} GB), shared by "
            "the whole batch, while the math per token stays at the active size: the step stays memory-bound "
            "to large batches, so each extra user costs little more than their KV.",
        ),
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled MOE scenario: an MoE model, GPU, GPU count, precision, batch, context."""
    model = choice(rng, moe_models())
    return dict(
        model=model,
        gpu=choice(rng, ["h100-sxm", "h200", "b200", "mi300x", "a100-80gb-sxm"]),
        num_gpus=int(choice(rng, [1, 2, 4, 8])),
        weight_precision=choice(rng, ["bf16", "fp8"]),
        batch=int(choice(rng, [4, 8, 16, 32, 64])),
        context_tokens=int(choice(rng, fitting((500, 1000, 2000, 4096), model))),
    )


def usable(params: Mapping[str, Any]) -> bool:
    """The step is memory-bound and fits (the card's formula), and the GPU has the precision's math."""
    try:
        step = decode_step(
            params["model"], params["gpu"], params["batch"], params["context_tokens"],
            num_gpus=params["num_gpus"], weight_precision=params["weight_precision"], on_overflow="mask",
        )  # fmt: skip
    except RooflineError:
        return False
    return bool(step.fits) and step.binding == "memory"


SPEC = CardSpec(
    qid="MOE",
    title="It only reads the active experts, right?",
    lessons=("mixture_of_experts", "25"),
    defaults=dict(
        model="mixtral-8x7b",
        gpu="h100-sxm",
        num_gpus=2,
        weight_precision="bf16",
        batch=8,
        context_tokens=1000,
    ),
    stated={},
    answers=ANSWERS,
    traps=TRAPS,
    code=CardCode(scenario, numbers, text, draw, usable),
)
