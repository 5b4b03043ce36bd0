"""A serving run of a benchmark's result file replayed in the serving simulator, under the load the file
describes: the simulated means beside the measured ones.

Taught in notebooks/06_benchmarks_that_lie.ipynb; ``roofline diagnose --from FILE`` shows it for every serving
run. The floor and the engine of ``roofline.measure.benchmark_diagnosis`` price one step; a replay prices the
whole run: the same deployment (the ``StepTimer`` the run is placed on), the same clients and the same
requests, scheduled as the engine schedules them (``roofline.sim``).

The load, from the file (``replay_config``):

    a client limit C        C closed-loop clients, all sending at t = 0 (a harness's burst start; aiperf's
                            drained warm-up leaves the same), each sending again when its answer ends
    a rate, no limit        open-loop arrivals at that rate (vLLM's ``--burstiness`` b: Gamma gaps of
                            coefficient of variation 1/√b)
    neither                 as many closed-loop clients as the file kept in flight on average
                            (``serving_concurrency``), else every request at once
    the lengths             the file's mean prompt and answer, or SGLang's random dataset as it draws them
                            (uniform in [r L, L])

How far a replay may land from the measurement is the simulator's validated error for the engine
(``roofline.sim.validation.error_band``): TTFT under load is its weak side, the request latency (TTFT and
answer together, which sets the rate the server sustains) its strong one.

>>> from roofline import engines
>>> from roofline.measure.benchmark_files import example_path, read_benchmark_file
>>> run = read_benchmark_file(example_path("aiperf_profile_export.json"))[0]
>>> r = replay(run, engines.StepTimer("vllm", "llama-3.1-8b", "h100-sxm"))
>>> r["load"], r["requests"], 0.5 < r["ratio"]["request_latency"] < 2
('16 clients, all starting at once', 320, True)
"""

from __future__ import annotations

import math

import numpy as np

from roofline import engines, sim
from roofline.measure.benchmark_files import ServingRun
from roofline.sim import validation

MAX_REQUESTS = 2000  # a replay's means settle long before this; more would only cost time
METRICS = ("ttft", "tpot", "request_latency")


def serving_concurrency(run: ServingRun) -> float:
    """Requests in flight on average: the harness's limit (at most its prompts), else the tool's measured
    concurrency, else Little's law (request rate × mean latency), else every request at once.

    >>> from roofline.measure.benchmark_files import example_path, read_benchmark_file
    >>> serving_concurrency(read_benchmark_file(example_path("vllm_bench_serve.json"))[0])
    16
    """
    if run.max_concurrency is not None:
        return min(run.max_concurrency, run.num_prompts or run.max_concurrency)
    if run.mean_concurrency:
        return run.mean_concurrency
    if run.request_throughput_per_s and run.e2e_latency_mean_s:
        return max(run.request_throughput_per_s * run.e2e_latency_mean_s, 1.0)
    return run.completed


def replay_config(run: ServingRun, timer: engines.StepTimer) -> tuple[sim.SimConfig, str]:
    """The simulator's settings for ``run`` on ``timer``'s deployment, and the load in words."""
    requests = min(run.completed, MAX_REQUESTS)
    if run.random_input_len and run.random_output_len and run.random_range_ratio is not None:
        ratio = run.random_range_ratio  # SGLang draws its random lengths uniformly in [r L, L]
        lengths = {"input_tokens": validation.ranged_lengths(run.random_input_len, ratio),
                   "output_tokens": validation.ranged_lengths(run.random_output_len, ratio)}  # fmt: skip
    else:
        lengths = {"input_tokens": max(round(run.mean_input_tokens_per_request), 1),
                   "output_tokens": max(round(run.mean_output_tokens_per_request), 1)}  # fmt: skip
    rate = run.request_rate_per_s
    if run.max_concurrency is not None:
        clients = min(run.max_concurrency, requests)
        load, words = {"concurrency": clients}, f"{clients:,} clients, all starting at once"
        if rate is not None and math.isfinite(rate):
            words += f" (the file's rate of {rate:g}/s beside its limit is not simulated)"
    elif rate is not None and math.isfinite(rate):
        cv = 1 / math.sqrt(run.burstiness or 1.0)
        load, words = {"rate_per_s": rate, "interarrival_cv": cv}, f"{rate:g} requests/s"
    else:  # no limit written: as many clients as the file's own figures kept in flight
        clients = min(max(round(serving_concurrency(run)), 1), requests)
        words = "every request at once" if clients == requests else f"{clients:,} clients, as the file kept"
        load = {"concurrency": clients}
    config = sim.SimConfig(
        timer.model, timer.gpu, engine=timer.engine.id, num_gpus=timer.num_gpus,
        weight_precision=timer.weight_precision, kv_precision=timer.kv_precision, requests=requests,
        record_timeline=False, max_sim_time_s=1e7, **lengths, **load,
    )  # fmt: skip
    return config, words


def replay(run: ServingRun, timer: engines.StepTimer) -> dict:
    """``run`` simulated under its own load (``replay_config``): ``load`` (in words), ``requests``
    simulated, and for TTFT, TPOT and the request latency (TTFT + (n − 1) × TPOT, s) the ``simulated``
    and ``measured`` means and their ``ratio`` (simulated ÷ measured; ``None`` where the file has no
    figure); ``error_band``: the simulator's validated error for the engine."""
    config, words = replay_config(run, timer)
    result = sim.simulate(config)
    n = run.mean_output_tokens_per_request
    simulated = {"ttft": result.ttft_mean_s, "tpot": result.tpot_mean_s,
                 "request_latency": float(np.nanmean(result.e2e_s))}  # fmt: skip
    measured = {"ttft": run.ttft_mean_s, "tpot": run.tpot_mean_s, "request_latency": run.e2e_latency_mean_s}
    if measured["request_latency"] is None and None not in (run.ttft_mean_s, run.tpot_mean_s):
        measured["request_latency"] = validation.request_latency_s(run.ttft_mean_s, run.tpot_mean_s, n)
    ratio = {k: None if not measured[k] else simulated[k] / measured[k] for k in METRICS}
    band = validation.error_band(timer.engine.id)
    return {"engine": timer.engine.id, "load": words, "requests": config.requests, "simulated": simulated,
            "measured": measured, "ratio": ratio, "error_band": band}  # fmt: skip
