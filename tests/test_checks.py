"""Argument checks: public functions reject bad values (a fraction for a whole number, a value past a
bound, NaN, text, a wrong option) with an ``InvalidConfigurationError`` that names the parameter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import roofline as rl
from roofline.checks import checked, one_of
from roofline.errors import InvalidConfigurationError

M, G = "llama-3-8b", "h100-sxm"

# (call with one bad argument, the parameter it names): each through the real public function.
BAD_CALLS = [
    (lambda: rl.decode_step(M, G, batch=2.5), "batch"),
    (lambda: rl.decode_step(M, G, batch=0), "batch"),
    (lambda: rl.decode_step(M, G, batch=[1, 2, 0]), "batch"),
    (lambda: rl.decode_step(M, G, context_tokens=float("nan")), "context_tokens"),
    (lambda: rl.decode_step(M, G, num_gpus=1.5), "num_gpus"),
    (lambda: rl.decode_step(M, G, on_overflow="drop"), "on_overflow"),
    (lambda: rl.forward_step(M, G, parallelism="tensr"), "parallelism"),
    (lambda: rl.forward_step(M, G, logits="first"), "logits"),
    (lambda: rl.forward_step(M, G, new_tokens=0), "new_tokens"),
    (lambda: rl.forward_step(M, G, launch_overhead_s=-1), "launch_overhead_s"),
    (lambda: rl.prefill(M, G, prompt_tokens="lots"), "prompt_tokens"),
    (lambda: rl.prefill(M, G, 100, batch=1.5), "batch"),
    (lambda: rl.speculative_step(M, G, draft_tokens=1.5, acceptance=0.5, draft_cost_ratio=0.1),
     "draft_tokens"),
    (lambda: rl.speculative_step(M, G, draft_tokens=2, acceptance=1.5, draft_cost_ratio=0.1), "acceptance"),
    (lambda: rl.expected_tokens_per_step(-0.1, 4), "acceptance"),
    (lambda: rl.memory_available_bytes(G, 0.5), "num_gpus"),
    (lambda: rl.memory_available_bytes(G, memory="cloud"), "memory"),
    (lambda: rl.allreduce_time_s(1e6, 2, 0), "link_bytes_per_s"),
    (lambda: rl.collective_latency_s(2, algorithm="star"), "algorithm"),
    (lambda: rl.decode_floor_s(16e9, 0), "bandwidth_bytes_per_s"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "param"), BAD_CALLS, ids=[f"{i}-{p}" for i, (_, p) in enumerate(BAD_CALLS)])
def test_public_functions_reject_bad_values_naming_the_parameter(call, param):
    with pytest.raises(InvalidConfigurationError) as err:
        call()
    assert str(err.value).startswith(f"{param} must be "), str(err.value)
    assert "got " in str(err.value)


def test_messages_name_the_rule_and_the_first_bad_element_of_an_array():
    with pytest.raises(
        InvalidConfigurationError, match=r"batch must be a whole number >= 1, got 2.5 \(at index 2"
    ):
        checked(np.array([1, 2, 2.5, 0]), "batch", minimum=1, whole=True)
    with pytest.raises(InvalidConfigurationError, match=r"acceptance must be >= 0 and <= 1, got 1.5$"):
        checked(1.5, "acceptance", minimum=0, maximum=1)
    with pytest.raises(InvalidConfigurationError, match=r"Did you mean 'pipeline'\?"):
        one_of("pipelin", "parallelism", ("tensor", "pipeline"))
    with pytest.raises(InvalidConfigurationError, match="one whole number"):
        checked([1, 2], "num_gpus", minimum=1, whole=True, scalar=True)
    assert checked(None, "x", minimum=0, allow_none=True) is None


@given(st.integers(-1000, 1000), st.integers(-5, 5), st.floats(0.01, 0.99))
def test_whole_numbers_at_or_above_the_minimum_pass_and_fractions_never_do(x, least, fraction):
    if x >= least:
        assert checked(x, "n", minimum=least, whole=True) == x
        assert checked(float(x), "n", minimum=least, whole=True) == x  # 2.0 is a whole number
    else:
        with pytest.raises(InvalidConfigurationError):
            checked(x, "n", minimum=least, whole=True)
    with pytest.raises(InvalidConfigurationError, match="whole number"):
        checked(x + fraction, "n", minimum=least, whole=True)
    with pytest.raises(InvalidConfigurationError, match="whole number"):
        checked([max(x, least), x + fraction], "n", minimum=least, whole=True)  # arrays: every element


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_scalars_and_arrays_get_the_same_verdict(x):
    def verdict(value):
        try:
            checked(value, "x", above=0, maximum=1)
        except InvalidConfigurationError:
            return False
        return True

    assert verdict(x) == verdict(np.array([x])) == (0 < x <= 1)
