"""Lesson 09: GPU-util is a duty cycle. Expected values derived by hand in the comments."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import roofline as rl
from roofline.lessons.gpu_util.lab import utilization_explorer
from roofline.lessons.gpu_util.numbers import (
    busy_time_fraction,
    decode_timeline,
    gpu_util,
    sample_busy,
    timeline_metrics,
)
from roofline.scenario import Scenario


def test_sampler_by_hand():
    # kernels [0, 0.5) and [2.5, 2.6); windows [0,1) [1,2) [2,3) [3,4): busy, idle, busy, idle
    w, busy = sample_busy([0.0, 2.5], [0.5, 2.6], 1.0, t_end_s=4.0)
    assert w.tolist() == [0, 1, 2, 3] and busy.tolist() == [True, False, True, False]
    assert gpu_util([0.0, 2.5], [0.5, 2.6], 1.0, t_end_s=4.0) == 0.5


def test_tiny_kernels_read_as_full_util():
    # a 1 us kernel in every 1 ms window: "100 %" while kernels run 0.1 % of the time
    starts = np.arange(100) * 1e-3
    ends = starts + 1e-6
    assert gpu_util(starts, ends, 1e-3, t_end_s=0.1) == 1.0
    assert busy_time_fraction(starts, ends, t_end_s=0.1) == pytest.approx(0.001)


def test_busy_time_merges_overlaps():
    # [0, 0.5) and [0.2, 0.4) overlap: union 0.5; plus 0.1 -> 0.6 of 4
    assert busy_time_fraction([0.0, 0.2, 2.5], [0.5, 0.4, 2.6], t_end_s=4.0) == pytest.approx(0.15)


def test_card_q5():
    t = decode_timeline(Scenario(context_tokens=0), step_time_s=6e-3, n_steps=5)
    m = timeline_metrics(t, 1e-3)
    assert m.gpu_util == 1.0 and m.busy_time_fraction == pytest.approx(1.0)
    # Bytes a step reads: every weight but the input embedding, of which one row is gathered:
    # (8,030,261,248 - 128,256 x 4,096 + 4,096) x 2 = 15,009,857,536 (the card rounds to 16 GB: MBU 0.8)
    assert m.mbu == pytest.approx(15_009_857_536 / (6e-3 * 3.35e12))  # 0.747
    # FLOPs: 2 per matmul weight; the embedding lookup does none: 2 x 7,504,924,672
    assert m.mfu == pytest.approx(2 * 7_504_924_672 / (6e-3 * 989e12))  # 0.0025
    assert np.allclose(m.kernel_mbu, m.mbu)


def test_default_step_is_a_real_engines_step():
    # By default a step lasts what a good engine takes (the readouts' vLLM step), never less than the floor
    # 15,009,857,536 B ÷ 3.35e12 B/s = 4.48 ms; engine="ideal" gives the floor itself.
    from roofline.engines import StepTimer, decode_step_times

    t = decode_timeline(Scenario(context_tokens=0))
    assert t.step_time_s == pytest.approx(
        float(decode_step_times(StepTimer("vllm", "llama-3-8b", "h100-sxm"))["total"])
    )
    assert t.step_time_s > 15_009_857_536 / 3.35e12
    floor = decode_timeline(Scenario(context_tokens=0), engine="ideal")
    assert floor.step_time_s == pytest.approx(15_009_857_536 / 3.35e12)


def test_gaps_lower_util_batch_raises_mfu():
    gap = timeline_metrics(decode_timeline(Scenario(context_tokens=0), step_time_s=6e-3, gap_s=6e-3), 1e-3)
    assert gap.gpu_util == pytest.approx(0.5)  # 6 busy windows of every 12
    b1 = timeline_metrics(decode_timeline(Scenario(batch=1, context_tokens=0), engine="ideal"), 1e-3)
    b64 = timeline_metrics(decode_timeline(Scenario(batch=64, context_tokens=0), engine="ideal"), 1e-3)
    assert b1.gpu_util == b64.gpu_util == 1.0
    # 64x the FLOPs in (almost) the same step: memory-bound at T=0, the step only gathers 63 more embedding
    # rows (63 x 4,096 x 2 bytes = 516 KB of 15 GB)
    assert b64.mfu == pytest.approx(64 * b1.mfu * 15_009_857_536 / (15_009_857_536 + 63 * 4096 * 2))


def test_bad_input():
    with pytest.raises(rl.InvalidConfigurationError):
        gpu_util([1.0], [0.5], 0.1)
    with pytest.raises(rl.InvalidConfigurationError):
        gpu_util([0.0], [0.5], 0.0)
    with pytest.raises(rl.UnknownNameError):
        decode_timeline(Scenario(context_tokens=0), engine="vlm")


@given(
    # durations of a microsecond and up: the sampler ignores overlaps below 1e-9 of a window on purpose
    st.lists(
        st.tuples(st.floats(0, 9.9), st.one_of(st.just(0.0), st.floats(1e-6, 0.5))), min_size=1, max_size=30
    ),
    st.sampled_from([0.1, 0.5, 1.0, 2.0]),
)
def test_util_never_below_busy_time(kernels, window):
    starts = np.array([a for a, _ in kernels])
    ends = starts + np.array([d for _, d in kernels])
    u = gpu_util(starts, ends, window, t_end_s=12.0)  # windows tile 12 s exactly
    f = busy_time_fraction(starts, ends, t_end_s=12.0)
    assert 0 <= f <= u + 1e-12 <= 1 + 1e-12


def test_explorer():
    ex = utilization_explorer()
    assert "100%" in ex.readout.value
    ex.set(gap_ms=6.0)
    assert "GPU-util" in ex.readout.value and "100%" not in ex.readout.value
