"""AMD Instinct measurements (data/measured/amd_instinct.csv) beside the library's predictions.

For each row: the measurement, the prediction of the row's engine ("vllm" or "sglang") and of the ideal
roofline, and the speed ratio predicted ÷ measured (a time ratio is inverted, so > 1 always means the
library predicts a faster run than was measured). Rows measured faster than the ideal are flagged.
Run: ``uv run python tools/amd_check.py`` (about a minute on 2 cores).
"""

from __future__ import annotations

import statistics

import numpy as np

from roofline import sim
from roofline.calibration.measurements import read_csv
from roofline.data import MEASURED_DIR, table_path
from roofline.engines.achievable import StepTimer, generate
from roofline.sim.validation import ranged_lengths

CSV = "amd_instinct.csv"  # in data/measured/
TIMES = ("e2e_latency_s", "ttft_s", "tpot_s")
RATES = ("output_tokens_per_s", "unstated_kind_tokens_per_s")
TEXT = ("date", "software_vintage", "engine_version", "note", "statistic", "licence")


def load_rows(name: str = CSV) -> list[dict]:
    """The rows of ``data/measured/<name>``, empty cells dropped, numbers as floats.

    >>> {r["gpu"] for r in load_rows()} == {"mi300x", "mi325x", "mi355x"}
    True
    """
    rows = read_csv(table_path(MEASURED_DIR) / name)
    return [{k: _num(k, v) for k, v in r.items() if v != ""} for r in rows]


def _num(column: str, v: str):
    if column in TEXT:
        return v
    try:
        return float(v)
    except ValueError:
        return v


def _simulate(row: dict, engine: str, **load) -> sim.SimResult:
    out = row["output_tokens"]
    low = row.get("length_low_fraction", 1.0)
    return sim.simulate(sim.SimConfig(
        row["model"], row["gpu"], engine=engine, num_gpus=int(row["tensor_parallel"]),
        replicas=int(row["replicas"]), weight_precision=row["weight_precision"],
        kv_precision=row["kv_precision"], input_tokens=ranged_lengths(row.get("input_tokens", out), low),
        output_tokens=ranged_lengths(out, low),
        max_batch=int(row.get("max_num_seqs", 0)) or sim.ENGINE_DEFAULT,
        max_sim_time_s=1e6, record_timeline=False, **load))  # fmt: skip


def _meets_limits(row: dict, engine: str, rate: float) -> bool:
    r = _simulate(row, engine, rate_per_s=rate, requests=int(max(2000, 40 * rate)))
    return (r.ttft_s_percentiles["p99"] <= row["ttft_limit_p99_s"]
            and r.tpot_s_percentiles["p99"] <= row["tpot_limit_p99_s"])  # fmt: skip


def predict(row: dict, engine: str) -> dict:
    """What ``engine`` predicts for ``row``: the row's measured quantities (s, tokens/s), plus
    ``total_tokens_per_s`` where the kind of throughput is unstated. A row without input lengths is run
    with input = output tokens (an assumption, stated in data/measured/README.md).

    >>> row = [r for r in load_rows() if r["scenario"] == "batch latency"][0]
    >>> predict(row, "ideal")["e2e_latency_s"] < predict(row, "vllm")["e2e_latency_s"]
    True
    """
    s, out = row["scenario"], row["output_tokens"]
    if s == "batch latency":
        timer = StepTimer(
            engine,
            row["model"],
            row["gpu"],
            num_gpus=int(row["tensor_parallel"]),
            weight_precision=row["weight_precision"],
            kv_precision=row["kv_precision"],
        )
        g = generate(timer, int(row["batch_or_concurrency"]), int(row["input_tokens"]), int(out))
        return {"e2e_latency_s": g.ideal.latency_s if engine == "ideal" else g.achievable.latency_s}
    if s in ("mlperf server", "mlperf interactive"):  # highest Poisson rate meeting the p99 limits
        lo, hi = 0.0, _simulate(row, engine, concurrency=24576, requests=24576).requests_per_s
        for _ in range(7):
            lo, hi = ((lo + hi) / 2, hi) if _meets_limits(row, engine, (lo + hi) / 2) else (lo, (lo + hi) / 2)
        return {"output_tokens_per_s": lo * out}
    n = int(row.get("requests", 24576 if s == "mlperf offline" else 10 * row.get("batch_or_concurrency", 1)))
    c = int(row.get("batch_or_concurrency", n))
    r = _simulate(row, engine, concurrency=c, requests=n)
    return {"ttft_s": float(np.nanmean(r.ttft_s)), "tpot_s": float(np.nanmean(r.tpot_s)),
            "output_tokens_per_s": r.throughput_output_tokens_per_s,
            "unstated_kind_tokens_per_s": r.throughput_output_tokens_per_s,
            "total_tokens_per_s": r.throughput_tokens_per_s}  # fmt: skip


def speed_ratio(quantity: str, predicted: float, measured: float) -> float:
    """Predicted speed ÷ measured speed: measured ÷ predicted for a time (s), predicted ÷ measured for a
    rate (tokens/s). Above 1: the library is faster than the measurement.

    >>> speed_ratio("tpot_s", 0.01, 0.02), speed_ratio("output_tokens_per_s", 200.0, 100.0)
    (2.0, 2.0)
    """
    return measured / predicted if quantity in TIMES else predicted / measured


def main() -> None:
    groups: dict = {}
    print(f"{'gpu':7} {'engine':7} {'scenario':19} {'model':15} {'B/C':>5} {'quantity':27} {'measured':>10} "
          f"{'engine':>10} {'ideal':>10} {'pred/meas':>9}  vintage")  # fmt: skip
    for row in load_rows():
        eng, ideal = predict(row, row["engine_name"]), predict(row, "ideal")
        for q in (q for q in TIMES + RATES if q in row):
            m, p, i = row[q], eng[q], ideal[q]
            ratio = speed_ratio(q, p, m)
            flag = "  FASTER THAN IDEAL" if speed_ratio(q, i, m) < 1 else ""
            if q == "unstated_kind_tokens_per_s":  # read as total tokens/s, the other possible reading
                flag += f"  (as total: {speed_ratio(q, eng['total_tokens_per_s'], m):.2f})"
            groups.setdefault(
                (row["gpu"], row["engine_name"], row["scenario"], row["model"], row["date"][:4]), []
            ).append(ratio)
            bc = f"{row['batch_or_concurrency']:.0f}" if "batch_or_concurrency" in row else ""
            where = f"{row['gpu']:7} {row['engine_name']:7} {row['scenario']:19} {row['model']:15} {bc:>5}"
            print(
                f"{where} {q:27} {m:10.4g} {p:10.4g} {i:10.4g} {ratio:9.2f}  {row['software_vintage']}{flag}"
            )
    print("\npredicted / measured speed per GPU x engine x scenario (x model, year): median [min, max] (n)")
    for (g, e, s, m, y), r in sorted(groups.items()):
        spread = f"{statistics.median(r):5.2f} [{min(r):.2f}, {max(r):.2f}] ({len(r)})"
        print(f"{g:7} {e:7} {s:19} {m:15} {y} {spread}")


if __name__ == "__main__":
    main()
