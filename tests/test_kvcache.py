"""Lesson 28: the KV cache (roofline.lessons.kvcache, with roofline.physics.architecture and .memory)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline.errors import InvalidConfigurationError, UnknownNameError
from roofline.lessons.kv_cache.lab import MaxBatchVsContext, kv_readout, kv_table_html
from roofline.lessons.kv_cache.numbers import (
    compare_gpus_memory,
    gqa_factor,
    kv_table_rows,
    kv_token_capacity,
)
from roofline.scenario import Scenario


def test_llama_3_8b_is_128_kib_per_token():
    # 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 bytes
    assert rl.kv_bytes_per_token("llama-3-8b") == 2 * 32 * 8 * 128 * 2 == 128 * 1024
    assert rl.kv_bytes_per_token("llama-3-8b", "fp8") == 64 * 1024  # fp8 halves it


def test_gqa_factor_is_heads_over_kv_heads():
    assert gqa_factor("llama-3-8b") == 32 / 8
    assert gqa_factor("llama-3-70b") == 64 / 8
    assert gqa_factor("qwen2.5-7b") == 28 / 4
    with pytest.raises(UnknownNameError):
        gqa_factor("llama3")


def test_token_capacity_and_max_batch_agree():
    # All of an H100's 80 GiB minus the weights: (85,899,345,920 - 16,060,522,496) / 131,072 = 532,827.6
    assert kv_token_capacity("llama-3-8b", "h100-sxm") == 532_827
    # 532,827 tokens / 4,096 per user = 130 users, as roofline.max_batch says when all memory is usable
    assert kv_token_capacity("llama-3-8b", "h100-sxm") // 4096 == rl.max_batch(
        "llama-3-8b", "h100-sxm", 4096, memory="ideal"
    )
    # fp8 KV: twice the tokens (rounding aside): 69,838,823,424 / 65,536 = 1,065,655.2
    assert kv_token_capacity("llama-3-8b", "h100-sxm", kv_precision="fp8") == 1_065_655
    assert kv_token_capacity("llama-3-70b", "h100-sxm") == 0  # 141 GB of weights on 85.9 GB
    with pytest.raises(InvalidConfigurationError):
        kv_token_capacity("llama-3-8b", "h100-sxm", num_gpus=0)


def test_table_covers_every_model():
    rows = kv_table_rows()
    assert [r["model"] for r in rows] == list(rl.models())
    for r in rows:
        m = rl.get_model(r["model"])
        if m.kv_lora_rank:  # MLA caches one latent plus the shared rotary key per layer (DeepSeek-V3)
            assert r["kv_bytes_per_token"] == r["layers"] * (m.kv_lora_rank + m.qk_rope_head_dim) * 2
        else:
            assert r["kv_bytes_per_token"] == 2 * r["layers"] * r["kv_heads"] * r["head_dim"] * 2
        assert r["kv_bytes_per_token_mha"] == r["kv_bytes_per_token"] * r["gqa_factor"]
    html = kv_table_html()
    assert html.count("<tr>") == len(rows) + 1 and "128 KiB" in html
    assert "64 KiB" in kv_table_html("fp8")


def test_compare_gpus():
    # What a serving engine leaves for weights + KV: 0.9 x (share CUDA exposes) x memory - activations -
    # non-torch memory (data/assumptions.toml), then (that - 16.06e9 bytes of weights) / (4,096 x 131,072).
    a = rl.ASSUMPTIONS
    share = a["cuda_visible_memory_fraction"].value * a["engine_memory_fraction"].value
    reserved = a["activation_workspace_bytes"].value + a["non_torch_memory_bytes"].value
    per_user = 4096 * 131_072
    expected = {
        gpu: int((share * memory - reserved - 16_060_522_496) // per_user)
        for gpu, memory in (("h100-sxm", 80 * 2**30), ("h200", 141 * 2**30))
    }
    assert expected == {"h100-sxm": 102, "h200": 211}
    assert compare_gpus_memory("llama-3-8b", 4096, gpus=("h100-sxm", "h200")) == expected


@settings(max_examples=100, deadline=None)
@given(
    model=st.sampled_from(list(rl.models())),
    gpu=st.sampled_from(list(rl.gpus())),
    g=st.sampled_from([1, 2, 4, 8]),
    context=st.integers(1, 131_072),
)
def test_largest_batch_fits_and_one_more_does_not(model, gpu, g, context):
    b = rl.max_batch(model, gpu, context, num_gpus=g)
    if b >= 1:
        assert rl.fits(model, gpu, b, context, num_gpus=g)
    assert not rl.fits(model, gpu, b + 1, context, num_gpus=g)
    # a serving engine keeps some memory for itself: never more users than if all of memory were usable
    assert b <= rl.max_batch(model, gpu, context, num_gpus=g, memory="ideal")


def test_figure_and_readout():
    fig = MaxBatchVsContext(Scenario(context_tokens=4096))
    assert len(fig.png()) > 5_000
    fig = MaxBatchVsContext(Scenario(model="llama-3-70b"), by="gpu")  # only the B200 holds it
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "b200" in texts and "h100-sxm: weights do not fit" in texts
    out = kv_readout(Scenario(batch=64, context_tokens=4096))
    assert "34.4 GB" in out  # 64 x 4,096 x 128 KiB = 34.36 GB
    assert f"{rl.max_batch('llama-3-8b', 'h100-sxm', 4096)} users" in out
    assert "cost per 1M tokens" in out and "a good engine" in out  # the decode step it allows
    assert "does not fit" in kv_readout(Scenario(batch=512, context_tokens=4096))
    assert np.isfinite(rl.memory_needed_bytes("llama-3-8b", 64, 4096))
