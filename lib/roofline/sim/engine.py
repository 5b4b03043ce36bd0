"""``simulate``: one serving run, from its ``SimConfig`` to its ``SimResult``.

Token bookkeeping for one request with P prompt tokens and O output tokens:

    prefill   the P prompt tokens are computed (in chunks of at most ``chunk_tokens``); the step that
              computes the last one emits output token 1 (the time to first token, TTFT)
    decode    each later step computes the previous output token and emits the next: O − 1 steps,
              attending to P, P+1, …, P+O−2 cached tokens
    P = 0     a single start token is computed instead of a prompt (no prefill): O steps attending to
              0, 1, …, O−1 tokens, the setting of lesson 25's closed forms

TPOT = (e2e − TTFT) ÷ (O − 1); e2e = finish − arrival.
"""

from __future__ import annotations

import numpy as np

from roofline.engines.registry import get_engine
from roofline.errors import DoesNotFitError, InvalidConfigurationError

from .config import SimConfig, whole
from .cost import StepCostModel, kv_capacity_tokens
from .loop import Simulation
from .policies import SchedulerPolicy, engine_policy
from .results import SimResult, summarise
from .worker import RequestState
from .workload import LengthSpec, arrivals_s, check_trace, sample_lengths


def _lengths(x, name) -> LengthSpec:
    if isinstance(x, LengthSpec):
        return x
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
        if not x >= 0 or int(x) != x:
            raise InvalidConfigurationError(f"{name} must be a whole number of tokens >= 0, got {x!r}")
        return LengthSpec("fixed", int(x))
    raise InvalidConfigurationError(f"{name} must be a token count or a LengthSpec, got {x!r}")


def _workload(c: SimConfig, rng):
    """(arrival times s, or None for a closed loop; input tokens; output tokens)."""
    n = int(c.requests)
    if c.trace is not None:
        arr, inp, outp = check_trace(c.trace)
        order = np.argsort(arr, kind="stable")  # arrival order; simultaneous ones keep the trace's order
        return arr[order][:n], inp[order][:n], outp[order][:n]
    inp = sample_lengths(_lengths(c.input_tokens, "input_tokens"), n, rng)
    outp = sample_lengths(_lengths(c.output_tokens, "output_tokens"), n, rng)
    if c.rate_per_s is not None:
        return arrivals_s(float(c.rate_per_s), n, rng, cv=c.interarrival_cv), inp, outp
    whole("concurrency", c.concurrency, 1)
    return None, inp, outp


def _policy(c: SimConfig, cost: StepCostModel, cap: int) -> SchedulerPolicy:
    """The scheduler that runs: ``c.policy`` (a policy, an engine id, or None for the cost model's engine),
    then the settings ``c`` changes."""
    chosen = cost.engine if c.policy is None else c.policy
    if isinstance(chosen, str):
        context = cost.model.max_context_tokens
        chosen = engine_policy(chosen, cost.gpu, kv_capacity_tokens=cap, context_tokens=context)
    elif not isinstance(chosen, SchedulerPolicy):
        raise InvalidConfigurationError(f"policy must be a SchedulerPolicy or an engine id, got {chosen!r}")
    return chosen.with_overrides(
        max_batch=c.max_batch, token_budget=c.token_budget, chunk_tokens=c.chunk_tokens, priority=c.priority
    )


def simulate(config: SimConfig, progress=None) -> SimResult:
    """Simulate the serving run ``config`` (a ``SimConfig``: deployment, load, SLOs) and return latencies,
    throughput and cost. A rate the deployment cannot sustain is reported (``unstable`` True and
    ``message``), never hangs. ``progress``, if given, is called now and then during the run with the
    simulated clock (s) and the steps run so far (the command line's progress line).

    >>> r = simulate(SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1000, requests=2000, input_tokens=512,
    ...                        output_tokens=128))
    >>> r.unstable, "largest sustainable rate is about 108 req/s" in r.message
    (True, True)
    """
    c = config
    cost = c.cost or StepCostModel(c.model, c.gpu, num_gpus=c.num_gpus, weight_precision=c.weight_precision,
                                   kv_precision=c.kv_precision, engine=c.engine)  # fmt: skip
    if c.kv_capacity is None:
        cap = kv_capacity_tokens(cost.model, cost.gpu, cost.num_gpus * int(c.pipeline_stages),
                                 cost.weight_precision, cost.kv_precision,
                                 memory=get_engine(cost.engine).memory)  # fmt: skip
    else:
        cap = whole("kv_capacity", c.kv_capacity, 1)
    policy = _policy(c, cost, cap)
    arr, inp, outp = _workload(c, np.random.default_rng(c.seed))
    if np.any(outp < 1) or np.any(inp < 0):
        raise InvalidConfigurationError("every request needs output_tokens >= 1 and input_tokens >= 0")
    longest = int(np.max(np.maximum(inp, 1) + outp))
    if longest > cap:
        raise DoesNotFitError(
            f"a request of {longest:,} tokens (prompt + answer) cannot fit in the KV cache of {cap:,} tokens"
        )
    sim = Simulation(c, cost, policy, RequestState(inp, outp, c.prefix_hit_rate), cap, arr)
    sim.run(progress)
    return summarise(sim, inp, outp)
