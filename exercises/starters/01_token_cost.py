# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Starter: what a million output tokens cost (Speed Physics, lesson 01).

Fill in the three functions below, then run this file. It first checks each function against the study
card's worked example and tells you, function by function, what is ok, what is still to do and what
is wrong. Once every check passes it runs the calculator on your code:

    uv run exercises/starters/01_token_cost.py                # self-check, then the card's example
    uv run exercises/starters/01_token_cost.py 1500 --gpus 8  # your own numbers, once the checks pass
    uv run exercises/starters/01_token_cost.py --check        # self-check only

A rented GPU costs the same every hour, busy or not; a token's price is the hour's bill divided by the
tokens the hour produced. Speeds are in tokens per second, prices in US dollars per GPU-hour. The
command line, the printing and the checks are shared with the worked version,
exercises/01_token_cost.py (open it when you are done, or stuck).
"""

from __future__ import annotations

SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1e6


def tokens_per_hour(tokens_per_s) -> float:
    """Tokens made in one hour at ``tokens_per_s`` (tokens)."""
    raise NotImplementedError("TODO: a rate per second times the number of seconds in an hour")


def seconds_per_million_tokens(tokens_per_s) -> float:
    """Seconds needed to make a million tokens at ``tokens_per_s`` (s)."""
    raise NotImplementedError("TODO: a million tokens divided by the rate; expect 5,000 s at 200 tokens/s")


def cost_per_million_tokens_usd(usd_per_gpu_hour, tokens_per_s, num_gpus=1) -> float:
    """US dollars per million output tokens, for ``num_gpus`` GPUs making ``tokens_per_s`` together."""
    raise NotImplementedError(
        "TODO: the hourly bill of all the GPUs, divided by the tokens made in an hour, times a million"
    )


def _main() -> int:
    import importlib.util
    from pathlib import Path

    # Load the shared checker by path: starters run standalone (PEP 723), outside any package.
    path = Path(__file__).resolve().parents[1] / "_selfcheck.py"
    spec = importlib.util.spec_from_file_location("_selfcheck", path)
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    return checker.run_starter(__file__, globals())


if __name__ == "__main__":
    raise SystemExit(_main())
