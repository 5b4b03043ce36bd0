"""Closed-form limits of a serving deployment: how many KV tokens fit, and the largest rate it keeps up with.

Taught in notebooks/slos_and_capacity.ipynb; the simulator (``roofline.sim.simulate``) reports both beside
its results and uses the first as the default KV capacity.

>>> kv_capacity_tokens("llama-3-8b", "h100-sxm")
420859
"""

from __future__ import annotations

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.errors import DoesNotFitError
from roofline.physics.architecture import kv_bytes_per_token, weight_bytes
from roofline.physics.memory import memory_available_bytes


def kv_capacity_tokens(model, gpu, num_gpus=1, weight_precision="bf16", kv_precision="bf16") -> int:
    """KV-cache tokens that fit beside the weights on ``num_gpus`` GPUs (tokens): (the memory an engine
    gives weights and KV − weights) ÷ KV bytes per token, rounded down (``memory_available_bytes``,
    vLLM's defaults). Raises ``DoesNotFitError`` if the weights alone do not fit.

    >>> kv_capacity_tokens("llama-3-8b", "h100-sxm") > 400_000   # (66.3 GiB − 16.06 GB) ÷ 131,072
    True
    """
    weights = float(weight_bytes(model, weight_precision))
    free = float(memory_available_bytes(gpu, num_gpus)) - weights
    if free <= 0:
        raise DoesNotFitError(
            f"{get_model(model).id} weights ({weights / 1e9:.1f} GB at {weight_precision}) do not fit in "
            f"{num_gpus}x {get_gpu(gpu).id}"
        )
    return int(free // kv_bytes_per_token(model, kv_precision))


def sustainable_rate_per_s(
    cost,
    input_tokens: float,
    output_tokens: float,
    max_batch: int,
    kv_tokens: int,
    workers: int = 1,
    *,
    pipeline_stages: int = 1,
    decode_workers: int = 0,
) -> float:
    """About the largest request rate (requests/s) a deployment can keep up with (a closed form).

    In a saturated steady state the batch holds B = min(max_batch, KV tokens ÷ (P + O)) sequences. Each
    request stays about O iterations (one prefill, O − 1 decodes), so each iteration finishes B ÷ O
    requests and must take in as many new prompts. One such average iteration carries

        B (O − 1) ÷ O decode tokens at mean context P + O/2, and B ÷ O prompts of P tokens,

    and costs t = ``cost.time_s`` of that work (the weights are read once for both). Then
    rate ≈ workers × B ÷ (O × t). With S pipeline stages the iteration costs ``time_s`` of 1/S of the work
    (one microbatch through the pipeline). Disaggregated (``decode_workers`` > 0, ``workers`` = prefill
    workers): the smaller of workers ÷ prefill(P) and decode_workers × B ÷ ((O − 1) × step(B, P + O/2)).

    >>> from roofline.sim.cost import StepCostModel
    >>> c = StepCostModel("llama-3-8b", "h100-sxm")
    >>> round(sustainable_rate_per_s(c, 512, 128, 256, 420859), 1)   # compute-bound: 1,278 tokens a step
    108.0
    """
    p, o = float(input_tokens), max(float(output_tokens), 1.0)
    b = max(1, min(int(max_batch), int(kv_tokens // max(p + o, 1))))
    p1 = max(p, 1.0)  # an empty prompt still computes one start token
    prompt_pairs = max(p * (p - 1) / 2, 0.0)
    if decode_workers > 0:
        prefill_s = cost.time_s(p1, 1, 0, prompt_pairs, p)
        decode_s = (o - 1) * cost.decode_time_s(b, p + o / 2) / b if o > 1 else 0.0
        return min(workers / prefill_s, decode_workers / decode_s if decode_s > 0 else np.inf)
    dec = b * (o - 1) / o
    kv_read = dec * (p + o / 2)
    s = max(1, min(int(pipeline_stages), b))
    work = (b + b * (p1 - 1) / o, b, kv_read, kv_read + b / o * prompt_pairs, b * p / o)
    t = cost.time_s(*(x / s for x in work))
    return workers * b / (o * t)
