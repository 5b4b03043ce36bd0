"""Card ATTN, "How many users fit at this context?": KV per token from the attention variant, KV per user
with any sliding window, and the users that fit beside the weights.

Taught in notebooks/attention_variants.ipynb (and lesson 28, the KV cache).

KV per token: 2 × L × H_kv × d_h × bytes (MHA, GQA, MQA), or L × (r_kv + d_rope) × bytes (MLA). A user at
context T holds it for [(L − L_s)·T + L_s·min(T, W)] ÷ L tokens on average, with L_s layers sliding over
W tokens (``effective_kv_tokens``).

>>> n = numbers(scenario(SPEC.default_params()))
>>> n.kv_token_kib, round(n.kv_user_gb, 3)      # 2 × 32 × 8 × 128 × 2 bytes; 4,096 tokens kept of 32,768
(128.0, 0.537)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from roofline.data import get_gpu, get_model, models
from roofline.errors import InvalidConfigurationError, RooflineError
from roofline.physics.architecture import (
    effective_kv_tokens,
    kv_bytes_per_token,
    kv_bytes_per_token_mha,
    weight_bytes,
)
from roofline.physics.memory import memory_capacity_bytes
from roofline.selfcheck.common import choice
from roofline.selfcheck.lever_common import (
    TRAP_MLA_DOUBLED,
    TRAP_QUERY_HEADS,
    TRAP_WINDOW_ALL_LAYERS,
    TRAP_WINDOW_IGNORED,
)
from roofline.selfcheck.spec import AnswerSpec, CardCode, CardSpec, CardText, TrapSpec
from roofline.selfcheck.text import gb, prec, sig, ul
from roofline.units import GB, KiB

ANSWERS = (
    AnswerSpec("kv_token_kib", "KV per token (all layers)", "KiB"),
    AnswerSpec("kv_user_gb", "KV per user at {context_tokens:,} tokens", "GB"),
    AnswerSpec("users", "users that fit", "users"),
)

TRAPS = (
    TrapSpec(
        "kv_token_kib",
        TRAP_QUERY_HEADS,
        "query_heads_kib",
        "K and V are kept per KV head ({kv_heads}), not per query head ({heads}).",
    ),  # fmt: skip
    TrapSpec(
        "kv_token_kib",
        TRAP_MLA_DOUBLED,
        "mla_doubled_kib",
        "MLA caches one latent that keys and values share: no factor 2.",
    ),  # fmt: skip
    TrapSpec(
        "kv_user_gb",
        TRAP_WINDOW_IGNORED,
        "no_window_user_gb",
        "A sliding layer keeps only its last {window:,} tokens, whatever the context.",
    ),  # fmt: skip
    TrapSpec(
        "kv_user_gb",
        TRAP_WINDOW_ALL_LAYERS,
        "all_layers_window_user_gb",
        "Only {sliding_layers} of {layers} layers slide; the others keep all {context_tokens:,} tokens.",
    ),  # fmt: skip
    TrapSpec(
        "users",
        TRAP_WINDOW_IGNORED,
        "no_window_users",
        "Without the window each user would hold the whole context in every layer.",
    ),  # fmt: skip
    TrapSpec(
        "users",
        TRAP_QUERY_HEADS,
        "query_heads_users",
        "Counting query heads overstates each user's cache {head_ratio:.0f}-fold.",
    ),  # fmt: skip
)


@dataclass(frozen=True)
class Numbers:
    """ATTN's answers and trap values (learner's units)."""

    kv_token_kib: float
    kv_user_gb: float
    users: float
    query_heads_kib: float | None
    mla_doubled_kib: float | None
    no_window_user_gb: float | None
    all_layers_window_user_gb: float | None
    no_window_users: float | None
    query_heads_users: float | None
    kept_tokens: float


def scenario(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check the context fits the model and the weights fit; add the architecture and free memory quoted."""
    m, g = get_model(params["model"]), get_gpu(params["gpu"])
    t = params["context_tokens"]
    if t > m.max_context_tokens:
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
        "latent": (m.kv_lora_rank + m.qk_rope_head_dim) if mla else 0,
        "window": getattr(m, "sliding_window", 0) or 0,
        "sliding_layers": getattr(m, "sliding_window_layers", 0) or 0,
        "free_bytes": params.get("free_bytes") or sig(free),
        "head_ratio": m.attention_heads / m.kv_heads,
    }


def numbers(s: Mapping[str, Any]) -> Numbers:
    """ATTN's numbers: KV per token from the library, the window from ``effective_kv_tokens``."""
    m, t = get_model(s["model"]), s["context_tokens"]
    per_token = kv_bytes_per_token(m)
    kept = float(effective_kv_tokens(m, t))
    per_user = per_token * kept
    free = s["free_bytes"]
    users = math.floor(free / per_user)
    mha = kv_bytes_per_token_mha(m) if not s["mla"] and s["kv_heads"] < s["heads"] else None
    windowed = s["window"] and t > s["window"]
    partial = windowed and s["sliding_layers"] < s["layers"]
    return Numbers(
        kv_token_kib=per_token / KiB,
        kv_user_gb=per_user / GB,
        users=float(users),
        query_heads_kib=mha / KiB if mha else None,
        mla_doubled_kib=2 * per_token / KiB if s["mla"] else None,
        no_window_user_gb=per_token * t / GB if windowed else None,
        all_layers_window_user_gb=per_token * s["window"] / GB if partial else None,
        no_window_users=float(math.floor(free / (per_token * t))) if windowed else None,
        query_heads_users=float(math.floor(free / (mha * kept))) if mha else None,
        kept_tokens=kept,
    )


def text(s: Mapping[str, Any], n: Numbers) -> CardText:
    """ATTN's scenario, worked answer, common mistake and follow-up, in HTML."""
    m, g = get_model(s["model"]), get_gpu(s["gpu"])
    t, L, G = s["context_tokens"], s["layers"], s["num_gpus"]
    if s["mla"]:
        arch = (f"multi-head latent attention: per layer it caches one latent of {m.kv_lora_rank} values "
                f"plus a {m.qk_rope_head_dim}-value rotary key ({s['heads']} query heads)")  # fmt: skip
        kv_line = f"{L} layers × ({m.kv_lora_rank} + {m.qk_rope_head_dim}) × 2 bytes"
    else:
        arch = f"{s['heads']} query heads and {s['kv_heads']} KV heads of {s['head_dim']} values"
        kv_line = f"2 (K and V) × {L} layers × {s['kv_heads']} KV heads × {s['head_dim']} × 2 bytes"
    if s["window"]:
        arch += (f"; {s['sliding_layers']} of its {L} layers attend over a sliding window of "
                 f"{s['window']:,} tokens")  # fmt: skip
    return CardText(
        scenario=(
            f"<p>{m.name}: {L} layers, {arch}. KV cache in BF16. On {G} × {g.name} the "
            f"{prec(s['weight_precision'])} weights leave {gb(s['free_bytes'])} for KV. Users hold {t:,} "
            "tokens each. Give the KV per token, the KV per user, and how many users fit.</p>"
        ),
        worked=ul(
            f"Per token: {kv_line} = <b>{n.kv_token_kib:,.1f} KiB</b>.",
            f"Tokens kept per layer, averaged over the layers: <b>{n.kept_tokens:,.0f}</b> of {t:,}; "
            f"per user {n.kept_tokens:,.0f} × {n.kv_token_kib:,.1f} KiB = <b>{n.kv_user_gb:.3g} GB</b>.",
            f"Users: {gb(s['free_bytes'])} ÷ {n.kv_user_gb:.3g} GB, rounded down = <b>{n.users:,.0f}</b>.",
        ),
        mistake=(
            "<p>Multiplying by the query heads, doubling an MLA latent, or ignoring a sliding window (or "
            "applying it to layers that do not slide): each moves the answer by a whole factor.</p>"
        ),
        followup_question="What does the attention variant do to a long-context decode step's time?",
        followup_answer=ul(
            "Each step reads every user's kept KV once: fewer KV bytes per user means a shorter step at the "
            "same batch, and more users before memory runs out."
        ),
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
        s = scenario(params)
        return numbers(s).users >= 1
    except RooflineError:
        return False


SPEC = CardSpec(
    qid="ATTN",
    title="How many users fit at this context?",
    lessons=("attention_variants", "28"),
    defaults=dict(
        model="mistral-7b", gpu="h100-sxm", num_gpus=1, weight_precision="bf16", context_tokens=32768
    ),
    stated={},
    answers=ANSWERS,
    traps=TRAPS,
    code=CardCode(scenario, numbers, text, draw, usable),
)
