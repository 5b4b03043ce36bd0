"""Does it fit? Weights plus every user's KV cache against the memory the GPUs leave for them.

Taught in lesson 28 (notebooks/28_kv_cache.ipynb).

    memory needed    = weight bytes + Σ over users of their KV bytes (sliding windows cap a layer at W tokens)
    memory available = G × (memory × CUDA-visible share × engine fraction − activations − non-torch memory)

HBM, GDDR and unified memory are binary-sized: an H100's "80 GB" is 80 GiB (85.9e9 bytes). What a serving
engine leaves for weights and KV is smaller, and each term is an assumption in ``data/assumptions.toml``
(one value each, sourced): the share CUDA reports (79.18 of 80 GiB), the engine's budget (vLLM's
``gpu_memory_utilization``), the peak activations of its profiling pass and the workspaces outside PyTorch.
That is ``memory="engine"``, the default everywhere. ``memory="ideal"`` gives weights and KV all of the
memory: the study card's simplification, an upper bound on users. ``memory="local"`` is a laptop or a
workstation running llama.cpp: a Mac's GPU gets the share of unified memory Metal allows, a discrete GPU
all of its memory but the CUDA context, the display and llama.cpp's buffers.

>>> from roofline.units import GB
>>> memory_needed_bytes("llama-3-8b", batch=32, context_tokens=1000) / GB
20.25...
>>> max_batch("llama-3-8b", "h100-sxm", context_tokens=4096)
102
>>> max_batch("llama-3-8b", "h100-sxm", context_tokens=4096, memory="ideal")
130
"""

from __future__ import annotations

import numpy as np

from roofline.assumptions import assumption
from roofline.checks import checked, one_of, out
from roofline.data import get_gpu
from roofline.errors import DoesNotFitError
from roofline.physics.architecture import sequence_kv_bytes, weight_bytes
from roofline.physics.parallel import kv_replicas
from roofline.units import GB

MEMORY_MODELS = ("engine", "ideal", "local")


def kv_cache_bytes(batch, context_tokens, kv_bytes_per_token_):
    """KV-cache bytes of ``batch`` users holding ``context_tokens`` each (bytes).

    >>> kv_cache_bytes(32, 1000, 128e3) / 1e9   # the study card's 32 users x 1,000 tokens x 128 KB
    4.096
    """
    b = checked(batch, "batch", minimum=0)
    t = checked(context_tokens, "context_tokens", minimum=0)
    k = checked(kv_bytes_per_token_, "kv_bytes_per_token", minimum=0)
    return out(b * t * k)


def memory_needed_bytes(
    model, batch, context_tokens, weight_precision="bf16", kv_precision="bf16", *, num_gpus=1
):
    """Weights plus KV cache for ``batch`` users at ``context_tokens`` each (bytes), on ``num_gpus`` GPUs
    in tensor parallel (a KV cache replicated across them counts once per copy, ``kv_replicas``).
    Runtime memory is on the other side of the comparison (``memory_available_bytes``).

    >>> round(float(memory_needed_bytes("mistral-7b", 8, 32768)) / 1e9, 2)   # 14.48 GB + 8 x 4096 x 128 KiB
    18.78
    """
    kv = np.asarray(checked(batch, "batch", minimum=0)) * np.asarray(
        sequence_kv_bytes(model, context_tokens, kv_precision)
    )
    return out(weight_bytes(model, weight_precision) + kv * np.asarray(kv_replicas(model, num_gpus)))


def memory_capacity_bytes(gpu, num_gpus=1):
    """Memory of ``num_gpus`` GPUs together, as built (bytes): binary-sized, 80 GiB for an "80 GB" H100.

    >>> memory_capacity_bytes("h100-sxm", 2) / 2**30
    160.0
    """
    n = checked(num_gpus, "num_gpus", minimum=1)
    return out(get_gpu(gpu).memory_bytes * n)


def runtime_reserved_bytes(gpu, num_gpus=1, memory="engine"):
    """Memory of ``num_gpus`` GPUs that weights and KV cannot use (bytes): with ``memory="engine"`` the
    part CUDA does not expose, the engine's headroom (1 − fraction), its peak activations and its
    non-torch workspaces; 0 with ``memory="ideal"``.

    >>> round(float(runtime_reserved_bytes("h100-sxm")) / 2**30, 2)   # 80 - 0.9 x 79.18 + 4.8 + 0.13 GiB
    13.67
    """
    total = np.asarray(memory_capacity_bytes(gpu, num_gpus))
    return out(total - np.asarray(memory_available_bytes(gpu, num_gpus, memory)))


def memory_available_bytes(gpu, num_gpus=1, memory="engine"):
    """Memory of ``num_gpus`` GPUs left for weights and KV cache (bytes), per the memory model.

    ``"engine"`` (default): G × (memory × ``cuda_visible_memory_fraction`` × ``engine_memory_fraction`` −
    ``activation_workspace_bytes`` − ``non_torch_memory_bytes``), vLLM's accounting with its defaults.
    ``"ideal"``: all of it. ``"local"`` (llama.cpp on your own machine): an Apple GPU's share of unified
    memory, ``apple_gpu_working_set_fraction``; any other G × (memory − ``local_reserved_bytes``).

    >>> round(float(memory_available_bytes("h100-sxm")) / 2**30, 2)   # 0.9 x 79.18 - 4.8 - 0.13 GiB
    66.33
    >>> memory_available_bytes("h100-sxm", memory="ideal") / 2**30
    80.0
    >>> local = [memory_available_bytes(g, memory="local") / 2**30 for g in ("rtx-4090", "m4-max")]
    >>> [float(x) for x in local]
    [22.5, 96.0]
    """
    checked(num_gpus, "num_gpus", minimum=1)
    one_of(memory, "memory", MEMORY_MODELS)
    total = np.asarray(memory_capacity_bytes(gpu, num_gpus))
    if memory == "ideal":
        return out(total)
    if memory == "local":
        if get_gpu(gpu).vendor == "apple":
            return out(total * assumption("apple_gpu_working_set_fraction"))
        n = np.asarray(num_gpus, dtype=float)
        return out(np.maximum(total - n * assumption("local_reserved_bytes"), 0.0))
    n = np.asarray(num_gpus, dtype=float)
    budget = total * assumption("cuda_visible_memory_fraction") * assumption("engine_memory_fraction")
    reserved = n * (assumption("activation_workspace_bytes") + assumption("non_torch_memory_bytes"))
    return out(np.maximum(budget - reserved, 0.0))


def fits(
    model,
    gpu,
    batch,
    context_tokens,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
    memory="engine",
):
    """True where weights + KV fit in the memory the GPUs leave for them. Broadcasts.

    >>> fits("llama-3-70b", "h100-sxm", 1, 1000)            # 141 GB of BF16 weights, 80 GiB of HBM
    False
    >>> fits("llama-3-70b", "h100-sxm", 1, 1000, num_gpus=2)
    True
    """
    need = np.asarray(
        memory_needed_bytes(model, batch, context_tokens, weight_precision, kv_precision, num_gpus=num_gpus)
    )
    have = np.asarray(memory_available_bytes(gpu, num_gpus, memory))
    return out(need <= have)


def users_that_fit(free_bytes, context_tokens, kv_bytes_per_token_):
    """How many users' KV caches of ``context_tokens`` each fit in ``free_bytes`` (users, rounded down).

    >>> users_that_fit(63.9e9, 4096, 128 * 1024)   # the card's H100: 80 GB minus 16 GB of weights
    119
    """
    free = checked(free_bytes, "free_bytes", minimum=-np.inf)
    t = checked(context_tokens, "context_tokens", above=0)
    k = checked(kv_bytes_per_token_, "kv_bytes_per_token", above=0)
    return out(np.floor(np.maximum(free, 0) / (t * k)).astype(int))


def max_batch(
    model,
    gpu,
    context_tokens,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
    memory="engine",
):
    """Largest number of users at ``context_tokens`` each whose KV fits beside the weights (users).

    0 where the weights alone do not fit. Broadcasts over context and GPU count. A sliding window caps
    each user's KV (Mistral 7B: 4096 tokens per layer).

    >>> max_batch("llama-3-8b", "h100-sxm", context_tokens=[1000, 8192]).tolist()
    [420, 51]
    >>> int(max_batch("llama-3-70b", "h100-sxm", 4096, weight_precision="fp8"))  # vLLM's defaults: no room
    0
    """
    free = np.asarray(memory_available_bytes(gpu, num_gpus, memory)) - weight_bytes(model, weight_precision)
    ctx = checked(context_tokens, "context_tokens", above=0)
    copies = np.asarray(kv_replicas(model, num_gpus))  # a replicated cache counts once per copy
    per_user = np.asarray(sequence_kv_bytes(model, ctx, kv_precision)) * copies
    return out(np.floor(np.maximum(free, 0) / per_user).astype(int))


def check_memory(needed_bytes, available_bytes, weight_bytes_) -> None:
    """Raise ``DoesNotFitError`` with the numbers where ``needed_bytes`` exceeds ``available_bytes``
    (the worst case of an array); the one place the message is written.

    >>> check_memory(10e9, 20e9, 8e9) is None
    True
    """
    need, have = np.broadcast_arrays(np.asarray(needed_bytes, float), np.asarray(available_bytes, float))
    ok = need <= have
    if ok.all():
        return None
    worst = np.unravel_index(np.argmax(np.where(ok, -np.inf, need - have)), ok.shape)
    w = float(weight_bytes_)
    raise DoesNotFitError(
        f"Does not fit: needs {need[worst] / GB:.1f} GB (weights {w / GB:.1f} GB + KV "
        f"{(need[worst] - w) / GB:.1f} GB) but {have[worst] / GB:.1f} GB is available for them. "
        "Fewer users, a shorter context, a smaller precision or more GPUs would help."
    )


def check_fits(
    model,
    gpu,
    batch,
    context_tokens,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
    memory="engine",
):
    """Raise ``DoesNotFitError`` with the numbers if any configuration does not fit; else return None.

    >>> check_fits("llama-3-70b", "h100-sxm", 1, 1000)
    Traceback (most recent call last):
    ...
    roofline.errors.DoesNotFitError: Does not fit: needs 141.4 GB (weights 141.1 GB + KV 0.3 GB) but 71.2...
    """
    check_memory(
        memory_needed_bytes(model, batch, context_tokens, weight_precision, kv_precision, num_gpus=num_gpus),
        memory_available_bytes(gpu, num_gpus, memory),
        weight_bytes(model, weight_precision),
    )
