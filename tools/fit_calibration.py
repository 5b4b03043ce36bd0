"""Rebuild the frozen calibration tables from data/measured/: the kernel numbers, then the engines' costs.

    uv run python tools/fit_calibration.py            # fit, cross-validate, write the files
    uv run python tools/fit_calibration.py --check    # exit 1 if the stored tables differ from a refit

The pipeline lives in ``roofline.calibration``; this tool runs it in order. First the kernel timings are
fitted and frozen (``data/calibration_kernels.csv``, which every engine's step reads), then the engines'
own costs are fitted on the published runs against those kernels and written with their provenance
(``data/calibration.toml``: datasets, rows, date, tool, split, residual summaries), with every row's
held-out prediction (``data/calibration_held_out.csv``, which the validation notebook reads).
"""

from __future__ import annotations

import argparse
import sys

from roofline.calibration.fit import fit
from roofline.calibration.kernel_table import kernel_rows, kernel_table_csv
from roofline.calibration.store import calibration_toml, fit_provenance
from roofline.calibration.validation import HELD_OUT, held_out_csv, validate
from roofline.data import table_path
from roofline.engines import params as engine_params
from roofline.engines.params import (
    CALIBRATION_FILE,
    FITTED_FRACTIONS,
    KERNEL_TABLE_FILE,
    OVERHEADS,
    Calibration,
    load_calibration,
)

TOOL = "tools/fit_calibration.py"


def compare(stored: Calibration, fresh: Calibration, rtol: float = 1e-3) -> list[str]:
    """Differences between two fits beyond ``rtol`` (relative), as readable lines; empty if they agree."""
    diffs = []

    def close(a, b):
        return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-30)

    if set(stored.fractions) != set(fresh.fractions):
        diffs.append(f"fitted pairs differ: {sorted(stored.fractions)} vs {sorted(fresh.fractions)}")
    for key in set(stored.fractions) & set(fresh.fractions):
        for name in FITTED_FRACTIONS:
            a, b = stored.fractions[key][name], fresh.fractions[key][name]
            if not close(a, b):
                diffs.append(f"{key} {name}: stored {a:.6g}, refit {b:.6g}")
    for eng in set(stored.overheads) | set(fresh.overheads):
        s, f = stored.overheads.get(eng, {}), fresh.overheads.get(eng, {})
        for name in OVERHEADS:
            if name not in s or name not in f or not close(s[name], f[name]):
                diffs.append(f"engine {eng} {name}: stored {s.get(name)}, refit {f.get(name)}")
    return diffs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare the stored fit with a refit")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (by group)")
    args = parser.parse_args(argv)
    kernels = kernel_table_csv(kernel_rows())
    kernel_path = table_path(KERNEL_TABLE_FILE)
    if args.check:
        stale = kernel_path.read_text() != kernels
        diffs = [f"{kernel_path} differs from the kernel fits"] if stale else []
        diffs += compare(load_calibration(), fit())
        print("\n".join(diffs) if diffs else "stored calibration matches a refit")
        return 1 if diffs else 0
    kernel_path.write_text(kernels)
    engine_params.forget_frozen_tables()
    params = fit()
    validation = validate(k=args.folds)
    prov = fit_provenance(params, validation, TOOL)
    path = table_path(CALIBRATION_FILE)
    path.write_text(calibration_toml(params, prov))
    table_path(HELD_OUT).write_text(held_out_csv(validation))
    print(f"wrote {path}")
    for r in validation.table("regime") + validation.table("engine"):
        print(
            f"  {r['name']:<20} {r['rows']:>5} rows {r['groups']:>3} groups"
            f"  median {r['median_abs_pct']:5.1f} %"
            f"  p90 {r['p90_abs_pct']:5.1f} %"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
