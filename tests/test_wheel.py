"""The course's library as a user installs it: a wheel in a fresh environment outside the repository.

A module that built a path to the checkout's data/ by hand would crash an installed wheel. This builds the
wheel, installs it (with the locked runtime dependencies) into a new virtual environment in a temporary
directory, and runs the commands a user runs first."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv to build and install the wheel")


def _run(cmd, cwd, env=None, timeout=300):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))}\n{p.stdout}\n{p.stderr}"
    return p


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The ``roofline`` command of a fresh environment holding only the wheel and its locked dependencies."""
    tmp = tmp_path_factory.mktemp("wheel")
    _run(["uv", "build", "--wheel", "--offline", "--quiet", "-o", str(tmp / "dist")], ROOT)
    reqs = tmp / "requirements.txt"
    _run(["uv", "export", "--frozen", "--no-hashes", "--no-emit-project", "--no-default-groups", "--quiet",
          "-o", str(reqs)], ROOT)  # fmt: skip
    venv = tmp / "venv"
    _run(["uv", "venv", "--quiet", "--python", sys.executable, str(venv)], tmp)
    (wheel,) = (tmp / "dist").glob("*.whl")
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    env.pop("ROOFLINE_DATA_DIR", None)
    _run(["uv", "pip", "install", "--quiet", "-r", str(reqs), str(wheel)], tmp, env=env)
    return venv / "bin" / "roofline"


# Run inside the installed package's Python, one process for all: each command's JSON on one line.
CLI_RUNS = """
import contextlib, io, json, sys
from roofline.apps.cli import main
from roofline.measure.benchmark_files import example_path
runs = [
    ["step", "--model", "llama-3-8b", "--gpu", "h100-sxm"],
    ["generate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "4", "--input", "128",
     "--output", "32"],
    ["serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--rate", "2", "--requests", "50",
     "--input", "128", "--output", "32"],
    ["diagnose", "--from", str(example_path("llama_bench.json"))],
    ["step", "--model", "deepseek-r1", "--gpu", "h200", "--gpus", "8"],
]
for argv in runs:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*argv, "--json"])
    print(json.dumps({"argv": argv, "code": code, "out": json.loads(out.getvalue())}))
# every lesson of the package imports, with its cards and its figures' style
import importlib, pkgutil, roofline.lessons as L
names = [m.name for m in pkgutil.iter_modules(L.__path__)]
for n in names:
    importlib.import_module(f"roofline.lessons.{n}")
from roofline.lessons import pack01_speed_physics as p, step_time as s
from roofline.scenario import Scenario
print(json.dumps({"lessons": len(names), "title": p.card("Q1").title,
                  "png": s.StepTimeVsBatch(Scenario()).png()[:4].decode("latin-1")}))
"""


@pytest.fixture(scope="module")
def installed_run(installed, tmp_path_factory) -> list[dict]:
    """``CLI_RUNS`` in the installed package's Python, one process: each printed line, parsed."""
    env = {k: v for k, v in os.environ.items() if k not in ("ROOFLINE_DATA_DIR", "PYTHONPATH")}
    cwd = tmp_path_factory.mktemp("run")
    p = _run([str(installed.parent / "python"), "-c", CLI_RUNS], cwd, env=env, timeout=120)
    return [json.loads(line) for line in p.stdout.splitlines()]


def test_installed_wheel_runs_the_cli(installed, installed_run, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("ROOFLINE_DATA_DIR", "PYTHONPATH")}
    p = _run([str(installed), "list", "gpus", "--json"], tmp_path, env=env, timeout=120)  # the console script
    assert "error" not in json.loads(p.stdout)
    runs = {
        r["argv"][0] + ("-r1" if "deepseek-r1" in r["argv"] else ""): r for r in installed_run if "argv" in r
    }
    assert all(r["code"] == 0 and "error" not in r["out"] for r in runs.values()), runs
    assert "calibration.toml" in runs["step"]["out"]["achievable"]["calibration"]
    assert "calibration.toml" in runs["generate"]["out"]["calibration"]["source"]
    assert runs["diagnose"]["out"]["runs"][0]["gpu_id"] == "rtx-4090"  # the example files ship in the wheel
    assert runs["step-r1"]["out"]["model_id"] == "deepseek-v3"  # so do the aliases' table


def test_installed_wheel_says_where_the_lessons_are_not(installed, tmp_path):
    """The wheel carries the library and its tables, not the notebooks: the course map and instructor mode
    say how to point at them (never an empty course), and do find them once told."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPEED_PHYSICS_NOTEBOOKS", "PYTHONPATH")}
    python = installed.parent / "python"
    code = "from roofline.course.course_map import course_map; print(len(course_map()))"
    p = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert p.returncode != 0 and "SPEED_PHYSICS_NOTEBOOKS" in p.stderr and "Traceback" in p.stderr
    p = subprocess.run([str(installed.parent / "instructor"), "16"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert p.returncode != 0 and "instructor: no course notebooks" in p.stderr, p.stderr
    told = {**env, "SPEED_PHYSICS_NOTEBOOKS": str(ROOT / "notebooks")}
    p = _run([str(python), "-c", code], tmp_path, env=told)
    assert int(p.stdout) >= 20


def test_installed_wheel_carries_every_lesson_with_its_cards_and_figure_style(installed_run):
    (lessons,) = [r for r in installed_run if "lessons" in r]
    assert lessons["lessons"] == len(list((ROOT / "notebooks").glob("*.ipynb")))
    assert lessons["title"].startswith("Can we advertise 300 tokens/s?") and lessons["png"] == "\x89PNG"
