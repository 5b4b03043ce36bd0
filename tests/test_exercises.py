"""The build-it-yourself exercises in exercises/: physics, command lines, starters and the self-check.

Each worked script re-implements a piece of the course's physics in plain Python; the library does the
same with numpy. Agreement over many configurations is the test: two independent implementations of
one formula rarely agree by accident. The command-line tests look for the card's figures (derived by
hand in the comments) in what a learner would see, and make sure bad input ends in a clear message
rather than a traceback. The starter tests make sure an unfinished starter says what is left to do.
"""

from __future__ import annotations

import ast
import concurrent.futures
import doctest
import functools
import importlib.util
import inspect
import math
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import roofline as rl

EXERCISES = Path(__file__).resolve().parents[1] / "exercises"
STARTERS = EXERCISES / "starters"
NAMES = [
    "01_token_cost",
    "02_decode_floor",
    "03_04_amdahl",
    "16_step_time",
    "28_kv_cache",
    "61_compute_bound",
]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


WORKED = {n: _load(EXERCISES / f"{n}.py", f"test_ex_{n}") for n in NAMES}
SELFCHECK = _load(EXERCISES / "_selfcheck.py", "test_ex_selfcheck")
cost, floor_ex, amdahl = WORKED["01_token_cost"], WORKED["02_decode_floor"], WORKED["03_04_amdahl"]
step_ex, kv_ex, ridge_ex = WORKED["16_step_time"], WORKED["28_kv_cache"], WORKED["61_compute_bound"]

# The exercises build the card's model: every weight byte read once per step, KV = 2·L·H_kv·d_h per token.
# They agree with the library's step engine when given the engine's own per-step inputs (the weight bytes
# one step reads, the weights one token multiplies); models whose KV is not that simple (sliding windows,
# MLA) are left out of the exact comparisons.
DENSE = [
    m
    for m, spec in rl.models().items()
    if not spec.is_moe and not spec.sliding_window and not getattr(spec, "kv_lora_rank", None)
]


def flops_parameters(model) -> float:
    """Weights one decoded token multiplies in the engine (N minus the embedding lookup; the LM head is
    in, since every decoded token gets its logits): 2 × this is the FLOPs per token."""
    return rl.matmul_parameters_per_token(model) + rl.lm_head_parameters(model)


GPUS = list(rl.gpus())
REL = 1e-12


def close(a, b, rel=REL):
    return math.isclose(float(a), float(b), rel_tol=rel)


def supported(gpu_id, precision):
    return rl.PRECISIONS[precision].compute in rl.get_gpu(gpu_id).dense_flops_per_s


def _run_now(path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, str(path), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=EXERCISES.parent,
        timeout=60,
    )


@functools.cache
def _all_runs() -> dict:
    """Every command the subprocess tests below look at, started together (each takes ~0.1 s alone)."""
    commands = [(EXERCISES / f"{n}.py", ()) for n in NAMES]
    commands += [(EXERCISES / f"{n}.py", ("--check",)) for n in NAMES]
    commands += [(EXERCISES / f"{n}.py", tuple(_first_bad_args(n))) for n in NAMES]
    commands += [(STARTERS / f"{n}.py", ()) for n in NAMES]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {c: pool.submit(_run_now, c[0], *c[1]) for c in commands}
    return {c: f.result() for c, f in futures.items()}


def run(path: Path, *args: str) -> subprocess.CompletedProcess:
    """The result of running ``path`` with ``args`` as a program (from the batch above if it was there)."""
    return _all_runs().get((path, args)) or _run_now(path, *args)


def main_output(name: str, args, capsys) -> str:
    """Run a worked script's ``main`` in this process (the same code path as the program, but faster)."""
    assert WORKED[name].main(list(args)) == 0
    return capsys.readouterr().out


# --- 03_04 Amdahl ---------------------------------------------------------------------------------------


@st.composite
def amdahl_parts(draw):
    n = draw(st.integers(1, 5))
    weights = draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n))
    total = draw(st.floats(0.0, 1.0))
    fractions = [w / sum(weights) * total for w in weights]
    speedups = draw(st.lists(st.one_of(st.floats(0.05, 1e3), st.just(math.inf)), min_size=n, max_size=n))
    return fractions, speedups


@settings(max_examples=100, deadline=None)
@given(amdahl_parts())
def test_amdahl_agrees_with_the_library(parts):
    fractions, speedups = parts
    new = amdahl.new_time_fraction(fractions, speedups)
    assert math.isclose(new, rl.amdahl_new_time_fraction(fractions, speedups), rel_tol=1e-9, abs_tol=1e-12)
    rest = 1 - sum(fractions)
    assume(not 1e-13 < rest < 1e-8)  # the two round "nothing left" at slightly different thresholds
    ceiling = amdahl.amdahl_ceiling(fractions)
    assert ceiling == rl.amdahl_ceiling(fractions) or close(ceiling, rl.amdahl_ceiling(fractions), 1e-9)
    assume(new > 1e-12)
    speedup = amdahl.amdahl_speedup(fractions, speedups)
    assert close(speedup, rl.amdahl_speedup(fractions, speedups), 1e-9)
    # Physics, not just agreement: the whole gets no faster than its fastest-improved part, and never
    # beyond the ceiling; with every part sped up, the whole is sped up too.
    assert speedup <= ceiling * (1 + 1e-9)
    if all(s >= 1 for s in speedups):
        assert 1 - 1e-9 <= speedup <= max(speedups) * (1 + 1e-9)


def test_amdahl_card_golden_values():
    # The card: 0.3 made 3x: new time 0.7 + 0.1 = 0.8, speedup 1.25, ceiling 1 / 0.7 = 1.43.
    assert close(amdahl.amdahl_speedup([0.3], [3]), 1.25, 1e-9)
    assert close(amdahl.amdahl_ceiling([0.3]), 1 / 0.7, 1e-9)
    # Follow-up: 0.2 + 0.3/3 + 0.5/2 = 0.55 -> 1/0.55 = 1.818..., ceiling 1/0.2 = 5.
    assert close(amdahl.new_time_fraction([0.3, 0.5], [3, 2]), 0.55, 1e-9)
    assert close(amdahl.amdahl_speedup([0.3, 0.5], [3, 2]), 1 / 0.55, 1e-9)
    assert close(amdahl.amdahl_ceiling([0.3, 0.5]), 5.0, 1e-9)
    assert amdahl.amdahl_speedup([0.4, 0.6], [math.inf, math.inf]) == math.inf  # nothing left at all


@pytest.mark.parametrize(
    ("fractions", "speedups"), [([0.6, 0.5], [2, 3]), ([0.3], [0]), ([0.3], [-2]), ([1.2], [2])]
)
def test_amdahl_rejects_what_the_library_rejects(fractions, speedups):
    with pytest.raises(ValueError):
        amdahl.new_time_fraction(fractions, speedups)
    with pytest.raises(ValueError):
        rl.amdahl_new_time_fraction(fractions, speedups)


# --- 01 token cost ---------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 100), st.floats(1e-3, 1e7), st.integers(1, 64))
def test_token_cost_agrees_with_the_library(usd_per_gpu_hour, tokens_per_s, gpus):
    assert close(cost.tokens_per_hour(tokens_per_s), rl.tokens_per_hour(tokens_per_s))
    assert close(cost.seconds_per_million_tokens(tokens_per_s), rl.seconds_per_million_tokens(tokens_per_s))
    ours = cost.cost_per_million_tokens_usd(usd_per_gpu_hour, tokens_per_s, gpus)
    assert math.isclose(
        ours,
        rl.cost_per_million_tokens_usd(usd_per_gpu_hour, tokens_per_s, gpus),
        rel_tol=REL,
        abs_tol=1e-300,
    )
    # Twice the tokens from the same bill halves the price of each.
    assert math.isclose(
        cost.cost_per_million_tokens_usd(usd_per_gpu_hour, 2 * tokens_per_s, gpus),
        ours / 2,
        rel_tol=REL,
        abs_tol=1e-300,
    )


def test_token_cost_card_golden_values():
    assert round(cost.cost_per_million_tokens_usd(3.0, 200), 2) == 4.17  # 3 / 720,000 x 1e6 = 4.1667
    assert round(cost.cost_per_million_tokens_usd(3.0, 4300), 2) == 0.19  # 3 / 15.48e6 x 1e6 = 0.1938
    assert cost.seconds_per_million_tokens(200) == 5000.0  # 1e6 / 200, not 500
    for bad in (0, -5):
        with pytest.raises(ValueError):
            cost.cost_per_million_tokens_usd(3.0, bad)


# --- 02 decode floor ---------------------------------------------------------------------------------------


def test_bytes_per_weight_table_matches_the_library():
    for name, value in floor_ex.BYTES_PER_WEIGHT.items():
        assert floor_ex.bytes_per_weight(name) == rl.bytes_per_element(name)
        assert value == rl.bytes_per_element(name)
    assert floor_ex.bytes_per_weight("int4") == 0.5 + 2 / 128  # 4 bits + a 16-bit scale per 128 weights
    with pytest.raises(ValueError, match="unknown precision"):
        floor_ex.bytes_per_weight("fp7")


@settings(max_examples=100, deadline=None)
@given(
    st.floats(1e8, 2e12),
    st.sampled_from(list(floor_ex.BYTES_PER_WEIGHT)),
    st.floats(0.1, 20),
    st.integers(1, 16),
    st.floats(0.1, 10),
)
def test_decode_floor_agrees_with_the_library(params, precision, tb_per_s, gpus, slowdown):
    weights = floor_ex.weight_bytes(params, floor_ex.bytes_per_weight(precision))
    bandwidth = floor_ex.total_bandwidth_bytes_per_s(tb_per_s * 1e12, gpus)
    floor = floor_ex.decode_floor_s(weights, bandwidth)
    assert close(floor, rl.decode_floor_s(params * rl.bytes_per_element(precision), gpus * tb_per_s * 1e12))
    assert close(floor_ex.decode_ceiling_tokens_per_s(floor), 1 / floor)
    measured = floor * slowdown
    assert close(floor_ex.mbu(floor, measured), rl.mbu(weights, measured, bandwidth), 1e-9)


@pytest.mark.parametrize("model", DENSE)
def test_decode_floor_is_the_library_batch_1_step_for_real_models(model):
    gpus = np.array([1, 2, 4, 8])
    for gpu in GPUS:
        g = rl.get_gpu(gpu)
        for precision in ("bf16", "fp8", "int4"):
            if not supported(gpu, precision):
                continue
            s = rl.decode_step(
                model,
                gpu,
                batch=1,
                context_tokens=0,
                num_gpus=gpus,
                weight_precision=precision,
                on_overflow="mask",
            )
            # The card's "weights ÷ bandwidth" with the bytes one decode step really reads: the engine
            # gathers one row of the embedding table instead of reading it, and keeps the embedding and
            # LM head in BF16 under narrow formats.
            weights = float(rl.weight_bytes_read(model, precision, 1))
            for i, n in enumerate(gpus):
                if not s.fits[i]:
                    continue
                floor = floor_ex.decode_floor_s(
                    weights, floor_ex.total_bandwidth_bytes_per_s(g.memory_bandwidth_bytes_per_s, int(n))
                )
                assert close(floor, s.step_time_s[i]), (model, gpu, precision, n)
                assert close(floor_ex.decode_ceiling_tokens_per_s(floor), s.tokens_per_s_per_user[i])


def test_decode_floor_card_golden_values():
    # 16e9 / 3.35e12 = 4.776 ms; 70e9 / 6.7e12 = 10.448 ms; 10.448 / 14 = 0.746.
    assert round(floor_ex.decode_floor_s(16e9, 3.35e12) * 1e3, 1) == 4.8
    floor = floor_ex.decode_floor_s(70e9, floor_ex.total_bandwidth_bytes_per_s(3.35e12, 2))
    assert round(floor * 1e3, 1) == 10.4
    assert round(floor_ex.mbu(floor, 14e-3), 3) == 0.746


# --- 16 step time ---------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    st.floats(1e8, 1e12),
    st.integers(1, 2048),
    st.integers(0, 200_000),
    st.floats(0, 1e6),
    st.floats(1e11, 1e13),
    st.floats(1e8, 1e12),
    st.floats(1e13, 1e16),
)
def test_step_time_agrees_with_the_library(weights, batch, context, kv, bandwidth, params, peak):
    memory = step_ex.memory_time_s(step_ex.step_bytes(weights, batch, context, kv), bandwidth)
    assert close(memory, rl.batched_step_time_s(weights, batch, context, kv, bandwidth))
    compute = step_ex.compute_time_s(step_ex.decode_flops(batch, params), peak)
    assert close(compute, rl.compute_time_s(batch * 2 * params, peak))
    step = step_ex.step_time_s(weights, batch, context, kv, bandwidth, params, peak)
    assert close(
        step,
        rl.roofline_time_s(
            batch * 2 * params, weights + rl.kv_cache_bytes(batch, context, kv), peak, bandwidth
        ),
    )
    assert close(step_ex.tokens_per_s_per_user(step), 1 / step)
    assert close(step_ex.tokens_per_s_total(batch, step), batch / step)


@pytest.mark.parametrize("model", DENSE)
def test_step_time_matches_decode_step_for_real_models(model):
    """Same bytes as ``rl.decode_step``; fewer FLOPs (no attention term), so equal or shorter steps,
    exactly equal at zero context or wherever memory binds."""
    batch = np.array([1, 2, 8, 32, 128, 512, 2048])[:, None]
    context = np.array([0, 1000, 8192])[None, :]
    params = flops_parameters(model)
    for gpu in ("h100-sxm", "a100-80gb-sxm", "b200", "l4", "mi300x"):
        g = rl.get_gpu(gpu)
        for precision, num_gpus in (("bf16", 1), ("fp8", 2)):
            if not supported(gpu, precision):
                continue
            s = rl.decode_step(
                model,
                gpu,
                batch=batch,
                context_tokens=context,
                num_gpus=num_gpus,
                weight_precision=precision,
                on_overflow="mask",
            )
            for (i, j), fits in np.ndenumerate(s.fits):
                if not fits:
                    continue
                b, t = int(batch[i, 0]), int(context[0, j])
                ours = step_ex.step_time_s(
                    float(rl.weight_bytes_read(model, precision, b)),
                    b,
                    t,
                    rl.kv_bytes_per_token(model),
                    num_gpus * g.memory_bandwidth_bytes_per_s,
                    params,
                    num_gpus * rl.peak_flops_per_s(g, precision),
                )
                lib = s.step_time_s[i, j]
                assert ours <= lib * (1 + REL)
                if t == 0 or s.binding[i, j] == "memory":
                    assert close(ours, lib), (model, gpu, precision, b, t)


def test_step_time_card_golden_values():
    # (16e9 + 32 x 1000 x 128e3) / 3.35e12 = 20.096e9 / 3.35e12 = 5.999 ms; 1 / that = 166.7 tok/s per user;
    # 32 / that = 5,334 tok/s; batch 1 with no context is 16e9 / 3.35e12 = 4.776 ms.
    step = step_ex.step_time_s(16e9, 32, 1000, 128e3, 3.35e12, 8e9, 989e12)
    assert round(step * 1e3, 1) == 6.0
    assert round(step_ex.tokens_per_s_per_user(step)) == 167
    assert round(step_ex.tokens_per_s_total(32, step), -2) == 5300
    alone = step_ex.step_time_s(16e9, 1, 0, 128e3, 3.35e12, 8e9, 989e12)
    assert round(step_ex.tokens_per_s_total(32, step) / step_ex.tokens_per_s_total(1, alone)) == 25


# --- 28 KV cache ---------------------------------------------------------------------------------------

KV_PRECISIONS = list(kv_ex.BYTES_PER_ELEMENT)


@pytest.mark.parametrize("model", [m for m, s in rl.models().items() if not getattr(s, "kv_lora_rank", None)])
def test_kv_bytes_per_token_matches_the_library(model):
    m = rl.get_model(model)
    for precision in KV_PRECISIONS:
        ours = kv_ex.kv_bytes_per_token(m.layers, m.kv_heads, m.head_dim, rl.bytes_per_element(precision))
        assert ours == rl.kv_bytes_per_token(m, precision)
        mha = kv_ex.kv_bytes_per_token(
            m.layers, m.attention_heads, m.head_dim, rl.bytes_per_element(precision)
        )
        assert mha == rl.kv_bytes_per_token_mha(m, precision)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(DENSE),
    st.sampled_from(GPUS),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from(["bf16", "fp8", "int4"]),
    st.sampled_from(["bf16", "fp8"]),
    st.integers(1, 1_000_000),
    st.integers(0, 4096),
)
def test_kv_cache_and_max_batch_agree_with_the_library(
    model, gpu, gpus, weight_precision, kv_precision, context, batch
):
    m, g = rl.get_model(model), rl.get_gpu(gpu)
    assume(gpus <= m.kv_heads)  # more GPUs than KV heads copy the cache (kv_replicas), a later lesson
    per_token = kv_ex.kv_bytes_per_token(m.layers, m.kv_heads, m.head_dim, rl.bytes_per_element(kv_precision))
    assert kv_ex.kv_cache_bytes(batch, context, per_token) == rl.kv_cache_bytes(batch, context, per_token)
    most = kv_ex.max_batch_users(
        rl.weight_bytes(m, weight_precision), gpus * g.memory_bytes, context, per_token
    )
    # The exercise gives the card's answer: all of the GPUs' memory for weights and KV ("ideal").
    assert most == rl.max_batch(
        m, g, context, num_gpus=gpus, weight_precision=weight_precision, kv_precision=kv_precision,
        memory="ideal",
    )  # fmt: skip
    if most > 0:  # the answer is the edge: that many fit, one more does not
        kw = dict(num_gpus=gpus, weight_precision=weight_precision, kv_precision=kv_precision, memory="ideal")
        assert rl.fits(m, g, most, context, **kw) and not rl.fits(m, g, most + 1, context, **kw)


def test_kv_cache_card_golden_values():
    # 2 x 32 x 8 x 128 x 2 = 131,072 bytes; (80e9 - 16.06e9) / (4096 x 131,072) = 119.09 -> 119.
    assert kv_ex.kv_bytes_per_token(32, 8, 128, 2) == 131_072 == 128 * 1024
    assert kv_ex.max_batch_users(16.06e9, 80e9, 4096, 131_072) == 119
    assert kv_ex.max_batch_users(100e9, 80e9, 4096, 131_072) == 0  # the weights alone overflow
    assert round(kv_ex.kv_cache_bytes(64, 4096, 131_072) / 1e9) == 34  # the card's "about 34 GB"
    for bad in ((16e9, 80e9, 0, 131_072), (16e9, 80e9, 4096, 0)):
        with pytest.raises(ValueError):
            kv_ex.max_batch_users(*bad)


# --- 61 compute-bound -----------------------------------------------------------------------------------


def test_ridge_point_matches_the_library_for_every_gpu():
    for gpu in GPUS:
        g = rl.get_gpu(gpu)
        for precision, peak in g.dense_flops_per_s.items():
            ours = ridge_ex.ridge_point_flop_per_byte(peak, g.memory_bandwidth_bytes_per_s)
            assert close(ours, rl.ridge_point_flop_per_byte(peak, g.memory_bandwidth_bytes_per_s)), (
                gpu,
                precision,
            )


@settings(max_examples=100, deadline=None)
@given(
    st.floats(1e8, 1e12),
    st.sampled_from([0.515625, 1.0, 2.0, 4.0]),
    st.integers(0, 5000),
    st.floats(1e3, 1e6),
    st.floats(20, 2000),
    st.integers(1, 4096),
)
def test_compute_bound_batch_agrees_with_the_library(params, bytes_per_weight, context, kv, ridge, batch):
    weights = params * bytes_per_weight
    flops, moved = batch * 2.0 * params, weights + rl.kv_cache_bytes(batch, context, kv)
    ours = ridge_ex.decode_intensity_flop_per_byte(batch, params, weights, context, kv)
    assert close(ours, rl.arithmetic_intensity_flop_per_byte(flops, moved), 1e-9)

    def lib_intensity(b):
        return rl.arithmetic_intensity_flop_per_byte(
            b * 2.0 * params, weights + rl.kv_cache_bytes(b, context, kv)
        )

    flip = ridge_ex.compute_bound_batch(params, weights, context, kv, ridge)
    limit = ridge_ex.intensity_limit_flop_per_byte(params, context, kv)
    if flip is None:
        assert limit <= ridge * (1 + 1e-12)
        assert lib_intensity(10**12) < ridge  # even a trillion users stay below the ridge
    else:
        assert limit > ridge * (1 - 1e-12)
        assert lib_intensity(flip) >= ridge * (1 - 1e-12)
        if flip > 1:
            assert lib_intensity(flip - 1) < ridge * (1 + 1e-12)
    cut = ridge_ex.context_limit_tokens(params, kv, ridge)
    assert ridge_ex.compute_bound_batch(params, weights, math.floor(cut * 0.99), kv, ridge) is not None
    assert ridge_ex.compute_bound_batch(params, weights, math.ceil(cut * 1.01), kv, ridge) is None


@pytest.mark.parametrize("model", DENSE)
def test_flip_batch_is_where_decode_step_turns_compute_bound(model):
    """At zero context the library's FLOPs and bytes are exactly ours, so its binding must flip there."""
    params = flops_parameters(model)
    for gpu in GPUS:
        g = rl.get_gpu(gpu)
        for precision in ("bf16", "fp8", "int4"):
            if not supported(gpu, precision):
                continue
            ridge = ridge_ex.ridge_point_flop_per_byte(
                rl.peak_flops_per_s(g, precision), g.memory_bandwidth_bytes_per_s
            )
            # The weight bytes at one token; each extra user adds one embedding row (d values, a few KiB
            # against GBs), which can move the flip by at most one user.
            weights = float(rl.weight_bytes_read(model, precision, 1))
            flip = ridge_ex.compute_bound_batch(params, weights, 0, rl.kv_bytes_per_token(model), ridge)
            assert flip is not None and flip > 1
            lib = rl.compute_bound_batch(model, gpu, 0, weight_precision=precision)
            assert abs(lib - flip) <= 1, (model, gpu, precision, flip, lib)
            assert close(
                ridge_ex.decode_intensity_flop_per_byte(flip, params, weights, 0, 1.0),
                2 * params * flip / weights,
            )


def test_compute_bound_card_golden_values():
    ridge = ridge_ex.ridge_point_flop_per_byte(989e12, 3.35e12)
    assert round(ridge, 1) == 295.2  # 989 / 3.35
    assert ridge_ex.decode_intensity_flop_per_byte(32, 8e9, 16e9, 0, 131072) == 32.0  # BF16, no KV: = B
    assert ridge_ex.compute_bound_batch(8.03e9, 16.06e9, 0, 131072, ridge) == 296  # first integer > 295.2
    assert ridge_ex.compute_bound_batch(8.03e9, 16.06e9, 1000, 131072, ridge) is None  # limit 122.5 < ridge
    assert round(ridge_ex.context_limit_tokens(8.03e9, 131072, ridge)) == 415  # 16.06e9 / (295.2 x 131072)


# --- command lines ---------------------------------------------------------------------------------------

CLI_CASES = [
    # 3 / (200 x 3600) x 1e6 = 4.17; 3 / (4300 x 3600) x 1e6 = 0.194; 200 x 3600 = 720,000; 1e6 / 200 = 5,000.
    ("01_token_cost", [], ["$4.17", "$0.19", "720,000", "5,000", "21.5× cheaper"]),
    ("01_token_cost", ["1500", "--usd-per-gpu-hour", "2.69", "--gpus", "8"], ["$21.52 per hour", "$3.99"]),
    # 70e9 x 1 / (2 x 3.35e12) = 10.45 ms; 1 / that = 95.7 tok/s; 10.45 / 14 = 74.6 %.
    ("02_decode_floor", [], ["6.70 TB/s", "10.4 ms", "95.7 tokens/s", "MBU", "74.6%"]),
    # 8.03e9 x 2 / 3.35e12 = 4.79 ms -> 209 tok/s; no measurement given, so no MBU line.
    (
        "02_decode_floor",
        ["8.03e9", "--precision", "bf16", "--gpus", "1"],
        ["16.1 GB", "4.79 ms", "209 tokens/s"],
    ),
    (
        "02_decode_floor",
        ["--params", "8e9", "--precision", "bf16", "--gpus", "1", "--measured-ms", "2"],
        ["4.78 ms", "Faster than the floor"],
    ),
    # 0.2 + 0.3/3 + 0.5/2 = 0.55 -> 1.82x; ceiling 1 / 0.2 = 5x; the wrong answers: 3 + 2 = 5, 3 x 2 = 6.
    ("03_04_amdahl", [], ["0.550", "1.82×", "about 1.8×", "5.00×", "6.00×"]),
    ("03_04_amdahl", ["0.3:3"], ["0.800", "1.25×", "1.43×"]),
    ("03_04_amdahl", ["attention=30%:free", "0.5:2"], ["0.450", "2.22×"]),  # 0.2 + 0 + 0.25
    # 20.096e9 / 3.35e12 = 6.00 ms; 1 / 6.0 ms = 167; 32 / 6.0 ms = 5,334; vs batch 1 at 1,000 tokens = 25.7x.
    ("16_step_time", [], ["6.00", "167", "5,334", "25.7×", "memory"]),
    # Card Q6: (16e9 + 64 x 4096 x 128e3) / 3.35e12 = 14.79 ms; 64 / that = 4,327 tok/s.
    ("16_step_time", ["--batch", "64", "--context", "4096"], ["14.79", "4,327"]),
    # 2 x 32 x 8 x 128 x 2 = 131,072 B; 64 x 4096 x 131,072 = 34.4 GB; (80 - 16.06) / 0.537 = 119.
    ("28_kv_cache", [], ["131,072 bytes", "128 KiB", "34.4 GB", "fits", "119 users"]),
    ("28_kv_cache", ["--context", "8192"], ["59 users"]),  # 63.94e9 / (8192 x 131072) = 59.5
    ("28_kv_cache", ["--attention-heads", "32"], ["512 KiB", "4×"]),
    # 989 / 3.35 = 295.2; at T = 0 the flip is 296; past 16.06e9 / (295.2 x 131072) = 415 tokens, never.
    ("61_compute_bound", [], ["295.2", "296", "427", "never", "415 tokens"]),
]


@pytest.mark.parametrize(("name", "args", "expected"), CLI_CASES)
def test_command_line_prints_the_card_figures(name, args, expected, capsys):
    out = main_output(name, args, capsys)
    for text in expected:
        assert text in out, f"{text!r} missing from:\n{out}"


@pytest.mark.parametrize("name", NAMES)
def test_script_run_as_a_program_reproduces_the_card(name):
    result = run(EXERCISES / f"{name}.py")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    for text in next(expected for n, args, expected in CLI_CASES if n == name and not args):
        assert text in result.stdout


def test_decode_floor_prints_no_mbu_without_a_measurement(capsys):
    assert "MBU" not in main_output(
        "02_decode_floor", ["8.03e9", "--precision", "bf16", "--gpus", "1"], capsys
    )


BAD_ARGS = [
    ("03_04_amdahl", ["0.6:2", "0.5:3"], "add up to 1.1"),
    ("03_04_amdahl", ["0.3:0"], "above 0"),
    ("03_04_amdahl", ["0.3"], "FRACTION:SPEEDUP"),
    ("03_04_amdahl", ["1.5:2"], "between 0 and 1"),
    ("01_token_cost", ["0"], "above 0"),
    ("01_token_cost", ["fast"], "expected a number"),
    ("01_token_cost", ["--gpus", "0"], "at least 1"),
    ("02_decode_floor", ["--precision", "fp7"], "unknown precision"),
    ("02_decode_floor", ["--measured-ms", "-3"], "above 0"),
    ("02_decode_floor", ["8e9", "--params", "9e9"], "once"),
    ("16_step_time", ["--batch", "0"], "at least 1"),
    ("16_step_time", ["--bandwidth-tb-s", "abc"], "expected a number"),
    ("28_kv_cache", ["--context", "0"], "at least 1"),
    ("28_kv_cache", ["--kv-precision", "fp3"], "unknown KV precision"),
    ("61_compute_bound", ["--bandwidth-tb-s", "0"], "above 0"),
    ("61_compute_bound", ["--context", "-5"], "at least 0"),
]


def _first_bad_args(name):
    return next(args for n, args, _ in BAD_ARGS if n == name)


@pytest.mark.parametrize(("name", "args", "message"), BAD_ARGS)
def test_bad_arguments_are_refused_with_a_message(name, args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:  # argparse's clean exit, not some other exception
        WORKED[name].main(list(args))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and message in err, err


@pytest.mark.parametrize("name", NAMES)
def test_bad_argument_to_the_program_ends_without_a_traceback(name):
    args = _first_bad_args(name)
    message = next(m for n, a, m in BAD_ARGS if n == name and a == args)
    result = run(EXERCISES / f"{name}.py", *args)
    assert result.returncode == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr
    assert "error:" in result.stderr and message in result.stderr, result.stderr


@pytest.mark.parametrize("name", NAMES)
def test_worked_self_check_passes(name):
    result = run(EXERCISES / f"{name}.py", "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("  ok: ") == len(WORKED[name].CHECKS)
    assert "wrong" not in result.stdout and "still to do" not in result.stdout


@pytest.mark.parametrize("name", NAMES)
def test_worked_doctests_pass(name):
    result = doctest.testmod(WORKED[name], optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# --- starters and the self-check ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_unfinished_starter_lists_what_is_left_and_exits_1(name):
    result = run(STARTERS / f"{name}.py")
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    for function in WORKED[name].PHYSICS:
        assert f"still to do: {function} (" in result.stdout
    assert "not finished" in result.stderr


@pytest.mark.parametrize("name", NAMES)
def test_unfinished_starter_check_flag_also_exits_1(name, capsys):
    starter = _load(STARTERS / f"{name}.py", f"test_starter_{name}")
    assert SELFCHECK.run_starter(STARTERS / f"{name}.py", vars(starter), argv=["--check"]) == 1
    captured = capsys.readouterr()
    assert "still to do" in captured.out and "not finished" in captured.err


@pytest.mark.parametrize("name", NAMES)
def test_starter_has_the_worked_interface_with_todo_bodies(name):
    starter = _load(STARTERS / f"{name}.py", f"test_starter_{name}")
    worked = WORKED[name]
    for function in worked.PHYSICS:
        assert list(inspect.signature(getattr(starter, function)).parameters) == list(
            inspect.signature(getattr(worked, function)).parameters
        ), function
    # every stub refuses with a hint, on the card's own arguments
    for function, args, _, _ in worked.CHECKS:
        with pytest.raises(NotImplementedError, match="TODO: .{10,}"):
            getattr(starter, function)(*args)


@pytest.mark.parametrize("name", NAMES)
def test_finished_starter_passes_its_checks_and_runs_the_calculator(name, capsys):
    starter = _load(STARTERS / f"{name}.py", f"test_starter_{name}")
    namespace = dict(vars(starter))
    namespace.update({f: getattr(WORKED[name], f) for f in WORKED[name].PHYSICS})
    assert SELFCHECK.run_starter(STARTERS / f"{name}.py", namespace, argv=[]) == 0
    out = capsys.readouterr().out
    assert "Every check passes" in out
    first_default = next(expected for n, args, expected in CLI_CASES if n == name and not args)
    for text in first_default:
        assert text in out


@pytest.mark.parametrize("name", NAMES)
def test_self_check_catches_a_wrong_or_crashing_function(name, capsys):
    worked = WORKED[name]
    target, args, expected, _ = next(
        row for row in worked.CHECKS if isinstance(row[2], float) and row[2] not in (0.0, math.inf)
    )
    original = getattr(worked, target)
    namespace = dict(vars(worked))
    namespace[target] = lambda *a: original(*a) * 10  # a slipped power of ten
    assert SELFCHECK.run_checks(namespace, worked.CHECKS) is False
    assert re.search(rf"wrong: {target}\(.*\): got .*, expected about", capsys.readouterr().out)

    def crash(*a):
        raise ZeroDivisionError("oops")

    namespace[target] = crash
    assert SELFCHECK.run_checks(namespace, worked.CHECKS) is False
    assert "raised ZeroDivisionError: oops" in capsys.readouterr().out


def test_self_check_tolerance_admits_card_rounding_only():
    agrees = SELFCHECK._agrees
    assert agrees(4.1667, 4.17) and agrees(0.1938, 0.194)  # the card's rounding passes
    assert not agrees(4.6, 4.17) and not agrees(0.417, 4.17)  # a 10 % slip or a power of ten does not
    assert agrees(119, 119) and not agrees(120, 119) and not agrees(119.5, 119)
    assert agrees(None, None) and not agrees(0, None) and not agrees(None, 296)
    assert agrees(math.inf, math.inf) and not agrees(1e300, math.inf)
    assert not agrees("4.17", 4.17) and not agrees(True, 1.0)


# --- packaging: each file runs on its own under `uv run` ---------------------------------------------------

PEP723 = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
ALL_SCRIPTS = [EXERCISES / f"{n}.py" for n in NAMES] + [STARTERS / f"{n}.py" for n in NAMES]


@pytest.mark.parametrize("path", ALL_SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_inline_metadata_and_standard_library_only(path):
    source = path.read_text(encoding="utf-8")
    blocks = [m for m in PEP723.finditer(source) if m.group("type") == "script"]
    assert len(blocks) == 1 and source.startswith("# /// script")
    content = "".join(
        line[2:] if line.startswith("# ") else line[1:]
        for line in blocks[0].group("content").splitlines(keepends=True)
    )
    meta = tomllib.loads(content)
    assert meta == {"requires-python": ">=3.11", "dependencies": []}
    # With no dependencies declared, every import must come from the standard library (or the shared
    # self-check next door).
    for node in ast.walk(ast.parse(source)):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module]
            if isinstance(node, ast.ImportFrom) and node.level == 0
            else []
        )
        for module in names:
            top = module.split(".")[0]
            assert top in sys.stdlib_module_names or top in ("__future__", "_selfcheck"), (path.name, module)
