"""One decode step: every user in the batch gets one new token.

Taught in lesson 02 (the floor at batch 1) and lesson 16 (the step-time model for B users).

    bytes  = weight bytes (read once, shared by the batch) + B × T × KV bytes per token (never shared)
    FLOPs  = B × (2 × N_active + attention over T)
    step   = max(FLOPs ÷ (G × peak), bytes ÷ (G × bandwidth)) [+ communication] [+ launch overhead]

Each user gets one token per step (1 ÷ step tokens/s); the GPU makes B tokens per step (B ÷ step).

>>> s = decode_step("llama-3-8b", "h100-sxm", batch=32, context_tokens=1000)
>>> round(s.step_time_s * 1e3, 2), round(s.tokens_per_s_per_user), round(s.tokens_per_s_total)
(6.05, 165, 5293)
>>> s.binding
'memory'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

from roofline._arrays import checked, out
from roofline.data import get_gpu, get_model
from roofline.physics.architecture import (
    active_parameter_count,
    attention_flops_per_token,
    kv_bytes_per_token,
    weight_bytes_read,
)
from roofline.physics.memory import check_fits, memory_capacity_bytes, memory_needed_bytes
from roofline.physics.parallel import DEFAULT_ALLREDUCE_LATENCY_S, tensor_parallel_comm_time_s
from roofline.physics.precision import get_precision, peak_flops_per_s


@dataclass(frozen=True)
class DecodeStep:
    """Everything about one decode step. Array fields broadcast over batch, context and GPU count.

    Where a configuration does not fit in memory (``fits`` False) and the step was asked for with
    ``on_overflow="mask"``, its times and rates are NaN: there is no time for a server that cannot start.
    """

    model_id: str
    gpu_id: str
    weight_precision: str
    kv_precision: str
    num_gpus: object  # GPUs in tensor parallel, G
    batch: object  # users decoding together, B
    context_tokens: object  # tokens of KV each user holds, T
    weight_bytes_read: object  # bytes, all GPUs together
    kv_bytes_read: object  # bytes, all GPUs together
    bytes_read: object  # bytes
    flops: object  # FLOP
    memory_time_s: object
    compute_time_s: object
    communication_time_s: object
    launch_overhead_s: object
    step_time_s: object
    binding: object  # "memory", "compute", or "does not fit"
    memory_needed_bytes: object
    memory_capacity_bytes: object
    fits: object  # bool
    tokens_per_s_per_user: object
    tokens_per_s_total: object

    @property
    def arithmetic_intensity_flop_per_byte(self):
        """FLOPs per byte read in this step (FLOP/byte); about B for BF16 weights and short contexts."""
        return out(np.asarray(self.flops) / np.asarray(self.bytes_read))

    def to_dict(self) -> dict:
        """Plain-Python fields (lists for arrays), ready for ``json.dumps``."""
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in asdict(self).items()}


def decode_step(
    model,
    gpu,
    batch=1,
    context_tokens=0,
    *,
    num_gpus=1,
    weight_precision: str = "bf16",
    kv_precision: str = "bf16",
    launch_overhead_s=0.0,
    include_communication: bool = False,
    allreduce_latency_s: float = DEFAULT_ALLREDUCE_LATENCY_S,
    on_overflow: Literal["raise", "mask"] = "raise",
) -> DecodeStep:
    """Model one decode step of ``batch`` users (B) at ``context_tokens`` (T) each on ``num_gpus`` (G).

    Parameters
    ----------
    model, gpu : id (``"llama-3-8b"``, ``"h100-sxm"``) or the dataclass from ``roofline.data``.
    batch : users decoding together, ≥ 1 (users). Array-like broadcasts.
    context_tokens : tokens of KV cache each user holds, ≥ 0 (tokens). Array-like broadcasts.
    num_gpus : GPUs in tensor parallel, ≥ 1. Bandwidth, FLOP/s and memory add up (the ideal).
    weight_precision, kv_precision : ids from ``roofline.physics.precision.PRECISIONS``, chosen separately.
    launch_overhead_s : CPU time per step spent launching kernels, added to the step (s); see lesson 03.
    include_communication : add the tensor-parallel all-reduces (lesson 24); off gives the ideal.
    on_overflow : ``"raise"`` raises ``DoesNotFitError`` if weights + KV exceed memory; ``"mask"``
        returns NaN times there and ``fits`` False (for sweeps and plots).

    >>> s = decode_step("llama-3-8b", "h100-sxm")          # batch 1: the decode floor
    >>> round(s.step_time_s * 1e3, 2), round(s.tokens_per_s_per_user)
    (4.79, 209)
    >>> s = decode_step("llama-3-8b", "h100-sxm", batch=[1, 1024], context_tokens=4096, on_overflow="mask")
    >>> s.fits.tolist(), np.isnan(s.step_time_s).tolist()
    ([True, False], [False, True])
    """
    m, g = get_model(model), get_gpu(gpu)
    get_precision(kv_precision)
    b = checked(batch, "batch", minimum=1)
    t = checked(context_tokens, "context_tokens", minimum=0)
    n = checked(num_gpus, "num_gpus", minimum=1)
    overhead = checked(launch_overhead_s, "launch_overhead_s", minimum=0)
    if on_overflow not in ("raise", "mask"):
        raise ValueError(f"on_overflow must be 'raise' or 'mask', got {on_overflow!r}")
    peak = peak_flops_per_s(g, weight_precision)
    if on_overflow == "raise":
        check_fits(m, g, b, t, num_gpus=n, weight_precision=weight_precision, kv_precision=kv_precision)

    w_bytes = np.asarray(weight_bytes_read(m, weight_precision, b))
    kv_bytes = b * t * kv_bytes_per_token(m, kv_precision)
    total_bytes = w_bytes + kv_bytes
    flops = b * (2.0 * active_parameter_count(m) + np.asarray(attention_flops_per_token(m, t)))
    mem_t = total_bytes / (n * g.memory_bandwidth_bytes_per_s)
    comp_t = flops / (n * peak)
    comm_t = (
        np.asarray(tensor_parallel_comm_time_s(m, b, n, g.interconnect_bytes_per_s, allreduce_latency_s))
        if include_communication
        else np.zeros(())
    )
    # Memory need and capacity on the unbroadcast inputs: cheaper than on the full grid.
    need = np.asarray(memory_needed_bytes(m, b, t, weight_precision, kv_precision))
    have = np.asarray(memory_capacity_bytes(g, n))
    ok = need <= have
    b, t, n, w_bytes, kv_bytes, total_bytes, flops, mem_t, comp_t, comm_t, overhead, ok = np.broadcast_arrays(
        b, t, n, w_bytes, kv_bytes, total_bytes, flops, mem_t, comp_t, comm_t, overhead, ok
    )
    binding = np.array(["memory", "compute", "does not fit"]).take(
        np.where(ok, (comp_t > mem_t).view(np.int8), 2)
    )
    step = np.maximum(mem_t, comp_t) + comm_t + overhead
    step = np.where(ok, step, np.nan)
    nan_unless_fits = lambda x: np.where(ok, x, np.nan)  # noqa: E731
    return DecodeStep(
        model_id=m.id,
        gpu_id=g.id,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        num_gpus=out(n),
        batch=out(b),
        context_tokens=out(t),
        weight_bytes_read=out(w_bytes),
        kv_bytes_read=out(kv_bytes),
        bytes_read=out(total_bytes),
        flops=out(flops),
        memory_time_s=out(nan_unless_fits(mem_t)),
        compute_time_s=out(nan_unless_fits(comp_t)),
        communication_time_s=out(nan_unless_fits(comm_t)),
        launch_overhead_s=out(overhead),
        step_time_s=out(step),
        binding=str(binding) if binding.ndim == 0 else binding,
        memory_needed_bytes=out(np.broadcast_to(need, ok.shape)),
        memory_capacity_bytes=out(np.broadcast_to(have, ok.shape)),
        fits=out(ok),
        tokens_per_s_per_user=out(1.0 / step),
        tokens_per_s_total=out(b / step),
    )


def decode_floor_s(weight_bytes_, bandwidth_bytes_per_s):
    """Fastest possible batch-1 decode step: every weight byte read once (s). Ceiling = 1 ÷ floor.

    >>> round(decode_floor_s(16e9, 3.35e12) * 1e3, 1)    # 8B model, BF16, one H100
    4.8
    >>> round(decode_floor_s(70e9, 2 * 3.35e12) * 1e3, 1) # 70B model, FP8, two H100s in tensor parallel
    10.4
    """
    w = checked(weight_bytes_, "weight_bytes", minimum=0)
    bw = checked(bandwidth_bytes_per_s, "bandwidth_bytes_per_s", above=0)
    return out(w / bw)


def batched_step_time_s(weight_bytes_, batch, context_tokens, kv_bytes_per_token_, bandwidth_bytes_per_s):
    """The memory-bound step-time formula in plain numbers (s): (weights + B × T × KV) ÷ bandwidth.

    >>> round(batched_step_time_s(16e9, 32, 1000, 128e3, 3.35e12) * 1e3, 1)   # the card's Q3
    6.0
    """
    w = checked(weight_bytes_, "weight_bytes", minimum=0)
    b = checked(batch, "batch", minimum=1)
    t = checked(context_tokens, "context_tokens", minimum=0)
    k = checked(kv_bytes_per_token_, "kv_bytes_per_token", minimum=0)
    bw = checked(bandwidth_bytes_per_s, "bandwidth_bytes_per_s", above=0)
    return out((w + b * t * k) / bw)
