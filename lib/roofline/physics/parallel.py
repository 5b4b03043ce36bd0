"""Tensor parallelism: N GPUs split every weight matrix, so their bandwidths and FLOP/s add up, and each
layer pays two all-reduces of the activations over the GPU-to-GPU link.

Taught in lesson 24 (notebooks/24_tensor_parallel.ipynb).

The ideal (``decode_step(..., include_communication=False)``) just adds the GPUs' bandwidths: the decode
floor ÷ N. The all-reduce model here is the textbook ring: each GPU sends and receives 2(N−1)/N of the
message, over one direction of its link, after a fixed start-up latency.

>>> allreduce_time_s(message_bytes=32 * 8192 * 2, num_gpus=2, link_bytes_per_s=900e9) * 1e6
11.16...
"""

from __future__ import annotations

import numpy as np

from roofline._arrays import checked, out
from roofline.assumptions import assumption
from roofline.physics.architecture import get_model

# Start-up cost of one small all-reduce (s). An assumption, not a sourced constant: NCCL's small-message
# all-reduce inside one NVLink node usually takes on the order of 5-20 µs; we take 10 µs.
DEFAULT_ALLREDUCE_LATENCY_S = assumption("allreduce_latency_s")

# Bytes per activation value sent in the all-reduce (BF16 activations).
ACTIVATION_BYTES = assumption("activation_bytes")


def allreduce_time_s(message_bytes, num_gpus, link_bytes_per_s, latency_s=DEFAULT_ALLREDUCE_LATENCY_S):
    """Time of one ring all-reduce of ``message_bytes`` (bytes) over ``num_gpus`` GPUs (s).

    ``link_bytes_per_s`` is the per-GPU link bandwidth as vendors quote it (both directions together,
    bytes/s); a ring uses one direction, so half of it. One GPU needs no all-reduce: 0 s.

    >>> allreduce_time_s(1e6, 1, 900e9)
    0.0
    """
    msg = checked(message_bytes, "message_bytes", minimum=0)
    n = checked(num_gpus, "num_gpus", minimum=1)
    bw = checked(link_bytes_per_s, "link_bytes_per_s", above=0)
    lat = checked(latency_s, "latency_s", minimum=0)
    t = lat + 2 * (n - 1) / n * msg / (bw / 2)
    return out(np.where(n > 1, t, 0.0))


def allreduce_message_bytes(model, batch):
    """Bytes in one tensor-parallel all-reduce of a decode step: B tokens × d activations × 2 bytes.

    >>> allreduce_message_bytes("llama-3-70b", 1)   # 8192 activations of 2 bytes
    16384.0
    """
    b = checked(batch, "batch", minimum=1)
    return out(b * get_model(model).hidden_size * ACTIVATION_BYTES)


def tensor_parallel_comm_time_s(
    model, batch, num_gpus, link_bytes_per_s, latency_s=DEFAULT_ALLREDUCE_LATENCY_S
):
    """Communication time of one decode step under tensor parallelism (s): 2 all-reduces per layer
    (after attention and after the MLP), each of ``batch`` × d activations.

    >>> t = tensor_parallel_comm_time_s("llama-3-70b", batch=1, num_gpus=2, link_bytes_per_s=900e9)
    >>> round(t * 1e3, 2)   # 160 all-reduces, latency-dominated at batch 1
    1.6
    """
    msg = allreduce_message_bytes(model, batch)
    t = np.asarray(allreduce_time_s(msg, num_gpus, link_bytes_per_s, latency_s))
    return out(2 * get_model(model).layers * t)
