"""Prefill against decode, and what one long prompt does to everyone else: lessons 04, 15 and 16.

Taught in lesson 04 (notebooks/04_roofline.ipynb: ridge table, the bytes ÷ FLOP/s trap, roofline readout),
lesson 15 (notebooks/15_prefill_vs_decode.ipynb: prefill vs prompt length, the stall of streaming users)
and lesson 16 (notebooks/16_step_time.ipynb: what batching gains in total and costs each user).

Prefill pushes all P prompt tokens through the model in one pass, so the weights are read once for P
tokens: it turns compute-bound once P passes roughly the ridge point. A decode step at batch 1 reads the
same weights for a single token and stays memory-bound. While an unchunked prefill runs, every streaming
user waits: they miss prefill time ÷ decode step time steps.

>>> import roofline as rl
>>> s = prefill_stall("llama-3-8b", "h100-sxm", 8000)
>>> round(s.prefill_time_s * 1e3), round(s.stalled_steps)
(130, 29)
>>> rl.prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm")
317
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
