"""The self-check cards as HTML: the question panel, the folded answer, the verdicts, the lesson links.

Taught in notebooks/pack01_speed_physics.ipynb. Strings only (no ipywidgets, no matplotlib): the notebook
shows these without a kernel, and ``roofline.selfcheck.ui`` puts them in its widget.

>>> from roofline.selfcheck import card
>>> lesson_links(card("Q6"))
'[01 · What a token costs](01_token_cost.ipynb) · [02 · The decode floor](02_decode_floor.ipynb)'
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from roofline.selfcheck.judge import Result
from roofline.selfcheck.spec import LESSONS
from roofline.selfcheck.text import fmt_value

if TYPE_CHECKING:
    from roofline.selfcheck.cards import Card

STATUS_STYLE = {  # status → (mark, colour)
    "right": ("✓", "#1b7f3b"),
    "trap": ("⚠", "#b35c00"),
    "wrong": ("✗", "#b00020"),
    "unanswered": ("…", "#666666"),
    "unreadable": ("?", "#b00020"),
}


def lesson_links(card: Card, kind: str = "markdown") -> str:
    """Links to the card's lessons, relative to ``notebooks/`` (``kind`` is ``markdown`` or ``html``)."""
    parts = []
    for n in card.lessons:
        stem, title = LESSONS[n]
        if kind == "html":
            parts.append(f'<a href="{stem}.ipynb">{n} · {html.escape(title)}</a>')
        else:
            parts.append(f"[{n} · {title}]({stem}.ipynb)")
    return " · ".join(parts)


def question_html(card: Card, answer_table: bool = True) -> str:
    """Scenario plus the list of numbers to give (labels, units, tolerances), without the answers.

    ``answer_table=False`` leaves the list out (the widget shows it next to its answer boxes).
    """
    rows = "".join(
        f"<tr><td>{html.escape(a.label)}</td><td>{html.escape(a.unit)}</td><td>{a.tolerance_text}</td></tr>"
        for a in card.answers
    )
    tag = "" if card.is_default else " <i>(shuffled numbers)</i>"
    both = (
        "<p><i>Work from the figures stated above, or with the lessons' exact figures: both are right, and "
        "the check says which one you gave.</i></p>"
        if any(a.has_exact for a in card.answers)
        else ""
    )
    table = (
        f'<table class="roofline-readout" style="font-size:14px"><tr><th style="text-align:left">'
        f'give</th><th style="text-align:left">unit</th><th style="text-align:left">tolerance</th></tr>'
        f"{rows}</table>"
    )
    return (
        f'<div class="roofline-card"><p><b>{card.qid} · {html.escape(card.title)}</b>{tag}</p>'
        f"{card.scenario}{both}{table if answer_table else ''}</div>"
    )


def reveal_html(card: Card) -> str:
    """Worked answer, common mistake and follow-up, as one HTML block; then, where the lessons' exact
    figures differ from the card's simplified ones, both side by side with what the card simplifies."""
    return (
        f"<h4>Worked answer</h4>{card.worked}"
        f"<h4>Common mistake</h4>{card.mistake}"
        f"<h4>Likely follow-up</h4><p><i>{card.followup_question}</i></p>{card.followup_answer}"
        f"{exact_html(card)}"
    )


def exact_html(card: Card) -> str:
    """A table of the card's simplified answers beside the library's exact ones ('' where they agree).

    >>> from roofline.selfcheck import card
    >>> "4.48 ms" in exact_html(card("Q1")) and exact_html(card("Q4")) == ""
    True
    """
    rows, notes = [], []
    for a in card.answers:
        if not a.has_exact:
            continue
        rows.append(
            f"<tr><td>{html.escape(a.label)}</td><td>{fmt_value(a.value, a.unit)}</td>"
            f"<td>{fmt_value(a.exact, a.unit)}</td></tr>"
        )
        if a.exact_why not in notes:
            notes.append(a.exact_why)
    if not rows:
        return ""
    head = "<tr><th>answer</th><th>the card's simplified figure</th><th>the library's exact figure</th></tr>"
    why = "".join(f"<p>{html.escape(n)}</p>" for n in notes)
    return (
        "<h4>The card's figures and the lessons' exact ones (both are right)</h4>"
        f'<table class="roofline-readout">{head}{"".join(rows)}</table>{why}'
    )


def unreadable_text(label: str, typed: str) -> str:
    """The line shown for a box whose text is not a number."""
    return f"{label}: {typed!r} is not a number; type digits, e.g. 4.8 or 5,334"


def results_html(results: Sequence[Result], unreadable: Mapping[str, str] | None = None) -> str:
    """The verdicts as an HTML list, coloured by status; ``unreadable`` maps answer names to typed text
    that is not a number (shown instead of that answer's verdict)."""
    unreadable = unreadable or {}
    items = []
    for r in results:
        if r.name in unreadable:
            status, line = "unreadable", unreadable_text(r.label, unreadable[r.name])
        else:
            status, line = r.status, r.text()
        mark, colour = STATUS_STYLE[status]
        items.append(f'<li style="color:{colour}" data-status="{status}">{mark} {html.escape(line)}</li>')
    return (
        '<ul class="roofline-results" style="font-size:15px;list-style:none;padding-left:0">'
        + "".join(items)
        + "</ul>"
    )


def plain_text(fragment: str) -> str:
    """An HTML fragment as plain text (tags dropped, entities decoded).

    >>> plain_text("<p>4.78 ms &amp; more</p>")
    '4.78 ms & more'
    """
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment)).strip()
