"""The serving simulator against measured rows (roofline.sim.serving_rows, roofline.sim.validation) and the
error band plans quote. Fast: a few small rows are simulated; the stored run is checked on a
sample (tools/serving_validation.py writes it from every row)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import roofline as rl
from roofline import sim
from roofline.sim import serving_rows, validation

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def classified():
    return serving_rows.classify_all()


def _raw(classified, **match):
    return next(raw for raw, _, _ in classified if all(raw[k] == v for k, v in match.items()))


# ---------------------------------------------------------------- which rows, and what they say


def test_every_row_is_classified_once_with_a_reason_when_left_out(classified):
    assert len(classified) == len(serving_rows.read_raw())
    for raw, row, why in classified:
        assert (row is None) == bool(why), raw["id"]
        assert why == "" or why in serving_rows.REASONS
    cov = serving_rows.coverage()
    assert sum(g["rows"] for g in cov) == len(classified)
    assert sum(g["expressible"] for g in cov) == len(serving_rows.load_rows())


def test_rows_the_library_cannot_express_say_why(classified):
    reason = {raw["id"]: why for raw, _, why in classified}
    # models without a row in models.toml, DeepSeek-style attention data parallel, two-node tensor parallel
    assert reason[_raw(classified, model_path="zhipuai/GLM-5")["id"]] == "model"
    adp = _raw(classified, model_path="deepseek-ai/DeepSeek-R1", mode="agg", attention_dp_size="8")
    assert reason[adp["id"]] == "attention-dp"
    assert reason[_raw(classified, model_path="deepseek-ai/DeepSeek-V3", mode="agg", tp_size="64")["id"]] == (
        "multi-node"
    )
    # the same setting and measurement under a second id counts once
    assert any(why == "duplicate" for _, _, why in classified)


def test_rows_map_through_the_librarys_tables(classified):
    raw = _raw(classified, model_path="meta-llama/Llama-3.1-70B", system="h200_sxm", backend="trtllm")
    row = serving_rows.classify(raw)[0]
    assert (row["model"], row["gpu"], row["engine"]) == ("llama-3.1-70b", "h200", "tensorrt-llm")
    assert (row["weight_precision"], row["kv_precision"]) == ("fp8", "fp8")  # the launch scripts' FP8 KV
    assert row["ttft_s"] == pytest.approx(float(raw["silicon_ttft_ms"]) / 1e3)
    oss = serving_rows.classify(_raw(classified, model_path="openai/gpt-oss-120b", precision="fp4"))[0]
    assert (oss["weight_precision"], oss["kv_precision"]) == ("mxfp4-experts", "bf16")
    bf16 = serving_rows.classify(
        _raw(classified, model_path="meta-llama/Llama-3.1-8B-Instruct", backend="trtllm")
    )[0]
    assert (bf16["weight_precision"], bf16["harness"]) == ("bf16", "aiperf")


def test_a_row_faster_than_its_own_floor_stays_out(classified):
    # gpt-oss on 8 H100s at "concurrency 512": 3.6 ms per token, below the ideal step of that batch
    raw = _raw(classified, id="2026_04_06_gpt_oss_120b_h100_sxm_vllm_fp4_agg_1024x8192_c512_tp8_ep1_1128")
    assert serving_rows.classify(raw) == (None, "below-floor")


# ---------------------------------------------------------------- deployments and the closed loop


def _row(**kw):
    base = {"id": "t", "model": "llama-3.1-8b", "gpu": "h100-sxm", "engine": "vllm", "harness": "aiperf",
            "weight_precision": "bf16", "kv_precision": "bf16", "tp": 1, "mode": "agg", "prefill_workers": 0,
            "decode_workers": 0, "concurrency": 1, "input_tokens": 512, "output_tokens": 17, "ttft_s": 1.0,
            "tpot_s": 1.0}  # fmt: skip
    return {**base, **kw}


@pytest.mark.parametrize(
    "kw, expected",
    [
        # aiconfigurator's benchmark rules: C sequences, C + prompt + 1500 tokens (TensorRT-LLM: to 32)
        (dict(engine="tensorrt-llm", concurrency=8, input_tokens=1024), (8, 2560, None, "decode-first")),
        (dict(engine="vllm", concurrency=64, input_tokens=4096), (64, 5660, 5660, "decode-first")),
        (dict(engine="sglang", gpu="h200", concurrency=16, input_tokens=2000),
         (16, 3516, 3516, "decode-first")),
        # InferenceMAX's launch scripts: vLLM --max-num-seqs C --max-num-batched-tokens 8192; TensorRT-LLM
        # --max_num_tokens 16384 (Llama), (C + ISL + 64) rounded up to 64 (DeepSeek)
        (dict(harness="inferencemax", concurrency=32, gpu="h200"), (32, 8192, 8192, "decode-first")),
        (dict(harness="inferencemax", engine="tensorrt-llm", concurrency=4, gpu="h200",
              model="llama-3.1-70b"), (4, 16384, None, "decode-first")),
        (dict(harness="inferencemax", engine="tensorrt-llm", concurrency=32, gpu="h200", model="deepseek-v3",
              input_tokens=8192), (32, 8320, None, "decode-first")),
    ],
)  # fmt: skip
def test_deployments_follow_the_benchmarks_launch_scripts(kw, expected):
    p = validation.deployment_policy(_row(**kw))
    assert (p.max_sequences, p.token_budget, p.chunk_tokens, p.priority) == expected
    assert p.source.startswith("https://")


def test_one_client_gets_one_prefill_then_decode_steps():
    # one closed-loop client on the ideal engine: TTFT is one 512-token prefill (the roofline's), TPOT the
    # mean decode step over contexts 512 … 527, and every request sees the same (fixed lengths)
    r = validation.simulate_row(_row(), engine="ideal", rounds=2)
    prefill = rl.prefill("llama-3.1-8b", "h100-sxm", 512).step_time_s
    decode = rl.decode_step("llama-3.1-8b", "h100-sxm", 1, np.arange(512, 528)).step_time_s
    assert r["sim_ttft_s"] == pytest.approx(prefill, rel=1e-9)
    assert r["sim_tpot_s"] == pytest.approx(np.mean(decode), rel=1e-9)
    assert r["ttft_error"] == pytest.approx(prefill - 1.0)


def test_warm_up_drains_before_the_measured_requests():
    # aiperf waits for its warm-up phase (2 requests per client) to finish before the profiling phase sends
    # its first C requests together: the measured phase is a fresh run on an idle server. With 4 clients and
    # one measured round, the mean TTFT is that of 4 prompts arriving at once (they queue), not the
    # staggered arrivals that follow a warm-up running straight into the measured requests
    row = _row(concurrency=4, input_tokens=2048, output_tokens=8)
    measured = validation.simulate_row(row, engine="ideal", rounds=1)
    config = sim.SimConfig(
        "llama-3.1-8b",
        "h100-sxm",
        concurrency=4,
        requests=4,
        input_tokens=2048,
        output_tokens=8,
        policy=validation.deployment_policy(row),
        record_timeline=False,
    )
    fresh = sim.simulate(config)
    assert measured["sim_ttft_s"] == pytest.approx(np.mean(fresh.ttft_s), rel=1e-12)
    straight_on = sim.simulate(config.with_(requests=12))
    assert measured["sim_ttft_s"] > np.mean(straight_on.ttft_s[8:])


def test_the_request_latency_from_the_two_means_is_each_clients_cycle():
    # fixed lengths: every request's latency is TTFT + (n - 1) x its TPOT by the harness's definition, so
    # the latency rebuilt from the two means is the mean latency; and 8 closed-loop clients that never
    # pause complete 8 requests per mean latency (Little's law), which is why the latency settles throughput
    n = 64
    config = sim.SimConfig("llama-3.1-8b", "h100-sxm", concurrency=8, requests=400, input_tokens=1000,
                           output_tokens=n, engine="vllm", record_timeline=False)  # fmt: skip
    r = sim.simulate(config)
    rebuilt = validation.request_latency_s(np.mean(r.ttft_s), np.mean(r.tpot_s), n)
    assert rebuilt == pytest.approx(np.mean(r.e2e_s), rel=1e-9)
    assert r.requests_completed / r.duration_s == pytest.approx(8 / rebuilt, rel=0.05)
    row = {"harness": "inferencemax", "output_tokens": 1000, "ttft_s": 0.1, "tpot_s": 0.01}
    fields = validation.request_fields(row, 0.1, 0.01)  # answers of 800 ... 1000 tokens: 900 on average
    assert fields["request_error"] == 0 and fields["ttft_share"] == pytest.approx(0.1 / (0.1 + 899 * 0.01))


def test_tables_and_samples():
    results = [
        {"engine": "e", "gpu": "g", "model": "m", "ttft_error": x, "tpot_error": -x, "request_error": x / 10,
         "ttft_share": share}
        for x, share in ((-0.2, 0.3), (0.1, 0.1), (0.4, 0.05))
    ]  # fmt: skip
    g = validation.error_table(results)[0]
    assert g["rows"] == 3 and g["ttft_median_abs_error"] == pytest.approx(0.2)
    assert g["ttft_above"] == 2 and g["tpot_median_error"] == pytest.approx(-0.1)
    assert g["request_median_abs_error"] == pytest.approx(0.02) and g["ttft_share"] == pytest.approx(0.1)
    rows = serving_rows.load_rows()
    sample = validation.sample_rows(rows, per_group=2)
    assert sample == validation.sample_rows(rows, per_group=2)  # deterministic
    groups = {(r["engine"], r["gpu"], r["model"]) for r in rows}
    assert {(r["engine"], r["gpu"], r["model"]) for r in sample} == groups


# ---------------------------------------------------------------- the stored run and the error band


def _tool():
    spec = importlib.util.spec_from_file_location(
        "serving_validation", ROOT / "tools" / "serving_validation.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_stored_run_matches_a_fresh_simulation_of_a_sample():
    """The stored table is what the simulator computes now (else: uv run python tools/serving_validation.py).
    One cheap row per engine × GPU: the fewest requests × output tokens."""
    groups: dict = {}
    for row in serving_rows.load_rows():
        key = (row["engine"], row["gpu"])
        cost = row["concurrency"] * row["output_tokens"]
        if key not in groups or cost < groups[key][0]:
            groups[key] = (cost, row)
    fresh = validation.validate([row for _, row in groups.values()], bunched=True)
    assert _tool().compare(validation.stored_validation(), fresh) == []


def test_stored_bands_are_the_medians_of_the_stored_rows():
    stored = validation.stored_validation()
    results = validation.stored_results()
    assert len(results) == len(stored["simulated"]["rows"]) == stored["provenance"]["rows_simulated"]
    for band in stored["band"]:
        errors = np.array(
            [[r["ttft_error"], r["tpot_error"]] for r in results if r["engine"] == band["engine"]]
        )
        assert band["rows"] == len(errors)
        assert band["ttft_median_abs_error"] == pytest.approx(np.median(np.abs(errors[:, 0])), rel=1e-5)
        assert band["tpot_p90_abs_error"] == pytest.approx(np.percentile(np.abs(errors[:, 1]), 90), rel=1e-5)


def test_the_ideal_is_a_floor_for_nearly_every_row():
    # the ideal's TTFT above a measured one means queueing, not step time, is wrong; the stored run lists
    # those rows (KV-limited deployments whose engines hold more KV than the simulator's memory model)
    results = validation.stored_results()
    above = [r for r in results if r["ideal_ttft_error"] > 0]
    assert len(above) <= 0.01 * len(results)
    assert all(r["ideal_ttft_s"] <= r["sim_ttft_s"] * (1 + 1e-9) for r in results)


def test_error_band_per_engine():
    b = validation.error_band("TRT-LLM")  # an alias
    assert b["validated"] and b["engine"] == "tensorrt-llm" and b["rows"] > 100
    assert all(0 <= b[k] < 10 for k in validation.BAND_KEYS)
    assert b["ttft_median_abs_error"] <= b["ttft_p90_abs_error"]
    assert validation.error_band("llama.cpp") == {
        "validated": False, "engine": "llama.cpp", "note": validation.error_band("llama.cpp")["note"]
    }  # fmt: skip
    with pytest.raises(rl.UnknownNameError):
        validation.error_band("warp-drive")


# ---------------------------------------------------------------- a capacity plan with its band and price


def test_capacity_plan_quotes_the_engines_band_and_the_gpus_own_price():
    kw = dict(input_tokens=512, output_tokens=64, requests=300)
    p = sim.plan_capacity(sim.SimConfig("llama-3.1-8b", "h200", rate_per_s=60, engine="vllm", **kw))
    assert p.engine == "vllm" and p.error_band == validation.error_band("vllm")
    assert p.usd_per_gpu_hour == rl.pricing.default_price("h200").usd_per_gpu_hour
    assert p.usd_per_hour == pytest.approx(p.num_gpus_total * p.usd_per_gpu_hour)
    assert 1 <= p.replicas_low <= p.replicas <= p.replicas_high
    floor = sim.plan_capacity(sim.SimConfig("llama-3.1-8b", "h200", rate_per_s=60, engine="ideal", **kw))
    assert floor.replicas <= p.replicas  # no engine needs fewer GPUs than the floor
    assert floor.replicas_low == floor.replicas == floor.replicas_high  # the ideal has no band


# ---------------------------------------------------------------- the two ends of bunching


def test_a_whole_cohort_waits_for_one_pass_and_then_decodes_undisturbed():
    """With the whole cohort admitted at once, C identical clients stay in step: every round is one
    prefill pass of C prompts (each prompt's TTFT), then C answers decoding together with no prompt in
    their steps (TPOT = a bare decode step of batch C). Priced by the ideal, both are the physics' own."""
    c, i, o = 16, 1000, 50
    row = {"engine": "vllm", "model": "llama-3.1-8b", "gpu": "h100-sxm", "tp": 1, "mode": "agg",
           "weight_precision": "bf16", "kv_precision": "bf16", "harness": "aiperf", "concurrency": c,
           "input_tokens": i, "output_tokens": o, "ttft_s": 1.0, "tpot_s": 1.0}  # fmt: skip
    bunched = validation.simulate_row(row, engine="ideal", rounds=2, cohort=True)
    spread = validation.simulate_row(row, engine="ideal", rounds=2)
    timer = rl.engines.StepTimer("ideal", "llama-3.1-8b", "h100-sxm")
    one_pass = rl.engines.prefill_times(timer, i, batch=c)["total"]
    decode = rl.engines.decode_step_times(timer, c, i + o / 2)["total"]
    assert bunched["sim_ttft_s"] == pytest.approx(one_pass, rel=0.02)
    assert bunched["sim_tpot_s"] == pytest.approx(float(decode), rel=0.02)
    # vLLM's budget of 8192 tokens a step admits eight of the sixteen prompts a pass: the first eight
    # answer after half the cohort's prefill
    assert spread["sim_ttft_s"] < 0.9 * bunched["sim_ttft_s"]
