"""The serving simulator (roofline.sim): closed forms, Little's law, invariants, bounds."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive_simulator import simulate_naive

import roofline as rl
from roofline import sim

W8B = 16.060522496e9  # Llama 3 8B BF16 weight bytes
TABLE = 128256 * 4096  # its input embedding (= LM head) parameters, V x d: 525,336,576
# A decode step gathers one embedding row per token instead of reading the table:
# 1 token reads the weights minus the table plus one row of d = 4096 BF16 values.
W8B_STEP = W8B - 2 * TABLE + 2 * 4096  # 15,010,857,536 bytes
BW = 3.35e12  # H100 SXM bytes/s
PEAK = 989e12  # H100 SXM dense BF16 FLOP/s
KV = 131072  # Llama 3 8B bytes per token (BF16): 2 x 32 layers x 8 KV heads x 128 x 2 bytes
N_ACTIVE = 8_030_261_248  # Llama 3 8B parameters (weight bytes ÷ 2)
# FLOPs per token multiply the block weights (N minus the embedding lookup and the LM head); the LM head
# (2·V·d) runs once per sequence that gets logits: a prompt's last token.
MATMUL = N_ACTIVE - 2 * TABLE  # 6,979,588,096
LOGITS = 2 * TABLE  # FLOPs of one row of logits
ATTN = 4 * 32 * 32 * 128  # attention FLOPs per (token, context token): 4 x L x H x d_h
LINK = 900e9  # NVLink 4 bytes/s


# ---------------------------------------------------------------- closed forms (lessons 16 and 25)


@pytest.mark.parametrize(
    "model, gpu, users, output_tokens, num_gpus",
    [
        ("llama-3-8b", "h100-sxm", 32, 50, 1),
        ("llama-3-8b", "h100-sxm", 1, 20, 1),
        ("llama-3-70b", "h100-sxm", 8, 30, 2),
        ("gpt-oss-20b", "h100-sxm", 8, 200, 1),  # half its layers keep a window of 128: crossed at step 128
    ],
)
def test_everyone_at_zero_without_prefill_matches_decode_step_exactly(
    model, gpu, users, output_tokens, num_gpus
):
    # U users at t = 0, empty prompts: step j (j = 0 … O−1) is a decode step of U users attending to j
    # tokens; lesson 25's continuous batching with the context growing one token per step.
    r = sim.simulate(
        sim.SimConfig(
            model,
            gpu,
            concurrency=users,
            requests=users,
            input_tokens=0,
            output_tokens=output_tokens,
            num_gpus=num_gpus,
        )
    )
    steps = np.asarray(
        rl.decode_step(
            model, gpu, batch=users, context_tokens=np.arange(output_tokens), num_gpus=num_gpus
        ).step_time_s
    )
    assert r.steps == output_tokens
    np.testing.assert_allclose(r.timeline_step_s, steps, rtol=1e-12)
    np.testing.assert_allclose(r.first_token_s, steps[0], rtol=1e-12)
    np.testing.assert_allclose(r.finish_s, steps.sum(), rtol=1e-12)
    np.testing.assert_allclose(r.ttft_s, steps[0], rtol=1e-12)
    # TPOT = (e2e − TTFT) ÷ (O − 1) = mean of the steps at contexts 1 … O−1
    np.testing.assert_allclose(r.tpot_s, steps[1:].mean(), rtol=1e-12)


def test_lesson_25_batch_one_floor_by_hand():
    # one user, 20 tokens, context ~0: each step reads the weights (15.01 GB ÷ 3.35 TB/s = 4.481 ms) plus
    # j tokens of KV; 20 steps ≈ 20 × 4.481 ms + Σj × 128 KiB ÷ 3.35 TB/s
    r = sim.simulate(
        sim.SimConfig("llama-3-8b", "h100-sxm", concurrency=1, requests=1, input_tokens=0, output_tokens=20)
    )
    by_hand = (20 * W8B_STEP + sum(range(20)) * KV) / BW
    assert r.finish_s[0] == pytest.approx(by_hand, rel=1e-12)


def test_one_unchunked_prompt_takes_exactly_prefill_time():
    # P = 500: FLOPs 2 × N_matmul × 500 + one row of logits + 4LHd × 500 × 499 / 2, compute-bound
    r = sim.simulate(
        sim.SimConfig("llama-3-8b", "h100-sxm", concurrency=1, requests=1, input_tokens=500, output_tokens=1)
    )
    by_hand = (2 * MATMUL * 500 + LOGITS + ATTN * 500 * 499 / 2) / PEAK
    assert r.ttft_s[0] == pytest.approx(by_hand, rel=1e-12)
    assert r.ttft_s[0] == pytest.approx(rl.prefill("llama-3-8b", "h100-sxm", 500).step_time_s, rel=1e-12)


def test_chunking_splits_a_prompt_into_steps_with_the_same_flops():
    # 2,000 tokens in chunks of 500: 4 steps. Each is compute-bound (500 × 16.06 GFLOP ÷ 989 TFLOP/s = 8.1 ms
    # against (16.06 GB + ≤ 2,000 × 128 KiB) ÷ 3.35 TB/s ≈ 4.9 ms), and the chunks' attention pairs
    # Σ (C·S + C(C−1)/2) add up to P(P−1)/2: the time equals the unchunked prefill's FLOPs ÷ peak.
    r = sim.simulate(
        sim.SimConfig(
            "llama-3-8b",
            "h100-sxm",
            concurrency=1,
            requests=1,
            input_tokens=2000,
            output_tokens=1,
            chunk_tokens=500,
        )
    )
    assert r.steps == 4
    assert r.ttft_s[0] == pytest.approx(
        (2 * MATMUL * 2000 + LOGITS + ATTN * 2000 * 1999 / 2) / PEAK, rel=1e-12
    )


def test_disaggregated_single_request_by_hand():
    # prefill worker: 500-token prompt (compute-bound), then 500 × 128 KiB over NVLink + 1 ms, then the decode
    # worker makes tokens 2…4 at contexts 500, 501, 502 (memory-bound: weights + context × KV)
    r = sim.simulate(
        sim.SimConfig(
            "llama-3-8b",
            "h100-sxm",
            concurrency=1,
            requests=1,
            input_tokens=500,
            output_tokens=4,
            prefill_workers=1,
            decode_workers=1,
        )
    )
    prefill_s = (2 * MATMUL * 500 + LOGITS + ATTN * 500 * 499 / 2) / PEAK
    transfer_s = 500 * KV / LINK + 1e-3
    decode_s = sum((W8B_STEP + c * KV) / BW for c in (500, 501, 502))
    assert r.ttft_s[0] == pytest.approx(prefill_s, rel=1e-12)
    assert r.e2e_s[0] == pytest.approx(prefill_s + transfer_s + decode_s, rel=1e-12)
    assert r.num_gpus_total == 2


def test_a_gpu_without_interconnect_serves_alone_but_cannot_disaggregate():
    # a single measured machine has no link (0 bytes/s): one worker never moves KV, so its run is the same
    # as on the GPU with NVLink; prefill and decode workers would have to move it, and are refused by name
    alone = dataclasses.replace(rl.get_gpu("h100-sxm"), id="no-link", interconnect_bytes_per_s=0.0)
    load = dict(rate_per_s=20, requests=100, input_tokens=512, output_tokens=64, replicas=2)
    r = sim.simulate(sim.SimConfig("llama-3-8b", alone, **load))
    linked = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", **load))
    assert r.requests_completed == 100
    np.testing.assert_array_equal(r.finish_s, linked.finish_s)
    with pytest.raises(rl.InvalidConfigurationError, match="no-link has none"):
        sim.simulate(sim.SimConfig("llama-3-8b", alone, rate_per_s=20, prefill_workers=1, decode_workers=1))


def test_pipeline_bubble_at_batch_one():
    # one sequence in a 2-stage pipeline: one microbatch, so each token still takes the whole model's step
    # (stage time × 2) and each stage is busy half the time
    one = sim.simulate(
        sim.SimConfig("llama-3-8b", "h100-sxm", concurrency=1, requests=1, input_tokens=0, output_tokens=10)
    )
    two = sim.simulate(
        sim.SimConfig(
            "llama-3-8b",
            "h100-sxm",
            concurrency=1,
            requests=1,
            input_tokens=0,
            output_tokens=10,
            pipeline_stages=2,
        )
    )
    assert two.e2e_s[0] == pytest.approx(one.e2e_s[0], rel=1e-12)
    assert two.busy_fraction == pytest.approx(0.5)
    assert two.num_gpus_total == 2


def test_cost_per_million_at_slo_by_hand():
    r = sim.simulate(
        sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=10, requests=300, usd_per_gpu_hour=2.0)
    )
    # $2 per GPU-hour, 1 GPU, goodput output tokens/s: $ = 2 ÷ (tok/s × 3600) × 1e6
    assert r.usd_per_million_output_tokens_at_slo == pytest.approx(
        2.0 / (r.goodput_output_tokens_per_s * 3600) * 1e6
    )


def test_step_cost_model_matches_decode_step_and_is_vectorized():
    c = sim.StepCostModel("llama-3-8b", "h100-sxm")
    b = np.array([1, 8, 64, 256])
    t = np.array([0, 100, 1000, 1500])
    expected = np.asarray(rl.decode_step("llama-3-8b", "h100-sxm", b, t, on_overflow="mask").step_time_s)
    np.testing.assert_allclose(c.decode_time_s(b, t), expected, rtol=1e-12)


def test_efficiency_hook_slows_steps():
    # half the bandwidth doubles a memory-bound step; a 1 ms overhead is added after
    ideal = sim.StepCostModel("llama-3-8b", "h100-sxm")
    numbers = rl.engines.engine_params("ideal", "h100-sxm").replace(
        bandwidth_fraction=0.5, step_overhead_s=1e-3
    )
    slow = sim.StepCostModel("llama-3-8b", "h100-sxm", params=numbers)
    assert slow.decode_time_s(1, 0) == pytest.approx(2 * ideal.decode_time_s(1, 0) + 1e-3)


# ---------------------------------------------------------------- queueing


# Little's law on the engine's own occupancy: tests/test_sim_edges.py


def test_same_seed_same_result_and_other_seed_differs():
    kw = dict(rate_per_s=20, requests=400, input_tokens=sim.LengthSpec("lognormal", 300), output_tokens=64)
    a = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", seed=7, **kw))
    b = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", seed=7, **kw))
    c = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", seed=8, **kw))
    np.testing.assert_array_equal(a.e2e_s, b.e2e_s)
    assert a.to_dict() == b.to_dict()
    assert not np.array_equal(a.e2e_s, c.e2e_s)


def test_percentiles_ordered_and_goodput_below_throughput():
    r = sim.simulate(
        sim.SimConfig(
            "llama-3-8b", "h100-sxm", rate_per_s=60, requests=2000, slo_ttft_s=0.05, slo_tpot_s=0.01
        )
    )
    for p in (r.ttft_s_percentiles, r.tpot_s_percentiles, r.e2e_s_percentiles):
        assert p["p50"] <= p["p90"] <= p["p99"]
    assert r.goodput_requests_per_s <= r.requests_per_s
    assert r.goodput_output_tokens_per_s <= r.throughput_output_tokens_per_s <= r.throughput_tokens_per_s
    assert 0 < r.busy_fraction <= 1 + 1e-9


def test_latency_climbs_with_load():
    ttft = [
        sim.simulate(
            sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=x, requests=1500, seed=1)
        ).ttft_s_percentiles["p90"]
        for x in (10, 40, 65)
    ]
    assert ttft[0] < ttft[1] < ttft[2]


def test_kv_never_exceeds_capacity_and_tiny_cache_preempts():
    r = sim.simulate(
        sim.SimConfig(
            "llama-3-8b",
            "h100-sxm",
            rate_per_s=30,
            requests=300,
            input_tokens=512,
            output_tokens=256,
            kv_capacity=3000,
        )
    )
    assert r.timeline_kv_used_tokens.max() <= 3000
    assert r.preemptions > 0
    assert r.requests_completed == 300
    big = sim.simulate(
        sim.SimConfig(
            "llama-3-8b", "h100-sxm", rate_per_s=30, requests=300, input_tokens=512, output_tokens=256
        )
    )
    assert big.preemptions == 0


def test_request_longer_than_the_cache_is_refused():
    with pytest.raises(rl.DoesNotFitError):
        sim.simulate(
            sim.SimConfig(
                "llama-3-8b",
                "h100-sxm",
                rate_per_s=1,
                requests=5,
                input_tokens=900,
                output_tokens=200,
                kv_capacity=1000,
            )
        )


def test_default_kv_capacity_from_memory_minus_weights():
    # vLLM's budget on an 80 GiB H100: 80 × 2^30 × 0.98975 (CUDA-visible) × 0.9 (gpu_memory_utilization)
    # − 5,153,960,755 (activations, workspace) − 139,586,437 (non-torch) = 71,223,195,427 bytes;
    # minus 16,060,522,496 bytes of weights, ÷ 131,072 bytes per token = 420,859.6 → 420,859 tokens
    assert sim.kv_capacity_tokens("llama-3-8b", "h100-sxm") == 420_859


def test_unsustainable_rate_is_reported_not_hung():
    r = sim.simulate(
        sim.SimConfig(
            "llama-3-8b", "h100-sxm", rate_per_s=5000, requests=3000, input_tokens=512, output_tokens=128
        )
    )
    assert r.unstable
    assert "the queue grows without bound; the largest sustainable rate is about" in r.message
    assert r.rate_per_s > r.sustainable_rate_per_s
    calm = sim.simulate(
        sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=0.5 * r.sustainable_rate_per_s, requests=3000)
    )
    assert not calm.unstable


def test_simulated_time_is_bounded():
    r = sim.simulate(
        sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1000, requests=5000, max_sim_time_s=20.0)
    )
    assert r.truncated and 0 < r.requests_completed < 5000
    assert np.nanmax(r.finish_s) <= 20.0
    assert r.unstable


def test_closed_loop_keeps_concurrency_bounded():
    r = sim.simulate(
        sim.SimConfig(
            "llama-3-8b", "h100-sxm", concurrency=16, requests=200, input_tokens=256, output_tokens=64
        )
    )
    assert r.requests_completed == 200
    assert (r.timeline_prefilling + r.timeline_decoding).max() <= 16


def test_prefix_cache_hits_shorten_ttft():
    kw = dict(rate_per_s=5, requests=200, input_tokens=2000, output_tokens=16)
    cold = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", **kw))
    warm = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", prefix_hit_rate=0.75, **kw))
    assert warm.ttft_s_percentiles["p50"] < 0.5 * cold.ttft_s_percentiles["p50"]


def test_prefill_first_stalls_decodes_more_than_decode_first():
    kw = dict(rate_per_s=40, requests=1000, input_tokens=2000, output_tokens=64, chunk_tokens=512)
    df = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", priority="decode-first", **kw))
    pf = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", priority="prefill-first", **kw))
    assert pf.tpot_s_percentiles["p99"] > df.tpot_s_percentiles["p99"]


@pytest.mark.parametrize(
    ("model", "gpu", "deployment"),
    [
        ("llama-3-8b", "h100-sxm", {}),
        # MLA and MoE on a calibrated engine, whose prefill attention adds to the step (never hidden)
        ("deepseek-v3", "h200", {"num_gpus": 8, "weight_precision": "fp8-block128", "engine": "vllm"}),
    ],
)
def test_fast_simulator_equals_the_naive_per_token_loop(model, gpu, deployment):
    rng = np.random.default_rng(5)
    arrival = np.cumsum(rng.exponential(0.02, 150))
    inp = rng.integers(0, 400, 150)
    out = rng.integers(1, 80, 150)
    for chunk, budget in ((None, 8192), (128, 512)):
        fast = sim.simulate(
            sim.SimConfig(
                model,
                gpu,
                trace=dict(arrival_s=arrival, input_tokens=inp, output_tokens=out),
                requests=150,
                chunk_tokens=chunk,
                token_budget=budget,
                cost=sim.StepCostModel(model, gpu, **deployment),
                policy=sim.assumed_policy(),  # the naive loop's scheduler, whatever the engine
            )
        )
        slow = simulate_naive(
            model, gpu, arrival, inp, out, chunk_tokens=chunk, token_budget=budget, **deployment
        )
        np.testing.assert_allclose(fast.first_token_s, slow["first_token_s"], rtol=1e-12)
        np.testing.assert_allclose(fast.finish_s, slow["finish_s"], rtol=1e-12)
        assert fast.steps == slow["steps"]


def test_capacity_plan_meets_the_slo_with_fewest_replicas():
    p = sim.plan_capacity(
        sim.SimConfig(
            "llama-3-8b",
            "h100-sxm",
            rate_per_s=120,
            input_tokens=512,
            output_tokens=128,
            requests=1200,
            engine="vllm",
        )
    )
    assert p.meets_slo and p.p99_ttft_s <= 1.0 and p.p99_tpot_s <= 0.05
    fewer = [t for t in p.tried if t[0] == p.replicas - 1]
    assert all(not t[3] for t in fewer)  # one replica fewer, if tried, missed


# ---------------------------------------------------------------- bad input


def test_bad_input_raises_library_errors():
    with pytest.raises(rl.InvalidConfigurationError):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1, concurrency=2))
    with pytest.raises(rl.InvalidConfigurationError):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm"))
    with pytest.raises(rl.UnknownNameError):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1, engine="warp-drive"))
    with pytest.raises(rl.UnknownNameError):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1, priority="random"))
    with pytest.raises(rl.InvalidConfigurationError):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=-1))
    with pytest.raises(rl.InvalidConfigurationError):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1, output_tokens=0))
    with pytest.raises(rl.InvalidConfigurationError):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1, prefill_workers=1))
    with pytest.raises(rl.InvalidConfigurationError):  # every running sequence must fit in a step's budget
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1, max_batch=256, token_budget=128))


# ---------------------------------------------------------------- invariants (hypothesis)


@settings(max_examples=40, deadline=None)
@given(
    rate=st.floats(0.5, 300),
    requests=st.integers(1, 60),
    inp=st.integers(0, 600),
    out=st.integers(1, 60),
    chunk=st.one_of(st.none(), st.integers(16, 512)),
    cap=st.one_of(st.none(), st.integers(700, 5000)),
    priority=st.sampled_from(sim.PRIORITIES),
    seed=st.integers(0, 10),
)
def test_every_request_is_causal(rate, requests, inp, out, chunk, cap, priority, seed):
    r = sim.simulate(
        sim.SimConfig(
            "llama-3-8b",
            "h100-sxm",
            rate_per_s=rate,
            requests=requests,
            input_tokens=sim.LengthSpec("uniform", low=0, high=inp),
            output_tokens=out,
            chunk_tokens=chunk,
            kv_capacity=cap,
            priority=priority,
            seed=seed,
        )
    )
    done = np.isfinite(r.finish_s)
    assert r.requests_completed == done.sum() <= requests
    assert np.all(r.e2e_s[done] >= r.ttft_s[done])
    assert np.all(r.ttft_s[done] > 0)
    assert np.all(r.admitted_s[done] >= r.arrival_s[done])
    if cap is not None:
        assert r.timeline_kv_used_tokens.max() <= cap


@settings(max_examples=25, deadline=None)
@given(users=st.integers(1, 64), out=st.integers(2, 40), inp=st.integers(1, 300))
def test_closed_loop_completes_everything_and_tokens_add_up(users, out, inp):
    r = sim.simulate(
        sim.SimConfig(
            "llama-3-8b",
            "h100-sxm",
            concurrency=users,
            requests=2 * users,
            input_tokens=inp,
            output_tokens=out,
        )
    )
    assert r.requests_completed == 2 * users
    # throughput × duration = every token processed and emitted
    assert r.throughput_output_tokens_per_s * r.duration_s == pytest.approx(2 * users * out)
    assert r.throughput_tokens_per_s * r.duration_s == pytest.approx(2 * users * (inp + out))


def test_closed_loop_ramp_spreads_the_first_requests():
    # 4 clients over a 0.2 s ramp: first requests at 0, 0.05, 0.10, 0.15 s
    r = sim.simulate(
        sim.SimConfig(
            "llama-3-8b", "h100-sxm", concurrency=4, requests=8, input_tokens=64, output_tokens=8, ramp_s=0.2
        )
    )
    np.testing.assert_allclose(r.arrival_s[:4], [0.0, 0.05, 0.10, 0.15])
    assert r.requests_completed == 8


# ---------------------------------------------------------------- the simulator inside lesson 59


def test_lesson_59_dashboard_reuses_the_conversation():
    from roofline.lessons.dashboard import simulated_latency

    # 16 users each hold 4,200 tokens, of which only the 200-token turn is new: the rest is in the cache
    users = rl.Scenario(batch=16, context_tokens=4200, prompt_tokens=200)
    warm = simulated_latency(users, output_tokens=200, engine="ideal", requests=64)
    cold = sim.simulate(
        sim.SimConfig(
            "llama-3-8b", "h100-sxm", concurrency=16, requests=64, input_tokens=4200, output_tokens=200
        )
    )
    assert warm["ttft_s"]["p50"] < cold.ttft_s_percentiles["p50"]


def test_llama_cpp_serves_from_its_own_memory_on_a_mac():
    # llama.cpp on an M4 Max keeps Metal's working set, 0.75 x 128 GiB, for weights and KV; vLLM's accounting
    # 0.9 of it less activations and the runtime. The KV cache is what is left beside Llama 3 8B in Q4_0, at
    # 131,072 bytes a token.
    weights = float(rl.weight_bytes("llama-3-8b", "gguf-q4_0"))
    kv = {}
    for engine in ("llama.cpp", "vllm"):
        config = sim.SimConfig("llama-3-8b", "m4-max", weight_precision="gguf-q4_0", engine=engine,
                               concurrency=1, requests=1, input_tokens=16, output_tokens=4)  # fmt: skip
        kv[engine] = sim.simulate(config).kv_capacity_tokens
    assert kv["llama.cpp"] == int((0.75 * 128 * 2**30 - weights) // 131_072)
    assert kv["vllm"] > kv["llama.cpp"]


@pytest.mark.parametrize(
    "model", ["mixtral-8x7b", "minimax-m2.5", "llama-3.1-70b", "deepseek-v3", "gpt-oss-120b", "mistral-7b"]
)
def test_the_simulator_prices_a_step_as_the_engine_model_does(model):
    # One formula, one place: an MoE's routed experts run on the engine's MoE kernels in a simulated step
    # as in generate and the lessons' engine figures, not at the dense GEMMs' efficiency; MLA's prompts
    # attend in the expanded form.
    # gpt-oss and Mistral attend to sliding windows in some or all layers
    weights = {"minimax-m2.5": "fp8-block128", "deepseek-v3": "fp8-block128", "gpt-oss-120b": "mxfp4-experts"}
    weights = weights.get(model, "bf16")
    kw = dict(num_gpus=8, weight_precision=weights, kv_precision="bf16")
    cost = sim.StepCostModel(model, "h200", engine="vllm", **kw)
    timer = rl.engines.StepTimer("vllm", model, "h200", **kw)
    for prompt in (1024, 8192):
        kv, pairs = cost.chunk_load(0, prompt)
        alone = cost.time_s(prompt, 1, kv, pairs, prompt, prompt_pairs=pairs)
        assert alone == pytest.approx(rl.engines.prefill_times(timer, prompt)["total"], rel=1e-9)
    for batch in (1, 32):
        for context in (100, 8192):  # within and past gpt-oss's window; within and past Mistral's
            step = float(rl.engines.decode_step_times(timer, batch, context)["total"])
            assert cost.decode_time_s(batch, context) == pytest.approx(step, rel=1e-9)
