"""Invariants over random valid configurations (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl

GPUS = list(rl.gpus())
MODELS = list(rl.models())


@st.composite
def configs(draw):
    gpu = rl.get_gpu(draw(st.sampled_from(GPUS)))
    model = draw(st.sampled_from(MODELS))
    precision = draw(
        st.sampled_from(
            [
                p
                for p in ("fp32", "bf16", "fp8", "int8", "int4", "fp4", "mxfp4-experts", "gguf-q4_k_m")
                if rl.get_precision(p).compute in gpu.dense_flops_per_s
            ]
        )
    )
    kv = draw(st.sampled_from(["bf16", "fp8"]))
    num_gpus = draw(st.sampled_from([1, 2, 4, 8]))
    batch = draw(st.integers(1, 512))
    context = draw(st.integers(0, 131_072))
    return dict(
        model=model,
        gpu=gpu,
        num_gpus=num_gpus,
        weight_precision=precision,
        kv_precision=kv,
        batch=batch,
        context_tokens=context,
    )


def step(cfg, **changes):
    return rl.decode_step(**{**cfg, **changes, "on_overflow": "mask"})


@settings(max_examples=200, deadline=None)
@given(configs())
def test_step_is_finite_and_bounded_by_its_parts(cfg):
    s = step(cfg)
    if not s.fits:
        assert np.isnan(s.step_time_s)
        return
    for value in (s.step_time_s, s.tokens_per_s_total, s.tokens_per_s_per_user, s.bytes_read, s.flops):
        assert np.isfinite(value) and value > 0
    assert s.step_time_s >= s.memory_time_s and s.step_time_s >= s.compute_time_s
    assert s.tokens_per_s_total == np.float64(s.batch) / s.step_time_s


@settings(max_examples=150, deadline=None)
@given(configs(), st.integers(1, 64), st.integers(1, 8192))
def test_more_users_or_more_context_never_shortens_a_step(cfg, extra_batch, extra_context):
    s = step(cfg)
    bigger_batch = step(cfg, batch=cfg["batch"] + extra_batch)
    longer = step(cfg, context_tokens=cfg["context_tokens"] + extra_context)
    if bigger_batch.fits:
        assert bigger_batch.step_time_s >= s.step_time_s
        assert bigger_batch.tokens_per_s_per_user <= s.tokens_per_s_per_user
        assert (
            bigger_batch.tokens_per_s_total >= s.tokens_per_s_total * (1 - 1e-12)
            or bigger_batch.binding == "compute"
        )
    if longer.fits:
        assert longer.step_time_s >= s.step_time_s


@settings(max_examples=100, deadline=None)
@given(configs())
def test_ideal_tensor_parallel_divides_memory_time_by_g(cfg):
    one = step(cfg, num_gpus=1)
    many = step(cfg)
    # Same weight bytes over G times the bandwidth; the KV too, unless G exceeds the KV heads (or the model
    # uses MLA), where every extra copy of the replicated cache is read as well.
    from roofline.physics.parallel import kv_replicas

    copies = float(kv_replicas(cfg["model"], cfg["num_gpus"]))
    assert np.isclose(many.weight_bytes_read, one.weight_bytes_read)
    assert np.isclose(many.kv_bytes_read, one.kv_bytes_read * copies)
    if one.fits and copies == 1:
        assert np.isclose(many.memory_time_s, one.memory_time_s / cfg["num_gpus"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 0.3), st.floats(1, 100)), min_size=1, max_size=3))
def test_amdahl_speedup_between_one_and_the_ceiling(parts):
    fractions = [p for p, _ in parts]
    speedups = [s for _, s in parts]
    speedup = rl.amdahl_speedup(fractions, speedups)
    assert 1 - 1e-12 <= speedup <= rl.amdahl_ceiling(fractions) * (1 + 1e-12)
    assert speedup <= max(speedups) + 1e-9  # never better than the best single part's speedup


@settings(max_examples=100, deadline=None)
@given(st.floats(0.01, 50), st.floats(1, 1e5))
def test_cost_times_throughput_is_the_hourly_price(usd, tps):
    cost = rl.cost_per_million_tokens_usd(usd, tps)
    assert np.isclose(cost * tps * 3600 / 1e6, usd)


# ---------------------------------------------------------------- architecture invariants
@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(MODELS), t=st.integers(0, 200_000), dt=st.integers(0, 10_000))
def test_kv_per_sequence_grows_with_context_and_never_beats_the_unwindowed_cache(model, t, dt):
    from roofline.physics.architecture import sequence_kv_bytes

    k = rl.kv_bytes_per_token(model)
    assert sequence_kv_bytes(model, t) <= sequence_kv_bytes(model, t + dt) <= (t + dt) * k
    # Pairs attention scores never exceed the full-attention count n*T + n(n-1)/2
    from roofline.physics.architecture import attention_pairs

    n = 1 + dt % 64
    assert attention_pairs(model, t, n) <= n * t + n * (n - 1) / 2 + 1e-6


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    fmt=st.sampled_from(["bf16", "fp8", "int4", "awq-int4", "mxfp4-experts", "gguf-q4_k_m", "nvfp4"]),
    tokens=st.integers(1, 100_000),
)
def test_a_step_never_reads_more_than_is_stored_plus_its_rows(model, fmt, tokens):
    m = rl.get_model(model)
    read = float(rl.weight_bytes_read(model, fmt, tokens))
    rows = min(tokens, m.vocab_size) * m.hidden_size * 4  # gathered embedding rows, at most 4 bytes each
    assert 0 < read <= rl.weight_bytes(model, fmt) + rows
    assert rl.active_parameter_count(model) <= rl.parameter_count(model)
