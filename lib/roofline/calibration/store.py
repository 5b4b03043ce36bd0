"""Writing a fit to ``data/calibration.toml``, with its provenance (datasets, date, split, errors).

Taught in notebooks/calibration_validation.ipynb; ``tools/fit_calibration.py`` calls it. The file is read
back by ``roofline.engines.params.load_calibration``.

>>> toml_value([1, 0.5, "a"])
'[1, 0.5, "a"]'
"""

from __future__ import annotations

import datetime

import numpy as np

from roofline.calibration.fit import usable_rows
from roofline.calibration.measurements import load_measurements
from roofline.calibration.validation import Validation, in_sample_table
from roofline.engines.params import FITTED_FRACTIONS, OVERHEADS, Calibration
from roofline.engines.registry import get_engine


def toml_value(v) -> str:
    """A Python value as TOML text (bool, int, float to 6 significant digits, str, list)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(float(f"{v:.6g}"))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(type(v))


def calibration_toml(cal: Calibration, provenance: dict) -> str:
    """The text of ``data/calibration.toml`` for ``cal`` with ``provenance`` (a flat dict + tables)."""
    lines = [
        "# Achievable-performance calibration: fitted by tools/fit_calibration.py. Do not edit by hand;",
        "# rerun the tool. Units: fractions 0-1, seconds. See lib/roofline/engines/.",
        "",
        "[provenance]",
    ]
    tables = {k: v for k, v in provenance.items() if isinstance(v, dict)}
    lines += [f"{k} = {toml_value(v)}" for k, v in provenance.items() if not isinstance(v, dict)]
    for name, tab in tables.items():
        lines += ["", f"[provenance.{name}]"] + [f'"{k}" = {toml_value(v)}' for k, v in tab.items()]
    lines += ["", "# Per engine, in seconds: " + "; ".join(f"{k}: {v}" for k, v in OVERHEADS.items()) + "."]
    for eng in sorted(cal.overheads):
        lines += ["", f'[engine."{eng}"]']
        lines += [f"{k} = {toml_value(cal.overheads[eng][k])}" for k in OVERHEADS]
        lines.append(f"parallel = {toml_value(get_engine(eng).parallel)}")
    if cal.fractions:
        lines += [
            "",
            "# Engines without kernel timings, per GPU family: fractions of peak bandwidth, fitted.",
        ]
    for (fam, eng), fr in sorted(cal.fractions.items()):
        lines += ["", f'[fraction.{fam}."{eng}"]'] + [f"{k} = {toml_value(fr[k])}" for k in FITTED_FRACTIONS]
    for (fam, eng), rng in sorted(cal.ranges.items()):
        lines += ["", f'[range.{fam}."{eng}"]'] + [f"{k} = {toml_value(v)}" for k, v in rng.items()]
    lines += ["", "[gpu_family]"] + [f'"{g}" = {toml_value(f)}' for g, f in sorted(cal.gpu_family.items())]
    return "\n".join(lines) + "\n"


def _pct_table(rows: list[dict]) -> dict:
    return {r["name"]: [round(r["median_abs_pct"], 2), round(r["p90_abs_pct"], 2)] for r in rows}


def fit_provenance(cal: Calibration, validation: Validation | None, tool: str) -> dict:
    """Provenance of a fit: datasets, rows, date, tool, split, and residual summaries."""
    ms, ok = load_measurements(), usable_rows()
    prov = {
        "tool": tool,
        "date": datetime.date.today().isoformat(),
        "numpy": np.__version__,
        "datasets": sorted(set(ms.source.tolist())),
        "rows_used": int(ok.sum()),
        "rows_dropped_faster_than_ideal": int((~ok).sum()),
        "groups": int(np.unique(ms.group).size),
        "objective": "least squares on log(predicted / measured), Levenberg-Marquardt, weak priors",
        "fitted": "per engine: step, layer and sequence costs; per GPU family, for engines without kernel "
        "timings: the bandwidth fractions of their GEMMs and decode attention. Everything else comes from "
        "kernel timings (data/measured/kernels/) and NCCL's latencies",
        "split": "final fit on all rows; validation: 5-fold by model x GPU x engine group",
        "prior_dominated": cal.provenance.get("prior_dominated", []),
        "prior_note": "parameters the data barely constrain: their weak prior outweighs the data there",
        "assumptions": "LLM-Inference-Bench A100 = a100-40gb (SXM4 40 GB), H100 = h100-sxm; "
        "aiconfigurator: TPOT only (TTFT includes queueing), KV fp8 for TensorRT-LLM fp8 else bf16",
        "in_sample_median_p90_pct": _pct_table(in_sample_table(cal)),
    }
    if validation is not None:
        prov["held_out_median_p90_pct"] = _pct_table(validation.table())
        prov["held_out_by_engine_median_p90_pct"] = _pct_table(validation.table("engine"))
    return prov
