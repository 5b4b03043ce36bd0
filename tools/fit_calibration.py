"""Refit the achievable-performance calibration from data/measured/ and write data/calibration.toml.

    uv run python tools/fit_calibration.py            # fit, cross-validate, write the file
    uv run python tools/fit_calibration.py --check    # exit 1 if the stored fit differs from a refit

The model and the fit live in ``roofline.engines`` (numpy least squares); this tool only runs them and
writes the TOML with its provenance (datasets, rows, date, tool, split, residual summaries), and every row's
held-out prediction (``data/calibration_held_out.csv``, which the validation notebook reads).
"""

from __future__ import annotations

import argparse
import sys

from roofline.data import table_path
from roofline.engines.fit import fit
from roofline.engines.params import (
    CALIBRATION_FILE,
    FITTED_FRACTIONS,
    OVERHEADS,
    Calibration,
    load_calibration,
)
from roofline.engines.store import calibration_toml, fit_provenance
from roofline.engines.validation import HELD_OUT, held_out_csv, validate

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
    params = fit()
    if args.check:
        diffs = compare(load_calibration(), params)
        print("\n".join(diffs) if diffs else "stored calibration matches a refit")
        return 1 if diffs else 0
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
