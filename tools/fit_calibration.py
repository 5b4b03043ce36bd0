"""Rebuild the frozen calibration tables from data/measured/: the kernel numbers, then the engines' costs.

    uv run python tools/fit_calibration.py            # fit, cross-validate, write the files
    uv run python tools/fit_calibration.py --check    # exit 1 if a refit lands > 0.1 % from the stored tables

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
from roofline.calibration.kernel_table import kernel_rows, kernel_table_csv, table_differences
from roofline.calibration.store import calibration_toml, fit_provenance
from roofline.calibration.validation import HELD_OUT, held_out_csv, validate
from roofline.data import table_path
from roofline.engines import params as engine_params
from roofline.engines.params import CALIBRATION_FILE, KERNEL_TABLE_FILE, Calibration, load_calibration

TOOL = "tools/fit_calibration.py"


def flat(cal: Calibration) -> dict:
    """A fit's numbers by their names in ``calibration.toml``: engine.<engine>.<cost> (s) and
    fraction.<family>.<engine>.<fraction>."""
    out = {f"engine.{e}.{k}": v for e, costs in cal.overheads.items() for k, v in costs.items()}
    return out | {f"fraction.{f}.{e}.{k}": v for (f, e), fr in cal.fractions.items() for k, v in fr.items()}


def compare(stored: Calibration, fresh: Calibration, rtol: float = 1e-3) -> list[str]:
    """Differences between two fits beyond ``rtol`` (relative), as readable lines; empty if they agree."""
    a, b = flat(stored), flat(fresh)
    diffs = [f"{k}: only in the {'stored' if k in a else 'refit'} fit" for k in sorted(a.keys() ^ b.keys())]
    for k in sorted(a.keys() & b.keys()):
        if (rel := abs(a[k] - b[k]) / max(abs(a[k]), abs(b[k]), 1e-300)) > rtol:
            diffs.append(f"{k}: stored {a[k]:.6g}, refit {b[k]:.6g} (relative {rel:.2g})")
    return diffs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare the stored fit with a refit")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (by group)")
    args = parser.parse_args(argv)
    kernels = kernel_table_csv(kernel_rows())
    kernel_path = table_path(KERNEL_TABLE_FILE)
    if args.check:  # within 0.1 %: another solver, or another machine's rounding, lands that close
        diffs = [f"{KERNEL_TABLE_FILE}: {d}" for d in table_differences(kernel_path.read_text(), kernels)]
        diffs += [f"{CALIBRATION_FILE}: {d}" for d in compare(load_calibration(), fit())]
        print("\n".join(diffs) if diffs else "stored calibration matches a refit (within 0.1 %)")
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
