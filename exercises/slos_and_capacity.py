# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""A closed-loop benchmark's arithmetic: a request's latency, the rate C clients get through, and why the
TTFT such a benchmark reports is its most fragile number.

Speed Physics, SLOs and capacity lesson (exercise; notebooks/slos_and_capacity.ipynb, and
notebooks/serving_validation.ipynb for what it means for a simulator). The library's versions are
``roofline.sim.validation.request_latency_s`` and the serving simulator's closed loop (``roofline.sim``).

A benchmark at a fixed concurrency (``vllm bench serve --max-concurrency C``, ``aiperf --concurrency C``)
keeps C requests in flight: each client sends its next request the moment its answer ends (or after a
think time). A request waits TTFT for its first token, then n - 1 more tokens at TPOT each:

    request latency    = TTFT + (n - 1) x TPOT                          (s)
    request rate       = C / (request latency + think time)             (requests/s: Little's law)
    output rate        = request rate x n                               (tokens/s)
    TTFT the loop implies = C / request rate - think time - (n - 1) x TPOT    (s)
    TTFT error         = request latency error / TTFT's share of the request, when TPOT is exact

The last two lines are why TTFT under load is fragile: it is what is left of a client's cycle after the
answer, a small difference of large numbers. The example: 16 clients, TTFT 0.2 s, TPOT 10 ms, 200 tokens
per answer. A request takes 0.2 + 199 x 0.01 = 2.19 s, so the server gets through 16 / 2.19 = 7.31
requests/s, 1,461 output tokens/s. TTFT is 9.1 % of the request: a server 5 % faster over the whole
request at the same TPOT (7.67 requests/s) leaves a TTFT of 16 / 7.67 - 1.99 = 0.096 s, half of it.

Run it:

    uv run exercises/slos_and_capacity.py                                # the example above
    uv run exercises/slos_and_capacity.py --clients 64 --ttft-ms 900 --tpot-ms 25 --output-tokens 1000
    uv run exercises/slos_and_capacity.py --measured-rate 7.67           # the TTFT a measured rate implies
    uv run exercises/slos_and_capacity.py --check                        # check the functions

>>> round(request_latency_s(0.2, 0.01, 200), 2), round(requests_per_s(16, 2.19), 2)
(2.19, 7.31)
>>> round(implied_ttft_s(16, 7.6712, 0.01, 200), 4)
0.0957
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

MS = 1e-3

# The functions a learner writes in exercises/starters/slos_and_capacity.py.
PHYSICS = ("request_latency_s", "requests_per_s", "output_tokens_per_s", "implied_ttft_s", "ttft_error")

# (function, arguments, expected, source): worked out by hand.
CHECKS = [
    ("request_latency_s", (0.2, 0.01, 200), 2.19, "0.2 + 199 x 0.01"),
    ("request_latency_s", (0.2, 0.01, 1), 0.2, "a one-token answer is its first token"),
    ("requests_per_s", (16, 2.19), 7.306, "16 / 2.19"),
    ("requests_per_s", (16, 2.19, 0.5), 5.948, "16 / (2.19 + 0.5): clients that pause send less"),
    ("output_tokens_per_s", (7.306, 200), 1461.2, "7.306 x 200"),
    ("implied_ttft_s", (16, 7.3059, 0.01, 200), 0.2, "16 / 7.3059 - 1.99: back to the TTFT"),
    ("implied_ttft_s", (16, 7.6712, 0.01, 200), 0.0957, "5 % more requests/s: 16 / 7.6712 - 1.99"),
    ("ttft_error", (-0.0476, 0.0913), -0.521, "-4.76 % of the request is -52 % of its 9.13 % share"),
]


def _check_answer(output_tokens) -> None:
    if output_tokens != int(output_tokens) or output_tokens < 1:
        raise ValueError(f"an answer has a whole number of tokens, at least 1, got {output_tokens!r}")


def request_latency_s(ttft_s, tpot_s, output_tokens) -> float:
    """A request's latency (s): its first token after ``ttft_s``, then ``output_tokens`` - 1 more at
    ``tpot_s`` each."""
    _check_answer(output_tokens)
    return ttft_s + (output_tokens - 1) * tpot_s


def requests_per_s(clients, latency_s, think_time_s=0.0) -> float:
    """Requests per second that ``clients`` closed-loop clients complete, each waiting ``latency_s`` for its
    answer and ``think_time_s`` before the next request (Little's law)."""
    if clients < 1 or latency_s + think_time_s <= 0:
        raise ValueError("needs at least 1 client and a cycle (latency + think time) above 0 s")
    return clients / (latency_s + think_time_s)


def output_tokens_per_s(requests_per_s_, output_tokens) -> float:
    """Output tokens per second: ``requests_per_s_`` answers of ``output_tokens`` tokens each."""
    _check_answer(output_tokens)
    return requests_per_s_ * output_tokens


def implied_ttft_s(clients, requests_per_s_, tpot_s, output_tokens, think_time_s=0.0) -> float:
    """The TTFT (s) a closed loop of ``clients`` must have had to complete ``requests_per_s_`` requests/s
    with that TPOT: a client's cycle minus its think time and its answer after the first token."""
    _check_answer(output_tokens)
    ttft = clients / requests_per_s_ - think_time_s - (output_tokens - 1) * tpot_s
    if ttft < 0:
        raise ValueError(
            f"{requests_per_s_:g} requests/s is more than {clients} clients can complete at that TPOT and "
            "answer length: the answers alone take longer than the cycles this rate allows"
        )
    return ttft


def ttft_error(latency_error, ttft_share) -> float:
    """The relative TTFT error that a relative ``latency_error`` of the whole request makes when TPOT is
    exact: the whole error lands on TTFT, which is only ``ttft_share`` of the request."""
    if not 0 < ttft_share <= 1:
        raise ValueError(f"TTFT's share of the request must be in (0, 1], got {ttft_share!r}")
    return latency_error / ttft_share


# --- command line -------------------------------------------------------------------------------------


def positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def at_least_zero(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text}")
    return value


def whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="A closed-loop benchmark's arithmetic: request latency, the rate C clients get through, "
        "and how much a small error in either moves the TTFT.",
        epilog="Example: slos_and_capacity.py --clients 16 --ttft-ms 200 --tpot-ms 10 --output-tokens 200",
    )
    parser.add_argument("--clients", type=whole, default=16, help="requests kept in flight, C (default 16)")
    parser.add_argument("--ttft-ms", type=at_least_zero, default=200.0, help="mean TTFT, ms (default 200)")
    parser.add_argument("--tpot-ms", type=at_least_zero, default=10.0, help="mean TPOT, ms (default 10)")
    parser.add_argument("--output-tokens", type=whole, default=200, help="tokens per answer (default 200)")
    parser.add_argument("--think-ms", type=at_least_zero, default=0.0, help="client pause, ms (default 0)")
    parser.add_argument(
        "--measured-rate", type=positive, help="a measured requests/s: print the TTFT the loop implies"
    )
    parser.add_argument("--check", action="store_true", help="check the functions against the example")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.check:
        return _self_check()
    c, n = args.clients, args.output_tokens
    ttft, tpot, think = args.ttft_ms * MS, args.tpot_ms * MS, args.think_ms * MS
    latency = request_latency_s(ttft, tpot, n)
    if latency + think <= 0:
        parser.error("a request must take some time: give a TTFT or a TPOT above 0")
    rate = requests_per_s(c, latency, think)
    print(f"{c} clients, TTFT {ttft / MS:,.1f} ms, TPOT {tpot / MS:,.2f} ms, {n:,} tokens per answer:")
    print(f"  request latency   {ttft / MS:,.1f} + {n - 1:,} x {tpot / MS:,.2f} ms = {latency:,.3f} s")
    print(f"  request rate      {c} / {latency + think:,.3f} s = {rate:,.2f} requests/s")
    print(f"  output rate       {output_tokens_per_s(rate, n):,.0f} tokens/s")
    if ttft > 0:
        share = ttft / latency
        print(f"  TTFT's share      {share:.1%} of the request")
        for e in (0.01, 0.05, 0.10):
            print(f"  a request {e:.0%} off, TPOT exact, puts TTFT {ttft_error(e, share):+.0%} off")
    if args.measured_rate is not None:
        try:
            implied = implied_ttft_s(c, args.measured_rate, tpot, n, think)
        except ValueError as exc:
            parser.error(str(exc))
        print(f"  at {args.measured_rate:g} requests/s the loop implies a TTFT of {implied / MS:,.1f} ms")
    return 0


def _self_check() -> int:
    # Load the shared checker by path: these scripts run standalone (PEP 723), outside any package.
    spec = importlib.util.spec_from_file_location("_selfcheck", Path(__file__).with_name("_selfcheck.py"))
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    return 0 if checker.run_checks(globals(), CHECKS) else 1


if __name__ == "__main__":
    sys.exit(main())
