"""The benchmarks in benchmarks/ import against today's library: a renamed module or function breaks them
here, not on the day someone measures. (Running them is what they are for; importing is cheap.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if p.stem != "__init__")


def test_every_benchmark_script_imports():
    code = "import importlib\n" + "".join(f"importlib.import_module('benchmarks.{s}')\n" for s in SCRIPTS)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


# Each benchmark's --smoke run: the whole script on a tiny workload, seconds each. The two that drive
# Chromium against Voilà (browser_latency, instructor_switch) need a browser and kernels: not here.
SMOKE = ("sweep", "serving_sim", "explorer_redraw", "story_redraw", "measure_quick", "llamacpp_engine")


def test_every_benchmark_runs_to_the_end_in_its_smoke_mode(tmp_path):
    """A benchmark that exits non-zero (a failed self-check, a renamed option) fails here, not on the day
    someone measures. The runs go side by side, each with its own user folder."""
    runs = {
        name: subprocess.Popen(
            [sys.executable, "-m", f"benchmarks.{name}", "--smoke"],
            cwd=ROOT,
            env={**os.environ, "SPEED_PHYSICS_HOME": str(tmp_path / name), "MPLBACKEND": "Agg"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name in SMOKE
    }
    for name, proc in runs.items():
        out, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0, f"benchmarks/{name}.py --smoke exited {proc.returncode}:\n{out[-2000:]}"
    assert set(SMOKE) | {"browser_latency", "instructor_switch"} == set(SCRIPTS)
