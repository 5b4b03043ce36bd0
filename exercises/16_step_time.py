# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""How long one decode step takes when B users share it, and what each user and the GPU get out of it.

Speed Physics, lesson 16 (exercise). The library's versions are ``roofline.batched_step_time_s`` (the
memory side in plain numbers) and ``roofline.decode_step`` (the full model, for real architectures).

In one decode step every user in the batch gets one new token. The weights are streamed from memory
once and shared by the whole batch; each user's KV cache is read for that user alone. The step lasts as
long as the slower of the memory traffic and the math:

    bytes    = weight bytes + B x T x KV bytes per token          (bytes)
    FLOPs    = B x 2 x parameters                                 (FLOP: a multiply and an add per weight)
    step (s) = max(bytes / bandwidth, FLOPs / peak FLOP/s)
    per user = 1 / step          total = B / step                 (tokens/s)

The FLOP count leaves out attention's own math (reading T earlier tokens costs about
4 x layers x heads x head dim x T FLOP per new token). That term grows with context, so this model is a
little optimistic where the math binds; ``roofline.decode_step`` includes it. Units: bytes, bytes/s,
FLOP, FLOP/s, seconds. The card's case: 16 GB of BF16 weights on an H100 (3.35 TB/s), 32 users holding
1,000 tokens of KV each at 128 KB per token. The step reads 16 + 4.1 GB, so it takes about 6.0 ms; each
user gets about 167 tokens/s (25 % slower than alone) while the GPU makes about 5,300 tokens/s, some
25x what one user gets, not 32x, because the step also got 1.25x longer.

Why ``roofline step`` gives a little less than this exercise: the card simplifies. It counts all 8e9
parameters as read every step (16 GB), embedding table included, and 128 KB as 128,000 bytes. A real
decode step gathers one row of the 128,256 x 4,096 embedding table per user instead of reading all of it
(1.05 GB less), and Llama 3 8B's KV is 131,072 bytes per token. So for one user at 4,096 tokens this
exercise says (16 + 0.52) GB / 3.35 TB/s = 4.93 ms and ``roofline step --model llama-3-8b --gpu h100-sxm
--context 4096`` says (15.01 + 0.54) GB / 3.35 TB/s = 4.64 ms. Same physics, different bookkeeping.

Run it:

    uv run exercises/16_step_time.py                         # the card: 32 users x 1,000 tokens
    uv run exercises/16_step_time.py --batch 1 8 64 256 --context 4096
    uv run exercises/16_step_time.py --check                 # compare the functions with the card

>>> round(step_time_s(16e9, 32, 1000, 128e3, 3.35e12, 8e9, 989e12) * 1e3, 1)
6.0
"""

from __future__ import annotations

import argparse
import importlib.util
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

# The functions a learner writes in exercises/starters/16_step_time.py.
PHYSICS = (
    "step_bytes",
    "memory_time_s",
    "decode_flops",
    "compute_time_s",
    "step_time_s",
    "tokens_per_s_per_user",
    "tokens_per_s_total",
)

# (function, arguments, expected, source): the card's figures, worked out by hand.
CHECKS = [
    ("step_bytes", (16e9, 32, 1000, 128e3), 20.1e9, "the card: 16 GB + 32 x 1,000 x 128 KB = 20.1 GB"),
    ("memory_time_s", (20.1e9, 3.35e12), 6.0e-3, "the card: 20.1 GB / 3.35 TB/s"),
    ("decode_flops", (32, 8e9), 5.12e11, "32 users x 2 FLOP x 8e9 weights"),
    ("compute_time_s", (5.12e11, 989e12), 0.518e-3, "5.12e11 FLOP / 989 TFLOP/s, well under 6 ms"),
    ("step_time_s", (16e9, 32, 1000, 128e3, 3.35e12, 8e9, 989e12), 6.0e-3, "the card: about 6.0 ms"),
    ("step_time_s", (16e9, 1, 0, 128e3, 3.35e12, 8e9, 989e12), 4.78e-3, "the card: one user, 4.8 ms"),
    ("tokens_per_s_per_user", (6.0e-3,), 167.0, "the card: 1 / 6.0 ms"),
    ("tokens_per_s_total", (32, 6.0e-3), 5330.0, "the card: 32 / 6.0 ms, about 5,300"),
]


def step_bytes(weight_bytes, batch, context_tokens, kv_bytes_per_token) -> float:
    """Bytes one decode step reads (bytes): the weights once, plus every user's own KV cache."""
    if batch < 1 or context_tokens < 0 or kv_bytes_per_token < 0 or weight_bytes < 0:
        raise ValueError("need batch >= 1 and non-negative weights, context and KV bytes per token")
    return weight_bytes + batch * context_tokens * kv_bytes_per_token


def memory_time_s(bytes_read, bandwidth_bytes_per_s) -> float:
    """Time to stream ``bytes_read`` from memory (s)."""
    if not bandwidth_bytes_per_s > 0:
        raise ValueError(f"bandwidth must be above 0 bytes/s, got {bandwidth_bytes_per_s!r}")
    return bytes_read / bandwidth_bytes_per_s


def decode_flops(batch, parameters) -> float:
    """FLOPs of one decode step without attention's context term (FLOP): 2 per weight per user."""
    return batch * 2.0 * parameters


def compute_time_s(flops, peak_flops_per_s) -> float:
    """Time to do ``flops`` at the peak rate (s)."""
    if not peak_flops_per_s > 0:
        raise ValueError(f"peak FLOP/s must be above 0, got {peak_flops_per_s!r}")
    return flops / peak_flops_per_s


def step_time_s(
    weight_bytes,
    batch,
    context_tokens,
    kv_bytes_per_token,
    bandwidth_bytes_per_s,
    parameters,
    peak_flops_per_s,
) -> float:
    """One decode step for ``batch`` users (s): the slower of reading the bytes and doing the math."""
    memory = memory_time_s(
        step_bytes(weight_bytes, batch, context_tokens, kv_bytes_per_token), bandwidth_bytes_per_s
    )
    compute = compute_time_s(decode_flops(batch, parameters), peak_flops_per_s)
    return max(memory, compute)


def tokens_per_s_per_user(step_s) -> float:
    """What one user sees (tokens/s): one token per step."""
    return 1.0 / step_s


def tokens_per_s_total(batch, step_s) -> float:
    """What the GPU produces (tokens/s): one token per user per step."""
    return batch / step_s


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
        description="Decode step time for B users, max(bytes / bandwidth, FLOPs / peak), and token rates.",
    )
    positive = lambda t: _number(t, above=0)  # noqa: E731
    parser.add_argument(
        "--batch",
        nargs="+",
        type=lambda t: _number(t, minimum=1, integer=True),
        default=[32],
        help="users decoding together; several values give several rows (default: 32)",
    )
    parser.add_argument(
        "--context",
        type=lambda t: _number(t, minimum=0),
        default=1000,
        metavar="TOKENS",
        help="tokens of KV cache each user holds (default: 1000)",
    )
    parser.add_argument("--params", type=positive, default=8e9, help="parameter count (default: 8e9)")
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
        default=128e3,
        metavar="BYTES",
        help="KV-cache bytes per token of context (default: 128e3, the card's "
        "128 KB; Llama 3 8B in BF16 is exactly 131072)",
    )
    parser.add_argument(
        "--bandwidth-tb-s",
        type=positive,
        default=3.35,
        metavar="TB_S",
        help="memory bandwidth, TB/s (default: 3.35, an H100 SXM)",
    )
    parser.add_argument(
        "--peak-tflops",
        type=positive,
        default=989.0,
        metavar="TFLOPS",
        help="dense peak for the math format, TFLOP/s (default: 989, H100 BF16)",
    )
    parser.add_argument("--check", action="store_true", help="check the functions against the card and exit")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.check:
        return _self_check()
    weights = args.params * args.precision
    bandwidth, peak = args.bandwidth_tb_s * TB, args.peak_tflops * 1e12
    t, kv = args.context, args.kv_bytes_per_token
    print(
        f"Weights: {args.params / 1e9:.3g} billion parameters × {args.precision:g} bytes = "
        f"{weights / GB:.3g} GB, "
        "read once per step and shared by the batch"
    )
    print(
        f"KV:      {kv:,.0f} bytes per token × {t:,.0f} tokens = {kv * t / GB:.3g} GB per user, "
        "read for that user alone"
    )
    print(
        f"GPU:     {args.bandwidth_tb_s:g} TB/s, {args.peak_tflops:g} TFLOP/s "
        "(attention FLOPs left out of the math)\n"
    )

    def row(b):
        nbytes = step_bytes(weights, b, t, kv)
        mem = memory_time_s(nbytes, bandwidth)
        comp = compute_time_s(decode_flops(b, args.params), peak)
        step = step_time_s(weights, b, t, kv, bandwidth, args.params, peak)
        return nbytes, mem, comp, step

    base_step = row(1)[3]
    base_total = tokens_per_s_total(1, base_step)
    print(
        f"  {'batch':>6}  {'GB read':>8}  {'memory ms':>9}  {'compute ms':>10}  {'step ms':>8}  "
        f"{'bound':>7}  "
        f"{'tok/s/user':>10}  {'tok/s total':>11}  {'vs batch 1':>10}"
    )
    batches = [1] + [b for b in args.batch if b != 1]
    for b in batches:
        nbytes, mem, comp, step = row(b)
        total = tokens_per_s_total(b, step)
        print(
            f"  {b:>6,}  {nbytes / GB:>8.1f}  {mem * 1e3:>9.2f}  {comp * 1e3:>10.2f}  {step * 1e3:>8.2f}  "
            f"{'compute' if comp > mem else 'memory':>7}  {tokens_per_s_per_user(step):>10,.0f}  "
            f"{total:>11,.0f}  {total / base_total:>9.1f}×"
        )
    b = batches[-1]
    if b > 1:
        step = row(b)[3]
        longer = step / base_step
        print(
            f"\nAt batch {b:,}: a step takes {step * 1e3:.2f} ms instead of {base_step * 1e3:.2f} ms "
            f"({longer:.2f}× longer)."
        )
        print(
            f"  Each user gets 1 ÷ {step * 1e3:.2f} ms = {tokens_per_s_per_user(step):,.0f} tokens/s, "
            f"{longer:.2f}× slower than alone, not {b:,}× slower."
        )
        print(
            f"  The GPU makes {b:,} ÷ {step * 1e3:.2f} ms = {tokens_per_s_total(b, step):,.0f} tokens/s, "
            f"{b:,} ÷ {longer:.3f} = {tokens_per_s_total(b, step) / base_total:.1f}× batch 1."
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
