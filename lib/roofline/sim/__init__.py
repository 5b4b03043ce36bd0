"""The serving simulator: requests arrive, queue, share batches and wait for KV room; percentiles come out.

Taught in notebooks/slos_and_capacity.ipynb; validated against measurements in
notebooks/serving_validation.ipynb. Numbers only (numpy + standard library); the figures live in
``roofline.views.sim``. ``roofline.sim.engine`` lists its parts (workload, policies, worker, events, loop,
cost, results).

>>> from roofline import sim
>>> r = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", concurrency=4, requests=8, input_tokens=64,
...                                output_tokens=8))
>>> r.requests_completed
8
"""

from .capacity import CapacityPlan, LoadSweep, latency_vs_load, plan_capacity
from .config import SimConfig
from .cost import StepCostModel, engine_cost_model
from .engine import simulate
from .events import EventKind
from .limits import kv_capacity_tokens, sustainable_rate_per_s
from .naive import simulate_naive
from .policies import (
    ENGINE_DEFAULT,
    PRIORITIES,
    SchedulerPolicy,
    assumed_policy,
    engine_policy,
)
from .results import SimResult, percentiles
from .workload import (
    LengthSpec,
    bursty_arrivals_s,
    check_trace,
    load_trace,
    poisson_arrivals_s,
    sample_lengths,
)

__all__ = [
    "ENGINE_DEFAULT",
    "PRIORITIES",
    "CapacityPlan",
    "EventKind",
    "SchedulerPolicy",
    "assumed_policy",
    "bursty_arrivals_s",
    "check_trace",
    "engine_policy",
    "LengthSpec",
    "LoadSweep",
    "latency_vs_load",
    "load_trace",
    "SimConfig",
    "SimResult",
    "StepCostModel",
    "engine_cost_model",
    "kv_capacity_tokens",
    "percentiles",
    "plan_capacity",
    "poisson_arrivals_s",
    "sample_lengths",
    "simulate",
    "simulate_naive",
    "sustainable_rate_per_s",
]
