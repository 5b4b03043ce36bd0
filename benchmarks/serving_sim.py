"""How fast the serving simulator is: 10,000 requests, against a naive loop over every token.

    uv run python benchmarks/serving_sim.py              # about 15 s on a 2-core machine
    uv run python benchmarks/serving_sim.py --naive-requests 10000   # the naive loop on all of them (minutes)

Workload: Llama 3 8B on one H100 SXM (ideal roofline), Poisson arrivals at 50 requests/s (about 70% of the
closed-form sustainable rate), 512 prompt and 128 output tokens, decode-first continuous batching, seed 0.

1. ``roofline.sim.simulate``: one event per batched iteration; a pure-decode stretch (nobody finishing, no
   arrival) is priced in one vectorized call. Median of 3 runs of 10,000 requests, plus the other loads.
2. ``roofline.sim.simulate_naive``: the same rules, walking every token of every request in plain Python.
   Run on the first ``--naive-requests`` requests of the same arrival trace (default 1,000), then
   extrapolated linearly to 10,000; the fast simulator is also timed on exactly that subset, and the two
   must agree on every first-token and finish time (relative 1e-12).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from roofline import sim

MODEL, GPU = "llama-3-8b", "h100-sxm"
RATE, INPUT, OUTPUT, REQUESTS = 50.0, 512, 128, 10_000
TARGET_S = 1.0


def timed(fn, repeats=1):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--naive-requests", type=int, default=1000)
    args = ap.parse_args(argv)

    fast_s, r = timed(
        lambda: sim.simulate(MODEL, GPU, rate_per_s=RATE, requests=REQUESTS, input_tokens=INPUT,
                             output_tokens=OUTPUT, seed=0),
        repeats=3,
    )  # fmt: skip
    print(f"workload: {MODEL} on 1x {GPU}, Poisson {RATE:g} req/s, {INPUT} in / {OUTPUT} out, seed 0")
    print(
        f"fast simulator, {REQUESTS:,} requests: {fast_s:.3f} s  ({r.steps:,} iterations; p99 TTFT "
        f"{r.ttft_s_percentiles['p99'] * 1e3:.1f} ms, p99 TPOT {r.tpot_s_percentiles['p99'] * 1e3:.2f} ms)"
        f"  target <= {TARGET_S:g} s: {'met' if fast_s <= TARGET_S else 'MISSED'}"
    )
    for label, kw in (
        ("closed loop, 64 clients", dict(concurrency=64)),
        ("Poisson 20 req/s", dict(rate_per_s=20.0)),
        ("Poisson 50 req/s, chunks of 256", dict(rate_per_s=RATE, chunk_tokens=256)),
    ):
        s, rr = timed(lambda kw=kw: sim.simulate(MODEL, GPU, requests=REQUESTS, input_tokens=INPUT,
                                                 output_tokens=OUTPUT, **kw))  # fmt: skip
        print(f"  other load, {label}: {s:.3f} s ({rr.steps:,} iterations)")

    k = min(args.naive_requests, REQUESTS)
    trace = dict(
        arrival_s=r.arrival_s[:k], input_tokens=r.input_tokens[:k], output_tokens=r.output_tokens[:k]
    )
    fast_k_s, fk = timed(lambda: sim.simulate(MODEL, GPU, trace=trace, requests=k), repeats=3)
    naive_s, nk = timed(lambda: sim.simulate_naive(MODEL, GPU, **trace))
    np.testing.assert_allclose(fk.first_token_s, nk["first_token_s"], rtol=1e-12)
    np.testing.assert_allclose(fk.finish_s, nk["finish_s"], rtol=1e-12)
    assert fk.steps == nk["steps"]
    naive_10k_s = naive_s * REQUESTS / k
    print(
        f"naive per-token loop, first {k:,} requests: {naive_s:.2f} s; "
        f"fast simulator on the same: {fast_k_s:.3f} s"
    )
    print(
        f"  same answer: every first-token and finish time equal (rel 1e-12), {nk['steps']:,} iterations each"
    )
    if k < REQUESTS:
        print(f"  naive loop extrapolated to {REQUESTS:,} requests: {naive_10k_s:.1f} s")
    print(
        f"speed-up at {k:,} requests: {naive_s / fast_k_s:.0f}x; at {REQUESTS:,}: {naive_10k_s / fast_s:.0f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
