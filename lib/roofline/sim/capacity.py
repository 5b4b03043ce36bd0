"""Capacity planning: the fewest replicas that serve a load within an SLO, and what they cost.

Taught in notebooks/slos_and_capacity.ipynb.

For a target rate λ (requests/s) and SLOs on p99 TTFT and p99 TPOT, try 1, 2, 3, … replicas of one
deployment (each replica ``num_gpus`` GPUs); each try simulates the load split by a least-loaded router.
The answer is the first count whose p99s meet both SLOs; the cost is GPUs × $/GPU-hour ÷ output
tokens/s. The search starts at the closed-form lower bound ⌈λ ÷ sustainable rate per replica⌉.

>>> p = plan_capacity("llama-3-8b", "h100-sxm", rate_per_s=20, input_tokens=512, output_tokens=128,
...                   requests=400)
>>> p.replicas, p.meets_slo
(1, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import roofline as rl
from roofline._results import Flag, Number, Result

from .engine import DEFAULT_SLO_TPOT_S, DEFAULT_SLO_TTFT_S, simulate


@dataclass(frozen=True)
class CapacityPlan(Result):
    """The smallest deployment found that meets the SLO, and the tries on the way."""

    replicas: int
    num_gpus_total: int
    meets_slo: bool
    p99_ttft_s: float
    p99_tpot_s: float
    usd_per_hour: float  # the whole deployment
    usd_per_million_output_tokens: float
    tried: tuple  # (replicas, p99 TTFT s, p99 TPOT s, meets) per try


def plan_capacity(
    model,
    gpu,
    rate_per_s: float,
    *,
    input_tokens=512,
    output_tokens=128,
    slo_ttft_s: float = DEFAULT_SLO_TTFT_S,
    slo_tpot_s: float = DEFAULT_SLO_TPOT_S,
    requests: int = 2000,
    max_replicas: int = 64,
    seed: int = 0,
    **simulate_kwargs,
) -> CapacityPlan:
    """Fewest replicas whose simulated p99 TTFT ≤ ``slo_ttft_s`` and p99 TPOT ≤ ``slo_tpot_s`` (s) at
    ``rate_per_s`` requests/s. Other keywords go to ``simulate`` (``num_gpus``, ``chunk_tokens``, …).
    Raises ``InvalidConfigurationError`` if even ``max_replicas`` replicas miss the SLO.

    >>> p = plan_capacity("llama-3-8b", "h100-sxm", 400, input_tokens=512, output_tokens=128, requests=800)
    >>> p.replicas >= 2
    True
    """
    if not rate_per_s > 0:
        raise rl.InvalidConfigurationError(f"rate_per_s must be > 0, got {rate_per_s!r}")
    tried = []

    def run(k):
        r = simulate(
            model,
            gpu,
            rate_per_s=rate_per_s,
            requests=requests,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            replicas=k,
            seed=seed,
            slo_ttft_s=slo_ttft_s,
            slo_tpot_s=slo_tpot_s,
            **simulate_kwargs,
        )
        ttft, tpot = r.ttft_s_percentiles["p99"], r.tpot_s_percentiles["p99"]
        ok = (
            r.requests_completed == r.requests
            and ttft <= slo_ttft_s
            and (not math.isfinite(tpot) or tpot <= slo_tpot_s)
        )
        tried.append((k, ttft, tpot, bool(ok)))
        return r, ok

    r1, ok = run(1)
    k = 1 if ok else max(2, math.ceil(rate_per_s / r1.sustainable_rate_per_s))
    while not ok:
        if k > max_replicas:
            raise rl.InvalidConfigurationError(
                f"even {max_replicas} replicas miss p99 TTFT <= {slo_ttft_s} s and TPOT <= {slo_tpot_s} s"
            )
        r1, ok = run(k)
        if not ok:
            k += 1
    gpus = r1.num_gpus_total
    per_hour = gpus * r1.usd_per_gpu_hour
    return CapacityPlan(
        replicas=k,
        num_gpus_total=gpus,
        meets_slo=True,
        p99_ttft_s=r1.ttft_s_percentiles["p99"],
        p99_tpot_s=r1.tpot_s_percentiles["p99"],
        usd_per_hour=per_hour,
        usd_per_million_output_tokens=float(
            rl.cost_per_million_tokens_usd(r1.usd_per_gpu_hour, r1.throughput_output_tokens_per_s, gpus)
        ),
        tried=tuple(tried),
    )


@dataclass(frozen=True)
class LoadSweep(Result):
    """Latency percentiles against arrival rate (the hockey stick). Arrays over ``rates_per_s``."""

    rates_per_s: Number  # requests/s asked for
    sustainable_rate_per_s: float  # closed-form estimate
    ttft_p50_s: Number
    ttft_p99_s: Number
    tpot_p50_s: Number
    tpot_p99_s: Number
    throughput_output_tokens_per_s: Number
    unstable: Flag  # bool per rate


def latency_vs_load(
    model,
    gpu,
    load_fractions=(0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1),
    *,
    input_tokens=512,
    output_tokens=128,
    requests: int = 600,
    seed: int = 0,
    **simulate_kwargs,
) -> LoadSweep:
    """Simulate Poisson loads at the given fractions of the closed-form sustainable rate and collect the
    p50/p99 TTFT and TPOT (s). Past about 1.0 the queue grows without bound: latency is then set by how
    long the run lasts (``requests``), not by the server, and ``unstable`` is True.

    >>> s = latency_vs_load("llama-3-8b", "h100-sxm", (0.2, 0.9), requests=300)
    >>> bool(s.ttft_p99_s[1] > s.ttft_p99_s[0])
    True
    """
    probe = simulate(model, gpu, rate_per_s=1.0, requests=1, input_tokens=input_tokens,
                     output_tokens=output_tokens, **simulate_kwargs)  # fmt: skip
    sustainable = probe.sustainable_rate_per_s
    rates = np.asarray(load_fractions, dtype=float) * sustainable
    runs = [
        simulate(model, gpu, rate_per_s=float(x), requests=requests, input_tokens=input_tokens,
                 output_tokens=output_tokens, seed=seed, record_timeline=False, **simulate_kwargs)
        for x in rates
    ]  # fmt: skip
    return LoadSweep(
        rates_per_s=rates,
        sustainable_rate_per_s=sustainable,
        ttft_p50_s=np.array([r.ttft_s_percentiles["p50"] for r in runs]),
        ttft_p99_s=np.array([r.ttft_s_percentiles["p99"] for r in runs]),
        tpot_p50_s=np.array([r.tpot_s_percentiles["p50"] for r in runs]),
        tpot_p99_s=np.array([r.tpot_s_percentiles["p99"] for r in runs]),
        throughput_output_tokens_per_s=np.array([r.throughput_output_tokens_per_s for r in runs]),
        unstable=np.array([r.unstable for r in runs]),
    )
