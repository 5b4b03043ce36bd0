# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Starter: the decode floor and the speed ceiling at batch 1 (Speed Physics, lesson 02).

Fill in the five functions below, then run this file. It first checks each function against the study
card's worked example and tells you, function by function, what is ok, what is still to do and what
is wrong. Once every check passes it runs the calculator on your code:

    uv run exercises/starters/02_decode_floor.py                        # self-check, then the card
    uv run exercises/starters/02_decode_floor.py 8.03e9 --precision bf16 --gpus 1
    uv run exercises/starters/02_decode_floor.py --check                # self-check only

At batch 1 every decode step reads all the weights once, so no step can beat weight bytes divided by
memory bandwidth. Work in bytes, bytes/s and seconds. The command line, the precision table, the
printing and the checks are shared with the worked version, exercises/02_decode_floor.py (open it when
you are done, or stuck).
"""

from __future__ import annotations


def weight_bytes(parameters, bytes_per_weight_) -> float:
    """Bytes of all the weights (bytes)."""
    raise NotImplementedError("TODO: every parameter is stored in bytes_per_weight_ bytes")


def total_bandwidth_bytes_per_s(bandwidth_per_gpu_bytes_per_s, num_gpus=1) -> float:
    """Memory bandwidth of ``num_gpus`` GPUs reading their slices of the weights at once (bytes/s)."""
    raise NotImplementedError(
        "TODO: with tensor parallelism each GPU reads its own slice at the same time, so bandwidths add"
    )


def decode_floor_s(weight_bytes_, bandwidth_bytes_per_s) -> float:
    """Shortest possible batch-1 decode step (s)."""
    raise NotImplementedError(
        "TODO: bytes go over a bandwidth in bytes/s, never over FLOP/s; the answer is in s"
    )


def decode_ceiling_tokens_per_s(floor_s) -> float:
    """Highest possible speed for one user (tokens/s)."""
    raise NotImplementedError("TODO: one token per step, and a step takes at least floor_s seconds")


def mbu(floor_s, measured_step_s) -> float:
    """Memory-bandwidth utilization (a fraction, 0 to 1 for an honest measurement)."""
    raise NotImplementedError("TODO: how much of the measured step the unavoidable weight read explains")


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
