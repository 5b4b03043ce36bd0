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

Sliding windows (Mistral, gpt-oss), multi-head latent attention (DeepSeek-V3), shared experts and dense
first layers (DeepSeek) are modelled from the optional model fields (``data/README.md``); taught in the
attention-variants and mixture-of-experts lessons.
"""

from __future__ import annotations

import numpy as np

from roofline.checks import checked, out
from roofline.data import Model, get_model
from roofline.physics.precision import bytes_per_element, weight_format


def parameter_breakdown(model: Model | str) -> dict[str, int]:
    """Parameters by part, from the architecture (counts, not bytes).

    Keys: ``embedding`` (V·d), ``lm_head`` (V·d, 0 if tied), ``attention`` (matmul weights of all layers:
    Q, K, V, O, or MLA's low-rank projections), ``dense_mlp`` (an MoE's dense first layers and its shared
    experts), ``expert_mlp`` (a dense model's MLPs; an MoE's routed experts, all of them: 3·d·I_e each,
    gated MLP), ``router``, ``norms`` (RMSNorms, QK-norms, MLA's latent norms), ``biases`` (Q/K/V/O biases,
    attention sinks, router bias), ``expert_biases`` (biases of the routed experts). A multi-token-prediction
    module is not counted (publishers leave it out of the headline count).

    >>> b = parameter_breakdown("llama-3-8b")
    >>> b["attention"] // 32   # per layer: 4096*4096 + 2*4096*1024 + 4096*4096
    41943040
    >>> parameter_breakdown("deepseek-v3")["attention"] // 61   # MLA per layer (hand sum in tests)
    187105280
    """
    return dict(_breakdown(get_model(model)))


_BREAKDOWNS: dict[int, tuple[Model, dict[str, int]]] = {}
_GROUP_BYTES: dict[tuple[int, str], tuple[Model, dict[str, float]]] = {}


def _breakdown(m: Model) -> dict[str, int]:
    """``parameter_breakdown`` of a model row, cached by object (rows are frozen and kept alive with
    their entry; callers never mutate the dict). Hashing a row field by field would cost more than this."""
    hit = _BREAKDOWNS.get(id(m))
    if hit is not None and hit[0] is m:
        return hit[1]
    result = _compute_breakdown(m)
    _BREAKDOWNS[id(m)] = (m, result)
    return result


def _compute_breakdown(m: Model) -> dict[str, int]:
    d, hd, h, L = m.hidden_size, m.head_dim, m.attention_heads, m.layers
    norms = L * 2 * d + d
    biases = 0
    if m.is_mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = d * m.q_lora_rank + m.q_lora_rank * h * qk if m.q_lora_rank else d * h * qk
        kv = d * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * h * (
            m.qk_nope_head_dim + m.v_head_dim
        )
        attention = q + kv + h * m.v_head_dim * d
        norms += L * (m.q_lora_rank + m.kv_lora_rank)
    else:
        q, kv = h * hd, m.kv_heads * hd
        attention = d * q + 2 * d * kv + q * d
        biases += L * (q + 2 * kv) if m.attention_bias else 0
    biases += L * d if m.attention_output_bias else 0
    biases += L * h if m.attention_sinks else 0
    norms += L * 2 * hd if m.qk_norm else 0
    if m.is_moe:
        moe_layers = L - m.first_dense_layers
        i_e = m.moe_intermediate_size or m.intermediate_size
        expert_mlp = moe_layers * m.experts * 3 * d * i_e
        dense_mlp = (
            m.first_dense_layers * 3 * d * m.intermediate_size + moe_layers * m.shared_experts * 3 * d * i_e
        )
        router = moe_layers * d * m.experts
        biases += moe_layers * m.experts if m.router_bias else 0
        expert_biases = moe_layers * m.experts * (2 * i_e + d) if m.expert_bias else 0
    else:
        expert_mlp, dense_mlp, router, expert_biases = L * 3 * d * m.intermediate_size, 0, 0, 0
    return {
        "embedding": m.vocab_size * d,
        "lm_head": 0 if m.tied_embeddings else m.vocab_size * d,
        "attention": L * attention,
        "dense_mlp": dense_mlp,
        "expert_mlp": expert_mlp,
        "router": router,
        "norms": norms,
        "biases": biases,
        "expert_biases": expert_biases,
    }


# Which weight-format group (``roofline.physics.precision.TENSOR_GROUPS``) each breakdown key is stored in.
_GROUP_OF = {
    "embedding": "embedding",
    "lm_head": "lm_head",
    "attention": "attention",
    "dense_mlp": "mlp",
    "expert_mlp": "experts",
    "router": "other",
    "norms": "other",
    "biases": "other",
    "expert_biases": "other",
}


def parameter_count(model: Model | str) -> int:
    """Total stored parameters N derived from the architecture (parameters).

    >>> round(parameter_count("mixtral-8x7b") / 1e9, 1)
    46.7
    """
    return sum(_breakdown(get_model(model)).values())


def _routed(model: Model) -> int:
    """Parameters of all routed experts (weights and their biases); 0 for a dense model."""
    if not model.is_moe:
        return 0
    b = _breakdown(model)
    return b["expert_mlp"] + b["expert_biases"]


def active_parameter_count(model: Model | str) -> int:
    """Parameters one token uses, N_active: all of a dense model; an MoE's shared part, its shared experts
    and k of its E routed experts (parameters). The input embedding counts (DeepSeek's and Qwen's
    convention); gpt-oss's published figure leaves it out (``published_active_excludes_embedding``).

    >>> round(active_parameter_count("mixtral-8x7b") / 1e9, 1)
    12.9
    """
    m = get_model(model)
    routed = _routed(m)
    return parameter_count(m) - routed + routed * m.experts_per_token // max(m.experts, 1)


def matmul_parameters_per_token(model: Model | str) -> int:
    """Weights one token multiplies in the transformer blocks, the LM head left out (parameters):
    N_active minus the input embedding (a lookup, not a matmul) and minus the LM head (whose logits
    only some tokens need). FLOPs per token = 2 × this, plus 2·V·d for each token that gets logits.

    >>> round(matmul_parameters_per_token("llama-3-8b") / 1e9, 3)   # 8.030 - 2 x 128256 x 4096
    6.98
    """
    m = get_model(model)
    return (
        active_parameter_count(m)
        - 2 * m.vocab_size * m.hidden_size
        + (m.vocab_size * m.hidden_size if m.tied_embeddings else 0)
    )


def lm_head_parameters(model: Model | str) -> int:
    """Weights of the LM head, V·d, tied to the embedding or not (parameters).

    >>> lm_head_parameters("llama-3-8b")
    525336576
    """
    m = get_model(model)
    return m.vocab_size * m.hidden_size


def _group_bytes(model: Model, precision) -> dict[str, float]:
    """Bytes of each breakdown key at the weight format ``precision`` (bytes)."""
    f = weight_format(precision)
    key = (id(model), f.id)
    hit = _GROUP_BYTES.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    result = {k: v * f.element(_GROUP_OF[k]).bytes_per_element for k, v in _breakdown(model).items()}
    _GROUP_BYTES[key] = (model, result)
    return result


def weight_bytes(model: Model | str, precision: str = "bf16") -> float:
    """Bytes to store every weight in the weight format ``precision`` (bytes).

    A plain narrow id (``"int4"``, ``"fp8"``) quantizes the matmul weights of the blocks and keeps the
    embedding, LM head and norms in BF16, as real checkpoints do (``physics.precision``).

    >>> weight_bytes("llama-3-8b", "bf16") / 1e9
    16.06...
    >>> round(weight_bytes("llama-3-8b", "int4") / 1e9, 2)   # 6.98e9 x 0.515625 + 1.05e9 x 2 (+ norms)
    5.7
    """
    return float(sum(_group_bytes(get_model(model), precision).values()))


def expected_experts_touched(model: Model | str, tokens_in_step):
    """Expected distinct experts an MoE layer reads when ``tokens_in_step`` tokens each pick k of E at
    random, plus the shared experts every token uses: S + E · (1 − (1 − k/E)^n). One token reads S + k
    experts; a large batch reads all S + E. Uniform independent routing: real, skewed routers touch fewer,
    so this is an upper bound on bytes. Dense models: 1.

    >>> float(expected_experts_touched("mixtral-8x7b", 1))
    2.0
    >>> round(float(expected_experts_touched("mixtral-8x7b", 64)), 3)
    8.0
    >>> float(expected_experts_touched("deepseek-v3", 1))   # 1 shared + 8 routed
    9.0
    """
    m = get_model(model)
    n = checked(tokens_in_step, "tokens_in_step", minimum=1)
    if m.experts == 1:
        return out(np.ones_like(n))
    return out(m.shared_experts + m.experts * (1 - (1 - m.experts_per_token / m.experts) ** n))


def weight_bytes_read(model: Model | str, precision: str, tokens_in_step, lm_head: bool = True):
    """Weight bytes one forward step reads when it processes ``tokens_in_step`` tokens together (bytes).

    A dense model reads every matmul weight once, however many tokens share the step. An MoE reads its
    shared part plus only the routed experts some token picked (``expected_experts_touched``). The input
    embedding is a lookup: a step gathers one row per token (at most the V rows of the table), not the
    whole table; a tied table is read whole anyway, as the LM head. ``lm_head`` False: no token of the
    step asks for logits (a pass in the middle of a long prompt), so the LM head is not read at all.

    The study card's "weights ÷ bandwidth" counts the whole table (16 GB for Llama 3 8B, 4.8 ms on an
    H100); the gather makes it 15.0 GB (4.5 ms).

    >>> round(float(weight_bytes_read("llama-3-8b", "bf16", 1)) / 1e9, 2)   # 16.06 GB - 1.05 GB + 8 KB
    15.01
    >>> round(float(weight_bytes_read("mixtral-8x7b", "bf16", 1)) / 1e9, 1)   # ~ 2 x active parameters
    25.5
    >>> round(float(weight_bytes_read("llama-3-8b", "bf16", 1, lm_head=False)) / 1e9, 2)   # - 1.05 GB
    13.96
    """
    m = get_model(model)
    n = checked(tokens_in_step, "tokens_in_step", minimum=1)
    f = weight_format(precision)
    by_key = _group_bytes(m, f)
    fixed = sum(by_key.values()) - by_key["embedding"] - (0.0 if lm_head else by_key["lm_head"])
    if m.tied_embeddings and lm_head:
        gathered = by_key["embedding"] + 0.0 * n
    else:
        gathered = np.minimum(n, m.vocab_size) * m.hidden_size * f.embedding.bytes_per_element
    if not m.is_moe:
        return out(fixed + gathered)
    routed_bytes = by_key["expert_mlp"] + by_key["expert_biases"]
    routed_touched = np.asarray(expected_experts_touched(m, n)) - m.shared_experts
    return out(fixed - routed_bytes + routed_bytes / m.experts * routed_touched + gathered)


def routed_expert_parameters_per_token(model: Model | str) -> int:
    """Weights of the routed experts one token multiplies: k of E experts' gated MLPs (parameters; 0 for a
    dense model). The part of ``matmul_parameters_per_token`` an engine runs as a grouped MoE kernel.

    >>> routed_expert_parameters_per_token("mixtral-8x7b") / 1e9   # 32 layers x 2 of 8 x 3 x 4096 x 14336
    11.274289152
    """
    m = get_model(model)
    return _routed(m) * m.experts_per_token // max(m.experts, 1) if m.is_moe else 0


def routed_expert_bytes_read(model: Model | str, precision: str, tokens_in_step):
    """Bytes of routed experts one step reads with ``tokens_in_step`` tokens: those some token picked
    (``expected_experts_touched``), in the weight format ``precision`` (bytes; 0 for a dense model). The part
    of ``weight_bytes_read`` an engine streams through its MoE kernel.

    >>> round(float(routed_expert_bytes_read("mixtral-8x7b", "bf16", 1)) / 1e9, 1)   # 2 of 8 experts
    22.5
    """
    m = get_model(model)
    n = checked(tokens_in_step, "tokens_in_step", minimum=1)
    if not m.is_moe:
        return out(0.0 * n)
    by_key = _group_bytes(m, weight_format(precision))
    routed_bytes = by_key["expert_mlp"] + by_key["expert_biases"]
    touched = np.asarray(expected_experts_touched(m, n)) - m.shared_experts
    return out(routed_bytes / m.experts * touched)


def kv_bytes_per_token(model: Model | str, kv_precision: str = "bf16") -> float:
    """KV-cache bytes one token of context occupies in every layer (bytes).

    Multi-head or grouped-query attention: K and V, H_kv · d_h values each, 2 × L × H_kv × d_h × bytes.
    Grouped-query attention (H_kv < H) shrinks it by H ÷ H_kv. Multi-head latent attention (DeepSeek) caches
    one latent of ``kv_lora_rank`` plus the shared rotary key of ``qk_rope_head_dim`` per layer:
    L × (r_kv + d_rope) × bytes. A sliding-window layer keeps at most W tokens: per sequence use
    ``sequence_kv_bytes``.

    >>> kv_bytes_per_token("llama-3-70b", "bf16") / 1024   # 2 x 80 x 8 x 128 x 2 bytes
    320.0
    >>> kv_bytes_per_token("deepseek-v3", "bf16")          # 61 x (512 + 64) x 2 bytes
    70272.0
    """
    m = get_model(model)
    b = bytes_per_element(kv_precision)
    if m.is_mla:
        return float(m.layers * (m.kv_lora_rank + m.qk_rope_head_dim) * b)
    return 2 * m.layers * m.kv_heads * m.head_dim * b


def kv_bytes_per_token_mha(model: Model | str, kv_precision: str = "bf16") -> float:
    """The same model's KV bytes per token had it used full multi-head attention (H_kv = H) (bytes).
    For MLA: H heads of K (d_nope + d_rope) and V (d_v) per layer.

    >>> kv_bytes_per_token_mha("llama-3-8b") / kv_bytes_per_token("llama-3-8b")
    4.0
    >>> kv_bytes_per_token_mha("deepseek-v3")   # 61 x 128 x (192 + 128) x 2 bytes, about 5 MB
    4997120.0
    """
    m = get_model(model)
    b = bytes_per_element(kv_precision)
    if m.is_mla:
        return float(
            m.layers * m.attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) * b
        )
    return 2 * m.layers * m.attention_heads * m.head_dim * b


def effective_kv_tokens(model: Model | str, context_tokens):
    """Tokens of context each layer keeps and reads, averaged over the layers (tokens):
    [(L − L_s) × T + L_s × min(T, W)] ÷ L, with L_s sliding-window layers of window W. T without a window.

    >>> float(effective_kv_tokens("mistral-7b", 32768))      # every layer slides, W = 4096
    4096.0
    >>> float(effective_kv_tokens("gpt-oss-120b", 1000))    # half the layers keep 128: (1000 + 128) / 2
    564.0
    """
    m = get_model(model)
    return out(_effective_tokens(m, checked(context_tokens, "context_tokens", minimum=0)))


def _effective_tokens(m: Model, t):
    """``effective_kv_tokens`` without the input checks (for the step engine, which checked already)."""
    if not m.sliding_window:
        return t
    slide = m.sliding_window_layers
    return ((m.layers - slide) * t + slide * np.minimum(t, m.sliding_window)) / m.layers


def sequence_kv_bytes(model: Model | str, context_tokens, kv_precision: str = "bf16"):
    """KV-cache bytes one sequence of ``context_tokens`` holds, sliding windows included (bytes).

    >>> float(sequence_kv_bytes("mistral-7b", 32768)) / 2**30   # 4096 tokens x 128 KiB
    0.5
    """
    return out(
        np.asarray(effective_kv_tokens(model, context_tokens)) * kv_bytes_per_token(model, kv_precision)
    )


def _window_pairs(t, n, w):
    """Σ_{x=T}^{T+n−1} min(x, W): (token, earlier token) pairs of n new tokens after T in a W-window layer."""

    def s(m):  # Σ_{x=0}^{m−1} min(x, W)
        return np.where(m <= w + 1, m * (m - 1) / 2, w * (w + 1) / 2 + (m - w - 1) * w)

    return s(t + n) - s(t)


def attention_pairs(model: Model | str, context_tokens, new_tokens=1):
    """(new token, earlier token) pairs attention scores for ``new_tokens`` (n) tokens after
    ``context_tokens`` (T), averaged over the layers (pairs): n·T + n(n−1)/2 in a full layer; a sliding
    layer sees at most W earlier tokens.

    >>> float(attention_pairs("llama-3-8b", 0, 8000))        # causal prefill: 8000 x 7999 / 2
    31996000.0
    >>> float(attention_pairs("mistral-7b", 32768))          # one decode token sees the window
    4096.0
    """
    m = get_model(model)
    t = checked(context_tokens, "context_tokens", minimum=0)
    return out(_pairs(m, t, checked(new_tokens, "new_tokens", minimum=0)))


def _pairs(m: Model, t, n):
    """``attention_pairs`` without the input checks."""
    full = n * t + n * (n - 1) / 2
    if not m.sliding_window:
        return full
    slide = m.sliding_window_layers
    return ((m.layers - slide) * full + slide * _window_pairs(t, n, m.sliding_window)) / m.layers


def attention_flops_per_pair(model: Model | str, absorbed: bool = True) -> float:
    """FLOPs of attention for one (token, earlier token) pair, all layers (FLOP).

    Multi-head / grouped-query: Q·Kᵀ and scores·V, 2 products × 2 FLOP × L × H × d_h. Multi-head latent
    attention, absorbed (decode: W_UK folded into the query, W_UV into the output): scores over the
    r_kv + d_rope latent key, then the weighted sum of the r_kv latent, 2 × L × H × (2 r_kv + d_rope).
    Un-absorbed (prefill: K and V up-projected per token): 2 × L × H × (d_nope + d_rope + d_v).

    >>> attention_flops_per_pair("llama-3-8b")   # 4 x 32 x 32 x 128
    524288.0
    >>> attention_flops_per_pair("deepseek-v3"), attention_flops_per_pair("deepseek-v3", absorbed=False)
    (16990208.0, 4997120.0)
    """
    m = get_model(model)
    if m.is_mla:
        per_head = (
            2 * m.kv_lora_rank + m.qk_rope_head_dim
            if absorbed
            else m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim
        )
        return 2.0 * m.layers * m.attention_heads * per_head
    return 4.0 * m.layers * m.attention_heads * m.head_dim


def attention_flops_per_token(model: Model | str, context_tokens):
    """FLOPs of attention's two context-dependent products (Q·Kᵀ and scores·V) for one new token
    attending to ``context_tokens`` earlier tokens (FLOP): ``attention_flops_per_pair`` × the tokens each
    layer sees (a sliding layer at most W; see ``effective_kv_tokens``). For MLA, the absorbed (decode)
    form.

    This is the part the 2 × N rule leaves out; it grows with context, the weight part does not.

    >>> attention_flops_per_token("llama-3-8b", 1000) / 1e9   # 4 x 32 x 4096 x 1000
    0.524288
    """
    m = get_model(model)
    return out(attention_flops_per_pair(m) * np.asarray(effective_kv_tokens(m, context_tokens)))


def flops_per_token(model: Model | str, context_tokens=0, include_attention: bool = True):
    """FLOPs to produce one decode token: 2 × its matmul weights (the blocks and the LM head; the input
    embedding is a lookup) plus, if asked, the attention term over ``context_tokens`` (FLOP).

    >>> flops_per_token("llama-3-8b", 0) / 1e9   # 2 x (8.03e9 - 0.53e9): the card's 2 x N is 16.06e9
    15.01...
    """
    m = get_model(model)
    weight_part = 2.0 * (matmul_parameters_per_token(m) + lm_head_parameters(m))
    if not include_attention:
        return out(weight_part + 0.0 * checked(context_tokens, "context_tokens", minimum=0))
    return out(weight_part + np.asarray(attention_flops_per_token(m, context_tokens)))
