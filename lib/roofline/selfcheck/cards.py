"""Building the seven cards from their specs: the study card's scenario, another one, or a shuffled one.

Taught in notebooks/pack01_speed_physics.ipynb, which revisits lessons 01–04, 06, 09, 15, 16, 24, 25, 28,
44 and 59–61 (each card module names its own lessons).

Scenario figures. A card states the figures the learner works from ("16 GB of weights", "3.35 TB/s") and
computes its answers from exactly those, so mental arithmetic on the stated numbers lands inside the
tolerance. The default cards state the study card's round figures (8 B parameters, 16 GB, 70 GB, 128 KB
of KV per token); any other scenario states the tables' figures rounded to three significant digits.

>>> c = card("Q1")
>>> [(a.name, round(a.value, 1), a.unit) for a in c.answers][:2]
[('floor_ms', 4.8, 'ms'), ('ceiling_tps', 209.4, 'tokens/s')]
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.errors import InvalidConfigurationError, RooflineError
from roofline.physics.precision import peak_flops_per_s
from roofline.selfcheck import render
from roofline.selfcheck.spec import DEFAULT_REL_TOL, Answer, CardSpec, Trap, close
from roofline.selfcheck.text import fill

# One module per card, in the card's order; each defines ``SPEC``.
CARD_MODULES = (
    "q1_decode_floor",
    "q2_prefill",
    "q3_batching",
    "q4_compute_bound",
    "q5_gpu_util",
    "q6_token_cost",
    "q7_launch_amdahl",
)
# Cards on the levers (issue 12), built like the others by ``card`` and ``shuffled_card``; not in Pack 01's
# ``QIDS`` or ``cards()``.
LEVER_CARD_MODULES = ("lever_quantization", "lever_speculative", "lever_moe", "lever_attention")
SPECS: Mapping[str, CardSpec] = MappingProxyType(
    {
        s.qid: s
        for s in (
            importlib.import_module(f"roofline.selfcheck.{name}").SPEC
            for name in CARD_MODULES + LEVER_CARD_MODULES
        )
    }
)
QIDS: tuple[str, ...] = tuple(
    importlib.import_module(f"roofline.selfcheck.{n}").SPEC.qid for n in CARD_MODULES
)
LEVER_QIDS: tuple[str, ...] = tuple(q for q in SPECS if q not in QIDS)

# Parameters that must be whole numbers ≥ 1, and parameters that must be > 0, whichever card has them.
WHOLE_PARAMS = ("batch", "context_tokens", "prompt_tokens", "paste_tokens", "tp_num_gpus", "kernels_per_step")
POSITIVE_PARAMS = (
    "usd_per_gpu_hour",
    "tp_measured_s",
    "measured_step_s",
    "launch_s",
    "ideal_step_s",
    "part_speedup",
    "part2_speedup",
    "advertised_tps",
    "benchmark_tps",
    "power_w",
)


@dataclass(frozen=True)
class Card:
    """One built self-check card. Build it with ``card(qid, params)`` or ``shuffled_card(qid, rng)``."""

    qid: str
    title: str
    lessons: tuple[str, ...]
    params: Mapping[str, Any] = field(repr=False)  # the scenario, with the figures it quotes
    scenario: str = field(repr=False)  # HTML, generated from the parameters
    answers: tuple[Answer, ...] = field(repr=False)
    traps: tuple[Trap, ...] = field(repr=False)
    worked: str = field(repr=False)  # HTML
    mistake: str = field(repr=False)  # HTML
    followup_question: str = field(repr=False)  # HTML
    followup_answer: str = field(repr=False)  # HTML
    is_default: bool = True
    trap_count_built: int = field(default=0, repr=False)  # traps before dropping those equal to an answer

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
        """``{answer name: the card's simplified answer}``: what ``check`` accepts (within each tolerance)."""
        return {a.name: a.value for a in self.answers}

    def exact(self) -> dict[str, float]:
        """``{answer name: the library's exact answer}``, also accepted; the card's answer where the two
        agree (the lessons print the exact ones: 4.48 ms from the 15.01 GB a step reads, beside the card's
        4.8 ms from its round 16 GB).

        >>> round(card("Q1").exact()["floor_ms"], 2), round(card("Q1").expected()["floor_ms"], 2)
        (4.48, 4.78)
        """
        return {a.name: a.exact if a.has_exact else a.value for a in self.answers}

    def lesson_links(self, kind: str = "markdown") -> str:
        """Links to the card's lessons, relative to ``notebooks/`` (``kind`` is ``markdown`` or ``html``)."""
        return render.lesson_links(self, kind)

    def question_html(self, answer_table: bool = True) -> str:
        """Scenario plus the list of numbers to give (names, units, tolerances), without the answers."""
        return render.question_html(self, answer_table)

    def reveal_html(self) -> str:
        """Worked answer, common mistake and follow-up, as one HTML block."""
        return render.reveal_html(self)

    def reveal(self, summary: str = "Reveal the worked answer"):
        """A folded ``roofline.ui.widgets.Reveal`` of ``reveal_html()`` (reads well without a kernel)."""
        from roofline.course.widgets import Reveal

        return Reveal(summary, self.reveal_html())

    def _repr_html_(self) -> str:
        return self.question_html()

    def __repr__(self) -> str:
        names = ", ".join(f"{a.name} [{a.unit}]" for a in self.answers)
        return f"<Card {self.qid}: {self.title} — {names}>"


def spec(qid: str) -> CardSpec:
    """The spec of card ``qid`` (``"Q1"`` … ``"Q7"``, any case)."""
    key = str(qid).strip().upper()
    if key not in SPECS:
        raise InvalidConfigurationError(f"unknown card {qid!r}; the cards are {', '.join(SPECS)}")
    return SPECS[key]


def default_params(qid: str) -> dict[str, Any]:
    """The study card's own scenario for ``qid``: its parameters plus the round figures it quotes.

    >>> default_params("Q3")["batch"], default_params("Q3")["kv_bytes_per_token"]
    (32, 131072)
    """
    return spec(qid).default_params()


def validate(params: Mapping[str, Any]) -> None:
    """Reject unknown model, GPU or precision names and counts or times that make no sense."""
    for key in ("model", "tp_model"):
        if key in params:
            get_model(params[key])
    if "gpu" in params:
        g = get_gpu(params["gpu"])
        for key in ("weight_precision", "tp_precision"):
            if key in params:
                peak_flops_per_s(g, params[key])
    for key in WHOLE_PARAMS:
        if key in params and (not float(params[key]).is_integer() or params[key] < 1):
            raise InvalidConfigurationError(f"{key} must be a whole number ≥ 1, got {params[key]!r}")
    for key in POSITIVE_PARAMS:
        if key in params and not params[key] > 0:
            raise InvalidConfigurationError(f"{key} must be > 0, got {params[key]!r}")


def card(qid: str, scenario_params: Mapping[str, Any] | None = None) -> Card:
    """Build card ``qid`` (``"Q1"`` … ``"Q7"``) for a scenario; all numbers from the roofline library.

    ``scenario_params`` overrides the card's parameters (model, gpu, batch, context_tokens,
    usd_per_gpu_hour, …; see ``default_params(qid)``). Without it the card uses the study card's own
    scenario and round figures. With it, stated figures not given (``weight_bytes``,
    ``kv_bytes_per_token``, ``parameters``, …) are taken from the tables and rounded to three significant
    digits, so the text and the answers agree. Times in seconds, sizes in bytes, prices in US dollars per
    GPU-hour. ``scenario_params`` is never modified.

    >>> round(card("Q3").answer("step_ms").value, 2)
    6.0
    >>> round(card("Q3", {"batch": 64}).answer("step_ms").value, 2)    # 16.1 GB + 64 × 1,000 × 131 KB
    7.3
    >>> card("Q3", {"batch": 1024, "context_tokens": 8192})
    Traceback (most recent call last):
    ...
    roofline.errors.DoesNotFitError: Does not fit: ...
    """
    s = spec(qid)
    if scenario_params is None:
        given, is_default = s.default_params(), True
    else:
        allowed = set(s.defaults) | set(s.stated)
        unknown = sorted(set(scenario_params) - allowed)
        if unknown:
            raise InvalidConfigurationError(
                f"{s.qid} has no parameter {', '.join(map(repr, unknown))}; "
                f"it takes {', '.join(sorted(allowed))}"
            )
        given = {**s.defaults, **scenario_params}
        is_default = given == s.default_params()
    validate(given)
    params = s.code.scenario(given)
    numbers = s.code.numbers(params)
    fields = {**params, **dataclasses.asdict(numbers)}
    answers = tuple(
        Answer(
            a.name, fill(a.label, fields), a.unit, getattr(numbers, a.name), a.rel_tol,
            exact=getattr(numbers, a.exact) if a.exact else None, exact_why=fill(a.exact_why, fields),
        )
        for a in s.answers
    )  # fmt: skip
    built = tuple(
        Trap(t.answer, t.name, getattr(numbers, t.value), fill(t.why, fields))
        for t in s.traps
        if getattr(numbers, t.value) is not None
    )
    by_name = {a.name: a for a in answers}
    # A trap that lands within the answer's tolerance cannot be told apart from the right answer: drop it.
    traps = tuple(t for t in built if not by_name[t.answer].accepts(t.value))
    text = s.code.text(params, numbers)
    return Card(
        qid=s.qid,
        title=fill(s.title, params),
        lessons=s.lessons,
        params=MappingProxyType(params),
        scenario=text.scenario,
        answers=answers,
        traps=traps,
        worked=text.worked,
        mistake=text.mistake,
        followup_question=text.followup_question,
        followup_answer=text.followup_answer,
        is_default=is_default,
        trap_count_built=len(built),
    )


def cards() -> list[Card]:
    """The seven default cards, Q1 to Q7."""
    return [card(q) for q in QIDS]


def shuffled_card(qid: str, rng: np.random.Generator | int | None = None, max_tries: int = 200) -> Card:
    """Card ``qid`` with other numbers: another model, GPU, precision, batch, context, price or fraction.

    Draws from ``rng`` (a seeded ``numpy.random.Generator``, or a seed) until the scenario is valid: the
    weights and KV fit in memory, the GPU has the precision's math, the context fits the model, the card's
    own conditions hold (``CardSpec.usable``: e.g. a batched decode step is memory-bound, so the card's
    formula holds), the answers differ from the default card's, and every trap stays distinguishable from
    its right answer. The answers are computed by the library like those of the default card.

    >>> from roofline.selfcheck.judge import check
    >>> c = shuffled_card("Q6", np.random.default_rng(1))
    >>> c.is_default, all(r.correct for r in check(c, c.expected()))
    (False, True)
    """
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    s = spec(qid)
    default = card(s.qid).expected()
    for _ in range(max_tries):
        params = s.code.draw(rng)
        if not s.code.usable(params):
            continue
        try:
            c = card(s.qid, params)
        except RooflineError:
            continue
        sane = all(np.isfinite(v) and v > 0 for v in c.expected().values())
        new_numbers = any(not close(v, default[k], DEFAULT_REL_TOL) for k, v in c.expected().items())
        if sane and new_numbers and len(c.traps) == c.trap_count_built:
            return c  # every trap of the card is still distinguishable from its answer
    raise InvalidConfigurationError(f"no valid shuffled scenario for {qid} in {max_tries} draws")
