"""The serving simulator: requests arrive, queue, share batches and wait for KV room; percentiles come out.

Taught in notebooks/slos_and_capacity.ipynb; validated against measurements in
notebooks/serving_validation.ipynb. The closed forms of lessons 25, 44, 59 and 61 assume everyone arrives
at t = 0 or a steady state; ``simulate`` plays random arrivals out per ITERATION, not per token: one event
per batched step of a worker, in which every scheduled sequence advances together. Its parts:

    config      one run's settings: deployment, load, SLOs (``SimConfig``)
    workload    who asks for what, and when (lengths; Poisson, bursty, traces)
    policies    how each engine's scheduler fills a step (vLLM, SGLang, TensorRT-LLM, …)
    worker      one engine instance: admits waiting requests and plans each step
    loop        the event loop and its clock: steps priced by the cost model, tokens emitted
    cost        the price of one step, and the closed-form limits built on it
    results     percentiles, throughput, goodput, cost, stability
    capacity    the fewest replicas that meet an SLO; latency against load
    validation  the simulator against measured servers (the rows: ``serving_rows``)

>>> from roofline import sim
>>> r = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", concurrency=4, requests=8, input_tokens=64,
...                                output_tokens=8))
>>> r.requests_completed
8
"""

from .capacity import CapacityPlan, LoadSweep, latency_vs_load, plan_capacity
from .config import ENGINE_DEFAULT, SimConfig
from .cost import StepCostModel, engine_cost_model, kv_capacity_tokens, sustainable_rate_per_s
from .engine import simulate
from .policies import PRIORITIES, SchedulerPolicy, assumed_policy, engine_policy
from .results import SimResult, percentiles
from .workload import LengthSpec, arrivals_s, load_trace, sample_lengths

__all__ = [
    "ENGINE_DEFAULT",
    "PRIORITIES",
    "CapacityPlan",
    "LengthSpec",
    "LoadSweep",
    "SchedulerPolicy",
    "SimConfig",
    "SimResult",
    "StepCostModel",
    "arrivals_s",
    "assumed_policy",
    "engine_cost_model",
    "engine_policy",
    "kv_capacity_tokens",
    "latency_vs_load",
    "load_trace",
    "percentiles",
    "plan_capacity",
    "sample_lengths",
    "simulate",
    "sustainable_rate_per_s",
]
