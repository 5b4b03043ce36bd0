# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Starter: speculative decoding, tokens per verify step and the speed-up (Speed Physics, speculative
decoding lesson).

Fill in the three functions below, then run this file. It first checks each function against worked
examples and tells you, function by function, what is ok, what is still to do and what is wrong. Once
every check passes it runs the calculator on your code:

    uv run exercises/starters/speculative_decoding.py                     # self-check, then the calculator
    uv run exercises/starters/speculative_decoding.py --acceptance 0.7 --context 128 --batch 1 64 256
    uv run exercises/starters/speculative_decoding.py --check             # self-check only

A proposer drafts k tokens; the target checks all of them in one step over k + 1 positions per user and
keeps the drafts up to the first miss, plus one token of its own. Work in seconds and bytes. The command
line, the printing and the checks are shared with the worked version, exercises/speculative_decoding.py
(open it when you are done, or stuck).
"""

from __future__ import annotations


def expected_tokens_per_step(acceptance, draft_tokens):
    """Expected tokens a user gets from one verify step (tokens)."""
    raise NotImplementedError(
        "TODO: draft i survives only if all i drafts before it did: 1 + a + a^2 + ... + a^k "
        "(a closed form: (1 - a^(k+1)) / (1 - a); careful at a = 1)"
    )


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
    """One target step over batch x (k + 1) tokens (s)."""
    raise NotImplementedError(
        "TODO: the weights and every user's KV are read once; the math is 2 x parameters per token for "
        "batch x (k + 1) tokens; the step is the slower of the two"
    )


def speculative_speedup(acceptance, draft_tokens, draft_step_s, verify_step_s, plain_step_s):
    """Tokens/s per user with speculation over plain decode (x)."""
    raise NotImplementedError(
        "TODO: E tokens per cycle of k draft steps plus one verify, against 1 token per plain step"
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
