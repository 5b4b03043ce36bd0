"""The learner's path through the notebooks.

- A "predict, then check" answer is never in view before the learner has predicted: the code that builds
  an answer is source-hidden, every question of a "Predict, then check" section asks for a prediction
  (``Prediction``, which opens its answer only once its box holds one), and a saved notebook stores the
  answer only inside a closed fold.
- One path: from the start page, each notebook's closing **Next:** link leads to the following row of
  the course map (``roofline.course.course_map.course_path``), every lesson exactly once, and back to
  the start page; every lesson ends by pointing to its self-check.
- The start page gives the README's two commands.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from ipywidgets import Widget

from roofline.course.course_map import START, course_map, course_path
from roofline.course.widgets import PREDICTION_HINT, Prediction

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
ALL = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
SELF_CHECK = "pack01_speed_physics.ipynb"

ANSWER_CODE = re.compile(r"\b(Prediction|Reveal)\(|\.reveal\(")
QUESTION = re.compile(r"^\*\*(\d+)\.\*\*", re.M)
NEXT = re.compile(r"\*\*Next:\*\*(.*)\Z", re.S)
LINK = re.compile(r"\]\(([\w.]+\.ipynb)\)")
MARKER_REPR = "<IPython.core.display.HTML object>"  # the empty marker a Prediction displays after itself


def cells(name: str):
    return nbformat.read(NOTEBOOKS / name, as_version=4).cells


def hidden(cell) -> bool:
    return bool(cell.metadata.get("jupyter", {}).get("source_hidden"))


def predict_sections(name: str) -> list[list]:
    """The cells of each "Predict, then check" section (from its heading to the next heading)."""
    sections, current = [], None
    for cell in cells(name):
        if cell.cell_type == "markdown" and re.match(r"#+ ", cell.source):
            current = [] if re.match(r"#+ Predict", cell.source) else None
            if current is not None:
                sections.append(current)
        if current is not None:
            current.append(cell)
    return sections


# ---- the answer is never visible before the prediction --------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_the_code_that_builds_an_answer_is_hidden(name):
    answers = [c for c in cells(name) if c.cell_type == "code" and ANSWER_CODE.search(c.source)]
    shown = [c.source[:70] for c in answers if not hidden(c)]
    assert not shown, f"{name}: answer code in view: {shown}"


@pytest.mark.parametrize("name", ALL)
def test_no_answer_opens_without_a_prediction_box(name):
    # A question's answer is a Prediction; only the self-check cards fold theirs without one (card.reveal()).
    code = [c for c in cells(name) if c.cell_type == "code"]
    bare = [c.source[:70] for c in code if re.search(r"\bReveal\(", c.source)]
    assert not bare, f"{name}: an answer that asks for no prediction: {bare}"


@pytest.mark.parametrize("name", ALL)
def test_every_predict_question_asks_for_a_prediction_first(name):
    for section in predict_sections(name):
        questions = [q for c in section if c.cell_type == "markdown" for q in QUESTION.findall(c.source)]
        code = [c for c in section if c.cell_type == "code"]
        assert questions, f"{name}: a Predict section without numbered questions"
        # every cell of the section is an answer behind a prediction box, one per question, hidden
        bare = [c.source[:70] for c in code if "Prediction(" not in c.source]
        assert not bare, f"{name}: an answer that asks for no prediction: {bare}"
        assert len(code) == len(questions), f"{name}: {len(questions)} questions, {len(code)} boxes"
        assert all(hidden(c) for c in code), name
        # each question's box comes after the question and before the next one
        kinds = "".join(
            "q" * len(QUESTION.findall(c.source)) if c.cell_type == "markdown" else "p" for c in section
        )
        assert re.fullmatch(r"(qp)+", kinds), f"{name}: questions (q) and boxes (p) in the order {kinds}"


@pytest.mark.parametrize("name", ALL)
def test_a_saved_notebook_keeps_every_answer_folded(name):
    """Statically (no kernel): an answer cell prints nothing, its text view is the run-the-notebook hint
    and its HTML view a closed fold."""
    for cell in cells(name):
        if cell.cell_type != "code" or "Prediction(" not in cell.source:
            continue
        assert cell.outputs, f"{name}: an answer cell without its stored output"
        for out in cell.outputs:
            assert out.output_type in ("display_data", "execute_result"), f"{name}: {out.output_type}"
            data = out.get("data", {})
            plain = data.get("text/plain", PREDICTION_HINT)  # the hint, or the folded-answer marker's repr
            assert plain.endswith(PREDICTION_HINT) or plain == MARKER_REPR, f"{name}: {plain[:70]}"
            html = data.get("text/html", "")
            assert html.startswith('<details class="roofline-reveal'), f"{name}: {html[:70]}"
            assert not re.match(r"<details[^>]*\bopen\b", html), f"{name}: an answer stored open"


def _strings(widget: Widget) -> str:
    """Every text a widget and its children put on the page."""
    out = [str(getattr(widget, k, "")) for k in ("value", "description", "tooltip", "placeholder")]
    out += [_strings(child) for child in getattr(widget, "children", ())]
    return " ".join(out)


def test_a_prediction_box_shows_its_answer_only_after_a_prediction():
    p = Prediction("Check your prediction", "<p>the answer: 4.8 ms</p>")
    assert "4.8 ms" not in _strings(p)
    p.open_button.click()  # disabled in the page; clicking from code without a prediction does nothing
    assert "4.8 ms" not in _strings(p)
    p.box.value = "   "
    p.open_answer()
    assert "4.8 ms" not in _strings(p) and p.open_button.disabled
    p.box.value = "about 5 ms"
    p.open_button.click()
    assert "4.8 ms" in _strings(p) and "about 5 ms" in _strings(p)


# ---- one path through every lesson ------------------------------------------------------------------------


def closing_markdown(name: str) -> str:
    last = cells(name)[-1]
    assert last.cell_type == "markdown", f"{name} ends with a code cell"
    return last.source.rstrip()


def next_link(name: str) -> str:
    """The one notebook the closing **Next:** line (the notebook's last line) links to."""
    text = closing_markdown(name)
    line = NEXT.search(text)
    assert line and "\n\n" not in line.group(1), f"{name}: does not end with a **Next:** line"
    targets = LINK.findall(line.group(1))
    assert len(targets) == 1, f"{name}: its Next line links {targets}, not one notebook"
    return targets[0]


def test_the_path_is_every_notebook_once_from_the_start_page():
    path = course_path()
    assert path[0] == START and path[-1] == SELF_CHECK
    assert sorted(path) == ALL and len(set(path)) == len(path)


def test_following_next_from_the_start_page_visits_every_notebook_once_and_returns():
    visited, name = [], START
    while True:
        visited.append(name)
        name = next_link(name)
        assert (NOTEBOOKS / name).is_file(), name
        if name == START or name in visited:
            break
    assert name == START, f"the path loops back to {name} after {visited}"
    assert visited == course_path()


def test_the_path_keeps_the_card_order_and_puts_each_lesson_after_what_it_builds_on():
    lessons = course_map()
    numbers = [r.number for r in lessons if r.part == "card"]
    assert numbers == sorted(numbers)
    position = {}
    for i, r in enumerate(lessons):
        for key in (r.number, r.title, r.notebook):
            if key:
                position[key] = i
    for i, r in enumerate(lessons):
        if r.part == "check":
            assert i == len(lessons) - 1, "the self-check ends the path"
        elif r.after != "start here":
            assert position[r.after] < i, f"{r.title} comes before {r.after}, which it builds on"


@pytest.mark.parametrize("lesson", [r for r in course_map() if r.part != "check"], ids=lambda r: r.notebook)
def test_every_lesson_ends_by_pointing_to_its_self_check(lesson):
    text = closing_markdown(lesson.notebook)
    line = re.search(r"\*\*Self-check:\*\*(.*?)(?=\*\*Next:\*\*)", text, re.S)
    assert line, f"{lesson.notebook}: no **Self-check:** line before its Next line"
    assert f"]({SELF_CHECK})" in line.group(1)
    named = set(re.findall(r"\bQ\d\b", line.group(1)))
    assert named == set(lesson.card), f"{lesson.notebook}: names {sorted(named)}, answers {lesson.card}"


# ---- the start page gives the README's commands -----------------------------------------------------------


def commands(block: str) -> list[str]:
    return [line.split("#")[0].strip() for line in block.strip().splitlines() if line.split("#")[0].strip()]


def test_the_start_page_gives_the_readmes_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = re.search(r"<!-- setup:start -->\s*```bash\n(.*?)```\s*<!-- setup:end -->", readme, re.S)
    assert setup
    start = "\n".join(c.source for c in cells(START) if c.cell_type == "markdown")
    blocks = re.findall(r"```bash\n(.*?)```", start, re.S)
    assert [commands(b) for b in blocks] == [commands(setup.group(1))]
    assert commands(setup.group(1)) == ["uv run jupyter lab notebooks/", "uv run --group test pytest"]
    assert "--allow-root" not in start  # the project's Jupyter settings allow root (README)
