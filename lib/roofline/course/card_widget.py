"""A self-check card as an ipywidgets panel: the question, one box per answer, Check, Reveal, Shuffle.

Taught in notebooks/pack01_speed_physics.ipynb. Every number, verdict and piece of HTML comes from
``roofline.course.cards``; where no widget can be drawn (a static export) the question shows as HTML.
"""

from __future__ import annotations

import html

import ipywidgets as W
import numpy as np

from roofline.course.cards import Card, Result, check, parse_answer, results_html, unreadable_text
from roofline.errors import InvalidConfigurationError

LABEL_WIDTH = "24em"  # answer labels wrap inside this width rather than being cut off
BOX_WIDTH = "10em"
BUTTON_LAYOUT = dict(width="auto", min_width="max-content")  # a button as wide as its label


def button(description: str, **kwargs) -> W.Button:
    """A button as wide as its label."""
    return W.Button(description=description, layout=W.Layout(**BUTTON_LAYOUT), **kwargs)


class CardWidget(W.VBox):
    """A card as a small panel: one box per answer, Check, Reveal, Shuffle the numbers, Card's numbers.

    An empty box is unanswered; a typed 0 is judged. Usable from code too (tests, demos): ``enter``,
    ``press_check``, ``press_reveal``, ``press_shuffle``, ``press_reset``, ``result_text``. Shuffling draws
    from a generator seeded with ``seed``, so two widgets with one seed shuffle alike.
    """

    def __init__(self, card: Card, seed: int | None = 0):
        self.rng = np.random.default_rng(seed)
        self.header, self.input_box = W.HTML(), W.VBox()
        self.check_button = button("Check", button_style="primary", icon="check")
        self.reveal_button = button("Reveal", icon="eye")
        self.shuffle_button = button("Shuffle the numbers", icon="random")
        self.reset_button = button("Card's numbers")
        self.result_area, self.answer_area = W.HTML(), W.HTML()
        self.check_button.on_click(lambda _b: self.press_check())
        self.reveal_button.on_click(lambda _b: self.press_reveal())
        self.shuffle_button.on_click(lambda _b: self.press_shuffle())
        self.reset_button.on_click(lambda _b: self.press_reset())
        buttons = W.HBox(
            [self.check_button, self.reveal_button, self.shuffle_button, self.reset_button],
            layout=W.Layout(flex_flow="row wrap"),
        )
        super().__init__([self.header, self.input_box, buttons, self.result_area, self.answer_area])
        self.add_class("roofline-selfcheck")
        self.show(card)

    def __repr__(self) -> str:
        return f"<CardWidget {self.card.qid}: {', '.join(self.card.answer_names())}>"

    def _repr_mimebundle_(self, **kwargs):
        """The widget, plus the question as HTML for front ends that cannot draw the widget."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is not None:
            bundle["text/html"] = self.card.question_html()
        return bundle

    def show(self, card: Card) -> None:
        """Put ``card`` in the panel, with empty boxes and nothing judged or revealed."""
        self.card, self.results, self.unreadable, self.revealed = card, [], {}, False
        self.header.value = card.question_html(answer_table=False)  # the boxes below list the answers
        self.inputs = {
            a.name: W.Text(value="", placeholder="your answer", layout=W.Layout(width=BOX_WIDTH))
            for a in card.answers
        }
        unit_layout = W.Layout(width="auto", min_width="max-content")
        self.input_box.children = [
            W.HBox(
                [W.HTML(html.escape(a.label), layout=W.Layout(width=LABEL_WIDTH)), self.inputs[a.name],
                 W.Label(f"{a.unit}  ({a.tolerance_text})", layout=unit_layout)],
                layout=W.Layout(align_items="center"),
            )
            for a in card.answers
        ]  # fmt: skip
        self.result_area.value = self.answer_area.value = ""
        self.reveal_button.description = "Reveal"

    def enter(self, name: str, value: float | str | None) -> None:
        """Type ``value`` into the box of answer ``name`` (``None`` or ``""`` empties it; 0 is an answer)."""
        self.card.answer(name)  # an unknown name raises, naming the answers there are
        if value is None or isinstance(value, str):
            self.inputs[name].value = value or ""
        else:
            self.inputs[name].value = f"{float(value):.12g}"

    def answers(self) -> dict[str, float | None]:
        """What the boxes hold, as numbers; an empty box (or one that is not a number: ``press_check`` says
        so) is ``None``, a typed 0 is 0.0."""
        out: dict[str, float | None] = {}
        for name, box in self.inputs.items():
            try:
                out[name] = parse_answer(box.value)
            except InvalidConfigurationError:
                out[name] = None
        return out

    def press_check(self) -> list[Result]:
        """Judge the boxes with ``check`` and show the verdicts (a box that is not a number is named)."""
        self.unreadable = {}
        for name, box in self.inputs.items():
            try:
                parse_answer(box.value)
            except InvalidConfigurationError:
                self.unreadable[name] = box.value
        self.results = check(self.card, self.answers())
        self.result_area.value = results_html(self.results, self.unreadable)
        return self.results

    def press_reveal(self) -> bool:
        """Show (or hide again) the worked answer, common mistake and follow-up. Returns the new state."""
        self.revealed = not self.revealed
        self.answer_area.value = self.card.reveal_html() if self.revealed else ""
        self.reveal_button.description = "Hide" if self.revealed else "Reveal"
        return self.revealed

    def press_shuffle(self) -> Card:
        """Swap in the same question with other numbers (drawn from this widget's seeded generator)."""
        self.show(self.card.spec.shuffled_card(self.rng))
        return self.card

    def press_reset(self) -> Card:
        """Back to the study card's own numbers."""
        self.show(self.card.spec.card())
        return self.card

    def result_text(self) -> str:
        """The last verdicts in plain text, one line per answer ('' before the first Check)."""
        return "\n".join(
            unreadable_text(r.answer.label, self.unreadable[r.name])
            if r.name in self.unreadable
            else r.text()
            for r in self.results
        )
