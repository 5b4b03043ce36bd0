"""What a model or an engine cannot run, refused alike by every command: a context beyond the
model's window, a tensor-parallel size that does not divide the heads, more pipeline stages than layers.

Llama 3 8B: 8,192 tokens of context (max_position_embeddings), 32 attention heads, 32 layers.
"""

from __future__ import annotations

import json

import pytest

from roofline.apps.cli import main
from roofline.apps.cli_options import tensor_parallel_problem

M = ["--model", "llama-3-8b", "--gpu", "h100-sxm"]


def run_json(capsys, *argv):
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", *M, "--batch", "1", "--input", "100001", "--output", "1"],  # far beyond
        ["generate", *M, "--batch", "1", "--input", "8000", "--output", "193"],  # 8,193 tokens in all
        ["serve", *M, "--rate", "1", "--input", "8000", "--output", "193"],
        ["plan", *M, "--rate", "1", "--input", "8000", "--output", "193"],
        ["fit", *M, "--context", "8193"],
        ["step", *M, "--context", "8193"],
        ["prefill", *M, "--prompt", "8193"],
        ["speculate", *M, "--context", "8190", "--draft-tokens", "2", "--acceptance", "0.5"],
        ["diagnose", *M, "--tpot-ms", "10", "--context", "8193"],
        ["diagnose", *M, "--ttft-ms", "100", "--prompt", "8193"],
    ],
    ids=lambda a: " ".join(a[:1] + a[5:7]),
)
def test_a_context_beyond_the_window_is_refused_everywhere(capsys, argv):
    code, d = run_json(capsys, *argv)
    assert code == 2 and d["command"] == argv[0], d
    assert d["error"]["type"] == "ContextTooLongError" and "8,192" in d["error"]["message"], d


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", *M, "--batch", "1", "--input", "64", "--output", "8"],
        ["serve", *M, "--rate", "1", "--input", "4096", "--output", "4096", "--requests", "3"],
        ["plan", *M, "--rate", "1", "--input", "64", "--output", "8", "--requests", "10"],
        ["fit", *M, "--context", "8192"],
        ["step", *M, "--context", "8192"],
        ["diagnose", *M, "--tpot-ms", "10", "--context", "8192"],
    ],
    ids=lambda a: a[0],
)
def test_the_whole_window_is_allowed(capsys, argv):
    code, d = run_json(capsys, *argv)
    assert code in (0, 1), d


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", *M, "--gpus", "3", "--batch", "1", "--input", "64", "--output", "8"],
        ["serve", *M, "--gpus", "3", "--rate", "1", "--input", "64", "--output", "8", "--requests", "5"],
        ["plan", *M, "--gpus", "3", "--rate", "1", "--input", "64", "--output", "8", "--requests", "10"],
        ["diagnose", *M, "--gpus", "3", "--tpot-ms", "5"],
    ],
    ids=lambda a: a[0],
)
def test_engines_refuse_a_tensor_parallel_size_that_does_not_divide_the_heads(capsys, argv):
    code, d = run_json(capsys, *argv)
    assert code == 2 and d["error"]["type"] == "InvalidConfigurationError", d
    assert "32 attention heads" in d["error"]["message"] and "1, 2, 4, 8, 16, 32" in d["error"]["message"]
    # the sizes that divide 32 run; llama.cpp splits layers, not heads, so 3 GPUs run there
    code, _ = run_json(capsys, *[("4" if a == "3" else a) for a in argv])
    assert code in (0, 1)
    if argv[0] == "generate":
        code, d = run_json(capsys, *argv, "--engine", "llama.cpp")
        assert code == 0 and d["parallel"] == "pipeline"


def test_the_ideal_still_splits_evenly_and_the_engine_figure_says_it_is_extrapolated(capsys):
    code, d = run_json(capsys, "step", *M, "--gpus", "3")
    assert code == 0
    assert d["step_time_s"] == pytest.approx(15_009_857_536 / (3 * 3.35e12))  # the roofline's even split
    a = d["achievable"]
    assert a["extrapolated"] is True
    assert any("does not divide the 32 attention heads" in r for r in a["extrapolation_reasons"])
    code, d = run_json(capsys, "step", *M, "--gpus", "4")
    assert not any("attention heads" in r for r in d["achievable"]["extrapolation_reasons"])
    code, d = run_json(capsys, "step", *M, "--gpus", "3", "--engine", "ideal")
    assert d["achievable"]["extrapolated"] is False  # the ideal is physics: no engine to refuse


def test_fit_says_when_vllm_would_refuse_the_split(capsys):
    # 32 attention heads do not split over 3 GPUs; vLLM refuses that size, and its memory budget with it.
    code, d = run_json(capsys, "fit", *M, "--context", "4096", "--gpus", "3")
    assert code == 0 and "32 attention heads" in d["tensor_parallel_problem"]
    code, d = run_json(capsys, "fit", *M, "--context", "4096", "--gpus", "4")
    assert d["tensor_parallel_problem"] is None
    code, d = run_json(capsys, "fit", *M, "--context", "4096", "--gpus", "3", "--memory", "ideal")
    assert d["tensor_parallel_problem"] is None  # all of the memory, no engine's rule


def test_tensor_parallel_problem_names_the_rule():
    assert tensor_parallel_problem("llama-3-8b", 16, "vllm") == ""
    assert tensor_parallel_problem("llama-3-8b", 64, "sglang") != ""  # more GPUs than heads
    assert tensor_parallel_problem("llama-3-8b", 3, "llama.cpp") == ""  # a layer split
    assert tensor_parallel_problem("llama-3-8b", 3, "vllm", parallel="pipeline") == ""


@pytest.mark.parametrize(
    "argv",
    [
        [
            "serve",
            *M,
            "--rate",
            "1",
            "--input",
            "64",
            "--output",
            "8",
            "--requests",
            "5",
            "--pipeline-stages",
            "33",
        ],
        [
            "generate",
            *M,
            "--parallel",
            "pipeline",
            "--gpus",
            "33",
            "--batch",
            "1",
            "--input",
            "8",
            "--output",
            "2",
        ],
    ],
    ids=["serve", "generate"],
)
def test_more_pipeline_stages_than_layers_are_refused(capsys, argv):
    code, d = run_json(capsys, *argv)
    assert (
        code == 2
        and d["error"]["type"] == "InvalidConfigurationError"
        and "32 layers" in d["error"]["message"]
    )
    code, d = run_json(capsys, *[("32" if a == "33" else a) for a in argv])
    assert code in (0, 1), d
