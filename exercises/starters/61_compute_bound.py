# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Starter: when does decode turn compute-bound? (Speed Physics, lesson 61)

Fill in the five functions below, then run this file. It first checks each function against the study
card's worked example and tells you, function by function, what is ok, what is still to do and what
is wrong. Once every check passes it runs the calculator on your code:

    uv run exercises/starters/61_compute_bound.py                      # self-check, then the card
    uv run exercises/starters/61_compute_bound.py --context 0 64 128   # other contexts, once checks pass
    uv run exercises/starters/61_compute_bound.py --check              # self-check only

The weights are read once per step for the whole batch; every user brings 2 FLOP per parameter and its
own KV bytes. Compare FLOPs per byte with the GPU's ridge point. Leave attention's own FLOPs out. Units:
bytes, bytes/s, FLOP, FLOP/s. The command line, the printing and the checks are shared with the worked
version, exercises/61_compute_bound.py (open it when you are done, or stuck).
"""

from __future__ import annotations

import math  # noqa: F401  (math.inf and math.ceil will be useful)


def ridge_point_flop_per_byte(peak_flops_per_s, bandwidth_bytes_per_s) -> float:
    """FLOPs the GPU can do in the time it reads one byte (FLOP/byte)."""
    raise NotImplementedError("TODO: a FLOP rate divided by a byte rate")


def decode_intensity_flop_per_byte(batch, parameters, weight_bytes, context_tokens, kv_bytes_per_token):
    """FLOPs per byte read in one decode step of ``batch`` users (FLOP/byte)."""
    raise NotImplementedError(
        "TODO: the step's FLOPs (2 per parameter per user) over its bytes (weights once, plus each user's KV)"
    )


def intensity_limit_flop_per_byte(parameters, context_tokens, kv_bytes_per_token) -> float:
    """The intensity a huge batch approaches (FLOP/byte); math.inf when users bring no KV bytes."""
    raise NotImplementedError(
        "TODO: with very many users the shared weights stop mattering: one user's FLOPs over one user's KV"
    )


def compute_bound_batch(parameters, weight_bytes, context_tokens, kv_bytes_per_token, ridge_flop_per_byte):
    """Smallest batch whose intensity reaches the ridge (users, an int), or None if no batch ever does."""
    raise NotImplementedError(
        "TODO: solve B x 2N >= ridge x (W + B x T x kv) for B; None if 2N <= ridge x T x kv, else round up"
    )


def context_limit_tokens(parameters, kv_bytes_per_token, ridge_flop_per_byte) -> float:
    """Context at which the intensity limit equals the ridge (tokens)."""
    raise NotImplementedError("TODO: set the intensity limit equal to the ridge and solve for the context")


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
