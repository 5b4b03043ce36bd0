"""The two benchmarks that drive Chromium against the instructor app run to the end in their ``--smoke`` mode
(tests/test_benchmark_scripts.py runs the others): the slider latency with two moves of the course's explorer,
and three page loads at once against a cap of one kernel, every answer a page or the cap's 503, never
Voilà's 500.
Each runs in its own process: the browser tests' Playwright session already holds this one's event loop."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["browser_latency", "instructor_switch"])
def test_a_browser_benchmark_runs_to_the_end_in_its_smoke_mode(name):
    run = [sys.executable, "-m", f"benchmarks.{name}", "--smoke"]
    done = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, (
        f"benchmarks/{name}.py --smoke exited {done.returncode}:\n{done.stderr[-2000:]}"
    )
    if name == "instructor_switch":
        assert "other: none" in done.stdout and "0 never finished" in done.stdout
