"""Prefill: the whole prompt goes through the model in one pass, reading the weights once.

Taught in lesson 15 (notebooks/15_prefill_vs_decode.ipynb).

    FLOPs = 2 × N_active × P  (+ causal attention, ≈ 2 × L × H × d_h × P², which the 2N rule leaves out)
    bytes = weight bytes + P × KV bytes per token (written)

A 500-token prompt does ~500 FLOPs per weight byte pair, far above an H100's ridge, so prefill is
compute-bound; decode at batch 1 does ~1 and is memory-bound.

>>> p = prefill("llama-3-8b", "h100-sxm", prompt_tokens=500, include_attention=False)
>>> round(p.time_s * 1e3, 1), p.binding
(8.1, 'compute')
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from roofline._arrays import checked, out
from roofline.data import get_gpu
from roofline.physics.architecture import (
    active_parameter_count,
    get_model,
    kv_bytes_per_token,
    weight_bytes_read,
)
from roofline.physics.core import binding_resource
from roofline.physics.precision import bytes_per_element, peak_flops_per_s


@dataclass(frozen=True)
class Prefill:
    """One prefill pass. Array fields broadcast over prompt length and GPU count."""

    model_id: str
    gpu_id: str
    prompt_tokens: object  # P, tokens
    num_gpus: object
    flops: object  # FLOP
    attention_flops: object  # FLOP, the part included in ``flops`` that grows as P²
    bytes_moved: object  # bytes
    compute_time_s: object
    memory_time_s: object
    time_s: object
    binding: object

    def to_dict(self) -> dict:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in asdict(self).items()}


def causal_attention_flops(model, prompt_tokens):
    """Attention FLOPs of a causal prefill of P tokens: token i attends to the i tokens before it,
    4 × L × H × d_h × P(P−1)/2 (FLOP).

    >>> causal_attention_flops("llama-3-8b", 8000) / 1e12
    16.77...
    """
    m = get_model(model)
    p = checked(prompt_tokens, "prompt_tokens", minimum=1)
    return out(4.0 * m.layers * m.attention_heads * m.head_dim * p * (p - 1) / 2)


def prefill(
    model,
    gpu,
    prompt_tokens,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
    include_attention: bool = True,
) -> Prefill:
    """Model the prefill of a ``prompt_tokens``-token prompt (P ≥ 1) on ``num_gpus`` GPUs (G).

    ``include_attention=False`` gives the textbook 2 × N × P estimate (the study card's numbers).

    >>> p = prefill("llama-3-8b", "h100-sxm", 8000, include_attention=False)
    >>> round(p.time_s * 1e3)
    130
    >>> round(prefill("llama-3-8b", "h100-sxm", 8000).time_s * 1e3)   # with attention's P² term
    147
    """
    m, g = get_model(model), get_gpu(gpu)
    p = checked(prompt_tokens, "prompt_tokens", minimum=1)
    n = checked(num_gpus, "num_gpus", minimum=1)
    peak = peak_flops_per_s(g, weight_precision)
    attn = np.asarray(causal_attention_flops(m, p)) if include_attention else np.zeros_like(p)
    flops = 2.0 * active_parameter_count(m) * p + attn
    moved = np.asarray(weight_bytes_read(m, weight_precision, p)) + p * kv_bytes_per_token(m, kv_precision)
    comp_t = flops / (n * peak)
    mem_t = moved / (n * g.memory_bandwidth_bytes_per_s)
    return Prefill(
        model_id=m.id,
        gpu_id=g.id,
        prompt_tokens=out(p),
        num_gpus=out(n),
        flops=out(flops),
        attention_flops=out(attn),
        bytes_moved=out(moved),
        compute_time_s=out(comp_t),
        memory_time_s=out(mem_t),
        time_s=out(np.maximum(comp_t, mem_t)),
        binding=binding_resource(comp_t, mem_t),
    )


def prefill_flops(parameters, prompt_tokens):
    """The 2 × N × P rule in plain numbers (FLOP).

    >>> prefill_flops(8e9, 500) / 1e12
    8.0
    """
    n = checked(parameters, "parameters", minimum=0)
    p = checked(prompt_tokens, "prompt_tokens", minimum=0)
    return out(2.0 * n * p)


def compute_bound_prompt_tokens(model, gpu, weight_precision="bf16"):
    """Prompt length above which prefill turns compute-bound (tokens), ignoring attention and KV writes:
    2 × N × P ÷ peak = weight bytes ÷ bandwidth  ⇒  P = ridge × bytes per weight ÷ 2.

    >>> round(compute_bound_prompt_tokens("llama-3-8b", "h100-sxm"))
    295
    """
    get_model(model)  # the crossover does not depend on the model, but an unknown id is still an error
    g = get_gpu(gpu)
    ridge = peak_flops_per_s(g, weight_precision) / g.memory_bandwidth_bytes_per_s
    return ridge * bytes_per_element(weight_precision) / 2


def stalled_decode_steps(prefill_time_s, decode_step_time_s):
    """How many decode steps every other user misses while an unchunked prefill runs (steps).

    >>> round(stalled_decode_steps(0.130, 0.0048))
    27
    """
    p = checked(prefill_time_s, "prefill_time_s", minimum=0)
    d = checked(decode_step_time_s, "decode_step_time_s", above=0)
    return out(p / d)
