"""How well the fitted engines predict runs they were not fitted to: group k-fold cross-validation.

Taught in notebooks/calibration_validation.ipynb. Rows are grouped by model × GPU × engine and whole groups
are held out together, so a group's rows are predicted by a fit that never saw that configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.calibration.fit import fit, predict_rows, usable_rows
from roofline.calibration.measurements import Measurements, load_measurements, read_csv
from roofline.calibration.terms import measured_terms, terms_for
from roofline.data import MEASURED_DIR, DataTableError, table_path
from roofline.engines.params import Calibration, load_calibration
from roofline.engines.registry import get_engine

REGIMES = ("batch-1 decode", "batched decode", "prefill/TTFT", "end-to-end", "throughput")
# Goals of the held-out median absolute error, per regime (fractions)
GOALS = {"batch-1 decode": 0.12, "batched decode": 0.12, "prefill/TTFT": 0.20, "end-to-end": 0.12,
         "throughput": 0.12}  # fmt: skip


def group_folds(groups: np.ndarray, k: int = 5) -> np.ndarray:
    """Fold (0 … k−1) of every row, whole groups together: groups sorted by name, dealt round-robin.

    >>> group_folds(np.array(["b", "a", "b", "c"]), k=2).tolist()
    [1, 0, 1, 0]
    """
    names = np.unique(groups)
    fold_of = {g: j % k for j, g in enumerate(names)}
    return np.array([fold_of[g] for g in groups])


@dataclass(frozen=True)
class Validation:
    """Predictions (s) for every usable row (each from a fit that never saw its group), and their errors.

    >>> v = stored_validation()
    >>> bool((v.abs_error >= 0).all()), int(np.isfinite(v.throughput_abs_error()).sum()) > 100
    (True, True)
    """

    measurements: Measurements
    predicted_s: np.ndarray
    fold: np.ndarray

    @property
    def abs_error(self) -> np.ndarray:
        """|predicted ÷ measured − 1| per row (fraction)."""
        return np.abs(self.predicted_s / self.measurements.measured_s - 1)

    def throughput_abs_error(self) -> np.ndarray:
        """|predicted ÷ measured − 1| of the study's throughput column, NaN elsewhere: latency rows whose
        printed throughput agrees (within 5 %) with B × 2L ÷ its own latency. That leaves out llama.cpp
        (its "batch" is not concurrent requests) and a few rows whose throughput column is inconsistent."""
        ms = self.measurements
        tokens = ms.batch * (ms.input_tokens + ms.output_tokens)
        lat = (ms.kind == "latency") & (np.abs(tokens / ms.measured_s / ms.measured_throughput - 1) < 0.05)
        predicted = np.where(lat, tokens / self.predicted_s, np.nan)
        return np.abs(predicted / ms.measured_throughput - 1)

    def table(self, by: str = "regime") -> list[dict]:
        """Median and p90 absolute % error per regime (``by="regime"``), per engine (``by="engine"``) or per
        engine × GPU family × regime (``by="engine-family-regime"``, named "engine | family | regime").

        >>> stored_validation().table("engine-family-regime")[0]["name"]
        'deepspeed-mii | ampere | end-to-end'
        """
        ms, err, regime = self.measurements, self.abs_error, self.measurements.regime
        engines = sorted(set(ms.engine.tolist()))
        if by == "regime":
            keys = [(r, regime == r) for r in REGIMES if r != "throughput"]
            keys.insert(1, ("batch-1 end-to-end", (ms.kind == "latency") & (ms.batch == 1)))
        elif by == "engine":
            keys = [(e, ms.engine == e) for e in engines]
        elif by == "engine-family-regime":
            family = np.array([load_calibration().family(g) for g in ms.gpu])
            families = {e: sorted(set(family[ms.engine == e].tolist())) for e in engines}
            cells = [(e, f, r) for e in engines for f in families[e] for r in REGIMES]
            keys = [(" | ".join(c), (ms.engine == c[0]) & (family == c[1]) & (regime == c[2])) for c in cells]
        else:
            raise ValueError(f"by must be 'regime', 'engine' or 'engine-family-regime', got {by!r}")
        rows = [summary(name, err[sel], ms.group[sel]) for name, sel in keys if sel.any()]
        if by == "regime":
            tp = self.throughput_abs_error()
            sel = np.isfinite(tp)
            rows.append(summary("throughput", tp[sel], ms.group[sel]))
        return rows


def summary(name: str, err: np.ndarray, groups: np.ndarray) -> dict:
    """Rows, groups, median and p90 absolute % error of ``err`` (fractions, one per row of ``groups``), and
    the goal of the regime ``name`` ends with (%; None if it has none).

    >>> r = summary("end-to-end", np.array([0.1, 0.2, 0.3]), np.array(["a", "a", "b"]))
    >>> r["rows"], r["groups"], round(r["median_abs_pct"], 6), r["goal_pct"]
    (3, 2, 20.0, 12.0)
    """
    return {
        "name": name,
        "rows": int(err.size),
        "groups": int(np.unique(groups).size),
        "median_abs_pct": float(np.median(err) * 100),
        "p90_abs_pct": float(np.percentile(err, 90) * 100),
        "goal_pct": GOALS[goal] * 100 if (goal := name.split(" | ")[-1]) in GOALS else None,
    }


def held_out_predictions(fold: int, k: int = 5) -> np.ndarray:
    """Predicted time (s) of every measured row of ``fold`` (of ``k``) by a fit on the other folds; NaN
    elsewhere. One fifth of :func:`validate` (a refit takes seconds, so no example here)."""
    ms, terms = load_measurements(), measured_terms()
    held = group_folds(ms.group, k) == fold
    pred = np.full(len(ms), np.nan)
    pred[held] = predict_rows(terms, fit(train_rows=~held))[held]
    return pred


def validate(k: int = 5) -> Validation:
    """``k``-fold cross-validation by configuration group (model × GPU × engine): ``k`` fits, seconds each,
    so no example here (``stored_validation`` reads what ``tools/fit_calibration.py`` stored)."""
    ms, ok = load_measurements(), usable_rows()
    pred = np.nansum([held_out_predictions(f, k) for f in range(k)], axis=0)  # each row held out once
    return Validation(ms.subset(ok), pred[ok], group_folds(ms.group, k)[ok])


PUBLISHED = "published_checks.csv"  # in data/measured/: figures no fit sees, with their engine versions
HELD_OUT = "calibration_held_out.csv"  # in data/: every usable row's held-out prediction (s)
HELD_OUT_COLUMNS = ("source", "kind", "model", "gpu", "engine", "num_gpus", "batch", "input_tokens",
                    "output_tokens", "weight_precision", "measured_s", "predicted_s", "fold")  # fmt: skip


def held_out_csv(v: Validation) -> str:
    """The text of ``data/calibration_held_out.csv``: one line per usable row, its held-out prediction (s).

    >>> held_out_csv(stored_validation()).splitlines()[0].split(",")[-3:]
    ['measured_s', 'predicted_s', 'fold']
    """
    ms = v.measurements
    lines = [",".join(HELD_OUT_COLUMNS)]
    for i in range(len(ms)):
        values = [getattr(ms, c)[i] for c in HELD_OUT_COLUMNS[:-3]]
        values += [f"{ms.measured_s[i]:.9g}", f"{v.predicted_s[i]:.9g}", int(v.fold[i])]
        lines.append(",".join(str(x) for x in values))
    return "\n".join(lines) + "\n"


def stored_validation() -> Validation:
    """The held-out predictions ``tools/fit_calibration.py`` stored (``data/calibration_held_out.csv``), as a
    :class:`Validation` of today's measurements: the notebook reads them instead of refitting five times.

    >>> v = stored_validation()
    >>> len(v.predicted_s) == int(usable_rows().sum())
    True
    """
    rows = read_csv(table_path(HELD_OUT), required=("model", "predicted_s", "fold"))
    ms = load_measurements().subset(usable_rows())
    if len(rows) != len(ms) or any(r["model"] != m for r, m in zip(rows, ms.model, strict=True)):
        raise DataTableError(
            f"{table_path(HELD_OUT)}: stale (the measurements changed): rerun tools/fit_calibration.py"
        )
    folds = np.array([int(r["fold"]) for r in rows])
    return Validation(ms, np.array([float(r["predicted_s"]) for r in rows]), folds)


def published_checks() -> list[dict]:
    """Published serving TPOTs that no fit uses (``data/measured/published_checks.csv``: the release measured
    in ``engine_version``), each with this library's prediction (s) of the same closed loop of
    ``concurrency`` clients (``roofline.calibration.terms``) and its ``error``, predicted ÷ published − 1.

    >>> checks = published_checks()
    >>> all(c["predicted_tpot_s"] > 0 for c in checks)
    True
    """
    rows = read_csv(table_path(MEASURED_DIR) / PUBLISHED, required=("model", "gpu", "engine", "tpot_s"))
    ms = Measurements.from_rows([
        dict(source=r["source"], kind="tpot_serving", model=r["model"], gpu=r["gpu"],
             engine=get_engine(r["engine"]).id, num_gpus=int(r["num_gpus"]), batch=int(r["concurrency"]),
             input_tokens=int(r["input_tokens"]), output_tokens=int(r["output_tokens"]),
             weight_precision=r["weight_precision"], kv_precision=r["kv_precision"],
             measured_s=float(r["tpot_s"]))
        for r in rows
    ])  # fmt: skip
    predicted = predict_rows(terms_for(ms), load_calibration())
    return [{**r, "tpot_s": m, "predicted_tpot_s": float(p), "error": float(p / m - 1)}
            for r, m, p in zip(rows, ms.measured_s.tolist(), predicted, strict=True)]  # fmt: skip


def predict(calibration: Calibration | None = None) -> np.ndarray:
    """Predicted time (s) of every measured row: latency, TTFT or mean decode step, as the row measures.

    >>> bool(np.all(predict() > 0))
    True
    """
    return predict_rows(measured_terms(), calibration or load_calibration())


def in_sample_table(calibration: Calibration | None = None) -> list[dict]:
    """Median and p90 absolute % error per regime of ``calibration`` (default: the stored fit), all rows.

    >>> [r["name"] for r in in_sample_table()][:2]
    ['batch-1 decode', 'batch-1 end-to-end']
    """
    ms, ok = load_measurements(), usable_rows()
    v = Validation(ms.subset(ok), predict(calibration)[ok], np.zeros(ok.sum(), int))
    return v.table("regime")
