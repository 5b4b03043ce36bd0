"""One serving run's settings: the deployment, the load it meets and what its report judges against.

Taught in notebooks/slos_and_capacity.ipynb. ``roofline.sim.simulate`` takes one ``SimConfig``; a sweep
changes one field at a time (``config.with_(rate_per_s=20)``), and a bad setting is refused when the
config is made, naming the field.

>>> c = SimConfig("llama-3-8b", "h100-sxm", rate_per_s=5, requests=200)
>>> c.with_(replicas=2).replicas, c.engine
(2, 'ideal')
>>> SimConfig("llama-3-8b", "h100-sxm")
Traceback (most recent call last):
...
roofline.errors.InvalidConfigurationError: give exactly one load: rate_per_s, concurrency or trace
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, replace
from enum import Enum

import numpy as np

from roofline.errors import InvalidConfigurationError


class _EngineDefault(Enum):
    """The default of the scheduler settings: "take this value from the engine's policy"."""

    ENGINE_DEFAULT = 0

    def __repr__(self) -> str:
        return "ENGINE_DEFAULT"


ENGINE_DEFAULT = _EngineDefault.ENGINE_DEFAULT


def whole(name: str, value, least: int) -> int:
    """``value`` as an int if it is a whole number >= ``least``, else an error naming ``name``.

    >>> whole("replicas", 2.0, 1)
    2
    """
    number = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or int(value) != value or value < least:
        raise InvalidConfigurationError(f"{name} must be a whole number >= {least}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class SimConfig:
    """A serving run: ``model`` and ``gpu`` (ids or rows of ``roofline.data``), then by name:

    The load, exactly one of ``rate_per_s`` (open-loop arrivals, requests/s: Poisson, or bursty with
    ``interarrival_cv`` > 1, a Gamma renewal process of the same mean rate), ``concurrency`` (a closed loop
    of C clients, each sending its next request ``think_time_s`` after its previous one finished; client i
    sends its first at i × ``ramp_s`` ÷ C) or ``trace`` (a dict of equal-length arrays ``arrival_s`` (s),
    ``input_tokens``, ``output_tokens``; ``roofline.sim.load_trace`` reads one, simulated in arrival
    order). ``requests`` issued in all (≥ 1); ``input_tokens`` and ``output_tokens`` per request, a whole
    number or a ``LengthSpec`` (output ≥ 1); ``seed`` for ``numpy.random.default_rng`` (the same seed gives
    identical results).

    The deployment: ``num_gpus`` (tensor parallel G per worker), ``weight_precision``, ``kv_precision`` and
    ``engine`` (whose step times and scheduler the run uses), or ``cost``, your own ``StepCostModel`` (its
    ``engine`` then names the scheduler). ``policy``: the scheduler (a ``SchedulerPolicy``, or an engine id
    whose scheduler to use; default the engine's, ``roofline.sim.engine_policy``). ``max_batch``,
    ``token_budget``, ``chunk_tokens``, ``priority`` change one setting of that scheduler (left out, or None
    for all but ``chunk_tokens``, the policy's value holds; ``chunk_tokens`` None means whole prompts).
    ``kv_capacity``: KV-cache tokens per worker (default: memory minus weights). ``prefix_hit_rate``:
    fraction of each prompt found in a prefix cache, in [0, 1). ``pipeline_stages``: P stages per worker
    (GPUs per worker = G × P). ``replicas``: identical workers behind a least-loaded router;
    ``prefill_workers`` and ``decode_workers``, both > 0, for disaggregated serving instead, each KV transfer
    costing ``kv_transfer_latency_s`` (s; default an assumption) beside its bytes over the link.

    The report: ``slo_ttft_s``, ``slo_tpot_s`` (s; default the course's targets) for goodput and cost;
    ``usd_per_gpu_hour`` (default the course's example price); ``max_sim_time_s`` (s) after which the run
    stops, unfinished requests NaN; ``record_timeline`` keeps worker 0's per-step series (at most its first
    250,000 steps).
    """

    model: object
    gpu: object
    _: KW_ONLY
    rate_per_s: float | None = None
    concurrency: int | None = None
    trace: dict | None = None
    requests: int = 1000
    input_tokens: object = 512
    output_tokens: object = 128
    seed: int = 0
    think_time_s: float = 0.0
    ramp_s: float = 0.0
    interarrival_cv: float = 1.0
    num_gpus: int = 1
    weight_precision: str = "bf16"
    kv_precision: str = "bf16"
    engine: str = "ideal"
    cost: object = None
    policy: object = None
    max_batch: object = ENGINE_DEFAULT
    token_budget: object = ENGINE_DEFAULT
    chunk_tokens: object = ENGINE_DEFAULT
    priority: object = ENGINE_DEFAULT
    kv_capacity: int | None = None
    prefix_hit_rate: float = 0.0
    pipeline_stages: int = 1
    replicas: int = 1
    prefill_workers: int = 0
    decode_workers: int = 0
    kv_transfer_latency_s: float | None = None
    slo_ttft_s: float | None = None
    slo_tpot_s: float | None = None
    usd_per_gpu_hour: float | None = None
    max_sim_time_s: float = 3600.0
    record_timeline: bool = True

    def __post_init__(self):
        if sum(x is not None for x in (self.rate_per_s, self.concurrency, self.trace)) != 1:
            raise InvalidConfigurationError("give exactly one load: rate_per_s, concurrency or trace")
        for name, least in (("requests", 1), ("pipeline_stages", 1), ("replicas", 1), ("prefill_workers", 0),
                            ("decode_workers", 0)):  # fmt: skip
            whole(name, getattr(self, name), least)
        if not 0 <= self.prefix_hit_rate < 1:
            raise InvalidConfigurationError(
                f"prefix_hit_rate must be in [0, 1), got {self.prefix_hit_rate!r}"
            )
        if not self.ramp_s >= 0 or not self.think_time_s >= 0:
            raise InvalidConfigurationError("ramp_s and think_time_s must be >= 0 s")
        if not self.max_sim_time_s > 0 or not np.isfinite(self.max_sim_time_s):
            raise InvalidConfigurationError(
                f"max_sim_time_s must be a finite time > 0, got {self.max_sim_time_s!r}"
            )
        if (self.prefill_workers > 0) != (self.decode_workers > 0):
            raise InvalidConfigurationError(
                "disaggregated serving needs both prefill_workers and decode_workers"
            )

    def with_(self, **changes) -> SimConfig:
        """A copy with some fields changed (checked again)."""
        return replace(self, **changes)

    @property
    def workers(self) -> list[str]:
        """One role per worker: ``"prefill"`` and ``"decode"`` when disaggregated, else ``"both"``."""
        split = ["prefill"] * int(self.prefill_workers) + ["decode"] * int(self.decode_workers)
        return split or ["both"] * int(self.replicas)
