"""What a self-check card is made of: the spec types (data) and the built card's parts.

Taught in notebooks/pack01_speed_physics.ipynb (the Pack 01 self-check cards).

A card module (``q1_decode_floor`` … ``q7_launch_amdahl``) describes its card with one ``CardSpec``:

- data: the title, the lessons it revisits, the study card's scenario (``defaults``) and the round figures
  it quotes (``stated``), the answers it asks for (name, label, unit, tolerance) and the known traps
  (which answer, which slip, why);
- code (``CardCode``): ``scenario`` (check the parameters, derive the figures a scenario quotes),
  ``numbers`` (every answer and trap value, computed by the roofline library), ``text`` (the scenario,
  worked answer, common mistake and follow-up in HTML), ``draw`` (a shuffled scenario) and ``usable``
  (extra conditions a shuffled scenario must meet).

Labels and trap explanations are templates, filled with the scenario's parameters and the card's numbers
by ``roofline.selfcheck.text.fill``.

>>> AnswerSpec("floor_ms", "decode floor, batch 1", "ms").rel_tol
0.05
>>> Answer("floor_ms", "decode floor, batch 1", "ms", 4.776).accepts(4.8)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

PERCENT = 100.0
DEFAULT_REL_TOL = 0.05  # ±5 %: room for mental arithmetic on the stated figures

# Trap names: what ``Result.trap`` says when a wrong answer matches a known slip.
TRAP_BYTES_OVER_FLOPS = "bytes ÷ FLOP/s"
TRAP_ONE_USER_KV = "one user's KV"
TRAP_ADDED_SPEEDUPS = "added the speedups"
TRAP_MULTIPLIED_SPEEDUPS = "multiplied the speedups"
TRAP_DOLLARS_HOURS = "dollars and hours the wrong way round"
TRAP_POWER_OF_TEN = "a power of ten"
TRAP_CEILING_AS_TIME_LEFT = "ceiling given as the time left"
TRAP_ONE_GPU_BANDWIDTH = "one GPU's bandwidth"
TRAP_INVERTED_MBU = "measured ÷ floor"
TRAP_PREFILL_AS_WEIGHT_READ = "prefill timed as a weight read"
TRAP_FORGOT_TWO = "forgot the 2 in 2·N·P"
TRAP_NO_PROMPT_SCALING = "prefill not scaled with the prompt"
TRAP_INVERTED_RIDGE = "ridge upside down"
TRAP_B_TIMES_SLOWER = "the PM's B× slower"
TRAP_FULL_B_GAIN = "the full B× gain"
TRAP_BYTES_PER_WEIGHT = "wrong bytes per weight"
TRAP_GPU_UTIL = "GPU-util read as utilisation"
TRAP_POWER_AS_UTIL = "power read as utilisation"
TRAP_MFU_FOR_MBU = "MFU instead of MBU"
TRAP_FORGOT_3600 = "forgot the 3,600 s in an hour"
TRAP_ONE_STREAM_PRICE = "priced one user's stream"
TRAP_TOTAL_FOR_USER = "total rate for one user"
TRAP_SHARE_OF_TOTAL = "share of the longer step"
TRAP_PART_SPEEDUP = "the part's speedup for the whole"

# The lessons the cards link to: number (the study card's) or topic (beyond it) → (notebook stem, title).
LESSONS: dict[str, tuple[str, str]] = {
    "01": ("01_token_cost", "What a token costs"),
    "02": ("02_decode_floor", "The decode floor"),
    "03": ("03_launch_overhead", "Kernel launch overhead"),
    "04": ("04_roofline", "The roofline"),
    "06": ("06_benchmarks_that_lie", "Benchmarks that lie"),
    "09": ("09_gpu_util", "What GPU-util measures"),
    "15": ("15_prefill_vs_decode", "Prefill versus decode"),
    "16": ("16_step_time", "The step-time model"),
    "24": ("24_tensor_parallel", "Tensor parallelism"),
    "25": ("25_batching", "Batching"),
    "28": ("28_kv_cache", "The KV cache"),
    "44": ("44_chunked_prefill", "Chunked prefill"),
    "59": ("59_dashboard", "The serving dashboard"),
    "60": ("60_amdahl", "Amdahl and profiling"),
    "61": ("61_compute_bound", "When decode turns compute-bound"),
    "quantization": ("quantization", "Quantization"),
    "speculative_decoding": ("speculative_decoding", "Speculative decoding"),
    "mixture_of_experts": ("mixture_of_experts", "Mixture of experts"),
    "attention_variants": ("attention_variants", "Attention variants"),
}


def close(given: float, target: float, rel_tol: float) -> bool:
    """True if ``given`` lies within ``rel_tol`` (a fraction) of a finite ``target``.

    >>> close(0.0, 0.0, 0.05), close(0.0, 4.8, 0.05), close(5.0, 4.8, 0.05)
    (True, False, True)
    """
    return math.isfinite(target) and abs(given - target) <= rel_tol * abs(target)


# ---------------------------------------------------------------------------------------------------------
# The spec: what a card module declares
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AnswerSpec:
    """A number the card asks for: ``name``, ``label`` (a template), the ``unit`` typed, the tolerance.

    ``exact`` names the field of the card's numbers holding the library's exact answer, where it differs
    from the card's simplified one (the lessons teach both: 4.48 ms from the 15.01 GB a step reads, and the
    card's 4.8 ms from its round 16 GB); ``exact_why`` (a template) says what the card simplifies.
    """

    name: str
    label: str
    unit: str
    rel_tol: float = DEFAULT_REL_TOL
    exact: str | None = None
    exact_why: str = ""


@dataclass(frozen=True)
class TrapSpec:
    """A known slip on answer ``answer``: its ``name``, the field of the card's numbers holding the wrong
    value (in the answer's unit; ``None`` there means the slip does not exist in this scenario), and
    ``why`` (a template)."""

    answer: str
    name: str
    value: str
    why: str


@dataclass(frozen=True)
class CardText:
    """The prose of a built card, in HTML."""

    scenario: str
    worked: str
    mistake: str
    followup_question: str
    followup_answer: str


def always(_params: Mapping[str, Any]) -> bool:
    """The default ``CardSpec.usable``: every scenario that builds is usable."""
    return True


@dataclass(frozen=True)
class CardCode:
    """The functions of a card: the parts of its spec that compute.

    ``scenario(params)`` returns a new dict (the parameters plus the figures the scenario quotes); it
    never changes its argument. ``numbers(scenario)`` returns a frozen dataclass whose fields include one
    per answer (same name) and one per trap value. ``text(scenario, numbers)`` writes the prose,
    ``draw(rng)`` a shuffled scenario's parameters, and ``usable(params)`` says whether a drawn scenario
    meets the card's own conditions.
    """

    scenario: Callable[[Mapping[str, Any]], dict[str, Any]]
    numbers: Callable[[Mapping[str, Any]], Any]
    text: Callable[[Mapping[str, Any], Any], CardText]
    draw: Callable[[np.random.Generator], dict[str, Any]]
    usable: Callable[[Mapping[str, Any]], bool] = always


@dataclass(frozen=True)
class CardSpec:
    """One card, declared: its data, and its ``code``. See the module docstring for what each holds."""

    qid: str
    title: str
    lessons: tuple[str, ...]
    defaults: Mapping[str, Any]
    stated: Mapping[str, float]
    answers: tuple[AnswerSpec, ...]
    traps: tuple[TrapSpec, ...]
    code: CardCode

    def __post_init__(self) -> None:
        # The study card's figures are data: read-only, so no caller can change them by accident.
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))
        object.__setattr__(self, "stated", MappingProxyType(dict(self.stated)))

    def default_params(self) -> dict[str, Any]:
        """The study card's own scenario: its parameters plus the round figures it quotes."""
        return {**self.defaults, **self.stated}


# ---------------------------------------------------------------------------------------------------------
# A built card's numbers
# ---------------------------------------------------------------------------------------------------------
CARD_FIGURE = "the card's simplified figure"
EXACT_FIGURE = "the library's exact figure"


@dataclass(frozen=True)
class Answer:
    """One number a card expects: ``value`` in ``unit`` (the unit the learner types), within ``rel_tol``.

    ``value`` is the card's simplified answer (worked from the round figures it states); ``exact`` the
    library's exact answer where it differs (``None`` where they agree), and ``exact_why`` what the card
    simplifies. Both are right.

    >>> a = Answer("floor_ms", "decode floor", "ms", 4.776, exact=4.48, exact_why="the embedding is gathered")
    >>> a.accepts(4.8), a.accepts(4.5), a.accepts(4.0), a.matches(4.5)
    (True, True, False, "the library's exact figure")
    """

    name: str
    label: str
    unit: str
    value: float
    rel_tol: float = DEFAULT_REL_TOL
    exact: float | None = None
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
        """True if ``given`` lies within the tolerance of the card's answer or of the library's exact one
        (0 is judged like any number)."""
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
    """A known wrong answer to one of a card's questions: ``value`` (same unit as the answer) and why."""

    answer: str
    name: str
    value: float
    why: str
