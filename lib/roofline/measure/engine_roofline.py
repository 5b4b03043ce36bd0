"""A real engine's measured steps placed on this machine's measured roofline.

Taught in notebooks/measure_your_machine.ipynb ("A real engine"); printed by ``roofline measure --engine``.
Numbers only: a run record (``engine_lab.run_lab``'s dict, or a stored one) is read, the engine never
imported, so the placement is tested and shown without llama.cpp installed. For each measured point (a
model, its GGUF file type, a thread count, a phase):

    decode (batch 1, T cached tokens):  MBU = bytes the library says the step reads ÷ time ÷ bandwidth
    prompt (P tokens in one pass):      MFU = FLOPs the library says the pass does ÷ time ÷ matmul FLOP/s

with the machine's own bandwidth and FLOP/s (the same run); beside each, the ideal floor and the library's
llama.cpp prediction for this machine (``engine_gpu``). The KV cache is FP16, llama.cpp's default.

>>> run = example_run()
>>> row = place(run)[0]
>>> row["phase"], row["step_bytes"]   # 140,032 F16 bytes − the 32,768-byte table + 1 row + 8 × 128 of KV
('decode', 108416.0)
>>> round(row["mbu"] * 1e6)            # 108,416 bytes ÷ 10 ms ÷ 20 GB/s, in millionths
542
"""

from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np

from roofline.data import GPU
from roofline.engines.achievable import decode_step_times, prefill_times
from roofline.engines.model import StepTimer
from roofline.errors import RooflineError
from roofline.physics.metrics import mbu, mfu
from roofline.physics.step import decode_step, prefill

from .bench import Measurement
from .gguf_model import engine_model, gguf_format
from .transformer import achieved_mbu, roofline_prediction

ENGINE = "llama.cpp"
KV_PRECISION = "fp16"  # llama.cpp's default KV cache type
PREDICTED_FIELDS = (
    "predicted_s", "predicted_tokens_per_s", "predicted_mbu", "predicted_mfu", "measured_over_predicted",
)  # fmt: skip


def engine_gpu(machine: Measurement) -> GPU:
    """The machine's GPU row (``Measurement.as_gpu``) for predicting llama.cpp on it: the measured fp32
    matmul rate also stands for the 16-bit math the library assigns to GGUF kernels and attention
    (``fp16``, ``bf16``), because llama.cpp's CPU kernels widen 16-bit values and multiply-add in fp32
    (the quantized dot products in int8 may go faster: their MFU can then exceed 1).

    >>> engine_gpu(Measurement(20e9, 100e9, 5.0, 1e-6, 50e9)).dense_flops_per_s["bf16"]
    100000000000.0
    """
    gpu = machine.as_gpu()
    fp32 = machine.matmul_flops_per_s
    return replace(gpu, dense_flops_per_s={**gpu.dense_flops_per_s, "fp16": fp32, "bf16": fp32})


def _physics(point: dict, gpu: GPU) -> tuple[int, float, float, float, float | None, str | None]:
    """One pass in the library's physics: tokens, bytes, FLOPs, the ideal floor (s) and the achievable
    layer's llama.cpp time (s), or None and the reason where that layer cannot predict for this machine
    (the measurement stands on its own either way). Decode reads weights and KV (``bytes_read``); a
    prompt pass also writes its KV (``bytes_moved``)."""
    model = engine_model(point["model"]).as_model(point["model"])
    kw = {"weight_precision": gguf_format(point["file_type"]).id, "kv_precision": KV_PRECISION}
    decode = point["phase"] == "decode"
    if decode:
        step = decode_step(model, gpu, 1, point["context_tokens"], **kw)
        tokens, step_bytes = 1, step.bytes_read
    else:
        step = prefill(model, gpu, point["prompt_tokens"], **kw)
        tokens, step_bytes = point["prompt_tokens"], step.bytes_moved
    try:
        timer = StepTimer(ENGINE, model, gpu, **kw)
        if decode:
            times = decode_step_times(timer, 1, point["context_tokens"])
        else:
            times = prefill_times(timer, point["prompt_tokens"])
        predicted_s, error = float(times["total"]), None
    except RooflineError as exc:
        predicted_s, error = None, f"{type(exc).__name__}: {exc}"
    return tokens, float(step_bytes), float(step.flops), float(step.step_time_s), predicted_s, error


def place(run: dict) -> list[dict]:
    """Every measured point of ``run`` with its roofline figures, measured and predicted side by side.

    Each row: ``model``, ``file_type``, ``weight_format`` (the library's id), ``phase`` ("decode" or
    "prompt"), ``threads``, ``prompt_tokens``, ``context_tokens``, ``tokens`` (per pass), ``samples``,
    ``measured_s`` (median), ``measured_min_s``, ``measured_tokens_per_s``, ``step_bytes`` and ``step_flops``
    (the library's count for the pass), ``mbu`` and ``mfu`` (measured), ``floor_s``, ``predicted_s``,
    ``predicted_tokens_per_s``, ``predicted_mbu``, ``predicted_mfu``, ``measured_over_predicted`` (None
    where the achievable layer cannot predict for this machine), ``prediction_error`` (why, else None).
    """
    machine = Measurement(**run["machine"])
    gpu = engine_gpu(machine)
    bw, flops_per_s = machine.memory_bandwidth_bytes_per_s, machine.matmul_flops_per_s
    rows = []
    for point in run["points"]:
        tokens, step_bytes, step_flops, floor_s, pred, error = _physics(point, gpu)
        t = float(np.median(point["times_s"]))
        predicted = dict.fromkeys(PREDICTED_FIELDS)  # None where the layer cannot predict
        if pred is not None:
            predicted = {
                "predicted_s": pred,
                "predicted_tokens_per_s": tokens / pred,
                "predicted_mbu": float(mbu(step_bytes, pred, bw)),
                "predicted_mfu": float(mfu(step_flops, pred, flops_per_s)),
                "measured_over_predicted": t / pred,
            }
        rows.append(
            {
                "model": point["model"],
                "file_type": point["file_type"],
                "weight_format": gguf_format(point["file_type"]).id,
                "phase": point["phase"],
                "threads": point["threads"],
                "prompt_tokens": point["prompt_tokens"],
                "context_tokens": point["context_tokens"],
                "tokens": tokens,
                "samples": len(point["times_s"]),
                "measured_s": t,
                "measured_min_s": float(min(point["times_s"])),
                "measured_tokens_per_s": tokens / t,
                "step_bytes": step_bytes,
                "step_flops": step_flops,
                "mbu": float(mbu(step_bytes, t, bw)),
                "mfu": float(mfu(step_flops, t, flops_per_s)),
                "floor_s": floor_s,
                **predicted,
                "prediction_error": error,
            }
        )
    return rows


def place_numpy(run: dict) -> list[dict]:
    """The numpy decoder's batch-1 decode on the same shapes (fp32 weights and KV, the BLAS's threads):
    ``model``, ``context_tokens``, ``samples``, ``measured_s`` (median), ``floor_s`` (library, fp32),
    ``mbu``.

    >>> row = place_numpy(example_run())[0]
    >>> round(row["measured_s"] * 1e3, 2), round(row["mbu"] * 1e6)   # 216,064 fp32 bytes ÷ 4.5 ms ÷ 20 GB/s
    (4.5, 2401)
    """
    machine = Measurement(**run["machine"])
    rows = []
    for point in run.get("numpy_decoder", []):
        cfg, t = engine_model(point["model"]), float(np.median(point["times_s"]))
        floor = roofline_prediction(cfg, machine, 1, point["context_tokens"]).step_time_s
        rows.append({
            "model": point["model"], "context_tokens": point["context_tokens"],
            "samples": len(point["times_s"]), "measured_s": t, "floor_s": float(floor),
            "mbu": float(achieved_mbu(cfg, machine, t, 1, point["context_tokens"])),
        })  # fmt: skip
    return rows


def calibration_points(run: dict) -> list[dict]:
    """The measured points as plain dicts, ready to become the user's own calibration (``roofline
    calibrate``): the model's shapes, the weight format (library id), the KV format, threads, the phase,
    batch, tokens per pass, cached tokens, and the measured seconds (median and every sample).

    >>> p = calibration_points(example_run())[0]
    >>> p["shape"]["layers"], p["weight_precision"], p["batch"], p["measured_s"]
    (1, 'gguf-f16', 1, 0.01)
    """
    return [
        {
            "engine": ENGINE,
            "model": point["model"],
            "shape": asdict(engine_model(point["model"])),
            "weight_precision": gguf_format(point["file_type"]).id,
            "kv_precision": KV_PRECISION,
            "threads": point["threads"],
            "phase": point["phase"],
            "batch": 1,
            "prompt_tokens": point["prompt_tokens"],
            "context_tokens": point["context_tokens"],
            "measured_s": float(np.median(point["times_s"])),
            "samples_s": [float(x) for x in point["times_s"]],
            "machine_bandwidth_bytes_per_s": run["machine"]["memory_bandwidth_bytes_per_s"],
            "machine_matmul_flops_per_s": run["machine"]["matmul_flops_per_s"],
        }
        for point in run["points"]
    ]


def point(model: str, file_type: str, phase: str, threads: int, prompt_tokens: int, context_tokens: float,
          times_s) -> dict:  # fmt: skip
    """One measured point of a run record: ``phase`` "decode" (``prompt_tokens`` 1, ``context_tokens``
    the mean cached tokens over the timed steps) or "prompt" (one pass of ``prompt_tokens`` on an empty
    cache); ``threads`` the engine's CPU threads; ``times_s`` every sample (s).

    >>> point("random-llama-tiny", "F16", "prompt", 2, 64, 0, (0.5, 0.4))["times_s"]
    [0.5, 0.4]
    """
    return {"model": model, "file_type": file_type, "phase": phase, "threads": int(threads),
            "prompt_tokens": int(prompt_tokens), "context_tokens": context_tokens,
            "times_s": [float(x) for x in times_s]}  # fmt: skip


def example_run() -> dict:
    """A small made-up run record on the ``random-llama-tiny`` model (for examples and tests): a 20 GB/s,
    100 GFLOP/s machine, one decode point (10 ms per step) and one prompt point (64 tokens in 5 ms)."""
    tiny = "random-llama-tiny"
    return {
        "machine": Measurement(20e9, 100e9, 5.0, 1e-6, 50e9).to_dict(),
        "points": [
            point(tiny, "F16", "decode", 1, 1, 8, [0.011, 0.010, 0.009]),
            point(tiny, "Q4_0", "prompt", 2, 64, 0, [0.005, 0.005, 0.006]),
        ],
        "numpy_decoder": [{"model": tiny, "context_tokens": 8, "times_s": [0.004, 0.005]}],
    }
