"""The start page's course map and its tour explorer (notebooks/00_start_here.ipynb).

>>> "01_token_cost.ipynb" in course_map_html()
True
"""

from __future__ import annotations

import html

from roofline.course.course_map import PARTS, Lesson, course_map, total_minutes
from roofline.course.widgets import STEP, Explorer
from roofline.lessons.step_time.lab import StepTimeVsBatch
from roofline.scenario import Scenario


def course_map_html(lessons: list[Lesson] | None = None) -> str:
    """One table per part of the course: number, lesson (linked), minutes, read after, card questions.

    >>> from roofline.course.course_map import Lesson
    >>> "about 20 min" in course_map_html([Lesson("x.ipynb", "", "X", "beyond", 20, "16", (), "x")])
    True
    """
    lessons = course_map() if lessons is None else lessons
    out = []
    for part, heading in PARTS.items():
        rows = [r for r in lessons if r.part == part]
        if not rows:
            continue
        minutes = total_minutes(rows)
        time = f"about {minutes / 60:.1f} h" if minutes >= 90 else f"about {minutes} min"
        out.append(f"<h4>{html.escape(heading)} ({time})</h4>")
        body = "".join(
            "<tr>"
            f"<td>{html.escape(r.number)}</td>"
            f'<td><a href="{html.escape(r.notebook)}">{html.escape(r.title)}</a></td>'
            f"<td>{r.minutes} min</td>"
            f"<td>{html.escape(r.after)}</td>"
            f"<td>{html.escape(', '.join(r.card))}</td>"
            f"<td>{html.escape(r.summary)}</td>"
            "</tr>"
            for r in rows
        )
        out.append(
            '<table class="roofline-course-map"><tr><th>#</th><th>lesson</th><th>time</th>'
            f"<th>read after</th><th>card</th><th>what you learn</th></tr>{body}</table>"
        )
    return "".join(out)


def tour_explorer(scenario: Scenario | None = None) -> Explorer:
    """The start page's explorer: step time against batch, every control of a step.

    >>> tour_explorer()
    <Explorer StepTimeVsBatch: batch, context_tokens, weight_precision, num_gpus, gpu, model, engine>
    """
    return Explorer(StepTimeVsBatch, STEP, scenario or Scenario(batch=64))
