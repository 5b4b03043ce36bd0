"""Card SPEC, "Is the draft worth it?": tokens per verify step, the cycle, tokens/s per user, the speed-up.

Taught in notebooks/speculative_decoding.ipynb; the physics is ``roofline.physics.speculative``.

One user; a proposer drafts k tokens, each costing r plain decode steps; the target verifies them in one
step of k + 1 tokens, which at batch 1 is memory-bound and costs about one plain step. With acceptance α:
E = (1 − α^(k+1)) ÷ (1 − α) tokens per cycle of k·r·S + V seconds.

>>> n = numbers(scenario(SPEC.default_params()))
>>> round(n.tokens_per_step, 4), round(n.speedup_x, 2)        # 1 + .8 + … + .8^4; E·S ÷ (4·.05·S + V)
(3.3616, 2.8)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.errors import InvalidConfigurationError, RooflineError
from roofline.physics.speculative import (
    expected_tokens_per_step,
    speculative_collapse_batch,
    speculative_step,
)
from roofline.selfcheck.common import choice, dense_models, fitting, gpu_ids, weight_precisions
from roofline.selfcheck.lever_common import (
    TRAP_ALL_ACCEPTED,
    TRAP_ALPHA_TO_THE_K,
    TRAP_FREE_DRAFT,
    TRAP_VERIFY_K_STEPS,
)
from roofline.selfcheck.spec import AnswerSpec, CardCode, CardSpec, CardText, TrapSpec
from roofline.selfcheck.text import ms, prec, sig, ul
from roofline.units import MS

ANSWERS = (
    AnswerSpec("tokens_per_step", "expected tokens per verify step", "tokens"),
    AnswerSpec("cycle_ms", "one cycle: {draft_tokens} drafts + the verify", "ms"),
    AnswerSpec("per_user_tps", "tokens/s for the user", "tokens/s"),
    AnswerSpec("speedup_x", "speed-up over plain decode", "×"),
)

TRAPS = (
    TrapSpec(
        "tokens_per_step",
        TRAP_ALPHA_TO_THE_K,
        "alpha_k",
        "α^k = {acceptance}^{draft_tokens} is the chance that every draft survives, not the expected count: "
        "add 1 + α + α² + … + α^k.",
    ),
    TrapSpec(
        "tokens_per_step",
        TRAP_ALL_ACCEPTED,
        "all_accepted",
        "k + 1 tokens only if every draft is accepted; with α = {acceptance} the run usually stops earlier.",
    ),
    TrapSpec(
        "cycle_ms",
        TRAP_VERIFY_K_STEPS,
        "k_steps_cycle_ms",
        "The verify reads the weights once for all {draft_tokens_plus_one} positions: at batch 1 it costs "
        "one "
        "step, not {draft_tokens_plus_one}.",
    ),
    TrapSpec(
        "cycle_ms",
        TRAP_FREE_DRAFT,
        "free_cycle_ms",
        "The {draft_tokens} draft steps run before the verify, {draft_ms:.3g} ms each: they belong in the "
        "cycle.",
    ),
    TrapSpec(
        "per_user_tps",
        TRAP_FREE_DRAFT,
        "free_per_user_tps",
        "Divide by the whole cycle, drafts included, not by the verify alone.",
    ),  # fmt: skip
    TrapSpec(
        "speedup_x",
        TRAP_FREE_DRAFT,
        "free_speedup_x",
        "Without the drafts' {draft_total_ms:.3g} ms the speed-up is overstated.",
    ),  # fmt: skip
    TrapSpec(
        "speedup_x",
        TRAP_ALPHA_TO_THE_K,
        "alpha_k_speedup_x",
        "α^k is not the tokens per step; use the geometric sum.",
    ),  # fmt: skip
)


@dataclass(frozen=True)
class Numbers:
    """SPEC's answers and trap values (learner's units), and the figures its text quotes."""

    tokens_per_step: float
    cycle_ms: float
    per_user_tps: float
    speedup_x: float
    alpha_k: float
    all_accepted: float
    k_steps_cycle_ms: float
    free_cycle_ms: float
    free_per_user_tps: float
    free_speedup_x: float
    alpha_k_speedup_x: float
    draft_ms: float
    draft_total_ms: float
    draft_tokens_plus_one: int
    collapse_batch: float


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check the numbers; add the plain step S and verify step V the scenario quotes (s, 3 digits)."""
    k, a, r = params["draft_tokens"], params["acceptance"], params["draft_cost_ratio"]
    if not float(k).is_integer() or not 1 <= k <= 16:
        raise InvalidConfigurationError(f"draft_tokens must be a whole number from 1 to 16, got {k!r}")
    if not 0 <= a < 1 or not 0 <= r <= 1:
        raise InvalidConfigurationError("acceptance must be in [0, 1) and draft_cost_ratio in [0, 1]")
    s = speculative_step(
        params["model"], params["gpu"], 1, params["context_tokens"], draft_tokens=int(k), acceptance=a,
        draft_cost_ratio=r, weight_precision=params["weight_precision"],
    )  # fmt: skip
    plain = params.get("plain_step_s") or sig(s.plain_step_time_s)
    verify = params.get("verify_step_s") or sig(s.verify_time_s)
    return {**params, "draft_tokens": int(k), "plain_step_s": plain, "verify_step_s": verify}


def numbers(s: Mapping[str, Any]) -> Numbers:
    """SPEC's numbers for scenario ``s``: the geometric sum from the library, times from the quoted S, V."""
    k, a, r = s["draft_tokens"], s["acceptance"], s["draft_cost_ratio"]
    plain, verify = s["plain_step_s"], s["verify_step_s"]
    e = float(expected_tokens_per_step(a, k))
    draft = r * plain
    cycle = k * draft + verify
    collapse = speculative_collapse_batch(
        s["model"], s["gpu"], s["context_tokens"], draft_tokens=k, acceptance=a, draft_cost_ratio=r,
        weight_precision=s["weight_precision"], batches=np.arange(1, 1025),
    )  # fmt: skip
    return Numbers(
        tokens_per_step=e,
        cycle_ms=cycle / MS,
        per_user_tps=e / cycle,
        speedup_x=e * plain / cycle,
        alpha_k=a**k,
        all_accepted=float(k + 1),
        k_steps_cycle_ms=(k * draft + (k + 1) * verify) / MS,
        free_cycle_ms=verify / MS if r > 0 else None,
        free_per_user_tps=e / verify if r > 0 else None,
        free_speedup_x=e * plain / verify if r > 0 else None,
        alpha_k_speedup_x=a**k * plain / cycle,
        draft_ms=draft / MS,
        draft_total_ms=k * draft / MS,
        draft_tokens_plus_one=k + 1,
        collapse_batch=collapse,
    )


def text(s: Mapping[str, Any], n: Numbers) -> CardText:
    """SPEC's scenario, worked answer, common mistake and follow-up, in HTML."""
    m, g = get_model(s["model"]), get_gpu(s["gpu"])
    k, a, r = s["draft_tokens"], s["acceptance"], s["draft_cost_ratio"]
    plain, verify = s["plain_step_s"], s["verify_step_s"]
    cycle = n.cycle_ms * MS
    collapse = (
        f"it drops below 1× from batch {n.collapse_batch:.0f}"
        if n.collapse_batch == n.collapse_batch
        else "it stays above 1× up to 1,024 users or as many as fit: at this context each user's KV read "
        "keeps "
        "even a big verify memory-bound"
    )
    return CardText(
        scenario=(
            f"<p>{m.name} in {prec(s['weight_precision'])} on one {g.name} serves one user at "
            f"{s['context_tokens']:,} tokens of context; a plain decode step takes {ms(plain)}. A proposer "
            f"drafts k = {k} tokens per cycle, each draft costing {r:g} of a plain step, and the target "
            f"verifies them in one step over {k + 1} positions, which takes {ms(verify)} (it reads the same "
            f"weights). Each draft is accepted with probability α = {a:g}. Give the expected tokens per "
            "verify step, the time of one cycle, the user's tokens/s and the speed-up over plain decode.</p>"
        ),
        worked=ul(
            f"Tokens per verify step: 1 + α + … + α<sup>{k}</sup> = (1 − {a:g}<sup>{k + 1}</sup>) ÷ "
            f"(1 − {a:g}) = <b>{n.tokens_per_step:.3f}</b>. The 1 is the target's own token.",
            f"Cycle: {k} drafts × {r:g} × {ms(plain)} = {ms(k * n.draft_ms * MS)}, plus the verify "
            f"{ms(verify)}: <b>{ms(cycle)}</b>.",
            f"Per user: {n.tokens_per_step:.3f} ÷ {ms(cycle)} = <b>{n.per_user_tps:,.0f} tokens/s</b>, "
            f"against {1 / plain:,.0f} plain.",
            f"Speed-up: {n.tokens_per_step:.3f} × {ms(plain)} ÷ {ms(cycle)} = <b>{n.speedup_x:.2f}×</b>.",
        ),
        mistake=(
            f"<p>Taking α<sup>k</sup> = {n.alpha_k:.3f} as the tokens per step. That is the chance that all "
            f"{k} drafts survive; the expected count adds every partial run and the target's own token.</p>"
            "<p>Leaving the drafts out of the cycle, or pricing the verify as k + 1 steps: the first "
            "flatters speculation, the second buries it.</p>"
        ),
        followup_question=(
            f"The same setup serves many users at {s['context_tokens']:,} tokens each. Does the speed-up "
            "last?"
        ),
        followup_answer=ul(
            "The verify computes batch × (k + 1) tokens. Once that nears the ridge point the step is "
            "compute-bound and costs k + 1 times the math of a plain step for fewer than k + 1 tokens.",
            f"For this model and GPU {collapse}.",
        ),
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled SPEC scenario: dense model, GPU, precision, context, k, α and the draft's cost ratio."""
    model, gpu = choice(rng, dense_models()), choice(rng, [g for g in gpu_ids() if weight_precisions(g)])
    return dict(
        model=model,
        gpu=gpu,
        weight_precision=choice(rng, weight_precisions(gpu)),
        context_tokens=int(choice(rng, fitting((500, 1000, 2000, 4000), model))),
        draft_tokens=int(choice(rng, [2, 3, 4, 5, 6, 8])),
        acceptance=float(choice(rng, [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9])),
        draft_cost_ratio=float(choice(rng, [0.02, 0.05, 0.1, 0.15, 0.2])),
    )


def usable(params: Mapping[str, Any]) -> bool:
    """The card's premise holds: one user fits, and the verify is memory-bound (costs about a plain step)."""
    try:
        s = speculative_step(
            params["model"], params["gpu"], 1, params["context_tokens"], draft_tokens=params["draft_tokens"],
            acceptance=params["acceptance"], draft_cost_ratio=params["draft_cost_ratio"],
            weight_precision=params["weight_precision"], on_overflow="mask",
        )  # fmt: skip
    except RooflineError:
        return False
    return bool(s.fits) and s.verify_binding == "memory"


SPEC = CardSpec(
    qid="SPEC",
    title="Is the draft worth it?",
    lessons=("speculative_decoding", "16", "61"),
    defaults=dict(
        model="llama-3-8b",
        gpu="h100-sxm",
        weight_precision="bf16",
        context_tokens=1000,
        draft_tokens=4,
        acceptance=0.8,
        draft_cost_ratio=0.05,
    ),
    stated={},
    answers=ANSWERS,
    traps=TRAPS,
    code=CardCode(scenario, numbers, text, draw, usable),
)
