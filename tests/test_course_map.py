"""The course map of notebooks/00_start_here.ipynb: generated from the notebooks that exist, never listing a
missing one, and listing every lesson there is."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.course.course_map import course_map, total_minutes
from roofline.data import notebooks_dir
from roofline.errors import DataTableError
from roofline.lessons.start_here.lab import course_map_html


def test_every_notebook_in_the_folder_is_on_the_map():
    listed = {r.notebook for r in course_map()} | {"00_start_here.ipynb"}
    assert [p.name for p in notebooks_dir().glob("*.ipynb") if p.name not in listed] == []


def test_the_map_lists_only_notebooks_that_exist(tmp_path):
    for name in ("01_token_cost.ipynb", "quantization.ipynb"):
        (tmp_path / name).write_text("{}")
    lessons = course_map(tmp_path)
    assert [r.notebook for r in lessons] == ["01_token_cost.ipynb", "quantization.ipynb"]
    html_text = course_map_html(lessons)
    assert "16_step_time.ipynb" not in html_text and 'href="quantization.ipynb"' in html_text


def test_numbered_lessons_follow_the_card_and_come_in_order():
    numbers = [r.number for r in course_map() if r.part == "card"]
    assert numbers == sorted(numbers)
    # The study card's lessons: 01-04, 06, 09, 15, 16, 24, 25, 28, 44, 59-61.
    card = {"01", "02", "03", "04", "06", "09", "15", "16", "24", "25", "28", "44", "59", "60", "61"}
    assert set(numbers) <= card
    assert all(p.name[:2] in card for p in notebooks_dir().glob("[0-9][0-9]_*.ipynb") if p.name[:2] != "00")


def test_times_add_up_by_part():
    lessons = course_map()
    parts = {r.part for r in lessons}
    assert total_minutes(lessons) == sum(total_minutes(lessons, p) for p in parts)
    assert all(5 <= r.minutes <= 90 for r in lessons)


def test_a_bad_row_is_a_clear_error(tmp_path: Path):
    bad = tmp_path / "map.toml"
    bad.write_text('[[lesson]]\nnotebook = "x.ipynb"\nnumber = ""\ntitle = "X"\npart = "extra"\nminutes = 5\n'
                   'after = ""\ncard = []\nsummary = ""\n')  # fmt: skip
    with pytest.raises(DataTableError, match="part 'extra'"):
        course_map(tmp_path, bad)
