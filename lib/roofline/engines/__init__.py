"""Real engines: which exist, what each reaches on a step, and where that figure leaves what was measured.

Taught in notebooks/floor_to_real_server.ipynb and notebooks/calibration_validation.ipynb. The one home of
"a real engine": every readout, the CLI, ``generate`` and the serving simulator ask this package, so they
agree. How the numbers were fitted and checked is ``roofline.calibration``'s (machinery above the course).

- ``registry``: the engines of ``data/engines.toml`` (``get_engine``; ``"ideal"`` is an engine too);
- ``params``: an engine's numbers on a GPU, and the stored calibration (``data/calibration.toml``);
- ``model``: the only assembly of an achievable step time from a step's aggregates (``StepTimer``);
- ``achievable``: decode steps, prefills, static batches and a measurement judged, floor beside engine;
- ``coverage``: whether a figure leaves the calibrated range.

>>> from roofline import engines
>>> t = engines.decode_step_times(engines.StepTimer("ideal", "llama-3-8b", "h100-sxm"), batch=1)
>>> round(float(t["total"]) * 1e3, 2)
4.48
"""

from .achievable import (
    GenerateResult,
    decode_step_times,
    diagnose_measurement,
    gap_budget,
    generate,
    prefill_times,
    serving_waves,
)
from .coverage import coverage
from .model import BUDGET_PARTS, StepTimer
from .params import card_server_params, engine_params, gpu_families, load_calibration
from .registry import DEFAULT_ENGINE, default_engine, engine_ids, get_engine

__all__ = [
    "BUDGET_PARTS",
    "DEFAULT_ENGINE",
    "GenerateResult",
    "StepTimer",
    "card_server_params",
    "coverage",
    "decode_step_times",
    "default_engine",
    "diagnose_measurement",
    "engine_ids",
    "engine_params",
    "gap_budget",
    "generate",
    "get_engine",
    "gpu_families",
    "load_calibration",
    "prefill_times",
    "serving_waves",
]
