"""Benchmark result files as their tools write them, read into typed records in SI units.

Four formats, each read as its tool writes it (no conversion step, no hand-made CSV):

* ``vllm bench serve --save-result`` (vLLM): one JSON object per file (``--append-result`` adds one per
  line). Writer: ``vllm/benchmarks/serve.py``, before that ``benchmarks/benchmark_serving.py``.
* ``python -m sglang.bench_serving --output-file`` (SGLang): JSON lines, one object appended per run.
  Writer: ``python/sglang/bench_serving.py``.
* aiperf's ``profile_export_aiperf.json`` (NVIDIA aiperf, the harness of Dynamo and aiconfigurator), and
  GenAI-Perf's ``profile_export_genai_perf.json``, whose layout aiperf keeps: one JSON object, each metric
  an object of statistics in its display unit, the settings under ``input_config``. Writer: aiperf's
  ``aiperf/exporters/json_exporter.py`` (``JsonExportData``).
* ``llama-bench -o json`` (a JSON array, one object per test) and ``-o jsonl`` (one object per line)
  (llama.cpp). Writer: ``tools/llama-bench/llama-bench.cpp`` (``json_printer``, ``jsonl_printer``).

Parsing and validation only: no physics here. The file is read, split and checked field by field by
``roofline.measure.json_records``; this module knows what each tool writes. Each run becomes a frozen
``ServingRun`` or ``LlamaBenchRun`` whose field names carry their unit (``ttft_mean_s``,
``model_size_bytes``): the files' milliseconds and nanoseconds are converted to seconds once, here. A field a
file does not hold (older tool versions write fewer) is ``None``.

**Everything wrong with a file is a** ``BenchmarkFileError`` naming the file, the record (``record 2`` of a
JSON array, ``line 3`` of a JSON-lines file) and the field, and saying what was expected: a file that is not
JSON, empty or truncated; a missing or non-numeric field (``true`` is not a number); a negative, NaN or
infinite time; no completed request or no output token; more completed requests than prompts; per-request
lists whose length disagrees with the request counts; a figure that contradicts another of the same file
(SGLang's measured mean concurrency above its own concurrency limit); a directory, device or FIFO (never read,
so never a hang); a file over 64 MiB; bytes that are not UTF-8.

The examples in ``data/benchmark_examples/`` (``example_path``) are illustrative files written by the project
in the tools' formats, not measurements (their README says which version of each format they follow).

>>> runs = read_benchmark_file(example_path("sglang_bench_serving.jsonl"))
>>> [(r.record, r.max_concurrency, round(r.tpot_mean_s * 1e3, 1)) for r in runs]
[(1, 1, 6.3), (2, 8, 7.6), (3, 32, 11.5)]
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline import data
from roofline.measure.json_records import (
    MAX_COUNT,
    BenchmarkFileError,
    Record,
    describe,
    flatten,
    read_records,
)

FORMATS = ("vllm", "sglang", "aiperf", "llama-bench")
TOOLS = {"vllm": "vllm-bench-serve", "sglang": "sglang-bench-serving", "aiperf": "aiperf",
         "llama-bench": "llama-bench"}  # fmt: skip
SUPPORTED = (
    "vLLM `vllm bench serve --save-result` (JSON), SGLang `python -m sglang.bench_serving --output-file` "
    "(JSON lines), aiperf `profile_export_aiperf.json` (or GenAI-Perf's JSON) and llama.cpp `llama-bench "
    "-o json` or `-o jsonl`"
)
EXAMPLES_DIR = "benchmark_examples"  # the example files' folder inside data/
CONCURRENCY_TOLERANCE = 0.02  # SGLang's mean concurrency may pass its limit by 2 % (rounding), no more
CONSISTENCY_TOLERANCE = 0.01  # a figure the tool derives from others (throughput = tokens / duration): 1 %

# Keys that only one tool writes: how a record's format is recognised from its content.
LLAMA_BENCH_KEYS = ("avg_ts", "avg_ns", "samples_ns", "model_n_params")
SGLANG_KEYS = (
    "total_output_tokens_retokenized",
    "total_output_retokenized",  # the same count, as the newer python/sglang/benchmark/metrics.py names it
    "mean_e2e_latency_ms",
    "median_e2e_latency_ms",
    "input_throughput",
)
VLLM_KEYS = ("num_prompts", "burstiness", "total_token_throughput", "mean_e2el_ms", "request_goodput")
AIPERF_KEYS = ("time_to_first_token", "inter_token_latency", "request_latency")  # objects of statistics


@dataclass(frozen=True)
class ServingRun:
    """One run of a serving benchmark (vLLM's ``vllm bench serve``, SGLang's ``bench_serving``, aiperf or
    GenAI-Perf).

    Times in seconds (the files' milliseconds converted), counts in requests or tokens, rates per second.
    ``None`` where the file does not hold the figure (older tool versions, or options not asked for).

    - ``tool``: ``"vllm-bench-serve"``, ``"sglang-bench-serving"``, ``"aiperf"`` or ``"genai-perf"``;
      ``file``: the path as given;
      ``record``: 1-based place of the run in the file (the line number for JSON lines).
    - ``model_id``, ``backend``: as the tool wrote them. ``max_concurrency``: the client's limit on requests
      in flight (``None``: unbounded). ``request_rate_per_s``: the arrival rate asked for (``math.inf``: all
      requests sent at once; ``None``: SGLang replaying a trace's timestamps). ``burstiness``: vLLM's
      gamma-arrival shape (1 = Poisson).
    - ``num_prompts`` (vLLM only: SGLang does not write it), ``completed``, ``failed`` (newer vLLM):
      requests. ``duration_s``: wall time of the run, s.
    - ``total_input_tokens``, ``total_output_tokens``: tokens of the completed requests.
    - ``ttft_*_s`` (time to first token), ``tpot_*_s`` (time per output token after the first, per request),
      ``itl_*_s`` (inter-token latency), ``e2e_latency_*_s`` (request latency): mean, median and 99th
      percentile over completed requests, s.
    - ``request_throughput_per_s`` (requests/s) and ``output_throughput_tokens_per_s`` (tokens/s) as the
      file reports them (checked against the counts and the duration).
    - ``input_lens``, ``output_lens`` (tokens) and ``ttfts_s`` (s): per-request lists when the file has them
      (vLLM ``--save-detailed``, SGLang ``--output-details``), one entry per request sent: a failed one
      shows 0 output tokens and a TTFT of 0, as both tools write them.
    - SGLang only: ``mean_concurrency`` (its ``concurrency``: the sum of request latencies over the
      duration, i.e. the mean number of requests in flight), ``dataset_name``, ``random_input_len``,
      ``random_output_len`` (tokens) and ``random_range_ratio`` (the random dataset's settings).

    >>> run = read_benchmark_file(example_path("vllm_bench_serve.json"))[0]
    >>> run.tool, run.max_concurrency, run.request_rate_per_s, run.completed
    ('vllm-bench-serve', 16, inf, 160)
    >>> round(run.tpot_mean_s * 1e3, 2), run.mean_output_tokens_per_request
    (8.91, 200.0)
    """

    tool: str
    file: str
    record: int
    model_id: str | None
    backend: str | None
    max_concurrency: int | None
    request_rate_per_s: float | None
    burstiness: float | None
    num_prompts: int | None
    completed: int
    failed: int | None
    duration_s: float
    total_input_tokens: int
    total_output_tokens: int
    ttft_mean_s: float | None
    ttft_median_s: float | None
    ttft_p99_s: float | None
    tpot_mean_s: float | None
    tpot_median_s: float | None
    tpot_p99_s: float | None
    itl_mean_s: float | None
    itl_median_s: float | None
    itl_p99_s: float | None
    e2e_latency_mean_s: float | None
    e2e_latency_median_s: float | None
    e2e_latency_p99_s: float | None
    request_throughput_per_s: float | None
    output_throughput_tokens_per_s: float
    input_lens: tuple[int, ...] | None
    output_lens: tuple[int, ...] | None
    ttfts_s: tuple[float, ...] | None
    mean_concurrency: float | None
    dataset_name: str | None
    random_input_len: int | None
    random_output_len: int | None
    random_range_ratio: float | None

    @property
    def mean_input_tokens_per_request(self) -> float:
        """Prompt tokens per completed request (``total_input_tokens / completed``), tokens."""
        return self.total_input_tokens / self.completed

    @property
    def mean_output_tokens_per_request(self) -> float:
        """Generated tokens per completed request (``total_output_tokens / completed``), tokens."""
        return self.total_output_tokens / self.completed


@dataclass(frozen=True)
class LlamaBenchRun:
    """One test of ``llama-bench`` (one object of ``-o json`` or one line of ``-o jsonl``).

    - ``tool``: ``"llama-bench"``; ``file``; ``record``: 1-based place in the file (line number for JSONL).
    - ``model_type`` (llama.cpp's description, e.g. ``"llama 8B Q4_0"``), ``model_filename``,
      ``model_size_bytes`` (bytes of the weights), ``model_n_params`` (parameters).
    - ``n_prompt`` (prompt tokens processed), ``n_gen`` (tokens generated one at a time), ``n_depth``
      (tokens already in the context before the test; 0 when the file predates it), ``n_batch``,
      ``n_ubatch`` (tokens), ``n_threads``, ``n_gpu_layers`` (-1: the tool's "all"), ``type_k``, ``type_v``
      (KV cache types, e.g. ``"f16"``).
    - ``tokens_per_s`` (llama-bench's ``avg_ts``: the mean over repetitions of (n_prompt + n_gen) / time),
      ``tokens_per_s_stddev``, tokens/s; ``time_mean_s``, ``time_stddev_s`` (``avg_ns``, ``stddev_ns``) and
      ``samples_s`` (each repetition's time, when written), s.
    - ``gpu_info``, ``cpu_info``, ``backends`` (e.g. ``"CUDA"``; ``None`` in files that predate the field),
      ``build_commit``, ``build_number``, ``test_time`` (ISO 8601): as written.

    >>> pp, tg = read_benchmark_file(example_path("llama_bench.json"))
    >>> pp.test_name, round(pp.tokens_per_s), tg.test_kind, round(tg.tokens_per_s, 1)
    ('pp512', 10745, 'generation', 138.6)
    """

    tool: str
    file: str
    record: int
    model_type: str
    model_filename: str | None
    model_size_bytes: int
    model_n_params: int
    n_prompt: int
    n_gen: int
    n_depth: int
    n_batch: int
    n_ubatch: int
    n_threads: int
    n_gpu_layers: int
    type_k: str
    type_v: str
    tokens_per_s: float
    tokens_per_s_stddev: float
    time_mean_s: float
    time_stddev_s: float
    samples_s: tuple[float, ...] | None
    gpu_info: str
    cpu_info: str | None
    backends: str | None
    build_commit: str
    build_number: int | None
    test_time: str | None

    @property
    def test_kind(self) -> str:
        """``"prompt"`` (pp: n_gen = 0), ``"generation"`` (tg: n_prompt = 0) or ``"prompt+generation"``."""
        if self.n_gen == 0:
            return "prompt"
        return "generation" if self.n_prompt == 0 else "prompt+generation"

    @property
    def test_name(self) -> str:
        """The test as llama-bench's table names it: ``pp512``, ``tg128``, ``pp512+tg128``, ``tg128 @ d4096``
        (n_depth > 0)."""
        kind = self.test_kind
        name = {"prompt": f"pp{self.n_prompt}", "generation": f"tg{self.n_gen}"}.get(
            kind, f"pp{self.n_prompt}+tg{self.n_gen}"
        )
        return name + (f" @ d{self.n_depth}" if self.n_depth > 0 else "")


# --------------------------------------------------------------------------------------------------
# The shipped examples
# --------------------------------------------------------------------------------------------------


def example_path(name: str) -> Path:
    """The path of one of the shipped example files in ``data/benchmark_examples/``.

    >>> example_path("llama_bench.jsonl").name
    'llama_bench.jsonl'
    """
    return Path(str(data.table_path(EXAMPLES_DIR))) / name


# --------------------------------------------------------------------------------------------------
# Serving runs: vLLM and SGLang
# --------------------------------------------------------------------------------------------------

MS = 1e-3  # the serving tools write latencies in milliseconds


def _latency_stats(rec: Record, metric: str, prefix: str) -> dict[str, float | None]:
    """Mean, median and p99 of one latency (``mean_ttft_ms`` ...) in seconds; each ``None`` if absent."""
    stats = {
        stat_name: rec.number(f"{stat_name}_{metric}_ms", "a latency in ms", scale=MS, required=False)
        for stat_name in ("mean", "median", "p99")
    }
    _check_median(rec, f"median_{metric}_ms", stats)
    return {f"{prefix}_{stat_name}_s": value for stat_name, value in stats.items()}


def _check_median(rec: Record, field: str, stats: dict[str, float | None]) -> None:
    """A median (s) above its own 99th percentile is a file that contradicts itself."""
    if stats["median"] is not None and stats["p99"] is not None and stats["median"] > stats["p99"] * 1.000001:
        raise rec.error(
            field,
            f"the median ({stats['median'] / MS:g} ms) is above the 99th percentile "
            f"({stats['p99'] / MS:g} ms): the file contradicts itself",
        )


def _serving_common(rec: Record) -> dict[str, Any]:
    """The fields both serving tools write, checked one by one."""
    completed = rec.count("completed", "the number of completed requests", minimum=1)
    fields = {
        "file": rec.file,
        "record": rec.index,
        "model_id": rec.text("model_id", "the model's name"),
        "backend": rec.text("backend", "the backend's name"),
        "max_concurrency": rec.count("max_concurrency", "the limit on requests in flight", 1, required=False),
        "request_rate_per_s": rec.request_rate(),
        "completed": completed,
        "duration_s": rec.number("duration", "the run's duration in seconds", positive=True),
        "total_input_tokens": rec.count(
            rec.key("total_input_tokens", "total_input"), "the prompt tokens of the completed requests"
        ),
        "total_output_tokens": rec.count(
            rec.key("total_output_tokens", "total_output"), "the generated tokens", minimum=1
        ),
        "request_throughput_per_s": rec.number("request_throughput", "requests/s", required=False),
        "output_throughput_tokens_per_s": rec.number("output_throughput", "output tokens/s", positive=True),
        "input_lens": rec.listed("input_lens", "prompt tokens, one per request", whole=True),
        "output_lens": rec.listed("output_lens", "output tokens, one per request", whole=True),
        "ttfts_s": rec.listed("ttfts", "times to first token in s, one per request", whole=False),
    }
    for metric in ("ttft", "tpot", "itl"):
        fields.update(_latency_stats(rec, metric, metric))
    return fields


def _vllm_run(rec: Record) -> ServingRun:
    """A ``vllm bench serve --save-result`` record."""
    fields = _serving_common(rec)
    fields.update(_latency_stats(rec, "e2el", "e2e_latency"))
    num_prompts = rec.count("num_prompts", "the number of prompts sent", minimum=1)
    if fields["completed"] > num_prompts:
        raise rec.error(
            "completed", f"{fields['completed']} requests completed out of {num_prompts} sent (num_prompts)"
        )
    run = ServingRun(
        tool=TOOLS["vllm"],
        **fields,
        num_prompts=num_prompts,
        failed=rec.count("failed", "the number of failed requests", required=False),
        burstiness=rec.number("burstiness", "the arrival burstiness", positive=True, required=False),
        mean_concurrency=None,
        dataset_name=None,
        random_input_len=None,
        random_output_len=None,
        random_range_ratio=None,
    )
    _check_serving(rec, run)
    return run


def _sglang_run(rec: Record) -> ServingRun:
    """A ``python -m sglang.bench_serving`` record (one line of its JSON-lines output)."""
    fields = _serving_common(rec)
    fields.update(_latency_stats(rec, "e2e_latency", "e2e_latency"))
    run = ServingRun(
        tool=TOOLS["sglang"],
        **fields,
        num_prompts=None,
        failed=None,
        burstiness=None,
        mean_concurrency=rec.number("concurrency", "the mean number of requests in flight", required=False),
        dataset_name=rec.text("dataset_name", "the dataset's name"),
        random_input_len=rec.count("random_input_len", "the random dataset's input tokens", required=False),
        random_output_len=rec.count(
            "random_output_len", "the random dataset's output tokens", required=False
        ),
        random_range_ratio=rec.number(
            "random_range_ratio", "the random dataset's range ratio", required=False
        ),
    )
    _check_serving(rec, run)
    _check_concurrency(rec, run)
    return run


def _close(a: float, b: float, tolerance: float = CONSISTENCY_TOLERANCE) -> bool:
    return abs(a - b) <= tolerance * max(abs(a), abs(b))


def _check_serving(rec: Record, run: ServingRun) -> None:
    """The figures the tools derive from others agree with them, and the per-request lists with the counts."""
    # An output rate that disagrees with the answers' tokens over the duration is not refused here: it is
    # what lesson 06 teaches to catch (a rate that counts the prompt), and diagnose flags it.
    derived = (("request_throughput", run.request_throughput_per_s, run.completed, "completed requests"),)
    for key, reported, count, what in derived:
        if reported is not None and not _close(reported, count / run.duration_s):
            raise rec.error(
                key,
                f"{reported:g}/s, but {count} {what} in {run.duration_s:g} s is "
                f"{count / run.duration_s:g}/s: the file contradicts itself",
            )
    lists = {k: v for k, v in (("input_lens", run.input_lens), ("output_lens", run.output_lens),
                               ("ttfts", run.ttfts_s)) if v is not None}  # fmt: skip
    sent = run.completed + run.failed if run.failed is not None else None
    for key, values in lists.items():
        if len(values) < run.completed or (sent is not None and len(values) != sent):
            expected = (
                f"{sent} (completed + failed)"
                if sent is not None
                else f"at least {run.completed} (completed)"
            )
            raise rec.error(key, f"has {len(values)} entries, one per request sent: expected {expected}")
        if run.num_prompts is not None and len(values) > run.num_prompts:
            raise rec.error(key, f"has {len(values)} entries, more than the {run.num_prompts} prompts sent")
    if len({len(v) for v in lists.values()}) > 1:
        sizes = ", ".join(f"{k}: {len(v)}" for k, v in lists.items())
        raise rec.error(next(iter(lists)), f"the per-request lists differ in length ({sizes})")
    _check_list_totals(rec, run)


def _check_list_totals(rec: Record, run: ServingRun) -> None:
    """When every request sent completed, the per-request lists add up to the totals and the mean TTFT."""
    for key, values, total in (("input_lens", run.input_lens, run.total_input_tokens),
                               ("output_lens", run.output_lens, run.total_output_tokens)):  # fmt: skip
        if values is not None and len(values) == run.completed and sum(values) != total:
            raise rec.error(
                key,
                f"adds up to {sum(values)} tokens, but the file's total is {total}: "
                "the file contradicts itself",
            )
    ttfts, mean = run.ttfts_s, run.ttft_mean_s
    if ttfts is not None and mean is not None and len(ttfts) == run.completed:
        if not _close(sum(ttfts) / len(ttfts), mean):
            raise rec.error(
                "ttfts",
                f"average {sum(ttfts) / len(ttfts) * 1e3:g} ms, but mean_ttft_ms is {mean * 1e3:g}: "
                "the file contradicts itself",
            )


def _check_concurrency(rec: Record, run: ServingRun) -> None:
    """SGLang's measured mean concurrency (sum of latencies / duration) cannot exceed the client's limit, and
    equals mean latency × completed / duration."""
    measured, limit = run.mean_concurrency, run.max_concurrency
    if measured is None:
        return
    if limit is not None and measured > limit * (1 + CONCURRENCY_TOLERANCE):
        raise rec.error(
            "concurrency",
            f"{measured:g} requests in flight on average, above the limit of {limit} (max_concurrency) "
            "that the client enforces: the file contradicts itself",
        )
    if run.e2e_latency_mean_s is not None and measured > 0:
        implied = run.e2e_latency_mean_s * run.completed / run.duration_s
        if not _close(measured, implied):
            raise rec.error(
                "concurrency",
                f"{measured:g}, but mean latency × completed / duration = {implied:g}: "
                "the file contradicts itself",
            )


# --------------------------------------------------------------------------------------------------
# Serving runs: aiperf, and GenAI-Perf, whose JSON layout aiperf keeps
# --------------------------------------------------------------------------------------------------

# aiperf writes each metric as an object of statistics in its display unit (JsonExportData, "designed to
# mimic the structure of the GenAI-Perf JSON output"): aiperf/common/models/export_models.py
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}
STATISTICS = {"mean": "avg", "median": "p50", "p99": "p99"}


def _time_unit(rec: Record, metric: str) -> float:
    """Seconds per unit of ``metric``'s ``unit`` (``"ms"``, ``"sec"`` ...)."""
    unit = rec.values.get(f"{metric}.unit")
    if not isinstance(unit, str) or unit not in TIME_UNITS:
        units = ", ".join(TIME_UNITS)
        raise rec.error(f"{metric}.unit", f"expected a time unit ({units}), got {describe(unit)}")
    return TIME_UNITS[unit]


def _aiperf_stats(rec: Record, metric: str, prefix: str) -> dict[str, float | None]:
    """Mean (``avg``), median (``p50``) and p99 of one latency metric, in seconds from its own unit."""
    if f"{metric}.avg" not in rec.values:
        return {f"{prefix}_{name}_s": None for name in STATISTICS}
    scale = _time_unit(rec, metric)
    expected = "a latency in the metric's unit"
    stats = {
        name: rec.number(f"{metric}.{stat}", expected, scale=scale, required=name == "mean")
        for name, stat in STATISTICS.items()
    }
    _check_median(rec, f"{metric}.p50", stats)
    return {f"{prefix}_{name}_s": value for name, value in stats.items()}


def _aiperf_tokens(rec: Record, total: str, per_request: str, completed: int, minimum: int) -> int:
    """A token total: aiperf's ``total_isl`` / ``total_osl``, else the mean per request × completed requests
    (GenAI-Perf writes only the per-request statistics)."""
    if f"{total}.avg" in rec.values:
        return rec.whole_number(f"{total}.avg", "a number of tokens", minimum=minimum)
    key = f"{per_request}.avg"
    tokens = rec.number(key, "tokens per request", positive=minimum > 0) * completed
    if not minimum <= tokens <= MAX_COUNT:
        raise rec.error(key, f"{tokens:g} tokens in {completed} requests: expected {minimum} to {MAX_COUNT}")
    return round(tokens)


def _aiperf_config(rec: Record) -> dict[str, Any]:
    """The load and model from ``input_config``: aiperf nests them (``loadgen``, ``endpoint``), GenAI-Perf
    keeps them flat."""
    key = rec.key
    models = rec.values.get(key("input_config.endpoint.model_names", "input_config.model"))
    model = models[0] if isinstance(models, list) and models else models
    concurrency = key("input_config.loadgen.concurrency", "input_config.concurrency")
    rate = rec.number(key("input_config.loadgen.request_rate", "input_config.request_rate"),
                      "the request rate asked for (requests/s)", positive=True, required=False)  # fmt: skip
    return {
        "model_id": model if isinstance(model, str) else None,
        "backend": rec.text(key("input_config.endpoint.type", "input_config.endpoint_type"), "the endpoint"),
        "max_concurrency": rec.count(concurrency, "the limit on requests in flight", 1, required=False),
        # concurrency mode sends the next request the moment one returns (a closed loop): no rate limit
        "request_rate_per_s": math.inf if rate is None else rate,
    }


def _aiperf_run(rec: Record) -> ServingRun:
    """An aiperf ``profile_export_aiperf.json`` or GenAI-Perf ``profile_export_genai_perf.json`` record. Its
    ``inter_token_latency`` is (request latency − TTFT) ÷ (output tokens − 1) per request
    (aiperf/metrics/types/inter_token_latency_metric.py): what vLLM calls TPOT, so it is read as TPOT."""
    flat = Record(rec.file, rec.label, rec.index, flatten(rec.values))
    completed = flat.whole_number("request_count.avg", "the number of completed requests", minimum=1)
    duration = flat.number("benchmark_duration.avg", "the run's duration", positive=True,
                           scale=_time_unit(flat, "benchmark_duration"))  # fmt: skip
    nested = any(k.startswith(("input_config.loadgen.", "input_config.endpoint.")) for k in flat.values)
    run = ServingRun(
        tool=TOOLS["aiperf"] if nested or "aiperf_version" in rec.values else "genai-perf",
        file=rec.file, record=rec.index, **_aiperf_config(flat), burstiness=None, num_prompts=None,
        completed=completed,
        failed=flat.whole_number("error_request_count.avg", "the number of failed requests", required=False),
        duration_s=duration,
        total_input_tokens=_aiperf_tokens(flat, "total_isl", "input_sequence_length", completed, 0),
        total_output_tokens=_aiperf_tokens(flat, "total_osl", "output_sequence_length", completed, 1),
        **_aiperf_stats(flat, "time_to_first_token", "ttft"),
        **_aiperf_stats(flat, "inter_token_latency", "tpot"),
        **_aiperf_stats(flat, "inter_chunk_latency", "itl"),
        **_aiperf_stats(flat, "request_latency", "e2e_latency"),
        request_throughput_per_s=flat.number("request_throughput.avg", "requests/s", required=False),
        output_throughput_tokens_per_s=flat.number("output_token_throughput.avg", "output tokens/s",
                                                   positive=True),  # fmt: skip
        input_lens=None, output_lens=None, ttfts_s=None, mean_concurrency=None, dataset_name=None,
        random_input_len=None, random_output_len=None, random_range_ratio=None,
    )  # fmt: skip
    _check_serving(flat, run)
    return run


# --------------------------------------------------------------------------------------------------
# llama-bench tests
# --------------------------------------------------------------------------------------------------


def _llama_bench_run(rec: Record) -> LlamaBenchRun:
    """One ``llama-bench`` test (an object of ``-o json`` or a line of ``-o jsonl``)."""
    c = rec.count
    run = LlamaBenchRun(
        tool=TOOLS["llama-bench"],
        file=rec.file,
        record=rec.index,
        model_type=rec.text("model_type", "llama.cpp's model description", required=True),
        model_filename=rec.text("model_filename", "the model file's path"),
        model_size_bytes=c("model_size", "the weights' size in bytes", minimum=1),
        model_n_params=c("model_n_params", "the number of parameters", minimum=1),
        n_prompt=c("n_prompt", "the prompt tokens of the test"),
        n_gen=c("n_gen", "the generated tokens of the test"),
        n_depth=c("n_depth", "the context tokens before the test", required=False) or 0,
        n_batch=c("n_batch", "the logical batch size in tokens", minimum=1),
        n_ubatch=c("n_ubatch", "the physical batch size in tokens", minimum=1),
        n_threads=c("n_threads", "the number of CPU threads", minimum=1),
        n_gpu_layers=_gpu_layers(rec),
        type_k=rec.text("type_k", "the K cache type", required=True),
        type_v=rec.text("type_v", "the V cache type", required=True),
        tokens_per_s=rec.number("avg_ts", "tokens/s", positive=True),
        tokens_per_s_stddev=rec.number("stddev_ts", "tokens/s"),
        time_mean_s=c("avg_ns", "the mean time per repetition in ns", minimum=1) * 1e-9,
        time_stddev_s=c("stddev_ns", "the standard deviation in ns") * 1e-9,
        samples_s=_samples(rec),
        gpu_info=rec.text("gpu_info", "the GPU's description", required=True),
        cpu_info=rec.text("cpu_info", "the CPU's description"),
        backends=rec.text("backends", "the backends, e.g. CUDA"),
        build_commit=rec.text("build_commit", "llama.cpp's commit", required=True),
        build_number=c("build_number", "llama.cpp's build number", required=False),
        test_time=rec.text("test_time", "the test's date and time"),
    )
    _check_llama_bench(rec, run)
    return run


def _gpu_layers(rec: Record) -> int:
    """``n_gpu_layers``: a whole number, -1 (newer llama-bench's "all layers") or more."""
    value = rec.raw("n_gpu_layers", "the layers offloaded to the GPU", required=True)
    if isinstance(value, bool) or not isinstance(value, int) or not -1 <= value <= MAX_COUNT:
        raise rec.error(
            "n_gpu_layers", f"expected a whole number of layers, -1 or more, got {describe(value)}"
        )
    return value


def _samples(rec: Record) -> tuple[float, ...] | None:
    """``samples_ns`` (each repetition's time) in seconds; ``None`` if the file predates it."""
    samples = rec.listed("samples_ns", "times in ns, one per repetition", whole=True)
    if samples is None:
        return None
    if not samples or min(samples) == 0:
        raise rec.error("samples_ns", "expected one time above 0 ns per repetition")
    samples_ts = rec.listed("samples_ts", "tokens/s, one per repetition", whole=False)
    if samples_ts is not None and len(samples_ts) != len(samples):
        raise rec.error("samples_ts", f"has {len(samples_ts)} entries, but samples_ns has {len(samples)}")
    return tuple(s * 1e-9 for s in samples)


def _check_llama_bench(rec: Record, run: LlamaBenchRun) -> None:
    """A test processes at least one token, and its rate agrees with its time (llama-bench's ``avg_ts`` is
    the mean of per-repetition rates, which is at least the rate of the mean time, and close to it)."""
    tokens = run.n_prompt + run.n_gen
    if tokens == 0:
        raise rec.error("n_prompt", "n_prompt and n_gen are both 0: a test processes at least one token")
    rate_of_mean_time = tokens / run.time_mean_s
    if not 0.95 * rate_of_mean_time <= run.tokens_per_s <= 2 * rate_of_mean_time:
        raise rec.error(
            "avg_ts",
            f"{run.tokens_per_s:g} tokens/s, but {tokens} tokens in {run.time_mean_s:g} s (avg_ns) is "
            f"{rate_of_mean_time:g} tokens/s: the file contradicts itself",
        )
    if run.samples_s is not None and not _close(sum(run.samples_s) / len(run.samples_s), run.time_mean_s):
        raise rec.error("avg_ns", "is not the mean of samples_ns: the file contradicts itself")


# --------------------------------------------------------------------------------------------------
# The public readers
# --------------------------------------------------------------------------------------------------

READERS = {"vllm": _vllm_run, "sglang": _sglang_run, "aiperf": _aiperf_run, "llama-bench": _llama_bench_run}


def record_format(values: dict[str, Any]) -> str | None:
    """The format one record's keys show (``"vllm"``, ``"sglang"``, ``"aiperf"``, ``"llama-bench"``), or
    ``None``.

    >>> record_format({"avg_ts": 138.6, "n_prompt": 0, "n_gen": 128})
    'llama-bench'
    >>> record_format({"completed": 10, "median_e2e_latency_ms": 1273.0}), record_format({"rows": []})
    ('sglang', None)
    """
    formats = (("llama-bench", LLAMA_BENCH_KEYS), ("sglang", SGLANG_KEYS), ("vllm", VLLM_KEYS),
               ("aiperf", AIPERF_KEYS))  # fmt: skip
    for name, keys in formats:
        if any(key in values for key in keys):
            return name
    return None


def _detect(records: list[Record]) -> str:
    """The format of the file's records: all the same, and one of ``FORMATS``."""
    first = record_format(records[0].values)
    if first is None:
        keys = ", ".join(sorted(records[0].values)[:12]) or "none"
        raise records[0].error(
            None, f"is not a result of any supported format ({SUPPORTED}); its keys: {keys}"
        )
    for rec in records[1:]:
        found = record_format(rec.values)
        if found != first:
            raise rec.error(
                None,
                f"looks like a {found or 'unknown'} record, but the file's first record is a {first} record",
            )
    return first


def detect_format(path: str | os.PathLike) -> str:
    """The format of a benchmark result file, from its content (not its name): ``"vllm"``, ``"sglang"``,
    ``"aiperf"`` or ``"llama-bench"``. Raises ``BenchmarkFileError`` if the file is none of them (naming the
    formats read).

    >>> detect_format(example_path("sglang_bench_serving.jsonl"))
    'sglang'
    >>> detect_format(example_path("llama_bench.json")), detect_format(example_path("vllm_bench_serve.json"))
    ('llama-bench', 'vllm')
    """
    return _detect(read_records(path, SUPPORTED))


def read_benchmark_file(
    path: str | os.PathLike, format: str | None = None
) -> list[ServingRun | LlamaBenchRun]:
    """Every run (or test) of a benchmark result file, checked, in file order, in SI units.

    ``format``: ``None`` detects it from the content (``detect_format``); one of ``FORMATS`` reads the file
    as that tool's output whatever it looks like. Returns ``ServingRun`` records (vLLM, SGLang, aiperf;
    times in s) or ``LlamaBenchRun`` records (llama-bench; tokens/s, s, bytes).
    Anything wrong with the file raises ``BenchmarkFileError`` naming the file, record and field.

    >>> [r.test_name for r in read_benchmark_file(example_path("llama_bench.jsonl"), format="llama-bench")]
    ['pp512', 'tg128']
    >>> run = read_benchmark_file(example_path("vllm_bench_serve.json"))[0]
    >>> round(run.duration_s, 2), round(run.output_throughput_tokens_per_s), round(run.ttft_p99_s * 1e3)
    (19.03, 1682, 380)
    """
    if format is not None and format not in FORMATS:
        raise BenchmarkFileError(
            os.fspath(path),
            None,
            None,
            f"unknown format {format!r}: expected one of {', '.join(FORMATS)} or None",
        )
    records = read_records(path, SUPPORTED)
    reader = READERS[format or _detect(records)]
    return [reader(rec) for rec in records]
