"""Every lesson's explorers, found in its package: the functions named ``*_explorer`` (for the tests that
build them all, in Python and in a browser)."""

from __future__ import annotations

import importlib
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

# Explorers that are not a step's lab bench (no batch, context, precision and GPU controls to check).
NOT_A_STEP = {"kernel_fit_explorer", "home_explorer"}

# Where a lesson leaves one of the four controls out on purpose (the browser test reads this).
LEFT_OUT = {"slos_and_capacity": {"batch": "the simulator's batch follows from the load"}}


def lesson_package(notebook_stem: str):
    """The lesson package of a notebook: ``16_step_time`` → ``roofline.lessons.step_time``."""
    name = notebook_stem.split("_", 1)[1] if notebook_stem[:2].isdigit() else notebook_stem
    return importlib.import_module(f"roofline.lessons.{name}")


def lesson_explorers() -> dict[str, tuple]:
    """{notebook stem: its lesson's step explorers}, in notebook order."""
    found = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        lesson = lesson_package(path.stem)
        makers = tuple(
            getattr(lesson, n) for n in sorted(dir(lesson)) if n.endswith("_explorer") and n not in NOT_A_STEP
        )
        if makers:
            found[path.stem] = makers
    return found
