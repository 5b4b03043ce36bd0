"""Calibrating an engine to your own measurements: `roofline.calibration.calibrate`, `roofline calibrate`."""

from __future__ import annotations

import contextlib
import io
import json
import tomllib

import pytest

import roofline as rl
from roofline import engines
from roofline.apps.cli import main
from roofline.calibration import calibrate
from roofline.engines.params import forget_frozen_tables

M, G = "llama-3-8b", "h100-sxm"


def _reread() -> None:
    rl.data.clear_cache()
    forget_frozen_tables()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A learner's own tables in a fresh folder, forgotten afterwards."""
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    _reread()
    yield tmp_path
    monkeypatch.undo()  # the session's own home again, then re-read the tables
    _reread()


def _engine_points(costs: dict) -> list[calibrate.Point]:
    """Points a known engine would measure: vLLM's kernels with ``costs``, at batches 1, 8, 64."""
    p = engines.engine_params("vllm", G).replace(**costs)
    points = []
    for batch in (1, 8, 64):
        t = float(engines.decode_step_times(engines.StepTimer("vllm", M, G, params=p), batch, 1000)["total"])
        points.append(calibrate.Point(M, G, "tpot", t, batch=batch, input_tokens=1000, output_tokens=1))
    return points


def test_the_fit_recovers_a_known_engines_costs():
    """Three decode steps made by an engine with 2 ms per step and 100 µs per sequence: the fit finds them
    (to a few per cent) and predicts the points back."""
    costs = {"step_overhead_s": 2e-3, "sequence_overhead_s": 100e-6}
    points = _engine_points(costs)
    cal = calibrate.fit_points(points, "mine", base="vllm")
    fitted = cal.overheads["mine"]
    assert fitted["step_overhead_s"] == pytest.approx(2e-3, rel=0.1)
    assert fitted["sequence_overhead_s"] == pytest.approx(100e-6, rel=0.1)


def test_a_measurement_below_the_floor_is_refused():
    # 15.01 GB in 3 ms would be 5 TB/s on a 3.35 TB/s GPU
    with pytest.raises(rl.InvalidConfigurationError, match="faster than the ideal floor"):
        calibrate.fit_points([calibrate.Point(M, G, "tpot", 3e-3)], "x")


def test_contradictory_measurements_are_refused():
    pts = [calibrate.Point(M, G, "tpot", 7e-3), calibrate.Point(M, G, "tpot", 20e-3)]
    with pytest.raises(rl.InvalidConfigurationError, match="disagree by 2.9x"):
        calibrate.fit_points(pts, "x")


def test_the_ideal_cannot_be_a_base():
    with pytest.raises(rl.InvalidConfigurationError, match="real engine"):
        calibrate.fit_points([calibrate.Point(M, G, "tpot", 7e-3)], "x", base="ideal")


def test_a_saved_engine_is_used_by_name_everywhere(home):
    points = _engine_points({"step_overhead_s": 2e-3})
    cal = calibrate.fit_points(points, "my-vllm")
    calibrate.save(cal, "my-vllm", "vllm", points)
    assert engines.get_engine("my-vllm").kernels == "vllm"
    step = float(engines.decode_step_times(engines.StepTimer("my-vllm", M, G), 1, 1000)["total"])
    assert step == pytest.approx(points[0].measured_s, rel=0.05)
    # calibrating again under the same name replaces the first, and a project id is not a valid name
    calibrate.save(cal, "my-vllm", "vllm", points)
    assert (home / "engines.toml").read_text().count('id = "my-vllm"') == 1
    costs = "".join(f"{k} = 0.001\n" for k in cal.overheads["my-vllm"])
    (home / "calibration.toml").write_text(f'[engine."vllm"]\n{costs}')
    _reread()
    with pytest.raises(rl.DataTableError, match="project engine"):
        engines.load_calibration()


def test_saved_tables_hold_every_engine_and_its_exact_costs(home):
    """The user's TOML files parse to one [[engine]] row and one [engine.<id>] table per calibrated engine:
    a second calibration adds its own, a recalibration replaces its own, and the costs read back exactly."""
    points = _engine_points({"step_overhead_s": 2e-3})
    first = calibrate.fit_points(points, "mine-a")
    calibrate.save(first, "mine-a", "vllm", points)
    calibrate.save(calibrate.fit_points(points[:2], "mine-b", base="sglang"), "mine-b", "sglang", points[:2])
    calibrate.save(first, "mine-a", "vllm", points)
    rows = tomllib.loads((home / "engines.toml").read_text())["engine"]
    assert [r["id"] for r in rows] == ["mine-b", "mine-a"]
    assert rows[0]["kernels"] == "sglang" and rows[0]["kind"] == "calibrated" and rows[0]["aliases"] == []
    costs = tomllib.loads((home / "calibration.toml").read_text())["engine"]
    assert set(costs) == {"mine-a", "mine-b"} and costs["mine-a"] == first.overheads["mine-a"]
    assert engines.get_engine("mine-b").parallel == engines.get_engine("sglang").parallel


def test_a_broken_user_file_is_named_not_overwritten(home):
    points = _engine_points({"step_overhead_s": 2e-3})
    cal = calibrate.fit_points(points, "mine")
    (home / "engines.toml").write_text("[[engine]\nid = ")
    with pytest.raises(rl.DataTableError, match="engines.toml: not valid TOML"):
        calibrate.save(cal, "mine", "vllm", points)
    assert (home / "engines.toml").read_text() == "[[engine]\nid = "


def test_a_calibrated_engine_does_not_stop_saving_a_machine_beside_it(home):
    """`roofline calibrate` writes engines.toml and calibration.toml into the user's folder; that folder
    stays the user's own, where `roofline measure --save` may still write gpus.toml."""
    from roofline.measure import userdata

    points = _engine_points({"step_overhead_s": 2e-3})
    calibrate.save(calibrate.fit_points(points, "my-vllm"), "my-vllm", "vllm", points)
    assert userdata.check_destination(home / "gpus.toml") == home / "gpus.toml"


def test_the_command_line(home):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "calibrate",
                "--name",
                "my-h100",
                "--model",
                M,
                "--gpu",
                G,
                "--point",
                "tpot=7,context=1000",
                "--point",
                "tpot=10,batch=32,context=1000",
                "--json",
            ]
        )
    d = json.loads(out.getvalue())
    assert code == 0 and d["engine"] == "my-h100" and len(d["saved"]) == 2
    assert set(d["costs_s"]) == {
        "step_overhead_s",
        "layer_overhead_s",
        "sequence_overhead_s",
        "allreduce_overhead_s",
        "hop_overhead_s",
    }
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["calibrate", "--name", "x", "--model", M, "--gpu", G, "--point", "speed=7"]) == 2


def test_a_save_replaces_both_files_whole_or_neither(home, monkeypatch):
    """Both tables are written to temporary files first and then moved into place: a write that fails
    half-way leaves the earlier tables as they were, and no temporary file behind."""
    points = _engine_points({"step_overhead_s": 2e-3})
    calibrate.save(calibrate.fit_points(points, "mine-a"), "mine-a", "vllm", points)
    before = {p.name: p.read_text() for p in home.iterdir()}
    real, calls = calibrate.tempfile.mkstemp, []

    def full_disk_on_the_second_file(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(calibrate.tempfile, "mkstemp", full_disk_on_the_second_file)
    with pytest.raises(OSError, match="No space left"):
        calibrate.save(calibrate.fit_points(points, "mine-b"), "mine-b", "vllm", points)
    assert {p.name: p.read_text() for p in home.iterdir()} == before


def test_measurements_that_need_an_engine_spending_seconds_a_step_are_refused():
    """TPOT 9 s for Llama 3 8B on an H100 (a unit slip: 9 ms meant) would fit overheads of seconds; the fit
    is refused with the reason instead of saving an engine that prices a step in seconds."""
    p = calibrate.Point(M, G, "tpot", 9.0, batch=1, input_tokens=1000, output_tokens=1)
    with pytest.raises(rl.InvalidConfigurationError, match="more than an engine spends.*check the units"):
        calibrate.fit_points([p], "mine")


def test_a_learners_calibration_with_an_implausible_cost_is_named(home, capsys):
    """A user's calibration.toml (hand-edited, or from an older version) with a step overhead of 1e300 s is
    a table error naming the file and the range, not a 1e300 s step at exit 0."""
    points = _engine_points({"step_overhead_s": 2e-3})
    calibrate.save(calibrate.fit_points(points, "mine"), "mine", "vllm", points)
    text = (home / "calibration.toml").read_text()
    costs = tomllib.loads(text)["engine"]["mine"]
    (home / "calibration.toml").write_text(text.replace(repr(costs["step_overhead_s"]), "1e300"))
    _reread()
    assert main(["cost", "--model", M, "--gpu", G, "--engine", "mine", "--json"]) == 2
    message = json.loads(capsys.readouterr().out)["error"]["message"]
    assert "calibration.toml" in message and "step_overhead_s" in message and "0.1 s" in message
