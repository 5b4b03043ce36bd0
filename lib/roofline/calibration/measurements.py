"""Measured runs of real engines (``data/measured/``), read into this library's ids.

Taught in notebooks/calibration_validation.ipynb. The rows come from public studies and the llama-bench
tables of llama.cpp's pull requests (their licences and attribution in ``data/measured/``); model names
go through the models table's Hugging Face ids (``roofline.data.model_for_hf_id``), engine names through
the engines table's aliases (``roofline.engines.get_engine``). What each study leaves unsaid (which A100,
which precision of KV) is an assumption stated here once, in ``HARDWARE`` and the readers' comments, and
in ``data/measured/README.md``.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import re
from dataclasses import dataclass

import numpy as np

from roofline.data import MEASURED_DIR, DataTableError, model_for_hf_id, table_path
from roofline.engines.registry import get_engine
from roofline.physics.architecture import active_parameter_count
from roofline.tables import read_text_file

# The GPUs behind each study's hardware names. LLM-Inference-Bench does not name its variants: its A100
# runs were on ALCF Polaris (A100 SXM4 40 GB); its H100 is taken as the 80 GB SXM. See data/measured/README.
HARDWARE = {
    "Nvidia A100 GPU": "a100-40gb",
    "Nvidia H100 GPU": "h100-sxm",
    "a100-80gb": "a100-80gb-sxm",
    "h100-80gb": "h100-sxm",
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200",
}
# Names a study uses that are not Hugging Face ids.
STUDY_MODEL_NAMES = {"llama2-70b": "meta-llama/Llama-2-70b-hf"}  # Splitwise
# The engine vintage LLM-Inference-Bench ran where the engines table keeps several (data/engines.toml).
BENCH_ENGINES = {"vllm": "vllm-2024", "tensorrt-llm": "tensorrt-llm-2024"}
PRECISIONS = ("fp16", "fp8", "int8", "int4", "bf16")  # the precision sweep's names, this library's too
STUDY_FILES = {
    "LLM-Inference-Bench": "llm_inference_bench.csv",
    "LLM-Inference-Bench (precision sweep)": "llm_inference_bench_quant.csv",
    "Splitwise": "splitwise_perf_model.csv",
    "aiconfigurator": "aiconfigurator_silicon_hopper.csv",
    "llama.cpp pull requests": "llama_cpp_bench.csv",
}
# The vintage the llama-bench tables of llama.cpp's 2025 pull requests ran (CUDA builds of that year).
LLAMA_BENCH_ENGINE = "llama.cpp-2025"


def read_csv(path, required=()) -> list[dict]:
    """The rows of the CSV file at ``path`` as dicts of text, each column of ``required`` present and
    non-empty on every row (else a ``DataTableError`` naming the file and the line).

    >>> rows = read_csv(table_path(MEASURED_DIR) / "published_checks.csv", required=("model", "tpot_s"))
    >>> len(rows) > 0, float(rows[0]["tpot_s"]) < 1      # a TPOT in seconds
    (True, True)
    """
    try:
        rows = list(csv.DictReader(io.StringIO(read_text_file(path))))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataTableError(f"{path}: cannot read the table: {exc.strerror or exc}") from None
    for line, row in enumerate(rows, start=2):
        if bad := [c for c in required if not (row.get(c) or "").strip()]:
            raise DataTableError(f"{path}, line {line}: missing {', '.join(bad)}")
    return rows


@dataclass
class Measurements:
    """Measured rows, one entry per row in every array field.

    >>> m = load_measurements()
    >>> str(m.kind[0]), str(m.regime[0]), str(m.group[0])
    ('latency', 'end-to-end', 'llama-2-7b|a100-40gb|deepspeed-mii')
    """

    source: np.ndarray  # dataset name
    kind: np.ndarray  # "latency", "ttft", "tpot", "tpot_serving"
    model: np.ndarray
    gpu: np.ndarray
    engine: np.ndarray
    num_gpus: np.ndarray
    batch: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    weight_precision: np.ndarray
    kv_precision: np.ndarray
    measured_s: np.ndarray  # seconds: a whole run (latency), a prefill (ttft) or a mean step (tpot)
    measured_throughput: np.ndarray  # tokens/s as the study printed it (latency rows), else NaN
    prefill_chunk: np.ndarray  # prompt tokens per prefill pass (llama.cpp's -b); 0 = the whole prompt
    context_tokens: np.ndarray  # tokens already in the KV cache before the prompt (llama-bench's -d)

    @classmethod
    def from_rows(cls, rows: list[dict]) -> Measurements:
        """Measurements from one dict per row, keyed by the field names; ``measured_throughput`` (tokens/s)
        defaults to NaN, ``prefill_chunk`` and ``context_tokens`` (tokens) to 0."""
        defaults = {"measured_throughput": math.nan, "prefill_chunk": 0, "context_tokens": 0}
        return cls(**{k: np.array([{**defaults, **r}[k] for r in rows]) for k in cls.__dataclass_fields__})

    def __len__(self) -> int:
        return len(self.measured_s)

    def subset(self, mask) -> Measurements:
        """The rows where ``mask`` holds (a bool array or indices)."""
        return Measurements(**{k: getattr(self, k)[mask] for k in self.__dataclass_fields__})

    @property
    def regime(self) -> np.ndarray:
        """The regime each row measures: batch-1 decode, batched decode, prefill/TTFT or end-to-end."""
        tpot = self.kind == "tpot"
        cases = [tpot & (self.batch == 1), tpot | (self.kind == "tpot_serving"), self.kind == "ttft"]
        return np.select(cases, ["batch-1 decode", "batched decode", "prefill/TTFT"], "end-to-end")

    @property
    def group(self) -> np.ndarray:
        """Configuration group of each row: model × GPU × engine (held out together in validation)."""
        return np.array([f"{m}|{g}|{e}" for m, g, e in zip(self.model, self.gpu, self.engine, strict=True)])


def _study_rows(name: str) -> list[dict]:
    return read_csv(table_path(MEASURED_DIR) / name)


def _model_id(name: str) -> str | None:
    m = model_for_hf_id(STUDY_MODEL_NAMES.get(name, name))
    return m.id if m else None


def _inference_bench_rows(name: str, quant: bool) -> list[dict]:
    """LLM-Inference-Bench: static batches of B requests × L prompt tokens × L output tokens; latency."""
    rows = []
    for x in _study_rows(name):
        model = _model_id(x["Model"])
        if model is None:
            continue
        wp, kvp = ("fp16", "fp16")
        if quant:  # "Weight = fp16, KV Cache = fp8"
            wp, kvp = (part.split("=")[1].strip().lower() for part in x["kv_cache_dtype"].split(","))
            if {wp, kvp} - set(PRECISIONS):
                raise DataTableError(f"{name}: unknown precisions in {x['kv_cache_dtype']!r}")
        length = int(x["Input Output Length"])
        # llama.cpp's "batch size" is its prompt-processing batch (-b), not concurrent requests: its
        # throughput is 2L ÷ latency (one sequence), and at "batch 1" the prompt goes one token per pass.
        llama_cpp = x["Framework"] == "llama.cpp"
        eng = get_engine(x["Framework"]).id
        rows.append(dict(
            source="LLM-Inference-Bench" + (" (precision sweep)" if quant else ""), kind="latency",
            model=model, gpu=HARDWARE[x["Hardware"]], engine=BENCH_ENGINES.get(eng, eng),
            num_gpus=int(x["Num of Hardware"]), batch=1 if llama_cpp else int(x["Batch Size"]),
            input_tokens=length, output_tokens=length, weight_precision=wp, kv_precision=kvp,
            measured_s=float(x["latency" if quant else "Latency"]),
            measured_throughput=float(x["throughput" if quant else "Throughput"]),
            prefill_chunk=int(x["Batch Size"]) if llama_cpp else 0,
        ))  # fmt: skip
    return rows


def _splitwise_rows() -> list[dict]:
    """Splitwise: 5 repeats per configuration, averaged; TTFT and the mean decode step are separate rows."""
    repeats: dict = {}
    for x in _study_rows("splitwise_perf_model.csv"):
        sizes = (int(x[c]) for c in ("tensor_parallel", "batch_size", "prompt_size", "token_size"))
        key = (x["model"], x["hardware"], *sizes)
        repeats.setdefault(key, []).append((float(x["prompt_time"]) * 1e-3, float(x["token_time"]) * 1e-3))
    rows = []
    for (mdl, hw, tp, b, p, o), v in repeats.items():
        ttft, tpot = np.mean(v, axis=0)
        common = dict(source="Splitwise", model=_model_id(mdl), gpu=HARDWARE[hw], engine="splitwise-2023",
                      num_gpus=tp, batch=b, input_tokens=p, output_tokens=o, weight_precision="fp16",
                      kv_precision="fp16")  # fmt: skip
        rows.append(dict(kind="ttft", measured_s=float(ttft), **common))
        rows.append(dict(kind="tpot", measured_s=float(tpot), **common))
    return rows


def _aiconfigurator_rows() -> list[dict]:
    """aiconfigurator: aggregated serving at a concurrency; only TPOT (its TTFT holds queueing)."""
    rows = []
    for x in _study_rows("aiconfigurator_silicon_hopper.csv"):
        model = _model_id(x["model_path"])
        if model is None or x["mode"] != "agg" or int(x["pp_size"] or 1) != 1:
            continue
        eng = get_engine(x["backend"]).id
        wp = "fp8" if x["gemm_quant_mode"].startswith("fp8") else "bf16"
        # KV in FP8 where TensorRT-LLM runs FP8 weights (its FP8 recipes quantize KV too); BF16 elsewhere
        kvp = "fp8" if (wp == "fp8" and eng == "tensorrt-llm") else "bf16"
        rows.append(dict(
            source="aiconfigurator", kind="tpot_serving", model=model, gpu=HARDWARE[x["system"]], engine=eng,
            num_gpus=int(x["tp_size"]), batch=int(x["batch_size"]), input_tokens=int(x["isl"]),
            output_tokens=int(x["osl"]), weight_precision=wp, kv_precision=kvp,
            measured_s=float(x["silicon_tpot_ms"]) * 1e-3,
        ))  # fmt: skip
    return rows


def _llama_bench_rows() -> list[dict]:
    """llama-bench figures from llama.cpp pull requests (tokens/s of one sequence): ``tgN`` is N decode
    steps after the row's depth (a mean step: 1 ÷ tokens/s); ``ppN`` a prompt of N tokens in passes of
    ``ubatch`` tokens (llama-bench's -ub) after the depth (N ÷ tokens/s)."""
    rows = []
    for x in _study_rows("llama_cpp_bench.csv"):
        kind, n = re.fullmatch(r"(pp|tg)(\d+)(?:@d\d+)?", x["test"]).groups()
        n, depth, tps = int(n), int(x["depth_tokens"] or 0), float(x["tokens_per_s"])
        common = dict(source="llama.cpp pull requests", model=x["model"], gpu=x["gpu"],
                      engine=LLAMA_BENCH_ENGINE, num_gpus=1, batch=1, weight_precision=x["weight_precision"],
                      kv_precision=x["kv_precision"], measured_throughput=tps)  # fmt: skip
        if kind == "tg":
            rows.append(dict(kind="tpot", input_tokens=depth, output_tokens=n, measured_s=1 / tps, **common))
        else:
            ubatch = int(x["ubatch"] or n)
            rows.append(dict(kind="ttft", input_tokens=n, output_tokens=0, measured_s=n / tps,
                             prefill_chunk=ubatch if ubatch < n else 0, context_tokens=depth,
                             **common))  # fmt: skip
    return rows


@functools.cache
def load_measurements() -> Measurements:
    """Every measured row the calibration uses, mapped to this library's ids (read once); times in s.

    >>> m = load_measurements()
    >>> len(m) > 1000, sorted(set(m.kind.tolist()))
    (True, ['latency', 'tpot', 'tpot_serving', 'ttft'])
    """
    rows = (
        _inference_bench_rows("llm_inference_bench.csv", quant=False)
        + _inference_bench_rows("llm_inference_bench_quant.csv", quant=True)
        + _splitwise_rows()
        + _aiconfigurator_rows()
        + _llama_bench_rows()
    )
    return Measurements.from_rows(rows)


def coverage() -> list[dict]:
    """Per study: the rows of its file and the measured rows expressed from them (a Splitwise configuration's
    5 repeats become one TTFT and one TPOT row; aiconfigurator's disaggregated, pipelined and TTFT are not).

    >>> {c["source"]: c["rows_expressed"] > 0 for c in coverage()}["Splitwise"]
    True
    """
    ms = load_measurements()
    return [
        {"source": study, "file": name, "rows_in_file": len(_study_rows(name)),
         "rows_expressed": int((ms.source == study).sum())}
        for study, name in STUDY_FILES.items()
    ]  # fmt: skip


def nearest_measured(
    model_id, gpu_id, engine, batch, input_tokens, output_tokens, num_gpus, k=3
) -> list[dict]:
    """The ``k`` measured configurations closest to this one (same engine first; distance in log sizes:
    ``batch`` sequences, ``input_tokens`` and ``output_tokens`` tokens, ``num_gpus`` GPUs, the model's
    active parameters).

    >>> nearest_measured("llama-3-8b", "h100-sxm", "vllm-2024", 1, 128, 128, 1, k=1)[0]["model"]
    'llama-3-8b'
    """
    ms = load_measurements()
    same = ms.engine == get_engine(engine).id
    ms = ms.subset(same if same.any() else np.ones(len(ms), bool))
    params = np.array([active_parameter_count(x) for x in ms.model])
    asked = dict(batch=batch, input_tokens=input_tokens, output_tokens=output_tokens, num_gpus=num_gpus)
    # sizes of at least 1: a decode from an empty context, a prefill that produced no answer
    dist = sum(np.abs(np.log(np.maximum(getattr(ms, k), 1) / max(v, 1))) for k, v in asked.items())
    dist = dist + np.abs(np.log(params / active_parameter_count(model_id)))
    dist = dist + (ms.model != model_id) * 0.5 + (ms.gpu != gpu_id) * 1.0
    names = ("source", "model", "gpu", "num_gpus", "batch", "input_tokens", "output_tokens")
    found = {}  # one per configuration, nearest first
    for j in np.argsort(dist, kind="stable"):
        key = tuple(getattr(ms, f)[j].item() for f in names)
        found.setdefault(key, {**dict(zip(names, key, strict=True)), "engine": str(ms.engine[j])})
        if len(found) == k:
            break
    return list(found.values())
