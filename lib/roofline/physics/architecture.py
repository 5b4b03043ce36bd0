"""What a model's architecture implies: parameter counts, weight bytes, KV bytes per token, FLOPs per token.

Taught in lesson 02 (weight bytes), lesson 28 (KV cache) and lesson 15 (FLOPs per token).

Notation (README): L layers, d hidden size, H attention heads, H_kv KV heads, d_h head dim, I MLP size,
V vocabulary, E experts, k experts per token, T context tokens.

>>> from roofline.data import get_model
>>> m = get_model("llama-3-8b")
>>> round(parameter_count(m) / 1e9, 2)
8.03
>>> kv_bytes_per_token(m, "bf16")   # 2 (K and V) x 32 layers x 8 KV heads x 128 x 2 bytes = 128 KiB
131072.0
"""

from __future__ import annotations

import numpy as np

from roofline._arrays import checked, out
from roofline.data import Model, get_model
from roofline.physics.precision import bytes_per_element


def parameter_breakdown(model: Model | str) -> dict[str, int]:
    """Parameters by part, from the architecture (counts, not bytes).

    Keys: ``embedding`` (V·d), ``lm_head`` (V·d, 0 if tied), ``attention`` (all layers: Q, K, V, O and
    any Q/K/V biases), ``expert_mlp`` (all layers, all experts: 3·d·I each, gated MLP), ``router``,
    ``norms``.

    >>> b = parameter_breakdown("llama-3-8b")
    >>> b["attention"] // 32   # per layer: 4096*4096 + 2*4096*1024 + 4096*4096
    41943040
    """
    m = get_model(model)
    d, hd = m.hidden_size, m.head_dim
    q, kv = m.attention_heads * hd, m.kv_heads * hd
    attention = d * q + 2 * d * kv + q * d + ((q + 2 * kv) if m.attention_bias else 0)
    return {
        "embedding": m.vocab_size * d,
        "lm_head": 0 if m.tied_embeddings else m.vocab_size * d,
        "attention": m.layers * attention,
        "expert_mlp": m.layers * m.experts * 3 * d * m.intermediate_size,
        "router": m.layers * d * m.experts if m.is_moe else 0,
        "norms": m.layers * 2 * d + d,
    }


def parameter_count(model: Model | str) -> int:
    """Total stored parameters N derived from the architecture (parameters).

    >>> round(parameter_count("mixtral-8x7b") / 1e9, 1)
    46.7
    """
    return sum(parameter_breakdown(model).values())


def active_parameter_count(model: Model | str) -> int:
    """Parameters one token uses, N_active: all of a dense model, k of E experts of an MoE (parameters).

    >>> round(active_parameter_count("mixtral-8x7b") / 1e9, 1)
    12.9
    """
    m = get_model(model)
    b = parameter_breakdown(m)
    return parameter_count(m) - b["expert_mlp"] + b["expert_mlp"] * m.experts_per_token // m.experts


def weight_bytes(model: Model | str, precision: str = "bf16") -> float:
    """Bytes to store every weight at ``precision`` (bytes).

    >>> weight_bytes("llama-3-8b", "bf16") / 1e9
    16.06...
    """
    return parameter_count(model) * bytes_per_element(precision)


def expected_experts_touched(model: Model | str, tokens_in_step):
    """Expected distinct experts a layer reads when ``tokens_in_step`` tokens each pick k of E at random.

    E · (1 − (1 − k/E)^n). One token reads k experts; a large batch reads all E. Dense models: 1.

    >>> float(expected_experts_touched("mixtral-8x7b", 1))
    2.0
    >>> round(float(expected_experts_touched("mixtral-8x7b", 64)), 3)
    8.0
    """
    m = get_model(model)
    n = checked(tokens_in_step, "tokens_in_step", minimum=1)
    if m.experts == 1:
        return out(np.ones_like(n))
    return out(m.experts * (1 - (1 - m.experts_per_token / m.experts) ** n))


def weight_bytes_read(model: Model | str, precision: str, tokens_in_step):
    """Weight bytes one forward step reads when it processes ``tokens_in_step`` tokens together (bytes).

    A dense model reads every weight once, however many tokens share the step. An MoE reads its shared
    part plus only the experts some token routed to (see ``expected_experts_touched``). The input
    embedding table is counted in full, a simplification (a step only gathers a few of its rows) that
    keeps the textbook "weights ÷ bandwidth" figure: for Llama 3 8B it overstates bytes by about 6%.

    >>> weight_bytes_read("llama-3-8b", "bf16", 1) == weight_bytes("llama-3-8b", "bf16")
    True
    >>> round(float(weight_bytes_read("mixtral-8x7b", "bf16", 1)) / 1e9, 1)   # ~ 2 x active parameters
    25.9
    """
    m = get_model(model)
    b = parameter_breakdown(m)
    per_expert = b["expert_mlp"] / m.experts
    shared = parameter_count(m) - b["expert_mlp"]
    params = shared + per_expert * np.asarray(expected_experts_touched(m, tokens_in_step))
    return out(params * bytes_per_element(precision))


def kv_bytes_per_token(model: Model | str, kv_precision: str = "bf16") -> float:
    """KV-cache bytes one token of context occupies: K and V, every layer, H_kv · d_h values each (bytes).

    2 × L × H_kv × d_h × bytes per element. Grouped-query attention (H_kv < H) shrinks it by H ÷ H_kv.

    >>> kv_bytes_per_token("llama-3-70b", "bf16") / 1024   # 2 x 80 x 8 x 128 x 2 bytes
    320.0
    """
    m = get_model(model)
    return 2 * m.layers * m.kv_heads * m.head_dim * bytes_per_element(kv_precision)


def kv_bytes_per_token_mha(model: Model | str, kv_precision: str = "bf16") -> float:
    """The same model's KV bytes per token had it used full multi-head attention (H_kv = H) (bytes).

    >>> kv_bytes_per_token_mha("llama-3-8b") / kv_bytes_per_token("llama-3-8b")
    4.0
    """
    m = get_model(model)
    return 2 * m.layers * m.attention_heads * m.head_dim * bytes_per_element(kv_precision)


def attention_flops_per_token(model: Model | str, context_tokens):
    """FLOPs of attention's two context-dependent products (Q·Kᵀ and scores·V) for one new token
    attending to ``context_tokens`` earlier tokens: 2 products × 2 FLOP × L × H × d_h × T (FLOP).

    This is the part the 2 × N rule leaves out; it grows with context, the weight part does not.

    >>> attention_flops_per_token("llama-3-8b", 1000) / 1e9   # 4 x 32 x 4096 x 1000
    0.524288
    """
    m = get_model(model)
    t = checked(context_tokens, "context_tokens", minimum=0)
    return out(4.0 * m.layers * m.attention_heads * m.head_dim * t)


def flops_per_token(model: Model | str, context_tokens=0, include_attention: bool = True):
    """FLOPs to produce one token: 2 × N_active (one multiply and one add per weight) plus, if asked,
    the attention term over ``context_tokens`` (FLOP).

    >>> flops_per_token("llama-3-8b", 0) / 1e9
    16.06...
    """
    m = get_model(model)
    weight_part = 2.0 * active_parameter_count(m)
    if not include_attention:
        return out(weight_part + 0.0 * checked(context_tokens, "context_tokens", minimum=0))
    return out(weight_part + np.asarray(attention_flops_per_token(m, context_tokens)))
