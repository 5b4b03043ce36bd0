"""Benchmark result files read as their tools write them (roofline.measure.benchmark_files): the shipped
examples read with the values written into them, the format is found from the content, and every kind of
bad file (not JSON, truncated, a missing or non-numeric field, impossible times, a file that contradicts
itself, a directory, a FIFO, /dev/zero, bytes that are not UTF-8) is a BenchmarkFileError naming the file,
the record and the field, never another exception or a hang. Hypothesis mutates valid records to check that
last promise."""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.errors import RooflineError
from roofline.measure import benchmark_files as bf
from roofline.measure import json_records
from roofline.measure.benchmark_files import (
    BenchmarkFileError,
    LlamaBenchRun,
    ServingRun,
    detect_format,
    example_path,
    read_benchmark_file,
)

EXAMPLES = (
    "vllm_bench_serve.json", "sglang_bench_serving.jsonl", "aiperf_profile_export.json", "llama_bench.json",
    "llama_bench.jsonl",
)  # fmt: skip


def vllm_record() -> dict:
    return json.loads(example_path("vllm_bench_serve.json").read_text())


def sglang_records() -> list[dict]:
    return [json.loads(line) for line in example_path("sglang_bench_serving.jsonl").read_text().splitlines()]


def aiperf_record() -> dict:
    return json.loads(example_path("aiperf_profile_export.json").read_text())


def llama_records() -> list[dict]:
    return json.loads(example_path("llama_bench.json").read_text())


def write(directory: Path, name: str, content: str | bytes) -> Path:
    path = directory / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def error_of(path: Path, **kwargs) -> BenchmarkFileError:
    with pytest.raises(BenchmarkFileError) as info:
        read_benchmark_file(path, **kwargs)
    return info.value


def assert_names(err: BenchmarkFileError, path: Path, record: str | None, field: str | None) -> None:
    """The message starts with the file, then the record and the field (when the problem has them)."""
    message = str(err)
    assert message.startswith(str(path)), message
    assert (err.record, err.field) == (record, field), message
    if record:
        assert f", {record}" in message, message
    if field:
        assert f"field {field!r}" in message, message


# ------------------------------------------------------------------ the shipped examples


def test_every_example_is_small_and_detected_from_its_content():
    formats = [detect_format(example_path(name)) for name in EXAMPLES]
    assert formats == ["vllm", "sglang", "aiperf", "llama-bench", "llama-bench"]
    assert all(example_path(name).stat().st_size < 20_000 for name in EXAMPLES)
    assert (example_path("README.md")).is_file()


def test_the_vllm_example_reads_with_the_values_written_into_it():
    (run,) = read_benchmark_file(example_path("vllm_bench_serve.json"))
    assert isinstance(run, ServingRun)
    assert (run.tool, run.record, run.model_id, run.backend) == (
        "vllm-bench-serve", 1, "meta-llama/Llama-3.1-8B-Instruct", "vllm"
    )  # fmt: skip
    assert (run.max_concurrency, run.request_rate_per_s, run.burstiness) == (16, math.inf, 1.0)
    assert (run.num_prompts, run.completed, run.failed) == (160, 160, 0)
    assert run.duration_s == pytest.approx(19.0294)
    assert (run.total_input_tokens, run.total_output_tokens) == (160_000, 32_000)
    assert (run.mean_input_tokens_per_request, run.mean_output_tokens_per_request) == (1000.0, 200.0)
    assert run.ttft_p99_s == pytest.approx(0.38039374)  # the file's 380.39374 ms, in seconds
    assert run.ttft_median_s == pytest.approx(0.04583)
    assert run.tpot_mean_s == pytest.approx(8.91271469595586e-3)
    assert run.output_throughput_tokens_per_s == pytest.approx(32_000 / 19.0294)
    assert run.e2e_latency_mean_s is None  # vllm bench serve writes E2E statistics only when asked
    assert run.input_lens == (1000,) * 160 and run.output_lens == (200,) * 160
    assert len(run.ttfts_s) == 160 and run.ttfts_s[0] == 0.190005  # as written: seconds
    assert run.mean_concurrency is None and run.random_input_len is None


def test_the_aiperf_example_reads_with_the_values_written_into_it():
    (run,) = read_benchmark_file(example_path("aiperf_profile_export.json"))
    assert (run.tool, run.model_id, run.backend) == ("aiperf", "meta-llama/Llama-3.1-8B-Instruct", "chat")
    # concurrency mode: 16 clients that send again the moment an answer ends (no rate: the burst's inf)
    assert (run.max_concurrency, run.request_rate_per_s) == (16, math.inf)
    assert (run.completed, run.failed) == (320, None)
    assert (run.duration_s, run.total_input_tokens, run.total_output_tokens) == (38.42, 320_000, 64_000)
    # milliseconds to seconds; aiperf's inter-token latency is (latency - TTFT) / (tokens - 1): the TPOT
    assert run.ttft_mean_s == pytest.approx(0.18243) and run.ttft_p99_s == pytest.approx(0.40266)
    assert run.tpot_mean_s == pytest.approx(0.00862) and run.tpot_median_s == pytest.approx(0.00858)
    assert run.e2e_latency_mean_s == pytest.approx(0.18243 + 199 * 0.00862)
    assert run.itl_mean_s is None  # aiperf keeps its per-chunk latency out of the summary
    assert run.request_throughput_per_s == pytest.approx(320 / 38.42)


def test_a_genai_perf_file_reads_its_flat_settings_and_per_request_lengths(tmp_path):
    record = aiperf_record()
    for key in ("total_isl", "total_osl", "input_config"):
        del record[key]
    record["input_config"] = {"model": ["meta-llama/Llama-3.1-8B-Instruct"], "concurrency": 16,
                              "endpoint_type": "chat"}  # fmt: skip
    (run,) = read_benchmark_file(write(tmp_path, "profile_export_genai_perf.json", json.dumps(record)))
    assert (run.tool, run.max_concurrency) == ("genai-perf", 16)
    assert run.model_id == "meta-llama/Llama-3.1-8B-Instruct"
    assert (run.total_input_tokens, run.total_output_tokens) == (1000 * 320, 200 * 320)


@pytest.mark.parametrize("unit, scale", [("s", 1e-3), ("ns", 1e6), ("us", 1e3)])
def test_an_aiperf_latency_is_read_in_its_own_unit(tmp_path, unit, scale):
    record = aiperf_record()
    ttft = record["time_to_first_token"]
    record["time_to_first_token"] = {k: v * scale if k != "unit" else unit for k, v in ttft.items()}
    (run,) = read_benchmark_file(write(tmp_path, "run.json", json.dumps(record)))
    assert run.ttft_mean_s == pytest.approx(0.18243)


@pytest.mark.parametrize(
    "change, field",
    [
        ({"time_to_first_token": {"unit": "fortnights", "avg": 1.0}}, "time_to_first_token.unit"),
        ({"request_count": {"unit": "requests", "avg": 320.5}}, "request_count.avg"),
        ({"benchmark_duration": {"unit": "sec", "avg": 0}}, "benchmark_duration.avg"),
        ({"request_throughput": {"unit": "requests/sec", "avg": 80.0}}, "request_throughput"),
        ({"total_osl": {"unit": "tokens", "avg": 0.0}}, "total_osl.avg"),
        ({"inter_token_latency": {"unit": "ms", "avg": 9, "p50": 9.5, "p99": 9}}, "inter_token_latency.p50"),
        ({"input_config": {"loadgen": {"concurrency": 0}}}, "input_config.loadgen.concurrency"),
    ],
)
def test_a_bad_aiperf_figure_is_named_by_its_path(tmp_path, change, field):
    path = write(tmp_path, "run.json", json.dumps(aiperf_record() | change))
    assert_names(error_of(path), path, "record 1", field)


def test_the_sglang_example_reads_three_runs_with_their_line_numbers():
    runs = read_benchmark_file(example_path("sglang_bench_serving.jsonl"))
    assert [r.record for r in runs] == [1, 2, 3]
    assert [r.max_concurrency for r in runs] == [1, 8, 32]
    assert [r.completed for r in runs] == [10, 80, 320]
    assert all(r.tool == "sglang-bench-serving" and r.request_rate_per_s == math.inf for r in runs)
    assert all(r.num_prompts is None and r.model_id is None for r in runs)  # this SGLang writes neither
    assert [(r.random_input_len, r.random_output_len, r.random_range_ratio) for r in runs] == [
        (1000, 200, 1.0)
    ] * 3
    assert all(r.mean_concurrency <= r.max_concurrency for r in runs)
    assert [round(r.tpot_mean_s * 1e3, 2) for r in runs] == [6.25, 7.62, 11.54]
    assert runs[0].ttft_mean_s == pytest.approx(0.028658979289161286)
    assert runs[2].e2e_latency_p99_s == pytest.approx(3.078387777793986)


@pytest.mark.parametrize("name", ["llama_bench.json", "llama_bench.jsonl"])
def test_the_llama_bench_examples_read_pp512_and_tg128(name):
    pp, tg = read_benchmark_file(example_path(name))
    assert isinstance(pp, LlamaBenchRun) and pp.tool == "llama-bench"
    assert (pp.record, tg.record) == (1, 2)
    assert (pp.test_kind, pp.test_name, tg.test_kind, tg.test_name) == (
        "prompt",
        "pp512",
        "generation",
        "tg128",
    )
    assert (pp.model_type, pp.model_size_bytes, pp.model_n_params) == (
        "llama 8B Q4_0",
        4653375488,
        8030261248,
    )
    assert (pp.n_batch, pp.n_ubatch, pp.n_threads, pp.n_gpu_layers, pp.n_depth) == (2048, 512, 16, 99, 0)
    assert (pp.type_k, pp.type_v, pp.backends, pp.gpu_info) == (
        "f16",
        "f16",
        "CUDA",
        "NVIDIA GeForce RTX 4090",
    )
    assert pp.tokens_per_s == 10744.671018 and tg.tokens_per_s == 138.649996
    assert tg.time_mean_s == pytest.approx(0.923188176) and len(tg.samples_s) == 5
    assert (pp.build_commit, pp.build_number, pp.test_time) == ("0104b151", 0, "2026-11-30T15:02:11Z")


def test_the_json_and_jsonl_llama_bench_examples_hold_the_same_tests():
    def strip(run):
        return {k: v for k, v in vars(run).items() if k != "file"}

    a, b = (read_benchmark_file(example_path(n)) for n in ("llama_bench.json", "llama_bench.jsonl"))
    assert [strip(r) for r in a] == [strip(r) for r in b]


def test_the_examples_respect_the_physics():
    """Illustrative, but plausible: no decode step beats its weight-read floor."""
    h100 = rl.get_gpu("h100-sxm").memory_bandwidth_bytes_per_s
    (vllm,) = read_benchmark_file(example_path("vllm_bench_serve.json"))
    assert vllm.tpot_mean_s > rl.decode_floor_s(16.06e9, h100)  # Llama 3.1 8B in BF16
    for run in read_benchmark_file(example_path("sglang_bench_serving.jsonl")):
        assert run.tpot_mean_s > rl.decode_floor_s(16.06e9, h100)
    (aiperf,) = read_benchmark_file(example_path("aiperf_profile_export.json"))
    assert aiperf.tpot_mean_s > rl.decode_floor_s(16.06e9, h100)
    # 16 clients for the run's duration hold every request's latency (Little's law, with a little idle time)
    held = aiperf.completed * aiperf.e2e_latency_mean_s
    assert 0.95 * 16 * aiperf.duration_s < held <= 16 * aiperf.duration_s
    tg = read_benchmark_file(example_path("llama_bench.json"))[1]
    floor = rl.decode_floor_s(tg.model_size_bytes, rl.get_gpu("rtx-4090").memory_bandwidth_bytes_per_s)
    assert 0.4 < tg.tokens_per_s * floor < 1  # 60-70 % of the bandwidth ceiling, as llama.cpp reaches


# ------------------------------------------------------------------ format detection and variants


def test_the_format_comes_from_the_content_not_the_name(tmp_path):
    shutil.copy(example_path("vllm_bench_serve.json"), tmp_path / "results.txt")
    shutil.copy(example_path("sglang_bench_serving.jsonl"), tmp_path / "sglang.json")
    shutil.copy(example_path("llama_bench.jsonl"), tmp_path / "bench.json")
    assert detect_format(tmp_path / "results.txt") == "vllm"
    assert detect_format(str(tmp_path / "sglang.json")) == "sglang"
    assert detect_format(tmp_path / "bench.json") == "llama-bench"
    assert len(read_benchmark_file(tmp_path / "sglang.json")) == 3


def test_a_forced_format_reads_the_file_as_that_tool_writes_it(tmp_path):
    path = example_path("sglang_bench_serving.jsonl")
    assert len(read_benchmark_file(path, format="sglang")) == 3
    err = error_of(path, format="vllm")  # SGLang does not write num_prompts, which vLLM always does
    assert_names(err, path, "line 1", "num_prompts")
    err = error_of(path, format="llama-bench")
    assert err.record == "line 1" and err.field is not None
    err = error_of(path, format="csv")
    assert "unknown format 'csv'" in str(err) and "vllm, sglang, aiperf, llama-bench" in str(err)


def test_appended_vllm_results_and_a_pretty_printed_file_read(tmp_path):
    record = vllm_record()
    appended = write(
        tmp_path, "appended.json", json.dumps(record) + "\n" + json.dumps(record)
    )  # --append-result
    assert [r.record for r in read_benchmark_file(appended)] == [1, 2]
    pretty = write(tmp_path, "pretty.json", json.dumps(record, indent=2))
    assert read_benchmark_file(pretty)[0].completed == 160


def test_older_and_newer_writer_versions_read(tmp_path):
    old_vllm = {k: v for k, v in vllm_record().items() if k not in ("failed", "max_concurrency", "label")}
    old_vllm["request_goodput:"] = old_vllm.pop("request_goodput")  # benchmark_serving.py's misspelt key
    (run,) = read_benchmark_file(write(tmp_path, "old.json", json.dumps(old_vllm)))
    assert run.max_concurrency is None and run.failed is None
    old_keys = ("backend", "request_rate", "total_input_tokens", "total_output_tokens",
                "total_output_tokens_retokenized", "mean_e2e_latency_ms", "median_e2e_latency_ms",
                "median_ttft_ms", "median_itl_ms", "output_throughput", "random_input_len",
                "random_output_len", "random_range_ratio", "duration", "completed")  # fmt: skip
    old_sglang = {k: sglang_records()[0][k] for k in old_keys}  # the oldest bench_serving's keys
    (run,) = read_benchmark_file(write(tmp_path, "old.jsonl", jsonl([old_sglang])))
    assert run.ttft_mean_s is None and run.ttft_median_s == pytest.approx(0.027891128118206408)
    refactored = dict(sglang_records()[1], request_rate="trace")  # python/sglang/benchmark/metrics.py names
    refactored["total_input"], refactored["total_output"] = (
        refactored.pop("total_input_tokens"),
        refactored.pop("total_output_tokens"),
    )
    (run,) = read_benchmark_file(write(tmp_path, "new.jsonl", jsonl([refactored])))
    assert (run.total_input_tokens, run.total_output_tokens, run.request_rate_per_s) == (80_000, 16_000, None)
    old_llama = [{k: v for k, v in r.items() if k not in ("n_depth", "backends", "samples_ns", "samples_ts")}
                 for r in llama_records()]  # fmt: skip
    pp, tg = read_benchmark_file(write(tmp_path, "old_llama.json", json.dumps(old_llama)))
    assert (pp.n_depth, pp.backends, pp.samples_s) == (0, None, None)


def test_a_test_at_depth_and_a_combined_test_are_named_as_llama_bench_names_them(tmp_path):
    record = dict(llama_records()[1], n_depth=4096)
    combined = dict(record, n_prompt=512, n_gen=128, n_depth=0)
    tokens = 640
    combined.update(avg_ts=tokens / (combined["avg_ns"] * 1e-9), samples_ts=None)
    depth, both = read_benchmark_file(write(tmp_path, "d.jsonl", jsonl([record, combined])))
    assert (depth.test_name, both.test_name, both.test_kind) == (
        "tg128 @ d4096",
        "pp512+tg128",
        "prompt+generation",
    )


# ------------------------------------------------------------------ bad files: one error, naming where


def vllm_with(**changes) -> str:
    return json.dumps({**vllm_record(), **changes})


def sglang_with(line: int, **changes) -> str:
    records = sglang_records()
    records[line - 1] = {**records[line - 1], **changes}
    return jsonl(records)


def without(record: dict, key: str) -> dict:
    return {k: v for k, v in record.items() if k != key}


def json_error_line(text: str) -> str:
    """Where ``json.loads`` stops on ``text``, as the reader names it."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"line {exc.lineno}"
    raise AssertionError("valid JSON")


TRUNCATED_ARRAY = example_path("llama_bench.json").read_text()[:1500]  # llama-bench stopped mid-run

BAD_FILES = {
    # name: (content, record, field, words the message must hold)
    "not-json": ("hello, world\n", "line 1", None, "not valid JSON"),
    "csv": ("build_commit,build_number\n0104b151,0\n", "line 1", None, "llama-bench"),
    "empty": ("", None, None, "is empty"),
    "blank": ("\n  \n", None, None, "is empty"),
    "scalar": ("42", "record 1", None, "expected a JSON object or array"),
    "empty-array": ("[]", None, None, "holds no test"),
    "array-of-numbers": ("[1, 2]", "record 1", None, "expected a JSON object"),
    "deeply-nested": ("[" * 100_000 + "]" * 100_000, "line 1", None, "nested too deeply"),
    "unknown-format": ('{"hello": 1}', "record 1", None, "supported"),
    "huge-integer-text": ('{"completed": ' + "9" * 5000 + "}", "line 1", None, "not valid JSON"),
    "missing-field": (json.dumps(without(vllm_record(), "duration")), "record 1", "duration", "missing"),
    "null-field": (vllm_with(completed=None), "record 1", "completed", "got null"),
    "text-number": (sglang_with(2, completed="80"), "line 2", "completed", "'80' (a string)"),
    "boolean-count": (vllm_with(total_output_tokens=True), "record 1", "total_output_tokens", "boolean"),
    "boolean-time": (sglang_with(3, mean_ttft_ms=False), "line 3", "mean_ttft_ms", "boolean"),
    "float-count": (vllm_with(num_prompts=160.0), "record 1", "num_prompts", "whole number"),
    "huge-count": (vllm_with(completed=10**400), "record 1", "completed", "401-digit"),
    "negative-time": (vllm_with(mean_ttft_ms=-5.0), "record 1", "mean_ttft_ms", "at least 0"),
    "nan-time": (sglang_with(1, p99_tpot_ms=math.nan), "line 1", "p99_tpot_ms", "nan (a number)"),
    "infinite-duration": (vllm_with(duration=math.inf), "record 1", "duration", "finite"),
    "zero-duration": (vllm_with(duration=0), "record 1", "duration", "more than 0"),
    "zero-completed": (sglang_with(2, completed=0), "line 2", "completed", "at least 1"),
    "zero-output": (vllm_with(total_output_tokens=0), "record 1", "total_output_tokens", "at least 1"),
    "bad-rate": (vllm_with(request_rate="fast"), "record 1", "request_rate", '"inf"'),
    "zero-rate": (sglang_with(1, request_rate=0), "line 1", "request_rate", "above 0"),
    "bad-concurrency-limit": (vllm_with(max_concurrency=0), "record 1", "max_concurrency", "at least 1"),
    "more-completed-than-sent": (vllm_with(completed=161), "record 1", "completed", "161 requests completed"),
    "short-list": (vllm_with(ttfts=vllm_record()["ttfts"][:150]), "record 1", "ttfts", "150 entries"),
    "long-list": (vllm_with(input_lens=[1000] * 170), "record 1", "input_lens", "170 entries"),
    "list-not-list": (vllm_with(output_lens=200), "record 1", "output_lens", "expected a list"),
    "negative-ttft": (vllm_with(ttfts=[-0.1] + vllm_record()["ttfts"][1:]), "record 1", "ttfts", "-0.1"),
    "lists-disagree-with-total": (
        vllm_with(input_lens=[999] + [1000] * 159),
        "record 1",
        "input_lens",
        "adds up to 159999",
    ),
    "ttfts-disagree-with-mean": (
        vllm_with(ttfts=[2 * t for t in vllm_record()["ttfts"]]),
        "record 1",
        "ttfts",
        "contradicts",
    ),
    "throughput-contradicts": (
        vllm_with(request_throughput=30.0),
        "record 1",
        "request_throughput",
        "contradicts",
    ),
    "median-above-p99": (sglang_with(2, median_itl_ms=99.0), "line 2", "median_itl_ms", "99th percentile"),
    "concurrency-above-limit": (
        sglang_with(2, concurrency=9.5),
        "line 2",
        "concurrency",
        "above the limit of 8",
    ),
    "concurrency-contradicts-latency": (
        sglang_with(3, concurrency=20.0),
        "line 3",
        "concurrency",
        "mean latency",
    ),
    "truncated-last-line": (jsonl(sglang_records())[:-200], "line 3", None, "truncated"),
    "mixed-formats": (
        json.dumps(vllm_record()) + "\n" + json.dumps(sglang_records()[0]) + "\n",
        "line 2",
        None,
        "first record",
    ),
    "truncated-array": (TRUNCATED_ARRAY, json_error_line(TRUNCATED_ARRAY), None, "not valid JSON"),
    "no-tokens": (json.dumps([dict(llama_records()[0], n_prompt=0)]), "record 1", "n_prompt", "both 0"),
    "rate-contradicts-time": (
        json.dumps([dict(llama_records()[1], avg_ts=500.0)]),
        "record 1",
        "avg_ts",
        "contradicts",
    ),
    "mean-not-of-samples": (
        json.dumps([dict(llama_records()[1], samples_ns=[1, 2, 3, 4, 5])]),
        "record 1",
        "avg_ns",
        "mean of samples_ns",
    ),
    "boolean-gpu-layers": (
        json.dumps([dict(llama_records()[0], n_gpu_layers=True)]),
        "record 1",
        "n_gpu_layers",
        "boolean",
    ),
    "missing-llama-field": (
        json.dumps([llama_records()[0], without(llama_records()[1], "model_size")]),
        "record 2",
        "model_size",
        "missing",
    ),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_a_bad_file_is_one_error_naming_the_file_record_and_field(tmp_path, case):
    content, record, field, words = BAD_FILES[case]
    path = write(tmp_path, f"{case}.json", content)
    err = error_of(path)
    assert isinstance(err, RooflineError) and isinstance(err, ValueError)
    assert_names(err, path, record, field)
    assert words in str(err), str(err)


def test_bytes_that_are_not_utf8_name_their_line(tmp_path):
    path = write(tmp_path, "latin1.jsonl", b'{"backend": "sglang"}\n{"backend": "caf\xe9"}\n')
    err = error_of(path)
    assert_names(err, path, "line 2", None)
    assert "not UTF-8" in str(err) and "0xe9" in str(err)
    bom = write(tmp_path, "bom.json", b"\xef\xbb\xbf" + example_path("vllm_bench_serve.json").read_bytes())
    assert read_benchmark_file(bom)[0].completed == 160  # a byte-order mark is not an error


def test_a_directory_a_missing_file_and_an_oversized_file_are_refused(tmp_path):
    assert_names(error_of(tmp_path), tmp_path, None, None)
    assert str(error_of(tmp_path)) == f"{tmp_path}: is a directory; give the path of one result file"
    assert "cannot be read: No such file" in str(error_of(tmp_path / "nowhere.json"))
    assert "cannot be read" in str(error_of("bad\0name.json"))
    big = tmp_path / "big.json"
    with open(big, "wb") as f:  # sparse: 64 MiB + 1 byte on disk costs nothing
        f.truncate(json_records.MAX_FILE_BYTES + 1)
    assert "larger than 67,108,864 bytes" in str(error_of(big))


def refused_in_time(path: Path, timeout_s: float = 10.0) -> BenchmarkFileError:
    """The reader's error for ``path``, failing the test (instead of hanging it) if no answer comes."""
    outcome: list = []

    def target():
        try:
            read_benchmark_file(path)
        except Exception as exc:  # noqa: BLE001 -- the test checks which exception it was
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), f"reading {path} hangs"
    assert outcome and isinstance(outcome[0], BenchmarkFileError), outcome
    return outcome[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "results.jsonl"
    os.mkfifo(fifo)
    err = refused_in_time(fifo)
    assert_names(err, fifo, None, None)
    assert "not a regular file" in str(err)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_dev_zero_and_a_link_to_it_are_refused_without_reading(tmp_path):
    assert "not a regular file" in str(refused_in_time(Path("/dev/zero")))
    link = tmp_path / "results.json"
    link.symlink_to("/dev/zero")
    assert "not a regular file" in str(refused_in_time(link))


# ------------------------------------------------------------------ fuzz: only BenchmarkFileError, ever

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.sampled_from([0, -1, 1, 2**53, 2**53 + 1, 10**400, -(10**400)])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from(["inf", "trace", "Infinity", "80", ""]),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def mutated_file(draw, records: list[dict], layout: str) -> bytes:
    """Valid records with keys deleted or replaced by random JSON values, then the text cut or spliced."""
    records = [dict(r) for r in records]
    for record in records:
        keys = sorted(record)
        for key in draw(st.lists(st.sampled_from(keys), max_size=3)):
            record.pop(key, None)
        for key in draw(st.lists(st.sampled_from(keys), max_size=3)):
            record[key] = draw(JSON_VALUES)
    text = json.dumps(records if layout == "array" else records[0]) if layout != "lines" else jsonl(records)
    raw = text.encode()
    action = draw(st.sampled_from(["keep", "keep", "truncate", "splice"]))
    if action == "truncate":
        raw = raw[: draw(st.integers(0, len(raw)))]
    elif action == "splice":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.binary(max_size=12)) + raw[at:]
    return raw


def assert_sane(runs: list) -> None:
    """A returned run holds only finite, non-negative times and rates (the burst rate excepted)."""
    for run in runs:
        for name, value in vars(run).items():
            values = value if isinstance(value, tuple) else (value,)
            numbers = [v for v in values if isinstance(v, float)]
            if name == "request_rate_per_s":
                numbers = [v for v in numbers if v != math.inf]
            assert all(math.isfinite(v) and v >= 0 for v in numbers), (name, value)


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def fuzz_once(directory: Path, raw: bytes, forced: str | None) -> None:
    path = directory / "mutated.json"
    path.write_bytes(raw)
    try:
        runs = read_benchmark_file(path, format=forced)
    except BenchmarkFileError as err:
        assert str(err).startswith(str(path))
        return
    assert runs and all(isinstance(r, ServingRun | LlamaBenchRun) for r in runs)
    assert_sane(runs)


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL_VLLM = {  # the vLLM example cut to three requests, still consistent (the fuzz starts from a valid file)
    **vllm_record(), "num_prompts": 3, "completed": 3, "duration": 1.9, "total_input_tokens": 3000,
    "total_output_tokens": 600, "request_throughput": 3 / 1.9, "output_throughput": 600 / 1.9,
    "input_lens": [1000] * 3, "output_lens": [200] * 3, "ttfts": [0.05, 0.2, 0.04], "latencies": [1.8] * 3,
    "queue_times": [0.0] * 3, "mean_ttft_ms": 290 / 3, "median_ttft_ms": 50.0, "p99_ttft_ms": 197.0,
}  # fmt: skip


def test_the_fuzz_starts_from_valid_files(tmp_path):
    for name, text in (("small.json", json.dumps(SMALL_VLLM)), ("lines.jsonl", jsonl(llama_records()))):
        assert read_benchmark_file(write(tmp_path, name, text))


@FUZZ
@given(raw=mutated_file([SMALL_VLLM], "object"), forced=st.sampled_from([None, "vllm"]))
def test_fuzzed_vllm_files_raise_only_benchmark_file_errors(fuzz_dir, raw, forced):
    fuzz_once(fuzz_dir, raw, forced)


@FUZZ
@given(raw=mutated_file(sglang_records(), "lines"), forced=st.sampled_from([None, "sglang"]))
def test_fuzzed_sglang_files_raise_only_benchmark_file_errors(fuzz_dir, raw, forced):
    fuzz_once(fuzz_dir, raw, forced)


@FUZZ
@given(raw=mutated_file(llama_records(), "array"), forced=st.sampled_from([None, "llama-bench"]))
def test_fuzzed_llama_bench_json_files_raise_only_benchmark_file_errors(fuzz_dir, raw, forced):
    fuzz_once(fuzz_dir, raw, forced)


@FUZZ
@given(raw=mutated_file(llama_records(), "lines"), forced=st.sampled_from([None, "llama-bench"]))
def test_fuzzed_llama_bench_jsonl_files_raise_only_benchmark_file_errors(fuzz_dir, raw, forced):
    fuzz_once(fuzz_dir, raw, forced)


@FUZZ
@given(raw=mutated_file([aiperf_record()], "object"), forced=st.sampled_from([None, "aiperf"]))
def test_fuzzed_aiperf_files_raise_only_benchmark_file_errors(fuzz_dir, raw, forced):
    fuzz_once(fuzz_dir, raw, forced)


@FUZZ
@given(
    metric=st.sampled_from(["time_to_first_token", "inter_token_latency", "request_count", "total_osl",
                            "benchmark_duration", "request_latency"]),
    stat=st.sampled_from(["unit", "avg", "p50", "p99"]),
    value=JSON_VALUES,
)  # fmt: skip
def test_fuzzed_aiperf_statistics_raise_only_benchmark_file_errors(fuzz_dir, metric, stat, value):
    record = aiperf_record()
    record[metric] = {**record[metric], stat: value}
    fuzz_once(fuzz_dir, json.dumps(record).encode(), None)


@FUZZ
@given(raw=st.binary(max_size=200), forced=st.sampled_from([None, *bf.FORMATS]))
def test_random_bytes_raise_only_benchmark_file_errors(fuzz_dir, raw, forced):
    fuzz_once(fuzz_dir, raw, forced)
