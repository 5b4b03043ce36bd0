"""Loose ends of the reliability audit (issue 21), each with the command that showed it: what a figure's
JSON names as its calibration, `fit` on a split vLLM refuses, a step the CPU's launches set, a run that
stopped before any request arrived, and a release format a GPU cannot compute in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from roofline.apps.cli import main
from roofline.data import clear_cache

M = ["--model", "llama-3-8b", "--gpu", "h100-sxm"]
DATA = Path(__file__).resolve().parents[1] / "data"


def run(capsys, *argv):
    code = main([*argv])
    return code, capsys.readouterr().out


def test_a_figure_names_the_calibration_it_came_from(capsys, tmp_path, monkeypatch):
    # A what-if data folder without a calibration of its own: the shipped one is used, and named.
    for name in ("gpus.toml", "models.toml", "prices.toml", "assumptions.toml", "engines.toml"):
        shutil.copy(DATA / name, tmp_path / name)
    monkeypatch.setenv("ROOFLINE_DATA_DIR", str(tmp_path))
    clear_cache()
    try:
        code, out = run(capsys, "step", *M, "--json")
        assert code == 0
        assert not json.loads(out)["achievable"]["calibration"].startswith(tmp_path.name)
        shutil.copy(DATA / "calibration.toml", tmp_path / "calibration.toml")
        code, out = run(capsys, "step", *M, "--json")
        assert json.loads(out)["achievable"]["calibration"] == f"{tmp_path.name}/calibration.toml"
    finally:
        monkeypatch.delenv("ROOFLINE_DATA_DIR")
        clear_cache()


def test_fit_says_when_vllm_would_refuse_the_split(capsys):
    # 32 attention heads do not split over 3 GPUs; vLLM refuses that size, and its memory budget with it.
    code, out = run(capsys, "fit", *M, "--context", "4096", "--gpus", "3", "--json")
    assert code == 0 and "32 attention heads" in json.loads(out)["tensor_parallel_problem"]
    code, out = run(capsys, "fit", *M, "--context", "4096", "--gpus", "4", "--json")
    assert json.loads(out)["tensor_parallel_problem"] is None
    code, out = run(capsys, "fit", *M, "--context", "4096", "--gpus", "3", "--memory", "ideal", "--json")
    assert json.loads(out)["tensor_parallel_problem"] is None  # all of the memory, no engine's rule


def test_a_step_the_cpu_launches_set_says_so(capsys):
    # 4.48 ms of weights against 10 ms of launches: memory binds of the two roofs, the launches set the step.
    _, out = run(capsys, "step", *M, "--launch-overhead-ms", "10")
    binding = next(line for line in out.splitlines() if line.strip().startswith("binding"))
    assert "memory-bound" in binding and "launches (10.00 ms) takes longer" in binding
    _, out = run(capsys, "step", *M)
    binding = next(line for line in out.splitlines() if line.strip().startswith("binding"))
    assert binding.split()[-1] == "memory-bound"


def test_a_run_that_stopped_before_any_arrival_measured_its_whole_span(capsys):
    # 1e-9 req/s: the first request would come after ~30 years; the run stops at max_sim_time_s (3,600 s).
    code, out = run(capsys, "serve", *M, "--rate", "1e-9", "--input", "512", "--output", "128", "--json")
    d = json.loads(out)
    assert code == 0 and d["requests_completed"] == 0 and not d["unstable"]
    assert d["duration_s"] == 3600.0


def test_a_release_the_gpu_cannot_compute_in_is_named_as_such(capsys):
    # Llama 3 8B is released in BF16; an M4 Max has no BF16 math, so llama.cpp and MLX run it as FP16.
    _, out = run(capsys, "cost", "--model", "llama-3-8b", "--gpu", "m4-max")
    assert "weights fp16 (released as bf16" in out.splitlines()[0]
    _, out = run(capsys, "cost", *M)
    assert "weights bf16 as released" in out.splitlines()[0]
