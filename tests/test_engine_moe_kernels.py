"""MoE-layer and MLA kernel efficiencies from measured timings (roofline.calibration.moe_kernels).

Hand numbers used below (data/models.toml, data/gpus.toml, roofline.physics.precision):

* DeepSeek-V3 experts: h = 7168, I = 2048, top-8 of 256; one expert's gate, up and down matrices hold
  3 × 7168 × 2048 = 44,040,192 weights; FP8 with a 32-bit scale per 128 × 128 block: 1 + 4/16384 bytes each.
* DeepSeek-V3 MLA: latent r = 512, rotary key 64 (576 cached values per token), d_nope = 128, d_v = 128;
  absorbed scores + weighted sum: 2 × (576 + 512) = 2176 FLOP per (token, cached token) pair per head.
* H200: 4.8e12 bytes/s; 1979e12 dense FP8 FLOP/s.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from roofline.calibration import kernels as K
from roofline.calibration import moe_kernels as M
from roofline.data import DataTableError
from roofline.errors import InvalidConfigurationError

ROOT = Path(__file__).resolve().parents[1]
EXPERT = 3 * 7168 * 2048
FP8_BLOCK = 1 + 4 / 16384


# --------------------------------------------------------------------------------------------------
# The tables
# --------------------------------------------------------------------------------------------------


def test_the_tables_are_described_with_their_sources():
    readme = (ROOT / "data" / "measured" / "README.md").read_text()
    for name in ("moe.csv", "mla.csv", "moe_mla_sources.csv"):
        assert f"kernels/{name}" in readme, name
    m = K.load_kernel_table("mla.csv")
    assert set(m["form"].tolist()) == {"absorbed", "expanded"}
    assert set(m["form"][m["op"] == "mla_generation"].tolist()) == {"absorbed"}  # decode is always absorbed


def test_a_deepseek_moe_layer_takes_what_its_weights_allow():
    """One token through DeepSeek-V3's MoE on one H200 reads 8 FP8 experts (352 MB): at least 73 µs."""
    t = K.load_kernel_table("moe.csv")
    row = (t["gpu"] == "h200") & (t["engine"] == "sglang") & (t["num_tokens"] == 1) & (t["experts"] == 256)
    row &= (t["moe_tp"] == 1) & (t["moe_ep"] == 1)
    (measured,) = t["latency_s"][row]
    floor = 8 * EXPERT * FP8_BLOCK / 4.8e12
    assert floor < measured < floor / 0.5


def _table(folder: Path, line: str) -> str:
    folder.mkdir()
    header = "gpu,framework,version,op,batch,context,heads,dtype,kv_dtype,form,latency_s\n"
    (folder / "mla.csv").write_text(header + line + "\n")
    return str(folder)


def test_bad_tables_are_refused_with_the_file_named(tmp_path):
    good = "h200,sglang,0.5.14,mla_generation,1,128,16,bf16,bf16,absorbed,"
    with pytest.raises(DataTableError, match=r"mla.csv, line 2: missing latency_s"):
        K.load_kernel_table("mla.csv", _table(tmp_path / "a", good))
    with pytest.raises(DataTableError, match="milliseconds"):
        K.load_kernel_table("mla.csv", _table(tmp_path / "b", good + "14"))
    with pytest.raises(DataTableError, match="Unknown GPU 'h20x'"):
        K.load_kernel_table("mla.csv", _table(tmp_path / "c", "h20x" + good[4:] + "1e-5"))
    with pytest.raises(DataTableError, match="not a kernel table"):
        K.load_kernel_table("moe_mla_sources.csv")


# --------------------------------------------------------------------------------------------------
# Routing and work
# --------------------------------------------------------------------------------------------------


def test_the_benchmark_routing_by_hand():
    # one token picks 8 experts; 64 tokens cover all 256, 512 pairs; EP 8: rank 0's 32 experts get 64 pairs
    assert M.benchmark_routing(1, 256, 8) == (8, 8, 1)
    assert M.benchmark_routing(64, 256, 8) == (256, 512, 64)
    assert M.benchmark_routing(64, 256, 8, 8) == (32, 64, 64)
    # DeepSeek's router keeps groups 0-3 (128 experts); rank 0 of EP 8 holds group 0: per token its expert in
    # the group plus the 4 tied lowest-numbered experts, 5 pairs
    assert M.benchmark_routing(64, 256, 8, 1, "grouped-8-4") == (128, 512, 64)
    assert M.benchmark_routing(64, 256, 8, 8, "grouped-8-4") == (32, 320, 64)


@pytest.mark.parametrize("experts, topk", [(8, 2), (32, 4), (128, 4), (128, 8), (256, 8)])
def test_balanced_routing_touches_the_most_experts_evenly(experts, topk):
    """aiconfigurator's "balanced" logits give every token k distinct experts and repeat none before all E
    are used: min(E, T k) touched, T k pairs on one GPU, for every token count up to 2 E."""
    for tokens in range(1, 2 * experts + 1, 3):
        touched, pairs, local_tokens = M.benchmark_routing(tokens, experts, topk)
        assert (touched, pairs, local_tokens) == (min(experts, tokens * topk), tokens * topk, tokens), tokens


def test_moe_work_by_hand():
    f, b = M.moe_work(1, 7168, 2048, 8, 256, dtype="fp8-block128")
    assert f == 2 * 8 * EXPERT
    assert b == pytest.approx(8 * EXPERT * FP8_BLOCK + 8 * 2 * 7168 * 2)
    f8, b8 = M.moe_work(1, 7168, 2048, 8, 256, moe_tp=8, dtype="fp8-block128")  # TP 8: an eighth of each
    assert f8 == f / 8 and b8 == pytest.approx(8 * EXPERT / 8 * FP8_BLOCK + 8 * 2 * 7168 * 2)
    with pytest.raises(InvalidConfigurationError, match="MoE formats timed"):
        M.moe_work(1, 7168, 2048, 8, 256, dtype="nvfp4")


def test_mla_work_by_hand():
    assert M.mla_pair_flops("absorbed") == 2 * (2 * 512 + 64)
    assert M.mla_decode_work(2, 1000, 16) == (2 * 1000 * 16 * 2176, 2 * 1000 * 576 * 2)
    f, b = M.mla_prefill_work(1, 1024, 128, "expanded")
    assert f == 1024 * 1023 / 2 * 128 * 2 * (128 + 64 + 128)
    assert b == 1024 * 128 * 2 * (192 + 128) * 2  # Q, K of 192 and V, O of 128 per head, BF16


# --------------------------------------------------------------------------------------------------
# The fitted numbers
# --------------------------------------------------------------------------------------------------

HOPPER_MOE = [
    (g, e, "fp8-block128") for g in ("h100-sxm", "h200") for e in ("sglang", "tensorrt-llm", "vllm")
]


@pytest.mark.parametrize("group", HOPPER_MOE)
def test_fitted_moe_numbers_are_physical(group):
    """Fractions of a peak lie in (0, 1]; a fused MoE layer's fixed cost (router, top-k, two grouped GEMM
    launches, activation, combine, inside a CUDA graph) is 10–60 µs. Streaming FP8 experts at one token
    reaches at least half of HBM bandwidth on Hopper."""
    r = M.fit_group("moe", *group, held_out=False)
    assert 0 < r["compute_fraction"] <= 1 and 0.5 < r["bandwidth_fraction"] <= 1, r
    assert 10e-6 < r["overhead_s"] < 60e-6, r


def test_fitted_mla_numbers_are_physical():
    """A decode over a BF16 latent cache streams it at 70–100 % of HBM; FlashAttention-class prefill reaches
    45–80 % of the BF16 peak; an attention kernel's fixed cost is 5–30 µs."""
    for engine in ("sglang", "tensorrt-llm"):
        p = M.mla_parameters("h200", engine)
        assert 0.7 < p["mla_decode_bandwidth_fraction"] <= 1 and 0 < p["mla_decode_compute_fraction"] <= 1
        assert 0.45 < p["mla_prefill_compute_fraction"] < 0.8
        assert 5e-6 < p["mla_decode_overhead_s"] < 30e-6 and 5e-6 < p["mla_prefill_overhead_s"] < 30e-6


def test_the_models_predict_shapes_they_were_not_fitted_on():
    """Fitted on half the (expert shape × split) or (heads × batch) cells, the median error on the other
    half stays within 15 % on H200 (the timings scatter by ~±10 % shape to shape)."""
    held = [
        M.fit_group("moe", "h200", e, "fp8-block128")["held_out_median_abs_log_error"]
        for e in ("sglang", "vllm")
    ]
    held += [
        M.fit_group(k, "h200", "tensorrt-llm", "bf16")["held_out_median_abs_log_error"]
        for k in ("decode", "prefill")
    ]
    assert max(held) < math.log(1.15), held


def test_the_fit_is_deterministic():
    a = K.score_fit(M.group_samples("prefill", "b200", "sglang", "bf16"), smooth=1)
    b = K.score_fit(M.group_samples("prefill", "b200", "sglang", "bf16"), smooth=1)
    assert a == b


def test_a_moe_time_from_the_fitted_numbers_by_hand():
    """One token through DeepSeek-V3's experts at TP 8 on an H200: the fitted fractions in the smooth max
    smax₂ = √(a² + b²) of the math and the weight reads, plus the fixed cost."""
    p = M.moe_parameters("h200", "sglang", "fp8-block128")
    bytes_moved = 8 * EXPERT * FP8_BLOCK / 8 + 8 * 2 * 7168 * 2  # TP 8, one token
    a = 2 * 8 * EXPERT / 8 / (p["moe_compute_fraction"] * 1979e12)
    b = bytes_moved / (p["moe_bandwidth_fraction"] * 4.8e12)
    want = math.hypot(a, b) + p["moe_overhead_s"]
    work = M.moe_work(1, 7168, 2048, 8, 256, moe_tp=8, dtype="fp8-block128")
    fractions = (p["moe_compute_fraction"], p["moe_bandwidth_fraction"], p["moe_overhead_s"])
    assert K.roofline_time_s(*work, 1979e12, 4.8e12, *fractions, M.MOE_SMOOTH) == pytest.approx(
        want, rel=1e-9
    )


# --------------------------------------------------------------------------------------------------
# Fallbacks and refusals
# --------------------------------------------------------------------------------------------------


def test_gpt_oss_on_an_a100_borrows_the_marlin_w4a16_timings_and_says_so():
    p = M.moe_parameters("a100-40gb", "vllm", "w4a16-mxfp4")
    assert p["fitted_on"] == "a100-80gb-sxm" and p["fitted_format"] == "int4"
    assert "a100-40gb has no MoE timings" in p["source"] and "median over sglang" in p["source"]


def test_no_fraction_crosses_a_family_and_unknown_formats_are_refused():
    with pytest.raises(InvalidConfigurationError, match="not carried across families"):
        M.moe_parameters("mi300x", "vllm")
    with pytest.raises(InvalidConfigurationError, match="no fp8 MoE timings on a100-80gb-sxm"):
        M.moe_parameters("a100-80gb-sxm", dtype="fp8")
    with pytest.raises(InvalidConfigurationError, match="KV caches timed"):
        M.mla_parameters("h200", kv_dtype="int4")


def test_kernels_the_form_cannot_describe_are_not_used():
    """TensorRT-LLM 1.0's MLA decode on the A100 takes ~8 ms at 64 k tokens of context for any batch up to
    16 (one thread block per sequence): no roofline fraction describes it, so it is left out, said why."""
    p = M.mla_parameters("a100-80gb-sxm", "tensorrt-llm")
    assert "mla_decode_overhead_s" not in p and "median" in p["missing"][0]
    assert "mla_prefill_compute_fraction" in p
