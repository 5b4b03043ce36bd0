"""The benchmarks in benchmarks/ import against today's library: a renamed module or function breaks them
here, not on the day someone measures. (Running them is what they are for; importing is cheap.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if p.stem != "__init__")


def test_every_benchmark_script_imports():
    code = "import importlib\n" + "".join(f"importlib.import_module('benchmarks.{s}')\n" for s in SCRIPTS)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
