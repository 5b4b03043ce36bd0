"""Judging typed answers: within tolerance, a named trap, simply wrong, or unanswered.

Taught in notebooks/pack01_speed_physics.ipynb (the self-checks for lessons 01–04, 06, 09, 15, 16, 24, 25,
28, 44 and 59–61).

An answer is a number or nothing. Nothing (``None``, or an empty box: ``parse_answer("")``) is
unanswered; a typed 0 is a number and is judged like any other. A wrong answer that lands (within the
answer's tolerance) on one of the card's traps is named, the card's own traps first, then a slip by a
power of ten.

>>> from roofline.selfcheck import card
>>> [r.status for r in check(card("Q7"), {"launch_ms": 0, "launch_pct": None, "speedup_x": "1.25"})]
['wrong', 'unanswered', 'right', 'unanswered', 'unanswered']
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from roofline.errors import InvalidConfigurationError
from roofline.selfcheck.spec import CARD_FIGURE, EXACT_FIGURE, TRAP_POWER_OF_TEN, Answer, Trap, close
from roofline.selfcheck.text import fmt_value

if TYPE_CHECKING:
    from roofline.selfcheck.cards import Card

RIGHT, TRAP, WRONG, UNANSWERED = "right", "trap", "wrong", "unanswered"

_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")


def parse_answer(typed: str | float | None) -> float | None:
    """What a learner typed, as a number; ``None`` if nothing was typed.

    Spaces, underscores, a leading ``$``, a trailing ``%``, ``×`` or ``x``, and commas between groups of
    three digits are allowed. Anything else that is not a finite number is an ``InvalidConfigurationError``.

    >>> parse_answer(""), parse_answer("  "), parse_answer(None)
    (None, None, None)
    >>> parse_answer("0"), parse_answer("5,334"), parse_answer("$4.17"), parse_answer("1.25×")
    (0.0, 5334.0, 4.17, 1.25)
    >>> parse_answer("eighty")
    Traceback (most recent call last):
    ...
    roofline.errors.InvalidConfigurationError: 'eighty' is not a number
    """
    if typed is None:
        return None
    if isinstance(typed, str):
        text = typed.strip().replace(" ", "").replace("_", "").removeprefix("$").rstrip("%×xX")
        if not text:
            return None
        if _THOUSANDS.match(text):
            text = text.replace(",", "")
    else:
        text = typed
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise InvalidConfigurationError(f"{typed!r} is not a number") from None
    if not math.isfinite(value):
        raise InvalidConfigurationError(f"{typed!r} is not a finite number")
    return value


@dataclass(frozen=True)
class Result:
    """The verdict on one answer: right, a recognised trap, wrong, or unanswered (``given is None``). A right
    answer says which right answer it is (``matched``): the card's simplified figure or the library's exact
    one."""

    name: str
    label: str
    unit: str
    given: float | None
    expected: float
    tolerance_text: str
    correct: bool
    traps: tuple[Trap, ...] = ()
    matched: str | None = None  # which right answer: the card's simplified figure or the library's exact one
    exact: float | None = None  # the library's exact answer, where it differs from the card's
    exact_why: str = ""  # what the card simplifies

    @property
    def status(self) -> str:
        """``'right'``, ``'trap'``, ``'wrong'`` or ``'unanswered'``."""
        if self.given is None:
            return UNANSWERED
        if self.correct:
            return RIGHT
        return TRAP if self.traps else WRONG

    @property
    def trap(self) -> str | None:
        """Name of the first recognised trap (card-specific traps come before a power of ten)."""
        return self.traps[0].name if self.traps and not self.correct else None

    @property
    def trap_names(self) -> list[str]:
        """Names of every recognised trap, in order."""
        return [t.name for t in self.traps]

    def text(self) -> str:
        """One line in words; the expected value is shown only once the answer is right."""
        head = f"{self.label}: "
        if self.given is None:
            return head + "no answer yet"
        given = fmt_value(self.given, self.unit)
        if self.correct and self.exact is None:
            return (
                head + f"{given} is right (the library gives {fmt_value(self.expected, self.unit)}, "
                f"{self.tolerance_text})"
            )
        if self.correct:
            card, exact = fmt_value(self.expected, self.unit), fmt_value(self.exact, self.unit)
            mine, theirs = (card, exact) if self.matched == CARD_FIGURE else (exact, card)
            other = EXACT_FIGURE if self.matched == CARD_FIGURE else CARD_FIGURE
            return (
                head + f"{given} is right: {self.matched}, {mine} ({self.tolerance_text}); {other} is "
                f"{theirs}. {self.exact_why}"
            )
        if self.traps:
            t = self.traps[0]
            return head + f"{given} is wrong, a known trap: {t.name}. {t.why}"
        return head + f"{given} is wrong (not within {self.tolerance_text}); rework it or press Reveal"


def power_of_ten_traps(answer: Answer, given: float) -> list[Trap]:
    """The slips by 10×, 100× or 1,000× (too big or too small) that ``given`` matches.

    >>> a = Answer("floor_ms", "decode floor", "ms", 4.776)
    >>> [t.value for t in power_of_ten_traps(a, 4776)]
    [4776.0]
    >>> power_of_ten_traps(a, 0.0)
    []
    """
    found = []
    rights = [answer.value, *([answer.exact] if answer.has_exact else [])]
    for k in (1, -1, 2, -2, 3, -3):
        target = next((r * 10.0**k for r in rights if close(given, r * 10.0**k, answer.rel_tol)), None)
        if target is not None:
            hint = ""
            if answer.unit == "%" and k == -2:
                hint = " A fraction typed where a percentage was asked?"
            elif answer.unit in ("ms", "µs", "s") and abs(k) == 3:
                hint = " Seconds, milliseconds and microseconds differ by 1,000 each."
            factor = f"{10**k:g}" if k > 0 else f"1/{10**-k:g}"
            why = (
                f"Your answer is {factor} times the right one: recount the zeros and the unit prefixes "
                f"(k, M, G, T).{hint}"
            )
            found.append(Trap(answer.name, TRAP_POWER_OF_TEN, target, why))
    return found


def judge(answer: Answer, traps: tuple[Trap, ...], given: float | None) -> Result:
    """The verdict on one answer ``given`` (a number, or ``None`` for unanswered; 0 is a number)."""
    exact = answer.exact if answer.has_exact else None
    result = Result(answer.name, answer.label, answer.unit, given, answer.value, answer.tolerance_text, False,
                    exact=exact, exact_why=answer.exact_why if exact is not None else "")  # fmt: skip
    if given is None:
        return result
    if answer.accepts(given):
        return replace(result, correct=True, matched=answer.matches(given))
    specific = [t for t in traps if t.answer == answer.name and close(given, t.value, answer.rel_tol)]
    return replace(result, traps=tuple(specific + power_of_ten_traps(answer, given)))


def check(card: Card, answers: Mapping[str, float | str | None]) -> list[Result]:
    """Judge ``answers`` (``{answer name: value in the answer's unit}``) against ``card``.

    One ``Result`` per expected answer, in the card's order. A name left out, ``None`` or an empty string
    is unanswered; a typed 0 is judged. Strings are read with ``parse_answer``.

    >>> from roofline.selfcheck import card
    >>> c = card("Q7")
    >>> r = check(c, {"two_speedup_x": 5})[-1]
    >>> r.status, r.trap
    ('trap', 'added the speedups')
    >>> check(c, {"speedup_x": 1.25})[2].status
    'right'
    >>> check(c, {"nonsense": 1})
    Traceback (most recent call last):
    ...
    roofline.errors.InvalidConfigurationError: Q7 has no answer 'nonsense'; it has [...]
    """
    known = card.answer_names()
    for name in answers:
        if name not in known:
            raise InvalidConfigurationError(f"{card.qid} has no answer {name!r}; it has {known}")
    results = []
    for a in card.answers:
        try:
            given = parse_answer(answers.get(a.name))
        except InvalidConfigurationError as e:
            raise InvalidConfigurationError(f"answer {a.name!r} must be a number: {e}") from None
        results.append(judge(a, card.traps, given))
    return results
