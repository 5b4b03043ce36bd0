"""Lesson 01's figure and explorer: the cost of a million tokens against batch, at the GPU's price.

>>> cost_explorer().scenario.batch
64
"""

from __future__ import annotations

import numpy as np

from roofline.course.figures import BATCH_SWEEP, COLORS, TwoPanelsVsBatch, describe
from roofline.course.widgets import FOUR, Explorer
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.scenario import Scenario


class CostVsBatch(TwoPanelsVsBatch):
    """Cost per million output tokens against batch, beside the per-user speed it buys: the ideal floor
    (solid) and what a good engine reaches (dash-dot)."""

    panels = (
        ("$ per million output tokens", "Cost", COLORS["compute"]),
        ("tokens/s, each user", "Speed each user gets", COLORS["prefill"]),
    )

    def _curves(self, s, sweep):
        cost = np.full(BATCH_SWEEP.shape, np.nan)
        ok = sweep.fits
        if s.usd_per_gpu_hour is not None:  # a GPU without a listed price has no cost until one is typed
            cost[ok] = cost_per_million_tokens_usd(
                s.usd_per_gpu_hour, sweep.tokens_per_s_total[ok], s.num_gpus
            )
        return cost, sweep.tokens_per_s_per_user

    def _real_curves(self, s, step_s):
        cost = np.full(BATCH_SWEEP.shape, np.nan)
        ok = np.isfinite(step_s)
        if s.usd_per_gpu_hour is not None:
            tokens_per_s = BATCH_SWEEP[ok] / step_s[ok]
            cost[ok] = cost_per_million_tokens_usd(s.usd_per_gpu_hour, tokens_per_s, s.num_gpus)
        return cost, 1 / step_s

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
