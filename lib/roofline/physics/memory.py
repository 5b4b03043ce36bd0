"""Does it fit? Weights plus every user's KV cache against the GPUs' memory.

Taught in lesson 28 (notebooks/28_kv_cache.ipynb).

    memory needed = weight bytes + B × T × KV bytes per token  ≤  G × memory per GPU

Real servers also keep activations, the CUDA context and allocator slack; this model counts only
weights and KV, so its limits are upper bounds.

>>> from roofline.units import GB
>>> memory_needed_bytes("llama-3-8b", batch=32, context_tokens=1000) / GB
20.25...
>>> max_batch("llama-3-8b", "h100-sxm", context_tokens=4096)
119
"""

from __future__ import annotations

import numpy as np

from roofline._arrays import checked, out
from roofline.data import get_gpu
from roofline.errors import DoesNotFitError
from roofline.physics.architecture import kv_bytes_per_token, weight_bytes
from roofline.units import GB


def kv_cache_bytes(batch, context_tokens, kv_bytes_per_token_):
    """KV-cache bytes of ``batch`` users holding ``context_tokens`` each (bytes).

    >>> kv_cache_bytes(32, 1000, 128e3) / 1e9   # the study card's 32 users x 1,000 tokens x 128 KB
    4.096
    """
    b = checked(batch, "batch", minimum=0)
    t = checked(context_tokens, "context_tokens", minimum=0)
    k = checked(kv_bytes_per_token_, "kv_bytes_per_token", minimum=0)
    return out(b * t * k)


def memory_needed_bytes(model, batch, context_tokens, weight_precision="bf16", kv_precision="bf16"):
    """Weights plus KV cache for ``batch`` users at ``context_tokens`` each (bytes)."""
    kv = kv_cache_bytes(batch, context_tokens, kv_bytes_per_token(model, kv_precision))
    return out(weight_bytes(model, weight_precision) + np.asarray(kv))


def memory_capacity_bytes(gpu, num_gpus=1):
    """Memory of ``num_gpus`` GPUs together (bytes).

    >>> memory_capacity_bytes("h100-sxm", 2) / 1e9
    160.0
    """
    n = checked(num_gpus, "num_gpus", minimum=1)
    return out(get_gpu(gpu).memory_bytes * n)


def fits(model, gpu, batch, context_tokens, *, num_gpus=1, weight_precision="bf16", kv_precision="bf16"):
    """True where weights + KV fit in the GPUs' memory. Broadcasts.

    >>> fits("llama-3-70b", "h100-sxm", 1, 1000)            # 141 GB of BF16 weights, 80 GB of HBM
    False
    >>> fits("llama-3-70b", "h100-sxm", 1, 1000, num_gpus=2)
    True
    """
    need = np.asarray(memory_needed_bytes(model, batch, context_tokens, weight_precision, kv_precision))
    have = np.asarray(memory_capacity_bytes(gpu, num_gpus))
    return out(need <= have)


def users_that_fit(free_bytes, context_tokens, kv_bytes_per_token_):
    """How many users' KV caches of ``context_tokens`` each fit in ``free_bytes`` (users, rounded down).

    >>> users_that_fit(63.9e9, 4096, 128 * 1024)   # an H100 after Llama 3 8B's BF16 weights
    119
    """
    free = checked(free_bytes, "free_bytes", minimum=-np.inf)
    t = checked(context_tokens, "context_tokens", above=0)
    k = checked(kv_bytes_per_token_, "kv_bytes_per_token", above=0)
    return out(np.floor(np.maximum(free, 0) / (t * k)).astype(int))


def max_batch(model, gpu, context_tokens, *, num_gpus=1, weight_precision="bf16", kv_precision="bf16"):
    """Largest number of users at ``context_tokens`` each whose KV fits beside the weights (users).

    0 where the weights alone do not fit. Broadcasts over context and GPU count.

    >>> max_batch("llama-3-8b", "h100-sxm", context_tokens=[1000, 8192]).tolist()
    [487, 59]
    """
    free = np.asarray(memory_capacity_bytes(gpu, num_gpus)) - weight_bytes(model, weight_precision)
    return users_that_fit(free, context_tokens, kv_bytes_per_token(model, kv_precision))


def check_fits(
    model, gpu, batch, context_tokens, *, num_gpus=1, weight_precision="bf16", kv_precision="bf16"
):
    """Raise ``DoesNotFitError`` with the numbers if any configuration does not fit; else return None.

    >>> check_fits("llama-3-70b", "h100-sxm", 1, 1000)
    Traceback (most recent call last):
    ...
    roofline.errors.DoesNotFitError: Does not fit: needs 141.5 GB (weights 141.1 GB + KV 0.3 GB) ...
    """
    ok = np.asarray(
        fits(
            model,
            gpu,
            batch,
            context_tokens,
            num_gpus=num_gpus,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
        )
    )
    if ok.all():
        return
    need = np.broadcast_to(
        memory_needed_bytes(model, batch, context_tokens, weight_precision, kv_precision), ok.shape
    )
    have = np.broadcast_to(memory_capacity_bytes(gpu, num_gpus), ok.shape)
    worst = np.unravel_index(np.argmax(np.where(ok, -np.inf, need - have)), ok.shape)
    w = weight_bytes(model, weight_precision)
    raise DoesNotFitError(
        f"Does not fit: needs {need[worst] / GB:.1f} GB (weights {w / GB:.1f} GB + KV "
        f"{(need[worst] - w) / GB:.1f} GB) but {have[worst] / GB:.0f} GB is available. "
        "Fewer users, a shorter context, a smaller precision or more GPUs would help."
    )
