"""How fast the serving simulator is: 10,000 requests, against a naive loop over every token.

    uv run python -m benchmarks.serving_sim              # about 10 s on a quiet 2-core machine
    uv run python -m benchmarks.serving_sim --naive-requests 10000   # the naive loop on all of them (minutes)
    uv run python -m benchmarks.serving_sim --million    # also 10^6 requests: time and peak memory (~1 min)
    uv run python -m benchmarks.serving_sim --smoke      # a few hundred requests: that it runs (CI)

Workload: Llama 3 8B on one H100 SXM (ideal roofline), Poisson arrivals at 50 requests/s (about 70% of the
closed-form sustainable rate), 512 prompt and 128 output tokens, decode-first continuous batching, seed 0.

1. ``roofline.sim.simulate``: one event per batched iteration, O(1) work for all decoders of a step; a
   pure-decode stretch (nobody finishing, no arrival) is priced in one vectorized call. Median of 3 runs of
   10,000 requests (wall-clock and CPU time of this process), plus other loads.
2. ``simulate_naive`` (tests/naive_simulator.py): the same rules, walking every token of every request in
   plain Python.
   Run on the first ``--naive-requests`` requests of the same arrival trace (default 1,000), then
   extrapolated linearly to 10,000; the fast simulator is also timed on exactly that subset, and the two
   must agree on every first-token and finish time (relative 1e-12).
3. With ``--million``: 10^6 requests of the same load once (goal: under a minute, memory bounded: per-request
   arrays plus a timeline capped at ``roofline.sim.loop.TIMELINE_LIMIT`` steps), with the process's peak
   resident memory.
4. Each engine's scheduler (``roofline.sim.engine_policy``) on the ideal step times, 10,000 requests.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

import numpy as np

from roofline import sim
from roofline.data import engines
from tests.naive_simulator import simulate_naive

MODEL, GPU = "llama-3-8b", "h100-sxm"
RATE, INPUT, OUTPUT, REQUESTS = 50.0, 512, 128, 10_000
TARGET_S = 1.0


def timed(fn, repeats=1):
    """Median wall-clock and CPU seconds of ``fn()`` over ``repeats`` runs, and its last result. On a shared
    machine the CPU time (this process only) is the steadier figure; the target is judged on wall time."""
    wall, cpu, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--naive-requests", type=int, default=1000)
    ap.add_argument("--million", action="store_true", help="also time 10^6 requests once")
    ap.add_argument("--smoke", action="store_true", help="300 requests, 30 for the naive loop: seconds (CI)")
    args = ap.parse_args(argv)
    global REQUESTS
    if args.smoke:
        REQUESTS, args.naive_requests = 300, 30

    fast_s, fast_cpu_s, r = timed(
        lambda: sim.simulate(
            sim.SimConfig(
                MODEL, GPU, rate_per_s=RATE, requests=REQUESTS, input_tokens=INPUT, output_tokens=OUTPUT
            )
        ),
        repeats=3,
    )  # fmt: skip
    print(f"workload: {MODEL} on 1x {GPU}, Poisson {RATE:g} req/s, {INPUT} in / {OUTPUT} out, seed 0")
    load1 = os.getloadavg()[0]
    print(
        f"machine: {os.cpu_count()} cores, load average {load1:.1f} "
        "(wall times stretch when it exceeds the cores)"
    )
    print(
        f"fast simulator, {REQUESTS:,} requests: {fast_s:.3f} s wall, {fast_cpu_s:.3f} s CPU  "
        f"({r.steps:,} iterations; p99 TTFT "
        f"{r.ttft_s_percentiles['p99'] * 1e3:.1f} ms, p99 TPOT {r.tpot_s_percentiles['p99'] * 1e3:.2f} ms)"
        f"  target <= {TARGET_S:g} s: wall {'met' if fast_s <= TARGET_S else 'missed'}, "
        f"CPU {'met' if fast_cpu_s <= TARGET_S else 'missed'}"
    )
    for label, kw in (
        ("closed loop, 64 clients", dict(concurrency=64)),
        ("Poisson 20 req/s", dict(rate_per_s=20.0)),
        ("Poisson 50 req/s, chunks of 256", dict(rate_per_s=RATE, chunk_tokens=256)),
    ):
        s, cs, rr = timed(
            lambda kw=kw: sim.simulate(
                sim.SimConfig(MODEL, GPU, requests=REQUESTS, input_tokens=INPUT, output_tokens=OUTPUT, **kw)
            )
        )
        print(f"  other load, {label}: {s:.3f} s wall, {cs:.3f} s CPU ({rr.steps:,} iterations)")
    load = dict(rate_per_s=RATE, input_tokens=INPUT, output_tokens=OUTPUT, seed=0)
    for engine in engines():
        s, cs, rr = timed(
            lambda e=engine: sim.simulate(sim.SimConfig(MODEL, GPU, requests=REQUESTS, policy=e, **load))
        )
        print(f"  {engine}'s scheduler: {s:.3f} s wall, {cs:.3f} s CPU ({rr.steps:,} iterations, "
              f"p99 TTFT {rr.ttft_s_percentiles['p99'] * 1e3:.1f} ms)")  # fmt: skip

    k = min(args.naive_requests, REQUESTS)
    trace = dict(
        arrival_s=r.arrival_s[:k], input_tokens=r.input_tokens[:k], output_tokens=r.output_tokens[:k]
    )
    fast_k_s, fast_k_cpu, fk = timed(
        lambda: sim.simulate(sim.SimConfig(MODEL, GPU, trace=trace, requests=k)), repeats=3
    )
    naive_s, naive_cpu, nk = timed(lambda: simulate_naive(MODEL, GPU, **trace))
    np.testing.assert_allclose(fk.first_token_s, nk["first_token_s"], rtol=1e-12)
    np.testing.assert_allclose(fk.finish_s, nk["finish_s"], rtol=1e-12)
    assert fk.steps == nk["steps"]
    naive_10k_s = naive_s * REQUESTS / k
    naive_10k_cpu = naive_cpu * REQUESTS / k
    print(
        f"naive per-token loop, first {k:,} requests: {naive_s:.2f} s wall ({naive_cpu:.2f} s CPU); "
        f"fast simulator on the same: {fast_k_s:.3f} s ({fast_k_cpu:.3f} s CPU)"
    )
    print(
        f"  same answer: every first-token and finish time equal (rel 1e-12), {nk['steps']:,} iterations each"
    )
    if k < REQUESTS:
        print(
            f"  naive loop extrapolated to {REQUESTS:,} requests: {naive_10k_s:.1f} s wall, "
            f"{naive_10k_cpu:.1f} s CPU"
        )
    print(
        f"speed-up at {k:,} requests: {naive_s / fast_k_s:.1f}x wall, {naive_cpu / fast_k_cpu:.1f}x CPU; "
        f"at {REQUESTS:,}: {naive_10k_s / fast_s:.1f}x wall, {naive_10k_cpu / fast_cpu_s:.1f}x CPU"
    )
    if args.million:
        # 10^6 requests at 50 req/s arrive over ~20,000 s: lift the 3,600 s bound on simulated time
        s, cs, rr = timed(
            lambda: sim.simulate(sim.SimConfig(MODEL, GPU, requests=10**6, max_sim_time_s=1e5, **load))
        )
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes
        kept = rr.timeline_t_s.size
        print(
            f"10^6 requests: {s:.1f} s wall, {cs:.1f} s CPU ({rr.steps:,} iterations, {kept:,} timeline "
            f"steps kept, {rr.requests_completed:,} completed); peak resident memory {peak_mb:,.0f} MB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
