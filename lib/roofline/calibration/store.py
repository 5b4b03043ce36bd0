"""Writing a fit to ``data/calibration.toml``, with its provenance (datasets, date, split, errors).

Taught in notebooks/calibration_validation.ipynb; ``tools/fit_calibration.py`` calls it. The file is read
back by ``roofline.engines.params.load_calibration``; ``tomli_w`` writes it.
"""

from __future__ import annotations

import datetime

import numpy as np
import tomli_w

from roofline.calibration.fit import usable_rows
from roofline.calibration.measurements import load_measurements
from roofline.calibration.validation import Validation, in_sample_table
from roofline.engines.params import FITTED_FRACTIONS, OVERHEADS, Calibration
from roofline.engines.registry import get_engine

HEADER = (
    "# Achievable-performance calibration: fitted by tools/fit_calibration.py. Do not edit by hand;\n"
    "# rerun the tool. Units: fractions 0-1, seconds. See lib/roofline/engines/.\n"
    "# Per engine, in seconds:\n"
    + "".join(f"#   {k}: {v}\n" for k, v in OVERHEADS.items())
    + "# [fraction.<family>.<engine>]: engines without kernel timings, per GPU family: fractions of peak\n"
    "# bandwidth, fitted.\n\n"
)


def rounded(value):
    """``value`` with every float rounded to 6 significant digits (lists, tuples and dicts walked; numpy
    scalars as Python numbers), as ``data/calibration.toml`` stores it.

    >>> rounded((np.float64(2.0000004e-06), np.int64(3)))
    [2e-06, 3]
    """
    if isinstance(value, dict):
        return {str(k): rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    return float(f"{value:.6g}") if isinstance(value, float) else value


def calibration_toml(cal: Calibration, provenance: dict) -> str:
    """The text of ``data/calibration.toml`` for ``cal`` with ``provenance`` (values and tables): per engine
    its costs (s) and parallelism, per (family, engine) its fitted fractions and measured range, the GPU
    families; every float to 6 significant digits.

    >>> import tomllib
    >>> cal = Calibration({"vllm": dict.fromkeys(OVERHEADS, 1e-3)}, gpu_family={"h100-sxm": "hopper"})
    >>> tomllib.loads(calibration_toml(cal, {"tool": "x"}))["engine"]["vllm"]["parallel"]
    'tensor'
    """
    doc = {
        "provenance": provenance,
        "engine": {
            e: {**{k: cal.overheads[e][k] for k in OVERHEADS}, "parallel": get_engine(e).parallel}
            for e in sorted(cal.overheads)
        },  # fmt: skip
        "fraction": _by_family(
            {key: {k: v[k] for k in FITTED_FRACTIONS} for key, v in cal.fractions.items()}
        ),
        "range": _by_family(cal.ranges),
        "gpu_family": dict(sorted(cal.gpu_family.items())),
    }
    return HEADER + tomli_w.dumps(rounded({k: v for k, v in doc.items() if v}))


def _by_family(table: dict) -> dict:
    """{(family, engine): v} as {family: {engine: v}}, sorted."""
    out: dict = {}
    for (family, engine), v in sorted(table.items()):
        out.setdefault(family, {})[engine] = v
    return out


def _pct_table(rows: list[dict]) -> dict:
    return {r["name"]: [round(r["median_abs_pct"], 2), round(r["p90_abs_pct"], 2)] for r in rows}


def fit_provenance(cal: Calibration, validation: Validation, tool: str) -> dict:
    """Provenance of the fit ``cal``: datasets, rows, date, ``tool``, split, and residual summaries (median
    and p90 absolute % errors, in sample and held out in ``validation``).

    >>> from roofline.calibration.validation import stored_validation
    >>> from roofline.engines.params import load_calibration
    >>> prov = fit_provenance(load_calibration(), stored_validation(), "a test")
    >>> prov["tool"], prov["rows_used"] > 1000, list(prov["held_out_median_p90_pct"])[0]
    ('a test', True, 'batch-1 decode')
    """
    ms, ok = load_measurements(), usable_rows()
    return {
        "tool": tool,
        "date": datetime.date.today().isoformat(),
        "numpy": np.__version__,
        "datasets": sorted(set(ms.source.tolist())),
        "rows_used": int(ok.sum()),
        "rows_dropped_faster_than_ideal": int((~ok).sum()),
        "groups": int(np.unique(ms.group).size),
        "objective": "least squares on log(predicted / measured), weak priors; scipy.optimize.least_squares "
        "(Levenberg-Marquardt)",
        "fitted": "per engine: step, layer and sequence costs; per GPU family, for engines without kernel "
        "timings: the bandwidth fractions of their GEMMs and decode attention. Everything else comes from "
        "kernel timings (data/measured/kernels/) and NCCL's latencies",
        "split": "final fit on all rows; validation: 5-fold by model x GPU x engine group",
        "prior_dominated": cal.provenance.get("prior_dominated", []),
        "prior_note": "parameters the data barely constrain: their weak prior outweighs the data there",
        "assumptions": "LLM-Inference-Bench A100 = a100-40gb (SXM4 40 GB), H100 = h100-sxm; "
        "aiconfigurator: TPOT only (TTFT includes queueing), KV fp8 for TensorRT-LLM fp8 else bf16",
        "in_sample_median_p90_pct": _pct_table(in_sample_table(cal)),
        "held_out_median_p90_pct": _pct_table(validation.table()),
        "held_out_by_engine_median_p90_pct": _pct_table(validation.table("engine")),
    }
