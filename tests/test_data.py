"""The data tables: every row sourced, figures plausible, parameter counts consistent with architecture;
every malformed table refused on load with the file, row and field; the tables found in every install."""

import math
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline import data

ROOT = Path(__file__).resolve().parents[1]

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
    assert 16 * 2**30 <= gpu.memory_bytes <= 300 * 2**30  # 24 GiB RTX cards to 288 GiB B300 / MI355X
    assert 0.2e12 <= gpu.memory_bandwidth_bytes_per_s <= 10e12
    table = gpu.dense_flops_per_s
    if gpu.vendor == "apple":
        # Apple GPUs have no tensor cores: the FP32 shader rate, and FP16 at the same rate (no double-rate
        # FP16, no native BF16), never an invented matrix figure.
        assert set(table) == {"fp32", "fp16"} and table["fp16"] == table["fp32"]
        assert 5e12 <= table["fp32"] <= 40e12
        return
    assert "bf16" in table or "fp16" in table
    for precision, flops in table.items():
        assert 10e12 <= flops <= 20e15, precision
    # Halving precision never lowers peak math (a dense table that printed sparse figures for one row
    # and dense for another would usually break this ordering).
    if "fp8" in table:
        assert table["fp8"] >= table["bf16"]
    if "fp4" in table:
        assert table["fp4"] >= table["fp8"]
    assert 50 <= gpu.power_w <= 1500
    ridge = rl.ridge_point_flop_per_byte(table["bf16"], gpu.memory_bandwidth_bytes_per_s)
    assert 30 < ridge < 700  # hundreds of FLOP per byte; the export-limited H20 has 148 / 4.0 = 37


@pytest.mark.parametrize("gpu", ["m2-ultra", "m3-max", "m4-max", "m4-pro"])
def test_apple_gpus_lack_tensor_math_and_say_so(gpu):
    # The rule (data/README.md): a precision a row lacks raises UnsupportedPrecisionError, naming what
    # the GPU supports; Apple rows support FP32 and FP16 shader math, no BF16/FP8 tensor math.
    with pytest.raises(rl.UnsupportedPrecisionError, match="fp32.*fp16|fp16.*fp32"):
        rl.peak_flops_per_s(rl.get_gpu(gpu), "bf16")
    with pytest.raises(rl.UnsupportedPrecisionError, match="fp8"):
        rl.peak_flops_per_s(rl.get_gpu(gpu), "fp8")
    fp32 = rl.get_gpu(gpu).dense_flops_per_s["fp32"]
    assert rl.peak_flops_per_s(rl.get_gpu(gpu), "fp32") == fp32
    assert rl.peak_flops_per_s(rl.get_gpu(gpu), "fp16") == fp32  # no double-rate FP16 on Apple GPUs
    # Decode at batch 1 needs no tensor figure: Llama 3.2 1B on an M4 Max is memory-bound.
    s = rl.decode_step("llama-3.2-1b", gpu, weight_precision="fp16", memory="ideal")
    assert s.binding == "memory"


@pytest.mark.parametrize("model", rl.models().values(), ids=lambda m: m.id)
def test_parameter_count_from_architecture_matches_published(model):
    derived = rl.parameter_count(model)
    assert math.isclose(derived, model.published_parameters, rel_tol=0.02), (
        derived,
        model.published_parameters,
    )
    if model.is_moe:
        active = rl.active_parameter_count(model)
        if model.published_active_excludes_embedding:  # gpt-oss counts without the input table
            active -= model.vocab_size * model.hidden_size
        if model.published_active_excludes_lm_head:  # MiniMax counts the decoder blocks only
            active -= model.vocab_size * model.hidden_size
        assert math.isclose(active, model.published_active_parameters, rel_tol=0.02), active
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
    assert h100.memory_bytes == 80 * 2**30  # "80 GB" of HBM is binary: memory_binary = true
    assert h100.memory_bandwidth_bytes_per_s == 3.35e12
    assert h100.dense_flops_per_s["bf16"] == 989e12


# ---------------------------------------------------------------- validation on load


def _error(loader, directory):
    with pytest.raises(data.DataTableError) as err:
        loader(directory)
    assert isinstance(err.value, rl.RooflineError)
    return err.value


H100_BLOCK = (ROOT / "data" / "gpus.toml").read_text().split("[[gpu]]")[1]  # the h100-sxm row


def test_the_shipped_tables_pass_their_own_schema():
    assert data.load_gpus(ROOT / "data").keys() == rl.gpus().keys()
    assert data.load_models(ROOT / "data").keys() == rl.models().keys()
    assert data.load_price_rows(ROOT / "data").keys() == rl.prices().keys()


def test_a_duplicate_id_is_an_error_not_a_silent_overwrite(tables):
    d = tables(
        "gpus.toml", "[[gpu]]", "[[gpu]]" + H100_BLOCK.replace("memory_gb = 80", "memory_gb = 94") + "[[gpu]]"
    )
    err = _error(data.load_gpus, d)
    assert (err.row_id, err.field) == ("'h100-sxm'", "id")
    assert "gpus.toml" in str(err) and "'h100-sxm'" in str(err) and "duplicate" in str(err)


def test_a_quoted_false_is_not_true(tables):
    d = tables("models.toml", "tied_embeddings = false", 'tied_embeddings = "false"')
    err = _error(data.load_models, d)
    assert (err.row_id, err.field) == ("'llama-3-8b'", "tied_embeddings")
    assert str(err).startswith(str(d / "models.toml"))
    assert "true or false" in str(err) and "'false' (a string)" in str(err)


@pytest.mark.parametrize(
    "value, says",
    [
        ("true", "expected a number, got true (a boolean)"),  # was read as 1 GB
        ("-80", "must be more than 0 GB, got -80"),  # was displayed as -80 GB
        ("0", "must be more than 0 GB"),
        ('"80"', "expected a number, got '80' (a string)"),
        ("nan", "finite"),
        ("1e9", "at most 100000 GB"),
    ],
)
def test_memory_must_be_a_positive_number_of_gb(tables, value, says):
    err = _error(data.load_gpus, tables("gpus.toml", "memory_gb = 80", f"memory_gb = {value}"))
    assert (err.row_id, err.field) == ("'h100-sxm'", "memory_gb")
    assert says in str(err)


def test_a_missing_field_names_itself_instead_of_a_key_error(tables):
    d = tables("gpus.toml", "memory_bandwidth_tb_per_s = 3.35\n", "")
    err = _error(data.load_gpus, d)
    assert not isinstance(err, KeyError)
    assert (err.row_id, err.field) == ("'h100-sxm'", "memory_bandwidth_tb_per_s")
    assert "missing" in str(err) and "TB/s" in str(err)


@pytest.mark.parametrize("key", ["source", "note"])
def test_every_row_needs_a_source_and_a_note(tables, key):
    block = next(line for line in H100_BLOCK.splitlines() if line.startswith(f"{key} = "))
    err = _error(data.load_gpus, tables("gpus.toml", block + "\n", ""))
    assert (err.row_id, err.field) == ("'h100-sxm'", key)
    err = _error(data.load_gpus, tables("gpus.toml", "\n" + key + " = ", "\n" + key + ' = ""\n_was = '))
    assert err.field in (key, "_was")  # an empty value or the leftover key: either way, an error


def test_a_source_must_be_a_url(tables):
    d = tables(
        "models.toml", 'source = "https://huggingface.co/meta-llama', 'source = "huggingface.co/meta-llama'
    )
    err = _error(data.load_models, d)
    assert err.field == "source" and "URL" in str(err)


def test_an_unknown_key_suggests_the_known_one(tables):
    err = _error(data.load_gpus, tables("gpus.toml", "memory_gb = 80", "memory_gbs = 80"))
    assert err.field == "memory_gbs" and "did you mean 'memory_gb'" in str(err)
    err = _error(data.load_gpus, tables("gpus.toml", "bf16 = 989.0", "bf61 = 989.0"))
    assert err.field == "dense_tflops" and "'bf61'" in str(err) and "'bf16'" in str(err)


def test_whole_numbers_and_cross_field_rules(tables):
    err = _error(data.load_models, tables("models.toml", "layers = 32", "layers = 32.0"))
    assert err.field == "layers" and "whole number" in str(err)
    err = _error(data.load_models, tables("models.toml", "kv_heads = 8", "kv_heads = 64"))
    assert err.field == "kv_heads" and "exceed" in str(err)  # 64 KV heads > 32 query heads
    err = _error(data.load_models, tables("models.toml", "experts_per_token = 1", "experts_per_token = 2"))
    assert err.field == "experts_per_token"  # 2 of 1 expert


def test_ids_must_be_lowercase_because_lookups_lowercase(tables):
    err = _error(data.load_gpus, tables("gpus.toml", 'id = "h100-sxm"', 'id = "H100-SXM"'))
    assert err.field == "id" and "lowercase" in str(err)


def test_a_price_names_a_known_gpu(tables):
    d = tables("prices.toml", 'gpu = "h100-sxm"', 'gpu = "h100-sxn"')
    err = _error(data.load_price_rows, d)
    assert err.field == "gpu" and "did you mean 'h100-sxm'" in str(err) and "prices.toml" in str(err)


def test_broken_or_missing_files(tables):
    d = tables("gpus.toml", "[[gpu]]", "[[gpu]", 1)
    assert "not valid TOML" in str(_error(data.load_gpus, d))
    (d / "models.toml").unlink()
    err = _error(data.load_models, d)
    assert err.file.endswith("models.toml") and "cannot read" in str(err)
    err = _error(data.load_gpus, tables("gpus.toml", "[[gpu]]", 'vendors = "x"\n[[gpu]]'))
    assert err.field == "vendors" and "top-level" in str(err)


def test_optional_fields_take_their_defaults(tables):
    d = tables("models.toml", "experts = 1\nexperts_per_token = 1\n", "")
    d = tables("models.toml", "attention_bias = false\n", "", fresh=False)
    llama = data.load_models(d)["llama-3-8b"]
    assert (llama.experts, llama.experts_per_token, llama.attention_bias) == (1, 1, False)
    assert llama.published_active_parameters is None


@settings(max_examples=60, deadline=None)
@given(memory_gb=st.floats(-1e6, 1e6, allow_nan=False) | st.integers(-(10**6), 10**6))
def test_memory_loads_exactly_when_it_is_in_range_and_is_converted_to_bytes(memory_gb):
    with tempfile.TemporaryDirectory() as tmp:
        text = (
            (ROOT / "data" / "gpus.toml")
            .read_text()
            .replace("memory_gb = 80", f"memory_gb = {memory_gb!r}", 1)
        )
        (Path(tmp) / "gpus.toml").write_text(text)
        if 0 < memory_gb <= 100_000:  # the schema's range, in GB
            gib = data.load_gpus(tmp)["h100-sxm"].memory_bytes  # the H100 row is binary-sized (GiB)
            assert gib == pytest.approx(memory_gb * 2**30, rel=1e-12)
        else:
            with pytest.raises(data.DataTableError, match="'h100-sxm', field 'memory_gb'"):
                data.load_gpus(tmp)


def test_every_compute_precision_the_library_knows_is_a_key_a_gpu_row_may_quote():
    from roofline.physics.precision import PRECISIONS

    assert {p.compute for p in PRECISIONS.values()} <= set(data.COMPUTE_PRECISIONS)


# ---------------------------------------------------------------- where the tables are found


@pytest.fixture
def fresh_cache():
    data.clear_cache()
    yield
    data.clear_cache()


def test_roofline_data_dir_points_the_public_api_at_other_tables(tables, monkeypatch, fresh_cache):
    d = tables("gpus.toml", "memory_gb = 80", "memory_gb = 96")  # a what-if H100 with 96 GB
    monkeypatch.setenv("ROOFLINE_DATA_DIR", str(d))
    data.clear_cache()
    assert data.data_dir() == d
    assert rl.get_gpu("h100-sxm").memory_bytes == 96 * 2**30
    monkeypatch.delenv("ROOFLINE_DATA_DIR")
    data.clear_cache()
    assert rl.get_gpu("h100-sxm").memory_bytes == 80 * 2**30


def test_a_broken_table_is_a_roofline_error_from_the_public_api(tables, monkeypatch, fresh_cache):
    monkeypatch.setenv("ROOFLINE_DATA_DIR", str(tables("gpus.toml", "memory_gb = 80", "memory_gb = -80")))
    data.clear_cache()
    with pytest.raises(rl.RooflineError, match="memory_gb"):
        rl.get_gpu("h100-sxm")


def test_a_vintage_names_the_program_and_must_be_of_a_table_engine(tables, monkeypatch, fresh_cache):
    engines = data.engines()
    assert engines["llama.cpp-2025"].software == "llama.cpp" == engines["llama.cpp"].software
    assert engines["vllm-2024"].software == "vllm" and engines["sglang"].software == "sglang"
    broken = tables("engines.toml", 'vintage_of = "vllm"', 'vintage_of = "vllm-2023"')
    monkeypatch.setenv("ROOFLINE_DATA_DIR", str(broken))
    data.clear_cache()
    with pytest.raises(rl.DataTableError, match="vintage_of.*'vllm-2023' is not another engine's id"):
        data.engines()


def test_lookup_order_env_then_package_then_repository(tmp_path, monkeypatch):
    package = tmp_path / "site-packages" / "roofline"
    (package / "tables").mkdir(parents=True)
    real_files = data.importlib.resources.files
    monkeypatch.setattr(
        data.importlib.resources, "files", lambda name: package if name == "roofline" else real_files(name)
    )
    monkeypatch.delenv("ROOFLINE_DATA_DIR", raising=False)
    # 3. no tables inside the package (the editable install): the repository's data/
    assert Path(data.data_dir()) == ROOT / "data"
    # 2. a package that carries its tables (an installed wheel) uses them
    shutil.copy(ROOT / "data" / "gpus.toml", package / "tables" / "gpus.toml")
    assert Path(data.data_dir()) == package / "tables"
    assert Path(data.shipped_dir()) == package / "tables"
    # 1. ROOFLINE_DATA_DIR beats both
    monkeypatch.setenv("ROOFLINE_DATA_DIR", str(tmp_path))
    assert data.data_dir() == tmp_path
    assert Path(data.shipped_dir()) == package / "tables"


@pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv to build the wheel")
def test_the_wheel_ships_the_tables_and_a_plain_install_finds_them(tmp_path):
    build = subprocess.run(
        ["uv", "build", "--wheel", "--offline", "--quiet", "-o", str(tmp_path / "dist")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        for f in (ROOT / "data").glob("*.toml"):
            assert z.read(f"roofline/tables/{f.name}") == f.read_bytes(), f.name
        z.extractall(tmp_path / "site")
    # Import the unpacked wheel from a directory outside the repository, as a non-editable install would.
    code = (
        "import roofline as rl, roofline.data as d; "
        "print(d.data_dir()); print(rl.get_gpu('h100-sxm').memory_bytes)"
    )
    env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_DATA_DIR"}
    env["PYTHONPATH"] = str(tmp_path / "site")
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    where, memory = proc.stdout.split()
    assert Path(where) == tmp_path / "site" / "roofline" / "tables"
    assert float(memory) == 80 * 2**30


# ---------------------------------------------------------------- issue 10/12 optional fields


@pytest.mark.parametrize("model", rl.models().values(), ids=lambda m: m.id)
def test_checkpoint_format_is_a_known_weight_format(model):
    from roofline.physics.precision import weight_format

    assert weight_format(model.checkpoint_format).id == model.checkpoint_format


def test_every_vendor_gpu_row_is_binary_sized():
    # HBM, GDDR and unified memory come in powers of two: every row of the project's table says so.
    for gpu in data.load_gpus().values():
        assert gpu.memory_binary, gpu.id
        assert gpu.memory_bytes / 2**30 == pytest.approx(round(gpu.memory_bytes / 2**30, 3))


def test_a_user_row_without_the_flag_stays_decimal(tables):
    d = tables("gpus.toml", "memory_binary = true\n", "")
    assert data.load_gpus(d)["h100-sxm"].memory_bytes == 80e9


def test_sliding_window_needs_its_layer_count(tables):
    d = tables("models.toml", "sliding_window_layers = 32\n", "")
    err = _error(data.load_models, d)
    assert err.field == "sliding_window" and "both" in str(err)
