"""A discrete-event serving simulator: arrivals, continuous batching, chunked prefill, KV limits, percentiles.

Taught in notebooks/slos_and_capacity.ipynb (and validated in notebooks/serving_validation.ipynb).

The closed forms of lessons 25, 44, 59 and 61 assume everyone arrives at t = 0 or a steady state. Real
servers see requests arrive at random, queue, share a batch, and wait for KV-cache room. ``simulate``
plays that out per ITERATION, not per token: one event per batched step of a worker, in which every
scheduled sequence advances together (one decode token each, or a chunk of its prompt). Its parts:

    roofline.sim.config     one run's settings: deployment, load, SLOs (``SimConfig``)
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

>>> r = simulate(SimConfig("llama-3-8b", "h100-sxm", rate_per_s=5, requests=200, input_tokens=512,
...                        output_tokens=64))
>>> r.requests_completed, r.unstable
(200, False)
>>> bool(r.ttft_s_percentiles["p50"] <= r.ttft_s_percentiles["p99"])
True
"""

from __future__ import annotations

import numpy as np

from roofline.errors import DoesNotFitError, InvalidConfigurationError

from .config import SimConfig, check_counts
from .cost import engine_cost_model
from .limits import kv_capacity_tokens, sustainable_rate_per_s
from .loop import Simulation
from .policies import ENGINE_DEFAULT, PRIORITIES, resolve_policy
from .results import RunSetting, SimResult, percentiles, summarise
from .worker import RequestState
from .workload import LengthSpec, arrivals_s, check_trace, sample_lengths

__all__ = [
    "ENGINE_DEFAULT", "PRIORITIES", "SimConfig", "SimResult", "kv_capacity_tokens", "percentiles", "simulate",
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
    check_counts(concurrency=(concurrency, 1))
    return None, inp, outp, "closed"


def simulate(config: SimConfig) -> SimResult:
    """Simulate the serving run ``config`` (a ``SimConfig``: deployment, load, SLOs) and return latencies,
    throughput and cost. A rate the deployment cannot sustain is reported (``unstable`` True and
    ``message``), never hangs.

    >>> r = simulate(SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1000, requests=2000, input_tokens=512,
    ...                        output_tokens=128))
    >>> r.unstable, "largest sustainable rate is about 108 req/s" in r.message
    (True, True)
    """
    c = config
    cost = c.cost or engine_cost_model(
        c.engine, c.model, c.gpu, num_gpus=c.num_gpus, weight_precision=c.weight_precision,
        kv_precision=c.kv_precision,
    )  # fmt: skip
    m, g = cost.model, cost.gpu
    gpus_per_worker = cost.num_gpus * int(c.pipeline_stages)
    if c.kv_capacity is None:
        cap = kv_capacity_tokens(m, g, gpus_per_worker, cost.weight_precision, cost.kv_precision)
    else:
        check_counts(kv_capacity=(c.kv_capacity, 1))
        cap = int(c.kv_capacity)
    chosen = resolve_policy(c.policy, getattr(cost, "engine", "ideal"), g, kv_capacity_tokens=cap,
                            context_tokens=m.max_context_tokens)  # fmt: skip
    chosen = chosen.with_overrides(max_batch=c.max_batch, token_budget=c.token_budget,
                                   chunk_tokens=c.chunk_tokens, priority=c.priority)  # fmt: skip
    rng = np.random.default_rng(c.seed)
    arr, inp, outp, load = _workload(c.rate_per_s, c.concurrency, c.trace, c.requests, c.input_tokens,
                                     c.output_tokens, c.interarrival_cv, rng)  # fmt: skip
    if np.any(outp < 1) or np.any(inp < 0):
        raise InvalidConfigurationError("every request needs output_tokens >= 1 and input_tokens >= 0")
    longest = int(np.max(np.maximum(inp, 1) + outp))
    if longest > cap:
        raise DoesNotFitError(
            f"a request of {longest:,} tokens (prompt + answer) cannot fit in the KV cache of {cap:,} tokens"
        )
    transfer_s = c.kv_transfer_latency_s
    transfer_s = _assumed("DEFAULT_KV_TRANSFER_LATENCY_S") if transfer_s is None else transfer_s
    sim = Simulation(c, cost, chosen, RequestState(inp, outp, c.prefix_hit_rate), cap, arr, transfer_s)
    sim.run()
    setting = RunSetting(
        model_id=m.id, gpu_id=g.id, load=load, rate_per_s=c.rate_per_s, concurrency=c.concurrency,
        num_gpus_total=gpus_per_worker * len(c.workers),
        slo_ttft_s=_assumed("DEFAULT_SLO_TTFT_S") if c.slo_ttft_s is None else c.slo_ttft_s,
        slo_tpot_s=_assumed("DEFAULT_SLO_TPOT_S") if c.slo_tpot_s is None else c.slo_tpot_s,
        usd_per_gpu_hour=c.usd_per_gpu_hour, kv_capacity_tokens=cap, max_sim_time_s=c.max_sim_time_s,
    )  # fmt: skip
    return summarise(sim, setting, inp, outp)
