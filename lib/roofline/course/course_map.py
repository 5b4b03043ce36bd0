"""The course map: which lessons exist, in what order, how long each takes and what to read first.

Shown in notebooks/00_start_here.ipynb. The rows live in ``course_map.toml`` beside this module; a row whose
notebook is not in ``notebooks/`` is left out, so the map never lists a missing lesson. The rows' order is
the learner's path (``course_path``): each notebook's closing **Next:** link goes to the following row.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from roofline.data import notebooks_dir as course_notebooks
from roofline.errors import DataTableError

MAP_FILE = Path(__file__).with_name("course_map.toml")
START = "00_start_here.ipynb"  # the start page: the path begins here, and the last lesson leads back

PARTS = {
    "card": "The study card's lessons (Pack 01, speed physics)",
    "check": "Check yourself",
    "beyond": "Beyond the card",
    "validation": "How the course checks its own models",
}


@dataclass(frozen=True)
class Lesson:
    """One row of the course map. ``minutes`` is an estimate (reading, running, answering), not measured."""

    notebook: str
    number: str
    title: str
    part: str
    minutes: int
    after: str
    card: tuple[str, ...]
    summary: str


def course_map(notebooks_dir: Path | str | None = None, map_file: Path | str = MAP_FILE) -> list[Lesson]:
    """The lessons whose notebook exists in ``notebooks_dir`` (default: the course's ``notebooks/``), in
    the map's order. A row with an unknown part or a missing or unknown field raises ``DataTableError``.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "16_step_time.ipynb").write_text("{}")
    >>> [(r.number, r.title) for r in course_map(d)]
    [('16', 'The step-time model')]
    """
    directory = Path(notebooks_dir) if notebooks_dir is not None else course_notebooks()
    lessons = []
    for i, row in enumerate(tomllib.loads(Path(map_file).read_text(encoding="utf-8")).get("lesson", [])):
        try:
            lesson = Lesson(**{**row, "card": tuple(row["card"])})
        except (KeyError, TypeError) as err:
            raise DataTableError(f"{map_file}, row {i + 1}: {err!r}") from None
        if lesson.part not in PARTS:
            raise DataTableError(f"{map_file}, row {i + 1}: part {lesson.part!r} is not one of {list(PARTS)}")
        if (directory / lesson.notebook).is_file():
            lessons.append(lesson)
    return lessons


def total_minutes(lessons: list[Lesson], part: str | None = None) -> int:
    """Estimated minutes for ``lessons`` (of one ``part``, or all).

    >>> a, b = Lesson("a", "01", "A", "card", 20, "", (), ""), Lesson("b", "", "B", "beyond", 30, "", (), "")
    >>> total_minutes([a, b], "card"), total_minutes([a, b])
    (20, 50)
    """
    return sum(r.minutes for r in lessons if part is None or r.part == part)


def course_path(notebooks_dir: Path | str | None = None, map_file: Path | str = MAP_FILE) -> list[str]:
    """The notebooks in the order a learner follows their **Next:** links: the start page, then every
    lesson of the map in the map's order (the last one, the self-check, leads back to the start page).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for n in ("16_step_time.ipynb", "01_token_cost.ipynb"): _ = (d / n).write_text("{}")
    >>> course_path(d)
    ['00_start_here.ipynb', '01_token_cost.ipynb', '16_step_time.ipynb']
    """
    return [START, *(r.notebook for r in course_map(notebooks_dir, map_file))]
