"""Scheduler policies of the serving simulator (roofline.sim.policies): sourced defaults and behaviour."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline import sim

W8B = 16.060522496e9  # Llama 3 8B BF16 weight bytes
BW = 3.35e12  # H100 SXM bytes/s


# ---------------------------------------------------------------- each engine's documented defaults


@pytest.mark.parametrize(
    "engine, gpu, expected",
    [
        # vLLM V1 EngineArgs.get_batch_defaults, OpenAI server: >= 70 GiB and not an A100 → 8192 / 1024
        ("vllm", "h100-sxm", dict(priority="decode-first", token_budget=8192, max_sequences=1024)),
        ("vllm", "a100-80gb-sxm", dict(token_budget=2048, max_sequences=256)),  # A100s keep 2048 / 256
        ("vllm", "l4", dict(token_budget=2048, max_sequences=256)),  # 24 GB
        # SGLang ServerArgs: chunked_prefill_size by GPU memory; prompts run in batches of their own first
        ("sglang", "h100-sxm", dict(priority="prefill-first", token_budget=8192, chunk_tokens=8192)),
        ("sglang", "b200", dict(token_budget=16384, chunk_tokens=16384)),
        ("sglang", "l4", dict(token_budget=2048)),
        # TensorRT-LLM: max_num_tokens 8192, max_batch_size 2048, no chunked prefill, GUARANTEED_NO_EVICT
        ("tensorrt-llm", "h100-sxm", dict(token_budget=8192, max_sequences=2048, chunk_tokens=None,
                                          whole_prompt_must_fit=True, kv_reservation="prompt+output")),
        # llama-server: n_batch 2048 in passes of n_ubatch 512, 4 slots by default
        ("llama.cpp", "h100-sxm", dict(token_budget=2048, pass_tokens=512, max_sequences=4)),
        # DeepSpeed-MII: max_ragged_batch_size 768, max_ragged_sequence_count 512
        ("deepspeed-mii", "h100-sxm", dict(priority="decode-first", token_budget=768, max_sequences=512)),
    ],
)  # fmt: skip
def test_engine_policies_carry_the_engines_documented_defaults(engine, gpu, expected):
    p = sim.engine_policy(engine, gpu)
    assert {k: getattr(p, k) for k in expected} == expected
    assert p.source.startswith("https://")


def test_sglang_running_limit_comes_from_its_kv_pool():
    # min(clamp(KV ÷ context × 512, 2048, 4096), KV ÷ 2): 420,000 KV tokens at a 131,072-token context
    # → 1,640 → 2,048; at an 8,192-token context → 26,250 → 4,096; a tiny pool of 3,000 → 1,500
    p = lambda kv, ctx: sim.engine_policy("sglang", "h100-sxm", kv_capacity_tokens=kv, context_tokens=ctx)  # noqa: E731
    assert p(420_000, 131_072).max_sequences == 2048
    assert p(420_000, 8192).max_sequences == 4096
    assert p(3_000, 8192).max_sequences == 1500


def test_the_ideal_engine_schedules_with_the_courses_assumptions():
    p = sim.engine_policy("ideal", "h100-sxm")
    assert p == sim.assumed_policy()
    assert (p.max_sequences, p.token_budget) == (
        rl.assumption("engine_max_batch"),
        rl.assumption("engine_token_budget"),
    )
    assert p.chunk_tokens is None and p.priority == "decode-first"


# ---------------------------------------------------------------- simulate picks the engine's policy


def test_simulate_schedules_like_the_engine_unless_a_setting_is_given():
    kw = dict(concurrency=4, requests=8, input_tokens=256, output_tokens=8, record_timeline=False)
    r = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", engine="sglang", **kw))
    context = rl.get_model("llama-3-8b").max_context_tokens
    expected = sim.engine_policy(
        "sglang", "h100-sxm", kv_capacity_tokens=r.kv_capacity_tokens, context_tokens=context
    )
    assert r.policy == expected
    changed = sim.simulate(
        sim.SimConfig(
            "llama-3-8b", "h100-sxm", engine="sglang", priority="decode-first", max_batch=None, **kw
        )
    )
    assert changed.policy.priority == "decode-first"
    assert changed.policy.max_sequences == r.policy.max_sequences  # None keeps the engine's value
    # an explicit policy (by engine id) with the ideal engine's step times
    ideal_like_vllm = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", policy="vllm", **kw))
    assert ideal_like_vllm.engine == "ideal" and ideal_like_vllm.policy.max_sequences == 1024


def test_overrides_keep_what_is_not_given():
    p = sim.engine_policy("vllm", "h100-sxm")
    assert p.with_overrides() is p
    assert p.with_overrides(max_batch=None, token_budget=None, priority=None) is p
    assert p.with_overrides(max_batch=1024) is p  # the same value: the same policy
    whole = p.with_overrides(chunk_tokens=None)
    assert whole.chunk_tokens is None and whole.token_budget == p.token_budget


def test_bad_policies_raise_library_errors():
    with pytest.raises(rl.UnknownNameError):
        sim.SchedulerPolicy("x", max_sequences=4, token_budget=8, chunk_tokens=None, priority="random")
    with pytest.raises(rl.InvalidConfigurationError):
        sim.SchedulerPolicy("x", max_sequences=16, token_budget=8, chunk_tokens=None)
    with pytest.raises(rl.InvalidConfigurationError):
        sim.SchedulerPolicy("x", max_sequences=4, token_budget=8, chunk_tokens=0)
    with pytest.raises(rl.UnknownNameError):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1, requests=2, policy="warp-drive"))
    with pytest.raises(rl.InvalidConfigurationError):
        sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1, requests=2, policy=42))
    with pytest.raises(
        rl.InvalidConfigurationError
    ):  # DeepSpeed's 768-token budget cannot hold 1,000 decoders
        sim.simulate(
            sim.SimConfig(
                "llama-3-8b", "h100-sxm", rate_per_s=1, requests=2, policy="deepspeed-mii", max_batch=1000
            )
        )


# ---------------------------------------------------------------- what each rule does, by hand


def _toy(**kw):
    return sim.SchedulerPolicy("toy", **{"max_sequences": 16, "token_budget": 16, "chunk_tokens": None, **kw})


def test_a_whole_prompt_that_must_fit_waits_for_room():
    # A (empty prompt, 30 tokens) decodes from step 2 on, taking 1 of the 16-token budget; B's 16-token
    # prompt arrives during step 1. The first-prompt rule runs B at once, past the budget; TensorRT-LLM's
    # rule makes B wait until the budget the decoders leave holds it: after A has finished.
    trace = dict(arrival_s=[0.0, 0.001], input_tokens=[0, 16], output_tokens=[30, 2])
    kw = dict(trace=trace, requests=2, record_timeline=False)
    loose = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", policy=_toy(), **kw))
    strict = sim.simulate(
        sim.SimConfig("llama-3-8b", "h100-sxm", policy=_toy(whole_prompt_must_fit=True), **kw)
    )
    assert loose.first_token_s[1] < loose.finish_s[0]
    assert strict.first_token_s[1] > strict.finish_s[0]


def test_reserving_the_answer_never_preempts():
    # 100 KV tokens, two requests of 40 + 40: reserving prompts only admits both (80 tokens), then their
    # growth (2 a step) overflows the cache and one is preempted; reserving prompt + answer (79 each) admits
    # the second only when the first has finished, and nothing is ever preempted.
    trace = dict(arrival_s=[0.0, 0.0], input_tokens=[40, 40], output_tokens=[40, 40])
    kw = dict(trace=trace, requests=2, kv_capacity=100, record_timeline=False)
    lazy = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", policy=_toy(token_budget=128), **kw))
    reserving = _toy(token_budget=128, kv_reservation="prompt+output")
    full = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", policy=reserving, **kw))
    assert lazy.preemptions > 0 and lazy.admitted_s[1] == 0.0
    assert full.preemptions == 0 and full.admitted_s[1] == full.finish_s[0]
    assert full.requests_completed == lazy.requests_completed == 2


def test_physical_passes_reread_the_weights():
    # llama.cpp's n_ubatch: a 256-token prompt in passes of 64 runs as 4 memory-bound passes, each reading
    # the weights and writing 64 tokens of KV, like a 64-token prompt alone: 4 × its time (~4 × 4.5 ms);
    # in one pass the same prompt takes about one weight read (its 4.1 TFLOP ≈ 4.2 ms is below 4.8 ms).
    kw = dict(concurrency=1, requests=1, output_tokens=1, record_timeline=False)
    in_passes = _toy(token_budget=256, pass_tokens=64)
    passes = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", input_tokens=256, policy=in_passes, **kw))
    one_64 = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", input_tokens=64, **kw))
    whole = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", input_tokens=256, **kw))
    assert passes.ttft_s[0] == pytest.approx(4 * one_64.ttft_s[0], rel=1e-9)
    assert passes.ttft_s[0] > 3.5 * whole.ttft_s[0]
    assert whole.ttft_s[0] == pytest.approx((W8B + 256 * 131072) / BW, rel=0.1)


def test_every_engines_scheduler_serves_a_load_to_the_end():
    # each engine's policy, on the ideal step times: everyone finishes, causally, within the KV cache
    for engine in rl.data.engines():
        prompts = sim.LengthSpec("lognormal", 1500, sigma=0.8)
        r = sim.simulate(
            sim.SimConfig(
                "llama-3-8b",
                "h100-sxm",
                rate_per_s=20,
                requests=120,
                seed=1,
                policy=engine,
                input_tokens=prompts,
                output_tokens=64,
            )
        )
        assert r.requests_completed == 120, engine
        assert np.all(r.first_token_s >= r.arrival_s) and np.all(r.finish_s >= r.first_token_s), engine
        assert r.timeline_kv_used_tokens.max() <= r.kv_capacity_tokens, engine


@settings(max_examples=30, deadline=None)
@given(
    budget=st.integers(64, 2048),
    chunk=st.one_of(st.none(), st.integers(16, 1024)),
    priority=st.sampled_from(sim.PRIORITIES),
    must_fit=st.booleans(),
    reservation=st.sampled_from(sim.policies.KV_RESERVATIONS),
    pass_tokens=st.one_of(st.none(), st.integers(32, 512)),
    cap=st.integers(2_000, 20_000),
    seed=st.integers(0, 5),
)
def test_any_policy_serves_every_request_within_the_cache(
    budget, chunk, priority, must_fit, reservation, pass_tokens, cap, seed
):
    policy = sim.SchedulerPolicy(
        "random", max_sequences=min(32, budget), token_budget=budget, chunk_tokens=chunk, priority=priority,
        whole_prompt_must_fit=must_fit, kv_reservation=reservation, pass_tokens=pass_tokens,
    )  # fmt: skip
    prompts, answers = sim.LengthSpec("uniform", low=0, high=1500), sim.LengthSpec("uniform", low=1, high=80)
    r = sim.simulate(
        sim.SimConfig(
            "llama-3-8b",
            "h100-sxm",
            rate_per_s=40,
            requests=40,
            seed=seed,
            policy=policy,
            kv_capacity=cap,
            input_tokens=prompts,
            output_tokens=answers,
        )
    )
    assert r.requests_completed == 40
    assert np.all(r.first_token_s >= r.admitted_s) and np.all(r.admitted_s >= r.arrival_s)
    assert np.all(r.finish_s >= r.first_token_s)
    assert r.timeline_kv_used_tokens.max() <= cap
    assert (r.timeline_prefilling + r.timeline_decoding).max() <= policy.max_sequences
    if reservation == "prompt+output":
        assert r.preemptions == 0


# ---------------------------------------------------------------- the scheduler facts live in engines.toml


def test_scheduler_facts_come_from_the_engines_table(tmp_path, monkeypatch):
    """One concept, one place: change TensorRT-LLM's row in a what-if table and its policy follows; a
    value outside a field's rule is a DataTableError naming the file, the row and the field."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "data"
    text = (root / "engines.toml").read_text()
    trt = text.index('id = "tensorrt-llm"')
    changed = text[:trt] + text[trt:].replace("chunked_prefill = false\n", "pass_tokens = 1024\n", 1)
    for name in ("gpus.toml", "models.toml", "prices.toml"):  # a what-if directory holds the core tables
        (tmp_path / name).write_text((root / name).read_text())
    monkeypatch.setenv("ROOFLINE_DATA_DIR", str(tmp_path))
    try:
        (tmp_path / "engines.toml").write_text(changed)
        rl.data.clear_cache()
        p = sim.engine_policy("tensorrt-llm", "h100-sxm")
        assert p.chunk_tokens == 8192 and p.pass_tokens == 1024 and p.kv_reservation == "prompt+output"
        (tmp_path / "engines.toml").write_text(
            text.replace('kv_reservation = "prompt+output"', 'kv_reservation = "all"')
        )
        rl.data.clear_cache()
        with pytest.raises(rl.DataTableError, match=r"engines.toml.*'tensorrt-llm'.*kv_reservation"):
            rl.data.engines()
    finally:
        monkeypatch.delenv("ROOFLINE_DATA_DIR")
        rl.data.clear_cache()
