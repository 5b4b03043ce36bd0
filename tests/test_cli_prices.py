"""The command line on every GPU: a price on each, the model's own precision by default, and every
GPU answering in FP16 and GGUF Q4_K_M where the model fits. In-process, every GPU of the table."""

from __future__ import annotations

import json

import pytest

import roofline as rl
from roofline.apps.cli import main
from roofline.pricing import default_price

GPUS = list(rl.gpus())
L8B_READ_1 = 15_009_857_536  # Llama 3 8B BF16 at batch 1: every matmul weight once + one embedding row


def run_json(capsys, *argv):
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_every_gpu_in_list_gpus_has_a_price(capsys):
    code, d, _ = run_json(capsys, "list", "gpus")
    assert code == 0 and [g["id"] for g in d["items"]] == GPUS
    for g in d["items"]:
        row = default_price(g["id"])
        assert row is not None and g["usd_per_gpu_hour"] == row.usd_per_gpu_hour > 0, g["id"]
        assert g["price_id"] == row.id and g["price_kind"] in ("rent", "own")


@pytest.mark.parametrize("gpu", GPUS)
def test_cost_uses_the_gpus_own_price_when_none_is_given(capsys, gpu):
    # FP16 weights: every GPU of the table computes in FP16 (the Apple rows quote no BF16 rate)
    code, d, err = run_json(capsys, "cost", "--model", "llama-3.2-1b", "--gpu", gpu, "--weights", "fp16")
    assert code == 0, err
    row = default_price(gpu)
    assert d["usd_per_gpu_hour"] == row.usd_per_gpu_hour and d["price_id"] == row.id
    # $ per million tokens = price × GPUs ÷ (tokens/s × 3,600) × 10⁶, ideal and achievable alike
    for figure in (d, d["achievable"]):
        want = row.usd_per_gpu_hour / (figure["tokens_per_s_total"] * 3600) * 1e6
        assert figure["usd_per_million_tokens"] == pytest.approx(want, rel=1e-12)
    assert d["achievable"]["usd_per_million_tokens"] > d["usd_per_million_tokens"]  # the floor is cheapest


def test_cost_text_shows_the_achievable_price_beside_the_ideal(capsys):
    code, d, _ = run_json(capsys, "cost", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "8")
    assert main(["cost", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "8"]) == 0
    out = capsys.readouterr().out
    ideal = next(line for line in out.splitlines() if "cost (ideal)" in line)
    real = next(line for line in out.splitlines() if "cost (vllm)" in line)
    assert f"${d['usd_per_million_tokens']:.3g}" in ideal
    assert f"${d['achievable']['usd_per_million_tokens']:.3g}" in real
    assert "h100-example-3usd" in out  # where the price came from


def test_a_given_price_overrides_the_default(capsys):
    code, d, _ = run_json(capsys, "cost", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--usd-per-hour", "2")
    assert d["usd_per_gpu_hour"] == 2.0 and d["price_id"] is None
    # one user at the floor: 3.35e12 ÷ 15.01e9 = 223 tokens/s; $2 ÷ (223 × 3,600) × 10⁶ = $2.49
    assert d["usd_per_million_tokens"] == pytest.approx(2 / (3.35e12 / L8B_READ_1 * 3600) * 1e6, rel=1e-3)
    code, d, _ = run_json(
        capsys, "cost", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--price", "runpod-h100-sxm-community"
    )
    assert d["usd_per_gpu_hour"] == rl.get_price("runpod-h100-sxm-community").usd_per_gpu_hour


def test_plan_prices_each_gpu_with_its_own_price(capsys):
    argv = [
        "plan",
        "--model",
        "llama-3.2-1b",
        "--rate",
        "2",
        "--input",
        "64",
        "--output",
        "8",
        "--requests",
        "20",
    ]
    for gpu in ("b200", "l4"):
        code, d, err = run_json(capsys, *argv, "--gpu", gpu)
        assert code == 0, err
        assert d["usd_per_gpu_hour"] == default_price(gpu).usd_per_gpu_hour
        assert d["usd_per_hour"] == pytest.approx(d["num_gpus_total"] * d["usd_per_gpu_hour"])


# ---------------------------------------------------------------- the model's own precision


def test_weights_default_to_the_models_release_format(capsys):
    # DeepSeek-V3 is released in FP8 (128 × 128 block scales): at that default it fits 8 B200s, in BF16 not
    code, d, _ = run_json(capsys, "step", "--model", "deepseek-v3", "--gpu", "b200", "--gpus", "8")
    assert code == 0 and d["weight_precision"] == "fp8-block128"
    code, d, _ = run_json(
        capsys, "step", "--model", "deepseek-v3", "--gpu", "b200", "--gpus", "8", "--weights", "bf16"
    )
    assert code == 2 and d["error"]["type"] == "DoesNotFitError"
    code, d, _ = run_json(
        capsys,
        "generate",
        "--model",
        "gpt-oss-20b",
        "--gpu",
        "h100-sxm",
        "--batch",
        "1",
        "--input",
        "64",
        "--output",
        "8",
    )
    assert code == 0 and d["weights"] == "mxfp4-experts"
    assert main(["step", "--model", "gpt-oss-20b", "--gpu", "h100-sxm"]) == 0
    assert "weights mxfp4-experts as released" in capsys.readouterr().out
    assert main(["step", "--model", "gpt-oss-20b", "--gpu", "h100-sxm", "--weights", "bf16"]) == 0
    assert "as released" not in capsys.readouterr().out  # chosen, not the default


def test_weights_help_lists_the_presets_that_work(capsys):
    from roofline.physics.precision import PRECISIONS, WEIGHT_FORMATS

    assert main(["step", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "release format" in help_text
    for p in (*PRECISIONS, *WEIGHT_FORMATS):
        assert p in help_text, p
        works = [
            g
            for g in ("b200", "h100-sxm", "a100-80gb-sxm", "m4-max")
            if run_json(capsys, "step", "--model", "llama-3-8b", "--gpu", g, "--weights", p)[0] == 0
        ]
        assert works, f"--weights {p} is listed but runs on none of the GPUs tried"


# ---------------------------------------------------------------- every GPU answers


def _fits(gpu: str, weights: str) -> bool:
    return bool(rl.fits("llama-3-8b", gpu, 2, 96, weight_precision=weights))


@pytest.mark.parametrize("weights", ["fp16", "gguf-q4_k_m"])
@pytest.mark.parametrize("gpu", GPUS)
def test_every_gpu_answers_in_fp16_and_q4_k_m(capsys, gpu, weights):
    if not _fits(gpu, weights):
        pytest.skip(f"llama-3-8b in {weights} does not fit {gpu}")
    m = ["--model", "llama-3-8b", "--gpu", gpu, "--weights", weights]
    for argv in (
        ["step", *m, "--batch", "2", "--context", "64"],
        ["cost", *m, "--batch", "2", "--context", "64"],
        ["generate", *m, "--batch", "2", "--input", "32", "--output", "32"],
        ["serve", *m, "--concurrency", "2", "--input", "32", "--output", "32", "--requests", "4"],
    ):
        code, d, err = run_json(capsys, *argv)
        assert code in (0, 1), (argv, d.get("error"), err)
        assert d["command"] == argv[0]
