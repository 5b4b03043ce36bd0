"""Tensor parallelism in practice: the ideal speedup (bandwidths add) and what the all-reduces take back.

Taught in lesson 24 (notebooks/24_tensor_parallel.ipynb). With G GPUs each holding 1/G of every weight
matrix, each GPU reads only its share per step, so the memory floor is divided by G. Each layer then pays
two all-reduces of the batch's activations (``roofline.physics.parallel``): a fixed start-up latency plus
bytes ÷ link bandwidth. That cost does not shrink with G, so the speedup falls below G, most for small
models whose floor is already short.

    step(G)    = max(bytes ÷ (G × bandwidth), FLOPs ÷ (G × peak)) + 2 × L × all-reduce(B × d × 2 bytes)
    speedup(G) = step(1) ÷ step(G)           (ideal: G)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.checks import checked, out
from roofline.physics.architecture import weight_bytes
from roofline.physics.step import decode_step
from roofline.results import Flag, Number, Result

# GPU counts the lesson's figures sweep (tensor parallelism splits heads, so powers of two).
GPU_COUNTS = np.array([1, 2, 4, 8])


@dataclass(frozen=True)
class TensorParallelScaling(Result):
    """Decode step time on G GPUs with and without communication, and the speedup over one GPU (arrays
    broadcast over G, batch and context). NaN where the G GPUs, or for a speedup the one GPU, cannot hold it.
    """

    step_time_ideal_s: Number  # s, bandwidths and FLOP/s add up, no communication
    communication_time_s: Number  # s, 2 all-reduces per layer
    step_time_s: Number  # s, ideal + communication
    speedup_ideal: Number  # step(1) ÷ ideal step(G): G wherever both fit
    speedup: Number  # step(1) ÷ step(G) with communication
    efficiency: Number  # speedup ÷ G (1 = perfect scaling)
    communication_fraction: Number  # share of the step spent in all-reduces (0–1)
    fits: Flag  # bool: weights + KV fit in G GPUs
    fits_one_gpu: Flag  # bool: the baseline exists


def tensor_parallel_scaling(
    model, gpu, num_gpus, batch=1, context_tokens=0, *, weight_precision="bf16", kv_precision="bf16"
):
    """How a decode step scales over ``num_gpus`` GPUs (G) in tensor parallel, ideal and with all-reduces.

    Parameters
    ----------
    model, gpu : ids (``"llama-3-8b"``, ``"h100-sxm"``) or dataclasses from ``roofline.data``. The link
        bandwidth is the GPU's ``interconnect_bytes_per_s`` (NVLink or PCIe); each all-reduce's start-up
        follows the per-hop model of ``roofline.physics.parallel``.
    num_gpus : GPUs in tensor parallel, ≥ 1. Array-like broadcasts (a sweep over G is one call).
    batch : users decoding together, ≥ 1 (users). context_tokens : KV tokens per user, ≥ 0 (tokens).
    weight_precision, kv_precision : precision ids.

    >>> s = tensor_parallel_scaling("llama-3-8b", "h100-sxm", num_gpus=[1, 2, 4, 8])
    >>> (s.step_time_s / 1e-3).round(2).tolist()      # ms: 64 all-reduces of 8-15 µs each stay put
    [4.48, 2.74, 1.77, 1.52]
    >>> s.efficiency.round(2).tolist()
    [1.0, 0.82, 0.63, 0.37]
    >>> tensor_parallel_scaling("llama-3-70b", "h100-sxm", 2).fits_one_gpu   # 141 GB of BF16 on 80 GB
    False
    """
    n = checked(num_gpus, "num_gpus", minimum=1)
    common = dict(weight_precision=weight_precision, kv_precision=kv_precision, on_overflow="mask")
    ideal = decode_step(model, gpu, batch, context_tokens, num_gpus=n, **common)
    real = decode_step(model, gpu, batch, context_tokens, num_gpus=n, include_communication=True, **common)
    one = decode_step(model, gpu, batch, context_tokens, num_gpus=1, **common)
    ideal_t, real_t, one_t = np.broadcast_arrays(*(np.asarray(x.step_time_s) for x in (ideal, real, one)))
    g, comm_t = np.broadcast_to(n, ideal_t.shape), np.broadcast_to(real.communication_time_s, ideal_t.shape)
    speedup = one_t / real_t
    return TensorParallelScaling(
        step_time_ideal_s=out(ideal_t),
        communication_time_s=out(comm_t),
        step_time_s=out(real_t),
        speedup_ideal=out(one_t / ideal_t),
        speedup=out(speedup),
        efficiency=out(speedup / g),
        communication_fraction=out(comm_t / real_t),
        fits=out(np.broadcast_to(ideal.fits, ideal_t.shape)),
        fits_one_gpu=out(np.broadcast_to(one.fits, ideal_t.shape)),
    )


def weight_bytes_per_gpu(model, weight_precision="bf16", num_gpus=1):
    """Weight bytes each of ``num_gpus`` GPUs holds and reads per step under tensor parallelism (bytes).

    >>> weight_bytes_per_gpu("llama-3-70b", "fp8", [1, 2]) / 1e9   # 72.7 GB (16-bit LM head) in two
    array([72.65..., 36.32...])
    """
    n = checked(num_gpus, "num_gpus", minimum=1)
    return out(weight_bytes(model, weight_precision) / n)
