"""Lesson 02's batch-1 ceiling table: hand-derived cells, the does-not-fit and unsupported masks, and
agreement with the general decode-step model."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.lessons.decode_floor.lab import CeilingHeatmap, ceiling_readout
from roofline.lessons.decode_floor.numbers import ceiling_table, decode_ceiling_tokens_per_s
from roofline.scenario import Scenario

N_8B = rl.parameter_count("llama-3-8b")  # 8,030,261,248 parameters (architecture)
N_70B = rl.parameter_count("llama-3-70b")  # 70,553,706,496
H100_BW = 3.35e12
H100_MEMORY = 80 * 2**30  # "80 GB" of HBM is 80 GiB = 85.9e9 bytes
# A batch-1 step reads every weight once, except the input embedding: a lookup gathers one row (d values)
# of the V x d table. Llama 3 8B: V = 128,256, d = 4,096 -> 8,030,261,248 - 525,336,576 + 4,096 parameters.
READ_8B = N_8B - 128_256 * 4096 + 4096  # 7,504,928,768 parameters read per batch-1 step
READ_70B = N_70B - 128_256 * 8192 + 8192  # 69,503,041,536
# A narrow weight format quantizes the blocks' matmul weights and keeps the LM head (V x d), the norms and
# the embedding row in BF16, as real checkpoints do. Llama 3 8B's 16-bit part: the head 128,256 x 4,096 =
# 525,336,576, the norms (2 x 32 + 1) x 4,096 = 266,240 and one embedding row 4,096 parameters.
HEAD_8B = 128_256 * 4096 + 65 * 4096 + 4096  # 525,606,912 parameters kept in 16 bits
BODY_8B = READ_8B - HEAD_8B  # 6,979,321,856 matmul weights of the 32 blocks
HEAD_70B = 128_256 * 8192 + 161 * 8192 + 8192  # head + (2 x 80 + 1) norms + one row: 1,052,082,176
BODY_70B = READ_70B - HEAD_70B


def test_ceiling_is_bandwidth_over_bytes():
    # 3.35e12 / 16e9 = 209.375 tokens/s: the card's "≈ 200"
    assert decode_ceiling_tokens_per_s(16e9, H100_BW) == pytest.approx(209.375)
    # the ceiling is exactly 1 / the library's floor
    assert decode_ceiling_tokens_per_s(70e9, 2 * H100_BW) == pytest.approx(
        1 / rl.decode_floor_s(70e9, 6.7e12)
    )


def test_ceiling_broadcasts_and_rejects_bad_input():
    got = decode_ceiling_tokens_per_s(np.array([[16e9], [8e9]]), np.array([3.35e12, 6.7e12]))
    # rows: 16 GB, 8 GB; columns: one and two H100s -> 209.4, 418.75 / 418.75, 837.5
    assert got.shape == (2, 2)
    np.testing.assert_allclose(got, [[209.375, 418.75], [418.75, 837.5]])
    for bad in (0, -1, float("nan")):
        with pytest.raises(rl.InvalidConfigurationError):
            decode_ceiling_tokens_per_s(bad, H100_BW)
    with pytest.raises(rl.InvalidConfigurationError):
        decode_ceiling_tokens_per_s(16e9, 0)


def test_table_cells_match_hand_arithmetic():
    t = ceiling_table("llama-3-8b", ["h100-sxm", "a100-80gb-sxm"], ["bf16", "fp8", "int4"])
    assert t.ceiling_tokens_per_s.shape == (2, 3)
    # H100, BF16: 7.505e9 x 2 bytes = 15.01 GB; 15.01e9 / 3.35e12 = 4.481 ms (the card's 16 GB: 4.8 ms)
    assert t.floor("h100-sxm", "bf16") == pytest.approx(READ_8B * 2 / 3.35e12)
    assert round(t.floor("h100-sxm", "bf16") * 1e3, 1) == 4.5
    # FP8 halves the blocks' bytes but not the 16-bit head: 6.979e9 x 1 + 0.526e9 x 2 = 8.031e9 bytes,
    # 3.35e12 / 8.031e9 = 417 tokens/s: 1.87x BF16, not 2x
    assert t.ceiling("h100-sxm", "fp8") == pytest.approx(3.35e12 / (BODY_8B + 2 * HEAD_8B))
    assert round(t.ceiling("h100-sxm", "fp8")) == 417
    # INT4 with a 16-bit scale per 128 weights: 0.515625 bytes -> 6.979e9 x 0.515625 + 1.051e9 = 4.650e9
    # bytes, 3.35e12 / 4.650e9 = 720 tokens/s (3.23x BF16, not 3.9x)
    assert t.ceiling("h100-sxm", "int4") == pytest.approx(3.35e12 / (BODY_8B * 0.515625 + 2 * HEAD_8B))
    assert round(t.ceiling("h100-sxm", "int4")) == 720
    # A100 80 GB has no FP8 math: no ceiling, and the status says why
    assert t.status("a100-80gb-sxm", "fp8") == "unsupported"
    assert math.isnan(t.ceiling("a100-80gb-sxm", "fp8"))
    # A100 80 GB, BF16: 2.039e12 / 15.01e9 = 136 tokens/s
    assert round(t.ceiling("a100-80gb-sxm", "bf16")) == 136


def test_does_not_fit_cells_have_no_ceiling():
    # 70B in BF16 is 141.1 GB: not in one 80 GiB (85.9 GB) H100, but in two (171.8 GB)
    one = ceiling_table("llama-3-70b", ["h100-sxm"], ["bf16", "fp8"], num_gpus=1)
    assert one.status("h100-sxm", "bf16") == "does not fit" and math.isnan(one.ceiling("h100-sxm", "bf16"))
    assert one.status("h100-sxm", "fp8") == "ok"  # 70.6 GB fits in 85.9 GB
    two = ceiling_table("llama-3-70b", ["h100-sxm"], ["bf16", "fp8"], num_gpus=2)
    assert two.status("h100-sxm", "bf16") == "ok"
    # the card's follow-up in the FP8 format: 68.45e9 x 1 + 1.052e9 x 2 = 70.55e9 bytes read / 6.7e12 =
    # 10.53 ms (the card's round 70 GB: 10.4)
    assert two.floor("h100-sxm", "fp8") == pytest.approx((BODY_70B + 2 * HEAD_70B) / 6.7e12)
    assert round(two.floor("h100-sxm", "fp8") * 1e3, 1) == 10.5
    assert two.memory_capacity_bytes.tolist() == [2 * H100_MEMORY]


def test_moe_reads_active_experts_but_must_store_all():
    t = ceiling_table("mixtral-8x7b", ["h100-sxm"], ["bf16", "fp8"])
    # 46.7 B parameters x 2 bytes = 93 GB > 80 GB: BF16 does not fit, although a step reads only ~26 GB
    assert t.status("h100-sxm", "bf16") == "does not fit"
    # a batch-1 token reads the shared part plus 2 of 8 experts: 25.9 GB of the 93.4 GB stored (28%)
    assert t.weight_bytes_read[0] < 0.3 * t.weight_bytes_stored[0]
    assert t.weight_bytes_read[0] == pytest.approx(float(rl.weight_bytes_read("mixtral-8x7b", "bf16", 1)))
    # FP8: 46.7 GB fits; the step reads ~12.9 GB -> 3.35e12 / 12.9e9 ≈ 260 tokens/s
    assert 250 < t.ceiling("h100-sxm", "fp8") < 270


def test_default_table_covers_every_gpu_and_precision():
    t = ceiling_table("llama-3-8b")
    assert t.gpu_ids == tuple(rl.gpus()) and t.precisions == tuple(rl.PRECISIONS)
    assert t.ceiling_tokens_per_s.shape == (len(rl.gpus()), len(rl.PRECISIONS))
    # a cell has a number exactly where the format is supported and the weights fit
    assert np.array_equal(np.isfinite(t.ceiling_tokens_per_s), t.supported & t.fits)
    # 8B in FP32 is 32 GB: does not fit in a 24 GB L4
    assert t.status("l4", "fp32") == "does not fit"


def test_bad_input_raises():
    with pytest.raises(rl.UnknownNameError):
        ceiling_table("llama-9", ["h100-sxm"])
    with pytest.raises(rl.UnknownNameError):
        ceiling_table("llama-3-8b", ["h100"])
    with pytest.raises(rl.UnknownNameError):
        ceiling_table("llama-3-8b", ["h100-sxm"], ["float8"])
    for bad in (0, 1.5, [1, 2]):
        with pytest.raises(rl.InvalidConfigurationError):
            ceiling_table("llama-3-8b", ["h100-sxm"], num_gpus=bad)
    with pytest.raises(rl.InvalidConfigurationError):
        ceiling_table("llama-3-8b", [], ["bf16"])
    t = ceiling_table("llama-3-8b", ["h100-sxm"], ["bf16"])
    with pytest.raises(rl.InvalidConfigurationError):
        t.ceiling("l4", "bf16")  # not a row of this table


# The table stores every tensor at one precision and counts all of memory (the card's view); the step
# engine keeps some tensors (the LM head) in BF16 under FP8/INT4 presets and leaves the engine's runtime
# memory out. They agree for formats that are uniform, with memory="ideal".
@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(list(rl.models())),
    gpu=st.sampled_from(list(rl.gpus())),
    precision=st.sampled_from(["bf16", "fp16"]),
    num_gpus=st.sampled_from([1, 2, 4, 8]),
)
def test_table_agrees_with_decode_step_at_batch_1(model, gpu, precision, num_gpus):
    t = ceiling_table(model, [gpu], [precision], num_gpus)
    status = t.status(gpu, precision)
    if status == "unsupported":
        with pytest.raises(rl.UnsupportedPrecisionError):
            rl.decode_step(
                model, gpu, 1, 0, num_gpus=num_gpus, weight_precision=precision, on_overflow="mask"
            )
        return
    step = rl.decode_step(
        model, gpu, 1, 0, num_gpus=num_gpus, weight_precision=precision, on_overflow="mask", memory="ideal"
    )
    assert bool(step.fits) == (status == "ok")
    if status == "ok":
        # batch 1 is always memory-bound, so the general model's step is exactly the floor
        assert step.binding == "memory"
        assert t.floor(gpu, precision) == pytest.approx(step.step_time_s, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(list(rl.models())), num_gpus=st.sampled_from([1, 2, 4]))
def test_more_gpus_never_lower_the_ceiling_and_fewer_bytes_raise_it(model, num_gpus):
    a = ceiling_table(model, None, ["bf16", "fp8", "int4"], num_gpus)
    b = ceiling_table(model, None, ["bf16", "fp8", "int4"], 2 * num_gpus)
    both = np.isfinite(a.ceiling_tokens_per_s)
    assert np.all(np.isfinite(b.ceiling_tokens_per_s[both]))  # what fits on G GPUs fits on 2G
    assert np.allclose(b.ceiling_tokens_per_s[both], 2 * a.ceiling_tokens_per_s[both])
    # along a row, fewer bytes per weight means a higher ceiling wherever both cells exist
    row = a.ceiling_tokens_per_s
    ok = np.isfinite(row[:, :-1]) & np.isfinite(row[:, 1:])
    assert np.all(row[:, 1:][ok] > row[:, :-1][ok])


def test_heatmap_and_readout():
    fig = CeilingHeatmap(Scenario(model="llama-3-70b", num_gpus=2, weight_precision="fp8", context_tokens=0))
    assert repr(fig) == "<CeilingHeatmap: llama-3-70b, G=2>"
    assert fig.png()[:4] == b"\x89PNG"
    texts = [a.get_text() for a in fig.labels.ravel()]
    assert "95" in texts  # 3.35e12 x 2 / 70.55e9 = 95 tokens/s for the outlined cell
    # 282 GB of FP32 does not fit in 171.8 GB: the cell is hatched and says what the weights need
    assert "282 GB" in texts and any(h.get_visible() for h in fig.hatches.ravel())
    fig.update(Scenario(context_tokens=0))
    assert "223" in [a.get_text() for a in fig.labels.ravel()]  # 3.35e12 / 15.01e9
    assert not any(h.get_visible() for h in fig.hatches[0])  # 8B fits on an H100 at every precision
    assert "10.53 ms" in ceiling_readout(Scenario(model="llama-3-70b", num_gpus=2, weight_precision="fp8"))
    assert "do not fit" in ceiling_readout(Scenario(model="llama-3-70b"))
    assert "no fp8 tensor-core math" in ceiling_readout(Scenario(gpu="a100-80gb-sxm", weight_precision="fp8"))


def test_with_users_and_context_each_user_gets_one_token_per_step_of_weights_and_every_users_kv():
    # 32 users × 1,000 tokens on an H100 in BF16: 15.01 GB of weights + 32 × 1,000 × 131,072 B of KV
    # = 19.21 GB per step over 3.35 TB/s = 5.73 ms, one token per user per step: 174 tokens/s each
    t = ceiling_table("llama-3-8b", ["h100-sxm"], ["bf16"], batch=32, context_tokens=1000)
    kv = 32 * 1000 * 32 * 8 * 128 * 2 * 2
    assert t.bytes_moved[0] == pytest.approx(t.weight_bytes_read[0] + kv, rel=1e-12)
    assert t.ceiling("h100-sxm", "bf16") == pytest.approx(3.35e12 / (t.weight_bytes_read[0] + kv), rel=1e-12)
    one = ceiling_table("llama-3-8b", ["h100-sxm"], ["bf16"])
    assert t.ceiling("h100-sxm", "bf16") < one.ceiling("h100-sxm", "bf16")  # batching slows each user
    crowded = ceiling_table("llama-3-8b", ["h100-sxm"], ["bf16"], batch=1024, context_tokens=8000)
    assert crowded.status("h100-sxm", "bf16") == "does not fit"  # 1,074 GB of KV


def test_the_explorer_has_every_control_of_a_step_and_its_figure_follows_them():
    from roofline.lessons.decode_floor.lab import ceiling_explorer

    ex = ceiling_explorer()
    assert {"batch", "context_tokens"} <= set(ex.controls)
    before = [a.get_text() for a in ex.live.labels.ravel()]
    ex.set(batch=64, context_tokens=4096)
    after = [a.get_text() for a in ex.live.labels.ravel()]
    assert before != after and "64 users × 4,096 tokens" in ex.readout.value
