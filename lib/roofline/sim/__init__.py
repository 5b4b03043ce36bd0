"""The serving simulator: requests arrive, queue, share batches and wait for KV room; percentiles come out.

Taught in notebooks/slos_and_capacity.ipynb; validated against measurements in
notebooks/serving_validation.ipynb. Numbers only (numpy + standard library); the figures live in
``roofline.views.sim``.

>>> from roofline import sim
>>> r = sim.simulate("llama-3-8b", "h100-sxm", concurrency=4, requests=8, input_tokens=64, output_tokens=8)
>>> r.requests_completed
8
"""

from roofline._lazy import submodules

from .capacity import CapacityPlan, LoadSweep, latency_vs_load, plan_capacity
from .cost import ENGINES, StepCostModel, engine_cost_model
from .engine import (
    PRIORITIES,
    SimResult,
    kv_capacity_tokens,
    percentiles,
    simulate,
    sustainable_rate_per_s,
)
from .lessons import ChunkSweep, batching_under_arrivals, chunk_size_sweep, dashboard_load
from .naive import simulate_naive
from .workload import LengthSpec, poisson_arrivals_s, sample_lengths

__all__ = [
    "ENGINES",
    "PRIORITIES",
    "CapacityPlan",
    "ChunkSweep",
    "batching_under_arrivals",
    "chunk_size_sweep",
    "dashboard_load",
    "LengthSpec",
    "LoadSweep",
    "latency_vs_load",
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

__getattr__ = submodules(__name__, __path__)
