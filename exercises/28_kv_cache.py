# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""KV-cache bytes from a model's architecture, and how many users fit beside the weights.

Speed Physics, lesson 28 (exercise). The library's versions are ``roofline.kv_bytes_per_token`` and
``roofline.max_batch``.

Every token a user has in context leaves a key and a value vector behind in every layer, one pair per
KV head. Grouped-query attention keeps fewer KV heads than query heads, which is what shrinks the cache.

    KV bytes per token = 2 (K and V) x layers x KV heads x head dim x bytes per element
    KV cache (bytes)   = B users x T tokens x KV bytes per token
    largest batch      = floor((G x memory per GPU - weight bytes) / (T x KV bytes per token))

Units: bytes throughout (1 GB = 10^9 bytes, 1 KiB = 1,024 bytes). Only weights and KV are counted;
real servers also hold activations and allocator slack, so the true limit sits a little lower. The
card's model, Llama 3 8B: 32 layers, 8 KV heads, head dim 128, BF16 (2 bytes), gives 131,072 bytes
(128 KiB) per token. Beside its 16.06 GB of weights in an 80 GB H100, users holding 4,096 tokens
each fit at most 119 at a time; 64 of them hold about 34 GB of KV.

Run it:

    uv run exercises/28_kv_cache.py                              # the card: Llama 3 8B, 80 GB, 4,096 tokens
    uv run exercises/28_kv_cache.py --context 32768 --batch 8
    uv run exercises/28_kv_cache.py --layers 80 --weight-bytes 141e9 --gpus 2   # Llama 3 70B on two GPUs
    uv run exercises/28_kv_cache.py --check                      # compare the functions with the card

>>> kv_bytes_per_token(32, 8, 128, 2)
131072
>>> max_batch_users(16.06e9, 80e9, 4096, 131072)
119
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

GB = 1e9
KiB = 1024
MiB = 1024**2

BYTES_PER_ELEMENT = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}

# The functions a learner writes in exercises/starters/28_kv_cache.py.
PHYSICS = ("kv_bytes_per_token", "kv_cache_bytes", "max_batch_users")

# (function, arguments, expected, source): the card's figures, worked out by hand.
CHECKS = [
    ("kv_bytes_per_token", (32, 8, 128, 2), 131_072, "the card: 2 x 32 x 8 x 128 x 2 bytes = 128 KiB"),
    ("kv_bytes_per_token", (80, 8, 128, 2), 327_680, "Llama 3 70B: 320 KiB"),
    ("kv_cache_bytes", (32, 1000, 128e3), 4.1e9, "the card: 32 x 1,000 x 128 KB"),
    ("kv_cache_bytes", (64, 4096, 131072), 34.4e9, "the card: 64 x 4,096 x 128 KiB, about 34 GB"),
    ("max_batch_users", (16.06e9, 80e9, 4096, 131072), 119, "63.94 GB / 0.537 GB per user"),
    ("max_batch_users", (100e9, 80e9, 4096, 131072), 0, "weights alone do not fit: nobody fits"),
]


def kv_bytes_per_token(layers, kv_heads, head_dim, bytes_per_element):
    """KV-cache bytes one token of context takes (bytes): a K and a V vector per KV head per layer."""
    for name, value in (
        ("layers", layers),
        ("kv_heads", kv_heads),
        ("head_dim", head_dim),
        ("bytes_per_element", bytes_per_element),
    ):
        if not value > 0:
            raise ValueError(f"{name} must be above 0, got {value!r}")
    return 2 * layers * kv_heads * head_dim * bytes_per_element


def kv_cache_bytes(batch, context_tokens, kv_bytes_per_token_):
    """KV-cache bytes of ``batch`` users holding ``context_tokens`` tokens each (bytes)."""
    if batch < 0 or context_tokens < 0 or kv_bytes_per_token_ < 0:
        raise ValueError("batch, context and KV bytes per token must be 0 or more")
    return batch * context_tokens * kv_bytes_per_token_


def max_batch_users(weight_bytes, memory_bytes, context_tokens, kv_bytes_per_token_) -> int:
    """Most users with ``context_tokens`` each whose KV fits in the memory the weights leave (users)."""
    if not context_tokens > 0 or not kv_bytes_per_token_ > 0:
        raise ValueError(
            "context_tokens and kv_bytes_per_token must be above 0 (else the batch is unbounded)"
        )
    free = max(memory_bytes - weight_bytes, 0.0)
    return int(math.floor(free / (context_tokens * kv_bytes_per_token_)))


# --- command line -------------------------------------------------------------------------------------


def _number(text: str, *, above=None, minimum=None, integer=False):
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
    if value != value or abs(value) == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    if above is not None and not value > above:
        raise argparse.ArgumentTypeError(f"must be above {above:g}, got {text!r}")
    if minimum is not None and not value >= minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum:g}, got {text!r}")
    return value


def _bytes_per_element(text: str) -> float:
    key = text.strip().lower()
    if key in BYTES_PER_ELEMENT:
        return BYTES_PER_ELEMENT[key]
    try:
        return _number(key, above=0)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"unknown KV precision {text!r}: use one of {', '.join(BYTES_PER_ELEMENT)} or a number of bytes"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="KV bytes per token from the architecture, KV for B users, and the largest batch.",
    )
    count = lambda t: _number(t, minimum=1, integer=True)  # noqa: E731
    parser.add_argument("--layers", type=count, default=32, help="transformer layers (default: 32)")
    parser.add_argument("--kv-heads", type=count, default=8, help="KV heads per layer (default: 8)")
    parser.add_argument("--head-dim", type=count, default=128, help="values per head (default: 128)")
    parser.add_argument(
        "--kv-precision",
        type=_bytes_per_element,
        default=2.0,
        metavar="PRECISION",
        help=f"bytes per KV value: {', '.join(BYTES_PER_ELEMENT)} or a number (default: bf16)",
    )
    parser.add_argument(
        "--attention-heads",
        type=count,
        metavar="HEADS",
        help="query heads; if given, also show the cache full multi-head attention would need",
    )
    parser.add_argument(
        "--batch", type=lambda t: _number(t, minimum=0, integer=True), default=64, help="users (default: 64)"
    )
    parser.add_argument(
        "--context",
        type=count,
        default=4096,
        metavar="TOKENS",
        help="tokens of context each user holds (default: 4096)",
    )
    parser.add_argument(
        "--weight-bytes",
        type=lambda t: _number(t, minimum=0),
        default=16.06e9,
        metavar="BYTES",
        help="bytes of weights (default: 16.06e9, Llama 3 8B in BF16)",
    )
    parser.add_argument("--gpus", type=count, default=1, help="GPUs whose memory adds up (default: 1)")
    parser.add_argument(
        "--memory-gb",
        type=lambda t: _number(t, above=0),
        default=80.0,
        metavar="GB",
        help="memory per GPU, GB = 1e9 bytes (default: 80, an H100)",
    )
    parser.add_argument("--check", action="store_true", help="check the functions against the card and exit")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.check:
        return _self_check()
    b_el, t, users = args.kv_precision, args.context, args.batch
    per_token = kv_bytes_per_token(args.layers, args.kv_heads, args.head_dim, b_el)
    per_user = kv_cache_bytes(1, t, per_token)
    cache = kv_cache_bytes(users, t, per_token)
    memory = args.gpus * args.memory_gb * GB
    weights = args.weight_bytes
    print(
        f"KV per token:  2 × {args.layers} layers × {args.kv_heads} KV heads × {args.head_dim} × "
        f"{b_el:g} bytes "
        f"= {per_token:,.0f} bytes = {per_token / KiB:,.4g} KiB"
    )
    if args.attention_heads:
        mha = kv_bytes_per_token(args.layers, args.attention_heads, args.head_dim, b_el)
        print(
            f"  (with one KV head per query head, {args.attention_heads} of them: {mha / KiB:,.4g} KiB, "
            f"{mha / per_token:.3g}× more)"
        )
    print(
        f"Per user:      {t:,} tokens × {per_token:,.0f} bytes = {per_user / GB:.3g} GB "
        f"({per_user / MiB:,.4g} MiB)"
    )
    label = f"{users:,} users:"
    print(f"{label:<15}{users:,} × {per_user / GB:.3g} GB = {cache / GB:.3g} GB of KV")
    need = weights + cache
    verdict = "fits" if need <= memory else "does NOT fit"
    print(
        f"Memory:        weights {weights / GB:.4g} GB + KV {cache / GB:.3g} GB = {need / GB:.4g} GB "
        f"of {memory / GB:g} GB ({args.gpus} × {args.memory_gb:g} GB): {verdict}"
    )
    most = max_batch_users(weights, memory, t, per_token)
    if weights > memory:
        print(
            f"Largest batch: 0, the weights alone need {weights / GB:.4g} GB; add GPUs or shrink the weights"
        )
    else:
        print(
            f"Largest batch: ({memory / GB:g} − {weights / GB:.4g}) GB ÷ {per_user / GB:.3g} GB per user "
            f"= {most:,} users at {t:,} tokens each"
        )
    return 0


def _self_check() -> int:
    # Load the shared checker by path: these scripts run standalone (PEP 723), outside any package.
    spec = importlib.util.spec_from_file_location("_selfcheck", Path(__file__).with_name("_selfcheck.py"))
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    return 0 if checker.run_checks(globals(), CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
