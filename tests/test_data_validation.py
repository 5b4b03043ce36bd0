"""Issue 21, every table through the validated loader: the assumptions table has a schema with a physical
bound per row, importing the library reads no table, and broken tables (a syntax error, a missing file, a
value out of range, a table nested thousands deep, KV heads that do not divide the attention heads) are a
DataTableError naming the file, never a traceback from ``import roofline`` or a RecursionError."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import roofline as rl
from roofline import data

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def fresh_cache():
    data.clear_cache()
    yield
    data.clear_cache()


def _error(load, directory):
    with pytest.raises(rl.DataTableError) as err:
        load(directory)
    return err.value


# ------------------------------------------------------------------ importing reads no table


def test_import_roofline_reads_no_table_and_the_first_use_names_the_broken_file(tmp_path):
    for f in (ROOT / "data").glob("*.toml"):
        (tmp_path / f.name).write_text("this is = = not TOML\n")  # every table broken
    script = (
        "import roofline as rl\n"
        "try:\n"
        "    rl.assumption('activation_bytes')\n"
        "except rl.DataTableError as e:\n"
        "    print('DataTableError:', e)\n"
    )
    env = {**os.environ, "ROOFLINE_DATA_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr  # before: import raised (assumptions read at import time)
    assert proc.stdout.startswith("DataTableError:")
    assert str(tmp_path / "assumptions.toml") in proc.stdout and "not valid TOML" in proc.stdout


def test_a_missing_assumptions_table_is_a_data_table_error(tmp_path, monkeypatch, fresh_cache):
    # No assumptions.toml anywhere: not in $ROOFLINE_DATA_DIR and not in the shipped tables.
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    monkeypatch.setattr(data, "_packaged_tables", lambda: None)
    monkeypatch.setattr(data, "_repository_tables", lambda: tmp_path)
    data.clear_cache()
    with pytest.raises(rl.DataTableError, match=r"assumptions\.toml: cannot read the table"):
        rl.assumption("engine_memory_fraction")
    with pytest.raises(rl.DataTableError, match=r"assumptions\.toml"):
        len(rl.ASSUMPTIONS)


# ------------------------------------------------------------------ the assumptions schema


def test_every_shipped_assumption_has_a_kind_and_lies_in_its_bound():
    table = data.load_assumptions(ROOT / "data")
    assert table.keys() == rl.ASSUMPTIONS.keys()
    for a in table.values():
        assert a.kind in data.ASSUMPTION_KINDS
        assert data.ASSUMPTION_KINDS[a.kind].problem(a.value) is None, a.id
    # The physical kinds the issue names: fractions, overheads and the usable memory share.
    kinds = {a.id: a.kind for a in table.values()}
    assert kinds["engine_memory_fraction"] == kinds["achieved_bandwidth_fraction"] == "fraction"
    assert kinds["collective_base_latency_s"] == kinds["kv_transfer_latency_s"] == "duration_s"


@pytest.mark.parametrize(
    ("row", "old", "new", "says"),
    [
        (
            "engine_memory_fraction",
            "value = 0.9\n",
            "value = 5.0\n",
            "a fraction must be more than 0 and at most 1",
        ),
        ("achieved_bandwidth_fraction", "value = 0.8\n", "value = 0\n", "a fraction must be more than 0"),
        ("collective_base_latency_s", "value = 6.6e-6\n", "value = -6.6e-6\n", "must be from 0 to 3600 s"),
        ("kernels_per_decode_step", "value = 300\n", "value = 2.5\n", "a count must be a whole number"),
        ("ttft_target_s", "value = 1.0\n", "value = 0\n", "a latency target must be more than 0"),
        ("activation_workspace_bytes", "value = 5153960755\n", "value = -1\n", "from 0 to 1e15 bytes"),
        ("ownership_hours_per_day", "value = 8\n", "value = 25\n", "at most 24"),
        (
            "electricity_usd_per_kwh",
            "value = 0.187\n",
            "value = -0.1\n",
            "electricity price must be more than 0",
        ),
    ],
)
def test_an_assumption_outside_its_kinds_bound_is_refused(tables, row, old, new, says):
    text = (ROOT / "data" / "assumptions.toml").read_text()
    start = text.index(f'id = "{row}"')
    edited = text[:start] + text[start:].replace(old, new, 1)
    d = tables("assumptions.toml", text, edited)
    err = _error(data.load_assumptions, d)
    assert err.row_id == repr(row) and err.field == "value" and says in err.problem
    assert "assumptions.toml" in str(err)


def test_engine_memory_fraction_of_five_is_refused_through_the_public_api(tables, monkeypatch, fresh_cache):
    # The audit's repro: engine_memory_fraction = 5.0 gave an 80 GB H100 about 420 GB of usable memory.
    row = 'id = "engine_memory_fraction"\nvalue = '
    d = tables("assumptions.toml", row + "0.9\n", row + "5.0\n")
    monkeypatch.setenv(data.ENV_VAR, str(d))
    data.clear_cache()
    with pytest.raises(rl.DataTableError, match="engine_memory_fraction.*field 'value'.*at most 1, got 5"):
        rl.memory_available_bytes("h100-sxm")


@pytest.mark.parametrize(
    ("old", "new", "field", "says"),
    [
        ('kind = "fraction"\n', "", "kind", "missing"),
        ('kind = "fraction"\n', 'kind = "percent"\n', "kind", "expected one of 'fraction'"),
        ("value = 0.8\n", 'value = "0.8"\n', "value", "expected a number"),
        ('reason = "The study card', 'reasons = "The study card', "reasons", "did you mean 'reason'"),
    ],
)
def test_an_assumption_row_is_checked_like_every_other_row(tables, old, new, field, says):
    err = _error(data.load_assumptions, tables("assumptions.toml", old, new))
    assert err.field == field and says in err.problem and err.row_id == "'achieved_bandwidth_fraction'"


def test_the_assumptions_mapping_is_lazy_and_patchable(monkeypatch):
    newer = rl.ASSUMPTIONS["engine_memory_fraction"].__class__(
        **{**vars(rl.ASSUMPTIONS["engine_memory_fraction"]), "value": 0.92}
    )
    monkeypatch.setitem(rl.ASSUMPTIONS, "engine_memory_fraction", newer)
    assert rl.assumption("engine_memory_fraction") == 0.92
    monkeypatch.undo()
    assert rl.assumption("engine_memory_fraction") == 0.9
    with pytest.raises(rl.UnknownNameError, match="engine_memory_fraction"):
        rl.assumption("engine_memory_fractoin")


# ------------------------------------------------------------------ other tables


def test_kv_heads_must_divide_the_attention_heads(tables):
    # 32 query heads cannot be shared out evenly among 6 KV heads.
    err = _error(data.load_models, tables("models.toml", "kv_heads = 8\n", "kv_heads = 6\n"))
    assert err.row_id == "'llama-3-8b'" and err.field == "kv_heads"
    assert "6 KV heads do not divide 32 attention heads" in err.problem


@pytest.mark.parametrize("table", ["gpus.toml", "assumptions.toml", "prices.toml"])
@pytest.mark.parametrize("nest", ["[", "{a = "])
def test_a_table_nested_thousands_deep_is_a_data_table_error(tmp_path, table, nest):
    closing = "]" if nest == "[" else "}"
    (tmp_path / table).write_text("x = " + nest * 5000 + ("1" if nest != "[" else "") + closing * 5000 + "\n")
    for f in ("gpus.toml", "models.toml", "assumptions.toml"):
        if not (tmp_path / f).exists():
            shutil.copy(ROOT / "data" / f, tmp_path / f)
    load = {"gpus.toml": data.load_gpus, "assumptions.toml": data.load_assumptions}.get(
        table, data.load_price_rows
    )
    err = _error(load, tmp_path)  # before: RecursionError escaped
    assert err.problem == "nested too deeply to be a table" and table in str(err)


def test_a_deep_but_parseable_value_is_described_not_a_recursion_error(tables):
    deep = "[" * 150 + "]" * 150
    err = _error(data.load_gpus, tables("gpus.toml", "memory_gb = 80", f"memory_gb = {deep}"))
    assert err.field == "memory_gb" and "expected a number" in err.problem


# ------------------------------------------------------------------ values that break the physics


def _tables_with(tmp_path, name, old, new):
    """A copy of the shipped tables in ``tmp_path`` with ``old`` replaced by ``new`` in table ``name``."""
    for f in (ROOT / "data").glob("*.toml"):
        shutil.copy(f, tmp_path / f.name)
    text = (tmp_path / name).read_text()
    assert old in text
    (tmp_path / name).write_text(text.replace(old, new))
    return tmp_path


def test_a_calibration_table_with_an_overhead_of_seconds_is_refused(
    tmp_path, monkeypatch, fresh_cache, capsys
):
    from roofline.apps.cli import main
    from roofline.engines.params import forget_frozen_tables

    step = rl.engines.load_calibration().overheads["vllm"]["step_overhead_s"]
    tables = _tables_with(
        tmp_path, "calibration.toml", f"step_overhead_s = {step:.6g}\n", "step_overhead_s = 1e300\n"
    )
    monkeypatch.setenv(data.ENV_VAR, str(tables))
    data.clear_cache()
    forget_frozen_tables()
    try:
        assert main(["cost", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--engine", "vllm"]) == 2
        err = capsys.readouterr().err
        assert 'engine."vllm"] step_overhead_s: must be a time from 0 to 0.1 s, got 1e+300' in err
    finally:
        monkeypatch.undo()
        data.clear_cache()
        forget_frozen_tables()


def test_a_gpu_without_a_link_is_refused_on_several_gpus(tmp_path, monkeypatch, fresh_cache, capsys):
    """interconnect_gb_per_s = 0 (a row with no GPU-to-GPU link) runs on one GPU; on two, a split over a
    link that does not exist is refused (exit 2), never timed over a 1 byte/s stand-in or divided by 0."""
    from roofline.apps.cli import main

    text = (ROOT / "data" / "gpus.toml").read_text()
    link = text.split('id = "h100-sxm"')[1].split("interconnect_gb_per_s = ")[1].split("\n")[0]
    old = f"interconnect_gb_per_s = {link}\n"
    tables = _tables_with(tmp_path, "gpus.toml", old, "interconnect_gb_per_s = 0\n")
    monkeypatch.setenv(data.ENV_VAR, str(tables))
    data.clear_cache()
    serve = ["serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--rate", "2", "--requests", "20",
             "--input", "100", "--output", "10"]  # fmt: skip
    try:
        assert main([*serve, "--json"]) == 0  # one GPU needs no link
        capsys.readouterr()
        for more in (
            ["--gpus", "2"],
            ["--gpus", "2", "--engine", "ideal"],
            ["--gpus", "2", "--pipeline-stages", "2"],
        ):
            assert main([*serve, *more]) == 2, more
            assert "h100-sxm has no GPU-to-GPU link" in capsys.readouterr().err, more
    finally:
        monkeypatch.undo()
        data.clear_cache()
