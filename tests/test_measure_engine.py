"""A real engine on the learner's machine: the GGUF writer, the roofline placement, the CLI, and
(only where the optional ``engine`` group is installed) llama.cpp itself on tiny models."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import roofline as rl
import roofline.engines as achievable
from roofline.apps import cli_measure
from roofline.apps.cli import main
from roofline.measure import bench, engine_lab, engine_roofline, gguf_model, llamacpp
from roofline.measure.gguf_model import ENGINE_MODELS, TINY, gguf_format
from roofline.measure.transformer import TransformerConfig
from roofline.physics.architecture import weight_bytes

gguf = pytest.importorskip("gguf")  # in the test group; the course itself runs without it

# Hand-derived sizes. TINY: per layer q 64·64 + k, v 32·64 each + o 64·64 = 12,288 attention weights,
# 3 · 64 · 128 = 24,576 MLP weights, 2 · 64 norm weights; embedding and output 256 · 64 = 16,384 each;
# final norm 64. Matrices 69,632 in FP16 (2 bytes), norms 192 in FP32 (4 bytes).
TINY_F16_BYTES = 69_632 * 2 + 192 * 4  # 140,032
# random-llama-100m: matrices 12 · (2 · 768² + 2 · 256 · 768 + 3 · 768 · 2048) + 2 · 16,384 · 768
# = 100,663,296; norms 12 · 2 · 768 + 768 = 19,200 (FP32). Q8_0 stores 34 bytes per 32 weights, Q4_0 18 per
# 32, Q6_K 210 per 256 (the output matrix of a Q4_0 file: 16,384 · 768 = 12,582,912 weights).
MATRICES_100M, NORMS_100M, OUTPUT_100M = 100_663_296, 19_200, 12_582_912
BYTES_100M = {
    "F16": MATRICES_100M * 2 + NORMS_100M * 4,  # 201,403,392
    "Q8_0": MATRICES_100M * 34 // 32 + NORMS_100M * 4,  # 107,031,552
    "Q4_0": (MATRICES_100M - OUTPUT_100M) * 18 // 32
    + OUTPUT_100M * 210 // 256
    + NORMS_100M * 4,  # 59,943,936
}


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private user data directory: models and run records never touch the real one."""
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    return tmp_path


# --------------------------------------------------------------------------------------------------
# The GGUF writer (gguf package only, no engine)
# --------------------------------------------------------------------------------------------------


def test_tiny_gguf_reads_back_with_the_library_byte_count(tmp_path):
    path = gguf_model.write_gguf(TINY, tmp_path / "tiny.gguf")
    reader = gguf.GGUFReader(path)
    tensors = {t.name: t for t in reader.tensors}
    assert list(tensors) == [name for name, _ in gguf_model.tensor_shapes(TINY)]
    for name, shape in gguf_model.tensor_shapes(TINY):
        t = tensors[name]
        assert tuple(int(x) for x in t.shape) == tuple(reversed(shape))  # GGUF lists the row length first
        assert t.tensor_type.name == ("F32" if len(shape) == 1 else "F16")
    held = sum(t.n_bytes for t in reader.tensors)
    assert held == TINY_F16_BYTES == weight_bytes(TINY.as_model(), gguf_format("F16"))
    assert gguf_model.check_file_matches_library(path, TINY, "F16") == held


def test_tiny_gguf_metadata_is_what_llama_cpp_reads(tmp_path):
    reader = gguf.GGUFReader(gguf_model.write_gguf(TINY, tmp_path / "tiny.gguf"))

    def field(key):
        f = reader.fields[key]
        value = f.parts[f.data[0]]
        return bytes(value).decode() if value.dtype == np.uint8 else value[0]

    assert field("general.architecture") == "llama"
    assert field("tokenizer.ggml.model") == "none"
    assert field("llama.vocab_size") == TINY.vocab_size
    assert field("llama.block_count") == TINY.layers
    assert field("llama.embedding_length") == TINY.hidden_size
    assert field("llama.feed_forward_length") == TINY.intermediate_size
    assert field("llama.attention.head_count") == TINY.attention_heads
    assert field("llama.attention.head_count_kv") == TINY.kv_heads


def test_weights_are_random_but_reproducible(tmp_path):
    a = gguf.GGUFReader(gguf_model.write_gguf(TINY, tmp_path / "a.gguf", seed=1))
    b = gguf.GGUFReader(gguf_model.write_gguf(TINY, tmp_path / "b.gguf", seed=1))
    c = gguf.GGUFReader(gguf_model.write_gguf(TINY, tmp_path / "c.gguf", seed=2))
    q = [np.asarray(r.tensors[4].data, dtype=np.float32) for r in (a, b, c)]  # blk.0.attn_q
    assert np.array_equal(q[0], q[1]) and not np.array_equal(q[0], q[2])
    assert 0.5 < np.std(q[0]) * np.sqrt(TINY.hidden_size) < 2  # scaled by 1/sqrt(fan in)


def test_engine_models_have_the_hand_counted_sizes():
    assert ENGINE_MODELS["random-llama-100m"].parameter_count == MATRICES_100M + NORMS_100M
    # 24 · (2 · 1280² + 2 · 256 · 1280 + 3 · 1280 · 3584 + 2 · 1280) + 2 · 32,000 · 1280 + 1280
    assert ENGINE_MODELS["random-llama-500m"].parameter_count == 506_656_000
    model = ENGINE_MODELS["random-llama-100m"].as_model()
    for file_type, expected in BYTES_100M.items():
        assert weight_bytes(model, gguf_format(file_type)) == expected, file_type


def test_quantized_output_needs_rows_a_multiple_of_256():
    """llama.cpp stores a Q4_0 file's output matrix in Q6_K only when its rows are a multiple of 256 wide
    (else it falls back), and the library's gguf-q4_0 counts Q6_K: the lab's models must qualify."""
    for name in gguf_model.LAB_MODELS:
        assert ENGINE_MODELS[name].hidden_size % 256 == 0
        assert not ENGINE_MODELS[name].tied_embeddings


def test_model_cache_lives_in_the_user_data_directory_and_follows_the_shapes(home):
    path = gguf_model.model_path(TINY, "q8_0")
    assert path.parent == home / "models"
    assert path.name.endswith("-q8_0.gguf")
    assert gguf_model.model_path(replace(TINY, layers=2), "q8_0") != path
    assert gguf_model.model_path(TINY, "F16") != path


def test_bad_names_are_clear_errors():
    with pytest.raises(rl.UnknownNameError, match="Q4_0"):
        gguf_format("Q4_K")
    with pytest.raises(rl.UnknownNameError, match="random-llama-100m"):
        gguf_model.engine_model("random-llama-100")
    with pytest.raises(rl.InvalidConfigurationError, match="hidden_size"):
        gguf_model.write_gguf(replace(TINY, head_dim=16), "unused.gguf")


def test_a_file_with_other_tensor_types_than_the_library_counts_is_refused(tmp_path):
    path = gguf_model.write_gguf(TINY, tmp_path / "tiny.gguf")
    with pytest.raises(rl.InvalidConfigurationError, match="tensor types differ"):
        gguf_model.check_file_matches_library(path, TINY, "Q8_0")


# --------------------------------------------------------------------------------------------------
# Placement on the roofline (numbers only)
# --------------------------------------------------------------------------------------------------


def test_decode_point_mbu_from_hand_counted_bytes():
    decode = engine_roofline.place(engine_roofline.example_run())[0]
    # TINY in F16 at batch 1 after 8 tokens: all weights but the 32,768-byte embedding table, one
    # embedding row (64 · 2 bytes), and the FP16 KV of 8 tokens (K and V, 1 layer, 1 head of 32: 128 bytes).
    assert decode["step_bytes"] == TINY_F16_BYTES - 256 * 64 * 2 + 64 * 2 + 8 * 128
    assert decode["measured_s"] == 0.010  # the median of three samples
    assert decode["mbu"] == pytest.approx(108_416 / 0.010 / 20e9)
    assert decode["measured_tokens_per_s"] == pytest.approx(100.0)


def test_prompt_point_mfu_uses_the_library_flops_and_the_measured_matmul_rate():
    prompt = engine_roofline.place(engine_roofline.example_run())[1]
    step = rl.prefill(TINY.as_model(), bench.Measurement(20e9, 100e9, 5, 1e-6, 50e9).as_gpu(), 64,
                      weight_precision="gguf-q4_0", kv_precision="fp16")  # fmt: skip
    assert prompt["step_flops"] == pytest.approx(float(step.flops))
    assert prompt["step_flops"] > 2 * 64 * (12_288 + 24_576)  # at least 2 FLOP per matmul weight per token
    assert prompt["mfu"] == pytest.approx(prompt["step_flops"] / 0.005 / 100e9)
    assert prompt["measured_tokens_per_s"] == pytest.approx(64 / 0.005)


def test_predictions_are_the_achievable_layers_llama_cpp_figures():
    run = engine_roofline.example_run()
    gpu = bench.Measurement(**run["machine"]).as_gpu()
    decode, prompt = engine_roofline.place(run)
    model = TINY.as_model("random-llama-tiny")
    f16 = achievable.StepTimer("llama.cpp", model, gpu, weight_precision="gguf-f16", kv_precision="fp16")
    q4_0 = achievable.StepTimer("llama.cpp", model, gpu, weight_precision="gguf-q4_0", kv_precision="fp16")
    d = achievable.decode_step_times(f16, batch=1, context_tokens=8)
    p = achievable.prefill_times(q4_0, 64)
    assert decode["predicted_s"] == pytest.approx(float(d["total"]))
    assert prompt["predicted_s"] == pytest.approx(float(p["total"]))
    for row in (decode, prompt):
        assert row["floor_s"] <= row["predicted_s"]  # an engine never beats the floor
        assert row["predicted_mbu"] <= 1 and row["predicted_mfu"] <= 1
        assert row["measured_over_predicted"] == pytest.approx(row["measured_s"] / row["predicted_s"])


def test_a_machine_the_achievable_layer_cannot_predict_keeps_its_measurement(monkeypatch, capsys):
    def cannot(*args, **kwargs):
        raise rl.UnsupportedPrecisionError("no figures for this machine")

    monkeypatch.setattr(engine_roofline, "decode_step_times", cannot)
    monkeypatch.setattr(engine_roofline, "prefill_times", lambda *a, **k: {"floor": 1e-4, "total": 0.004})
    decode, prompt = engine_roofline.place(engine_roofline.example_run())
    assert decode["mbu"] == pytest.approx(108_416 / 0.010 / 20e9)  # measured figures unchanged
    assert decode["floor_s"] == pytest.approx(108_416 / 20e9)  # the floor needs no engine model
    assert all(decode[k] is None for k in engine_roofline.PREDICTED_FIELDS)
    assert decode["prediction_error"] == "UnsupportedPrecisionError: no figures for this machine"
    assert prompt["prediction_error"] is None and prompt["predicted_s"] == 0.004
    assert prompt["predicted_tokens_per_s"] == pytest.approx(64 / 0.004)
    assert prompt["measured_over_predicted"] == pytest.approx(0.005 / 0.004)
    assert prompt["predicted_mfu"] == pytest.approx(prompt["step_flops"] / 0.004 / 100e9)
    cli_measure.print_engine(
        {"engine_build": {"package": "llama-cpp-python", "version": "x"}, "engine_points": [decode, prompt],
         "engine_load_average_1min": {"before": 1.0, "after": 1.0}, "numpy_decoder": [],
         "engine_run_saved_to": "run.json"}
    )  # fmt: skip
    out = capsys.readouterr().out
    assert "100.0 |     n/a tok/s   MBU 0.00 |  n/a" in out
    assert "no llama.cpp prediction for this machine: UnsupportedPrecisionError: no figures" in out


def test_numpy_decoder_is_placed_with_fp32_bytes():
    (row,) = engine_roofline.place_numpy(engine_roofline.example_run())
    fp32_bytes = 69_824 * 4 - 256 * 64 * 4 + 64 * 4 + 8 * 256  # weights, minus the table, one row, KV
    assert row["measured_s"] == pytest.approx(0.0045)
    assert row["mbu"] == pytest.approx(fp32_bytes / 0.0045 / 20e9)


def test_calibration_points_are_plain_json_ready_dicts():
    points = engine_roofline.calibration_points(engine_roofline.example_run())
    json.dumps(points)  # plain Python only
    decode = points[0]
    assert decode["shape"]["hidden_size"] == 64 and decode["shape"]["tied_embeddings"] is False
    assert (decode["weight_precision"], decode["kv_precision"], decode["threads"]) == ("gguf-f16", "fp16", 1)
    assert (decode["phase"], decode["batch"], decode["context_tokens"]) == ("decode", 1, 8)
    assert decode["measured_s"] == 0.010 and decode["samples_s"] == [0.011, 0.010, 0.009]


def test_the_shipped_reference_run_is_complete_and_plausible():
    run = engine_lab.reference_run()
    rows = engine_roofline.place(run)
    seen = {(r["model"], r["file_type"], r["phase"], r["threads"]) for r in rows}
    for model in gguf_model.LAB_MODELS:
        for file_type in engine_lab.FILE_TYPES:
            for threads in (1, 2):
                assert (model, file_type, "decode", threads) in seen
                assert (model, file_type, "prompt", threads) in seen
    assert {r["prompt_tokens"] for r in rows if r["phase"] == "prompt"} == set(engine_lab.PROMPT_TOKENS)
    for r in rows:
        assert r["samples"] >= 3
        assert 0 < r["mbu"] < 1.2 and 0 < r["mfu"] < 3  # a measurement, not a bound: noise allowed
    assert {r["model"] for r in engine_roofline.place_numpy(run)} == set(gguf_model.LAB_MODELS)
    assert run["load_average_1min"]["before"] >= 0 and run["engine"]["version"]


def test_a_record_round_trips_through_a_file(home):
    run = {**engine_roofline.example_run(), "schema": engine_lab.SCHEMA, "date": "2026-12-01T10:00:00"}
    path = engine_lab.save_run(run)
    assert path.parent == home / "engine_runs"
    assert engine_lab.load_run(path) == run
    assert engine_lab.latest_run() == run
    path.write_text('{"schema": 99}')
    with pytest.raises(rl.InvalidConfigurationError, match="not an engine run record"):
        engine_lab.load_run(path)


# --------------------------------------------------------------------------------------------------
# The binding's install hint and the CLI without the engine
# --------------------------------------------------------------------------------------------------


def test_the_engine_is_an_optional_group_ci_never_installs():
    import tomllib

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    groups, default = pyproject["dependency-groups"], pyproject["tool"]["uv"]["default-groups"]
    assert any(req.startswith("llama-cpp-python") for req in groups["engine"])
    assert not any(
        req.startswith("llama-cpp-python") for req in groups["test"] + pyproject["project"]["dependencies"]
    )
    assert "engine" not in default
    assert any(req.startswith("gguf") for req in groups["test"])  # 1 MB: the writer is tested in CI


def test_amx_workaround_only_where_the_cpu_reports_amx():
    assert llamacpp.cpu_has_amx("processor : 0\nflags : fpu avx512f amx_bf16 amx_int8 amx_tile\n")
    assert not llamacpp.cpu_has_amx("processor : 0\nflags : fpu avx2 avx512f\n")
    assert not llamacpp.cpu_has_amx("Features : fp asimd\n")  # an ARM cpuinfo has no flags line
    assert "-mno-amx-int8" in llamacpp.install_command(amx=True)
    assert llamacpp.install_command(amx=False) == "uv run --group engine roofline measure --engine llama.cpp"


def test_cli_engine_without_the_binding_says_how_to_install(monkeypatch, capsys):
    def missing():
        raise llamacpp.EngineNotInstalledError(f"not installed; run:\n  {llamacpp.install_command()}")

    monkeypatch.setattr(llamacpp, "binding", missing)
    monkeypatch.setattr(bench, "measure", lambda quick: pytest.fail("measured before checking the engine"))
    assert main(["measure", "--quick", "--engine", "llama.cpp"]) == 2
    assert "uv run --group engine roofline measure --engine llama.cpp" in capsys.readouterr().err
    assert main(["measure", "--engine", "llama.cpp", "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["command"] == "measure" and out["error"]["type"] == "EngineNotInstalledError"


@pytest.fixture
def stubbed_lab(monkeypatch, home):
    """The CLI's engine path with the engine and the timing replaced by the example record."""
    machine = bench.Measurement(20e9, 100e9, 5.0, 1e-6, 50e9, details={"machine": "test CPU"})
    record = {
        **engine_roofline.example_run(),
        "schema": engine_lab.SCHEMA,
        "date": "2026-12-01T10:00:00",
        "engine": {"package": "llama-cpp-python", "version": "0.0.test", "system_info": "",
                   "build_uses_amx": False, "cpu_has_amx": False},
        "load_average_1min": {"before": 0.5, "after": 0.7},
    }  # fmt: skip
    monkeypatch.setattr(llamacpp, "binding", lambda: None)
    monkeypatch.setattr(bench, "measure", lambda quick: machine)
    monkeypatch.setattr(engine_lab, "run_lab", lambda m, **kw: record)
    # the CLI's wiring, not the achievable layer's numbers (tested above): 2 ms a step, 4 ms a prompt
    monkeypatch.setattr(engine_roofline, "decode_step_times", lambda *a, **k: {"total": 0.002})
    monkeypatch.setattr(engine_roofline, "prefill_times", lambda *a, **k: {"total": 0.004})
    return record


def test_cli_engine_json_puts_measured_and_predicted_side_by_side(stubbed_lab, capsys, home):
    assert main(["measure", "--quick", "--engine", "llama.cpp", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine"] == "llama.cpp" and out["memory_bandwidth_bytes_per_s"] == 20e9
    decode = out["engine_points"][0]
    assert decode["mbu"] == pytest.approx(108_416 / 0.010 / 20e9)
    assert decode["predicted_s"] == 0.002 and decode["floor_s"] == pytest.approx(108_416 / 20e9)
    assert decode["measured_over_predicted"] == pytest.approx(5.0) and decode["prediction_error"] is None
    assert out["calibration_points"][0]["measured_s"] == 0.010
    assert engine_lab.load_run(out["engine_run_saved_to"]) == stubbed_lab
    doc = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    added = set(out) - set(bench.Measurement(1, 1, 1, 1, 1).to_dict()) - {"command", "saved_to"}
    missing = [k for k in added if f"`{k}`" not in doc]
    missing += [k for k in decode if f"`engine_points[].{k}`" not in doc and f"`.{k}`" not in doc]
    missing += [k for k in out["numpy_decoder"][0] if f"`{k}`" not in doc]
    missing += [k for k in out["calibration_points"][0] if f"`{k}`" not in doc]
    assert not missing, f"engine JSON fields not described in docs/cli.md: {missing}"


def test_cli_engine_text_output(stubbed_lab, capsys):
    engine = cli_measure.run_engine(
        bench.measure(quick=True), SimpleNamespace(quick=True, engine="llama.cpp")
    )
    cli_measure.print_engine(engine)
    out = capsys.readouterr().out
    assert "llama.cpp through llama-cpp-python 0.0.test (load average 0.5 before, 0.7 after)" in out
    assert "100.0 |   500.0 tok/s" in out  # 1 ÷ 10 ms measured | 1 ÷ 2 ms predicted
    assert "12800 |   16000 tok/s" in out  # 64 tokens ÷ 5 ms | ÷ 4 ms
    assert "numpy decoder" in out and "Run saved to" in out


def test_cli_rejects_an_unknown_engine(capsys):
    assert main(["measure", "--engine", "vllm"]) == 2
    assert "llama.cpp" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# llama.cpp itself: only where the engine group is installed (CI installs the test group only)
# --------------------------------------------------------------------------------------------------

needs_engine = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="the optional 'engine' group is not installed"
)
# 1 layer, rows 256 wide: llama.cpp gives its Q4_0 output matrix Q6_K, as the library counts.
SMALL_256 = TransformerConfig(layers=1, hidden_size=256, attention_heads=4, kv_heads=2, head_dim=64,
                              intermediate_size=512, vocab_size=512, tied_embeddings=False)  # fmt: skip


@needs_engine
@pytest.mark.parametrize("file_type", ["Q8_0", "Q4_0"])
def test_llama_cpp_quantizes_to_the_bytes_the_library_counts(tmp_path, file_type):
    src = gguf_model.write_gguf(SMALL_256, tmp_path / "f16.gguf")
    dst = llamacpp.quantize(src, tmp_path / f"{file_type}.gguf", file_type)
    held = gguf_model.check_file_matches_library(dst, SMALL_256, file_type)
    assert held == weight_bytes(SMALL_256.as_model(), gguf_format(file_type))
    assert gguf_model.gguf_tensor_types(dst)["output.weight"] == ("Q6_K" if file_type == "Q4_0" else "Q8_0")


@needs_engine
def test_llama_cpp_runs_the_generated_model(tmp_path):
    path = gguf_model.write_gguf(TINY, tmp_path / "tiny.gguf")
    with llamacpp.Engine(path, context_tokens=64, batch_tokens=32, threads=1) as engine:
        assert engine.vocab_size == TINY.vocab_size
        prompt = llamacpp.time_prompt(engine, 16, repeats=2)
        decode = llamacpp.time_decode(engine, 8, steps=3, repeats=2)
        engine.set_threads(2)
        assert len(prompt) == 2 and len(decode) == 6 and min(prompt + decode) > 0
        assert len(llamacpp.time_decode(engine, 8, steps=2, repeats=1)) == 2


@needs_engine
def test_the_lab_runs_end_to_end_on_the_tiny_model(home):
    machine = bench.Measurement(20e9, 100e9, 5.0, 1e-6, 50e9)
    run = engine_lab.run_lab(machine, models=("random-llama-tiny",), file_types=("F16", "Q8_0"), threads=(1,),
                             prompt_tokens=(8, 16), repeats=1, say=lambda s: None)  # fmt: skip
    assert len(run["points"]) == 2 * 3  # 2 file types × (decode + 2 prompts) × 1 thread count
    assert len(engine_roofline.place(run)) == 6 and len(engine_roofline.place_numpy(run)) == 1
    assert sorted(p.name.split("-")[-1] for p in (home / "models").iterdir()) == ["f16.gguf", "q8_0.gguf"]
    assert engine_lab.load_run(engine_lab.save_run(run)) == run


@needs_engine
def test_a_pass_llama_cpp_would_abort_on_is_refused_first(tmp_path):
    path = gguf_model.write_gguf(TINY, tmp_path / "tiny.gguf")
    with llamacpp.Engine(path, context_tokens=32, batch_tokens=16, threads=1) as engine:
        with pytest.raises(rl.InvalidConfigurationError, match="batch_tokens"):
            engine.decode_s(engine.tokens(17))
        engine.decode_s(engine.tokens(16))
        engine.decode_s(engine.tokens(16))
        with pytest.raises(rl.InvalidConfigurationError, match="exceed the context"):
            engine.decode_s(engine.tokens(1))
        engine.clear()
        assert engine.decode_s(engine.tokens(1)) > 0
