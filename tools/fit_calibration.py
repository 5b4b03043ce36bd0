"""Refit the achievable-performance calibration from data/measured/ and write data/calibration.toml.

    uv run python tools/fit_calibration.py            # fit, cross-validate, write the file
    uv run python tools/fit_calibration.py --check    # exit 1 if the stored fit differs from a refit

The physics and the fit live in ``roofline.achievable`` (numpy least squares); this tool only runs them and
writes the TOML with its provenance (datasets, rows, date, tool, split, residual summaries).
"""

from __future__ import annotations

import argparse
import sys

from roofline import achievable as ach

TOOL = "tools/fit_calibration.py"


def compare(stored: ach.Params, fresh: ach.Params, rtol: float = 1e-3) -> list[str]:
    """Differences between two fits beyond ``rtol`` (relative), as readable lines; empty if they agree."""
    diffs = []

    def close(a, b):
        return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-30)

    if set(stored.fractions) != set(fresh.fractions):
        diffs.append(f"fitted pairs differ: {sorted(stored.fractions)} vs {sorted(fresh.fractions)}")
    for key in set(stored.fractions) & set(fresh.fractions):
        for name, a, b in zip(
            ("bandwidth", "compute"), stored.fractions[key], fresh.fractions[key], strict=True
        ):
            if not close(a, b):
                diffs.append(f"{key} {name}: stored {a:.6g}, refit {b:.6g}")
    for table in ("step_overhead_s", "layer_overhead_s", "sequence_overhead_s", "allreduce_hop_latency_s"):
        s, f = getattr(stored, table), getattr(fresh, table)
        for eng in set(s) | set(f):
            if eng not in s or eng not in f or not close(s[eng], f[eng]):
                diffs.append(f"{table}[{eng}]: stored {s.get(eng)}, refit {f.get(eng)}")
    return diffs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare the stored fit with a refit")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (by group)")
    args = parser.parse_args(argv)
    params = ach.fit()
    if args.check:
        diffs = compare(ach.load_calibration(), params)
        print("\n".join(diffs) if diffs else "stored calibration matches a refit")
        return 1 if diffs else 0
    validation = ach.validate(k=args.folds)
    prov = ach.fit_provenance(params, validation, TOOL)
    path = ach.DATA_DIR / ach.CALIBRATION_FILE
    path.write_text(ach.calibration_toml(params, prov))
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
