"""Kernel efficiencies from measured kernel timings (roofline.calibration.kernels, data/measured/kernels/).

Hand numbers used below (data/gpus.toml and the formulas of the module docstring):

* H100 SXM: 989e12 dense BF16 FLOP/s, 3.35e12 bytes/s.
* A 16384³ BF16 GEMM: 2 × 16384³ = 8.80e12 FLOP → 8.89 ms at the H100's peak.
* A 4096 × 4096 BF16 weight matrix: 33.55e6 bytes → 10.0 µs at 3.35e12 bytes/s.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.assumptions import ASSUMPTIONS
from roofline.calibration import kernels as K
from roofline.data import DataTableError, gpus
from roofline.errors import InvalidConfigurationError

ROOT = Path(__file__).resolve().parents[1]
KERNEL_DIR = ROOT / "data" / "measured" / "kernels"
TIMED_GPUS = ("h100-sxm", "h200", "b200", "b300", "gb200", "a100-80gb-sxm", "l40s")
ENGINES = ("vllm", "tensorrt-llm", "sglang")


# --------------------------------------------------------------------------------------------------
# The tables
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(K.TABLES))
def test_every_table_loads_checked_and_in_seconds(name):
    t = K.load_kernel_table(name)
    assert len(t["latency_s"]) > 100
    assert set(t["gpu"].tolist()) <= set(TIMED_GPUS)
    assert set(t["engine"].tolist()) <= {*ENGINES, "nccl"}
    assert not any(v == "" for col in ("gpu", "framework", "version", "dtype") for v in t[col].tolist())
    # the typical kernel takes 10 µs to 10 ms: milliseconds stored as seconds would be 1000× too slow
    assert 1e-5 < np.median(t["latency_s"]) < 1e-2


def test_a_big_gemm_takes_what_the_peak_allows_in_seconds():
    g = K.load_kernel_table("gemm.csv")
    row = (g["gpu"] == "h100-sxm") & (g["engine"] == "vllm") & (g["dtype"] == "bf16")
    row &= (g["m"] == 16384) & (g["n"] == 16384) & (g["k"] == 16384)
    (t,) = g["latency_s"][row]
    assert 8.89e-3 < t < 8.89e-3 / 0.6  # no faster than the peak, and no slower than 60 % of it


def test_every_table_is_described_with_its_sources():
    readme = (ROOT / "data" / "measured" / "README.md").read_text()
    for path in sorted(KERNEL_DIR.glob("*.csv")):
        assert f"kernels/{path.name}" in readme, path.name
    src = K.load_kernel_table("allreduce.csv")  # loads like the others
    assert set(src["op"].tolist()) == {"all_reduce", "custom_all_reduce"}
    sources = (KERNEL_DIR / "sources.csv").read_text().splitlines()
    assert sources[0].startswith("gpu,framework,version,op,dtype,path,kernel_source")
    assert len(sources) > 100


def _table(folder: Path, line: str) -> str:
    folder.mkdir()
    (folder / "gemm.csv").write_text("gpu,framework,version,op,m,n,k,dtype,latency_s\n" + line + "\n")
    return str(folder)  # a new folder per case: the loader caches by (name, folder)


def test_bad_tables_are_refused_with_the_file_named(tmp_path):
    with pytest.raises(DataTableError, match="gemm.csv, line 2: missing latency_s"):
        K.load_kernel_table("gemm.csv", _table(tmp_path / "a", "h100-sxm,vllm,0.24.0,gemm,1,2,3,bf16,"))
    with pytest.raises(DataTableError, match="milliseconds"):  # 15 "seconds" for a GEMV: it was 15 ms
        K.load_kernel_table("gemm.csv", _table(tmp_path / "b", "h100-sxm,vllm,0.24.0,gemm,1,2,3,bf16,15"))
    with pytest.raises(DataTableError, match="Unknown GPU 'h100'"):
        K.load_kernel_table("gemm.csv", _table(tmp_path / "c", "h100,vllm,0.24.0,gemm,1,2,3,bf16,1e-5"))
    with pytest.raises(DataTableError, match="column m: not a number"):
        K.load_kernel_table("gemm.csv", _table(tmp_path / "d", "h100-sxm,vllm,0.24.0,gemm,x,2,3,bf16,1e-5"))
    with pytest.raises(DataTableError, match="Unknown engine"):
        K.load_kernel_table("gemm.csv", _table(tmp_path / "e", "h100-sxm,tgi,0.24.0,gemm,1,2,3,bf16,1e-5"))
    with pytest.raises(DataTableError, match="not a kernel table"):
        K.load_kernel_table("sources.csv")


# --------------------------------------------------------------------------------------------------
# The formulas
# --------------------------------------------------------------------------------------------------


def test_work_of_each_kernel_by_hand():
    assert K.gemm_work(1, 4096, 4096) == (2 * 4096 * 4096, (4096 * 4096 + 4096) * 2 + 4096 * 2)
    assert K.gemm_work(1, 4096, 4096, "fp8")[1] == 4096 * 4096 + 4096 + 4096 * 2  # FP8 in, BF16 out
    # Llama 3 8B layer, one 1024-token prompt: 4 × 32 heads × 128 × 1024 × 1023 / 2 FLOP
    assert K.prefill_attention_work(1, 1024, 32, 8, 128)[0] == 4 * 32 * 128 * 1024 * 1023 / 2
    # decode: 4 sequences × 2048 tokens × 2 (K, V) × 8 KV heads × 128 × 1 byte of FP8
    assert K.decode_attention_work(4, 2048, 32, 8, 128, "fp8")[1] == 4 * 2048 * 2 * 8 * 128


@settings(max_examples=25, deadline=None)
@given(
    st.floats(1e6, 1e13), st.floats(1e3, 1e10), st.floats(0.05, 1), st.floats(0.05, 1), st.floats(0, 1e-4),
    st.sampled_from([None, 1, 2, 4]),
)  # fmt: skip
def test_a_kernel_is_never_faster_than_the_roofline(flops, nbytes, ec, eb, t0, smooth):
    floor = max(flops / 989e12, nbytes / 3.35e12)
    t = K.roofline_time_s(flops, nbytes, 989e12, 3.35e12, ec, eb, t0, smooth)
    assert t >= floor * (1 - 1e-12)
    assert t >= K.roofline_time_s(flops, nbytes, 989e12, 3.35e12, ec, eb, t0) * (1 - 1e-12)  # smooth ≥ max


@settings(max_examples=15, deadline=None)
@given(st.floats(0.2, 0.95), st.floats(0.2, 0.95), st.floats(1e-6, 2e-5))
def test_the_fit_recovers_the_numbers_that_made_the_times(ec, eb, t0):
    m = np.array([1, 16, 64, 256, 1024, 4096, 16384] * 3, float)
    n = np.repeat([1024.0, 4096.0, 16384.0], 7)
    flops, nbytes = K.gemm_work(m, n, 4096)
    times = K.roofline_time_s(flops, nbytes, 989e12, 3.35e12, ec, eb, t0, smooth=4)
    p = K.fit_roofline(flops, nbytes, 989e12, 3.35e12, times, smooth=4)
    assert p["compute_fraction"] == pytest.approx(ec, rel=1e-3)
    assert p["bandwidth_fraction"] == pytest.approx(eb, rel=1e-3)
    assert p["overhead_s"] == pytest.approx(t0, rel=1e-2)


def test_a_timing_outlier_does_not_steer_the_fit():
    """Huber on log time: one GEMM timed 3× too slow (a preempted run) moves e_c and e_b by under 1 %, where
    plain least squares would let it pull the whole curve (it sits 1.1 log units off)."""
    m = np.array([1, 16, 64, 256, 1024, 4096, 16384] * 3, float)
    flops, nbytes = K.gemm_work(m, np.repeat([1024.0, 4096.0, 16384.0], 7), 4096)
    times = K.roofline_time_s(flops, nbytes, 989e12, 3.35e12, 0.7, 0.8, 5e-6, smooth=4)
    times[10] *= 3
    p = K.fit_roofline(flops, nbytes, 989e12, 3.35e12, times, smooth=4)
    assert p["compute_fraction"] == pytest.approx(0.7, rel=0.01)
    assert p["bandwidth_fraction"] == pytest.approx(0.8, rel=0.01)


# --------------------------------------------------------------------------------------------------
# The fitted numbers
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gpu", TIMED_GPUS)
def test_fitted_numbers_are_physical(gpu):
    """Fractions of a peak lie in (0, 1]. A kernel's fixed cost (launch, prologue, epilogue, inside a CUDA
    graph) is at least ~0.5 µs on any datacenter GPU, and above 20 µs it would be host time, not a kernel."""
    for engine in ENGINES:
        p = K.kernel_parameters(gpu, engine)
        fractions = [v for k, v in p.items() if k.endswith("_fraction")]
        costs = [v for k, v in p.items() if k.endswith("_overhead_s")]
        assert len(fractions) == 5 and len(costs) == 3
        assert all(0 < f <= 1 for f in fractions), p
        assert all(0.5e-6 <= c <= 20e-6 for c in costs), p


def test_h100_bf16_gemms_reach_what_hopper_gemms_reach():
    """Large BF16 GEMMs on an H100 run at 60–90 % of the 989 TFLOPS dense peak (cuBLAS: ~700–800 TFLOPS):
    above 0.9 the data sheet peak would be wrong, below 0.6 the fraction would have absorbed other costs.
    A bandwidth-bound GEMV streams weights at 70–95 % of HBM bandwidth."""
    for engine in ENGINES:
        p = K.kernel_parameters("h100-sxm", engine)
        assert 0.6 < p["gemm_compute_fraction"] < 0.9
        assert 0.7 < p["gemm_bandwidth_fraction"] < 0.95
        assert 0.5 < p["prefill_attention_compute_fraction"] < 0.8  # FlashAttention 3: ~60–75 % of peak
        assert 0.7 < p["decode_attention_bandwidth_fraction"] <= 1


def test_the_gemm_model_predicts_shapes_it_was_not_fitted_on():
    """Fitted on half of the (n, k) shapes, the model's median error on the other half stays within 12 %
    for every BF16 GEMM group on a datacenter GPU (the timings scatter by ~±10 % shape to shape)."""
    groups = [g for g in K.timed_groups(K.FORMS["gemm"]) if g[2] == "bf16"]
    assert len(groups) == len(TIMED_GPUS) * len(ENGINES)
    held = {g: K.fit_group("gemm", *g)["held_out_median_abs_log_error"] for g in groups}
    assert max(held.values()) < math.log(1.12), held


def test_the_fit_is_deterministic():
    a = K.score_fit(K.kernel_samples("prefill", "b200", "sglang"), smooth=1)
    b = K.score_fit(K.kernel_samples("prefill", "b200", "sglang"), smooth=1)
    assert a == b


def test_a_kernel_time_from_the_fitted_numbers_by_hand():
    p = K.kernel_parameters("h100-sxm", "vllm")
    # a 4096 × 4096 GEMV: 33.55 MB of weights at the fitted bandwidth, plus the fixed cost
    want = 33.57e6 / (p["gemm_bandwidth_fraction"] * 3.35e12) + p["gemm_overhead_s"]
    assert K.gemm_time_s(1, 4096, 4096, "h100-sxm", "vllm") == pytest.approx(want, rel=1e-3)


# --------------------------------------------------------------------------------------------------
# Fallbacks
# --------------------------------------------------------------------------------------------------


def test_a_gpu_without_timings_borrows_its_family_and_says_so():
    p = K.kernel_parameters("gh200", "vllm")
    assert p["fitted_on"] in ("h100-sxm", "h200") and "gh200 has no kernel timings" in p["source"]
    assert K.kernel_parameters("a100-40gb")["fitted_on"] == "a100-80gb-sxm"


def test_no_fraction_crosses_a_gpu_family():
    """The MI300X has no timed CDNA sibling: its numbers are sourced, never an NVIDIA fit. Azure's BabelStream
    measured 4.26 TB/s (mul) against the data sheet's 5.3; AMD's hipBLASLt reached 708 of 1307.4 TFLOPS."""
    p = K.kernel_parameters("mi300x", "vllm")
    assert p["fitted_on"] is None and "not carried across families" in p["source"]
    assert p["decode_attention_bandwidth_fraction"] == pytest.approx(4.26 / 5.3)
    assert p["gemm_compute_fraction"] == pytest.approx(708 / 1307.4, abs=0.005)


def test_host_time_is_not_taken_for_a_kernel():
    p = K.kernel_parameters("h100-sxm", "vllm", dtype="fp8-block128")
    assert "host time" in p["source"] and p["gemm_overhead_s"] < 20e-6
    fit = K.fit_group("gemm", "h100-sxm", "vllm", "fp8-block128", held_out=False)
    assert fit["overhead_s"] > K.MAX_KERNEL_OVERHEAD_S  # the rows themselves: ~80 µs at any size


def test_unknown_formats_and_engines_are_refused_or_explained():
    with pytest.raises(InvalidConfigurationError, match="KV caches"):
        K.kernel_parameters("h100-sxm", "vllm", dtype="int4")
    p = K.kernel_parameters("h100-sxm", "llama.cpp")
    assert "no bf16 gemm timings for llama.cpp" in p["source"]


# --------------------------------------------------------------------------------------------------
# GPUs without timings: data sheet plus sourced figures (data/measured/achievable_bandwidth.csv)
# --------------------------------------------------------------------------------------------------

SOURCED = ("mi300x", "mi325x", "mi355x", "rtx-3090", "rtx-4090", "rtx-5090", "rtx-pro-6000", "a10g",
           "m2-ultra", "m3-max", "m4-max", "m4-pro")  # fmt: skip
NUMBERS = ("gemm_compute_fraction", "gemm_bandwidth_fraction", "gemm_overhead_s",
           "prefill_attention_compute_fraction", "prefill_attention_bandwidth_fraction",
           "prefill_attention_overhead_s", "decode_attention_bandwidth_fraction",
           "decode_attention_overhead_s")  # fmt: skip


@pytest.mark.parametrize("gpu", sorted(gpus()))
def test_every_gpu_of_the_tables_gets_physical_kernel_numbers(gpu):
    p = K.kernel_parameters(gpu)
    assert set(NUMBERS) <= p.keys()
    assert all(0 < p[k] <= 1 for k in NUMBERS if k.endswith("_fraction")), p
    # a kernel's fixed cost: at least the ~0.5 µs a graph node takes, at most 20 µs (beyond: host time)
    assert all(0.5e-6 <= p[k] <= 20e-6 for k in NUMBERS if k.endswith("_overhead_s")), p
    assert (p["fitted_on"] is None) == (gpu in SOURCED), p["source"]


@pytest.mark.parametrize("gpu", SOURCED)
def test_sourced_numbers_name_their_csv_row_and_assumptions(gpu):
    p = K.sourced_parameters(gpu)
    assert p.keys() == K.kernel_parameters("h100-sxm", "vllm").keys()
    assert f"achievable_bandwidth.csv row {gpu} " in p["source"] or f"rows {gpu} -> " in p["source"]
    named = [w.rstrip(";,") for w in p["source"].split() if w.rstrip(";,") in ASSUMPTIONS]
    assert {n.split("_")[0] for n in named} == {"gemm", "attention", "kernel"}, p["source"]
    for n in named:  # each assumption the source names says the kernel numbers use it
        assert "kernels" in ASSUMPTIONS[n].used_by
    assert p["gemm_overhead_s"] == ASSUMPTIONS[named[-1]].value


def test_a_decode_on_a_sourced_gpu_reads_the_kv_at_the_measured_bandwidth():
    """e_kv × data-sheet bandwidth (1008 GB/s) is the measured bandwidth, so a 4 MB KV read on an RTX 4090
    takes 4.096e6 B ÷ 912 GB/s (chsasank/device-benchmarks' copy) plus one launch (1 µs): 5.49 µs."""
    p = K.sourced_parameters("rtx-4090")
    e_kv, t0 = p["decode_attention_bandwidth_fraction"], p["decode_attention_overhead_s"]
    t = K.roofline_time_s(*K.decode_attention_work(1, 1000, 32, 8, 128), 165.2e12, 1008e9, 1.0, e_kv, t0)
    assert t == pytest.approx(4.096e6 / 0.912e12 + 1e-6, rel=1e-9)


def test_a_sibling_row_carries_the_measured_ratio_not_the_number():
    """The M4 Pro has no measurement: the M4 Max's 396 of 546 GB/s (same LPDDR5X) applies to its 273 GB/s."""
    t = K.load_achievable_bandwidth()
    assert t["m4-pro"]["via"] == "m4-max"
    assert t["m4-pro"]["fraction"] == t["m4-max"]["fraction"] == pytest.approx(0.396 / 0.546)


def test_a_geforce_board_never_borrows_a_professional_cards_fit():
    """The RTX 4090 shares the L40S's AD102 die, but its data sheet rates FP32-accumulate tensor math at half
    rate and it boosts above it: it is sourced. The L4 (a professional Ada GDDR card) borrows the L40S."""
    assert K.kernel_parameters("rtx-4090")["fitted_on"] is None
    assert K.kernel_parameters("l4")["fitted_on"] == "l40s"
    with pytest.raises(InvalidConfigurationError, match="kernel_parameters"):
        K.sourced_parameters("h100-pcie")  # an HBM Hopper: its family's fits apply


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200", "a100-80gb-sxm", "l40s"])
def test_a_streaming_benchmark_bounds_the_fitted_gemv_bandwidth(gpu):
    """On the timed GPUs, the published streaming bandwidth is the best case a GEMV can reach: the fitted
    GEMM e_b (median over engines) sits at or below it, and within 25 % of it (measured: 2-21 % below)."""
    measured = K.load_achievable_bandwidth()[gpu]["fraction"]
    fitted = K.kernel_parameters(gpu)["gemm_bandwidth_fraction"]
    assert measured / 1.25 < fitted <= measured * 1.02


def _csv(folder: Path, *rows: str) -> str:
    folder.mkdir()
    head = "gpu,measured_bandwidth_tb_per_s,sibling,method,source,date,note\n"
    (folder / K.ACHIEVABLE_FILE).write_text(head + "\n".join(rows) + "\n")
    return str(folder)


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        (["mi300x,6.1,,copy,https://x.org,2025-01-01,n"], "data sheet gives 5.3 TB/s"),  # above the peak
        (["mi300x,4.2,m4-max,copy,https://x.org,2025-01-01,n"], "not both"),
        (["mi300,4.2,,copy,https://x.org,2025-01-01,n"], "Unknown GPU 'mi300'"),
        (["mi300x,4.2,,copy,https://x.org,2025-13-01,n"], "line 2"),  # month 13
        (["mi300x,4.2,,copy,x.org,2025-01-01,n"], "https://"),
        (["mi325x,,mi300x,sibling,https://x.org,2025-01-01,n"], "sibling 'mi300x' has no measured row"),
        (["mi300x,4.2,,copy,https://x.org,2025-01-01,n"] * 2, "second"),
    ],
)  # fmt: skip
def test_bad_bandwidth_rows_are_refused_with_the_file_named(tmp_path, rows, says):
    with pytest.raises(DataTableError, match=says) as err:
        K.load_achievable_bandwidth(_csv(tmp_path / "t", *rows))
    assert K.ACHIEVABLE_FILE in str(err.value)


def test_frozen_kernel_table_is_what_the_kernel_fits_give():
    """Every number of data/calibration_kernels.csv within 0.1 % of a refit; every source and error alike."""
    from roofline.calibration.kernel_table import kernel_rows, kernel_table_csv, table_differences
    from roofline.data import table_path
    from roofline.engines.params import KERNEL_TABLE_FILE

    stored = table_path(KERNEL_TABLE_FILE).read_text()
    assert table_differences(stored, kernel_table_csv(kernel_rows()), rtol=1e-3) == []
