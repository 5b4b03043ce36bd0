# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Mixture of experts: how many experts a step touches, the weight bytes it reads, and its step time.

Speed Physics, mixture-of-experts lesson (exercise; notebooks/mixture_of_experts.ipynb). The library's
versions are ``roofline.expected_experts_touched``, ``roofline.weight_bytes_read`` and
``roofline.decode_step``.

All E experts are resident, but a token only goes through the k its router picks. A step of n tokens
(B users x 1 new token in decode) reads the experts that any of its tokens picked; with routing uniform and
independent, an expert is missed by one token with probability 1 - k/E, by all n with (1 - k/E)^n:

    experts touched   = E x (1 - (1 - k/E)^n)                          (per layer, on average)
    weight bytes read = shared bytes + bytes of one expert x experts touched
    step (s)          = max((weight bytes read + B x T x KV per token) / bandwidth,
                            2 x active parameters x B / peak FLOP/s)

"Shared bytes" are everything outside the routed experts (attention, embeddings, norms, router, any
shared expert); "bytes of one expert" is one expert's MLP in every layer. Units: bytes, bytes/s, FLOP,
FLOP/s, seconds. The example: Mixtral 8x7B in BF16 (3.2 GB shared, 11.27 GB per expert, 12.9e9 active
parameters, 2 of 8 experts) on two H100s (6.7 TB/s, 1,978 TFLOP/s). One user reads 3.2 + 2 x 11.27 =
25.7 GB per step: 3.86 ms at 1,000 tokens of context. Eight users touch 7.2 of the 8 experts: 84.3 GB
of weights plus their KV, 12.74 ms per step, 3.3x slower for each of them.

Run it:

    uv run exercises/mixture_of_experts.py                            # Mixtral on two H100s
    uv run exercises/mixture_of_experts.py --batch 1 2 4 8 --context 4096
    uv run exercises/mixture_of_experts.py --experts 256 --experts-per-token 8 --shared-gb 30 \\
        --expert-gb 2.55 --active-params 37e9 --gpus 8 --bandwidth-tbps 4.8   # DeepSeek-V3-like, FP8
    uv run exercises/mixture_of_experts.py --check                    # check the functions

>>> round(experts_touched(8, 2, 8), 2)
7.2
>>> weight_bytes_read(3.2e9, 11.27e9, 8, 2, 1) / 1e9
25.74
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

TB = 1e12
GB = 1e9
MS = 1e-3

# The functions a learner writes in exercises/starters/mixture_of_experts.py.
PHYSICS = ("experts_touched", "weight_bytes_read", "moe_step_time_s")

# (function, arguments, expected, source): worked out by hand.
CHECKS = [
    ("experts_touched", (8, 2, 1), 2.0, "one token reads its k = 2 experts"),
    ("experts_touched", (8, 2, 8), 7.199, "8 x (1 - 0.75^8) = 8 x (1 - 0.1001)"),
    ("experts_touched", (256, 8, 64), 222.4, "256 x (1 - (248/256)^64) = 256 x (1 - 0.1311)"),
    ("experts_touched", (8, 2, 1000), 8.0, "a large batch reads every expert"),
    ("weight_bytes_read", (3.2e9, 11.27e9, 8, 2, 1), 25.74e9, "3.2e9 + 2 x 11.27e9"),
    ("weight_bytes_read", (3.2e9, 11.27e9, 8, 2, 8), 84.33e9, "3.2e9 + 7.199 x 11.27e9"),
    (
        "moe_step_time_s",
        (3.2e9, 11.27e9, 8, 2, 1, 1000, 131072, 12.9e9, 6.7e12, 1978e12),
        3.861e-3,
        "(25.74e9 + 1,000 x 131,072) / 6.7e12; the math, 2 x 12.9e9 / 1.978e15, is 0.013 ms",
    ),
    (
        "moe_step_time_s",
        (3.2e9, 11.27e9, 8, 2, 8, 1000, 131072, 12.9e9, 6.7e12, 1978e12),
        12.74e-3,
        "(84.33e9 + 8 x 1,000 x 131,072) / 6.7e12",
    ),
]


def experts_touched(experts, experts_per_token, tokens):
    """Expected distinct routed experts a layer reads for ``tokens`` tokens each picking k of E (experts)."""
    if experts < 1 or not 1 <= experts_per_token <= experts or tokens < 1:
        raise ValueError("need experts >= 1, 1 <= experts_per_token <= experts, tokens >= 1")
    return experts * (1 - (1 - experts_per_token / experts) ** tokens)


def weight_bytes_read(shared_bytes, expert_bytes, experts, experts_per_token, tokens):
    """Weight bytes one step reads (bytes): the shared part plus every touched expert once."""
    if shared_bytes < 0 or expert_bytes < 0:
        raise ValueError("byte counts must be 0 or more")
    return shared_bytes + expert_bytes * experts_touched(experts, experts_per_token, tokens)


def moe_step_time_s(
    shared_bytes,
    expert_bytes,
    experts,
    experts_per_token,
    batch,
    context_tokens,
    kv_bytes_per_token,
    active_parameters,
    bandwidth_bytes_per_s,
    peak_flops_per_s,
):
    """One decode step of ``batch`` users (s): the slower of the bytes read and the active math."""
    if bandwidth_bytes_per_s <= 0 or peak_flops_per_s <= 0:
        raise ValueError("bandwidth and peak FLOP/s must be above 0")
    if context_tokens < 0 or kv_bytes_per_token < 0:
        raise ValueError("context and KV bytes must be 0 or more")
    weights = weight_bytes_read(shared_bytes, expert_bytes, experts, experts_per_token, batch)
    memory_s = (weights + batch * context_tokens * kv_bytes_per_token) / bandwidth_bytes_per_s
    compute_s = 2 * active_parameters * batch / peak_flops_per_s
    return max(memory_s, compute_s)


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Mixture of experts: experts touched, weight bytes read and step time against batch.",
    )
    count = lambda t: _number(t, minimum=1, integer=True)  # noqa: E731
    parser.add_argument("--experts", type=count, default=8, metavar="E", help="routed experts (default: 8)")
    parser.add_argument("--experts-per-token", type=count, default=2, metavar="K", help="k (default 2)")
    parser.add_argument("--shared-gb", type=lambda t: _number(t, minimum=0), default=3.2, metavar="GB",
                        help="weights outside the routed experts, GB (default: 3.2)")  # fmt: skip
    parser.add_argument("--expert-gb", type=lambda t: _number(t, minimum=0), default=11.27, metavar="GB",
                        help="one expert in every layer, GB (default: 11.27)")  # fmt: skip
    parser.add_argument("--active-params", type=lambda t: _number(t, above=0), default=12.9e9,
                        help="parameters one token uses (default: 12.9e9)")  # fmt: skip
    parser.add_argument("--batch", type=count, nargs="+", default=[1, 2, 8, 64, 256],
                        help="users decoding together (default: 1 2 8 64 256)")  # fmt: skip
    parser.add_argument("--context", type=lambda t: _number(t, minimum=0, integer=True), default=1000,
                        metavar="TOKENS", help="tokens per user (default: 1000)")  # fmt: skip
    parser.add_argument("--kv-bytes", type=lambda t: _number(t, minimum=0), default=131072, metavar="BYTES",
                        help="KV bytes per token (default: 131072)")  # fmt: skip
    parser.add_argument("--gpus", type=count, default=2, help="GPUs in tensor parallel (default: 2)")
    parser.add_argument("--bandwidth-tbps", type=lambda t: _number(t, above=0), default=3.35, metavar="TB/s",
                        help="bandwidth per GPU, TB/s (default: 3.35)")  # fmt: skip
    parser.add_argument("--peak-tflops", type=lambda t: _number(t, above=0), default=989.0,
                        metavar="TFLOP/s", help="peak math per GPU, TFLOP/s (default: 989)")  # fmt: skip
    parser.add_argument("--check", action="store_true", help="check the functions and exit")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.check:
        return _self_check()
    if args.experts_per_token > args.experts:
        build_parser().error("--experts-per-token cannot exceed --experts")
    e, k = args.experts, args.experts_per_token
    shared, expert = args.shared_gb * GB, args.expert_gb * GB
    bw, peak = args.gpus * args.bandwidth_tbps * TB, args.gpus * args.peak_tflops * 1e12
    resident = shared + e * expert
    print(f"Resident: {shared / GB:g} GB shared + {e} x {expert / GB:g} GB experts = {resident / GB:.1f} GB")
    print(f"One token reads {shared / GB:g} + {k} x {expert / GB:g} = {(shared + k * expert) / GB:.1f} GB\n")
    head = ("batch", "touched", "read GB", "step ms", "tok/s/user", "tok/s total")
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, (6, 8, 8, 8, 11, 12), strict=True)))
    for b in args.batch:
        touched = experts_touched(e, k, b)
        read = weight_bytes_read(shared, expert, e, k, b)
        step = moe_step_time_s(
            shared, expert, e, k, b, args.context, args.kv_bytes, args.active_params, bw, peak
        )
        row = f"{b:>6} {touched:>8.2f} {read / GB:>8.1f} {step / MS:>8.2f}"
        print(f"{row} {1 / step:>11,.0f} {b / step:>12,.0f}")
    return 0


def _self_check() -> int:
    # Load the shared checker by path: these scripts run standalone (PEP 723), outside any package.
    spec = importlib.util.spec_from_file_location("_selfcheck", Path(__file__).with_name("_selfcheck.py"))
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    return 0 if checker.run_checks(globals(), CHECKS, title="Self-check against worked examples:") else 1


if __name__ == "__main__":
    sys.exit(main())
