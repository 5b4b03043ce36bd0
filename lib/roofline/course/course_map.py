"""The course map: which lessons exist, in what order, how long each takes and what to read first.

Shown in notebooks/00_start_here.ipynb. The rows live in ``course_map.toml`` beside this module; a row whose
notebook is not in ``notebooks/`` is left out, so the map is generated from the files that exist and never
lists a missing lesson.

>>> rows = course_map()
>>> rows[0].number, rows[0].title, rows[0].notebook
('01', 'What a token costs', '01_token_cost.ipynb')
>>> all((course_notebooks() / r.notebook).is_file() for r in rows)
True
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from roofline.data import notebooks_dir as course_notebooks
from roofline.errors import DataTableError

MAP_FILE = Path(__file__).with_name("course_map.toml")


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


def course_map(notebooks_dir: Path | str | None = None, map_file: Path | str | None = None) -> list[Lesson]:
    """The lessons whose notebook exists in ``notebooks_dir`` (default: the course's ``notebooks/``), in
    the map's order. A row with an unknown part or a bad field raises ``DataTableError``.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "16_step_time.ipynb").write_text("{}")
    >>> [r.number for r in course_map(d)]
    ['16']
    """
    directory = Path(notebooks_dir) if notebooks_dir is not None else course_notebooks()
    path = Path(map_file) if map_file is not None else MAP_FILE
    rows = tomllib.loads(path.read_text(encoding="utf-8")).get("lesson", [])
    lessons = []
    for i, row in enumerate(rows):
        try:
            lesson = Lesson(
                notebook=str(row["notebook"]),
                number=str(row["number"]),
                title=str(row["title"]),
                part=str(row["part"]),
                minutes=int(row["minutes"]),
                after=str(row["after"]),
                card=tuple(row["card"]),
                summary=str(row["summary"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise DataTableError(f"{path}, row {i + 1}: {err!r}") from None
        if lesson.part not in PARTS:
            raise DataTableError(f"{path}, row {i + 1}: part {lesson.part!r} is not one of {list(PARTS)}")
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


def unmapped_notebooks(notebooks_dir: Path | str | None = None) -> list[str]:
    """Notebooks in ``notebooks_dir`` that the map does not list (besides 00_start_here): a test keeps
    this empty, so a new lesson is never missing from the map."""
    directory = Path(notebooks_dir) if notebooks_dir is not None else course_notebooks()
    listed = {r.notebook for r in course_map(directory)}
    return sorted(
        p.name for p in directory.glob("*.ipynb") if p.name not in listed and p.name != "00_start_here.ipynb"
    )
