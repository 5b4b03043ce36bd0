# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""What a million output tokens cost when the GPUs are rented by the hour.

Speed Physics, lesson 01 (exercise). The library's version is ``roofline.cost_per_million_tokens_usd``.

The hourly bill is fixed: a rented GPU costs the same whether it streams to one user or to sixty-four.
So the price of a token is the bill for an hour divided by the tokens that hour produced.

    tokens per hour        = tokens/s x 3,600 s per hour
    cost per million (USD) = USD per GPU-hour x G / tokens per hour x 10^6
    seconds per million    = 10^6 / tokens/s      (a power-of-ten check: 10^6 / 200 = 5,000 s, not 500)

Units: prices in US dollars per GPU-hour, speeds in output tokens per second made by all G GPUs
together, times in seconds. The card's case: one H100 at $3 an hour making 200 tokens/s for a single
user costs about $4.17 per million tokens; batched to 4,300 tokens/s, the same hour costs about $0.19
per million, roughly 21x less, because only the number of tokens changed.

Run it:

    uv run exercises/01_token_cost.py                       # the card: $3/h, 200 and 4,300 tokens/s
    uv run exercises/01_token_cost.py 1500 --usd-per-gpu-hour 2.69 --gpus 8
    uv run exercises/01_token_cost.py --check               # compare the functions with the card

>>> tokens_per_hour(200)
720000.0
>>> round(cost_per_million_tokens_usd(3.0, 200), 2)
4.17
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1e6

# The functions a learner writes in exercises/starters/01_token_cost.py.
PHYSICS = ("tokens_per_hour", "seconds_per_million_tokens", "cost_per_million_tokens_usd")

# (function, arguments, expected, source): the card's figures, worked out by hand.
CHECKS = [
    ("tokens_per_hour", (200,), 720_000.0, "the card: 200 x 3,600"),
    ("seconds_per_million_tokens", (200,), 5_000.0, "the card: 10^6 / 200 is 5,000 s, not 500"),
    ("cost_per_million_tokens_usd", (3.0, 200), 4.17, "the card: one user on a $3/h H100"),
    ("cost_per_million_tokens_usd", (3.0, 4300), 0.194, "the card: 64 users batched, about $0.19"),
    ("cost_per_million_tokens_usd", (3.0, 400, 2), 4.17, "two GPUs making twice the tokens: same price"),
]


def _positive(value, name: str) -> float:
    if not value > 0:
        raise ValueError(f"{name} must be above 0, got {value!r}")
    return value


def tokens_per_hour(tokens_per_s) -> float:
    """Tokens made in one hour at ``tokens_per_s`` (tokens)."""
    return _positive(tokens_per_s, "tokens_per_s") * SECONDS_PER_HOUR


def seconds_per_million_tokens(tokens_per_s) -> float:
    """Seconds needed to make a million tokens at ``tokens_per_s`` (s)."""
    return TOKENS_PER_MILLION / _positive(tokens_per_s, "tokens_per_s")


def cost_per_million_tokens_usd(usd_per_gpu_hour, tokens_per_s, num_gpus=1) -> float:
    """US dollars per million output tokens, for ``num_gpus`` GPUs making ``tokens_per_s`` together."""
    if usd_per_gpu_hour < 0:
        raise ValueError(f"usd_per_gpu_hour must be 0 or more, got {usd_per_gpu_hour!r}")
    if num_gpus < 1:
        raise ValueError(f"num_gpus must be at least 1, got {num_gpus!r}")
    usd_per_hour = usd_per_gpu_hour * num_gpus
    return usd_per_hour / tokens_per_hour(tokens_per_s) * TOKENS_PER_MILLION


# --- command line -------------------------------------------------------------------------------------


def _number(minimum=None, above=None, integer=False):
    def parse(text: str):
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            kind = "a whole number" if integer else "a number"
            raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        if above is not None and not value > above:
            raise argparse.ArgumentTypeError(f"must be above {above:g}, got {text!r}")
        if minimum is not None and not value >= minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum:g}, got {text!r}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Cost per million output tokens from a GPU's hourly price and its token rate.",
    )
    parser.add_argument(
        "tokens_per_s",
        nargs="*",
        type=_number(above=0),
        metavar="TOKENS_PER_S",
        help="output tokens per second, all GPUs together (default: the card's 200 and 4300)",
    )
    parser.add_argument(
        "--usd-per-gpu-hour",
        "--price",
        type=_number(minimum=0),
        default=3.0,
        metavar="USD",
        help="rental price of one GPU for one hour, US dollars (default: 3.0)",
    )
    parser.add_argument(
        "--gpus",
        type=_number(minimum=1, integer=True),
        default=1,
        help="GPUs billed together (default: 1)",
    )
    parser.add_argument("--check", action="store_true", help="check the functions against the card and exit")
    return parser


def _usd(x: float) -> str:
    return f"${x:,.2f}" if x >= 0.1 else f"${x:.2g}"


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.check:
        return _self_check()
    rates = args.tokens_per_s or [200.0, 4300.0]
    bill = args.usd_per_gpu_hour * args.gpus
    gpus = "GPU" if args.gpus == 1 else "GPUs"
    print(
        f"Renting {args.gpus} {gpus} at {_usd(args.usd_per_gpu_hour)} per GPU-hour: {_usd(bill)} per hour.\n"
    )
    print(
        f"  {'tokens/s':>10}  {'tokens per hour':>16}  {'s per 1M':>10}  {'h per 1M':>9}  {'USD per 1M':>10}"
    )
    first = None
    for rate in rates:
        cost = cost_per_million_tokens_usd(args.usd_per_gpu_hour, rate, args.gpus)
        seconds = seconds_per_million_tokens(rate)
        note = ""
        if first is None:
            first = (rate, cost)
        elif cost > 0:
            note = (
                f"  {first[1] / cost:.1f}× cheaper than at {first[0]:,.0f} tokens/s"
                if cost < first[1]
                else f"  {cost / first[1]:.1f}× dearer than at {first[0]:,.0f} tokens/s"
            )
        print(
            f"  {rate:>10,.0f}  {tokens_per_hour(rate):>16,.0f}  {seconds:>10,.0f}  "
            f"{seconds / SECONDS_PER_HOUR:>9.3g}  {_usd(cost):>10}{note}"
        )
    print("\nPower-of-ten check, by a second route (hours for a million tokens x dollars per hour):")
    for rate in rates:
        hours = seconds_per_million_tokens(rate) / SECONDS_PER_HOUR
        print(
            f"  10^6 ÷ {rate:,.0f} tokens/s = {seconds_per_million_tokens(rate):,.0f} s = {hours:.3g} h;"
            f"  {hours:.3g} h × {_usd(bill)}/h = {_usd(hours * bill)}"
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
