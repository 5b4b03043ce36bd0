"""Calibrate an engine to your own machine: a few of your measurements become an engine you can name.

Taught in notebooks/floor_to_real_server.ipynb ("Calibrate to your own machine"); ``roofline calibrate``
runs it. Each measurement is a decode step (time between tokens), a time to first token or a whole
request, of a model on a GPU at a batch and lengths. The fit is the project's own
(``roofline.calibration.fit``): the kernels keep their timed or sourced efficiencies, and your engine's own
costs (per step, per layer, per sequence, per all-reduce) move from its base engine's fitted values only
as far as your measurements pull them. The result is saved next to your own GPU rows
(``roofline.data.user_data_dir()``: ``engines.toml`` and ``calibration.toml``), so every explorer and
command can use it by name (``--engine my-vllm``).

A measurement the physics cannot produce is refused with the reason: faster than the ideal floor (check
the precision, the GPU count, the units), or two measurements of one configuration more than 2x apart.

>>> p = Point("llama-3-8b", "h100-sxm", "tpot", 6.4e-3, batch=1, input_tokens=1000, output_tokens=1)
>>> cal = fit_points([p], name="my-vllm", base="vllm")
>>> 0 < cal.overheads["my-vllm"]["step_overhead_s"] < 10e-3
True
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass

import numpy as np

from roofline.calibration.fit import fit_terms
from roofline.calibration.measurements import Measurements
from roofline.calibration.store import toml_value
from roofline.calibration.terms import terms_for
from roofline.data import get_gpu, get_model, user_data_dir
from roofline.engines.params import OVERHEADS, Calibration, load_calibration
from roofline.engines.registry import get_engine
from roofline.errors import InvalidConfigurationError

KINDS = {"tpot": "tpot", "ttft": "ttft", "latency": "latency"}  # what a point measures
# How hard the base engine's costs pull (the project's fit uses 0.3 over thousands of rows): a tenth of a
# log unit of a point's error outweighs the pull of a cost moved by a factor of e.
PRIOR_WEIGHT = 0.01


@dataclass(frozen=True)
class Point:
    """One of your measurements (s). ``kind``: ``"tpot"`` (the time between tokens of ``batch`` sequences
    at a context of about ``input_tokens``), ``"ttft"`` (the prefill of ``batch`` prompts of
    ``input_tokens``) or ``"latency"`` (a whole static batch: prefill then ``output_tokens`` steps)."""

    model: str
    gpu: str
    kind: str
    measured_s: float
    batch: int = 1
    input_tokens: int = 128
    output_tokens: int = 128
    num_gpus: int = 1
    weight_precision: str = "bf16"
    kv_precision: str = "bf16"


def _measurements(points: list[Point], name: str) -> Measurements:
    rows = []
    for i, p in enumerate(points, start=1):
        if p.kind not in KINDS:
            raise InvalidConfigurationError(
                f"measurement {i}: kind must be one of {', '.join(KINDS)}, got {p.kind!r}"
            )
        t = float(p.measured_s)
        if not (math.isfinite(t) and t > 0):
            raise InvalidConfigurationError(
                f"measurement {i}: the time must be a positive number of seconds, got {p.measured_s!r}"
            )
        rows.append(
            dict(
                source="yours",
                kind=KINDS[p.kind],
                model=get_model(p.model).id,
                gpu=get_gpu(p.gpu).id,
                engine=name,
                num_gpus=int(p.num_gpus),
                batch=int(p.batch),
                input_tokens=int(p.input_tokens),
                output_tokens=int(p.output_tokens),
                weight_precision=p.weight_precision,
                kv_precision=p.kv_precision,
                measured_s=t,
                measured_throughput=math.nan,
                prefill_chunk=0,
            )
        )
    return Measurements(**{k: np.array([r[k] for r in rows]) for k in rows[0]})


def _check(ms: Measurements, floors: np.ndarray) -> None:
    """Refuse measurements no engine can produce, and contradictory ones."""
    for i in np.flatnonzero(ms.measured_s < floors):
        raise InvalidConfigurationError(
            f"measurement {i + 1} ({ms.kind[i]} {ms.measured_s[i] * 1e3:.3g} ms) is faster than the ideal "
            "floor "
            f"({floors[i] * 1e3:.3g} ms) for {ms.model[i]} on {ms.num_gpus[i]}x {ms.gpu[i]} at "
            f"{ms.weight_precision[i]}: check the precision, the GPU count and the units"
        )
    keys = [
        tuple(
            getattr(ms, f)[i]
            for f in (
                "kind",
                "model",
                "gpu",
                "num_gpus",
                "batch",
                "input_tokens",
                "output_tokens",
                "weight_precision",
            )
        )
        for i in range(len(ms))
    ]
    for key in set(keys):
        same = ms.measured_s[[k == key for k in keys]]
        if same.size > 1 and same.max() > 2 * same.min():
            raise InvalidConfigurationError(
                f"measurements of one configuration disagree by {same.max() / same.min():.1f}x "
                f"({', '.join(f'{x * 1e3:.3g} ms' for x in same)}): measure again, with warm-up"
            )


def fit_points(points: list[Point], name: str, base: str = "vllm") -> Calibration:
    """Fit engine ``name`` (running ``base``'s kernels) to ``points``: its costs start from ``base``'s fitted
    ones and move where the points say. Returns the calibration of that one engine."""
    if not points:
        raise InvalidConfigurationError("give at least one measurement")
    b = get_engine(base)
    if b.kind == "ideal":
        raise InvalidConfigurationError(
            "the base of a calibrated engine must be a real engine, not the ideal"
        )
    ms = _measurements(points, name)
    terms = terms_for(ms, kernels_of={name: b.id})
    _check(ms, terms.total_s(np.maximum(terms.work.compute_s, terms.work.memory_s)))
    base_costs, _ = load_calibration().overheads_for(b.id)
    return fit_terms(
        ms,
        terms,
        np.ones(len(ms), bool),
        cost_prior={name: base_costs},
        fitted_fractions=False,
        prior_weight=PRIOR_WEIGHT,
    )


def save(cal: Calibration, name: str, base: str, points: list[Point]) -> list[str]:
    """Write engine ``name`` into the user's ``engines.toml`` and its costs into the user's
    ``calibration.toml`` (replacing an earlier calibration of that name); returns the two paths."""
    b = get_engine(base)
    folder = user_data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    today = datetime.date.today().isoformat()
    row = {
        "id": name,
        "name": f"{name} (your calibration of {b.name})",
        "kind": "calibrated",
        "parallel": b.parallel,
        "version": f"your measurements of {today} ({len(points)} points), on {b.name}'s kernels",
        "aliases": [],
        "scheduler": b.scheduler,
        "token_budget": b.token_budget,
        "max_sequences": b.max_sequences,
        "chunk_tokens": b.chunk_tokens,
        "scheduler_source": b.scheduler_source,
        "source": f"roofline calibrate, {today}",
        "note": f"Fitted on {len(points)} of your measurements.",
        "kernels": b.kernels,
    }
    for field in ("chunked_prefill", "whole_prompt_must_fit", "kv_reservation", "pass_tokens"):
        if hasattr(b, field):
            row[field] = getattr(b, field)
    engine_lines = ["[[engine]]"] + [f"{k} = {toml_value(v)}" for k, v in row.items()]
    costs = cal.overheads[name]
    cal_lines = [f'[engine."{name}"]'] + [f"{k} = {toml_value(costs[k])}" for k in OVERHEADS]
    paths = []
    for file, block in (("engines.toml", engine_lines), ("calibration.toml", cal_lines)):
        path = folder / file
        kept = _without(path.read_text() if path.is_file() else "", name)
        path.write_text(kept + ("\n" if kept else "") + "\n".join(block) + "\n")
        paths.append(str(path))
    _forget()
    return paths


def _without(text: str, name: str) -> str:
    """The TOML ``text`` minus the block about engine ``name`` (an earlier calibration)."""
    blocks = [b for b in ("\n" + text).split("\n[") if b.strip()]
    keep = [b for b in blocks if f'id = "{name}"' not in b and not b.startswith(f'engine."{name}"]')]
    return "\n".join("[" + b.strip("\n") if not b.startswith("[") else b for b in keep).strip("\n")


def _forget() -> None:
    """Re-read the engines and calibrations after a save."""
    from roofline.data import clear_cache
    from roofline.engines import params

    clear_cache()
    params.forget_frozen_tables()
