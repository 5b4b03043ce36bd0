"""The simulator against measured serving benchmarks: TTFT and TPOT at a given concurrency.

Taught in notebooks/serving_validation.ipynb.

Rows come from NVIDIA Dynamo aiconfigurator's silicon measurements (Apache-2.0; ``data/measured/``):
one engine (TensorRT-LLM, vLLM or SGLang), one model, one GPU type, tensor parallel ``tp_size``, a load
generator keeping ``batch_size`` requests in flight (a closed loop) with ``isl`` prompt and ``osl`` output
tokens each, and the measured TTFT and TPOT in ms.

For each row the simulator runs the same closed loop (``batch_size`` clients, two requests each, zero think
time, the clients' first requests spread evenly over the time one request takes alone) with chunked
prefill (chunks and token budget of 8,192 tokens, decode-first: the defaults of current engines) and
reports its median TTFT and TPOT. The error of a row is (simulated − measured) ÷ measured; a negative
error means the simulation is faster than the real server, as an ideal roofline must be.

Mapping assumptions (stated, not measured): Llama 3.1 8B/70B use the library's ``llama-3-8b`` and
``llama-3-70b`` (identical shapes; only the context length differs); ``h100_sxm`` → ``h100-sxm``,
``h200_sxm`` → ``h200``; weights in FP8 where the row's precision is fp8, else BF16; the KV cache in BF16
(the engines' default "auto" is the model's dtype; FP8 KV is an opt-in).

>>> rows = load_measured_rows()
>>> sorted({r["model"] for r in rows})
['llama-3-70b', 'llama-3-8b']
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .cost import engine_cost_model
from .engine import simulate

MEASURED_CSV = (
    Path(__file__).resolve().parents[3] / "data" / "measured" / "aiconfigurator_llama31_serving.csv"
)
MODEL_MAP = {"meta-llama/Llama-3.1-8B-Instruct": "llama-3-8b", "meta-llama/Llama-3.1-70B": "llama-3-70b"}
GPU_MAP = {"h100_sxm": "h100-sxm", "h200_sxm": "h200"}
ENGINE_MAP = {"trtllm": "tensorrt-llm", "vllm": "vllm", "sglang": "sglang"}
CHUNK_TOKENS = 8192
TOKEN_BUDGET = 8192


def load_measured_rows(path=MEASURED_CSV) -> list[dict]:
    """The measured rows as dicts with library ids: ``model``, ``gpu``, ``engine``, ``weight_precision``,
    ``tp`` (GPUs), ``concurrency``, ``input_tokens``, ``output_tokens``, ``ttft_s``, ``tpot_s``. Rows of
    models or GPUs the library does not know, or with pipeline parallelism, are skipped.

    >>> r = load_measured_rows()[0]
    >>> r["ttft_s"] > 0 and r["tpot_s"] > 0
    True
    """
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["model_path"] not in MODEL_MAP or row["system"] not in GPU_MAP or row["mode"] != "agg":
                continue
            if int(row["pp_size"]) != 1:
                continue
            out.append(
                {
                    "id": row["id"],
                    "model": MODEL_MAP[row["model_path"]],
                    "gpu": GPU_MAP[row["system"]],
                    "engine": ENGINE_MAP[row["backend"]],
                    "weight_precision": "fp8" if row["precision"] == "fp8" else "bf16",
                    "tp": int(row["tp_size"]),
                    "concurrency": int(row["batch_size"]),
                    "input_tokens": int(row["isl"]),
                    "output_tokens": int(row["osl"]),
                    "ttft_s": float(row["silicon_ttft_ms"]) / 1e3,
                    "tpot_s": float(row["silicon_tpot_ms"]) / 1e3,
                }
            )
    return out


def simulate_row(
    row: dict,
    rounds: int = 2,
    cost_kwargs: dict | None = None,
    kv_precision: str = "bf16",
    ramp: bool = True,
    engine: str = "ideal",
) -> dict:
    """Simulate one measured row's closed loop; return the row with ``sim_ttft_s``, ``sim_tpot_s`` (median
    of the simulated requests, s) and the relative errors ``ttft_error`` and ``tpot_error``.
    ``cost_kwargs`` go to the cost model (e.g. ``bandwidth_fraction``, ``step_overhead_s``, or an
    ``achievable`` callable): the hook where the achievable layer plugs in. ``kv_precision`` is the KV
    cache's (BF16 by default: the engines' "auto"; FP8 KV doubles the cache). ``ramp`` spreads the clients'
    first requests over one lone request's end-to-end time; without it every client starts at t = 0 and,
    with fixed lengths, they stay in step (every round's prompts arrive together). ``engine``: ``"ideal"``
    (the roofline) or ``"measured"`` (the row's own engine, calibrated by ``roofline.achievable``).

    >>> r = simulate_row(load_measured_rows()[0])
    >>> r["ttft_error"] < 0 and r["tpot_error"] < 0   # the ideal is faster than any real server
    True
    """
    cost = engine_cost_model(
        row["engine"] if engine == "measured" else engine,
        row["model"],
        row["gpu"],
        num_gpus=row["tp"],
        weight_precision=row["weight_precision"],
        kv_precision=kv_precision,
        **(cost_kwargs or {}),
    )
    kw = dict(
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cost=cost,
        max_batch=max(256, row["concurrency"]),
        chunk_tokens=CHUNK_TOKENS,
        token_budget=TOKEN_BUDGET,
        record_timeline=False,
    )
    ramp_s = simulate(row["model"], row["gpu"], concurrency=1, requests=1, **kw).e2e_s[0] if ramp else 0.0
    r = simulate(
        row["model"],
        row["gpu"],
        concurrency=row["concurrency"],
        requests=rounds * row["concurrency"],
        ramp_s=float(ramp_s),
        **kw,
    )
    ttft, tpot = r.ttft_s_percentiles["p50"], r.tpot_s_percentiles["p50"]
    return {
        **row,
        "sim_ttft_s": ttft,
        "sim_tpot_s": tpot,
        "ttft_error": (ttft - row["ttft_s"]) / row["ttft_s"],
        "tpot_error": (tpot - row["tpot_s"]) / row["tpot_s"],
    }


def error_table(results: list[dict], by=("model", "engine")) -> list[dict]:
    """Median absolute relative error of TTFT and TPOT per group (fractions), with the row count and the
    median signed error (negative: the simulation is faster).

    >>> error_table([{"model": "m", "engine": "e", "ttft_error": -0.5, "tpot_error": 0.1},
    ...              {"model": "m", "engine": "e", "ttft_error": 0.3, "tpot_error": -0.3}])[0]["ttft_mape"]
    0.4
    """
    groups: dict = {}
    for r in results:
        groups.setdefault(tuple(r[k] for k in by), []).append(r)
    table = []
    for key, rs in sorted(groups.items()):
        t = np.array([r["ttft_error"] for r in rs])
        p = np.array([r["tpot_error"] for r in rs])
        table.append(
            {
                **dict(zip(by, key, strict=True)),
                "rows": len(rs),
                "ttft_mape": float(np.median(np.abs(t))),
                "tpot_mape": float(np.median(np.abs(p))),
                "ttft_median_error": float(np.median(t)),
                "tpot_median_error": float(np.median(p)),
            }
        )
    return table
