"""The code stays clean: ruff's lint rules and formatting (pyproject's [tool.ruff]) hold for every file."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ["lib", "tests", "benchmarks", "tools", "exercises", "notebooks"]


def ruff(*args: str, paths=PATHS) -> subprocess.CompletedProcess:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe is None:
        pytest.fail("ruff is missing: it is in the test group, `uv run --group test pytest` installs it")
    return subprocess.run([exe, *args, *paths], cwd=ROOT, capture_output=True, text=True)


def test_ruff_lint_is_clean():
    result = ruff("check", "--output-format", "concise")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied():
    result = ruff("format", "--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_readmes_python_examples_are_clean_and_formatted():
    # ruff reads Markdown's Python blocks in preview mode
    for args in (("check", "--preview"), ("format", "--preview", "--check")):
        result = ruff(*args, paths=["README.md"])
        assert result.returncode == 0, result.stdout + result.stderr
