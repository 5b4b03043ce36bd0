"""Set-up: the course runs on any Python >= 3.11 the machine has, opens without the test tools, prints no
bytecode message on every run, and its notebooks name the kernel that is installed."""

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
UV = PYPROJECT["tool"]["uv"]


def test_any_python_from_3_11_and_never_a_download():
    assert PYPROJECT["project"]["requires-python"] == ">=3.11"
    # A `.python-version` names one minor version; with downloads off, a machine that has only another
    # (say 3.12) could not build the environment at all.
    assert not (ROOT / ".python-version").exists()
    assert UV["python-downloads"] == "never"
    assert UV["python-preference"] == "only-system"


def test_this_interpreter_satisfies_the_range():
    assert sys.version_info >= (3, 11)


def test_opening_the_course_does_not_install_the_test_tools():
    groups = PYPROJECT["dependency-groups"]
    test_tools = {req.split(">")[0].split("=")[0] for req in groups["test"]}
    assert {"pytest", "playwright", "nbval", "hypothesis"} <= test_tools
    assert UV["default-groups"] == []  # `uv run jupyter lab` installs the project's dependencies only
    runtime = {req.split(">")[0].split("=")[0] for req in PYPROJECT["project"]["dependencies"]}
    assert not runtime & test_tools


def test_ci_runs_the_test_command_with_the_test_group():
    script = (ROOT / ".ci/run").read_text()
    assert script.rstrip().splitlines()[-1] == "uv run --group test pytest"


def test_no_bytecode_compile_on_every_run():
    # `compile-bytecode = true` makes every `uv run` recompile the environment and print
    # "Bytecode compiled N files"; it is compiled once at sync time instead (.ci/run, README).
    assert "compile-bytecode" not in UV
    assert "--compile-bytecode" in (ROOT / ".ci/run").read_text()


def test_uv_run_prints_no_bytecode_message(tmp_path):
    uv = subprocess.run(["uv", "--version"], capture_output=True, text=True)
    if uv.returncode != 0:
        pytest.skip("uv is not on PATH")
    run = subprocess.run(
        ["uv", "run", "--offline", "python", "-c", "print('ok')"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert "Bytecode compiled" not in run.stderr + run.stdout


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_stores_the_installed_kernelspec(path):
    """JupyterLab marks a notebook modified on opening when its stored kernelspec differs from the
    installed kernel's (tools/refresh_notebooks.py writes the installed one)."""
    from jupyter_client.kernelspec import KernelSpecManager

    stored = json.loads(path.read_text())["metadata"].get("kernelspec", {})
    spec = KernelSpecManager().get_kernel_spec(stored.get("name", "python3"))
    assert stored == {"display_name": spec.display_name, "language": spec.language, "name": "python3"}
