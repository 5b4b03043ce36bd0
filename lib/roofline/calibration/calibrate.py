"""Calibrate an engine to your own machine: a few of your measurements become an engine you can name.

Taught in notebooks/floor_to_real_server.ipynb ("Calibrate to your own machine"); ``roofline calibrate``
runs it. The fit is the project's own (``roofline.calibration.fit``): the kernels keep their timed or
sourced efficiencies, and your engine's own costs (per step, per layer, per sequence, per all-reduce, per
ring hop) move from its base engine's fitted values only as far as your measurements (``Point``) pull
them. The result is saved next to your own GPU rows (``roofline.data.user_data_dir()``: ``engines.toml`` and
``calibration.toml``), so every explorer and command can use it by name (``--engine my-vllm``).

A measurement the physics cannot produce is refused with the reason: faster than the ideal floor (check
the precision, the GPU count, the units), or two measurements of one configuration more than 2x apart.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
import tempfile
import tomllib
from dataclasses import dataclass

import numpy as np
import tomli_w

from roofline.calibration.fit import fit_terms
from roofline.calibration.measurements import Measurements
from roofline.calibration.terms import terms_for
from roofline.data import (
    clear_cache,
    get_gpu,
    get_model,
    project_engine_names,
    user_data_dir,
)
from roofline.engines.params import (
    OVERHEAD_LIMITS_S,
    OVERHEADS,
    Calibration,
    forget_frozen_tables,
    load_calibration,
)
from roofline.engines.registry import get_engine
from roofline.errors import DataTableError, InvalidConfigurationError
from roofline.measure.userdata import check_own_id
from roofline.tables import read_text_file

KINDS = ("tpot", "ttft", "latency")  # what a point measures
# How hard the base engine's costs pull (the project's fit uses 0.3 over thousands of rows): a tenth of a
# log unit of a point's error outweighs the pull of a cost moved by a factor of e.
PRIOR_WEIGHT = 0.01
# What a calibrated engine takes from its base engine's row (those it has) besides its kernels' timings.
INHERITED = ("parallel", "scheduler", "token_budget", "max_sequences", "chunk_tokens", "scheduler_source",
             "kernels", "chunked_prefill", "whole_prompt_must_fit", "kv_reservation",
             "pass_tokens")  # fmt: skip


@dataclass(frozen=True)
class Point:
    """One of your measurements (s). ``kind``: ``"tpot"`` (the time between tokens of ``batch`` sequences
    at a context of about ``input_tokens``), ``"ttft"`` (the prefill of ``batch`` prompts of
    ``input_tokens``) or ``"latency"`` (a whole static batch: prefill then ``output_tokens`` steps).

    >>> Point("llama-3-8b", "h100-sxm", "tpot", 7e-3, batch=8).input_tokens     # tokens of context
    128
    """

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
    """``points`` as measured rows of engine ``name``, each checked (a known kind, a positive time)."""
    rows = []
    for i, p in enumerate(points, start=1):
        if p.kind not in KINDS:
            raise InvalidConfigurationError(
                f"measurement {i}: kind must be one of {', '.join(KINDS)}, got {p.kind!r}"
            )
        if not (math.isfinite(t := float(p.measured_s)) and t > 0):
            raise InvalidConfigurationError(
                f"measurement {i}: the time must be a positive number of seconds, got {p.measured_s!r}"
            )
        counts = {k: int(getattr(p, k)) for k in ("num_gpus", "batch", "input_tokens", "output_tokens")}
        rows.append({**dataclasses.asdict(p), **counts, "source": "yours", "model": get_model(p.model).id,
                     "gpu": get_gpu(p.gpu).id, "engine": name, "measured_s": t})  # fmt: skip
    return Measurements.from_rows(rows)


def _check(ms: Measurements, floors_s: np.ndarray) -> None:
    """Refuse measurements no engine can produce (faster than the floors, s), and contradictory ones."""
    for i in np.flatnonzero(ms.measured_s < floors_s):
        raise InvalidConfigurationError(
            f"measurement {i + 1} ({ms.kind[i]} {ms.measured_s[i] * 1e3:.3g} ms) is faster than the ideal "
            f"floor ({floors_s[i] * 1e3:.3g} ms) for {ms.model[i]} on {ms.num_gpus[i]}x {ms.gpu[i]} at "
            f"{ms.weight_precision[i]}: check the precision, the GPU count and the units"
        )
    # one configuration: every field of a point but its time and its KV precision
    fields = [f.name for f in dataclasses.fields(Point) if f.name not in ("measured_s", "kv_precision")]
    keys = [tuple(getattr(ms, f)[i] for f in fields) for i in range(len(ms))]
    for key in set(keys):
        same = ms.measured_s[[k == key for k in keys]]
        if same.size > 1 and same.max() > 2 * same.min():
            raise InvalidConfigurationError(
                f"measurements of one configuration disagree by {same.max() / same.min():.1f}x "
                f"({', '.join(f'{x * 1e3:.3g} ms' for x in same)}): measure again, with warm-up"
            )


def check_engine_name(name: str) -> str:
    """``name`` as the id of a learner's own engine: 1-40 lowercase letters, digits, ``.``, ``_``, ``-``
    (``roofline.measure.userdata.check_name``), and neither a project engine's id or alias (``vllm``,
    ``ideal``, ``trtllm``) nor within a typo of one. Returned as is.

    >>> check_engine_name("my-vllm")
    'my-vllm'
    >>> check_engine_name("trtllm")
    Traceback (most recent call last):
    ...
    roofline.errors.InvalidConfigurationError: 'trtllm' already names an engine in the project's table; ...
    """
    return check_own_id(name, "engine", project_engine_names(), "my-vllm")


def fit_points(points: list[Point], name: str, base: str = "vllm") -> Calibration:
    """Fit engine ``name`` (running ``base``'s kernels) to ``points``: its costs (s) start from ``base``'s
    fitted ones and move where the points say. Returns the calibration of that one engine.

    >>> p = Point("llama-3-8b", "h100-sxm", "tpot", 6.4e-3, batch=1, input_tokens=1000, output_tokens=1)
    >>> cal = fit_points([p], name="my-vllm", base="vllm")
    >>> 0 < cal.overheads["my-vllm"]["step_overhead_s"] < 10e-3
    True
    """
    check_engine_name(name)
    if not points:
        raise InvalidConfigurationError("give at least one measurement")
    b = get_engine(base)
    if b.kind == "ideal":
        raise InvalidConfigurationError(
            "the base of a calibrated engine must be a real engine, not the ideal"
        )
    ms = _measurements(points, name)
    terms = terms_for(ms, kernels_of={name: b.id})
    _check(ms, terms.floor_s())
    base_costs, _ = load_calibration().overheads_for(b.id)
    train, prior = np.ones(len(ms), bool), {name: base_costs}
    cal = fit_terms(ms, terms, train, cost_prior=prior, fitted_fractions=False, prior_weight=PRIOR_WEIGHT)
    for key, most in OVERHEAD_LIMITS_S.items():
        if not cal.overheads[name][key] <= most:
            raise InvalidConfigurationError(
                f"your measurements need a {key.removesuffix('_s').replace('_', ' ')} of "
                f"{cal.overheads[name][key]:.3g} s, more than an engine spends ({most:g} s at most): "
                f"check the units (ms), the model, the GPU and its count"
            )
    return cal


def save(cal: Calibration, name: str, base: str, points: list[Point]) -> list[str]:
    """Write engine ``name`` (running ``base``'s kernels) into the user's ``engines.toml`` and its fitted
    costs (s) from ``cal`` into the user's ``calibration.toml`` (``roofline.data.user_data_dir()``),
    replacing an earlier calibration of that name; ``points`` are recorded by number. Returns the two
    paths. The test suite saves into a temporary folder (``tests/test_engines_calibrate.py``)."""
    check_engine_name(name)
    b = get_engine(base)
    today = datetime.date.today().isoformat()
    row = {
        "id": name,
        "name": f"{name} (your calibration of {b.name})",
        "kind": "calibrated",
        "aliases": [],
        "version": f"your measurements of {today} ({len(points)} points), on {b.name}'s kernels",
        "source": f"roofline calibrate, {today}",
        "note": f"Fitted on {len(points)} of your measurements.",
    }
    row.update({field: getattr(b, field) for field in INHERITED if hasattr(b, field)})
    costs = {k: cal.overheads[name][k] for k in OVERHEADS}
    folder = user_data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    engines_path, cal_path = folder / "engines.toml", folder / "calibration.toml"
    mine = _read_user_toml(engines_path)
    mine["engine"] = [e for e in mine.get("engine", []) if e.get("id") != name] + [row]
    engines_text = tomli_w.dumps(mine)
    mine = _read_user_toml(cal_path)
    mine["engine"] = {**{e: v for e, v in mine.get("engine", {}).items() if e != name}, name: costs}
    write_atomically({engines_path: engines_text, cal_path: tomli_w.dumps(mine)})
    clear_cache()  # every table and engine is re-read with the new one
    forget_frozen_tables()
    return [str(engines_path), str(cal_path)]


def write_atomically(texts: dict) -> None:
    """Write each ``{path: text}`` (UTF-8) so a reader sees the old file or the new one, never half of
    one: every text goes to a temporary file beside its path first, then each replaces its path
    (``os.replace``). Nothing is replaced if any temporary write fails.

    >>> import pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> write_atomically({d / "a.toml": "x = 1"}); (d / "a.toml").read_text(), sorted(os.listdir(d))
    ('x = 1', ['a.toml'])
    """
    staged = []
    try:
        for path, text in texts.items():
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=f".{os.path.basename(path)}.")
            staged.append((tmp, path))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)


def _read_user_toml(path) -> dict:
    try:
        return tomllib.loads(read_text_file(path)) if path.is_file() else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise DataTableError(
            f"{path}: not valid TOML ({exc}); fix or remove it, then calibrate again"
        ) from None
