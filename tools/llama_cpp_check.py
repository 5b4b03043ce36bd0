"""Current llama.cpp speeds (data/measured/llama_cpp_bench.csv) against this library's llama.cpp engines.

    uv run python tools/llama_cpp_check.py                     # the 2025 vintage fitted on these rows
    uv run python tools/llama_cpp_check.py --engine llama.cpp  # the mid-2024 vintage, on the same rows

Each row is one llama-bench figure (tokens/s) read from a llama.cpp pull request (provenance and
assumptions: data/measured/README.md). A ``tgN`` test is N decode steps of one sequence after the row's
depth; a ``ppN`` test is a prompt of N tokens run in ceil(N / ubatch) passes of ``ubatch`` tokens
(llama-bench's -ub, the last pass holding the rest), each pass a prefill chunk as the fit counts the 2024
rows' prompt chunks (``roofline.calibration.terms``), here also after the depth and the passes before it.
The engine's figure and the ideal roofline's come from the same steps. The fit reads the same rows
(``roofline.calibration.measurements``) for the ``llama.cpp-2025`` vintage; its held-out errors are in
``data/calibration.toml``, this tool shows each row in sample.
"""

from __future__ import annotations

import argparse
import re
import statistics

import numpy as np

from roofline.calibration.measurements import LLAMA_BENCH_ENGINE, read_csv
from roofline.data import MEASURED_DIR, table_path
from roofline.engines import StepTimer, decode_step_times
from roofline.physics.step import forward_step

CSV = "llama_cpp_bench.csv"
REQUIRED = ("source_url", "date", "gpu", "model", "weight_precision", "kv_precision", "test", "tokens_per_s")


def load_rows(name: str = CSV) -> list[dict]:
    """The rows of ``data/measured/<name>`` (text), each with its ids, precisions, test and tokens/s.

    >>> rows = load_rows()
    >>> len(rows) >= 30, {r["gpu"] for r in rows} >= {"rtx-3090", "rtx-4090", "rtx-5090"}
    (True, True)
    """
    return read_csv(table_path(MEASURED_DIR) / name, required=REQUIRED)


def passes(test: str, ubatch, depth_tokens=0):
    """The passes a llama-bench test runs, as (kind ``"tg"`` or ``"pp"``, tokens the test counts, context
    before each pass (tokens, array), new tokens of each pass (array)).

    >>> kind, n, ctx, new = passes("pp512", 200, 1000)
    >>> kind, n, ctx.tolist(), new.tolist()
    ('pp', 512, [1000.0, 1200.0, 1400.0], [200.0, 200.0, 112.0])
    >>> passes("tg128@d4096", "", 4096)[2][[0, -1]].tolist()     # the depth in the name is the row's too
    [4096.0, 4223.0]
    """
    kind, n = re.fullmatch(r"(pp|tg)(\d+)(?:@d\d+)?", test).groups()
    n, step = int(n), (1 if kind == "tg" else int(ubatch))
    start = np.arange(0, n, step, dtype=float)
    return kind, n, float(depth_tokens) + start, np.minimum(step, n - start)


def predict(row: dict, engine: str = LLAMA_BENCH_ENGINE) -> dict:
    """One row against a llama.cpp ``engine`` and the ideal: tokens/s measured, predicted and ideal, and the
    fixed cost per pass (s) the engine adds (per-step + per-layer) beside the one the measurement leaves room
    for (measured time minus the engine's kernel time, per pass; negative: faster than the engine's kernels).

    >>> r = predict({"gpu": "rtx-4090", "model": "llama-3-8b", "weight_precision": "gguf-q4_0",
    ...              "kv_precision": "fp16", "test": "tg128", "ubatch": "", "depth_tokens": "0",
    ...              "tokens_per_s": "150"})
    >>> r["ideal"] > r["predicted"] and r["fixed_model_s"] > 0
    True
    """
    timer = StepTimer(engine, row["model"], row["gpu"], weight_precision=row["weight_precision"],
                      kv_precision=row["kv_precision"])  # fmt: skip
    kind, n, ctx, new = passes(row["test"], row.get("ubatch", ""), int(row.get("depth_tokens") or 0))
    if kind == "tg":
        t = decode_step_times(timer, 1, ctx)
        parts = {
            k: np.asarray(t[k]) for k in ("floor", "kernel efficiency", "per-step", "per-layer", "total")
        }
    else:  # only the prompt's last pass asks for logits (reads the LM head), as in the fit
        kw = dict(weight_precision=timer.weight_precision, kv_precision=timer.kv_precision,
                  on_overflow="ignore", parallelism=timer.parallel)  # fmt: skip
        pieces: dict = {}
        for part, logits in ((slice(0, -1), "none"), (slice(-1, None), "last")):
            if ctx[part].size:
                step = forward_step(
                    timer.model, timer.gpu, 1, ctx[part], new_tokens=new[part], logits=logits, **kw
                )
                for k, v in timer.of_step(step, extra_s=0.0, prompt=True).parts.items():
                    pieces.setdefault(k, []).append(np.broadcast_to(np.asarray(v, float), ctx[part].shape))
        parts = {k: np.concatenate(v) for k, v in pieces.items()}
    total = {k: float(np.sum(np.broadcast_to(v, ctx.shape))) for k, v in parts.items()}
    measured_s = n / float(row["tokens_per_s"])
    kernels_s = total["floor"] + total["kernel efficiency"]
    return {
        "kind": "tg" if kind == "tg" else ("pp ub=1" if new[0] == 1 else "pp"),
        "measured": n / measured_s,
        "predicted": n / total["total"],
        "ideal": n / total["floor"],
        "fixed_model_s": (total["per-step"] + total["per-layer"]) / ctx.size,
        "fixed_implied_s": (measured_s - kernels_s) / ctx.size,
    }


def summarise(results: list[tuple[dict, dict]]) -> list[tuple]:
    """Per (GPU, regime): rows, median, min and max of predicted ÷ measured, and the medians of the fixed
    cost per pass (s) the engine adds and the measurement leaves room for.

    >>> r = {"kind": "tg", "measured": 100.0, "predicted": 50.0}
    >>> summarise([({"gpu": "rtx-4090"}, {**r, "fixed_model_s": 4e-3, "fixed_implied_s": 1e-3})])
    [('rtx-4090', 'tg', 1, 0.5, 0.5, 0.5, 0.004, 0.001)]
    """
    groups: dict = {}
    for row, r in results:
        groups.setdefault((row["gpu"], r["kind"]), []).append(r)
    out = []
    for (gpu, kind), rs in sorted(groups.items()):
        ratio = [r["predicted"] / r["measured"] for r in rs]
        fixed = [statistics.median(r[k] for r in rs) for k in ("fixed_model_s", "fixed_implied_s")]
        out.append((gpu, kind, len(rs), statistics.median(ratio), min(ratio), max(ratio), *fixed))
    return out


def _line(values, widths) -> str:
    """Values in columns of ``widths`` characters (negative: left-aligned), floats with 2 decimals."""
    cells = [f"{v:.2f}" if isinstance(v, float) else str(v) for v in values]
    return " ".join(c.ljust(-w) if w < 0 else c.rjust(w) for c, w in zip(cells, widths, strict=True))


def main(argv=None) -> None:
    """Print every row and the summary (tokens/s; fixed costs in ms per pass)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default=LLAMA_BENCH_ENGINE, help=f"default {LLAMA_BENCH_ENGINE}")
    engine = parser.parse_args(argv).engine
    results = [(row, predict(row, engine)) for row in load_rows()]
    widths = (-9, -14, -13, -12, 4, 5, 8, 8, 8, 5, 7, 7)
    cols = (
        "gpu",
        "model",
        "weights",
        "test",
        "ub",
        "depth",
        "meas",
        "pred",
        "ideal",
        "p/m",
        "fix mod",
        "fix imp",
    )
    print(_line(cols, widths))
    for row, r in results:
        flag = "  FASTER THAN IDEAL: check the mapping" if r["measured"] > r["ideal"] else ""
        ids = (row["gpu"], row["model"], row["weight_precision"], row["test"], row["ubatch"] or "-")
        speeds = (r["measured"], r["predicted"], r["ideal"], r["predicted"] / r["measured"])
        fixed = (r["fixed_model_s"] * 1e3, r["fixed_implied_s"] * 1e3)
        print(_line((*ids, row["depth_tokens"], *speeds, *fixed), widths) + flag)
    widths = (-9, -8, 4, 6, 5, 5, 7, 7)
    print("\n" + _line(("gpu", "regime", "rows", "median", "min", "max", "fix mod", "fix imp"), widths))
    for gpu, kind, n, med, lo, hi, fm, fi in summarise(results):
        print(_line((gpu, kind, n, med, lo, hi, fm * 1e3, fi * 1e3), widths))
    ratios = [r["predicted"] / r["measured"] for _, r in results]
    print(f"\nall {len(ratios)} rows: predicted/measured median {statistics.median(ratios):.2f}, "
          f"range {min(ratios):.2f}-{max(ratios):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
