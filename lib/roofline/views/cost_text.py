"""The "cost per 1M tokens" cell of every readout (the engine readout of every lesson, and lessons 03, 24
and 25's own tables), at the scenario's price.

Taught in notebooks/01_token_cost.ipynb, notebooks/03_launch_overhead.ipynb,
notebooks/24_tensor_parallel.ipynb and notebooks/25_batching.ipynb. Display only: the price arithmetic is
``roofline.physics.cost``.

>>> from roofline.scenario import Scenario
>>> cost_text(Scenario(usd_per_gpu_hour=3.0), 200.0)       # $3 / (200 × 3,600 tokens) × 1e6
'$4.17'
>>> cost_text(Scenario(gpu="h200"), float("nan"))
'—'
"""

from __future__ import annotations

import math

from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.scenario import Scenario


def cost_text(s: Scenario, tokens_per_s: float) -> str:
    """$ per million tokens for ``tokens_per_s`` (all users, tokens/s) on the scenario's G GPUs at its price
    ($ per GPU-hour), as text; what to do where the GPU has no price (a machine you measured and saved),
    "—" where there is no rate."""
    if s.usd_per_gpu_hour is None:
        return "no price: type $ per GPU-hour"
    if not (tokens_per_s > 0 and math.isfinite(tokens_per_s)):
        return "—"
    return f"${cost_per_million_tokens_usd(s.usd_per_gpu_hour, tokens_per_s, s.num_gpus):.2f}"
