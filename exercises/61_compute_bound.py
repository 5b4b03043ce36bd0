# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""At what batch does decode stop waiting on memory and start waiting on math? Sometimes never.

Speed Physics, lesson 61 (exercise). The library's versions are ``roofline.ridge_point_flop_per_byte``
and ``roofline.decode_step(...).arithmetic_intensity_flop_per_byte``.

A GPU's ridge point is the number of FLOPs it can do in the time it reads one byte. Work that does
fewer FLOPs per byte than that waits on memory; work that does more waits on the math. In a decode step
the weight bytes are read once for the whole batch, while every user adds FLOPs and KV bytes of its own:

    ridge             = peak FLOP/s / bandwidth                          (FLOP/byte)
    intensity(B)      = B x 2 x params / (weight bytes + B x T x KV bytes per token)     (FLOP/byte)
    intensity limit   = 2 x params / (T x KV bytes per token)            what intensity tends to as B grows
    flip batch        = smallest B with intensity(B) >= ridge, which exists only if limit > ridge:
                        B = ceil(ridge x weight bytes / (2 x params - ridge x T x KV bytes per token))
    context limit     = 2 x params / (ridge x KV bytes per token)        past it, decode never flips

Attention's own FLOPs (which grow with T) are left out, as in lesson 16; counting them raises the
intensity a little. Units: bytes, bytes/s, FLOP, FLOP/s. The card's case: an H100's ridge is
989 TFLOP/s / 3.35 TB/s, about 295 FLOP/byte. With 2-byte weights and almost no context, intensity is
2B FLOP per 2 bytes, so B FLOP/byte, and decode flips at batch 296. Every token of KV per user eats
into that: for Llama 3 8B (128 KiB per token) the flip needs ever bigger batches as T grows, and past
about 415 tokens of context it never comes at all, however many users share the step.

Run it:

    uv run exercises/61_compute_bound.py                         # the card: 8B BF16 on an H100
    uv run exercises/61_compute_bound.py --context 0 64 128 256 384
    uv run exercises/61_compute_bound.py --precision fp8 --peak-tflops 1979
    uv run exercises/61_compute_bound.py --check                 # compare the functions with the card

>>> ridge = ridge_point_flop_per_byte(989e12, 3.35e12)
>>> compute_bound_batch(8.03e9, 16.06e9, 0, 131072, ridge)
296
>>> compute_bound_batch(8.03e9, 16.06e9, 1000, 131072, ridge) is None
True
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

TB = 1e12
GB = 1e9

BYTES_PER_WEIGHT = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 4 / 8 + 2 / 128,
    "fp4": 4 / 8 + 1 / 16,
}

# The functions a learner writes in exercises/starters/61_compute_bound.py.
PHYSICS = (
    "ridge_point_flop_per_byte",
    "decode_intensity_flop_per_byte",
    "intensity_limit_flop_per_byte",
    "compute_bound_batch",
    "context_limit_tokens",
)

# (function, arguments, expected, source): the card's figures, worked out by hand.
CHECKS = [
    ("ridge_point_flop_per_byte", (989e12, 3.35e12), 295.2, "the card: 989 / 3.35, about 295"),
    (
        "decode_intensity_flop_per_byte",
        (32, 8e9, 16e9, 0, 131072),
        32.0,
        "the card: no context, BF16: intensity = batch",
    ),
    (
        "decode_intensity_flop_per_byte",
        (32, 8e9, 16e9, 1000, 128e3),
        25.5,
        "5.12e11 FLOP / 20.1e9 bytes: KV drags it below the batch",
    ),
    ("intensity_limit_flop_per_byte", (8.03e9, 1000, 131072), 122.5, "16.06e9 / (1,000 x 131,072)"),
    ("intensity_limit_flop_per_byte", (8.03e9, 0, 131072), math.inf, "no KV bytes: no limit"),
    ("compute_bound_batch", (8.03e9, 16.06e9, 0, 131072, 295.2), 296, "the card: first batch above 295.2"),
    ("compute_bound_batch", (8.03e9, 16.06e9, 128, 131072, 295.2), 427, "4.741e12 / 11.11e9 = 426.8"),
    ("compute_bound_batch", (8.03e9, 16.06e9, 1000, 131072, 295.2), None, "limit 122.5 < ridge: never"),
    ("context_limit_tokens", (8.03e9, 131072, 295.2), 415.0, "16.06e9 / (295.2 x 131,072)"),
]


def ridge_point_flop_per_byte(peak_flops_per_s, bandwidth_bytes_per_s) -> float:
    """FLOPs the GPU can do in the time it reads one byte (FLOP/byte)."""
    if not peak_flops_per_s > 0 or not bandwidth_bytes_per_s > 0:
        raise ValueError("peak FLOP/s and bandwidth must both be above 0")
    return peak_flops_per_s / bandwidth_bytes_per_s


def decode_intensity_flop_per_byte(batch, parameters, weight_bytes, context_tokens, kv_bytes_per_token):
    """FLOPs per byte read in one decode step of ``batch`` users (FLOP/byte), attention FLOPs left out."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch!r}")
    return batch * 2.0 * parameters / (weight_bytes + batch * context_tokens * kv_bytes_per_token)


def intensity_limit_flop_per_byte(parameters, context_tokens, kv_bytes_per_token) -> float:
    """The intensity a huge batch approaches (FLOP/byte): each user's FLOPs over each user's KV bytes."""
    kv = context_tokens * kv_bytes_per_token
    return math.inf if kv == 0 else 2.0 * parameters / kv


def compute_bound_batch(parameters, weight_bytes, context_tokens, kv_bytes_per_token, ridge_flop_per_byte):
    """Smallest batch whose decode intensity reaches the ridge (users), or None if no batch ever does."""
    spare = 2.0 * parameters - ridge_flop_per_byte * context_tokens * kv_bytes_per_token
    if spare <= 0:
        return None  # each extra user adds too many KV bytes for its FLOPs: the limit is below the ridge
    batch = max(1, math.ceil(ridge_flop_per_byte * weight_bytes / spare))

    def reaches(b):
        return (
            decode_intensity_flop_per_byte(b, parameters, weight_bytes, context_tokens, kv_bytes_per_token)
            >= ridge_flop_per_byte
        )

    # The division above can land a hair off an integer; settle the answer with the definition itself
    # (a few steps at most: rounding moves the quotient by far less than one user).
    for _ in range(8):
        if batch > 1 and reaches(batch - 1):
            batch -= 1
        elif not reaches(batch):
            batch += 1
        else:
            break
    return batch


def context_limit_tokens(parameters, kv_bytes_per_token, ridge_flop_per_byte) -> float:
    """Context at which the intensity limit equals the ridge (tokens): beyond it decode never flips."""
    if not kv_bytes_per_token > 0 or not ridge_flop_per_byte > 0:
        raise ValueError("KV bytes per token and the ridge must be above 0")
    return 2.0 * parameters / (ridge_flop_per_byte * kv_bytes_per_token)


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


def _bytes_per_weight(text: str) -> float:
    key = text.strip().lower()
    if key in BYTES_PER_WEIGHT:
        return BYTES_PER_WEIGHT[key]
    try:
        return _number(key, above=0)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"unknown precision {text!r}: use one of {', '.join(BYTES_PER_WEIGHT)} or a number of bytes"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="The decode batch at which intensity reaches the ridge point, per context length.",
    )
    positive = lambda t: _number(t, above=0)  # noqa: E731
    parser.add_argument(
        "--context",
        nargs="+",
        type=lambda t: _number(t, minimum=0, integer=True),
        default=[0, 128, 256, 400, 512, 1024, 4096],
        metavar="TOKENS",
        help="tokens of KV each user holds; one row each (default: 0 128 256 400 512 1024 4096)",
    )
    parser.add_argument("--params", type=positive, default=8.03e9, help="parameter count (default: 8.03e9)")
    parser.add_argument(
        "--precision",
        type=_bytes_per_weight,
        default=2.0,
        metavar="PRECISION",
        help=f"bytes per weight: {', '.join(BYTES_PER_WEIGHT)} or a number (default: bf16)",
    )
    parser.add_argument(
        "--kv-bytes-per-token",
        type=lambda t: _number(t, minimum=0),
        default=131072.0,
        metavar="BYTES",
        help="KV bytes per token of context (default: 131072, Llama 3 8B BF16)",
    )
    parser.add_argument(
        "--peak-tflops",
        type=positive,
        default=989.0,
        metavar="TFLOPS",
        help="dense peak in the math format you run, TFLOP/s (default: 989, H100 BF16)",
    )
    parser.add_argument(
        "--bandwidth-tb-s",
        type=positive,
        default=3.35,
        metavar="TB_S",
        help="memory bandwidth, TB/s (default: 3.35, an H100 SXM)",
    )
    parser.add_argument(
        "--memory-gb",
        type=positive,
        default=80.0,
        metavar="GB",
        help="memory, GB, to say whether the flip batch fits (default: 80)",
    )
    parser.add_argument("--check", action="store_true", help="check the functions against the card and exit")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.check:
        return _self_check()
    n, k = args.params, args.kv_bytes_per_token
    weights = n * args.precision
    ridge = ridge_point_flop_per_byte(args.peak_tflops * 1e12, args.bandwidth_tb_s * TB)
    memory = args.memory_gb * GB
    print(f"Ridge:   {args.peak_tflops:g} TFLOP/s ÷ {args.bandwidth_tb_s:g} TB/s = {ridge:.1f} FLOP/byte")
    print(
        f"Model:   {n / 1e9:.3g} billion parameters × {args.precision:g} bytes per weight = "
        f"{weights / GB:.4g} GB "
        f"of weights; {k:,.0f} bytes of KV per token"
    )
    per_user = "B" if args.precision == 2 else f"{2 / args.precision:.3g} × B"
    print(f"At no context the intensity is B × 2 × params ÷ weight bytes = {per_user} FLOP/byte.\n")
    print(
        f"  {'context':>8}  {'limit FLOP/B':>12}  {'flips at batch':>14}  {'weights + KV':>12}  "
        f"{'fits ' + format(args.memory_gb, 'g') + ' GB?':>12}"
    )
    for t in args.context:
        limit = intensity_limit_flop_per_byte(n, t, k)
        shown_limit = "none" if math.isinf(limit) else f"{limit:,.1f}"
        flip = compute_bound_batch(n, weights, t, k, ridge)
        if flip is None:
            print(f"  {t:>8,}  {shown_limit:>12}  {'never':>14}  (the limit is below the ridge {ridge:.1f})")
            continue
        need = weights + flip * t * k
        print(
            f"  {t:>8,}  {shown_limit:>12}  {flip:>14,}  {need / GB:>9.1f} GB  "
            f"{'yes' if need <= memory else 'no':>12}"
        )
    if k > 0:
        cut = context_limit_tokens(n, k, ridge)
        print(
            f"\nPast {cut:,.0f} tokens of context (2 × params ÷ (ridge × KV bytes per token)) "
            "every extra user "
            "brings more KV bytes than its FLOPs can cover: intensity levels off below the ridge and "
            "decode stays memory-bound at any batch."
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
