"""Current llama.cpp speeds (data/measured/llama_cpp_bench.csv) against this library's llama.cpp engines.

    uv run python tools/llama_cpp_check.py                     # the 2025 vintage fitted on these rows
    uv run python tools/llama_cpp_check.py --engine llama.cpp  # the mid-2024 vintage, on the same rows

Each row is one llama-bench figure (tokens/s) read from a llama.cpp pull request (provenance and
assumptions: data/measured/README.md). The rows are counted exactly as the fit counts them
(``roofline.calibration.measurements`` reads them, ``roofline.calibration.terms`` turns each into its
steps: a ``tgN`` test N decode steps after the depth, a ``ppN`` test passes of ``ubatch`` tokens, each after
the depth and the passes before it, only the last reading the LM head), then timed by the chosen engine
and by the ideal roofline. The ``llama.cpp-2025`` vintage is fitted on these rows: its held-out errors are in
``data/calibration.toml``; this tool shows each row in sample.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

import numpy as np

from roofline.calibration.fit import predict_rows
from roofline.calibration.measurements import LLAMA_BENCH_ENGINE, load_measurements
from roofline.calibration.terms import terms_for
from roofline.engines.params import load_calibration

SOURCE = "llama.cpp pull requests"  # the rows' source in roofline.calibration.measurements


def speeds(engine: str = LLAMA_BENCH_ENGINE) -> list[dict]:
    """Every llama-bench row with its ids, ``regime`` ("tg", "pp ub=1" or "pp") and the speed ratios
    predicted ÷ measured of ``engine`` (``ratio``) and of the ideal roofline (``ideal_ratio``): above 1,
    the prediction is faster than the measurement.

    >>> rows = speeds()
    >>> len(rows) >= 30, all(r["ideal_ratio"] >= r["ratio"] for r in rows)
    (True, True)
    """
    ms = load_measurements()
    rows = ms.subset(ms.source == SOURCE)
    rows = dataclasses.replace(rows, engine=np.full(len(rows), engine))
    terms = terms_for(rows)
    predicted, floor = predict_rows(terms, load_calibration()), terms.floor_s()
    out = []
    for j in range(len(rows)):
        chunk = int(rows.prefill_chunk[j])
        regime = "tg" if rows.kind[j] == "tpot" else ("pp ub=1" if chunk == 1 else "pp")
        out.append({"gpu": str(rows.gpu[j]), "model": str(rows.model[j]),
                    "weights": str(rows.weight_precision[j]), "regime": regime,
                    "depth": int(rows.context_tokens[j]), "ubatch": chunk or "-",
                    "measured_tokens_per_s": float(rows.measured_throughput[j]),
                    "ratio": float(rows.measured_s[j] / predicted[j]),
                    "ideal_ratio": float(rows.measured_s[j] / floor[j])})  # fmt: skip
    return out


def summarise(rows: list[dict]) -> list[tuple]:
    """Per (GPU, regime): rows, and the median, min and max of predicted ÷ measured speed.

    >>> summarise([{"gpu": "rtx-4090", "regime": "tg", "ratio": 0.5}, {"gpu": "rtx-4090", "regime": "tg",
    ...            "ratio": 1.0}])
    [('rtx-4090', 'tg', 2, 0.75, 0.5, 1.0)]
    """
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["gpu"], r["regime"]), []).append(r["ratio"])
    return [(gpu, regime, len(x), statistics.median(x), min(x), max(x))
            for (gpu, regime), x in sorted(groups.items())]  # fmt: skip


def main(argv=None) -> None:
    """Print every row, then the summary per GPU and regime."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default=LLAMA_BENCH_ENGINE, help=f"default {LLAMA_BENCH_ENGINE}")
    rows = speeds(parser.parse_args(argv).engine)
    print(f"{'gpu':9} {'model':14} {'weights':13} {'regime':8} {'ub':>4} {'depth':>6} {'tok/s':>9} "
          f"{'pred/meas':>9} {'ideal/meas':>10}")  # fmt: skip
    for r in rows:
        flag = "  FASTER THAN IDEAL: check the mapping" if r["ideal_ratio"] < 1 else ""
        print(f"{r['gpu']:9} {r['model']:14} {r['weights']:13} {r['regime']:8} {r['ubatch']!s:>4} "
              f"{r['depth']:6} {r['measured_tokens_per_s']:9.1f} {r['ratio']:9.2f} {r['ideal_ratio']:10.2f}"
              f"{flag}")  # fmt: skip
    print(f"\n{'gpu':9} {'regime':8} {'rows':>4} {'median':>6} {'min':>5} {'max':>5}")
    for gpu, regime, n, med, lo, hi in summarise(rows):
        print(f"{gpu:9} {regime:8} {n:4} {med:6.2f} {lo:5.2f} {hi:5.2f}")
    ratios = [r["ratio"] for r in rows]
    print(f"\nall {len(ratios)} rows: predicted/measured median {statistics.median(ratios):.2f}, "
          f"range {min(ratios):.2f}-{max(ratios):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
