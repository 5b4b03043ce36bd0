"""Issue 21, saved GPU rows: ``roofline measure --save`` never writes into a folder of tables, and refuses a
name within a typo of a project GPU id, so ``--gpu H100`` keeps suggesting ``h100-sxm``."""

import shutil
from pathlib import Path

import pytest

import roofline as rl
from roofline.apps.cli import main
from roofline.measure import bench, userdata

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def env(tmp_path, monkeypatch):
    """Two copies of the shipped tables, ``a`` and ``b``; the test points the variables at them."""
    folders = {}
    for name in ("a", "b"):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        for f in (ROOT / "data").glob("*.toml"):
            shutil.copy(f, folders[name] / f.name)
    userdata.reload_tables()
    yield monkeypatch, folders
    monkeypatch.undo()
    userdata.reload_tables()


@pytest.mark.parametrize("same_folder", [False, True], ids=["another-copy", "the-data-dir-itself"])
def test_a_saved_row_never_goes_into_a_folder_of_tables(env, same_folder, fake_machine):
    monkeypatch, folders = env
    monkeypatch.setenv("ROOFLINE_DATA_DIR", str(folders["b"] if not same_folder else folders["a"]))
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(folders["a"]))  # a folder of tables as the user's home
    before = (folders["a"] / "gpus.toml").read_text()
    with pytest.raises(rl.InvalidConfigurationError, match="holds the project's data tables"):
        userdata.save_user_gpu("my-laptop", fake_machine)
    assert (folders["a"] / "gpus.toml").read_text() == before  # untouched, not rewritten
    assert "my-laptop" not in (ROOT / "data" / "gpus.toml").read_text()


def test_the_cli_refuses_the_destination_before_measuring(env, capsys):
    monkeypatch, folders = env
    monkeypatch.setenv("ROOFLINE_DATA_DIR", str(folders["b"]))
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(folders["a"]))
    monkeypatch.setattr(
        bench, "measure", lambda quick: pytest.fail("measured before checking the destination")
    )
    assert main(["measure", "--quick", "--save", "my-laptop"]) == 2
    assert "holds the project's data tables" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "close"),
    [
        ("h100", "h100-sxm"),  # the start of an id: what a learner types meaning the H100
        ("h100-smx", "h100-sxm"),  # one typo
        ("rtx4090", "rtx-4090"),  # the id without its dash
        ("l40", ("l40s", "l4")),  # a start of one id, a typo of another
        ("a10", ("a10g", "a100-80gb-sxm", "a100-40gb")),
        ("m4-mac", "m4-max"),
    ],
)
def test_a_name_within_a_typo_of_a_project_id_is_refused(tmp_path, monkeypatch, name, close):
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    with pytest.raises(rl.InvalidConfigurationError) as err:
        userdata.check_save_name(name)  # before: saved, and then '--gpu H100' found it instead of h100-sxm
    assert any(repr(c) in str(err.value) for c in ((close,) if isinstance(close, str) else close))
    assert not (tmp_path / "gpus.toml").exists()


@pytest.mark.parametrize("name", ["my-laptop", "my-mac", "home-h100", "workstation", "m1-air"])
def test_names_of_ones_own_are_accepted(tmp_path, monkeypatch, name):
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    assert userdata.check_save_name(name) == name


def test_after_refusing_h100_the_cli_still_suggests_the_project_gpu(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    monkeypatch.setattr(bench, "measure", lambda quick: pytest.fail("measured before checking the name"))
    userdata.reload_tables()
    try:
        assert main(["measure", "--quick", "--save", "h100"]) == 2
        assert "'h100-sxm'" in capsys.readouterr().err
        with pytest.raises(rl.UnknownNameError) as err:
            rl.get_gpu("H100")
        assert "h100-sxm" in err.value.suggestions
    finally:
        monkeypatch.undo()
        userdata.reload_tables()
