# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Starter: a closed-loop benchmark's arithmetic (Speed Physics, SLOs and capacity lesson).

Fill in the five functions below, then run this file. It first checks each function against worked
examples and tells you, function by function, what is ok, what is still to do and what is wrong. Once
every check passes it runs the calculator on your code:

    uv run exercises/starters/slos_and_capacity.py                       # self-check, then the calculator
    uv run exercises/starters/slos_and_capacity.py --clients 64 --ttft-ms 900 --tpot-ms 25
    uv run exercises/starters/slos_and_capacity.py --check               # self-check only

C clients keep C requests in flight, each sending its next request when its answer ends. A request waits
TTFT for its first token and TPOT for each of the others. Work in seconds. The command line, the printing
and the checks are shared with the worked version, exercises/slos_and_capacity.py (open it when you are
done, or stuck).
"""

from __future__ import annotations


def request_latency_s(ttft_s, tpot_s, output_tokens) -> float:
    """A request's latency (s): the first token after ``ttft_s``, then the other tokens at ``tpot_s``."""
    raise NotImplementedError("TODO: TTFT plus (output tokens - 1) x TPOT: the first token is TTFT's")


def requests_per_s(clients, latency_s, think_time_s=0.0) -> float:
    """Requests per second that ``clients`` closed-loop clients complete (Little's law)."""
    raise NotImplementedError(
        "TODO: each client completes one request per cycle (latency + think time); C of them in parallel"
    )


def output_tokens_per_s(requests_per_s_, output_tokens) -> float:
    """Output tokens per second of ``requests_per_s_`` answers of ``output_tokens`` tokens."""
    raise NotImplementedError("TODO: requests per second times tokens per answer")


def implied_ttft_s(clients, requests_per_s_, tpot_s, output_tokens, think_time_s=0.0) -> float:
    """The TTFT (s) a closed loop must have had to complete ``requests_per_s_`` with that TPOT."""
    raise NotImplementedError(
        "TODO: a client's cycle is C / rate; take away the think time and the answer after the first token"
    )


def ttft_error(latency_error, ttft_share) -> float:
    """The relative TTFT error a relative request-latency error makes when TPOT is exact."""
    raise NotImplementedError(
        "TODO: the whole error (latency_error x latency) lands on TTFT (ttft_share x latency): divide"
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
