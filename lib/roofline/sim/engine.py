"""A discrete-event serving simulator: arrivals, continuous batching, chunked prefill, KV limits, percentiles.

Taught in notebooks/slos_and_capacity.ipynb (and validated in notebooks/serving_validation.ipynb).

The closed forms of lessons 25, 44, 59 and 61 assume everyone arrives at t = 0 or a steady state. Real
servers see requests arrive at random, queue, share a batch, and wait for KV-cache room. ``simulate``
plays that out per ITERATION, not per token: one event per batched step of a worker, in which every
scheduled sequence advances together (one decode token each, or a chunk of its prompt). Its parts:

    roofline.sim.workload   who asks for what, and when (lengths; Poisson, bursty, closed-loop, traces)
    roofline.sim.policies   how each engine's scheduler fills a step (vLLM, SGLang, TensorRT-LLM, …)
    roofline.sim.worker     one engine instance: admits waiting requests and plans each step
    roofline.sim.events     named event kinds and the queue that orders them
    roofline.sim.loop       the event loop: steps priced by the cost model, tokens emitted
    roofline.sim.cost       the price of one step (the engine's step time)
    roofline.sim.results    percentiles, throughput, goodput, cost, stability

Token bookkeeping for one request with P prompt tokens and O output tokens:

    prefill   the P prompt tokens are computed (in chunks of at most ``chunk_tokens``); the step that
              computes the last one emits output token 1 (the time to first token, TTFT)
    decode    each later step computes the previous output token and emits the next: O − 1 steps,
              attending to P, P+1, …, P+O−2 cached tokens
    P = 0     a single start token is computed instead of a prompt (no prefill): O steps attending to
              0, 1, …, O−1 tokens, the setting of lesson 25's closed forms

TPOT = (e2e − TTFT) ÷ (O − 1); e2e = finish − arrival.

>>> r = simulate("llama-3-8b", "h100-sxm", rate_per_s=5, requests=200, input_tokens=512, output_tokens=64)
>>> r.requests_completed, r.unstable
(200, False)
>>> bool(r.ttft_s_percentiles["p50"] <= r.ttft_s_percentiles["p99"])
True
"""

from __future__ import annotations

import numpy as np

from roofline.errors import DoesNotFitError, InvalidConfigurationError

from .cost import StepCostModel, engine_cost_model
from .limits import kv_capacity_tokens, sustainable_rate_per_s
from .loop import Simulation
from .policies import ENGINE_DEFAULT, PRIORITIES, SchedulerPolicy, resolve_policy
from .results import RunSetting, SimResult, percentiles, summarise
from .worker import RequestState
from .workload import LengthSpec, arrivals_s, check_trace, sample_lengths

__all__ = [
    "ENGINE_DEFAULT", "PRIORITIES", "SimResult", "kv_capacity_tokens", "percentiles", "simulate",
    "sustainable_rate_per_s",
]  # fmt: skip

# Defaults that are assumptions (data/assumptions.toml), read when first asked for, never at import.
_ASSUMED_DEFAULTS = {
    "DEFAULT_MAX_BATCH": ("engine_max_batch", int),
    "DEFAULT_TOKEN_BUDGET": ("engine_token_budget", int),
    "DEFAULT_KV_TRANSFER_LATENCY_S": ("kv_transfer_latency_s", float),
    "DEFAULT_SLO_TTFT_S": ("ttft_target_s", float),
    "DEFAULT_SLO_TPOT_S": ("tpot_target_s", float),
}


def __getattr__(name: str):
    if name in _ASSUMED_DEFAULTS:
        from roofline.assumptions import assumption

        key, kind = _ASSUMED_DEFAULTS[name]
        return kind(assumption(key))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _assumed(name: str):
    return __getattr__(name)


def _lengths(x, name) -> LengthSpec:
    if isinstance(x, LengthSpec):
        return x
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
        if not x >= 0 or int(x) != x:
            raise InvalidConfigurationError(f"{name} must be a whole number of tokens >= 0, got {x!r}")
        return LengthSpec("fixed", int(x))
    raise InvalidConfigurationError(f"{name} must be a token count or a LengthSpec, got {x!r}")


def _check_counts(**counts):
    """Each keyword is (value, least): a whole number at least ``least``."""
    for name, (v, lo) in counts.items():
        if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating) or v != v:
            raise InvalidConfigurationError(f"{name} must be a whole number >= {lo}, got {v!r}")
        if int(v) != v or v < lo:
            raise InvalidConfigurationError(f"{name} must be a whole number >= {lo}, got {v!r}")


def _check_options(prefix_hit_rate, ramp_s, think_time_s, max_sim_time_s, prefill_workers, decode_workers):
    if not 0 <= prefix_hit_rate < 1:
        raise InvalidConfigurationError(f"prefix_hit_rate must be in [0, 1), got {prefix_hit_rate!r}")
    if not ramp_s >= 0 or not think_time_s >= 0:
        raise InvalidConfigurationError("ramp_s and think_time_s must be >= 0 s")
    if not max_sim_time_s > 0 or not np.isfinite(max_sim_time_s):
        raise InvalidConfigurationError(f"max_sim_time_s must be a finite time > 0, got {max_sim_time_s!r}")
    if (prefill_workers > 0) != (decode_workers > 0):
        raise InvalidConfigurationError("disaggregated serving needs both prefill_workers and decode_workers")


def _workload(rate_per_s, concurrency, trace, requests, input_tokens, output_tokens, interarrival_cv, rng):
    """(arrival times s or None for a closed loop, input tokens, output tokens, load name)."""
    n = int(requests)
    if trace is not None:
        arr, inp, outp = check_trace(trace)
        order = np.argsort(arr, kind="stable")  # arrival order; simultaneous ones keep the trace's order
        return arr[order][:n], inp[order][:n], outp[order][:n], "trace"
    inp = sample_lengths(_lengths(input_tokens, "input_tokens"), n, rng)
    outp = sample_lengths(_lengths(output_tokens, "output_tokens"), n, rng)
    if rate_per_s is not None:
        arr = arrivals_s(float(rate_per_s), n, rng, cv=interarrival_cv)
        return arr, inp, outp, "poisson" if interarrival_cv == 1 else "bursty"
    _check_counts(concurrency=(concurrency, 1))
    return None, inp, outp, "closed"


def simulate(
    model,
    gpu,
    *,
    rate_per_s: float | None = None,
    concurrency: int | None = None,
    trace: dict | None = None,
    requests: int = 1000,
    input_tokens=512,
    output_tokens=128,
    seed: int = 0,
    think_time_s: float = 0.0,
    ramp_s: float = 0.0,
    interarrival_cv: float = 1.0,
    num_gpus: int = 1,
    weight_precision: str = "bf16",
    kv_precision: str = "bf16",
    engine: str = "ideal",
    cost: StepCostModel | None = None,
    policy: SchedulerPolicy | str | None = None,
    max_batch: int | None = ENGINE_DEFAULT,
    token_budget: int | None = ENGINE_DEFAULT,
    chunk_tokens: int | None = ENGINE_DEFAULT,
    priority: str | None = ENGINE_DEFAULT,
    kv_capacity: int | None = None,
    prefix_hit_rate: float = 0.0,
    pipeline_stages: int = 1,
    replicas: int = 1,
    prefill_workers: int = 0,
    decode_workers: int = 0,
    kv_transfer_latency_s: float | None = None,
    slo_ttft_s: float | None = None,
    slo_tpot_s: float | None = None,
    usd_per_gpu_hour: float | None = None,
    max_sim_time_s: float = 3600.0,
    record_timeline: bool = True,
) -> SimResult:
    """Simulate a serving deployment under a load and return latencies, throughput and cost.

    Parameters
    ----------
    model, gpu : ids or dataclasses from ``roofline.data``.
    rate_per_s | concurrency | trace : the load, exactly one of: open-loop arrivals at ``rate_per_s``
        requests/s (Poisson, or bursty with ``interarrival_cv`` > 1); a closed loop of ``concurrency``
        clients, each sending its next request ``think_time_s`` after its previous one finished; or
        ``trace``, a dict of equal-length arrays ``arrival_s`` (s), ``input_tokens``, ``output_tokens``
        (``roofline.sim.load_trace`` reads one from a JSON or CSV file; every bad row and field is named).
        A trace is simulated in arrival order.
    interarrival_cv : coefficient of variation of the gaps between open-loop arrivals (dimensionless):
        1 is Poisson, above 1 bursty (a Gamma renewal process of the same mean rate).
    ramp_s : closed loop only: client i sends its first request at i × ramp_s ÷ C (s); 0 starts everyone
        together at t = 0 (then, with fixed lengths, the clients stay in step).
    requests : requests issued in all (bounded, ≥ 1).
    input_tokens, output_tokens : tokens per request: a whole number (fixed) or a ``LengthSpec``
        (uniform, lognormal). Output ≥ 1.
    seed : seeds ``numpy.random.default_rng``; the same seed gives identical results.
    num_gpus, weight_precision, kv_precision, engine : the cost model (tensor parallel G per worker) and
        the engine whose step times and scheduler the run uses. ``cost`` overrides them with your own
        ``StepCostModel`` (its ``engine`` then names the scheduler).
    policy : the scheduler (``roofline.sim.SchedulerPolicy``, or an engine id whose scheduler to use);
        default the engine's (``roofline.sim.engine_policy``; the ideal engine's is the course's assumed
        one: ``engine_max_batch`` sequences, ``engine_token_budget`` tokens, whole prompts, decodes first).
    max_batch, token_budget, chunk_tokens, priority : change one setting of that scheduler. Left out
        (``ENGINE_DEFAULT``), or None for the first, second and fourth, the policy's value holds. max_batch:
        sequences per step at most. token_budget: tokens per step at most, ≥ max_batch (the first prompt of
        a step runs even if longer, when unchunked). chunk_tokens: prompt tokens per sequence per step
        (None: whole prompts). priority: ``"decode-first"`` or ``"prefill-first"``.
    kv_capacity : KV-cache tokens per worker (default: memory minus weights, ``kv_capacity_tokens``).
    prefix_hit_rate : fraction of each prompt found in a prefix cache, not recomputed, in [0, 1).
    pipeline_stages : P, pipeline-parallel stages per worker (GPUs per worker = num_gpus × P).
    replicas : identical workers behind a least-loaded router.
    prefill_workers, decode_workers : both > 0 for disaggregated serving (``replicas`` is then ignored).
    kv_transfer_latency_s : fixed cost of one KV transfer between workers (s; default an assumption).
    slo_ttft_s, slo_tpot_s : the SLO for goodput and cost (s; default the course's targets).
    usd_per_gpu_hour : price; default the course's example price ``h100-example-3usd`` from the table.
    max_sim_time_s : simulated time after which the run stops (s); unfinished requests are NaN.
    record_timeline : keep worker 0's per-step time series (KV use, batch composition), at most its first
        250,000 steps (``roofline.sim.loop.TIMELINE_LIMIT``).

    A rate the deployment cannot sustain is reported (``unstable`` True and ``message``), never hangs.

    >>> r = simulate("llama-3-8b", "h100-sxm", rate_per_s=1000, requests=2000, input_tokens=512,
    ...              output_tokens=128)
    >>> r.unstable, "largest sustainable rate is about 108 req/s" in r.message
    (True, True)
    """
    if sum(x is not None for x in (rate_per_s, concurrency, trace)) != 1:
        raise InvalidConfigurationError("give exactly one load: rate_per_s, concurrency or trace")
    _check_counts(requests=(requests, 1), pipeline_stages=(pipeline_stages, 1), replicas=(replicas, 1),
                  prefill_workers=(prefill_workers, 0), decode_workers=(decode_workers, 0))  # fmt: skip
    _check_options(prefix_hit_rate, ramp_s, think_time_s, max_sim_time_s, prefill_workers, decode_workers)
    if cost is None:
        cost = engine_cost_model(engine, model, gpu, num_gpus=num_gpus, weight_precision=weight_precision,
                                 kv_precision=kv_precision)  # fmt: skip
    m, g = cost.model, cost.gpu
    gpus_per_worker = cost.num_gpus * int(pipeline_stages)
    if kv_capacity is None:
        cap = kv_capacity_tokens(m, g, gpus_per_worker, cost.weight_precision, cost.kv_precision)
    else:
        _check_counts(kv_capacity=(kv_capacity, 1))
        cap = int(kv_capacity)
    chosen = resolve_policy(policy, getattr(cost, "engine", "ideal"), g, kv_capacity_tokens=cap,
                            context_tokens=m.max_context_tokens)  # fmt: skip
    chosen = chosen.with_overrides(max_batch=max_batch, token_budget=token_budget, chunk_tokens=chunk_tokens,
                                   priority=priority)  # fmt: skip
    rng = np.random.default_rng(seed)
    arr, inp, outp, load = _workload(rate_per_s, concurrency, trace, requests, input_tokens, output_tokens,
                                     interarrival_cv, rng)  # fmt: skip
    if np.any(outp < 1) or np.any(inp < 0):
        raise InvalidConfigurationError("every request needs output_tokens >= 1 and input_tokens >= 0")
    longest = int(np.max(np.maximum(inp, 1) + outp))
    if longest > cap:
        raise DoesNotFitError(
            f"a request of {longest:,} tokens (prompt + answer) cannot fit in the KV cache of {cap:,} tokens"
        )
    roles = ["prefill"] * int(prefill_workers) + ["decode"] * int(decode_workers) or ["both"] * int(replicas)
    latency = (
        _assumed("DEFAULT_KV_TRANSFER_LATENCY_S") if kv_transfer_latency_s is None else kv_transfer_latency_s
    )
    sim = Simulation(
        cost, chosen, RequestState(inp, outp, prefix_hit_rate), roles, cap, arrival_s=arr,
        concurrency=concurrency or 0, think_time_s=think_time_s, ramp_s=ramp_s, stages=pipeline_stages,
        kv_transfer_latency_s=latency, max_sim_time_s=max_sim_time_s, record_timeline=record_timeline,
    )  # fmt: skip
    sim.run()
    setting = RunSetting(
        model_id=m.id, gpu_id=g.id, load=load, rate_per_s=rate_per_s, concurrency=concurrency,
        num_gpus_total=gpus_per_worker * len(roles),
        slo_ttft_s=_assumed("DEFAULT_SLO_TTFT_S") if slo_ttft_s is None else slo_ttft_s,
        slo_tpot_s=_assumed("DEFAULT_SLO_TPOT_S") if slo_tpot_s is None else slo_tpot_s,
        usd_per_gpu_hour=usd_per_gpu_hour, kv_capacity_tokens=cap, max_sim_time_s=max_sim_time_s,
    )  # fmt: skip
    return summarise(sim, setting, inp, outp)
