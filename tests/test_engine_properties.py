"""Invariants of the step engine over every model, GPU, precision and GPU count.

Each property is physics a learner relies on: more context never makes a step faster; more users never
lower total throughput while they fit; a longer prompt never prefills faster; a configuration that fits
still fits with fewer users or a shorter context. And a NaN time always comes with its flag.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import roofline as rl

MODELS = sorted(rl.models())
GPUS = sorted(rl.gpus())
PRECISIONS = ["bf16", "fp8", "int8", "int4"]


def _supported(gpu, precision):
    try:
        rl.peak_flops_per_s(rl.get_gpu(gpu), precision)
    except rl.RooflineError:
        return False
    return True


configs = st.tuples(
    st.sampled_from(MODELS), st.sampled_from(GPUS), st.sampled_from(PRECISIONS), st.sampled_from([1, 2, 4, 8])
).filter(lambda c: _supported(c[1], c[2]))


@given(configs, st.integers(1, 256))
def test_step_time_never_falls_as_context_grows(config, batch):
    model, gpu, precision, gpus = config
    window = rl.get_model(model).max_context_tokens
    contexts = np.unique(np.linspace(0, window, 40).round())
    s = rl.decode_step(
        model, gpu, batch, contexts, num_gpus=gpus, weight_precision=precision, on_overflow="mask"
    )
    t = np.asarray(s.step_time_s)[np.asarray(s.fits)]
    assert np.all(np.diff(t) >= -1e-15 * t[:-1])


@given(configs, st.integers(0, 8192))
def test_total_throughput_never_falls_as_batch_grows_while_it_fits(config, context):
    model, gpu, precision, gpus = config
    context = min(context, rl.get_model(model).max_context_tokens)
    batches = np.unique(np.geomspace(1, 4096, 60).round())
    s = rl.decode_step(
        model, gpu, batches, context, num_gpus=gpus, weight_precision=precision, on_overflow="mask"
    )
    fits = np.asarray(s.fits)
    total = np.asarray(s.tokens_per_s_total)[fits]
    assert np.all(np.diff(total) >= -1e-9 * total[:-1])
    # fitting is a prefix: once a batch does not fit, no larger batch fits
    assert not np.any(np.diff(fits.astype(int)) > 0)


@given(configs)
def test_prefill_never_faster_for_a_longer_prompt(config):
    model, gpu, precision, gpus = config
    window = rl.get_model(model).max_context_tokens
    prompts = np.unique(np.geomspace(1, window, 50).round())
    p = rl.prefill(model, gpu, prompts, num_gpus=gpus, weight_precision=precision, on_overflow="mask")
    t = np.asarray(p.step_time_s)[np.asarray(p.fits)]
    assert np.all(np.diff(t) >= -1e-15 * t[:-1])


@given(configs, st.integers(1, 4096), st.integers(0, 131072))
def test_fit_is_monotone_in_batch_and_context(config, batch, context):
    model, gpu, precision, gpus = config
    kw = dict(num_gpus=gpus, weight_precision=precision)
    if rl.fits(model, gpu, batch, context, **kw):
        assert rl.fits(model, gpu, max(batch - 1, 1), context, **kw)
        assert rl.fits(model, gpu, batch, context // 2, **kw)
    else:
        assert not rl.fits(model, gpu, batch + 1, context, **kw)
        assert not rl.fits(model, gpu, batch, context + 1, **kw)


@given(configs, st.integers(1, 4096), st.integers(0, 200_000))
def test_a_missing_time_always_comes_with_its_flag(config, batch, context):
    model, gpu, precision, gpus = config
    s = rl.decode_step(
        model, gpu, batch, context, num_gpus=gpus, weight_precision=precision, on_overflow="mask"
    )
    assert np.isfinite(s.step_time_s) == bool(s.fits)
    assert (s.binding == "does not fit") == (not s.fits)


def test_an_engines_prefill_and_ttft_never_fall_as_the_prompt_grows():
    """Achievable prefill (and a batch's TTFT) for prompts of 1 to 24 tokens on every engine: a prompt of
    one token is a prefill like a longer one (the prefill attention kernel), so time never falls as the
    prompt grows, on GPUs whose decode attention kernel costs more than the prefill one (A100, L4) too."""
    for engine in rl.engines.engine_ids():
        for model, gpu, gpus in [
            ("llama-3.2-1b", "a100-40gb", 8),
            ("llama-3-8b", "l4", 1),
            ("llama-3-8b", "h100-sxm", 2),
        ]:
            timer = rl.engines.StepTimer(engine, model, gpu, num_gpus=gpus)
            prefill = [rl.engines.prefill_times(timer, p)["total"] for p in range(1, 25)]
            ttft = [rl.engines.generate(timer, 4, p, 1).achievable.ttft_s for p in range(1, 25)]
            for name, t in (("prefill", prefill), ("ttft", ttft)):
                assert np.all(np.diff(t) >= -1e-12 * np.asarray(t[:-1])), (engine, model, gpu, name, t[:3])
