"""The course's figures, built once and updated in place, in one plot style.

Every figure is a ``LiveFigure``: constructing it draws the scenario; ``update(scenario)`` recomputes the
physics (one vectorized library call per curve) and moves the existing artists instead of building a new
figure, which keeps a slider move fast (``benchmarks/explorer_redraw.py`` measures it). A LiveFigure shows
itself as a PNG image with its alt text (``alt_text``) in a notebook; ``roofline.ui.widgets.Explorer`` puts it
behind sliders.

Wherever a configuration does not fit in memory, the figure shades that region and says so: there is no
step time for a server that cannot start.

>>> fig = StepTimeVsBatch(Scenario(batch=32))
>>> fig
<StepTimeVsBatch: llama-3-8b on 1x h100-sxm, bf16 weights, bf16 KV, B=32, T=1000>
>>> fig.update(Scenario(batch=64, context_tokens=4096)); len(fig.png()) > 10_000
True
"""

from __future__ import annotations

import numpy as np

from roofline.course.figures import BATCH_SWEEP, COLORS, _TwoPanelsVsBatch, describe
from roofline.course.widgets import FOUR, Explorer
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.scenario import Scenario


class CostVsBatch(_TwoPanelsVsBatch):
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
