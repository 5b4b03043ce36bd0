"""The kernel numbers every engine reads, frozen: ``data/calibration_kernels.csv`` from the kernel fits.

Taught in notebooks/calibration_validation.ipynb. Fitting the kernel timings (``kernels``, ``moe_kernels``)
takes seconds; the course reads the result instead, one row per engine's kernels × GPU × format:

- ``dense``: GEMMs in ``format`` and attention over a ``kv`` cache (``kernels.kernel_parameters``);
- ``moe``: an MoE layer's experts in ``format`` (``moe_kernels.moe_parameters``);
- ``mla``: MLA attention over a ``kv`` cache (``moe_kernels.mla_parameters``).

``tools/fit_calibration.py`` writes the file; ``roofline.engines.params`` reads it.
"""

from __future__ import annotations

import csv
import io

from roofline.calibration.kernels import kernel_parameters
from roofline.calibration.moe_kernels import mla_parameters, moe_parameters
from roofline.data import engines
from roofline.engines.params import FROZEN_COLUMNS, GEMM_DTYPES, MOE_DTYPES, project_gpu_ids
from roofline.errors import InvalidConfigurationError

KV_FORMATS = ("bf16", "fp8")
KEYS = ("kind", "kernels", "gpu", "format", "kv")
COLUMNS = (*KEYS, *FROZEN_COLUMNS, "source", "error")


def _row(kind: str, kernels: str, gpu: str, fmt: str, kv: str, compute) -> dict:
    row = {**dict(zip(KEYS, (kind, kernels, gpu, fmt, kv), strict=True)), "source": "", "error": ""}
    try:
        numbers = compute()
    except InvalidConfigurationError as exc:
        return {**row, "error": str(exc)}
    frozen = {k: float(v) for k, v in numbers.items() if k in FROZEN_COLUMNS}
    return {**row, "source": numbers["source"], **frozen}


def kernel_rows(gpus=None, kernels=None) -> list[dict]:
    """Every frozen row for ``gpus`` (default: the project's GPU rows) and the engines' ``kernels`` (default:
    every engine with timings, and "" for the median over them), computed from the kernel fits: fractions
    (0–1] and fixed costs (s) under ``FROZEN_COLUMNS``' names; a combination the timings cannot give keeps
    its reason in ``error``.

    >>> rows = kernel_rows(gpus=["mi300x"], kernels=["vllm"])
    >>> sorted({r["kind"] for r in rows}), next(r for r in rows if r["kind"] == "moe")["error"]
    (['dense', 'mla', 'moe'], 'no MoE timings for mi300x nor for its family (cdna3); ...')
    """
    gpus = sorted(project_gpu_ids()) if gpus is None else gpus
    if kernels is None:  # each calibrated engine's timings ("" for those without: the median over them)
        kernels = sorted({e.kernels for e in engines().values() if e.kind == "calibrated"})
    rows = []
    for k in kernels:
        for gpu in gpus:
            for dtype in sorted(set(GEMM_DTYPES.values()) | {"bf16"}):
                for kv in KV_FORMATS:
                    rows.append(_row("dense", k, gpu, dtype, kv,
                                     lambda: kernel_parameters(gpu, k or None, dtype=dtype, kv_dtype=kv)))  # noqa: B023  # fmt: skip
            for dtype in MOE_DTYPES:
                rows.append(_row("moe", k, gpu, dtype, "", lambda: moe_parameters(gpu, k or None, dtype)))  # noqa: B023
            for kv in KV_FORMATS:
                rows.append(_row("mla", k, gpu, "", kv, lambda: mla_parameters(gpu, k or None, kv)))  # noqa: B023
    return rows


def kernel_table_csv(rows: list[dict]) -> str:
    """The text of ``data/calibration_kernels.csv``: numbers written exactly (``repr``), blank where a kind
    has no such number.

    >>> text = kernel_table_csv([{"kind": "moe", "kernels": "vllm", "gpu": "h200", "moe_overhead_s": 2e-05}])
    >>> text.splitlines()[1].startswith("moe,vllm,h200,,,")
    True
    """
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: repr(v) if isinstance(v, float) else v for c, v in row.items()})
    return out.getvalue()


def table_differences(stored: str, fresh: str, rtol: float = 1e-3) -> list[str]:
    """Where two texts of ``data/calibration_kernels.csv`` differ, as readable lines (empty if they agree):
    a row's keys, source or error text, or a number by more than ``rtol`` (relative).

    >>> row = {"kind": "moe", "kernels": "vllm", "gpu": "h200", "moe_overhead_s": 2e-05}
    >>> table_differences(kernel_table_csv([row]), kernel_table_csv([{**row, "moe_overhead_s": 3e-05}]))
    ['moe vllm h200 - -: moe_overhead_s stored 2e-05, refit 3e-05 (relative 0.33)']
    """
    a, b = (list(csv.DictReader(io.StringIO(text))) for text in (stored, fresh))
    if [[r[k] for k in KEYS] for r in a] != [[r[k] for k in KEYS] for r in b]:
        return ["the rows differ (kind, kernels, GPU, format, KV): refreeze"]
    diffs = []
    for x, y in zip(a, b, strict=True):
        where = " ".join(x[k] or "-" for k in KEYS)
        for c in COLUMNS[len(KEYS) :]:
            if c in FROZEN_COLUMNS and x[c] and y[c]:
                u, v = float(x[c]), float(y[c])
                if (rel := abs(u - v) / max(abs(u), abs(v), 1e-300)) > rtol:
                    diffs.append(f"{where}: {c} stored {u:.6g}, refit {v:.6g} (relative {rel:.2g})")
            elif x[c] != y[c]:
                diffs.append(f"{where}: {c} stored {x[c]!r}, refit {y[c]!r}")
    return diffs
