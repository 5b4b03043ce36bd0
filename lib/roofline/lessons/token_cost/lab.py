"""Lesson 01's figure and explorer: the cost of a million tokens against batch, at the GPU's price."""

from __future__ import annotations

import numpy as np

from roofline.course.figures import BATCH_SWEEP, COLORS, TwoPanelsVsBatch, describe
from roofline.course.widgets import FOUR, Explorer
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.scenario import Scenario


def _cost(s: Scenario, tokens_per_s, ok):
    """$ per million tokens at the GPU's price where ``ok``; NaN elsewhere, and without a listed price."""
    cost = np.full(BATCH_SWEEP.shape, np.nan)
    if s.usd_per_gpu_hour is not None:
        cost[ok] = cost_per_million_tokens_usd(s.usd_per_gpu_hour, tokens_per_s[ok], s.num_gpus)
    return cost


class CostVsBatch(TwoPanelsVsBatch):
    """Cost per million output tokens against batch, beside the per-user speed it buys: the ideal floor
    (solid) and what a good engine reaches (dash-dot)."""

    panels = (
        ("$ per million output tokens", "Cost", COLORS["compute"]),
        ("tokens/s, each user", "Speed each user gets", COLORS["prefill"]),
    )

    def _curves(self, s, sweep):
        return _cost(s, sweep.tokens_per_s_total, sweep.fits), sweep.tokens_per_s_per_user

    def _real_curves(self, s, step_s):
        return _cost(s, BATCH_SWEEP / step_s, np.isfinite(step_s)), 1 / step_s

    def _points(self, s, here):
        speed = (here.tokens_per_s_per_user, f"{here.tokens_per_s_per_user:.0f} tok/s")
        if s.usd_per_gpu_hour is None:
            return None, speed
        cost = cost_per_million_tokens_usd(s.usd_per_gpu_hour, here.tokens_per_s_total, s.num_gpus)
        return (cost, f"${cost:.2f} per M"), speed

    def _suptitle(self, s):
        price = "no listed price" if s.usd_per_gpu_hour is None else f"${s.usd_per_gpu_hour:.2f}/GPU-hour"
        return f"{describe(s)}, T={s.context_tokens:,}, {price}"


def cost_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 01's explorer: the cost per 1M tokens against batch; the price follows the GPU or is typed.

    >>> cost_explorer().scenario.batch
    64
    """
    return Explorer(
        CostVsBatch,
        [*FOUR, "gpu", "usd_per_gpu_hour", "model"],
        scenario or Scenario(batch=64, context_tokens=4096),
        presets={"the card: 64 users": {"batch": 64}, "one user": {"batch": 1}},
    )
