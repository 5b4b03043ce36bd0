# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Starter: KV-cache bytes and the largest batch that fits (Speed Physics, lesson 28).

Fill in the three functions below, then run this file. It first checks each function against the study
card's worked example and tells you, function by function, what is ok, what is still to do and what
is wrong. Once every check passes it runs the calculator on your code:

    uv run exercises/starters/28_kv_cache.py                          # self-check, then the card
    uv run exercises/starters/28_kv_cache.py --context 32768 --batch 8
    uv run exercises/starters/28_kv_cache.py --check                  # self-check only

Each token in a user's context keeps a key and a value vector in every layer, one per KV head. Work in
bytes. The command line, the printing and the checks are shared with the worked version,
exercises/28_kv_cache.py (open it when you are done, or stuck).
"""

from __future__ import annotations

import math  # noqa: F401  (math.floor may help with the last function)


def kv_bytes_per_token(layers, kv_heads, head_dim, bytes_per_element):
    """KV-cache bytes one token of context takes (bytes)."""
    raise NotImplementedError(
        "TODO: K and V (2), in every layer, for every KV head, head_dim values of bytes_per_element each"
    )


def kv_cache_bytes(batch, context_tokens, kv_bytes_per_token_):
    """KV-cache bytes of ``batch`` users holding ``context_tokens`` tokens each (bytes)."""
    raise NotImplementedError("TODO: nothing is shared between users: users x tokens x bytes per token")


def max_batch_users(weight_bytes, memory_bytes, context_tokens, kv_bytes_per_token_) -> int:
    """Most users with ``context_tokens`` each whose KV fits in the memory the weights leave (users)."""
    raise NotImplementedError(
        "TODO: memory left after the weights (never below 0) divided by one user's KV, rounded down"
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
