"""The benchmarks in benchmarks/ run against today's library: each one's ``--smoke`` run (the whole script on
a tiny workload) exits 0, so a renamed module, a changed option or a failed self-check breaks them here, not
on the day someone measures."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if p.stem != "__init__")
SMOKE = ("sweep", "serving_sim", "explorer_redraw", "story_redraw", "llamacpp_engine")
BROWSER = (
    "browser_latency",
    "instructor_switch",
)  # Chromium and Voilà: tests/browser/test_benchmark_smoke.py
ELSEWHERE = ("measure_quick",)  # its one run is tests/test_measure.py's fresh-process test (measure_once)


@pytest.fixture(autouse=True)
def _benchmarks_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))


def test_every_benchmark_has_a_smoke_run_here_or_in_the_browser_tests():
    assert set(SMOKE) | set(BROWSER) | set(ELSEWHERE) == set(SCRIPTS)
    for name in BROWSER:
        assert callable(importlib.import_module(f"benchmarks.{name}").main)


@pytest.mark.parametrize("name", SMOKE)
def test_a_benchmark_runs_to_the_end_in_its_smoke_mode(name, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    monkeypatch.chdir(ROOT)
    code = importlib.import_module(f"benchmarks.{name}").main(["--smoke"])
    assert code in (0, None), (
        f"benchmarks/{name}.py --smoke exited {code}:\n{capsys.readouterr().out[-2000:]}"
    )
