"""Lesson 16's numbers: what batching gains in total and what it costs each user.

A step of B users reads the weights once and every user's KV cache; each user gets one token per step, so
per user = 1 ÷ step and in total = B ÷ step (``roofline.lessons.roofline.throughput_tokens_per_s``).
"""

from __future__ import annotations

import numpy as np

from roofline.checks import checked, out


def per_user_slowdown(step_time_batch_s, step_time_single_s):
    """How much slower each user's tokens arrive in a batch than alone: step(B) ÷ step(1) (ratio).

    >>> per_user_slowdown(6.0e-3, 4.8e-3)   # the card's Q3: 32 users, 1.25x slower each, not 32x
    1.25
    """
    b = checked(step_time_batch_s, "step_time_batch_s", above=0)
    one = checked(step_time_single_s, "step_time_single_s", above=0)
    return out(b / one)


def batching_gain(batch, step_time_batch_s, step_time_single_s):
    """Total-throughput gain of a batch of B over one user alone: B × step(1) ÷ step(B) (ratio).

    Each step makes B tokens instead of 1 but lasts step(B) instead of step(1), so the gain is B divided
    by the per-user slowdown.

    >>> round(batching_gain(32, 6.0e-3, 4.8e-3), 1)   # 32 ÷ 1.25 = 25.6x, not 32x
    25.6
    >>> np.round(batching_gain([1, 8], [4.8e-3, 4.9e-3], 4.8e-3), 2).tolist()
    [1.0, 7.84]
    """
    b = checked(batch, "batch", minimum=1)
    return out(b / np.asarray(per_user_slowdown(step_time_batch_s, step_time_single_s)))
