"""Card ATTN, "How many users fit at this context?": KV per token from the attention variant, KV per user
with any sliding window, and the users that fit beside the weights.

Taught in notebooks/attention_variants.ipynb (and lesson 28, the KV cache).

KV per token: 2 × L × H_kv × d_h × bytes (MHA, GQA, MQA), or L × (r_kv + d_rope) × bytes (MLA). A user at
context T holds it for [(L − L_s)·T + L_s·min(T, W)] ÷ L tokens on average, with L_s layers sliding over
W tokens (``effective_kv_tokens``).

>>> n = numbers(scenario(ATTN.default_params()))
>>> n["kv_token_kib"], round(n["kv_user_gb"], 3)    # 2 × 32 × 8 × 128 × 2 bytes; 4,096 of 32,768 tokens kept
(128.0, 0.537)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from roofline.course.card_scenarios import choice
from roofline.course.cards import CardCode, read_card, sig
from roofline.data import get_gpu, get_model, models
from roofline.errors import InvalidConfigurationError, RooflineError
from roofline.physics.architecture import (
    effective_kv_tokens,
    kv_bytes_per_token,
    kv_bytes_per_token_mha,
    weight_bytes,
)
from roofline.physics.memory import memory_capacity_bytes
from roofline.units import GB, KiB


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check the context fits the model and the weights fit; add the architecture and free memory quoted."""
    m, g = get_model(params["model"]), get_gpu(params["gpu"])
    if params["context_tokens"] > m.max_context_tokens:
        raise InvalidConfigurationError(f"{m.id} reads at most {m.max_context_tokens:,} tokens")
    free = memory_capacity_bytes(g, params["num_gpus"]) - weight_bytes(m, params["weight_precision"])
    if free <= 0:
        raise InvalidConfigurationError("the weights alone do not fit")
    mla = bool(getattr(m, "is_mla", False))
    return {
        **params,
        "layers": m.layers,
        "heads": m.attention_heads,
        "kv_heads": m.kv_heads,
        "head_dim": m.head_dim,
        "mla": mla,
        "window": getattr(m, "sliding_window", 0) or 0,
        "sliding_layers": getattr(m, "sliding_window_layers", 0) or 0,
        "free_bytes": sig(free),
        "head_ratio": m.attention_heads / m.kv_heads,
    }


def architecture(s: Mapping[str, Any]) -> tuple[str, str]:
    """The attention variant in words, and the KV-per-token product written out."""
    m, layers = get_model(s["model"]), s["layers"]
    if s["mla"]:
        text = (f"multi-head latent attention: per layer it caches one latent of {m.kv_lora_rank} values "
                f"plus a {m.qk_rope_head_dim}-value rotary key ({s['heads']} query heads)")  # fmt: skip
        product = f"{layers} layers × ({m.kv_lora_rank} + {m.qk_rope_head_dim}) × 2 bytes"
    else:
        text = f"{s['heads']} query heads and {s['kv_heads']} KV heads of {s['head_dim']} values"
        product = f"2 (K and V) × {layers} layers × {s['kv_heads']} KV heads × {s['head_dim']} × 2 bytes"
    if s["window"]:
        text += (f"; {s['sliding_layers']} of its {layers} layers attend over a sliding window of "
                 f"{s['window']:,} tokens")  # fmt: skip
    return text, product


def numbers(s: Mapping[str, Any]) -> dict[str, Any]:
    """ATTN's answers, trap values (``None``: no such slip for this model) and the figures its text quotes:
    KV per token from the library, the window from ``effective_kv_tokens``."""
    m, t, free = get_model(s["model"]), s["context_tokens"], s["free_bytes"]
    per_token = kv_bytes_per_token(m)
    kept = float(effective_kv_tokens(m, t))
    per_user = per_token * kept
    mha = kv_bytes_per_token_mha(m) if not s["mla"] and s["kv_heads"] < s["heads"] else None
    windowed = s["window"] and t > s["window"]
    partial = windowed and s["sliding_layers"] < s["layers"]
    arch, kv_line = architecture(s)
    return dict(
        kv_token_kib=per_token / KiB,
        kv_user_gb=per_user / GB,
        users=float(math.floor(free / per_user)),
        query_heads_kib=mha / KiB if mha else None,
        mla_doubled_kib=2 * per_token / KiB if s["mla"] else None,
        no_window_user_gb=per_token * t / GB if windowed else None,
        all_layers_window_user_gb=per_token * s["window"] / GB if partial else None,
        no_window_users=float(math.floor(free / (per_token * t))) if windowed else None,
        query_heads_users=float(math.floor(free / (mha * kept))) if mha else None,
        kept_tokens=kept,
        model_name=m.name,
        gpu_name=get_gpu(s["gpu"]).name,
        architecture=arch,
        kv_line=kv_line,
    )


def draw(rng: np.random.Generator) -> dict[str, Any]:
    """A shuffled ATTN scenario: any model, a datacenter GPU, GPU count, precision and a long context."""
    model = choice(rng, list(models()))
    limit = get_model(model).max_context_tokens
    return dict(
        model=model,
        gpu=choice(rng, ["h100-sxm", "h200", "b200", "mi300x", "a100-80gb-sxm"]),
        num_gpus=int(choice(rng, [1, 2, 4, 8])),
        weight_precision=choice(rng, ["bf16", "fp8", "int4"]),
        context_tokens=int(choice(rng, [t for t in (4096, 8192, 16384, 32768, 65536) if t <= limit])),
    )


def usable(params: Mapping[str, Any]) -> bool:
    """At least one user fits."""
    try:
        return numbers(scenario(params))["users"] >= 1
    except RooflineError:
        return False


ATTN = read_card(Path(__file__).with_name("cards.toml"), CardCode(scenario, numbers, draw, usable))
