"""``diagnose --from`` and ``calibrate --from``: a benchmark's result file placed on the roofline, the checks
lesson 06 teaches, and bad files or missing options refused with exit 2 and nothing written."""

import json

import pytest

import roofline as rl
from roofline.apps.cli import main
from roofline.measure.benchmark_files import example_path

EXAMPLES = [
    "vllm_bench_serve.json", "sglang_bench_serving.jsonl", "aiperf_profile_export.json", "llama_bench.json",
    "llama_bench.jsonl",
]  # fmt: skip
DEPLOYMENT = ["--gpu", "h100-sxm", "--model", "llama-3.1-8b"]


def run_json(capsys, *argv) -> tuple[int, dict]:
    code = main([*map(str, argv), "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_file_is_placed_between_the_floor_and_beyond(capsys, name):
    options = [] if name.startswith("llama_bench") else DEPLOYMENT
    code, d = run_json(capsys, "diagnose", "--from", example_path(name), *options)
    assert code == 0 and d["runs"]
    for run in d["runs"]:
        for p in run["placements"]:
            assert 0 < p["floor_s"] <= p["achievable_s"]
            assert p["measured_over_floor"] == pytest.approx(p["measured_s"] / p["floor_s"])
            assert p["below_floor"] == (p["measured_s"] < p["floor_s"])


def test_a_generation_test_is_one_decode_step_per_token_on_its_floor(capsys):
    # llama-bench's tg128 at avg_ts tokens/s: one step of 1/avg_ts s; the floor is the physics' batch-1 step.
    code, d = run_json(capsys, "diagnose", "--from", example_path("llama_bench.json"))
    tg = d["runs"][1]
    tokens_per_s = json.loads(example_path("llama_bench.json").read_text())[1]["avg_ts"]
    step = rl.decode_step("llama-3-8b", "rtx-4090", batch=1, context_tokens=64, weight_precision="gguf-q4_0")
    (p,) = tg["placements"]
    assert (tg["gpu_id"], tg["weight_precision"]) == ("rtx-4090", "gguf-q4_0")  # from gpu_info and model_type
    assert p["measured_s"] == pytest.approx(1 / tokens_per_s)
    assert p["floor_s"] == pytest.approx(float(step.step_time_s), rel=1e-6)


def test_the_model_comes_from_the_files_model_id(capsys):
    code, d = run_json(
        capsys, "diagnose", "--from", example_path("vllm_bench_serve.json"), "--gpu", "h100-sxm"
    )
    assert code == 0 and d["runs"][0]["model_id"] == "llama-3.1-8b"  # meta-llama/Llama-3.1-8B-Instruct


def serving_record(**changes) -> dict:
    record = json.loads(example_path("vllm_bench_serve.json").read_text())
    for key in ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"):
        record.pop(key, None)
    return record | changes


def flags_of(capsys, tmp_path, record: dict) -> list[str]:
    path = tmp_path / "result.json"
    path.write_text(json.dumps(record))
    code, d = run_json(capsys, "diagnose", "--from", path, "--gpu", "h100-sxm")
    assert code == 0, d
    return d["runs"][0]["flags"]


def test_a_tpot_faster_than_the_floor_is_flagged(capsys, tmp_path):
    flags = flags_of(capsys, tmp_path, serving_record(mean_tpot_ms=2.0))
    assert any("faster than the floor" in f for f in flags)


def test_a_tpot_the_runs_duration_cannot_hold_is_flagged(capsys, tmp_path):
    # 160 requests of 200 tokens at 20 ms per token, 16 at a time, need 160 × 4 s / 16 = 40 s, not 19 s.
    flags = flags_of(capsys, tmp_path, serving_record(mean_tpot_ms=20.0))
    assert any("cannot be reconciled" in f for f in flags)


def test_an_output_rate_that_counts_the_prompt_is_flagged(capsys, tmp_path):
    record = serving_record()
    counted = (record["total_input_tokens"] + record["total_output_tokens"]) / record["duration"]
    flags = flags_of(capsys, tmp_path, record | {"output_throughput": counted})
    assert any("counts the prompt" in f for f in flags)


def test_the_example_files_raise_no_flag(capsys, tmp_path):
    assert flags_of(capsys, tmp_path, serving_record()) == []


def test_the_plot_is_written_only_for_a_good_run(capsys, tmp_path):
    picture = tmp_path / "runs.png"
    code, d = run_json(capsys, "diagnose", "--from", example_path("llama_bench.json"), "--plot", picture)
    assert code == 0 and d["plot"] == str(picture) and picture.read_bytes()[:4] == b"\x89PNG"
    for argv in (["--plot", tmp_path / "runs.txt"], ["--plot", tmp_path / "nogpu.png", "--gpu", "nope"]):
        code, d = run_json(capsys, "diagnose", "--from", example_path("llama_bench.json"), *argv)
        assert code == 2 and "error" in d
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.png"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--from", "EXAMPLE"], "--gpu"),
        (["--from", "SGLANG", "--gpu", "h100-sxm"], "--model"),
        (["--tpot-ms", "7"], "--model"),
        (["--from", "EXAMPLE", "--gpu", "h100-sxm", "--model", "nope-7b"], "nope-7b"),
        (["--from", "MISSING"], "MISSING"),
    ],
)
def test_what_the_file_does_not_say_is_asked_for(capsys, tmp_path, argv, says):
    names = {
        "EXAMPLE": str(example_path("vllm_bench_serve.json")),
        "MISSING": str(tmp_path / "none.json"),
        "SGLANG": str(example_path("sglang_bench_serving.jsonl")),
    }
    argv = [names.get(a, a) for a in argv]
    code, d = run_json(capsys, "diagnose", *argv)
    assert code == 2 and says.replace("MISSING", "none.json") in d["error"]["message"]


@pytest.mark.parametrize("text", ["", "{", "[]", '{"completed": 3}', "\n".join(['{"a": 1}', "{"])])
def test_a_bad_file_is_an_error_naming_it(capsys, tmp_path, text):
    path = tmp_path / "bad.json"
    path.write_text(text)
    for command in (["diagnose", "--gpu", "h100-sxm"], ["calibrate", "--name", "mine", "--dry-run"]):
        code, d = run_json(capsys, *command, "--from", path)
        assert code == 2 and str(path) in d["error"]["message"]


def test_an_aiperf_file_names_no_engine_so_the_gpus_usual_one_stands_in(capsys, tmp_path, monkeypatch):
    # aiperf drives any OpenAI-compatible server: the model comes from its input_config, the engine from the
    # GPU
    path = example_path("aiperf_profile_export.json")
    code, d = run_json(capsys, "diagnose", "--from", path, "--gpu", "h100-sxm")
    (run,) = d["runs"]
    usual = rl.engines.default_engine("h100-sxm")
    assert code == 0 and d["tool"] == "aiperf" and (run["model_id"], run["engine"]) == ("llama-3.1-8b", usual)
    assert run["workload"]["concurrency"] == 16 and run["flags"] == []
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    argv = ("calibrate", "--from", path, "--gpu", "h100-sxm")
    code, cal = run_json(capsys, *argv, "--name", "my-aiperf", "--dry-run")
    assert code == 0 and cal["base"] == usual and cal["points"] == 1  # the TPOT; TTFT under load is not alone


def test_calibrate_from_a_file_fits_its_points(capsys, tmp_path, monkeypatch, request):
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    request.addfinalizer(rl.data.clear_cache)  # the saved engine must not outlive its folder
    code, d = run_json(
        capsys,
        "calibrate",
        "--from",
        example_path("sglang_bench_serving.jsonl"),
        *DEPLOYMENT,
        "--name",
        "my-sglang",
    )
    # three runs: three TPOTs, and the one TTFT measured alone (concurrency 1); the file's tool is the base
    assert code == 0 and d["points"] == 4 and d["base"] == "sglang" and d["saved"]
    rl.data.clear_cache()
    code, step = run_json(
        capsys, "step", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "my-sglang"
    )
    assert code == 0 and step["achievable"]["engine"] == "my-sglang"
