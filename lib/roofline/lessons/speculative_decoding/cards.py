"""Card SPEC, "Is the draft worth it?": tokens per verify step, the cycle, tokens/s per user, the speed-up.

Taught in notebooks/speculative_decoding.ipynb; the physics is ``roofline.physics.speculative``.

One user; a proposer drafts k tokens, each costing r plain decode steps; the target verifies them in one
step of k + 1 tokens, which at batch 1 is memory-bound and costs about one plain step. With acceptance α:
E = (1 − α^(k+1)) ÷ (1 − α) tokens per cycle of k·r·S + V seconds.

>>> n = numbers(scenario(SPEC.default_params()))
>>> round(n["tokens_per_step"], 4), round(n["speedup_x"], 2)        # 1 + .8 + … + .8^4; E·S ÷ (4·.05·S + V)
(3.3616, 2.8)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from roofline.course.card_scenarios import choice, dense_models, fitting, gpu_ids, weight_precisions
from roofline.course.cards import CardCode, read_card, sig
from roofline.data import get_gpu, get_model
from roofline.errors import InvalidConfigurationError, RooflineError
from roofline.physics.speculative import (
    expected_tokens_per_step,
    speculative_collapse_batch,
    speculative_step,
)
from roofline.units import MS


def step(params: Mapping[str, Any], **options):
    """The library's speculative step for one user of the scenario."""
    return speculative_step(
        params["model"], params["gpu"], 1, params["context_tokens"], draft_tokens=int(params["draft_tokens"]),
        acceptance=params["acceptance"], draft_cost_ratio=params["draft_cost_ratio"],
        weight_precision=params["weight_precision"], **options,
    )  # fmt: skip


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check the numbers; add the plain step S and verify step V the scenario quotes (s, 3 digits)."""
    k, a, r = params["draft_tokens"], params["acceptance"], params["draft_cost_ratio"]
    if not float(k).is_integer() or not 1 <= k <= 16:
        raise InvalidConfigurationError(f"draft_tokens must be a whole number from 1 to 16, got {k!r}")
    if not 0 <= a < 1 or not 0 <= r <= 1:
        raise InvalidConfigurationError("acceptance must be in [0, 1) and draft_cost_ratio in [0, 1]")
    s = step(params)
    return {**params, "draft_tokens": int(k), "plain_step_s": sig(s.plain_step_time_s),
            "verify_step_s": sig(s.verify_time_s)}  # fmt: skip


def numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """SPEC's answers, trap values and the figures its text quotes: the geometric sum from the library,
    times from the quoted S and V."""
    k, a, r = s["draft_tokens"], s["acceptance"], s["draft_cost_ratio"]
    plain, verify = s["plain_step_s"], s["verify_step_s"]
    e = float(expected_tokens_per_step(a, k))
    draft = r * plain
    cycle = k * draft + verify
    collapse = speculative_collapse_batch(
        s["model"], s["gpu"], s["context_tokens"], draft_tokens=k, acceptance=a, draft_cost_ratio=r,
        weight_precision=s["weight_precision"], batches=np.arange(1, 1025),
    )  # fmt: skip
    if collapse == collapse:
        collapse_line = f"it drops below 1× from batch {collapse:.0f}"
    else:
        collapse_line = ("it stays above 1× up to 1,024 users or as many as fit: at this context each user's "
                         "KV read keeps even a big verify memory-bound")  # fmt: skip
    return dict(
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
        # the figures the text quotes
        draft_ms=draft / MS,
        draft_total_ms=k * draft / MS,
        draft_total_s=k * draft,
        draft_tokens_plus_one=k + 1,
        model_name=get_model(s["model"]).name,
        gpu_name=get_gpu(s["gpu"]).name,
        cycle_s=cycle,
        plain_tps=1 / plain,
        collapse_line=collapse_line,
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
        s = step(params, on_overflow="mask")
    except RooflineError:
        return False
    return bool(s.fits) and s.verify_binding == "memory"


SPEC = read_card(Path(__file__).with_name("cards.toml"), CardCode(scenario, numbers, draw, usable))
