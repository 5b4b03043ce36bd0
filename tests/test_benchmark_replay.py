"""A serving run of a result file replayed in the simulator under the file's own load
(roofline.measure.benchmark_replay): a file the simulator itself could have written replays to itself, each
kind of load maps to the simulator's, and diagnose --from carries the replay of every serving run."""

from __future__ import annotations

import json
import math

import pytest

from roofline import engines, sim
from roofline.errors import InvalidConfigurationError
from roofline.measure import benchmark_diagnosis as bd
from roofline.measure.benchmark_files import example_path, read_benchmark_file
from roofline.measure.benchmark_replay import MAX_REQUESTS, replay, replay_config
from roofline.sim import validation

TIMER = engines.StepTimer("vllm", "llama-3.1-8b", "h100-sxm")


def vllm_file(tmp_path, **fields) -> str:
    """A minimal ``vllm bench serve`` result, 40 requests of 500 tokens in and 50 out, and ``fields``."""
    record = {"model_id": "meta-llama/Llama-3.1-8B-Instruct", "backend": "vllm", "num_prompts": 40,
              "request_rate": "inf", "max_concurrency": 4, "completed": 40, "duration": 10.0,
              "total_input_tokens": 20_000, "total_output_tokens": 2_000, "output_throughput": 200.0,
              "mean_ttft_ms": 50.0, "mean_tpot_ms": 8.0} | fields  # fmt: skip
    path = tmp_path / "run.json"
    path.write_text(json.dumps(record))
    return str(path)


def test_a_run_the_simulator_could_have_written_replays_to_itself(tmp_path):
    # 4 closed-loop clients, 40 requests, 500 in / 50 out, vLLM's steps: the simulator's own means written
    # as vllm bench serve writes them come back with every ratio 1 (fixed lengths: the request latency
    # is TTFT + 49 TPOT exactly)
    config = sim.SimConfig("llama-3.1-8b", "h100-sxm", concurrency=4, requests=40, input_tokens=500,
                           output_tokens=50, engine="vllm", record_timeline=False)  # fmt: skip
    r = sim.simulate(config)
    path = vllm_file(tmp_path, mean_ttft_ms=r.ttft_mean_s * 1e3, mean_tpot_ms=r.tpot_mean_s * 1e3)
    (run,) = read_benchmark_file(path)
    replayed = replay(run, TIMER)
    assert replayed["load"] == "4 clients, all starting at once" and replayed["requests"] == 40
    for metric in ("ttft", "tpot", "request_latency"):
        assert replayed["ratio"][metric] == pytest.approx(1, rel=1e-9), metric


def test_each_load_of_a_file_becomes_the_simulators(tmp_path):
    (limited,) = read_benchmark_file(vllm_file(tmp_path, request_rate=2.0))
    config, words = replay_config(limited, TIMER)
    assert config.concurrency == 4 and "rate of 2/s beside its limit is not simulated" in words
    # a rate without a limit: open-loop arrivals, vLLM's burstiness b giving gaps of CV 1/sqrt(b)
    open_loop = vllm_file(tmp_path, request_rate=2.0, max_concurrency=None, burstiness=0.25)
    (bursty,) = read_benchmark_file(open_loop)
    config, words = replay_config(bursty, TIMER)
    assert (config.rate_per_s, config.interarrival_cv, words) == (2.0, 2.0, "2 requests/s")
    (flood,) = read_benchmark_file(vllm_file(tmp_path, max_concurrency=None))
    config, words = replay_config(flood, TIMER)
    assert (config.concurrency, config.requests, words) == (40, 40, "every request at once")
    # no limit written, but 4 requests/s of 1 s each: 4 in flight on average (Little's law), 4 clients
    (kept,) = read_benchmark_file(vllm_file(tmp_path, max_concurrency=None, request_throughput=4.0,
                                            mean_e2el_ms=1000.0))  # fmt: skip
    config, words = replay_config(kept, TIMER)
    assert (config.concurrency, words) == (4, "4 clients, as the file kept")
    many = vllm_file(tmp_path, num_prompts=10**5, completed=10**5, total_input_tokens=5 * 10**7,
                     total_output_tokens=5 * 10**6)  # fmt: skip
    (huge,) = read_benchmark_file(many)
    assert replay_config(huge, TIMER)[0].requests == MAX_REQUESTS


def test_sglangs_random_dataset_is_drawn_as_sglang_draws_it():
    runs = read_benchmark_file(example_path("sglang_bench_serving.jsonl"))
    run = runs[0]
    config, _ = replay_config(run, TIMER)
    expected = validation.ranged_lengths(run.random_input_len, run.random_range_ratio)
    assert config.input_tokens == expected and config.concurrency == run.max_concurrency


def test_diagnose_carries_the_replay_of_every_serving_run_and_its_error_band():
    path = example_path("sglang_bench_serving.jsonl")
    serving = bd.diagnose_file(path, gpu="h100-sxm", model="llama-3.1-8b")
    runs = read_benchmark_file(path)
    for run in serving["runs"]:
        r = run["replay"]
        assert r["engine"] == run["engine"] == "sglang" and r["error_band"] == validation.error_band("sglang")
        assert all(0.2 < r["ratio"][k] < 5 for k in ("ttft", "tpot", "request_latency"))
        # SGLang writes its mean request latency: the replay compares with the file's own figure
        assert r["measured"]["request_latency"] == pytest.approx(runs[run["record"] - 1].e2e_latency_mean_s)
    bench = bd.diagnose_file(example_path("llama_bench.json"))
    assert all("replay" not in run for run in bench["runs"])  # a llama-bench test is not a serving load
    assert math.isfinite(serving["runs"][0]["replay"]["simulated"]["tpot"])


def test_a_load_the_simulator_refuses_leaves_the_rest_of_the_diagnosis(monkeypatch):
    def refuse(run, timer):
        raise InvalidConfigurationError("the prompt does not fit the model's window")

    monkeypatch.setattr(bd, "replay", refuse)
    d = bd.diagnose_file(example_path("vllm_bench_serve.json"), gpu="h100-sxm")
    (run,) = d["runs"]
    assert run["replay"] == {"error": "the prompt does not fit the model's window"} and run["placements"]
