# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Speculative decoding: tokens per verify step, the verify step's time, and the speed-up per user.

Speed Physics, speculative-decoding lesson (exercise; notebooks/speculative_decoding.ipynb). The library's
versions are ``roofline.physics.speculative.expected_tokens_per_step`` and ``speculative_step`` (which runs
the verify through the step engine, attention included).

A proposer drafts k tokens per user; the target checks them in ONE forward step over k + 1 positions per
user and keeps the drafts up to the first miss, plus one token of its own. With per-token acceptance a:

    expected tokens per verify step  E = 1 + a + a^2 + ... + a^k = (1 - a^(k+1)) / (1 - a)   (k + 1 at a = 1)
    verify step (s)  = max((weights + B x T x KV per token) / bandwidth, 2 x params x B x (k + 1) / peak)
    plain step (s)   = the same with k = 0
    cycle (s)        = k x draft step + verify step
    speed-up         = E x plain step / cycle

Units: bytes, bytes/s, FLOP, FLOP/s, seconds. Attention's own math and the KV the new tokens write are
left out (the library includes them). The example: Llama 3 8B in BF16 (16 GB, 8e9 parameters) on one
H100 (3.35 TB/s, 989 TFLOP/s), k = 4, a = 0.8, a free proposer: at batch 1 and 1,000 tokens the verify
reads 16.13 GB in 4.81 ms, like a plain step, and yields 3.36 tokens: a 3.36x speed-up. At batch 256 with
128-token contexts the verify's 1,280 tokens of math take 20.7 ms against a 6.0 ms plain step: with
a = 0.7 (2.77 tokens) speculation runs at 0.81x, slower than plain decode.

Run it:

    uv run exercises/speculative_decoding.py                             # k = 4, a = 0.8, batches 1 ... 256
    uv run exercises/speculative_decoding.py --acceptance 0.7 --context 128 --batch 1 64 256
    uv run exercises/speculative_decoding.py --draft-cost-ratio 0.2       # a draft costing 0.2 target steps
    uv run exercises/speculative_decoding.py --check                     # check the functions

>>> round(expected_tokens_per_step(0.8, 4), 4)
3.3616
>>> round(verify_step_time_s(16e9, 1, 1000, 4, 128e3, 8e9, 3.35e12, 989e12) * 1e3, 2)
4.81
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

TB = 1e12
GB = 1e9
MS = 1e-3

# The functions a learner writes in exercises/starters/speculative_decoding.py.
PHYSICS = ("expected_tokens_per_step", "verify_step_time_s", "speculative_speedup")

# (function, arguments, expected, source): worked out by hand.
CHECKS = [
    ("expected_tokens_per_step", (0.8, 4), 3.3616, "1 + 0.8 + 0.64 + 0.512 + 0.4096"),
    ("expected_tokens_per_step", (1.0, 4), 5.0, "every draft accepted: k + 1"),
    ("expected_tokens_per_step", (0.0, 4), 1.0, "nothing accepted: the target's own token"),
    ("expected_tokens_per_step", (0.5, 0), 1.0, "no drafts: plain decode"),
    (
        "verify_step_time_s",
        (16e9, 1, 1000, 4, 128e3, 8e9, 3.35e12, 989e12),
        4.814e-3,
        "(16e9 + 1 x 1,000 x 128e3) / 3.35e12; the math, 2 x 8e9 x 5 / 989e12 = 0.08 ms, waits",
    ),
    (
        "verify_step_time_s",
        (16e9, 64, 1000, 4, 128e3, 8e9, 3.35e12, 989e12),
        7.222e-3,
        "(16e9 + 64 x 1,000 x 128e3) / 3.35e12 = 7.22 ms > 2 x 8e9 x 320 / 989e12 = 5.18 ms",
    ),
    (
        "verify_step_time_s",
        (16e9, 256, 128, 4, 128e3, 8e9, 3.35e12, 989e12),
        20.71e-3,
        "compute-bound: 2 x 8e9 x 1,280 / 989e12 = 20.7 ms > (16e9 + 4.19e9) / 3.35e12 = 6.03 ms",
    ),
    (
        "speculative_speedup",
        (0.8, 4, 0.0, 4.8e-3, 4.8e-3),
        3.3616,
        "a free draft, a verify as cheap as a step",
    ),
    ("speculative_speedup", (0.8, 4, 0.5e-3, 4.8e-3, 4.8e-3), 2.373, "3.3616 x 4.8 / (4 x 0.5 + 4.8)"),
    ("speculative_speedup", (0.7, 4, 0.0, 20.71e-3, 6.03e-3), 0.8074, "2.7731 x 6.03 / 20.71: below 1"),
]


def _check_fraction(name, value):
    if not 0 <= value <= 1:
        raise ValueError(f"{name} must be between 0 and 1, got {value!r}")


def expected_tokens_per_step(acceptance, draft_tokens):
    """Expected tokens a user gets from one verify step: 1 + a + ... + a^k (tokens)."""
    _check_fraction("acceptance", acceptance)
    if draft_tokens < 0 or int(draft_tokens) != draft_tokens:
        raise ValueError(f"draft_tokens must be a whole number >= 0, got {draft_tokens!r}")
    if acceptance == 1:
        return float(draft_tokens + 1)
    return (1 - acceptance ** (draft_tokens + 1)) / (1 - acceptance)


def verify_step_time_s(
    weight_bytes,
    batch,
    context_tokens,
    draft_tokens,
    kv_bytes_per_token,
    parameters,
    bandwidth_bytes_per_s,
    peak_flops_per_s,
):
    """One target step over batch x (k + 1) tokens (s): the slower of the bytes and the math."""
    if bandwidth_bytes_per_s <= 0 or peak_flops_per_s <= 0:
        raise ValueError("bandwidth and peak FLOP/s must be above 0")
    if batch < 1 or context_tokens < 0 or draft_tokens < 0:
        raise ValueError("batch must be >= 1, context and draft tokens >= 0")
    memory_s = (weight_bytes + batch * context_tokens * kv_bytes_per_token) / bandwidth_bytes_per_s
    compute_s = 2 * parameters * batch * (draft_tokens + 1) / peak_flops_per_s
    return max(memory_s, compute_s)


def speculative_speedup(acceptance, draft_tokens, draft_step_s, verify_step_s, plain_step_s):
    """Tokens/s per user with speculation over plain decode (x): E x plain / (k x draft + verify)."""
    if verify_step_s <= 0 or plain_step_s <= 0 or draft_step_s < 0:
        raise ValueError("step times must be above 0 (the draft's may be 0)")
    e = expected_tokens_per_step(acceptance, draft_tokens)
    return e * plain_step_s / (draft_tokens * draft_step_s + verify_step_s)


# --- command line -------------------------------------------------------------------------------------


def _number(text: str, *, above=None, minimum=None, maximum=None, integer=False):
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
    if maximum is not None and not value <= maximum:
        raise argparse.ArgumentTypeError(f"must be at most {maximum:g}, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Speculative decoding: tokens per verify step, step times and speed-up per user.",
    )
    parser.add_argument("--acceptance", type=lambda t: _number(t, minimum=0, maximum=1), default=0.8,
                        help="per-token acceptance a, 0 to 1 (default: 0.8)")  # fmt: skip
    parser.add_argument("--draft-tokens", type=lambda t: _number(t, minimum=0, integer=True), default=4,
                        metavar="K", help="drafted tokens per user per step (default: 4)")  # fmt: skip
    parser.add_argument("--draft-cost-ratio", type=lambda t: _number(t, minimum=0), default=0.0, metavar="R",
                        help="one draft step in plain target steps (default: 0, n-gram lookup)")  # fmt: skip
    parser.add_argument("--batch", type=lambda t: _number(t, minimum=1, integer=True), nargs="+",
                        default=[1, 8, 64, 256], help="users in the batch (default: 1 8 64 256)")  # fmt: skip
    parser.add_argument("--context", type=lambda t: _number(t, minimum=0, integer=True), default=1000,
                        metavar="TOKENS", help="tokens in each user's KV cache (default: 1000)")  # fmt: skip
    parser.add_argument("--weight-bytes", type=lambda t: _number(t, minimum=0), default=16e9,
                        metavar="BYTES", help="weight bytes (default: 16e9, Llama 3 8B BF16)")  # fmt: skip
    parser.add_argument("--params", type=lambda t: _number(t, above=0), default=8e9,
                        help="parameters used per token (default: 8e9)")  # fmt: skip
    parser.add_argument("--kv-bytes", type=lambda t: _number(t, minimum=0), default=128e3, metavar="BYTES",
                        help="KV bytes per token (default: 128e3)")  # fmt: skip
    parser.add_argument("--bandwidth-tbps", type=lambda t: _number(t, above=0), default=3.35, metavar="TB/s",
                        help="memory bandwidth, TB/s (default: 3.35, an H100)")  # fmt: skip
    parser.add_argument("--peak-tflops", type=lambda t: _number(t, above=0), default=989.0,
                        metavar="TFLOP/s", help="peak math, TFLOP/s (default: 989, H100 BF16)")  # fmt: skip
    parser.add_argument("--check", action="store_true", help="check the functions and exit")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.check:
        return _self_check()
    a, k, r = args.acceptance, args.draft_tokens, args.draft_cost_ratio
    bw, peak = args.bandwidth_tbps * TB, args.peak_tflops * 1e12
    e = expected_tokens_per_step(a, k)
    print(f"Expected tokens per verify step: (1 - {a:g}^{k + 1}) / (1 - {a:g}) = {e:.4f}" if a < 1 else
          f"Expected tokens per verify step: every draft accepted, k + 1 = {e:g}")  # fmt: skip
    print(f"Draft: {k} steps, each {r:g} x a plain step; context {args.context:,} tokens per user\n")
    head = ("batch", "plain ms", "verify ms", "cycle ms", "tok/s/user", "plain", "speed-up")
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, (6, 9, 10, 9, 11, 7, 9), strict=True)))
    for b in args.batch:
        plain = verify_step_time_s(
            args.weight_bytes, b, args.context, 0, args.kv_bytes, args.params, bw, peak
        )
        verify = verify_step_time_s(
            args.weight_bytes, b, args.context, k, args.kv_bytes, args.params, bw, peak
        )
        draft = r * plain
        cycle = k * draft + verify
        gain = speculative_speedup(a, k, draft, verify, plain)
        print(
            f"{b:>6} {plain / MS:>9.2f} {verify / MS:>10.2f} {cycle / MS:>9.2f} {e / cycle:>11,.0f} "
            f"{1 / plain:>7,.0f} {gain:>8.2f}x"
        )
    return 0


def _self_check() -> int:
    # Load the shared checker by path: these scripts run standalone (PEP 723), outside any package.
    spec = importlib.util.spec_from_file_location("_selfcheck", Path(__file__).with_name("_selfcheck.py"))
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    return 0 if checker.run_checks(globals(), CHECKS, title="Self-check against worked examples:") else 1


if __name__ == "__main__":
    sys.exit(main())
