"""`roofline plan`, `roofline diagnose` and `speculate --engine`: the library's answers from the
shell, with the engine's figure beside the floor.

Hand numbers: Llama 3 8B in BF16 reads 15,009,857,536 bytes a decode step at batch 1 (every matmul weight
once, one embedding row); an A10G streams 600e9 bytes/s, so its floor is 25.02 ms, 40.0 tokens/s.
"""

from __future__ import annotations

import json

import pytest

from roofline import engines, sim
from roofline.apps.cli import main
from roofline.pricing import default_price

L8B_READ_1 = 15_009_857_536
A10G_BW = 600e9


def run_json(capsys, *argv):
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out)


# ---------------------------------------------------------------- diagnose


def test_90_tokens_per_s_on_an_a10g_is_above_the_bf16_floor(capsys):
    """A user's question: "my vLLM gets 90 tok/s for Llama 3 8B on an A10G, is that good?"."""
    code, d = run_json(capsys, "diagnose", "--model", "llama-3-8b", "--gpu", "a10g", "--tokens-per-s", "90")
    floor = L8B_READ_1 / A10G_BW  # 25.02 ms: 40.0 tokens/s at most
    assert code == 0 and d["phase"] == "decode" and d["measured"] == {"tokens_per_s": 90.0}
    assert d["floor_s"] == pytest.approx(floor)
    assert d["measured_s"] == pytest.approx(1 / 90)
    assert 1 / d["measured_s"] / (1 / d["floor_s"]) == pytest.approx(90 * floor)  # 2.25× the floor's rate
    assert round(90 * floor, 2) == 2.25
    assert d["below_floor"] is True and d["sits_in"].startswith("below the floor")
    assert d["mbu"] == pytest.approx(L8B_READ_1 / (1 / 90) / A10G_BW)  # 225 %: impossible
    # what it could have run in: 4-bit weights read about 4.7 GB (floor 7.7 ms), 8-bit about 8 GB (13.4 ms)
    within = {x["weight_precision"] for x in d["precisions_within_floor"]}
    assert {"int4", "gguf-q4_k_m"} <= within and not within & {"bf16", "fp16", "int8", "gguf-q8_0"}
    assert all(x["floor_s"] <= 1 / 90 for x in d["precisions_within_floor"])

    assert main(["diagnose", "--model", "llama-3-8b", "--gpu", "a10g", "--tokens-per-s", "90"]) == 0
    out = capsys.readouterr().out
    assert "below the floor" in out and "2.25× its tokens/s" in out and "gguf-q4_k_m" in out


def test_a_measurement_inside_the_gap_names_its_part(capsys):
    # H100: floor 4.48 ms; vLLM's step is longer. A TPOT between them sits in one of the budget's parts.
    budget = engines.gap_budget(engines.StepTimer("vllm", "llama-3-8b", "h100-sxm"))
    edge = budget["floor"] + budget["kernel efficiency"]
    t_ms = (edge + budget["per-step"] / 2) * 1e3  # halfway through the per-step costs
    code, d = run_json(
        capsys, "diagnose", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--tpot-ms", f"{t_ms!r}"
    )
    assert code == 0 and d["sits_in"] == "per-step" and d["below_floor"] is False
    assert d["precisions_within_floor"] == []
    assert d["floor_s"] == pytest.approx(L8B_READ_1 / 3.35e12)
    assert d["achievable_s"] == pytest.approx(sum(budget[k] for k in ("floor", *engines.BUDGET_PARTS)))
    code, d = run_json(capsys, "diagnose", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--tpot-ms", "60")
    assert d["sits_in"].startswith("beyond a tuned engine") and d["measured_over_achievable"] > 1


def test_a_ttft_against_the_prefill_floor(capsys):
    # 8,000 prompt tokens: 1.28449e14 FLOP ÷ 989e12 FLOP/s = 129.9 ms on an H100 (the prefill FLOP count)
    code, d = run_json(
        capsys,
        "diagnose",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--ttft-ms",
        "100",
        "--prompt",
        "8000",
    )
    assert code == 0 and d["phase"] == "prefill" and d["prompt_tokens"] == 8000
    assert round(d["floor_s"] * 1e3, 1) == 129.9
    assert d["below_floor"] is True and d["mfu"] > 1  # 100 ms would need 130 % of peak math
    code, d = run_json(capsys, "diagnose", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--ttft-ms", "100")
    assert code == 2 and d["error"]["type"] == "UsageError" and "--prompt" in d["error"]["message"]


# ---------------------------------------------------------------- plan


def test_plan_answers_with_a_real_engine_and_the_floor_beside_it(capsys):
    argv = [
        "plan",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--rate",
        "30",
        "--input",
        "512",
        "--output",
        "128",
        "--requests",
        "300",
    ]
    code, d = run_json(capsys, *argv)
    assert code == 0 and d["engine"] == "vllm" and d["meets_slo"] is True
    assert d["replicas"] >= d["ideal"]["replicas"] >= 1  # no engine needs fewer GPUs than the floor
    assert d["p99_ttft_s"] <= d["slo_ttft_s"] and d["p99_tpot_s"] <= d["slo_tpot_s"]
    assert d["tried"][-1] == {
        "replicas": d["replicas"],
        "p99_ttft_s": d["p99_ttft_s"],
        "p99_tpot_s": d["p99_tpot_s"],
        "meets_slo": True,
    }
    assert all(not t["meets_slo"] for t in d["tried"][:-1])
    assert d["usd_per_gpu_hour"] == default_price("h100-sxm").usd_per_gpu_hour
    # the plan is the library's: the same search, run directly
    p = sim.plan_capacity(
        sim.SimConfig(
            "llama-3-8b",
            "h100-sxm",
            rate_per_s=30,
            input_tokens=512,
            output_tokens=128,
            requests=300,
            engine="vllm",
        )
    )
    assert (p.replicas, p.p99_ttft_s) == (d["replicas"], d["p99_ttft_s"])


def test_plan_states_its_error_band(capsys):
    from roofline.sim import validation

    m = ["--model", "llama-3-8b", "--gpu", "h100-sxm"]
    argv = ["plan", *m, "--rate", "2", "--input", "64", "--output", "8", "--requests", "20"]
    code, d = run_json(capsys, *argv)
    band = validation.error_band("vllm")  # the stored validation of the simulator against real servers
    assert code == 0 and d["error_band"] == band
    assert main(argv) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "error band" in x)
    if band["validated"]:
        assert validation.band_value(band["ttft_median_abs_error"]) in line and f"{band['rows']:,}" in line
    # an engine without measured serving rows says so rather than inventing a band
    code, d = run_json(capsys, *argv, "--engine", "llama.cpp")
    assert code == 0 and d["error_band"]["validated"] is False and d["error_band"]["note"]


def test_plan_that_cannot_meet_the_target_says_so(capsys):
    code, d = run_json(
        capsys,
        "plan",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-sxm",
        "--rate",
        "2",
        "--input",
        "64",
        "--output",
        "8",
        "--requests",
        "20",
        "--slo-ttft-ms",
        "0.001",
        "--max-replicas",
        "2",
    )
    assert (
        code == 2
        and d["error"]["type"] == "InvalidConfigurationError"
        and "2 replicas" in d["error"]["message"]
    )


# ---------------------------------------------------------------- speculate --engine


SPEC = ["speculate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "1000"]


def test_speculate_on_the_ideal_engine_is_the_ideal(capsys):
    code, d = run_json(
        capsys,
        *SPEC,
        "--draft",
        "llama-3.2-1b",
        "--draft-tokens",
        "4",
        "--acceptance",
        "0.8",
        "--engine",
        "ideal",
    )
    a = d["achievable"]
    assert code == 0 and a["engine"] == "ideal" and a["extrapolated"] is False
    for key in ("draft_time_s", "verify_time_s", "step_time_s", "plain_step_time_s", "speedup"):
        assert a[key] == pytest.approx(d[key], rel=1e-9), key


def test_speculate_on_a_real_engine_pays_its_per_step_costs_in_every_draft_step(capsys):
    code, d = run_json(capsys, *SPEC, "--draft", "llama-3.2-1b", "--draft-tokens", "4", "--acceptance", "0.8")
    a = d["achievable"]
    assert code == 0 and a["engine"] == "vllm"
    step = engines.gap_budget(engines.StepTimer("vllm", "llama-3.2-1b", "h100-sxm"), 1, 1000)["per-step"]
    assert a["draft_time_s"] > d["draft_time_s"] + 4 * step * 0.99  # four draft steps, four overheads
    assert a["verify_time_s"] > d["verify_time_s"] and a["plain_step_time_s"] > d["plain_step_time_s"]
    assert a["tokens_per_s_per_user"] == pytest.approx(d["expected_tokens_per_step"] / a["step_time_s"])
    assert 1 < a["speedup"] < d["speedup"]  # still a gain, a smaller one
    # no drafts and a free proposer: exactly plain decode on the engine too
    code, d = run_json(capsys, *SPEC, "--draft-tokens", "0", "--acceptance", "0.8")
    assert d["achievable"]["speedup"] == pytest.approx(1.0, rel=1e-12)


def test_speculate_times_the_engine_with_the_kv_precision_asked_for(capsys):
    # An FP8 KV cache is read by the engine's FP8-KV attention kernels, as every other command times it.
    code, d = run_json(capsys, *SPEC, "--kv", "fp8", "--draft-tokens", "0", "--acceptance", "0.8")
    fp8 = engines.StepTimer("vllm", "llama-3-8b", "h100-sxm", kv_precision="fp8")
    plain = engines.decode_step_times(fp8, 1, 1000)["total"]
    assert code == 0 and d["achievable"]["plain_step_time_s"] == pytest.approx(float(plain), rel=1e-12)
