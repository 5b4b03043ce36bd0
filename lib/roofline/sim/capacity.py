"""Capacity planning: the fewest replicas that serve a load within an SLO, what they cost, and how sure.

Taught in notebooks/slos_and_capacity.ipynb.

For a target rate λ (requests/s) and SLOs on p99 TTFT and p99 TPOT, try 1, 2, 3, … replicas of one
deployment (each replica ``num_gpus`` GPUs) running the configured engine (a real one, such as vLLM, to plan);
each try simulates the load split by a least-loaded router. The answer is the first count whose p99s meet
both SLOs; the cost is GPUs × the GPU's own $/GPU-hour (``roofline.pricing.default_price``) ÷ output
tokens/s. The search starts at the closed-form lower bound ⌈λ ÷ sustainable rate per replica⌉.

How sure: the simulator's TTFT and TPOT with that engine miss measured servers by a validated median
error e (``roofline.sim.validation.error_band``). Were the real server slower by e, a count needs its
simulated p99s to meet SLO ÷ (1 + e); were it faster, SLO ÷ (1 − e). The plan reports the counts for both
(``replicas_low`` … ``replicas_high``): "6 GPUs (4–8 within the validated error)".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from roofline.engines.registry import get_engine
from roofline.errors import InvalidConfigurationError
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.pricing import default_price
from roofline.results import Flag, Number, Result

from .config import SimConfig
from .engine import simulate


@dataclass(frozen=True)
class CapacityPlan(Result):
    """The smallest deployment found that meets the SLO, the tries on the way, and the range the
    simulator's validated error allows."""

    replicas: int
    num_gpus_total: int
    meets_slo: bool
    p99_ttft_s: float
    p99_tpot_s: float
    usd_per_hour: float  # the whole deployment
    usd_per_million_output_tokens: float
    tried: tuple  # (replicas, p99 TTFT s, p99 TPOT s, meets) per try
    engine: str = "ideal"
    usd_per_gpu_hour: float = 0.0
    replicas_low: int = 0  # enough if the real engine is faster than simulated by the median error
    replicas_high: int = 0  # needed if it is slower by the median error
    error_band: dict = field(default_factory=dict)  # roofline.sim.validation.error_band(engine)

    @property
    def gpus_low(self) -> int:
        """GPUs of ``replicas_low`` replicas."""
        return self.replicas_low * self.num_gpus_total // self.replicas

    @property
    def gpus_high(self) -> int:
        """GPUs of ``replicas_high`` replicas."""
        return self.replicas_high * self.num_gpus_total // self.replicas


def plan_capacity(config: SimConfig, max_replicas: int = 64, progress=None) -> CapacityPlan:
    """Fewest replicas of ``config``'s deployment whose simulated p99 TTFT ≤ ``slo_ttft_s`` and p99 TPOT ≤
    ``slo_tpot_s`` (s) at its ``rate_per_s`` requests/s, priced at its ``usd_per_gpu_hour`` (default: the
    GPU's own price). Raises ``InvalidConfigurationError`` if even ``max_replicas`` replicas miss the SLO.
    ``progress``, if given, is called during each run with the replicas tried, the simulated clock (s) and
    the steps so far.

    >>> load = SimConfig("llama-3-8b", "h100-sxm", rate_per_s=400, requests=800, engine="vllm")
    >>> p = plan_capacity(load)
    >>> p.replicas >= 2 and p.replicas_low <= p.replicas <= p.replicas_high
    True
    """
    from .validation import error_band  # the stored table, read when a plan asks

    rate_per_s = config.rate_per_s
    if rate_per_s is None or not rate_per_s > 0:
        raise InvalidConfigurationError(f"rate_per_s must be > 0, got {rate_per_s!r}")
    usd_per_gpu_hour = config.usd_per_gpu_hour
    if usd_per_gpu_hour is None:
        price = default_price(config.gpu)
        usd_per_gpu_hour = 0.0 if price is None else price.usd_per_gpu_hour
    engine = get_engine(config.engine).id
    config = config.with_(engine=engine, usd_per_gpu_hour=usd_per_gpu_hour, record_timeline=False)
    band = error_band(engine)
    e_ttft, e_tpot = (band[f"{k}_median_abs_error"] if band["validated"] else 0.0 for k in ("ttft", "tpot"))
    runs: dict = {}

    def run(k):
        if k not in runs:
            report = None if progress is None else (lambda clock_s, steps: progress(k, clock_s, steps))
            runs[k] = simulate(config.with_(replicas=k), report)
        return runs[k]

    def meets(k, ttft_scale=1.0, tpot_scale=1.0):
        r = run(k)
        ttft, tpot = r.ttft_s_percentiles["p99"], r.tpot_s_percentiles["p99"]
        return bool(r.requests_completed == r.requests and ttft <= r.slo_ttft_s * ttft_scale
                    and (not math.isfinite(tpot) or tpot <= r.slo_tpot_s * tpot_scale))  # fmt: skip

    def first(start, **scale):
        k = start
        while not meets(k, **scale):
            k += 1
            if k > max_replicas:
                raise InvalidConfigurationError(
                    f"even {max_replicas} replicas miss p99 TTFT <= {run(1).slo_ttft_s} s and TPOT <= "
                    f"{run(1).slo_tpot_s} s" + (" within the engine's validated error" if scale else "")
                )
        return k

    lower_bound = 1 if meets(1) else max(2, math.ceil(rate_per_s / run(1).sustainable_rate_per_s))
    k = first(lower_bound)
    tried = tuple(  # the search itself: replica 1, then from the lower bound up to the answer
        (j, runs[j].ttft_s_percentiles["p99"], runs[j].tpot_s_percentiles["p99"], meets(j))
        for j in sorted(runs)
        if j == 1 or lower_bound <= j <= k
    )
    slower = {"ttft_scale": 1 / (1 + e_ttft), "tpot_scale": 1 / (1 + e_tpot)}
    faster = {"ttft_scale": 1 / max(1 - e_ttft, 1e-9), "tpot_scale": 1 / max(1 - e_tpot, 1e-9)}
    k_high = first(k, **slower)
    k_low = k
    while k_low > 1 and meets(k_low - 1, **faster):
        k_low -= 1
    r = run(k)
    gpus = r.num_gpus_total
    return CapacityPlan(
        replicas=k, num_gpus_total=gpus, meets_slo=True, p99_ttft_s=r.ttft_s_percentiles["p99"],
        p99_tpot_s=r.tpot_s_percentiles["p99"], usd_per_hour=gpus * usd_per_gpu_hour,
        usd_per_million_output_tokens=float(
            cost_per_million_tokens_usd(usd_per_gpu_hour, r.throughput_output_tokens_per_s, gpus)
        ),
        tried=tried,
        engine=engine, usd_per_gpu_hour=usd_per_gpu_hour, replicas_low=k_low, replicas_high=k_high,
        error_band=band,
    )  # fmt: skip


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
    config: SimConfig, load_fractions=(0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1)
) -> LoadSweep:
    """``config``'s deployment under Poisson loads at ``load_fractions`` of the closed-form sustainable rate
    (its own load replaced). Past about 1.0 the queue grows without bound: latency is then set by how long
    the run lasts, not by the server, and ``unstable`` is True.

    >>> s = latency_vs_load(SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1, requests=300), (0.2, 0.9))
    >>> bool(s.ttft_p99_s[1] > s.ttft_p99_s[0])
    True
    """
    open_loop = config.with_(rate_per_s=1.0, concurrency=None, trace=None)
    sustainable = simulate(open_loop.with_(requests=1, seed=0)).sustainable_rate_per_s
    rates = np.asarray(load_fractions, dtype=float) * sustainable
    runs = [simulate(open_loop.with_(rate_per_s=float(x), record_timeline=False)) for x in rates]
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
