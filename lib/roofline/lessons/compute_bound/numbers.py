"""When decode turns compute-bound, and the saturation wall that follows.

Taught in lesson 61 (notebooks/61_compute_bound.ipynb).

A decode step of B users reads the weights once (shared) and each user's KV (not shared), and does
B × (2 × N_active + attention over T) FLOPs. Its intensity is therefore about B FLOP/byte for BF16
weights and short contexts, and it turns compute-bound where the intensity passes the ridge:

    B × (2N + a·T) ÷ (W + B × T × k) > ridge  ⇔  B × (2N + a·T − ridge × T × k) > ridge × W

(W weight bytes, k KV bytes per token, a = 4·L·H·d_h attention FLOPs per context token). When
2N + a·T ≤ ridge × T × k, every extra user brings more unshared KV bytes than FLOPs can cover, and no
batch ever flips. Past the flip, total throughput stops growing (the compute ceiling, G × peak ÷ FLOPs per
token) while each user's step keeps getting longer: the saturation wall.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline import sim
from roofline.checks import checked, out
from roofline.data import get_gpu, get_model
from roofline.errors import InvalidConfigurationError
from roofline.physics.architecture import attention_flops_per_token, kv_bytes_per_token
from roofline.physics.core import ridge_point_flop_per_byte
from roofline.physics.precision import peak_flops_per_s
from roofline.physics.step import decode_step
from roofline.results import Label, Number, Result

# Batches the throughput–latency curve labels and sweeps; contexts the flip-batch curve sweeps (tokens).
LABELLED_BATCHES = (1, 8, 32, 128, 512, 2048, 8192)
SATURATION_BATCHES = np.union1d(np.round(np.geomspace(1, 8192, 200)).astype(int), LABELLED_BATCHES)
CONTEXT_SWEEP = np.unique(np.round(np.geomspace(1, 65536, 200)).astype(int))


def context_limit_tokens(model, gpu, *, weight_precision="bf16", kv_precision="bf16") -> float:
    """Context per user (tokens) at and beyond which no batch makes decode compute-bound:
    T* = (F_mm − ridge × r) ÷ (ridge × k − a), with F_mm ≈ 2·N_active the step engine's matmul FLOPs per
    token and r the weight bytes one more user adds (its embedding row); ``inf`` if the attention FLOPs
    alone keep up with the KV bytes.

    >>> round(context_limit_tokens("llama-3-8b", "h100-sxm"))
    393
    """
    m, g = get_model(model), get_gpu(gpu)
    ridge = ridge_point_flop_per_byte(peak_flops_per_s(g, weight_precision), g.memory_bandwidth_bytes_per_s)
    per_token_bytes = ridge * kv_bytes_per_token(m, kv_precision)
    attention_per_token = attention_flops_per_token(m, 1)
    if per_token_bytes <= attention_per_token:
        return float("inf")
    # the matmul FLOPs of one decode token, from the step engine (2·N_active less what is not a matmul), and
    # the weight bytes one more user adds (its embedding row): each user must bring more FLOPs than
    # ridge × its own bytes
    pair = decode_step(m, g, [1, 2], 0, weight_precision=weight_precision, kv_precision=kv_precision)
    matmul = float(pair.flops[0])
    own_bytes = float(pair.weight_bytes_read[1] - pair.weight_bytes_read[0])
    return (matmul - ridge * own_bytes) / (per_token_bytes - attention_per_token)


def throughput_ceiling_tokens_per_s(model, gpu, context_tokens=0, *, num_gpus=1, weight_precision="bf16"):
    """The compute ceiling on total decode throughput: G × peak FLOP/s ÷ FLOPs per token (tokens/s).
    No batch size gets past it. Broadcasts over context and GPU count.

    >>> round(throughput_ceiling_tokens_per_s("llama-3-8b", "h100-sxm"))   # 989e12 / 15.01e9 (no lookups)
    65890
    """
    g = get_gpu(gpu)
    n = checked(num_gpus, "num_gpus", minimum=1)
    # FLOPs per decode token from the step engine (matmuls + attention over T), so the ceiling and the step
    # agree on what a token costs (e.g. the embedding lookup is not a matmul)
    per_token = np.asarray(
        decode_step(
            model, gpu, 1, context_tokens, weight_precision=weight_precision, on_overflow="ignore"
        ).flops
    )
    return out(n * peak_flops_per_s(g, weight_precision) / per_token)


@dataclass(frozen=True)
class PerKernel(Result):
    """A decode step split into its two kinds of kernel, each on its own roofline (arrays broadcast).

    The weight matmuls (QKV/O projections, MLP, LM head) read the weights once for the whole batch; the
    attention over the KV cache reads each user's own KV. They run one after the other, so the step takes
    the SUM of their roofline times, not the max of the totals (the whole-step roofline is a lower bound).
    """

    matmul_flops: Number
    matmul_bytes: Number  # weight bytes read
    matmul_time_s: Number  # max(FLOPs ÷ peak, bytes ÷ bandwidth)
    matmul_binding: Label  # "memory" or "compute"
    attention_time_s: Number  # KV bytes read, attention FLOPs: their roofline time
    attention_binding: Label
    attention_intensity_flop_per_byte: Number  # a ÷ k: fixed by the architecture, not by the batch
    per_kernel_step_s: Number  # matmuls + attention
    whole_step_s: Number  # one roofline for the whole step (``decode_step``)
    tokens_per_s: Number  # B ÷ per-kernel step


def per_kernel_decode(model, gpu, batch, context_tokens=0) -> PerKernel:
    """The per-kernel view of a decode step of ``batch`` users at ``context_tokens`` each, on one GPU in
    BF16 (weights and KV).

    Matmuls: the step's FLOPs without attention, over the weight bytes read: intensity ≈ 2·B ÷ bytes per
    weight, so they turn compute-bound near B ≈ ridge (296 on an H100 in BF16) WHATEVER the context.
    Attention: a·T FLOPs per user over T·k KV bytes per user: intensity a ÷ k (4 FLOP/byte for Llama 3 8B's
    grouped-query attention), far below any ridge: memory-bound at every batch. Times in s. Broadcasts.

    >>> k = per_kernel_decode("llama-3-8b", "h100-sxm", [64, 512], 4096)
    >>> k.matmul_binding.tolist(), k.attention_binding.tolist(), float(k.attention_intensity_flop_per_byte[0])
    (['memory', 'compute'], ['memory', 'memory'], 4.0)
    """
    g = get_gpu(gpu)
    whole = decode_step(model, g, batch, context_tokens, on_overflow="ignore")
    bw, peak = g.memory_bandwidth_bytes_per_s, peak_flops_per_s(g, "bf16")
    attn_f = np.asarray(whole.attention_flops, dtype=float)
    mm_f = np.asarray(whole.flops, dtype=float) - attn_f
    mm_b = np.asarray(whole.weight_bytes_read, dtype=float)
    attn_b = np.asarray(whole.kv_bytes_read, dtype=float) + np.asarray(whole.kv_bytes_written, dtype=float)
    mm_t = np.maximum(mm_f / peak, mm_b / bw)
    at_t = np.maximum(attn_f / peak, attn_b / bw)
    label = lambda f, b: np.where(f / peak > b / bw, "compute", "memory")  # noqa: E731
    with np.errstate(invalid="ignore", divide="ignore"):
        attn_i = np.where(attn_b > 0, attn_f / np.where(attn_b > 0, attn_b, 1.0), np.nan)
    step = mm_t + at_t
    b = np.asarray(whole.batch, dtype=float)
    return PerKernel(
        matmul_flops=out(mm_f),
        matmul_bytes=out(mm_b),
        matmul_time_s=out(mm_t),
        matmul_binding=label(mm_f, mm_b),
        attention_time_s=out(at_t),
        attention_binding=label(attn_f, attn_b),
        attention_intensity_flop_per_byte=np.atleast_1d(attn_i),
        per_kernel_step_s=out(step),
        whole_step_s=out(np.maximum(np.asarray(whole.memory_time_s), np.asarray(whole.compute_time_s))),
        tokens_per_s=out(b / step),
    )


def matmul_flip_batch(model, gpu) -> int:
    """Smallest batch (users) whose weight matmuls are compute-bound (BF16): context plays no part (the
    matmuls do not touch the KV cache). For a dense model this is ``rl.compute_bound_batch`` at T = 0.

    >>> matmul_flip_batch("llama-3-8b", "h100-sxm")
    296
    """
    limit = 1 << 16
    batches = np.arange(1, limit + 1)
    k = per_kernel_decode(model, gpu, batches, 0)
    flipped = np.flatnonzero(np.asarray(k.matmul_binding) == "compute")
    if flipped.size == 0:
        raise InvalidConfigurationError(f"the matmuls stay memory-bound up to a batch of {limit:,}")
    return int(batches[flipped[0]])


def per_kernel_ceiling_tokens_per_s(model, gpu, context_tokens=0):
    """The throughput ceiling of the per-kernel view on one GPU in BF16 (tokens/s): as B grows each user
    costs its matmul FLOPs (compute-bound) plus its attention, which stays memory-bound (T·k bytes):

        ceiling = 1 ÷ (F_mm ÷ peak + max(a·T ÷ peak, T·k ÷ bandwidth))

    with F_mm the matmul FLOPs per token of the step engine (``decode_step``). At T = 0 it equals
    ``throughput_ceiling_tokens_per_s``; with context it falls, because the attention time is added, not
    hidden under the matmuls. Broadcasts over context.

    >>> c = per_kernel_ceiling_tokens_per_s("llama-3-8b", "h100-sxm", [0, 4096])
    >>> bool(c[1] < c[0] / 10)      # at 4,096 tokens the KV read, not the math, caps throughput
    True
    """
    g = get_gpu(gpu)
    one = decode_step(
        model, gpu, 1, checked(context_tokens, "context_tokens", minimum=0), on_overflow="ignore"
    )
    peak, bw = peak_flops_per_s(g, "bf16"), g.memory_bandwidth_bytes_per_s
    attn = np.asarray(one.attention_flops)
    mm = np.asarray(one.flops) - attn
    per_user_attn = np.maximum(attn / peak, np.asarray(one.kv_bytes_read) / bw)
    return out(1.0 / (mm / peak + per_user_attn))


SATURATION_CONCURRENCY = (1, 16, 64, 128, 256, 512, 1024, 2048)


@dataclass(frozen=True)
class SimulatedSaturation(Result):
    """A concurrency sweep through the serving simulator: throughput and latency per number of clients."""

    concurrency: Number
    throughput_output_tokens_per_s: Number
    tpot_p50_s: Number
    tpot_p99_s: Number


def simulated_saturation(
    model, gpu, concurrency=SATURATION_CONCURRENCY, *, requests_per_client=2
) -> SimulatedSaturation:
    """The saturation wall as a load test sees it: ``roofline.sim`` with a closed loop of C clients (each
    sends its next 128-token prompt as soon as its last 128-token answer finished), for each C in
    ``concurrency``. Throughput climbs while each weight read is shared by more users, then flattens at the
    ceiling (compute, or the KV capacity when the batch stops growing) while TPOT climbs.
    ``requests_per_client`` × C requests per point (at least 200). The batch cap is 4,096 so the wall is the
    GPU's, not the scheduler's (``sim``'s default of 256 would flatten the curve there). Times in s,
    throughput in output tokens/s. Each output token also carries a prompt token, so the compute ceiling is
    G·peak ÷ (2·N·2).

    >>> s = simulated_saturation("llama-3-8b", "h100-sxm", (1, 512), requests_per_client=1)
    >>> bool(s.throughput_output_tokens_per_s[1] > 50 * s.throughput_output_tokens_per_s[0])
    True
    """
    c = np.asarray(concurrency, dtype=int)
    load = sim.SimConfig(
        model,
        gpu,
        concurrency=1,
        input_tokens=128,
        output_tokens=128,
        seed=0,
        record_timeline=False,
        max_batch=4096,
    )
    runs = [
        sim.simulate(load.with_(concurrency=int(k), requests=int(max(200, requests_per_client * k))))
        for k in c
    ]
    return SimulatedSaturation(
        concurrency=c,
        throughput_output_tokens_per_s=np.array([r.throughput_output_tokens_per_s for r in runs]),
        tpot_p50_s=np.array([r.tpot_s_percentiles["p50"] for r in runs]),
        tpot_p99_s=np.array([r.tpot_s_percentiles["p99"] for r in runs]),
    )
