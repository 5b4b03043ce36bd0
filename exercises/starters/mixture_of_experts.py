# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Starter: mixture of experts, experts touched, bytes read and the step (Speed Physics, mixture-of-experts
lesson).

Fill in the three functions below, then run this file. It first checks each function against worked
examples and tells you, function by function, what is ok, what is still to do and what is wrong. Once
every check passes it runs the calculator on your code:

    uv run exercises/starters/mixture_of_experts.py                      # self-check, then the calculator
    uv run exercises/starters/mixture_of_experts.py --batch 1 2 4 8 --context 4096
    uv run exercises/starters/mixture_of_experts.py --check              # self-check only

Every expert is resident, but each token goes through only the k its router picks; a step reads each
expert that any of its tokens picked, once. Work in bytes and seconds. The command line, the printing and
the checks are shared with the worked version, exercises/mixture_of_experts.py (open it when you are
done, or stuck).
"""

from __future__ import annotations


def experts_touched(experts, experts_per_token, tokens):
    """Expected distinct routed experts a layer reads for ``tokens`` tokens each picking k of E (experts)."""
    raise NotImplementedError(
        "TODO: one token misses a given expert with probability 1 - k/E, all n tokens with (1 - k/E)^n; "
        "the expert is touched otherwise. Multiply by E"
    )


def weight_bytes_read(shared_bytes, expert_bytes, experts, experts_per_token, tokens):
    """Weight bytes one step reads (bytes)."""
    raise NotImplementedError("TODO: the shared part once, plus one expert's bytes per expert touched")


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
    """One decode step of ``batch`` users (s)."""
    raise NotImplementedError(
        "TODO: bytes = weights read for `batch` tokens + every user's KV; FLOPs = 2 x active parameters x "
        "batch; the step is the slower of bytes / bandwidth and FLOPs / peak"
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
