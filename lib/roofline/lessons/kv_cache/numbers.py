"""The KV cache: what every token of context costs in memory, and how many users that leaves room for.

Taught in lesson 28 (notebooks/28_kv_cache.ipynb). The per-token formula lives in
``roofline.physics.architecture.kv_bytes_per_token``, the fit test in ``roofline.physics.memory``; this
module adds the saving from grouped-query attention, the pool of KV tokens a GPU can hold, and a table.

    KV bytes per token = 2 (K and V) × L × H_kv × d_h × bytes per element
    KV token capacity  = (memory for weights and KV − weight bytes) ÷ KV bytes per token
    largest batch      = floor(capacity ÷ T)
"""

from __future__ import annotations

import numpy as np

from roofline.checks import checked, out
from roofline.data import get_gpu, models
from roofline.physics.architecture import kv_bytes_per_token, kv_bytes_per_token_mha, weight_bytes
from roofline.physics.memory import max_batch, memory_available_bytes

# Contexts the lesson's batch-vs-context figure sweeps (tokens per user, log-spaced).
CONTEXT_SWEEP = np.unique(np.round(np.geomspace(128, 131072, 120)).astype(int))
COMPARE_GPUS = ("h100-sxm", "h200", "b200", "a100-80gb-sxm", "l40s")
COMPARE_KV_PRECISIONS = ("bf16", "fp8", "int4")


def gqa_factor(model) -> float:
    """How many times smaller the KV cache is with grouped-query attention than it would be with full
    multi-head attention: KV bytes (H_kv = H) ÷ KV bytes (H_kv), i.e. H ÷ H_kv (a ratio).

    >>> gqa_factor("qwen2.5-7b")    # 28 query heads share 4 KV heads
    7.0
    """
    return kv_bytes_per_token_mha(model) / kv_bytes_per_token(model)


def kv_token_capacity(model, gpu, *, num_gpus=1, weight_precision="bf16", kv_precision="bf16"):
    """Tokens of KV cache that fit in all the memory of ``num_gpus`` GPUs beside the weights (tokens, all
    users together): the upper bound, before an engine keeps its share (``rl.memory_available_bytes``).

    Users share this pool: B users at T tokens each fit while B × T ≤ capacity. 0 where the weights alone
    do not fit. Broadcasts over ``num_gpus``.

    >>> kv_token_capacity("llama-3-8b", "h100-sxm")       # all 80 GiB: (85.9e9 − 16.06e9) ÷ 131,072
    532827
    >>> kv_token_capacity("llama-3-70b", "h100-sxm", num_gpus=[1, 2])   # 141 GB of BF16 weights
    array([    0, 93662])
    """
    n = checked(num_gpus, "num_gpus", minimum=1)
    free = np.asarray(memory_available_bytes(gpu, n, "ideal")) - weight_bytes(model, weight_precision)
    return out(np.floor(np.maximum(free, 0) / kv_bytes_per_token(model, kv_precision)).astype(int))


def kv_table_rows(kv_precision="bf16") -> list[dict]:
    """One row per model in the table: its attention shape, its KV bytes per token as built and with full
    multi-head attention (bytes), and one user's KV at its longest context (bytes).

    >>> row = kv_table_rows()[0]
    >>> row["model"], row["kv_bytes_per_token"] / 1024
    ('llama-3-8b', 128.0)
    """
    rows = []
    for m in models().values():
        per_token = kv_bytes_per_token(m, kv_precision)
        rows.append(
            {
                "model": m.id,
                "layers": m.layers,
                "heads": m.attention_heads,
                "kv_heads": m.kv_heads,
                "head_dim": m.head_dim,
                "kv_bytes_per_token": per_token,
                "kv_bytes_per_token_mha": kv_bytes_per_token_mha(m, kv_precision),
                "gqa_factor": gqa_factor(m),
                "max_context_tokens": m.max_context_tokens,
                "kv_bytes_at_max_context": per_token * m.max_context_tokens,
            }
        )
    return rows


def compare_gpus_memory(model, context_tokens, gpus=COMPARE_GPUS) -> dict[str, int]:
    """Largest batch at ``context_tokens`` on each GPU in ``gpus`` (users).

    >>> compare_gpus_memory("llama-3-8b", 4096, gpus=("h100-sxm", "h200"))
    {'h100-sxm': 102, 'h200': 211}
    """
    return {g: int(max_batch(model, get_gpu(g), context_tokens)) for g in gpus}
