"""The exercises beyond the card (speculative decoding, mixture of experts, a closed loop's arithmetic):
hand-worked values, agreement with the library over many configurations, the command lines, and the
starters' unfinished state.

The worked scripts are plain Python; the library is numpy and runs the verify step through the step
engine. Agreement is checked where the two compute the same thing: the geometric sum exactly, the speed-up
from the same step times, the verify step against ``forward_step`` with attention left out and the library's
own bytes and FLOPs per token fed in, experts touched and bytes read against ``roofline``'s, and a closed
loop's request latency, rate and implied TTFT against the serving simulator's own run.
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.physics.speculative import speculative_step

EXERCISES = Path(__file__).resolve().parents[1] / "exercises"
STARTERS = EXERCISES / "starters"
NAMES = ("speculative_decoding", "mixture_of_experts", "slos_and_capacity")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


spec_ex = _load(EXERCISES / "speculative_decoding.py", "test_ex_speculative_decoding")
moe_ex = _load(EXERCISES / "mixture_of_experts.py", "test_ex_mixture_of_experts")
loop_ex = _load(EXERCISES / "slos_and_capacity.py", "test_ex_slos_and_capacity")
SELFCHECK = _load(EXERCISES / "_selfcheck.py", "test_ex_levers_selfcheck")
WORKED = {"speculative_decoding": spec_ex, "mixture_of_experts": moe_ex, "slos_and_capacity": loop_ex}


def _run(path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, str(path), *args], capture_output=True, text=True, encoding="utf-8", env=env,
        cwd=EXERCISES.parent, timeout=60,
    )  # fmt: skip


# --- hand-worked values ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_worked_functions_pass_their_own_checks(name, capsys):
    assert SELFCHECK.run_checks(vars(WORKED[name]), WORKED[name].CHECKS)
    assert "All" in capsys.readouterr().out


def test_speculative_golden_values():
    # 1 + 0.8 + 0.64 + 0.512 + 0.4096 = 3.3616; α = 1 gives k + 1
    assert math.isclose(spec_ex.expected_tokens_per_step(0.8, 4), 3.3616, rel_tol=1e-12)
    assert spec_ex.expected_tokens_per_step(1.0, 6) == 7.0
    # batch 256, T = 128, k = 4: 2 × 8e9 × 1,280 / 989e12 = 20.708 ms
    # beats (16e9 + 256 × 128 × 128e3) / 3.35e12 = 6.028 ms
    v = spec_ex.verify_step_time_s(16e9, 256, 128, 4, 128e3, 8e9, 3.35e12, 989e12)
    assert math.isclose(v, 2 * 8e9 * 1280 / 989e12, rel_tol=1e-12)
    plain = spec_ex.verify_step_time_s(16e9, 256, 128, 0, 128e3, 8e9, 3.35e12, 989e12)
    assert math.isclose(plain, (16e9 + 256 * 128 * 128e3) / 3.35e12, rel_tol=1e-12)  # 6.028 ms
    # α = 0.7: E = 2.7731; 2.7731 × 6.028 / 20.708 = 0.807: speculation loses
    assert spec_ex.speculative_speedup(0.7, 4, 0.0, v, plain) < 1
    with pytest.raises(ValueError):
        spec_ex.expected_tokens_per_step(1.5, 4)


def test_moe_golden_values():
    # Mixtral: 8 × (1 − 0.75^8) = 7.199 experts for 8 tokens; 3.2 + 2 × 11.27 = 25.74 GB for one
    assert math.isclose(moe_ex.experts_touched(8, 2, 8), 8 * (1 - 0.75**8), rel_tol=1e-12)
    assert math.isclose(moe_ex.weight_bytes_read(3.2e9, 11.27e9, 8, 2, 1), 25.74e9, rel_tol=1e-12)
    # a dense model is the case E = k = 1: one "expert", always touched
    assert moe_ex.experts_touched(1, 1, 50) == 1.0
    with pytest.raises(ValueError):
        moe_ex.experts_touched(8, 9, 1)


def test_closed_loop_golden_values():
    # 0.2 + 199 × 0.01 = 2.19 s; 16 / 2.19 = 7.306 req/s; × 200 = 1,461 tokens/s; and back: 16 / 7.306 − 1.99
    latency = loop_ex.request_latency_s(0.2, 0.01, 200)
    assert math.isclose(latency, 2.19, rel_tol=1e-12)
    rate = loop_ex.requests_per_s(16, latency)
    assert math.isclose(loop_ex.output_tokens_per_s(rate, 200), 16 / 2.19 * 200, rel_tol=1e-12)
    assert math.isclose(loop_ex.implied_ttft_s(16, rate, 0.01, 200), 0.2, rel_tol=1e-9)
    # a request 5 % shorter at the same TPOT: its whole 0.1095 s comes off the 0.2 s TTFT
    faster = loop_ex.implied_ttft_s(16, rate * 1.05, 0.01, 200)
    assert math.isclose(faster, 2.19 / 1.05 - 1.99, rel_tol=1e-9)
    assert math.isclose(loop_ex.ttft_error(1 / 1.05 - 1, 0.2 / 2.19), faster / 0.2 - 1, rel_tol=1e-9)
    with pytest.raises(ValueError):
        loop_ex.implied_ttft_s(16, 20.0, 0.01, 200)  # faster than the answers alone allow


# --- agreement with the library -------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1), st.integers(0, 20))
def test_expected_tokens_agrees_with_the_library(alpha, k):
    from roofline.physics.speculative import expected_tokens_per_step

    assert math.isclose(
        spec_ex.expected_tokens_per_step(alpha, k), expected_tokens_per_step(alpha, k), rel_tol=1e-12
    )


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["llama-3-8b", "llama-3-70b", "mixtral-8x7b", "qwen2.5-7b"]),
    st.sampled_from([1, 4, 32, 128]),
    st.sampled_from([0, 512, 2048]),
    st.integers(0, 8),
    st.floats(0, 1),
    st.floats(0, 0.5),
)
def test_speedup_agrees_with_the_library_from_the_same_step_times(model, batch, context, k, alpha, r):
    s = speculative_step(model, "h100-sxm", batch, context, num_gpus=4, draft_tokens=k, acceptance=alpha,
                         draft_cost_ratio=r)  # fmt: skip
    one_draft = r * s.plain_step_time_s
    ours = spec_ex.speculative_speedup(alpha, k, one_draft, s.verify_time_s, s.plain_step_time_s)
    assert math.isclose(ours, s.speedup, rel_tol=1e-9)


@pytest.mark.parametrize("model", ["llama-3-8b", "llama-3-70b", "qwen2.5-7b"])
@pytest.mark.parametrize(("batch", "context", "k"), [(1, 1000, 4), (64, 1000, 4), (256, 128, 4), (512, 0, 7)])
def test_verify_step_agrees_with_the_step_engine(model, batch, context, k):
    """Dense models, attention left out and no KV writes: the engine's step is the exercise's max(). Two
    GPUs, no more than any of these models' KV heads (beyond that tensor parallelism replicates KV heads,
    which the exercise's formula leaves out)."""
    options = dict(num_gpus=2, include_attention=False, count_new_kv=False, on_overflow="ignore")
    step = rl.forward_step(model, "h100-sxm", batch, context, new_tokens=k + 1, **options)
    g = rl.get_gpu("h100-sxm")
    params_per_token = step.flops / (2 * step.tokens)  # what the engine multiplies per token
    ours = spec_ex.verify_step_time_s(
        step.weight_bytes_read, batch, context, k, rl.kv_bytes_per_token(model), params_per_token,
        2 * g.memory_bandwidth_bytes_per_s, 2 * rl.peak_flops_per_s(g, "bf16"),
    )  # fmt: skip
    assert math.isclose(ours, step.step_time_s, rel_tol=1e-9)


MOE_NO_SHARED = [
    m
    for m, spec in rl.models().items()
    if spec.is_moe and not getattr(spec, "shared_experts", 0) and not getattr(spec, "first_dense_layers", 0)
]


@pytest.mark.parametrize("model", MOE_NO_SHARED)
def test_experts_touched_agrees_with_the_library(model):
    m = rl.get_model(model)
    for n in (1, 2, 7, 64, 1000):
        ours = moe_ex.experts_touched(m.experts, m.experts_per_token, n)
        assert math.isclose(ours, float(rl.expected_experts_touched(m, n)), rel_tol=1e-12)


@pytest.mark.parametrize("model", MOE_NO_SHARED)
def test_weight_bytes_read_agrees_with_the_library(model):
    """Shared and per-expert bytes from the library's parameter breakdown; the library also reads only the
    embedding rows a step gathers, a few MB at most here, so the two agree to 0.1 %."""
    m = rl.get_model(model)
    b = rl.parameter_breakdown(m)
    bpe = rl.bytes_per_element("bf16")
    expert = b["expert_mlp"] / m.experts * bpe
    shared = float(rl.weight_bytes_read(m, "bf16", 1)) - m.experts_per_token * expert
    for n in (1, 8, 64, 512):
        ours = moe_ex.weight_bytes_read(shared, expert, m.experts, m.experts_per_token, n)
        assert math.isclose(ours, float(rl.weight_bytes_read(m, "bf16", n)), rel_tol=1e-3)


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 10), st.floats(0, 1), st.integers(1, 100_000))
def test_request_latency_agrees_with_the_library(ttft, tpot, n):
    from roofline.sim.validation import request_latency_s

    ours = loop_ex.request_latency_s(ttft, tpot, n)
    assert math.isclose(ours, request_latency_s(ttft, tpot, n), rel_tol=1e-12)


@pytest.mark.parametrize(("clients", "think_s"), [(4, 0.0), (16, 0.0), (8, 0.5)])
def test_a_simulated_closed_loop_keeps_the_exercises_books(clients, think_s):
    """The serving simulator's own closed loop (Llama 3.1 8B on an H100 with vLLM's steps, fixed lengths):
    its rate is C over the cycle, and the TTFT its simulated rate and TPOT imply is its own TTFT to within
    5 % of a cycle (the rate's tolerance, landing whole on TTFT)."""
    from roofline import sim

    n = 64
    r = sim.simulate(sim.SimConfig("llama-3.1-8b", "h100-sxm", concurrency=clients, requests=40 * clients,
                                   input_tokens=1000, output_tokens=n, engine="vllm", think_time_s=think_s,
                                   record_timeline=False))  # fmt: skip
    latency = loop_ex.request_latency_s(r.ttft_mean_s, r.tpot_mean_s, n)
    simulated_rate = r.requests_completed / r.duration_s
    assert math.isclose(simulated_rate, loop_ex.requests_per_s(clients, latency, think_s), rel_tol=0.05)
    implied = loop_ex.implied_ttft_s(clients, simulated_rate, r.tpot_mean_s, n, think_s)
    assert abs(implied - r.ttft_mean_s) <= 0.05 * (latency + think_s)


# --- command lines and starters -------------------------------------------------------------------


def test_speculative_command_line_shows_the_collapse():
    out = _run(
        EXERCISES / "speculative_decoding.py",
        "--acceptance",
        "0.7",
        "--context",
        "128",
        "--batch",
        "1",
        "256",
    )
    assert out.returncode == 0, out.stderr
    assert "2.7731" in out.stdout  # E for α = 0.7, k = 4
    assert "0.81x" in out.stdout  # 2.7731 × 6.03 / 20.71 at batch 256


def test_closed_loop_command_line_defaults_and_a_measured_rate():
    out = _run(EXERCISES / "slos_and_capacity.py", "--measured-rate", "7.67")
    assert out.returncode == 0, out.stderr
    assert "2.190 s" in out.stdout and "7.31 requests/s" in out.stdout  # 0.2 + 199 × 0.01; 16 / 2.19
    assert "1,461 tokens/s" in out.stdout and "9.1%" in out.stdout  # 7.306 × 200; 0.2 / 2.19
    assert "96.0 ms" in out.stdout  # 16 / 7.67 − 1.99 s


def test_moe_command_line_defaults():
    out = _run(EXERCISES / "mixture_of_experts.py")
    assert out.returncode == 0, out.stderr
    assert "93.4 GB" in out.stdout  # 3.2 + 8 × 11.27 resident
    assert "12.74" in out.stdout  # batch 8: (84.33e9 + 8 × 1,000 × 131,072) / 6.7e12 s, in ms


@pytest.mark.parametrize("name", NAMES)
def test_check_flag_passes(name):
    out = _run(EXERCISES / f"{name}.py", "--check")
    assert out.returncode == 0 and "All" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("speculative_decoding", ["--acceptance", "1.2"], "at most 1"),
        ("speculative_decoding", ["--draft-tokens", "2.5"], "whole number"),
        ("mixture_of_experts", ["--experts", "4", "--experts-per-token", "8"], "cannot exceed"),
        ("mixture_of_experts", ["--batch", "0"], "at least 1"),
        ("slos_and_capacity", ["--clients", "0"], "at least 1"),
        ("slos_and_capacity", ["--measured-rate", "20"], "more than 16 clients can complete"),
    ],
)
def test_bad_arguments_are_refused_with_a_message(name, args, message, capsys):
    with pytest.raises(SystemExit) as info:
        WORKED[name].main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and message in err, err


@pytest.mark.parametrize("name", NAMES)
def test_starter_says_what_is_left_and_exits_1(name):
    out = _run(STARTERS / f"{name}.py")
    assert out.returncode == 1
    assert "still to do" in out.stdout and "Traceback" not in out.stderr
    for function in WORKED[name].PHYSICS:
        assert function in out.stdout


@pytest.mark.parametrize("name", NAMES)
def test_starter_defines_every_physics_function(name):
    starter = _load(STARTERS / f"{name}.py", f"test_starter_{name}")
    for function in WORKED[name].PHYSICS:
        assert callable(getattr(starter, function))
