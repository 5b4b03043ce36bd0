"""The data tables: every row sourced, figures plausible, parameter counts consistent with architecture."""

import math

import pytest

import roofline as rl

GPU_IDS = [
    "h100-sxm",
    "h100-pcie",
    "h200",
    "b200",
    "a100-80gb-sxm",
    "a100-40gb",
    "l40s",
    "l4",
    "a10g",
    "rtx-4090",
    "mi300x",
]
MODEL_IDS = [
    "llama-3-8b",
    "llama-3-70b",
    "llama-3.1-405b",
    "llama-3.2-1b",
    "mistral-7b",
    "qwen2.5-7b",
    "qwen2.5-72b",
    "mixtral-8x7b",
]


def test_required_rows_present():
    assert set(GPU_IDS) <= set(rl.gpus())
    assert set(MODEL_IDS) <= set(rl.models())
    assert rl.prices()


@pytest.mark.parametrize(
    "row", [*rl.gpus().values(), *rl.models().values(), *rl.prices().values()], ids=lambda r: r.id
)
def test_every_row_cites_a_source_and_says_what_it_is(row):
    assert row.source.startswith("https://"), f"{row.id} has no source URL"
    assert len(row.note) > 20, f"{row.id} needs a note saying what its figures are"
    assert row.id == row.id.lower() and " " not in row.id


@pytest.mark.parametrize("gpu", rl.gpus().values(), ids=lambda g: g.id)
def test_gpu_figures_are_in_physical_ranges(gpu):
    assert 16e9 <= gpu.memory_bytes <= 300e9
    assert 0.2e12 <= gpu.memory_bandwidth_bytes_per_s <= 10e12
    assert "bf16" in gpu.dense_flops_per_s or "fp16" in gpu.dense_flops_per_s
    for precision, flops in gpu.dense_flops_per_s.items():
        assert 10e12 <= flops <= 10e15, precision
    # Halving precision never lowers peak math (a dense table that printed sparse figures for one row
    # and dense for another would usually break this ordering).
    table = gpu.dense_flops_per_s
    if "fp8" in table:
        assert table["fp8"] >= table["bf16"]
    if "fp4" in table:
        assert table["fp4"] >= table["fp8"]
    assert 50 <= gpu.power_w <= 1500
    ridge = rl.ridge_point_flop_per_byte(table["bf16"], gpu.memory_bandwidth_bytes_per_s)
    assert 50 < ridge < 700  # every modern GPU: hundreds of FLOP per byte


@pytest.mark.parametrize("model", rl.models().values(), ids=lambda m: m.id)
def test_parameter_count_from_architecture_matches_published(model):
    derived = rl.parameter_count(model)
    assert math.isclose(derived, model.published_parameters, rel_tol=0.02), (
        derived,
        model.published_parameters,
    )
    if model.is_moe:
        active = rl.active_parameter_count(model)
        assert math.isclose(active, model.published_active_parameters, rel_tol=0.02)
    else:
        assert rl.active_parameter_count(model) == derived


@pytest.mark.parametrize("model", rl.models().values(), ids=lambda m: m.id)
def test_architecture_is_self_consistent(model):
    assert model.attention_heads % model.kv_heads == 0
    assert 1 <= model.experts_per_token <= model.experts
    assert model.max_context_tokens >= 2048


@pytest.mark.parametrize("price", rl.prices().values(), ids=lambda p: p.id)
def test_prices_name_a_known_gpu_and_a_date(price):
    rl.get_gpu(price.gpu)
    assert 0.1 < price.usd_per_gpu_hour < 20
    assert len(price.date) == 10  # YYYY-MM-DD


def test_loaded_in_si_units():
    h100 = rl.get_gpu("h100-sxm")
    assert h100.memory_bytes == 80e9
    assert h100.memory_bandwidth_bytes_per_s == 3.35e12
    assert h100.dense_flops_per_s["bf16"] == 989e12
