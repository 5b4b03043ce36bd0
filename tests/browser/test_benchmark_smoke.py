"""The two benchmarks that drive Chromium against the instructor app run to the end in their ``--smoke`` mode
(tests/test_benchmark_scripts.py runs the others): the slider latency with two moves per explorer, and four
page loads at once against a cap of two kernels, every answer a page or the cap's 503, never Voilà's 500."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["browser_latency", "instructor_switch"])
def test_a_browser_benchmark_runs_to_the_end_in_its_smoke_mode(name, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", [name, "--smoke"])
    code = importlib.import_module(f"benchmarks.{name}").main(["--smoke"])
    out = capsys.readouterr().out
    assert code == 0, f"benchmarks/{name}.py --smoke exited {code}:\n{out[-2000:]}"
    if name == "instructor_switch":
        assert "other: none" in out and "0 never finished" in out
