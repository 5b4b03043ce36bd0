"""The measured serving rows the simulator is validated on: what each says, and which the library can express.

Taught in notebooks/serving_validation.ipynb (``roofline.sim.validation`` simulates the rows).

The rows are the public half of NVIDIA Dynamo aiconfigurator's silicon measurements (Apache-2.0; carried
unchanged in ``data/measured/aiconfigurator_serving.csv`` with its licence and attribution): one engine
(TensorRT-LLM, vLLM or SGLang) serving one model on H100 or H200 GPUs, a load generator keeping
``batch_size`` requests in flight (a closed loop), ``isl`` prompt and ``osl`` output tokens, and the mean
TTFT and TPOT it saw (aiconfigurator's tooling stores ``mean_ttft`` and ``mean_tpot``; no row has a p90).

Names go through the library's one map each: models by their Hugging Face ids (the models table), GPUs by
the studies' hardware names (``roofline.calibration.measurements.HARDWARE``), engines by the engines table's
aliases. Precision: the row's ``precision`` fp8 means FP8 weights (DeepSeek's, ``fp8_block`` rows' and a
publisher's block-FP8 release's, ``BLOCK_FP8_RELEASES``: 128-blocks) and an FP8 KV cache (the launch
scripts of these benchmarks pass ``kv_cache_dtype: fp8``); fp4 means the model's own 4-bit checkpoint
format (gpt-oss: MXFP4 experts); no precision means BF16.

A row the library cannot express is kept out with its reason (``REASONS``); ``coverage`` counts them per
group. Two benchmark harnesses produced the rows, told apart by the row's source field: SemiAnalysis
InferenceMAX's ``benchmark_serving.py`` (``"inferencemax"``) and aiconfigurator's ``aiperf`` runs
(``"aiperf"``); ``roofline.sim.validation.HARNESSES`` says how each loads the server.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import re
from collections import Counter
from pathlib import Path

from roofline.calibration.measurements import HARDWARE
from roofline.data import MEASURED_DIR, model_for_hf_id, table_path
from roofline.engines.registry import get_engine
from roofline.errors import DataTableError
from roofline.physics.step import decode_step
from roofline.tables import read_text_file

from .cost import kv_capacity_tokens

SERVING_CSV = "aiconfigurator_serving.csv"  # in data/measured/
GPUS_PER_NODE = 8  # an HGX H100/H200 board: the library's tensor parallelism is one NVLink domain
REASONS = {
    "model": "model not in the models table",
    "gpu": "GPU not in the hardware map",
    "duplicate": "duplicate of an earlier row (same setting, same measurement)",
    "concurrency": "no concurrency given",
    "pipeline": "pipeline parallel",
    "attention-dp": "attention data parallel (DeepSeek-style): not modelled",
    "multi-node": "more than 8 GPUs per worker (multi-node tensor/expert parallel)",
    "layout": "ambiguous MoE layout (tp differs from moe_tp x moe_ep)",
    "workers": "disaggregated without prefill/decode worker counts",
    "disagg-tp": "disaggregated with different prefill and decode TP",
    "below-floor": "measured TPOT below the ideal decode floor at the stated concurrency",
}


def _int(x: str) -> int:
    return int(x) if x not in ("", None) else 0


def read_raw(path=None) -> list[dict]:
    """The CSV's rows as dicts of strings (``data/measured/aiconfigurator_serving.csv`` by default)."""
    source = table_path(MEASURED_DIR) / SERVING_CSV if path is None else path
    try:
        return list(csv.DictReader(io.StringIO(read_text_file(source))))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise DataTableError(f"{source}: cannot read the table: {reason}") from None


def _harness(raw: dict) -> str:
    # aiconfigurator's gap-analysis runs used aiperf; every other source of this file is InferenceMAX
    return "aiperf" if "aic-auto-gap-analysis" in raw["silicon_data_source"] else "inferencemax"


def _concurrency(raw: dict) -> int:
    """Requests kept in flight: ``batch_size``, else the source's ``silicon_concurrency`` (0 if neither)."""
    if _int(raw["batch_size"]):
        return _int(raw["batch_size"])
    found = re.search(r"silicon_concurrency=(\d+)", raw["silicon_data_source"])
    return int(found.group(1)) if found else 0


# Publishers' FP8 releases the rows serve, in 128 x 128 blocks whatever the row's gemm_quant_mode says
# (their config.json: quant_method fp8, weight_block_size [128, 128]; read in aiconfigurator's
# model_configs/Qwen--Qwen3-235B-A22B-FP8_config.json and Qwen--Qwen3-32B-FP8_config.json @ 095f58a)
BLOCK_FP8_RELEASES = ("Qwen/Qwen3-235B-A22B-FP8", "Qwen/Qwen3-32B-FP8")


def _precisions(raw: dict, model) -> tuple[str, str]:
    """(weight precision, KV precision) of a row (see the module docstring)."""
    p, gemm = raw["precision"], raw["gemm_quant_mode"]
    if p == "fp4":
        return model.checkpoint_format, "bf16"
    if p == "fp8":
        block = gemm == "fp8_block" or model.checkpoint_format == "fp8-block128"
        block |= raw["model_path"] in BLOCK_FP8_RELEASES
        return ("fp8-block128" if block else "fp8"), "fp8"
    return "bf16", "bf16"


def _layout(raw: dict, model) -> tuple[int, int, int, str]:
    """(GPUs per worker, prefill workers, decode workers, reason key or "")."""
    if raw["mode"] == "agg":
        tp = _int(raw["tp_size"])
        if _int(raw["pp_size"]) > 1:
            return tp, 0, 0, "pipeline"
        if _int(raw["attention_dp_size"]) > 1:
            return tp, 0, 0, "attention-dp"
        if tp > GPUS_PER_NODE:
            return tp, 0, 0, "multi-node"
        moe = _int(raw["moe_tp_size"]) * _int(raw["moe_ep_size"])
        if model.experts > 1 and moe and moe != tp:
            return tp, 0, 0, "layout"
        return tp, 0, 0, ""
    ptp, dtp = _int(raw["prefill_tp_size"]), _int(raw["decode_tp_size"])
    if max(_int(raw["prefill_attention_dp_size"]), _int(raw["decode_attention_dp_size"])) > 1:
        return ptp, 0, 0, "attention-dp"
    if max(ptp, dtp) > GPUS_PER_NODE:
        return ptp, 0, 0, "multi-node"
    if not _int(raw["prefill_num_workers"]) or not _int(raw["decode_num_workers"]):
        return ptp, 0, 0, "workers"
    if ptp != dtp:
        return ptp, 0, 0, "disagg-tp"
    return ptp, _int(raw["prefill_num_workers"]), _int(raw["decode_num_workers"]), ""


def _below_floor(row: dict) -> bool:
    """Whether the measured TPOT is below the ideal decode step of the batch the row states (its clients
    over its decode workers, as many as the KV cache holds at the mean context of prompt + half the
    answer): then the server cannot have run that batch, and the row does not say what it did run."""
    context = row["input_tokens"] + row["output_tokens"] / 2
    cap = kv_capacity_tokens(
        row["model"], row["gpu"], row["tp"], row["weight_precision"], row["kv_precision"]
    )
    batch = min(math.ceil(row["concurrency"] / max(row["decode_workers"], 1)), max(1, int(cap // context)))
    step = decode_step(row["model"], row["gpu"], batch, context, num_gpus=row["tp"],
                       weight_precision=row["weight_precision"],
                       kv_precision=row["kv_precision"])  # fmt: skip
    return row["tpot_s"] < float(step.step_time_s)


def classify(raw: dict) -> tuple[dict | None, str]:
    """The row in library terms and "" if the library can express it, else (None, reason key of
    ``REASONS``). Row keys: ``id``, ``model``, ``gpu``, ``engine``, ``harness``, ``weight_precision``,
    ``kv_precision``, ``tp`` (GPUs per worker), ``mode``, ``prefill_workers``, ``decode_workers``,
    ``concurrency``, ``input_tokens``, ``output_tokens``, ``ttft_s``, ``tpot_s`` (measured means, s)."""
    model = model_for_hf_id(raw["model_path"])
    if model is None:
        return None, "model"
    if raw["system"] not in HARDWARE:
        return None, "gpu"
    c = _concurrency(raw)
    if not c:
        return None, "concurrency"
    tp, prefill_workers, decode_workers, why = _layout(raw, model)
    if why:
        return None, why
    weights, kv = _precisions(raw, model)
    row = {
        "id": raw["id"], "model": model.id, "gpu": HARDWARE[raw["system"]],
        "engine": get_engine(raw["backend"]).id, "harness": _harness(raw), "weight_precision": weights,
        "kv_precision": kv, "tp": tp, "mode": raw["mode"],
        "prefill_workers": prefill_workers, "decode_workers": decode_workers, "concurrency": c,
        "input_tokens": _int(raw["isl"]), "output_tokens": _int(raw["osl"]),
        "ttft_s": float(raw["silicon_ttft_ms"]) / 1e3, "tpot_s": float(raw["silicon_tpot_ms"]) / 1e3,
    }  # fmt: skip
    return (None, "below-floor") if _below_floor(row) else (row, "")


@functools.lru_cache(maxsize=4)
def classify_all(path=None) -> tuple[tuple[dict, dict | None, str], ...]:
    """(raw row, library row or None, reason key or "") for every row of the file, in file order; a row
    repeating an earlier one (every column but the id and the source) is a ``"duplicate"``. Cached: the
    rows are shared, copy one before changing it."""
    seen, out = set(), []
    for raw in read_raw(None if path is None else Path(path)):
        key = tuple(v for k, v in raw.items() if k not in ("id", "silicon_data_source"))
        if key in seen:
            out.append((raw, None, "duplicate"))
            continue
        seen.add(key)
        out.append((raw, *classify(raw)))
    return tuple(out)


def load_rows(path=None) -> list[dict]:
    """Every row the library can express (``classify``), in file order.

    >>> {"llama-3.1-8b", "llama-3.1-70b", "qwen3-32b"} <= {r["model"] for r in load_rows()}
    True
    """
    return [row for _, row, _ in classify_all(path) if row is not None]


def coverage(path=None) -> list[dict]:
    """Per group (model as the file names it, GPU, engine, mode): ``rows``, ``expressible`` and the count of
    each reason a row stays out (``reasons``, keys of ``REASONS``).

    >>> c = coverage()
    >>> sum(g["rows"] for g in c) == len(read_raw())
    True
    """
    groups: dict = {}
    for raw, row, why in classify_all(path):
        key = (
            raw["model_path"],
            HARDWARE.get(raw["system"], raw["system"]),
            get_engine(raw["backend"]).id,
            raw["mode"],
        )
        g = groups.setdefault(key, {"rows": 0, "expressible": 0, "reasons": Counter()})
        g["rows"] += 1
        g["expressible"] += row is not None
        if why:
            g["reasons"][why] += 1
    return [
        {"model": m, "gpu": gpu, "engine": e, "mode": mode, "rows": g["rows"],
         "expressible": g["expressible"],
         "reasons": dict(g["reasons"])}
        for (m, gpu, e, mode), g in sorted(groups.items())
    ]  # fmt: skip
