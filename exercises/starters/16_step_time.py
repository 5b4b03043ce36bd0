# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Starter: the decode step time for B users (Speed Physics, lesson 16).

Fill in the seven functions below, then run this file. It first checks each function against the study
card's worked example and tells you, function by function, what is ok, what is still to do and what
is wrong. Once every check passes it runs the calculator on your code:

    uv run exercises/starters/16_step_time.py                         # self-check, then the card
    uv run exercises/starters/16_step_time.py --batch 1 8 64 256      # more rows, once the checks pass
    uv run exercises/starters/16_step_time.py --check                 # self-check only

One step gives every user one token. The weights are read once for the whole batch; each user's KV
cache is read for that user only. The step lasts as long as the slower of its memory traffic and its
math (count 2 FLOP per weight per user and leave attention's own FLOPs out). Units: bytes, bytes/s,
FLOP, FLOP/s, seconds. The command line, the printing and the checks are shared with the worked
version, exercises/16_step_time.py (open it when you are done, or stuck).
"""

from __future__ import annotations


def step_bytes(weight_bytes, batch, context_tokens, kv_bytes_per_token) -> float:
    """Bytes one decode step reads (bytes)."""
    raise NotImplementedError(
        "TODO: the weights once (shared), plus batch x context x KV bytes per token (never shared)"
    )


def memory_time_s(bytes_read, bandwidth_bytes_per_s) -> float:
    """Time to stream ``bytes_read`` from memory (s)."""
    raise NotImplementedError("TODO: bytes over bandwidth")


def decode_flops(batch, parameters) -> float:
    """FLOPs of one decode step, attention's context term left out (FLOP)."""
    raise NotImplementedError("TODO: each user's token costs a multiply and an add per parameter")


def compute_time_s(flops, peak_flops_per_s) -> float:
    """Time to do ``flops`` at the peak rate (s)."""
    raise NotImplementedError("TODO: FLOPs over FLOP/s")


def step_time_s(
    weight_bytes,
    batch,
    context_tokens,
    kv_bytes_per_token,
    bandwidth_bytes_per_s,
    parameters,
    peak_flops_per_s,
) -> float:
    """One decode step for ``batch`` users (s)."""
    raise NotImplementedError(
        "TODO: use your four functions above; the step lasts as long as the slower of memory and math"
    )


def tokens_per_s_per_user(step_s) -> float:
    """What one user sees (tokens/s)."""
    raise NotImplementedError("TODO: each user gets one token per step")


def tokens_per_s_total(batch, step_s) -> float:
    """What the GPU produces (tokens/s)."""
    raise NotImplementedError("TODO: every user in the batch gets one token per step")


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
