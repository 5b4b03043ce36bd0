"""Small simulator entry points for lessons 25, 44, 59 and 61: their closed forms under real arrivals.

For lessons 25 (batching), 44 (chunked prefill), 59 (the dashboard) and 61 (the saturation wall, see
``roofline.sim.latency_vs_load``); taught in notebooks/slos_and_capacity.ipynb. Each runs a few hundred
seeded requests, fast enough for an explorer's slider.

>>> r = batching_under_arrivals("llama-3-8b", "h100-sxm", rate_per_s=2.0, output_tokens=200, requests=100)
>>> r["continuous batching"]["ttft_p99_s"] < r["one at a time"]["ttft_p99_s"]
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.results import Number, Result
from roofline.errors import InvalidConfigurationError

from .engine import simulate


def _summary(r) -> dict:
    return {
        "ttft_p50_s": r.ttft_s_percentiles["p50"],
        "ttft_p99_s": r.ttft_s_percentiles["p99"],
        "tpot_p50_s": r.tpot_s_percentiles["p50"],
        "tpot_p99_s": r.tpot_s_percentiles["p99"],
        "e2e_p99_s": r.e2e_s_percentiles["p99"],
        "output_tokens_per_s": r.throughput_output_tokens_per_s,
        "unstable": r.unstable,
    }


def batching_under_arrivals(
    model,
    gpu,
    rate_per_s: float,
    output_tokens: int,
    *,
    input_tokens: int = 0,
    requests: int = 300,
    seed: int = 0,
    **simulate_kwargs,
) -> dict:
    """Lesson 25 with Poisson arrivals instead of everyone at t = 0: the same requests served one at a time
    (``max_batch`` 1, a queue) and with continuous batching. Returns ``{"one at a time": {...},
    "continuous batching": {...}}`` with p50/p99 TTFT, TPOT and p99 e2e (s), output tokens/s and whether the
    queue grows without bound.

    >>> r = batching_under_arrivals("llama-3-8b", "h100-sxm", rate_per_s=1.0, output_tokens=400, requests=60)
    >>> r["one at a time"]["unstable"], r["continuous batching"]["unstable"]   # 400 × 4.8 ms = 1.9 s each
    (True, False)
    """
    kw = dict(
        rate_per_s=rate_per_s,
        requests=requests,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        seed=seed,
        record_timeline=False,
        **simulate_kwargs,
    )
    return {
        "one at a time": _summary(simulate(model, gpu, max_batch=1, **kw)),
        "continuous batching": _summary(simulate(model, gpu, **kw)),
    }


@dataclass(frozen=True)
class ChunkSweep(Result):
    """Percentiles against chunk size under Poisson arrivals. Arrays over ``chunk_tokens`` (0: unchunked)."""

    chunk_tokens: Number
    ttft_p50_s: Number
    ttft_p99_s: Number
    tpot_p50_s: Number
    tpot_p99_s: Number


def chunk_size_sweep(
    model,
    gpu,
    chunk_tokens=(0, 128, 256, 512, 1024, 2048),
    *,
    rate_per_s: float = 2.0,
    input_tokens: int = 8000,
    output_tokens: int = 200,
    requests: int = 300,
    seed: int = 0,
    **simulate_kwargs,
) -> ChunkSweep:
    """Lesson 44's trade-off under real arrivals: for each chunk size (0: whole prompts), the p50/p99 TTFT
    (small chunks re-read the weights more often: prompts take longer) and the p99 TPOT (big chunks stall the
    decoders) of the same seeded Poisson load (s).

    >>> s = chunk_size_sweep("llama-3-8b", "h100-sxm", (0, 512), requests=100)
    >>> bool(s.tpot_p99_s[1] < s.tpot_p99_s[0])      # chunking shortens the worst inter-token gaps
    True
    """
    rows = []
    for c in chunk_tokens:
        if int(c) != c or c < 0:
            raise InvalidConfigurationError(f"chunk sizes must be whole numbers >= 0, got {c!r}")
        r = simulate(
            model,
            gpu,
            rate_per_s=rate_per_s,
            requests=requests,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            chunk_tokens=int(c) or None,
            seed=seed,
            record_timeline=False,
            **simulate_kwargs,
        )
        rows.append(_summary(r))
    return ChunkSweep(
        chunk_tokens=np.asarray(chunk_tokens),
        **{
            k: np.array([row[k] for row in rows])
            for k in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s")
        },
    )


def dashboard_load(
    model,
    gpu,
    concurrent_users: int,
    *,
    context_tokens: int = 1000,
    prompt_tokens: int = 200,
    output_tokens: int = 200,
    requests: int | None = None,
    seed: int = 0,
    **simulate_kwargs,
) -> dict:
    """Lesson 59's closed loop in the simulator: ``concurrent_users`` users each hold ``context_tokens`` of
    conversation (found in the prefix cache, not recomputed), send a ``prompt_tokens`` turn and read
    ``output_tokens``, then send the next turn at once. Returns the dashboard's percentiles (s), output
    tokens/s, GPU busy fraction, mean KV use (a fraction of the cache) and preemptions.

    >>> d = dashboard_load("llama-3-8b", "h100-sxm", 8, requests=32)
    >>> 0 < d["kv_use_mean"] < 1 and d["tpot_p99_s"] >= d["tpot_p50_s"]
    True
    """
    p = context_tokens + prompt_tokens
    r = simulate(
        model,
        gpu,
        concurrency=concurrent_users,
        requests=requests or 4 * concurrent_users,
        input_tokens=p,
        output_tokens=output_tokens,
        prefix_hit_rate=context_tokens / p if p else 0.0,
        seed=seed,
        **simulate_kwargs,
    )
    steps = np.asarray(r.timeline_step_s)
    kv = np.asarray(r.timeline_kv_used_tokens) / r.kv_capacity_tokens
    return {
        **_summary(r),
        "busy_fraction": r.busy_fraction,
        "kv_use_mean": float(np.sum(kv * steps) / np.sum(steps)) if steps.size else 0.0,
        "preemptions": r.preemptions,
    }
