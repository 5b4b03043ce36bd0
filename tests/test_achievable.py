"""The achievable layer (roofline.achievable), its fit, its validation and `roofline generate`.

Hand numbers used below (from data/*.toml and the formulas in the library's docstrings):

* Llama 3 8B: ~8.03e9 parameters → 16.06e9 bytes of BF16 weights; KV per token
  = 2 (K, V) × 32 layers × 8 KV heads × 128 head dim × 2 bytes = 131,072 bytes.
* Llama 2 7B (MHA): 6.74e9 parameters → 13.48e9 bytes of FP16 weights; KV per token
  = 2 × 32 layers × 32 KV heads × 128 × 2 bytes = 524,288 bytes.
* H100 SXM: 3.35e12 bytes/s, 989e12 dense BF16 FLOP/s. A100 40 GB: 40e9 bytes.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline import achievable as ach

ROOT = Path(__file__).resolve().parents[1]
H100_BW = 3.35e12
L8B_WEIGHTS = 2 * 8.03e9
L8B_KV = 2 * 32 * 8 * 128 * 2


def _tool():
    spec = importlib.util.spec_from_file_location("fit_calibration", ROOT / "tools" / "fit_calibration.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def validation():
    return ach.validate(k=5)


# -- the stored fit is what the tool computes from the data -------------------------------------------


def test_stored_fit_matches_the_tool():
    stored, fresh = ach.load_calibration(), ach.fit()
    assert _tool().compare(stored, fresh) == []
    assert set(stored.ranges) == set(fresh.ranges)
    for key, rng in fresh.ranges.items():
        assert stored.ranges[key]["rows"] == rng["rows"]


def test_provenance_names_datasets_rows_and_split():
    prov = ach.load_calibration().provenance
    assert prov["tool"] == "tools/fit_calibration.py"
    assert {"LLM-Inference-Bench", "Splitwise", "aiconfigurator"} <= set(prov["datasets"])
    assert prov["rows_used"] == int(ach.usable_rows().sum())
    assert "group" in prov["split"]


def test_fitted_parameters_are_physical():
    p = ach.load_calibration()
    for fb, fc in p.fractions.values():
        assert 0 < fb <= 1 and 0 < fc <= 1
    for table in (p.step_overhead_s, p.layer_overhead_s, p.sequence_overhead_s, p.allreduce_hop_latency_s):
        assert all(0 < v < 0.1 for v in table.values())


# -- achievable is never faster than the ideal ----------------------------------------------------------

MODELS = ["llama-3-8b", "llama-2-7b", "qwen2-7b", "mistral-7b", "mixtral-8x7b", "llama-3.1-70b", "qwen2-72b"]
GPUS = ["h100-sxm", "h200", "a100-80gb-sxm", "a100-40gb", "gh200", "l40s", "mi300x", "b200"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(MODELS),
    gpu=st.sampled_from(GPUS),
    gpus=st.sampled_from([1, 2, 4, 8]),
    engine=st.sampled_from(sorted(ach.ENGINE_PARALLEL)),
    batch=st.integers(1, 256),
    inp=st.integers(1, 8192),
    outp=st.integers(1, 64),
)
def test_achievable_never_beats_the_ideal(model, gpu, gpus, engine, batch, inp, outp):
    try:
        r = ach.generate(model, gpu, batch, inp, outp, num_gpus=gpus, engine=engine)
    except rl.DoesNotFitError:
        assume(False)
    for f in ("ttft_s", "latency_s"):
        assert getattr(r.achievable, f) >= getattr(r.ideal, f) > 0
    if r.calibration["waves"] == 1:
        assert r.achievable.tpot_s >= r.ideal.tpot_s
    else:  # the batch runs in waves of fewer requests: each step is shorter, the whole run longer
        assert r.achievable.tpot_s * r.calibration["waves"] >= r.ideal.tpot_s
    for f in ("output_tokens_per_s", "total_tokens_per_s"):
        assert getattr(r.achievable, f) <= getattr(r.ideal, f)


@settings(max_examples=30, deadline=None)
@given(
    gpu=st.sampled_from(GPUS),
    engine=st.sampled_from(sorted(ach.ENGINE_PARALLEL)),
    batch=st.integers(1, 64),
    ctx=st.integers(0, 4096),
)
def test_gap_budget_parts_are_non_negative_and_add_up(gpu, engine, batch, ctx):
    b = ach.gap_budget("llama-3-8b", gpu, batch, ctx, engine=engine)
    parts = [b["floor"], *(b[k] for k in ach.BUDGET_PARTS)]
    assert all(x >= 0 for x in parts)
    assert math.isclose(sum(parts), b["total"], rel_tol=1e-12)


# -- held-out validation by configuration group -----------------------------------------------------------


def test_folds_hold_out_whole_groups(validation):
    ms = validation.measurements
    for g in np.unique(ms.group):
        assert np.unique(validation.fold[ms.group == g]).size == 1


def _row(validation, name, by="regime"):
    return next(r for r in validation.table(by) if r["name"] == name)


def test_held_out_goals_met(validation):
    """The issue's goals on held-out groups (all met by this fit; batch-1 decode only just, on 2 groups)."""
    assert _row(validation, "batch-1 decode")["median_abs_pct"] <= 10.0
    assert _row(validation, "batched decode")["median_abs_pct"] <= 15.0
    assert _row(validation, "end-to-end")["median_abs_pct"] <= 15.0
    assert _row(validation, "prefill/TTFT")["median_abs_pct"] <= 20.0


def test_held_out_honest_bounds(validation):
    """Bounds this fit reaches beyond the goals: throughput, the tails (p90), and each engine with more than
    one group (SGLang has one group, so its held-out error is a cross-engine extrapolation: ~28 %)."""
    assert _row(validation, "throughput")["median_abs_pct"] <= 15.0
    for r in validation.table():
        assert r["p90_abs_pct"] <= 55.0, r
    for engine in ("vllm", "tensorrt-llm", "llama.cpp", "deepspeed-mii", "splitwise-2023"):
        assert _row(validation, engine, "engine")["median_abs_pct"] <= 15.0
    assert _row(validation, "sglang", "engine")["median_abs_pct"] <= 35.0


def test_held_out_is_worse_than_in_sample(validation):
    """A sanity check that the split really hides something: held-out error ≥ in-sample error overall."""
    ins = ach.in_sample_table()
    held = {r["name"]: r["median_abs_pct"] for r in validation.table()}
    assert held["end-to-end"] >= next(r for r in ins if r["name"] == "end-to-end")["median_abs_pct"] - 0.5


def test_rows_faster_than_the_floor_are_dropped():
    ms, ok = ach.load_measurements(), ach.usable_rows()
    assert np.all(ms.measured_s[ok] >= ach.ideal_times()[ok])
    # Splitwise's TP-2 batch-64 prefill: 64 × 512 tokens × 2 × 69e9 FLOP ÷ (2 × 312e12) ≥ 7 s, measured 0.8 s
    bad = (ms.source == "Splitwise") & (ms.kind == "ttft") & (ms.batch == 64) & (ms.num_gpus == 2)
    assert bad.any() and not ok[bad].any()


# -- names, ranges, extrapolation ---------------------------------------------------------------------


def test_unknown_engine_gets_a_suggestion():
    with pytest.raises(rl.UnknownNameError) as err:
        ach.engine_id("vlm")
    assert "vllm" in err.value.suggestions
    assert ach.engine_id("TRTLLM") == "tensorrt-llm"


def test_measured_configuration_is_not_extrapolated():
    r = ach.generate("llama-3-8b", "h100-sxm", 16, 512, 512, engine="vllm", weight_precision="fp16")
    assert r.calibration["extrapolated"] is False
    assert r.calibration["nearest_measured"] == []


def test_gpu_without_rows_uses_its_family_and_is_flagged():
    r = ach.generate("llama-3-8b", "gh200", 1, 128, 128, engine="vllm")
    c = r.calibration
    p = ach.load_calibration()
    assert c["gpu_family"] == "hopper"
    assert (c["bandwidth_fraction"], c["compute_fraction"]) == p.fractions[("hopper", "vllm")]
    assert c["extrapolated"] is True
    assert any("gh200" in x for x in c["extrapolation_reasons"])
    assert len(c["nearest_measured"]) == 3 and c["nearest_measured"][0]["engine"] == "vllm"


def test_outside_the_measured_batch_is_flagged():
    r = ach.generate("llama-3-8b", "h100-sxm", 200, 128, 128, engine="vllm", weight_precision="fp16")
    assert r.calibration["extrapolated"] is True
    assert any("batch 200" in x for x in r.calibration["extrapolation_reasons"])


# -- hand-derived physics ------------------------------------------------------------------------------


def test_ideal_of_one_token_is_the_weights_over_bandwidth():
    r = ach.generate("llama-3-8b", "h100-sxm", 1, 1, 1)
    # prefill of 1 token and one decode step at context 1: the matmul weights, the LM head and one row of
    # the embedding table (16,060,522,496 − 2 × 525,336,576 + 2 × 4,096 = 15,009,857,536 bytes) plus
    # 131,072 bytes of KV (written, then read), ÷ 3.35e12 bytes/s = 4.48 ms
    expect = (L8B_WEIGHTS - 2 * 128256 * 4096 + 2 * 4096 + L8B_KV) / H100_BW
    assert r.ideal.ttft_s == pytest.approx(expect, rel=2e-3)
    assert r.ideal.tpot_s == pytest.approx(expect, rel=2e-3)
    assert r.ideal.latency_s == pytest.approx(2 * expect, rel=2e-3)


def test_pipeline_sums_the_stages_tensor_divides():
    # 70B on 4 GPUs at batch 1: memory-bound, so tensor = bytes ÷ (4 × bw), pipeline = bytes ÷ bw.
    t = ach.generate("llama-3.1-70b", "h100-sxm", 1, 128, 16, num_gpus=4, parallel="tensor")
    p = ach.generate("llama-3.1-70b", "h100-sxm", 1, 128, 16, num_gpus=4, parallel="pipeline")
    assert p.ideal.tpot_s / t.ideal.tpot_s == pytest.approx(4.0, rel=1e-3)
    assert p.achievable.tpot_s > t.achievable.tpot_s
    assert p.calibration["allreduce_latency_s"] == 0.0
    assert t.calibration["allreduce_latency_s"] == pytest.approx(
        2 * 3 * t.calibration["allreduce_hop_latency_s"]
    )


def test_llama_cpp_defaults_to_pipeline():
    assert (
        ach.generate("llama-3-8b", "h100-sxm", 1, 8, 8, num_gpus=2, engine="llama.cpp").parallel == "pipeline"
    )


def test_waves_when_the_kv_does_not_fit():
    # vLLM's budget on a 40 GiB A100: 40 × 2^30 × 0.98975 × 0.9 − 5,153,960,755 − 139,586,437 = 32.96e9;
    # minus 13.48e9 weights = 19.49e9; one request at 4096 tokens holds 4096 × 524,288 = 2.15e9 bytes
    # → 9 fit at once → 64 requests take ceil(64 / 9) = 8 waves of 8.
    waves, per_wave = ach.serving_waves("llama-2-7b", "a100-40gb", 64, 4096, weight_precision="fp16",
                                        kv_precision="fp16")  # fmt: skip
    assert (waves, per_wave) == (8, pytest.approx(64 / 8))


def test_diagnose_measurement_mbu_and_region():
    # 15.01e9 bytes (the step's read: embedding gathered) in 6 ms on 3.35e12 bytes/s: MBU = 0.747
    d = ach.diagnose_measurement("llama-3-8b", "h100-sxm", 6e-3)
    read = L8B_WEIGHTS - 2 * 128256 * 4096 + 2 * 4096
    assert d["mbu"] == pytest.approx(read / (6e-3 * H100_BW), rel=2e-3)
    assert d["sits_in"] in ach.BUDGET_PARTS
    assert "below the floor" in ach.diagnose_measurement("llama-3-8b", "h100-sxm", 4e-3)["sits_in"]
    far = ach.diagnose_measurement("llama-3-8b", "h100-sxm", 1.0)
    assert far["sits_in"].startswith("beyond")


# -- the CLI contract -----------------------------------------------------------------------------------


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "roofline.apps.cli", "generate", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


def test_generate_json_contract():
    b, i, o = 8, 256, 64
    p = _cli("--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", str(b), "--input", str(i),
             "--output", str(o), "--engine", "tensorrt-llm", "--json")  # fmt: skip
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert {"ideal", "achievable", "fits", "engine", "calibration"} <= set(d)
    assert d["engine"] == "tensorrt-llm" and d["fits"] is True
    assert "extrapolated" in d["calibration"] and "nearest_measured" in d["calibration"]
    for side in ("ideal", "achievable"):
        t = d[side]
        assert set(t) == {"ttft_s", "tpot_s", "latency_s", "output_tokens_per_s", "total_tokens_per_s"}
        # latency = TTFT + O steps, tpot their mean; rates are tokens over latency
        assert t["latency_s"] == pytest.approx(t["ttft_s"] + o * t["tpot_s"], rel=1e-9)
        assert t["output_tokens_per_s"] == pytest.approx(b * o / t["latency_s"], rel=1e-9)
        assert t["total_tokens_per_s"] == pytest.approx(b * (i + o) / t["latency_s"], rel=1e-9)
    assert d["achievable"]["latency_s"] > d["ideal"]["latency_s"]


def test_generate_default_engine_is_vllm():
    p = _cli("--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "1", "--input", "8", "--output", "8",
             "--json")  # fmt: skip
    assert json.loads(p.stdout)["engine"] == "vllm"


@pytest.mark.parametrize(
    ("args", "kind"),
    [
        (["--engine", "vlm"], "UnknownNameError"),
        (["--batch", "x"], "UsageError"),
        (["--bogus"], "UsageError"),
        (["--batch", "4096", "--input", "100000"], "DoesNotFitError"),
        (["--parallel", "diagonal"], "InvalidConfigurationError"),
    ],
)
def test_generate_json_errors(args, kind):
    base = {"--model": "llama-3-8b", "--gpu": "h100-sxm", "--batch": "1", "--input": "8", "--output": "8"}
    for k, v in zip(args[::2], args[1::2], strict=False):
        base[k] = v
    argv = [x for kv in base.items() for x in kv] + [a for a in args if a.startswith("--") and a not in base]
    p = _cli(*argv, "--json")
    assert p.returncode != 0
    err = json.loads(p.stdout)["error"]
    assert err["type"] == kind and err["message"]
    if kind == "UnknownNameError":
        assert "vllm" in err["suggestions"]


def test_generate_human_output_shows_both_columns():
    p = _cli("--model", "llama-3-8b", "--gpu", "gh200", "--batch", "1", "--input", "8", "--output", "8")
    assert p.returncode == 0
    assert "ideal" in p.stdout and "achievable (vllm)" in p.stdout and "extrapolated" in p.stdout
