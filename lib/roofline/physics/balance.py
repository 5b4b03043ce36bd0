"""The balance point: how many tokens one step must carry before its math outlasts its memory traffic.

Taught in lesson 04 (the ridge), 15 (prefill turns compute-bound) and 61 (decode's flip batch).

A step reads the weights once, however many tokens share it, and does 2·N_active FLOPs per token. It turns
compute-bound once tokens × 2·N_active ÷ peak > weight bytes read ÷ bandwidth, so the textbook rule is

    tokens* = ridge × weight bytes ÷ (2 × N_active)        (= ridge × bytes per weight ÷ 2 for a dense model)

The exact answers below ask the step engine itself (KV traffic, attention, an MoE's expert reads), so a
prefill's crossover and decode's flip batch are the same question asked along two axes: more tokens per
sequence (a longer prompt) or more sequences (a larger batch).

>>> round(compute_bound_prompt_tokens("llama-3-8b", "h100-sxm"))
295
"""

from __future__ import annotations

import numpy as np

from roofline.checks import checked
from roofline.data import get_gpu, get_model
from roofline.errors import InvalidConfigurationError
from roofline.physics.architecture import active_parameter_count, weight_bytes
from roofline.physics.core import ridge_point_flop_per_byte
from roofline.physics.precision import peak_flops_per_s
from roofline.physics.step import forward_step, prefill


def compute_bound_prompt_tokens(model, gpu, weight_precision="bf16"):
    """The rule of thumb (tokens): ridge × weight bytes ÷ (2 × N_active), ignoring attention and KV.

    For an MoE every stored expert is read by a long prompt but each token uses only k of them, so the
    balance point moves up by N_total ÷ N_active.

    >>> round(compute_bound_prompt_tokens("mixtral-8x7b", "h200"))     # 206 FLOP/byte × 46.7 / 12.9
    747
    """
    m, g = get_model(model), get_gpu(gpu)
    ridge = ridge_point_flop_per_byte(peak_flops_per_s(g, weight_precision), g.memory_bandwidth_bytes_per_s)
    return ridge * weight_bytes(m, weight_precision) / (2.0 * active_parameter_count(m))


def _is_compute_bound(model, gpu, batch, new_tokens, context_tokens, **precisions):
    """The step engine's own test (compute time > memory time), also where the step would not fit.
    One new token per sequence follows ``decode_step``'s convention (its KV write is left out)."""
    g = get_gpu(gpu)
    s = forward_step(
        model, g, batch, context_tokens, new_tokens=new_tokens, on_overflow="ignore",
        count_new_kv=bool(np.any(np.asarray(new_tokens) > 1)), **precisions,
    )  # fmt: skip
    return np.asarray(s.flops) / peak_flops_per_s(g, precisions.get("weight_precision", "bf16")) > (
        np.asarray(s.bytes_moved) / g.memory_bandwidth_bytes_per_s
    )


def _smallest(test, possible, hi, limit=2.0**62):
    """Smallest whole x ≥ 1 with ``test(x)`` true, by doubling then bisection, elementwise (inf if none)."""
    while True:  # widen until every possible case is bracketed (or passes the limit)
        bad = possible & ~test(hi)
        if not bad.any():
            break
        if np.any(bad & (hi > limit)):
            return np.where(possible, np.inf, np.inf)
        hi = np.where(bad, hi * 2, hi)
    lo = np.zeros_like(hi)
    while np.any(possible & (hi - lo > 1)):
        mid = np.maximum(np.where(possible, np.floor((lo + hi) / 2), 1.0), 1.0)
        ok = test(mid)
        active = possible & (hi - lo > 1)
        hi, lo = np.where(active & ok, mid, hi), np.where(active & ~ok, mid, lo)
    return np.where(possible, hi, np.inf)


def compute_bound_batch(model, gpu, context_tokens=0, *, weight_precision="bf16", kv_precision="bf16"):
    """Smallest batch (users) at which a decode step is compute-bound, users holding ``context_tokens``.

    Memory is ignored (compare with ``roofline.max_batch``). Where no batch ever flips, because each
    user's KV read grows faster than its math: ``None`` for a scalar context, ``inf`` in an array. The
    GPU count cancels (G multiplies bandwidth and FLOP/s alike).

    >>> compute_bound_batch("llama-3-8b", "h100-sxm", 4096) is None
    True
    >>> compute_bound_batch("llama-3-8b", "h100-sxm", 0, weight_precision="int4")   # 16-bit LM head
    92
    """
    m, g = get_model(model), get_gpu(gpu)
    t = checked(context_tokens, "context_tokens", minimum=0)
    precisions = dict(weight_precision=weight_precision, kv_precision=kv_precision)
    one_user = forward_step(m, g, 1, t, on_overflow="ignore", count_new_kv=False, **precisions)
    ridge = ridge_point_flop_per_byte(peak_flops_per_s(g, weight_precision), g.memory_bandwidth_bytes_per_s)
    # Each added user adds its FLOPs and its own KV bytes; it can only flip if FLOPs outgrow ridge × bytes.
    kv_per_user = np.asarray(one_user.kv_bytes_read) + np.asarray(one_user.kv_bytes_written)
    margin = np.asarray(one_user.flops) - ridge * kv_per_user
    possible = margin > 0
    hi = np.where(
        possible, np.floor(ridge * weight_bytes(m, weight_precision) / np.where(possible, margin, 1)) + 1, 1
    )
    result = _smallest(lambda b: _is_compute_bound(m, g, b, 1, t, **precisions), possible, hi.astype(float))
    if result.ndim == 0:
        return int(result) if np.isfinite(result) else None
    return result


def prefill_crossover_prompt_tokens(
    model,
    gpu,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
    include_attention=True,
    max_tokens: int = 2**24,
) -> int:
    """Shortest prompt (tokens) whose prefill the step engine finds compute-bound.

    The rule (``compute_bound_prompt_tokens``) counts every stored weight as multiplied by every token; this
    asks the engine, where a prompt token multiplies the block weights only (the embedding is a lookup, the
    LM head runs once), so the crossover comes later. The GPU count cancels. Raises
    ``InvalidConfigurationError`` if no prompt up to ``max_tokens`` flips.

    >>> prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm", include_attention=False)  # + KV writes
    319
    >>> prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm")   # attention's FLOPs pull it back
    317
    >>> prefill_crossover_prompt_tokens("mixtral-8x7b", "h100-sxm")     # all 8 experts read, 2 used
    1080
    """
    m, g = get_model(model), get_gpu(gpu)
    checked(num_gpus, "num_gpus", minimum=1)
    g_peak = peak_flops_per_s(g, weight_precision)

    def test(p):
        s = prefill(
            m, g, p, weight_precision=weight_precision, kv_precision=kv_precision,
            include_attention=include_attention, on_overflow="ignore",
        )  # fmt: skip
        return np.asarray(s.flops) / g_peak > np.asarray(s.bytes_moved) / g.memory_bandwidth_bytes_per_s

    p = _smallest(test, np.array(True), np.array(1.0), limit=max_tokens)
    if not np.isfinite(p) or p > max_tokens:
        raise InvalidConfigurationError(f"prefill stays memory-bound up to {max_tokens:,} prompt tokens")
    return int(p)
