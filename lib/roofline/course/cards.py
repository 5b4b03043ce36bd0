"""Self-check cards: a card's spec, the built card, the judge of typed answers, and the card as HTML.

Taught in notebooks/pack01_speed_physics.ipynb and at the end of the lever lessons. A card lives in its
lesson: ``cards.toml`` holds its rows (scenario ``defaults``, the round figures it ``stated``, answers,
known traps, prose templates filled by ``fill``) and ``cards.py`` its code (``CardCode``); ``read_card``
joins the two into a ``CardSpec``, ``CardSpec.card`` builds a ``Card`` and ``check`` judges answers to it.
An answer accepts both the card's simplified figure and the library's exact one (``Result.matched``).

>>> fill("{batch} × {context_tokens:,} × {kv!K} ({kv!B}), {w!E} read", dict(batch=32, context_tokens=1000,
...      kv=131072, w=15.0136e9))
'32 × 1,000 × 128 KiB (131 KB), 15.01 GB read'
"""

from __future__ import annotations

import html
import math
import re
import string
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from roofline.course.readouts import DATA_TABLE, NOT_MATH
from roofline.data import get_gpu, get_model
from roofline.errors import DataTableError, InvalidConfigurationError, RooflineError
from roofline.physics.precision import peak_flops_per_s
from roofline.units import GB, MS, TB, TFLOPS, KiB, fmt_bytes

DEFAULT_REL_TOL = 0.05  # ±5 %: room for mental arithmetic on the stated figures
TRAP_POWER_OF_TEN = "a power of ten"  # the one trap every answer has
CARD_FIGURE = "the card's simplified figure"
EXACT_FIGURE = "the library's exact figure"
RIGHT, TRAP, WRONG, UNANSWERED = "right", "trap", "wrong", "unanswered"
TEXT_PARTS = ("scenario", "worked", "mistake", "followup_question", "followup_answer")
MODEL_KEYS, PRECISION_KEYS = ("model", "tp_model"), ("weight_precision", "tp_precision")


# ---- Numbers in words --------------------------------------------------------------------------------------
def number_text(v: float) -> str:
    """A number rounded for reading: thousands separated, three significant digits below 1,000.

    >>> number_text(5333.3), number_text(4.776), number_text(0.01627)
    ('5,333', '4.78', '0.0163')
    """
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}" if a >= 1 else f"{v:.3g}"


def fmt_value(value: float, unit: str) -> str:
    """A number with its unit (``"ms"``, ``"tokens/s"``, ``"%"``, ``"×"``, ``"$"``, …), rounded for reading.

    >>> fmt_value(4.776, "ms"), fmt_value(4.1667, "$"), fmt_value(79.6, "%"), fmt_value(1.25, "×")
    ('4.78 ms', '$4.17', '79.6%', '1.25×')
    """
    if unit == "$":
        if abs(value) >= 1000:
            return f"${value:,.0f}"
        return f"${value:.2f}" if abs(value) >= 0.01 else f"${value:.2g}"
    return f"{number_text(value)}{unit}" if unit in ("%", "×") else f"{number_text(value)} {unit}"


def sig(x: float, digits: int = 3) -> float:
    """``x`` rounded to ``digits`` significant digits: how a figure is quoted in a scenario.

    >>> sig(16.06e9), sig(131072.0), sig(0.0)
    (16100000000.0, 131000.0, 0.0)
    """
    if x == 0:
        return 0.0
    return float(round(x, digits - 1 - math.floor(math.log10(abs(x)))))


def kv_text(kv_bytes_per_token: float) -> str:
    """KV bytes per token in words: a whole number of KiB (Llama 3 8B's 131,072 bytes) in KiB, so two cards
    name one value alike; other sizes in decimal units.

    >>> kv_text(131072), kv_text(131000.0)
    ('128 KiB', '131 KB')
    """
    kib = kv_bytes_per_token / KiB
    return f"{kib:,.0f} KiB" if kib == int(kib) and kib >= 1 else fmt_bytes(kv_bytes_per_token)


# ``{name!X}`` in a template: the value of ``name`` written in a unit.
CONVERSIONS: dict[str, Callable[[Any], str]] = {
    "B": fmt_bytes,  # bytes, in the decimal unit that suits them (16 GB)
    "E": lambda n_bytes: f"{n_bytes / GB:.4g} GB",  # an exact size beside a round one (15.01 GB)
    "K": kv_text,  # KV bytes per token (128 KiB)
    "M": lambda seconds: fmt_value(seconds / MS, "ms"),  # a time in seconds, in ms (4.78 ms)
    "T": lambda bytes_per_s: f"{bytes_per_s / TB:.3g} TB/s",  # a bandwidth (3.35 TB/s)
    "F": lambda flops_per_s: f"{flops_per_s / TFLOPS:,.0f} TFLOPS",  # a FLOP rate (989 TFLOPS)
    "U": lambda text: text.upper(),  # a precision id as prose writes it (BF16)
}


class CardFormatter(string.Formatter):
    """``str.format`` plus the ``CONVERSIONS`` (``{weight_bytes!B}``, ``{floor_s!M}``, …)."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        known = conversion in CONVERSIONS
        return CONVERSIONS[conversion](value) if known else super().convert_field(value, conversion)


def fill(template: str, fields: Mapping[str, Any]) -> str:
    """``template`` with its ``{name:spec}`` and ``{name!X}`` fields taken from ``fields``.

    >>> fill("{n} GPUs, {share:.0%} of {t!M} at {bw!T}", dict(n=2, share=0.25, t=4.776e-3, bw=3.35e12))
    '2 GPUs, 25% of 4.78 ms at 3.35 TB/s'
    """
    return CardFormatter().vformat(template, (), fields)


def fill_html(template: str | Sequence[str], fields: Mapping[str, Any]) -> str:
    """A prose part: a string is filled as it is, a list becomes an HTML bullet list of its filled items."""
    if isinstance(template, str):
        return fill(template, fields)
    return "<ul>" + "".join(f"<li>{fill(item, fields)}</li>" for item in template) + "</ul>"


def close(given: float, target: float, rel_tol: float) -> bool:
    """True if ``given`` lies within ``rel_tol`` (a fraction) of a finite ``target``.

    >>> close(0.0, 0.0, 0.05), close(0.0, 4.8, 0.05), close(5.0, 4.8, 0.05)
    (True, False, True)
    """
    return math.isfinite(target) and abs(given - target) <= rel_tol * abs(target)


# ---- The spec: a lesson's data rows and code ---------------------------------------------------------------
@dataclass(frozen=True)
class CardCode:
    """What a card computes. ``scenario(params)`` returns a new dict (the parameters plus the figures the
    scenario quotes; it never changes its argument); ``numbers(scenario)`` a dict of every value the answers,
    traps and templates name; ``draw(rng)`` a shuffled scenario's parameters; ``usable(params)`` whether a
    drawn scenario meets the card's own conditions."""

    scenario: Callable[[Mapping[str, Any]], dict[str, Any]]
    numbers: Callable[[Mapping[str, Any]], dict[str, Any]]
    draw: Callable[[np.random.Generator], dict[str, Any]]
    usable: Callable[[Mapping[str, Any]], bool] = lambda _params: True


@dataclass(frozen=True)
class CardSpec:
    """One card, declared: its data rows (read by ``read_card``) and its ``code``.

    A default written as a whole number is a count: a scenario must give a whole number ≥ 1 there; the
    parameters named in ``positive`` must be > 0. ``phrases`` are templates filled first, so the answers,
    traps and prose can share a sentence (``{exact_why}``).
    """

    qid: str
    title: str
    lessons: tuple[str, ...]
    defaults: Mapping[str, Any]
    stated: Mapping[str, float]
    answers: tuple[Answer, ...]  # as declared: see ``Answer`` and ``Trap``
    traps: tuple[Trap, ...]
    text: Mapping[str, str | tuple[str, ...]]
    code: CardCode
    phrases: Mapping[str, str] = field(default_factory=dict)
    positive: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # The study card's figures are data: read-only, so no caller can change them by accident.
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))
        object.__setattr__(self, "stated", MappingProxyType(dict(self.stated)))

    def default_params(self) -> dict[str, Any]:
        """The study card's own scenario: its parameters plus the round figures it quotes."""
        return {**self.defaults, **self.stated}

    def card(self, scenario_params: Mapping[str, Any] | None = None) -> Card:
        """The card for a scenario; without one, the study card's own scenario and round figures.

        ``scenario_params`` overrides the card's parameters (see ``default_params``); stated figures it does
        not give are taken from the tables, rounded to three significant digits, so the text and the answers
        agree. It is never modified. Times in seconds, sizes in bytes, prices in US dollars per GPU-hour.
        """
        allowed = set(self.defaults) | set(self.stated)
        unknown = sorted(set(scenario_params or {}) - allowed)
        if unknown:
            names = ", ".join(map(repr, unknown))
            raise InvalidConfigurationError(
                f"{self.qid} has no parameter {names}; it takes {', '.join(sorted(allowed))}"
            )
        given = {**self.defaults, **(self.stated if scenario_params is None else scenario_params)}
        is_default = given == self.default_params()
        for key in MODEL_KEYS:  # unknown model, GPU or precision names raise
            if key in given:
                get_model(given[key])
        if "gpu" in given:
            gpu = get_gpu(given["gpu"])
            for key in PRECISION_KEYS:
                if key in given:
                    peak_flops_per_s(gpu, given[key])
        for key, default in self.defaults.items():
            whole = isinstance(default, int) and not isinstance(default, bool)
            if whole and (not float(given[key]).is_integer() or given[key] < 1):
                raise InvalidConfigurationError(f"{key} must be a whole number ≥ 1, got {given[key]!r}")
        for key in self.positive:
            if not given[key] > 0:
                raise InvalidConfigurationError(f"{key} must be > 0, got {given[key]!r}")
        params = self.code.scenario(given)
        numbers = self.code.numbers(params)
        fields = {**params, **numbers}
        for name, phrase in self.phrases.items():
            if name in fields:
                raise DataTableError(f"{self.qid}: phrase {name!r} has the name of a figure")
            fields[name] = fill(phrase, fields)
        answers = tuple(
            replace(a, label=fill(a.label, fields), value=numbers[a.name],
                    exact=numbers[a.exact] if a.exact else None, exact_why=fill(a.exact_why, fields))
            for a in self.answers
        )  # fmt: skip
        built = tuple(
            replace(t, value=numbers[t.value], why=fill(t.why, fields))
            for t in self.traps
            if numbers[t.value] is not None
        )
        by_name = {a.name: a for a in answers}
        # A trap within the answer's tolerance cannot be told apart from the right answer: drop it.
        traps = tuple(t for t in built if not by_name[t.answer].accepts(t.value))
        text = {part: fill_html(self.text[part], fields) for part in TEXT_PARTS}
        return Card(
            self.qid, fill(self.title, fields), self.lessons, MappingProxyType(params), answers=answers,
            traps=traps, is_default=is_default, trap_count_built=len(built), spec=self, **text,
        )  # fmt: skip

    def shuffled_card(self, rng: np.random.Generator | int | None = None, max_tries: int = 200) -> Card:
        """The card with other numbers: another model, GPU, precision, batch, context, price or fraction.

        Draws from ``rng`` (a seeded ``numpy.random.Generator``, or a seed) until the scenario builds, meets
        the card's own conditions (``CardCode.usable``), has answers that differ from the default card's and
        keeps every trap distinguishable from its right answer.
        """
        if not isinstance(rng, np.random.Generator):
            rng = np.random.default_rng(rng)
        default = self.card().expected()
        for _ in range(max_tries):
            params = self.code.draw(rng)
            if not self.code.usable(params):
                continue
            try:
                c = self.card(params)
            except RooflineError:
                continue
            sane = all(np.isfinite(v) and v > 0 for v in c.expected().values())
            new_numbers = any(not close(v, default[k], DEFAULT_REL_TOL) for k, v in c.expected().items())
            if sane and new_numbers and len(c.traps) == c.trap_count_built:
                return c
        raise InvalidConfigurationError(f"no valid shuffled scenario for {self.qid} in {max_tries} draws")


def read_card(path: Path | str, code: CardCode) -> CardSpec:
    """The card whose data rows are in the TOML file ``path``, computed by ``code``.

    A missing or malformed row raises ``DataTableError``, naming the file.
    """
    path = Path(path)
    try:
        rows = tomllib.loads(path.read_text(encoding="utf-8"))
        text = {part: v if isinstance(v := rows["text"][part], str) else tuple(v) for part in TEXT_PARTS}
        return CardSpec(
            qid=rows["qid"], title=rows["title"], lessons=tuple(rows["lessons"]), defaults=rows["defaults"],
            stated=rows.get("stated", {}), answers=tuple(Answer(**a) for a in rows["answers"]),
            traps=tuple(Trap(**t) for t in rows.get("traps", [])), text=text, code=code,
            phrases=rows.get("phrases", {}), positive=tuple(rows.get("positive", ())),
        )  # fmt: skip
    except (KeyError, TypeError, tomllib.TOMLDecodeError) as err:
        raise DataTableError(f"{path}: {err!r}") from None


def spec_named(specs: Mapping[str, CardSpec], qid: str) -> CardSpec:
    """The spec of card ``qid`` (any case) among ``specs``, or an error naming the cards there are."""
    key = str(qid).strip().upper()
    if key not in specs:
        raise InvalidConfigurationError(f"unknown card {qid!r}; the cards are {', '.join(specs)}")
    return specs[key]


# ---- A built card ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    """One number a card expects: ``value`` in ``unit`` (the unit the learner types), within ``rel_tol``.

    ``value`` is the card's simplified answer (from the round figures it states); ``exact`` the library's
    exact answer where it differs (``None`` where they agree), and ``exact_why`` what the card simplifies.
    Both are right. As a ``CardSpec`` declares it, ``value`` is ``None``, ``exact`` names the field of the
    card's numbers holding the exact answer, and ``label`` and ``exact_why`` are templates.

    >>> a = Answer("floor_ms", "decode floor", "ms", 4.776, exact=4.48, exact_why="the embedding is gathered")
    >>> a.accepts(4.8), a.accepts(4.5), a.accepts(4.0), a.matches(4.5)
    (True, True, False, "the library's exact figure")
    """

    name: str
    label: str
    unit: str
    value: float | None = None
    rel_tol: float = DEFAULT_REL_TOL
    exact: float | str | None = None
    exact_why: str = ""

    @property
    def tolerance_text(self) -> str:
        """The tolerance in words, e.g. ``'±5%'``."""
        return f"±{self.rel_tol * 100:g}%"

    @property
    def has_exact(self) -> bool:
        """True if the library's exact answer differs from the card's by more than rounding (0.5 %)."""
        return self.exact is not None and not close(self.exact, self.value, 0.005)

    def accepts(self, given: float) -> bool:
        """True if ``given`` lies within the tolerance of the card's answer or of the library's exact one."""
        return self.matches(given) is not None

    def matches(self, given: float) -> str | None:
        """Which right answer ``given`` is: ``CARD_FIGURE``, ``EXACT_FIGURE`` (the nearer one when both are
        within the tolerance), or ``None`` if neither."""
        card_ok = close(given, self.value, self.rel_tol)
        exact_ok = self.has_exact and close(given, self.exact, self.rel_tol)
        if card_ok and exact_ok:
            return CARD_FIGURE if abs(given - self.value) <= abs(given - self.exact) else EXACT_FIGURE
        return CARD_FIGURE if card_ok else EXACT_FIGURE if exact_ok else None


@dataclass(frozen=True)
class Trap:
    """A known wrong answer to answer ``answer``: its ``name``, ``value`` (in the answer's unit) and ``why``.
    In a ``CardSpec``, ``value`` names the field of the card's numbers holding it (``None`` there: no such
    slip in this scenario) and ``why`` is a template."""

    answer: str
    name: str
    value: float | str
    why: str


@dataclass(frozen=True)
class Card:
    """One built self-check card. Build it with ``CardSpec.card`` or ``CardSpec.shuffled_card``."""

    qid: str
    title: str
    lessons: tuple[str, ...]
    params: Mapping[str, Any]  # the scenario, with the figures it quotes
    scenario: str  # HTML, like the other prose parts
    answers: tuple[Answer, ...]
    traps: tuple[Trap, ...]
    worked: str
    mistake: str
    followup_question: str
    followup_answer: str
    is_default: bool = True
    trap_count_built: int = 0  # traps before dropping those equal to an answer
    spec: CardSpec | None = field(default=None, compare=False)  # to shuffle or reset it

    def answer(self, name: str) -> Answer:
        """The expected answer called ``name``."""
        for a in self.answers:
            if a.name == name:
                return a
        raise InvalidConfigurationError(f"{self.qid} has no answer {name!r}; it has {self.answer_names()}")

    def answer_names(self) -> list[str]:
        """The names of the answers, in the card's order."""
        return [a.name for a in self.answers]

    def expected(self) -> dict[str, float]:
        """``{answer name: the card's simplified answer}``."""
        return {a.name: a.value for a in self.answers}

    def exact(self) -> dict[str, float]:
        """``{answer name: the library's exact answer}``, also accepted; the card's where the two agree."""
        return {a.name: a.exact if a.has_exact else a.value for a in self.answers}

    def question_html(self, answer_table: bool = True) -> str:
        """Scenario plus the list of numbers to give (labels, units, tolerances), without the answers;
        ``answer_table=False`` leaves the list out (the widget shows it beside its boxes)."""
        rows = "".join(
            f"<tr><td>{html.escape(a.label)}</td><td>{html.escape(a.unit)}</td><td>{a.tolerance_text}</td></tr>"
            for a in self.answers
        )
        tag = "" if self.is_default else " <i>(shuffled numbers)</i>"
        both = (
            "<p><i>Work from the figures stated above, or with the lessons' exact figures: both are right, "
            "and the check says which one you gave.</i></p>"
            if any(a.has_exact for a in self.answers)
            else ""
        )
        table = (
            f'<table class="{DATA_TABLE}" style="font-size:14px"><tr><th style="text-align:left">'
            f'give</th><th style="text-align:left">unit</th><th style="text-align:left">tolerance</th></tr>'
            f"{rows}</table>"
        )
        return (
            f'<div class="roofline-card {NOT_MATH}"><p><b>{self.qid} · {html.escape(self.title)}</b>{tag}</p>'
            f"{self.scenario}{both}{table if answer_table else ''}</div>"
        )

    def reveal_html(self) -> str:
        """Worked answer, common mistake and follow-up, then a table of the card's simplified answers beside
        the library's exact ones, where they differ."""
        # A card's own scenario is worked in the round figures it states (≈ 4.8 ms), and says so.
        differ = [a for a in self.answers if a.has_exact]
        card_figures = self.is_default and differ
        heading = "Worked answer, in the card's round figures" if card_figures else "Worked answer"
        text = (
            f"<h4>{heading}</h4>{self.worked}"
            f"<h4>Common mistake</h4>{self.mistake}"
            f"<h4>Likely follow-up</h4><p><i>{self.followup_question}</i></p>{self.followup_answer}"
        )
        if not differ:
            return text
        rows = "".join(
            f"<tr><td>{html.escape(a.label)}</td><td>{fmt_value(a.value, a.unit)}</td>"
            f"<td>{fmt_value(a.exact, a.unit)}</td></tr>"
            for a in differ
        )
        head = (
            "<tr><th>answer</th><th>the card's simplified figure</th><th>the library's exact figure</th></tr>"
        )
        why = "".join(f"<p>{html.escape(n)}</p>" for n in dict.fromkeys(a.exact_why for a in differ))
        return (
            f"{text}<h4>The card's figures and the lessons' exact ones (both are right)</h4>"
            f'<table class="{DATA_TABLE}">{head}{rows}</table>{why}'
        )

    def reveal(self):
        """A folded ``roofline.course.widgets.Reveal`` of ``reveal_html()`` (reads well without a kernel)."""
        from roofline.course.widgets import Reveal

        return Reveal("Reveal the worked answer", self.reveal_html())

    def _repr_html_(self) -> str:
        return self.question_html()

    def __repr__(self) -> str:
        names = ", ".join(f"{a.name} [{a.unit}]" for a in self.answers)
        return f"<Card {self.qid}: {self.title} — {names}>"


# ---- The judge ---------------------------------------------------------------------------------------------
THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")


def parse_answer(typed: str | float | None) -> float | None:
    """What a learner typed, as a number; ``None`` if nothing was typed.

    Spaces, underscores, a leading ``$``, a trailing ``%``, ``×`` or ``x``, and commas between groups of
    three digits are allowed. Anything else that is not a finite number is an ``InvalidConfigurationError``.

    >>> parse_answer(""), parse_answer(None), parse_answer("0"), parse_answer("5,334"), parse_answer("$4.17")
    (None, None, 0.0, 5334.0, 4.17)
    >>> parse_answer("eighty")
    Traceback (most recent call last):
    ...
    roofline.errors.InvalidConfigurationError: 'eighty' is not a number
    """
    if typed is None:
        return None
    text = typed
    if isinstance(typed, str):
        text = typed.strip().replace(" ", "").replace("_", "").removeprefix("$").rstrip("%×xX")
        if not text:
            return None
        if THOUSANDS.match(text):
            text = text.replace(",", "")
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise InvalidConfigurationError(f"{typed!r} is not a number") from None
    if not math.isfinite(value):
        raise InvalidConfigurationError(f"{typed!r} is not a finite number")
    return value


@dataclass(frozen=True)
class Result:
    """The verdict on one ``answer``: ``given`` (``None``: unanswered), which right answer it ``matched``
    (``CARD_FIGURE``, ``EXACT_FIGURE``; ``None``: not right) and the traps it fell into."""

    answer: Answer
    given: float | None
    matched: str | None = None
    traps: tuple[Trap, ...] = ()

    @property
    def name(self) -> str:
        """The answer's name."""
        return self.answer.name

    @property
    def correct(self) -> bool:
        """True if ``given`` is one of the right answers."""
        return self.matched is not None

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
        """Name of the first recognised trap."""
        return self.traps[0].name if self.traps else None

    @property
    def trap_names(self) -> list[str]:
        """Names of every recognised trap, in order."""
        return [t.name for t in self.traps]

    def text(self) -> str:
        """One line in words; the expected value is shown only once the answer is right."""
        a = self.answer
        head = f"{a.label}: "
        if self.given is None:
            return head + "no answer yet"
        given, card = fmt_value(self.given, a.unit), fmt_value(a.value, a.unit)
        if self.correct and not a.has_exact:
            return head + f"{given} is right (the library gives {card}, {a.tolerance_text})"
        if self.correct:
            exact = fmt_value(a.exact, a.unit)
            mine, theirs = (card, exact) if self.matched == CARD_FIGURE else (exact, card)
            other = EXACT_FIGURE if self.matched == CARD_FIGURE else CARD_FIGURE
            return (
                head + f"{given} is right: {self.matched}, {mine} ({a.tolerance_text}); {other} is "
                f"{theirs}. {a.exact_why}"
            )
        if self.traps:
            return head + f"{given} is wrong, a known trap: {self.traps[0].name}. {self.traps[0].why}"
        return head + f"{given} is wrong (not within {a.tolerance_text}); rework it or press Reveal"


def power_of_ten_traps(answer: Answer, given: float) -> list[Trap]:
    """The slips by 10×, 100× or 1,000× (too big or too small) that ``given`` matches.

    >>> [t.value for t in power_of_ten_traps(Answer("floor_ms", "decode floor", "ms", 4.776), 4776)]
    [4776.0]
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
    """The verdict on one answer ``given`` (a number, or ``None`` for unanswered; 0 is a number).

    >>> judge(Answer("x", "net change", "%", 0.0), (), 0.0).status
    'right'
    """
    matched = None if given is None else answer.matches(given)
    if given is None or matched:
        return Result(answer, given, matched)
    specific = [t for t in traps if t.answer == answer.name and close(given, t.value, answer.rel_tol)]
    return Result(answer, given, traps=tuple(specific + power_of_ten_traps(answer, given)))


def check(card: Card, answers: Mapping[str, float | str | None]) -> list[Result]:
    """Judge ``answers`` (``{answer name: value in the answer's unit}``) against ``card``: one ``Result``
    per expected answer, in the card's order. A name left out, ``None`` or an empty string is unanswered;
    strings are read with ``parse_answer``; an unknown name is an ``InvalidConfigurationError``."""
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


# ---- Verdicts as HTML --------------------------------------------------------------------------------------
STATUS_STYLE = {  # status → (mark, colour)
    RIGHT: ("✓", "#1b7f3b"),
    TRAP: ("⚠", "#b35c00"),
    WRONG: ("✗", "#b00020"),
    UNANSWERED: ("…", "#666666"),
    "unreadable": ("?", "#b00020"),
}


def unreadable_text(label: str, typed: str) -> str:
    """The line shown for a box whose text is not a number."""
    return f"{label}: {typed!r} is not a number; type digits, e.g. 4.8 or 5,334"


def results_html(results: Sequence[Result], unreadable: Mapping[str, str]) -> str:
    """The verdicts as an HTML list, coloured by status; ``unreadable`` maps answer names to typed text
    that is not a number (shown instead of that answer's verdict)."""
    items = []
    for r in results:
        if r.name in unreadable:
            status, line = "unreadable", unreadable_text(r.answer.label, unreadable[r.name])
        else:
            status, line = r.status, r.text()
        mark, colour = STATUS_STYLE[status]
        items.append(f'<li style="color:{colour}" data-status="{status}">{mark} {html.escape(line)}</li>')
    style = "font-size:15px;list-style:none;padding-left:0"
    return f'<ul class="roofline-results" style="{style}">{"".join(items)}</ul>'
