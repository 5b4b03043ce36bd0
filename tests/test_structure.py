"""The library's shape (issue 9): numbers never import plotting or widgets, the public API is written down
and matches the README, every lesson a docstring names exists, and the API reference is current."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import roofline as rl

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "roofline"
NUMBER_PACKAGES = [
    "roofline.physics",
    "roofline.lessons",
    "roofline.sim",
    "roofline.measure",
    "roofline.engines",
]
NUMBER_MODULES = [
    "roofline",
    "roofline.data",
    "roofline.assumptions",
    "roofline.units",
]
UI_ONLY = {"roofline.selfcheck.ui"}  # the self-check's widget; the rest of the package is numbers and HTML


def _number_modules() -> list[str]:
    names = list(NUMBER_MODULES)
    for package in [*NUMBER_PACKAGES, "roofline.selfcheck"]:
        module = importlib.import_module(package)
        names.append(package)
        names += [m.name for m in pkgutil.walk_packages(module.__path__, package + ".")]
    return sorted(set(names) - UI_ONLY)


def test_numbers_never_import_plotting_or_widgets():
    modules = _number_modules()
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(' '.join(m for m in ('matplotlib', 'ipywidgets', 'IPython') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", f"numbers import {done.stdout.strip()} (modules: {len(modules)})"
    assert len(modules) > 40  # the walk really found the packages


def _readme_api_names() -> set[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- api:start -->", 1)[1].split("<!-- api:end -->", 1)[0]
    return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", block))


def test_public_api_is_written_down_and_matches_the_readme():
    assert len(rl.__all__) == len(set(rl.__all__))
    assert all(hasattr(rl, name) for name in rl.__all__)
    assert "Scenario" in rl.__all__
    assert _readme_api_names() == set(rl.__all__)


def test_every_lesson_a_docstring_names_exists():
    notebooks = {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}
    numbers = {name.split("_", 1)[0] for name in notebooks if name[:2].isdigit()}
    missing = []
    for path in LIB.rglob("*.py"):
        text = path.read_text()
        for match in re.finditer(r"notebooks/([\w]+)\.ipynb", text):
            if match.group(1) not in notebooks:
                missing.append(f"{path.relative_to(ROOT)}: notebooks/{match.group(1)}.ipynb")
        for match in re.finditer(r"Taught in lessons? ((?:\d\d(?:, | and |/|–|-)?)+)", text):
            for number in re.findall(r"\d\d", match.group(1)):
                if number not in numbers:
                    missing.append(f"{path.relative_to(ROOT)}: lesson {number}")
    assert not missing, "docstrings name lessons that do not exist:\n" + "\n".join(missing)


# Shared infrastructure every lesson uses; each of their functions still names its lesson where it has one.
INFRASTRUCTURE = {
    "assumptions.py", "errors.py", "units.py", "data.py", "schema.py", "widgets.py", "plots.py",
    "readouts.py",
}  # fmt: skip


def test_every_module_says_which_lesson_teaches_it():
    undocumented = []
    for path in sorted(LIB.rglob("*.py")):
        if path.name == "__init__.py" or "/apps/" in str(path) or path.name in INFRASTRUCTURE:
            continue
        doc = importlib.import_module(
            "roofline." + ".".join(path.relative_to(LIB).with_suffix("").parts)
        ).__doc__
        if not doc or not re.search(r"Taught in|notebooks/\w+\.ipynb|lesson \d\d", doc):
            undocumented.append(str(path.relative_to(ROOT)))
    private = {p for p in undocumented if Path(p).name.startswith("_")}
    assert sorted(set(undocumented) - private) == [], "modules that never say which lesson teaches them"


def test_api_reference_is_current():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "api_docs.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


STANDARD_IMPORT_CELL = (
    "import numpy as np\n\n"
    "import roofline as rl\n"
    "from roofline import engines, lessons, measure, selfcheck, sim, ui, views\n"
    "from roofline.units import GB, KB, MB, MS, SECONDS_PER_HOUR, TB, TFLOPS, US, GiB, KiB, MiB"
)


def test_every_notebook_opens_with_the_same_import_cell_and_no_private_module():
    import nbformat

    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        assert code[0] == STANDARD_IMPORT_CELL, path.name
        for source in code[1:]:
            assert not re.search(r"^\s*(from|import) roofline", source, re.M), (path.name, source[:80])
            assert not re.search(r"\broofline\.(\w+\.)*_\w", source), (path.name, source[:80])
