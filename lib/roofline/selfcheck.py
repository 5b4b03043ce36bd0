"""Self-check cards for Pack 01 (speed physics): seven questions to answer aloud, then check with numbers.

Taught in the pack notebook (notebooks/pack01_speed_physics.ipynb), which revisits lessons 01–04, 06, 09,
15, 16, 24, 25, 28, 44 and 59–61.

Each card is data: a scenario generated from its parameters, the numeric answers it expects (name, unit,
value, tolerance), the worked answer, the common mistake, and a follow-up with its answer. Every number
comes from the roofline library; the traps (the wrong answers people really give) are computed too, so
``check`` can tell a slip it recognises ("you divided bytes by FLOP/s") from an answer that is simply off.

Answer values are in the unit the learner types (ms, tokens/s, %, ×, $), converted from the library's SI
results at the edge of this module.

Scenario figures. A card states the figures the learner works from ("16 GB of weights", "3.35 TB/s") and
computes its answers from exactly those, so mental arithmetic on the stated numbers lands inside the
tolerance. The default cards state the study card's round figures (8 B parameters, 16 GB, 70 GB, 128 KB
of KV per token); any other scenario states the tables' figures rounded to three significant digits.

>>> c = card("Q1")
>>> [(a.name, round(a.value, 1), a.unit) for a in c.answers][:2]
[('floor_ms', 4.8, 'ms'), ('ceiling_tps', 209.4, 'tokens/s')]
>>> [r.status for r in check(c, {"floor_ms": 4.8, "ceiling_tps": 2090})]
['right', 'trap', 'unanswered', 'unanswered']
>>> check(c, {"floor_ms": 16e9 / 989e12 * 1e3})[0].trap
'bytes ÷ FLOP/s'
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import ipywidgets as W
import numpy as np

from roofline.data import get_gpu, get_model, gpus, models
from roofline.errors import InvalidConfigurationError, RooflineError
from roofline.physics.architecture import kv_bytes_per_token, parameter_count, weight_bytes
from roofline.physics.core import (
    binding_resource,
    compute_time_s,
    memory_time_s,
    ridge_point_flop_per_byte,
    roofline_time_s,
)
from roofline.physics.cost import cost_per_million_tokens_usd, seconds_per_million_tokens, tokens_per_hour
from roofline.physics.decode import batched_step_time_s, decode_floor_s, decode_step
from roofline.physics.memory import check_fits, fits, kv_cache_bytes
from roofline.physics.metrics import achieved_bandwidth_bytes_per_s, mbu, mfu
from roofline.physics.overheads import (
    amdahl_ceiling,
    amdahl_new_time_fraction,
    amdahl_speedup,
    launch_overhead_s,
)
from roofline.physics.precision import bytes_per_element, get_precision, peak_flops_per_s
from roofline.physics.prefill import compute_bound_prompt_tokens, prefill_flops, stalled_decode_steps
from roofline.units import MS, SECONDS_PER_HOUR, TB, TFLOPS, TOKENS_PER_MILLION, US, fmt_bytes

PERCENT = 100.0
DEFAULT_REL_TOL = 0.05  # ±5 %: room for mental arithmetic on the stated figures
TYPICAL_MBU = (0.70, 0.85)  # share of the decode floor that tuned production kernels reach

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
}


# ---------------------------------------------------------------------------------------------------------
# Data: answers, traps, cards, results
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    """One number a card expects: ``value`` in ``unit`` (the unit the learner types), within ``rel_tol``."""

    name: str
    label: str
    unit: str
    value: float
    rel_tol: float = DEFAULT_REL_TOL

    @property
    def tolerance_text(self) -> str:
        """The tolerance in words, e.g. ``'±5%'``."""
        return f"±{self.rel_tol * 100:g}%"

    def accepts(self, given: float) -> bool:
        """True if ``given`` lies within the tolerance of the expected value."""
        return _close(given, self.value, self.rel_tol)

    def shown(self) -> str:
        """The expected value with its unit, for display."""
        return fmt_value(self.value, self.unit)


@dataclass(frozen=True)
class Trap:
    """A known wrong answer to one of a card's questions: ``value`` (same unit as the answer) and why."""

    answer: str
    name: str
    value: float
    why: str


@dataclass(frozen=True)
class Card:
    """One self-check card. Build it with ``card(qid, params)`` or ``shuffled_card(qid, rng)``."""

    qid: str
    title: str
    lessons: tuple[str, ...]
    params: Mapping = field(repr=False)
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
        return [a.name for a in self.answers]

    def expected(self) -> dict[str, float]:
        """``{answer name: expected value}``: what ``check`` accepts (within each tolerance)."""
        return {a.name: a.value for a in self.answers}

    def lesson_links(self, kind: str = "markdown") -> str:
        """Links to the card's lessons, relative to ``notebooks/`` (``kind`` is ``markdown`` or ``html``)."""
        parts = []
        for n in self.lessons:
            stem, title = LESSONS[n]
            if kind == "html":
                parts.append(f'<a href="{stem}.ipynb">{n} · {html.escape(title)}</a>')
            else:
                parts.append(f"[{n} · {title}]({stem}.ipynb)")
        return " · ".join(parts)

    def question_html(self) -> str:
        """Scenario plus the list of numbers to give (names, units, tolerances), without the answers."""
        rows = "".join(
            f"<tr><td>{html.escape(a.label)}</td><td>{html.escape(a.unit)}</td>"
            f"<td>{a.tolerance_text}</td></tr>"
            for a in self.answers
        )
        tag = "" if self.is_default else " <i>(shuffled numbers)</i>"
        return (
            f'<div class="roofline-card"><p><b>{self.qid} · {html.escape(self.title)}</b>{tag}</p>'
            f"{self.scenario}"
            f'<table class="roofline-readout" style="font-size:14px"><tr><th style="text-align:left">'
            f'give</th><th style="text-align:left">unit</th><th style="text-align:left">tolerance</th></tr>'
            f"{rows}</table></div>"
        )

    def reveal_html(self) -> str:
        """Worked answer, common mistake and follow-up, as one HTML block."""
        return (
            f"<h4>Worked answer</h4>{self.worked}"
            f"<h4>Common mistake</h4>{self.mistake}"
            f"<h4>Likely follow-up</h4><p><i>{self.followup_question}</i></p>{self.followup_answer}"
        )

    def reveal(self, summary: str = "Reveal the worked answer"):
        """A folded ``roofline.ui.widgets.Reveal`` of ``reveal_html()`` (reads well without a kernel)."""
        from roofline.ui.widgets import Reveal

        return Reveal(summary, self.reveal_html())

    def _repr_html_(self) -> str:
        return self.question_html()

    def __repr__(self) -> str:
        names = ", ".join(f"{a.name} [{a.unit}]" for a in self.answers)
        return f"<Card {self.qid}: {self.title} — {names}>"


@dataclass(frozen=True)
class Result:
    """The verdict on one answer: right, a recognised trap, wrong, or unanswered."""

    name: str
    label: str
    unit: str
    given: float | None
    expected: float
    tolerance_text: str
    correct: bool
    traps: tuple[Trap, ...] = ()

    @property
    def status(self) -> str:
        """``'right'``, ``'trap'``, ``'wrong'`` or ``'unanswered'``."""
        if self.given is None:
            return "unanswered"
        if self.correct:
            return "right"
        return "trap" if self.traps else "wrong"

    @property
    def trap(self) -> str | None:
        """Name of the first recognised trap (card-specific traps come before a power of ten)."""
        return self.traps[0].name if self.traps and not self.correct else None

    @property
    def trap_names(self) -> list[str]:
        return [t.name for t in self.traps]

    def text(self) -> str:
        """One line in words; the expected value is shown only once the answer is right."""
        head = f"{self.label}: "
        if self.status == "unanswered":
            return head + "no answer yet"
        given = fmt_value(self.given, self.unit)
        if self.status == "right":
            return (
                head + f"{given} is right (the library gives {fmt_value(self.expected, self.unit)}, "
                f"{self.tolerance_text})"
            )
        if self.status == "trap":
            t = self.traps[0]
            return head + f"{given} is wrong, a known trap: {t.name}. {t.why}"
        return head + f"{given} is wrong (not within {self.tolerance_text}); rework it or press Reveal"


def _close(given: float, target: float, rel_tol: float) -> bool:
    return math.isfinite(target) and abs(given - target) <= rel_tol * abs(target)


def _power_of_ten_traps(a: Answer, given: float) -> list[Trap]:
    found = []
    for k in (1, -1, 2, -2, 3, -3):
        target = a.value * 10.0**k
        if _close(given, target, a.rel_tol):
            hint = ""
            if a.unit == "%" and k == -2:
                hint = " A fraction typed where a percentage was asked?"
            elif a.unit in ("ms", "µs", "s") and abs(k) == 3:
                hint = " Seconds, milliseconds and microseconds differ by 1,000 each."
            factor = f"{10**k:g}" if k > 0 else f"1/{10**-k:g}"
            found.append(
                Trap(
                    a.name,
                    TRAP_POWER_OF_TEN,
                    target,
                    f"Your answer is {factor} times the right one: recount the zeros and the "
                    f"unit prefixes (k, M, G, T).{hint}",
                )
            )
    return found


def check(card: Card, answers: Mapping[str, float | None]) -> list[Result]:
    """Judge ``answers`` (``{answer name: value in the answer's unit}``) against ``card``.

    One ``Result`` per expected answer, in the card's order. A name left out, or ``None``, is unanswered.
    A wrong answer close (within the answer's tolerance) to a known trap is named: the card's own traps
    first, then a slip by a power of ten (10×, 100×, 1,000× too big or too small).

    Taught in the Pack 01 notebook (self-checks for lessons 01–04, 06, 09, 15, 16, 24, 25, 28, 44, 59–61).

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
        given = answers.get(a.name)
        if given is not None:
            try:
                given = float(given)
            except (TypeError, ValueError):
                raise InvalidConfigurationError(
                    f"answer {a.name!r} must be a number, got {given!r}"
                ) from None
            if not math.isfinite(given):
                raise InvalidConfigurationError(f"answer {a.name!r} must be finite, got {given!r}")
        if given is None:
            results.append(Result(a.name, a.label, a.unit, None, a.value, a.tolerance_text, False))
            continue
        correct = a.accepts(given)
        matched: tuple[Trap, ...] = ()
        if not correct:
            specific = [t for t in card.traps if t.answer == a.name and _close(given, t.value, a.rel_tol)]
            matched = tuple(specific + _power_of_ten_traps(a, given))
        results.append(Result(a.name, a.label, a.unit, given, a.value, a.tolerance_text, correct, matched))
    return results


# ---------------------------------------------------------------------------------------------------------
# Formatting helpers (display only)
# ---------------------------------------------------------------------------------------------------------
def _num(v: float) -> str:
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def fmt_value(value: float, unit: str) -> str:
    """A number with its unit, rounded for reading.

    >>> fmt_value(4.776, "ms"), fmt_value(4.1667, "$"), fmt_value(79.6, "%"), fmt_value(1.25, "×")
    ('4.78 ms', '$4.17', '79.6%', '1.25×')
    >>> fmt_value(5333.3, "tokens/s")
    '5,333 tokens/s'
    """
    if unit == "$":
        return (
            f"${value:,.0f}"
            if abs(value) >= 1000
            else f"${value:.2f}"
            if abs(value) >= 0.01
            else f"${value:.2g}"
        )
    if unit in ("%", "×"):
        return f"{_num(value)}{unit}"
    return f"{_num(value)} {unit}"


def _sig(x: float, digits: int = 3) -> float:
    """``x`` rounded to ``digits`` significant digits: how a figure is quoted in a scenario."""
    if x == 0:
        return 0.0
    return float(round(x, digits - 1 - math.floor(math.log10(abs(x)))))


def _ms(seconds: float) -> str:
    return fmt_value(seconds / MS, "ms")


def _gb(n_bytes: float) -> str:
    return fmt_bytes(n_bytes)


def _tbps(bytes_per_s: float) -> str:
    return f"{bytes_per_s / TB:.3g} TB/s"


def _tflops(flops_per_s: float) -> str:
    return f"{flops_per_s / TFLOPS:,.0f} TFLOPS"


def _ul(*items: str) -> str:
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def _prec(p: str) -> str:
    return p.upper()


# ---------------------------------------------------------------------------------------------------------
# The seven cards. Each builder takes the filled parameters and returns a Card.
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Spec:
    title: str
    lessons: tuple[str, ...]
    ids: dict  # parameters every scenario has (model, GPU, batch, ...), with the card's values
    stated: dict  # figures the scenario states; derived from the ids unless given
    build: Callable[[dict], tuple]
    draw: Callable[[np.random.Generator], dict]


def _fill(p: dict, key: str, derive: Callable[[], float]) -> float:
    if p.get(key) is None:
        p[key] = derive()
    return p[key]


def _gpu_peak(p: dict, precision_key: str = "weight_precision") -> float:
    return peak_flops_per_s(get_gpu(p["gpu"]), p[precision_key])


# Q1 ------------------------------------------------------------------------------------------------------
def _build_q1(p: dict):
    m, g = get_model(p["model"]), get_gpu(p["gpu"])
    check_fits(m, g, 1, 0, weight_precision=p["weight_precision"])
    check_fits(p["tp_model"], g, 1, 0, num_gpus=p["tp_num_gpus"], weight_precision=p["tp_precision"])
    w = _fill(p, "weight_bytes", lambda: _sig(weight_bytes(m, p["weight_precision"])))
    tp_w = _fill(p, "tp_weight_bytes", lambda: _sig(weight_bytes(p["tp_model"], p["tp_precision"])))
    bw, peak, n = g.memory_bandwidth_bytes_per_s, _gpu_peak(p), p["tp_num_gpus"]
    floor = decode_floor_s(w, bw)
    ceiling = 1.0 / floor
    tp_floor = decode_floor_s(tp_w, n * bw)
    tp_mbu = mbu(tp_w, p["tp_measured_s"], n * bw)
    advert, bench = p["advertised_tps"], p["benchmark_tps"]
    lo, hi = (f * ceiling for f in TYPICAL_MBU)
    tp_name = get_model(p["tp_model"]).name

    scenario = (
        f"<p>You serve {m.name} with {_prec(p['weight_precision'])} weights ({_gb(w)}) on one {g.name} "
        f"({_tbps(bw)} of memory bandwidth, {_tflops(peak)} dense), and exactly one user is online. "
        f"Product wants to advertise {advert:,.0f} tokens/s of streaming, and a colleague's benchmark "
        f"already prints {bench:,.0f} tokens/s.</p><p>Can you promise it? Give the shortest possible "
        f"decode step and the tokens/s ceiling it allows; then the follow-up: {tp_name} in "
        f"{_prec(p['tp_precision'])} ({_gb(tp_w)}) split over {n} of these GPUs in tensor parallel "
        f"measures {_ms(p['tp_measured_s'])} per token. What is its floor, and its MBU?</p>"
    )
    answers = (
        Answer("floor_ms", "decode floor, batch 1", "ms", floor / MS),
        Answer("ceiling_tps", "tokens/s ceiling for one user", "tokens/s", ceiling),
        Answer("tp_floor_ms", f"follow-up: floor on {n} GPUs", "ms", tp_floor / MS),
        Answer("tp_mbu_pct", "follow-up: MBU", "%", tp_mbu * PERCENT),
    )
    wrong_floor = compute_time_s(w, peak)  # bytes pushed through a FLOP/s rate
    one_gpu = decode_floor_s(tp_w, bw)
    traps = (
        Trap(
            "floor_ms",
            TRAP_BYTES_OVER_FLOPS,
            wrong_floor / MS,
            "Bytes travel at a bandwidth (bytes/s); FLOP/s is a rate for arithmetic. At batch 1 the step "
            "is set by reading the weights, so divide bytes by bandwidth.",
        ),
        Trap(
            "ceiling_tps",
            TRAP_BYTES_OVER_FLOPS,
            1.0 / wrong_floor,
            "That ceiling comes from dividing bytes by FLOP/s, which is not a time; the weight read "
            "over the memory bandwidth sets the step.",
        ),
        Trap(
            "tp_floor_ms",
            TRAP_ONE_GPU_BANDWIDTH,
            one_gpu / MS,
            f"In tensor parallel each GPU reads only its share of the weights, at the same time, so the "
            f"{n} bandwidths add up.",
        ),
        Trap(
            "tp_mbu_pct",
            TRAP_ONE_GPU_BANDWIDTH,
            mbu(tp_w, p["tp_measured_s"], bw) * PERCENT,
            "MBU compares with the peak of every GPU the step runs on; a value above 100% is the hint.",
        ),
        Trap(
            "tp_mbu_pct",
            TRAP_INVERTED_MBU,
            p["tp_measured_s"] / tp_floor * PERCENT,
            "MBU is floor ÷ measured (achieved ÷ peak bandwidth), at most 100%.",
        ),
    )
    if advert > ceiling:
        verdict = (
            f"{advert:,.0f} tokens/s is above even the perfect ceiling, so no: it cannot be promised "
            "on this setup."
        )
    elif advert > hi:
        verdict = (
            f"{advert:,.0f} tokens/s is under the perfect ceiling but above what real kernels reach "
            f"(about {lo:,.0f}–{hi:,.0f}), so it would be a promise with no margin: no."
        )
    else:
        verdict = (
            f"{advert:,.0f} tokens/s sits inside what real kernels reach (about {lo:,.0f}–{hi:,.0f}), "
            "so yes, with some margin."
        )
    worked = _ul(
        f"With one user, each decode step must stream every weight out of HBM once, and no trick shortens "
        f"that read: {_gb(w)} ÷ {_tbps(bw)} = <b>{_ms(floor)}</b> per step.",
        f"A step gives that user one token, so the ceiling is 1 ÷ {_ms(floor)} = "
        f"<b>{ceiling:,.0f} tokens/s</b>; tuned kernels get {TYPICAL_MBU[0]:.0%}–{TYPICAL_MBU[1]:.0%} of "
        f"it, about {lo:,.0f}–{hi:,.0f}. {verdict}",
        f"The benchmark's {bench:,.0f} tokens/s is {bench / ceiling:.1f}× the physical ceiling, so the "
        "benchmark is wrong, not the physics: usually the timer stopped before the GPU finished (kernels "
        "launch asynchronously; synchronize before reading the clock), or prompt tokens were counted as "
        "output.",
        "Two levers make one user faster: read fewer bytes per step (quantized weights), or get more than "
        "one token per weight read (speculative decoding).",
    )
    mistake = (
        f"<p>Reaching for TFLOPS. Dividing the weight bytes by the FLOP rate, {_gb(w)} ÷ {_tflops(peak)}, "
        f"gives {_ms(wrong_floor)}: a number without meaning, {floor / wrong_floor:.0f}× too short. At "
        f"batch 1 the GPU does about {2 / bytes_per_element(p['weight_precision']):g} FLOP per weight byte "
        f"it reads, far below the ridge of {ridge_point_flop_per_byte(peak, bw):.0f}, so the memory read, "
        "not the arithmetic, decides the step.</p>"
        f"<p>In the follow-up, using one GPU's bandwidth gives {_ms(one_gpu)}, a floor {n}× too slow: the "
        f"{n} GPUs read their shares of the weights in parallel, so their bandwidths add.</p>"
    )
    followup_q = (
        f"Is {tp_name} in {_prec(p['tp_precision'])} at {_ms(p['tp_measured_s'])} per token on "
        f"{n} GPUs in tensor parallel a healthy baseline?"
    )
    health = (
        "healthy"
        if tp_mbu >= TYPICAL_MBU[0]
        else "workable, with headroom to find"
        if tp_mbu >= 0.5
        else "worth a profile: something else eats time"
    )
    followup_a = _ul(
        f"Tensor parallelism gives each GPU 1/{n} of the weights, and they all read at once, so the "
        f"bandwidths add: {n} × {_tbps(bw)} = {_tbps(n * bw)}.",
        f"Floor: {_gb(tp_w)} ÷ {_tbps(n * bw)} = <b>{_ms(tp_floor)}</b>.",
        f"MBU = floor ÷ measured = {_ms(tp_floor)} ÷ {_ms(p['tp_measured_s'])} = <b>{tp_mbu:.0%}</b>: "
        f"{health}. (The all-reduces between the GPUs cost a little on top; lesson 24.)",
    )
    return scenario, answers, traps, worked, mistake, followup_q, followup_a


def _draw_q1(rng: np.random.Generator) -> dict:
    m = _choice(rng, _dense_models())
    g = _choice(rng, list(gpus()))
    prec = _choice(rng, _weight_precisions(g))
    tp_prec = _choice(rng, _weight_precisions(g))
    ceiling = 1.0 / decode_floor_s(weight_bytes(m, prec), get_gpu(g).memory_bandwidth_bytes_per_s)
    tp_model = _choice(rng, _dense_models())
    n = int(_choice(rng, [2, 4, 8]))
    tp_floor = decode_floor_s(weight_bytes(tp_model, tp_prec), n * get_gpu(g).memory_bandwidth_bytes_per_s)
    return dict(
        model=m,
        gpu=g,
        weight_precision=prec,
        advertised_tps=_sig(ceiling * rng.uniform(0.5, 2.0), 2),
        benchmark_tps=_sig(ceiling * rng.uniform(5, 15), 2),
        tp_model=tp_model,
        tp_precision=tp_prec,
        tp_num_gpus=n,
        tp_measured_s=_sig(tp_floor / rng.uniform(0.45, 0.92), 2),
    )


# Q2 ------------------------------------------------------------------------------------------------------
def _build_q2(p: dict):
    m, g = get_model(p["model"]), get_gpu(p["gpu"])
    check_fits(m, g, 1, p["paste_tokens"], weight_precision=p["weight_precision"])
    if p["paste_tokens"] > m.max_context_tokens:
        raise InvalidConfigurationError(f"{m.name} takes at most {m.max_context_tokens:,} tokens of context")
    n_params = _fill(p, "parameters", lambda: _sig(parameter_count(m)))
    w = _fill(p, "weight_bytes", lambda: _sig(weight_bytes(m, p["weight_precision"])))
    bw, peak = g.memory_bandwidth_bytes_per_s, _gpu_peak(p)
    short, paste = p["prompt_tokens"], p["paste_tokens"]
    floor = decode_floor_s(w, bw)
    f_short, f_paste = prefill_flops(n_params, short), prefill_flops(n_params, paste)
    t_short = roofline_time_s(f_short, w, peak, bw)
    t_paste = roofline_time_s(f_paste, w, peak, bw)
    stalled = stalled_decode_steps(t_paste, floor)
    ridge = ridge_point_flop_per_byte(peak, bw)
    short_binding = binding_resource(compute_time_s(f_short, peak), memory_time_s(w, bw))

    scenario = (
        f"<p>{m.name} in {_prec(p['weight_precision'])} ({n_params / 1e9:.3g} B parameters, {_gb(w)}) runs "
        f"on one {g.name} ({_tflops(peak)} dense, {_tbps(bw)}). Prefilling a {short:,}-token prompt takes "
        f"barely longer than producing one decode token. Why so close? Give the prefill time, the time of "
        f"an unchunked {paste:,}-token paste, and how many decode steps each of the {p['users']} streaming "
        f"users misses meanwhile; then the follow-up: where is this GPU's ridge point?</p>"
    )
    answers = (
        Answer("prefill_ms", f"prefill of {short:,} tokens", "ms", t_short / MS),
        Answer("paste_ms", f"prefill of the {paste:,}-token paste", "ms", t_paste / MS),
        Answer("stalled_steps", "decode steps each user misses", "steps", stalled),
        Answer("ridge", "follow-up: ridge point", "FLOP/byte", ridge),
    )
    bytes_over_flops = compute_time_s(w, peak)
    traps = (
        Trap(
            "prefill_ms",
            TRAP_BYTES_OVER_FLOPS,
            bytes_over_flops / MS,
            "Bytes go over bandwidth and FLOPs over FLOP/s; bytes ÷ FLOP/s is not a time.",
        ),
        Trap(
            "prefill_ms",
            TRAP_PREFILL_AS_WEIGHT_READ,
            floor / MS,
            f"That is the weight read, the decode floor. {short:,} tokens share that read and each needs "
            "2 FLOP per parameter, so the math takes longer than the read.",
        ),
        Trap(
            "prefill_ms",
            TRAP_FORGOT_TWO,
            compute_time_s(f_short / 2, peak) / MS,
            "Each parameter costs a multiply and an add per token: 2 × N × P FLOPs.",
        ),
        Trap(
            "paste_ms",
            TRAP_BYTES_OVER_FLOPS,
            bytes_over_flops / MS,
            "Bytes ÷ FLOP/s is not a time, and the prefill cost must grow with the prompt.",
        ),
        Trap(
            "paste_ms",
            TRAP_FORGOT_TWO,
            compute_time_s(f_paste / 2, peak) / MS,
            "Each parameter costs a multiply and an add per token: 2 × N × P FLOPs.",
        ),
        Trap(
            "paste_ms",
            TRAP_NO_PROMPT_SCALING,
            t_short / MS,
            f"A {paste:,}-token prompt does {paste / short:.0f}× the math of a {short:,}-token one.",
        ),
        Trap(
            "ridge",
            TRAP_INVERTED_RIDGE,
            1.0 / ridge,
            "The ridge is peak FLOP/s ÷ bandwidth: FLOPs per byte, a number in the hundreds on a GPU.",
        ),
    )
    worked = _ul(
        "The time of a piece of work is whichever limit is slower: max(FLOPs ÷ peak FLOP/s, bytes ÷ "
        "bandwidth).",
        f"A decode token does about 2 FLOP per parameter while reading every weight: far too little math "
        f"per byte, so the read decides, {_gb(w)} ÷ {_tbps(bw)} = <b>{_ms(floor)}</b>.",
        f"Prefill pushes all {short:,} prompt tokens through one read of the weights. Its math: 2 × "
        f"{n_params:.3g} × {short:,} = {f_short:.3g} FLOP, taking {f_short:.3g} ÷ {_tflops(peak)} = "
        f"{_ms(compute_time_s(f_short, peak))} against a {_ms(memory_time_s(w, bw))} read: "
        f"{short_binding}-bound, <b>{_ms(t_short)}</b>, only {t_short / floor:.1f}× a decode step.",
        f"A {paste:,}-token paste: 2 × {n_params:.3g} × {paste:,} = {f_paste:.3g} FLOP, so "
        f"<b>{_ms(t_paste)}</b>. Every other stream waits for it: {_ms(t_paste)} ÷ {_ms(floor)} ≈ "
        f"<b>{stalled:.0f} decode steps</b> of frozen output. Chunked prefill (lesson 44) slices the "
        "paste so decode steps keep flowing.",
    )
    mistake = (
        f"<p>Dividing bytes by FLOP/s: {_gb(w)} ÷ {_tflops(peak)} = {_ms(bytes_over_flops)}, which is "
        "not the time of anything. Each quantity goes over its own rate: bytes over bandwidth, FLOPs over "
        "FLOP/s.</p>"
        f"<p>The other slip is a prefill time that does not grow with the prompt: the {paste:,}-token "
        f"paste does {paste / short:.0f}× the work of the {short:,}-token prompt, so its time grows with "
        "it.</p>"
    )
    followup_q = "Where is the ridge point, and what does it tell you?"
    followup_a = _ul(
        f"The ridge is the intensity where both limits meet: {_tflops(peak)} ÷ {_tbps(bw)} = "
        f"<b>{ridge:.0f} FLOP per byte</b>.",
        "Work doing fewer FLOPs per byte than that is memory-bound (decode at small batch); work doing "
        f"more is compute-bound (a {short:,}-token prefill does about "
        f"{f_short / w:.0f} FLOP per weight byte).",
    )
    return scenario, answers, traps, worked, mistake, followup_q, followup_a


def _draw_q2(rng: np.random.Generator) -> dict:
    m = _choice(rng, _dense_models())
    g = _choice(rng, list(gpus()))
    pastes = [t for t in (2000, 4000, 8000, 16000, 32000) if t <= get_model(m).max_context_tokens]
    return dict(
        model=m,
        gpu=g,
        weight_precision=_choice(rng, [p for p in ("bf16", "fp8") if _supports(g, p)]),
        prompt_tokens=int(_choice(rng, [300, 400, 500, 800, 1000, 1500])),
        paste_tokens=int(_choice(rng, pastes)),
        users=int(_choice(rng, [10, 20, 30, 50, 64])),
    )


# Q3 ------------------------------------------------------------------------------------------------------
def _build_q3(p: dict):
    m, g = get_model(p["model"]), get_gpu(p["gpu"])
    b, t = p["batch"], p["context_tokens"]
    check_fits(m, g, b, t, weight_precision=p["weight_precision"], kv_precision=p["kv_precision"])
    w = _fill(p, "weight_bytes", lambda: _sig(weight_bytes(m, p["weight_precision"])))
    kv = _fill(p, "kv_bytes_per_token", lambda: _sig(kv_bytes_per_token(m, p["kv_precision"])))
    bw = g.memory_bandwidth_bytes_per_s
    floor = decode_floor_s(w, bw)
    single = 1.0 / floor
    kv_all = kv_cache_bytes(b, t, kv)
    step = batched_step_time_s(w, b, t, kv, bw)
    per_user, total = 1.0 / step, b / step
    gain = total / single
    step_one_kv = batched_step_time_s(w, 1, t, kv, bw)

    scenario = (
        f"<p>A PM claims that serving {b} users at once makes each of them {b}× slower. The setup: "
        f"{m.name}, {_prec(p['weight_precision'])} weights ({_gb(w)}), on one {g.name} ({_tbps(bw)}); each "
        f"user holds about {t:,} tokens of context at {_gb(kv)} of KV cache per token "
        f"({_prec(p['kv_precision'])}). What happens to one user's speed, and to the GPU's total? Give the "
        f"batched step time, tokens/s per user, tokens/s in total, and the total's gain over a single "
        f"user.</p>"
    )
    answers = (
        Answer("step_ms", f"decode step with {b} users", "ms", step / MS),
        Answer("per_user_tps", "tokens/s per user", "tokens/s", per_user),
        Answer("total_tps", "tokens/s in total", "tokens/s", total),
        Answer("gain_x", "total ÷ single-user tokens/s", "×", gain),
    )
    why_kv = (
        f"Every user reads their own KV cache each step; with {b} users the byte sum needs "
        f"{b} × {t:,} × {_gb(kv)}, not one user's share."
    )
    traps = (
        Trap("step_ms", TRAP_ONE_USER_KV, step_one_kv / MS, why_kv),
        Trap("per_user_tps", TRAP_ONE_USER_KV, 1.0 / step_one_kv, why_kv),
        Trap("total_tps", TRAP_ONE_USER_KV, b / step_one_kv, why_kv),
        Trap(
            "step_ms",
            TRAP_B_TIMES_SLOWER,
            b * floor / MS,
            "The weights are read once per step for the whole batch, so the step does not grow "
            f"{b}-fold; only the KV part grows.",
        ),
        Trap(
            "per_user_tps",
            TRAP_B_TIMES_SLOWER,
            single / b,
            "Each user still gets one token per step, and the step grew only by the KV bytes.",
        ),
        Trap(
            "gain_x",
            TRAP_FULL_B_GAIN,
            float(b),
            f"The step got {step / floor:.2f}× longer, so the gain is {b} ÷ {step / floor:.2f}, not {b}.",
        ),
    )
    worked = _ul(
        f"Alone, a user's step reads the {_gb(w)} of weights: {_gb(w)} ÷ {_tbps(bw)} = {_ms(floor)}, "
        f"so {single:,.0f} tokens/s.",
        f"With {b} users the weights are still read once per step, shared by the batch. What is added is "
        f"each user's own KV: {b} × {t:,} × {_gb(kv)} = {_gb(kv_all)}. The step reads "
        f"{_gb(w + kv_all)}: {_gb(w + kv_all)} ÷ {_tbps(bw)} = <b>{_ms(step)}</b>, and it yields {b} "
        "tokens, one per user.",
        f"Each user: one token per {_ms(step)} = <b>{per_user:,.0f} tokens/s</b>, "
        f"{step / floor - 1:.0%} slower than alone, not {b}× slower.",
        f"The GPU: {b} tokens per {_ms(step)} = <b>{total:,.0f} tokens/s</b>, "
        f"<b>{gain:.1f}×</b> the single user's {single:,.0f}. Not the full {b}× because the step got "
        f"{step / floor:.2f}× longer: {b} ÷ {step / floor:.2f} = {b / (step / floor):.1f}.",
        "What batching costs is KV memory, which grows as batch × context.",
    )
    mistake = (
        f"<p>Adding one user's KV ({_gb(kv_cache_bytes(1, t, kv))}) instead of {b} users' "
        f"({_gb(kv_all)}) gives a step of {_ms(step_one_kv)}, almost the single-user floor. If the "
        f"question says {b} users, {b} must appear in the byte sum.</p>"
        f"<p>A sanity check that catches unit slips: at batch 1, {_ms(floor)} per step must come out as "
        f"about {single:,.0f} tokens/s.</p>"
    )
    followup_q = (
        f"A FastAPI server calls generate() per request; {p['queued_users']} users wait "
        f"{p['queued_wait_s']:.0f} s and the GPU's math units sit mostly idle. Buy a bigger GPU?"
    )
    followup_a = _ul(
        "No. The requests run one after another, so the queue is the bottleneck, not the chip: each "
        "request reads all the weights per token on its own.",
        f"Continuous batching lets all {p['queued_users']} share each weight read: by the numbers above a "
        f"step for them would take about "
        f"{_ms(batched_step_time_s(w, p['queued_users'], t, kv, bw))} instead of {p['queued_users']} "
        f"separate steps of {_ms(floor)}.",
    )
    return scenario, answers, traps, worked, mistake, followup_q, followup_a


def _draw_q3(rng: np.random.Generator) -> dict:
    m = _choice(rng, _dense_models())
    g = _choice(rng, list(gpus()))
    ctx = [t for t in (500, 1000, 2000, 4096, 8192) if t <= get_model(m).max_context_tokens]
    return dict(
        model=m,
        gpu=g,
        weight_precision=_choice(rng, _weight_precisions(g)),
        kv_precision=_choice(rng, ["bf16", "fp8"]),
        batch=int(_choice(rng, [4, 8, 16, 24, 32, 48, 64, 96, 128])),
        context_tokens=int(_choice(rng, ctx)),
    )


# Q4 ------------------------------------------------------------------------------------------------------
def _build_q4(p: dict):
    m, g = get_model(p["model"]), get_gpu(p["gpu"])
    check_fits(m, g, 1, 0, weight_precision=p["weight_precision"])
    bw, peak = g.memory_bandwidth_bytes_per_s, _gpu_peak(p)
    bpe = bytes_per_element(p["weight_precision"])
    ridge = ridge_point_flop_per_byte(peak, bw)
    flip = compute_bound_prompt_tokens(m, g, p["weight_precision"])  # same balance: 2·B FLOP per bpe bytes
    eb, et = p["example_batch"], p["example_context"]
    ex = decode_step(m, g, eb, et, weight_precision=p["weight_precision"], on_overflow="mask")
    ex_fits = bool(ex.fits)

    scenario = (
        f"<p>{m.name} with {_prec(p['weight_precision'])} weights ({bpe:g} byte(s) per parameter) decodes on "
        f"one {g.name} ({_tflops(peak)} dense at that precision, {_tbps(bw)}). Contexts are short, and you "
        "keep raising the batch. Give the ridge point and the batch at which decode turns compute-bound; "
        "then say why real servers reach that point much later.</p>"
    )
    answers = (
        Answer("ridge", "ridge point", "FLOP/byte", ridge),
        Answer("flip_batch", "batch where decode turns compute-bound", "users", flip),
    )
    traps = (
        Trap(
            "ridge",
            TRAP_INVERTED_RIDGE,
            1.0 / ridge,
            "The ridge is peak FLOP/s ÷ bandwidth, in FLOPs per byte.",
        ),
    ) + tuple(
        Trap(
            "flip_batch",
            TRAP_BYTES_PER_WEIGHT,
            ridge * other / 2,
            f"A token does 2 FLOP per parameter, and a parameter here takes {bpe:g} byte(s), so the "
            f"intensity is 2·B ÷ {bpe:g} FLOP per byte.",
        )
        for other in (1.0, 2.0, 4.0)
        if abs(other - bpe) > 1e-9
    )
    kv_line = (
        f"For instance at batch {eb} with {et:,}-token contexts the step does only "
        f"{ex.arithmetic_intensity_flop_per_byte:.0f} FLOP per byte, far below the ridge."
        if ex_fits
        else f"At batch {eb} with {et:,}-token contexts the KV does not even fit in memory."
    )
    worked = _ul(
        f"Per token, decode does 2 FLOP per parameter and reads {bpe:g} byte(s) per parameter. The weight "
        f"bytes are shared by the batch, so B users do 2·B FLOP per {bpe:g} byte(s): intensity ≈ "
        f"{2 / bpe:g}·B FLOP per byte.",
        f"Ridge: {_tflops(peak)} ÷ {_tbps(bw)} = <b>{ridge:.0f} FLOP per byte</b>. Decode crosses it at "
        f"B ≈ {ridge:.0f} × {bpe:g} ÷ 2 = <b>{flip:.0f} users</b>.",
        f"In practice the KV cache keeps it memory-bound much longer: its bytes grow with batch × context "
        f"and, unlike the weights, no two users share them. {kv_line}",
    )
    mistake = (
        "<p>Naming the ratio without its unit or its reason. Say it is FLOPs per byte, and that the weight "
        "bytes are shared by the batch while the KV bytes are not: that is why intensity grows with "
        "batch only while contexts are short.</p>"
        f"<p>Also watch the bytes per weight: with {bpe:g} byte(s) per parameter the flip is at "
        f"{flip:.0f}, not at {ridge * (2 if bpe != 2 else 1) / 2:.0f}.</p>"
    )
    followup_q = "Once decode is compute-bound, what does a bigger batch buy?"
    followup_a = _ul(
        "No more tokens per weight read: the math is now the limit, so the total tokens/s flattens while "
        "each user's step keeps getting longer.",
        "In a concurrency sweep that is the saturation wall: throughput plateaus and latency climbs.",
    )
    return scenario, answers, traps, worked, mistake, followup_q, followup_a


def _draw_q4(rng: np.random.Generator) -> dict:
    g = _choice(rng, list(gpus()))
    return dict(
        model=_choice(rng, _dense_models()),
        gpu=g,
        weight_precision=_choice(rng, _weight_precisions(g)),
        example_batch=int(_choice(rng, [32, 64, 100, 128])),
        example_context=int(_choice(rng, [1000, 2000, 4096])),
    )


# Q5 ------------------------------------------------------------------------------------------------------
def _build_q5(p: dict):
    m, g = get_model(p["model"]), get_gpu(p["gpu"])
    check_fits(m, g, 1, 0, weight_precision=p["weight_precision"])
    n_params = _fill(p, "parameters", lambda: _sig(parameter_count(m)))
    w = _fill(p, "weight_bytes", lambda: _sig(weight_bytes(m, p["weight_precision"])))
    bw, peak, step = g.memory_bandwidth_bytes_per_s, _gpu_peak(p), p["measured_step_s"]
    achieved = achieved_bandwidth_bytes_per_s(w, step)
    use = mbu(w, step, bw)
    flops_use = mfu(prefill_flops(n_params, 1), step, peak)  # one token: 2 × N FLOP
    power_share = p["power_w"] / g.power_w

    scenario = (
        f"<p>One user chats with {m.name} ({_prec(p['weight_precision'])}, {_gb(w)} of weights) on a "
        f"{g.name} ({_tbps(bw)}). The dashboard shows GPU-util {p['gpu_util_pct']:.0f}%, power "
        f"{p['power_w']:.0f} W of a {g.power_w:.0f} W cap, and {_ms(step)} per decode token. Your manager "
        "wants more GPUs. Is this one maxed out? Give the bandwidth the step achieves and its MBU.</p>"
    )
    answers = (
        Answer("achieved_tbps", "achieved memory bandwidth", "TB/s", achieved / TB),
        Answer("mbu_pct", "MBU", "%", use * PERCENT),
    )
    traps = (
        Trap(
            "mbu_pct",
            TRAP_GPU_UTIL,
            p["gpu_util_pct"],
            "GPU-util is a duty cycle: the share of time some kernel was running, not how much of the "
            "chip it used.",
        ),
        Trap(
            "mbu_pct",
            TRAP_POWER_AS_UTIL,
            power_share * PERCENT,
            "Power says how hard the chip works, not what share of the memory bandwidth is used; a "
            "memory-bound step leaves the tensor cores waiting, which draws little power.",
        ),
        Trap(
            "mbu_pct",
            TRAP_MFU_FOR_MBU,
            flops_use * PERCENT,
            "That is MFU, the compute share; decode at batch 1 is memory-bound, so MBU is the one to read.",
        ),
        Trap(
            "mbu_pct",
            TRAP_INVERTED_MBU,
            step / decode_floor_s(w, bw) * PERCENT,
            "MBU is achieved ÷ peak bandwidth (floor ÷ measured), at most 100%.",
        ),
    )
    worked = _ul(
        "GPU-util reports the share of sampling windows in which any kernel ran, a duty cycle. A kernel "
        "that uses a sliver of the chip still counts as 100%.",
        f"Measure memory instead. Each step reads the {_gb(w)} of weights: {_gb(w)} ÷ {_ms(step)} = "
        f"<b>{achieved / TB:.2f} TB/s</b>, which is <b>{use:.0%}</b> of the {_tbps(bw)} peak (MBU). "
        f"Compute is nearly idle: MFU is {flops_use:.2%}.",
        f"So {p['power_w']:.0f} W of {g.power_w:.0f} W is expected: a memory-bound step keeps the tensor "
        "cores waiting for data.",
        "The fix is more users per GPU (batching shares each weight read), not more GPUs.",
    )
    mistake = (
        f"<p>Reading the power ({power_share:.0%} of the cap) as 'half the units are idle, the kernels "
        "need work', or taking GPU-util at face value. Neither measures the bottleneck. Divide the "
        "achieved bandwidth by the peak bandwidth, not by the ridge or by anything in FLOP/s.</p>"
    )
    followup_q = "What would you put on the dashboard instead?"
    followup_a = _ul(
        "MBU and MFU, to see how busy memory and compute really are.",
        "Next to them: tokens/s, KV-cache usage, running and waiting requests, and percentiles of TTFT "
        "(time to first token) and TPOT (time per output token).",
    )
    return scenario, answers, traps, worked, mistake, followup_q, followup_a


def _draw_q5(rng: np.random.Generator) -> dict:
    m = _choice(rng, _dense_models())
    g = _choice(rng, list(gpus()))
    prec = _choice(rng, _weight_precisions(g))
    floor = decode_floor_s(weight_bytes(m, prec), get_gpu(g).memory_bandwidth_bytes_per_s)
    return dict(
        model=m,
        gpu=g,
        weight_precision=prec,
        measured_step_s=_sig(floor / rng.uniform(0.45, 0.92), 2),
        power_w=float(round(get_gpu(g).power_w * rng.uniform(0.35, 0.6), -1)),
        gpu_util_pct=float(_choice(rng, [97, 99, 100])),
    )


# Q6 ------------------------------------------------------------------------------------------------------
def _build_q6(p: dict):
    m, g = get_model(p["model"]), get_gpu(p["gpu"])
    b, t, price = p["batch"], p["context_tokens"], p["usd_per_gpu_hour"]
    check_fits(m, g, b, t, weight_precision=p["weight_precision"])
    w = _fill(p, "weight_bytes", lambda: _sig(weight_bytes(m, p["weight_precision"])))
    kv = _fill(p, "kv_bytes_per_token", lambda: _sig(kv_bytes_per_token(m, "bf16")))
    bw = g.memory_bandwidth_bytes_per_s
    _fill(p, "tps_single", lambda: _sig(1.0 / decode_floor_s(w, bw), 2))
    _fill(p, "tps_batched", lambda: _sig(b / batched_step_time_s(w, b, t, kv, bw), 2))
    r1, rb = p["tps_single"], p["tps_batched"]
    c1, cb = cost_per_million_tokens_usd(price, r1), cost_per_million_tokens_usd(price, rb)
    hours1 = seconds_per_million_tokens(r1) / SECONDS_PER_HOUR
    hoursb = seconds_per_million_tokens(rb) / SECONDS_PER_HOUR
    step = batched_step_time_s(w, b, t, kv, bw)
    per_user = 1.0 / step
    step_one_kv = batched_step_time_s(w, 1, t, kv, bw)

    scenario = (
        f"<p>A {g.name} rents for ${price:.2f} per hour. Serving {m.name} "
        f"({_prec(p['weight_precision'])}), one user alone gets about {r1:,.0f} tokens/s, and {b} users "
        f"batched produce about {rb:,.0f} tokens/s in total. What does a million output tokens cost in each "
        f"case? Follow-up: where does the batched figure come from, with {b} users at {t:,} tokens of "
        f"context ({_gb(w)} of weights, {_gb(kv)} of KV per token, {_tbps(bw)})? Give the step time and "
        "one user's tokens/s.</p>"
    )
    answers = (
        Answer("cost_single_usd", "cost per 1M tokens, one user", "$", c1),
        Answer("cost_batched_usd", f"cost per 1M tokens, {b} users", "$", cb),
        Answer("step_ms", f"follow-up: step with {b} users", "ms", step / MS),
        Answer("per_user_tps", "follow-up: tokens/s per user", "tokens/s", per_user),
    )
    traps = []
    for name, rate, cost, hours in (
        ("cost_single_usd", r1, c1, hours1),
        ("cost_batched_usd", rb, cb, hoursb),
    ):
        traps += [
            Trap(
                name,
                TRAP_DOLLARS_HOURS,
                price / hours,
                f"A million tokens takes {hours:.3g} GPU-hours, and each hour costs ${price:.2f}: multiply "
                "the price by the hours, do not divide.",
            ),
            Trap(
                name,
                TRAP_DOLLARS_HOURS,
                tokens_per_hour(rate) / price,
                "Tokens per hour ÷ $ per hour is tokens per dollar, the inverse of a price.",
            ),
            Trap(
                name,
                TRAP_DOLLARS_HOURS,
                tokens_per_hour(rate) / price / TOKENS_PER_MILLION,
                "That is millions of tokens per dollar, the inverse of the price per million.",
            ),
            Trap(
                name,
                TRAP_FORGOT_3600,
                cost * SECONDS_PER_HOUR,
                "The price is per hour and the speed per second: turn tokens/s into tokens per hour "
                "(× 3,600) first.",
            ),
        ]
    traps += [
        Trap(
            "cost_batched_usd",
            TRAP_ONE_STREAM_PRICE,
            cost_per_million_tokens_usd(price, rb / b),
            f"The GPU-hour buys the tokens of all {b} users; price the total rate.",
        ),
        Trap(
            "step_ms",
            TRAP_ONE_USER_KV,
            step_one_kv / MS,
            f"Each of the {b} users reads their own KV every step: {b} × {t:,} × {_gb(kv)}.",
        ),
        Trap(
            "per_user_tps",
            TRAP_ONE_USER_KV,
            1.0 / step_one_kv,
            f"Each of the {b} users reads their own KV every step: {b} × {t:,} × {_gb(kv)}.",
        ),
        Trap(
            "per_user_tps",
            TRAP_TOTAL_FOR_USER,
            b * per_user,
            "That is the GPU's total; each user gets one token per step.",
        ),
    ]
    kv_all = kv_cache_bytes(b, t, kv)
    worked = _ul(
        "The GPU is billed per hour, so first turn speed into tokens per hour: tokens/s × 3,600.",
        f"One user: {r1:,.0f} × 3,600 = {tokens_per_hour(r1):,.0f} tokens per hour, so a million takes "
        f"{hours1:.2f} hours: ${price:.2f} × {hours1:.2f} = <b>${c1:.2f}</b> per million.",
        f"{b} users: {rb:,.0f} × 3,600 = {tokens_per_hour(rb) / 1e6:.1f} M tokens per hour, so a million "
        f"costs ${price:.2f} ÷ {tokens_per_hour(rb) / 1e6:.1f} = <b>${cb:.2f}</b>, {c1 / cb:.0f}× cheaper.",
        "The GPU-hour costs the same either way; only the tokens it yields change. That makes batching "
        "the main cost lever.",
    )
    mistake = (
        f"<p>Dividing the hourly price by the hours (${price:.2f} ÷ {hours1:.2f} h = "
        f"${price / hours1:.2f}) or dividing tokens by dollars ({tokens_per_hour(r1) / price:,.0f} tokens "
        "per dollar is not a price). Multiply: dollars per hour × hours per million.</p>"
        f"<p>And the powers of ten: a million tokens at {r1:,.0f} tokens/s takes "
        f"{seconds_per_million_tokens(r1):,.0f} s, not {seconds_per_million_tokens(r1) / 10:,.0f}.</p>"
    )
    followup_q = f"Where does the {b}-user figure of about {rb:,.0f} tokens/s come from?"
    followup_a = _ul(
        f"Each step reads the {_gb(w)} of weights once, plus every user's KV: {b} × {t:,} × {_gb(kv)} = "
        f"{_gb(kv_all)}. Together {_gb(w + kv_all)}, so the step takes {_gb(w + kv_all)} ÷ {_tbps(bw)} = "
        f"<b>{_ms(step)}</b>.",
        f"Each user gets a token per step: <b>{per_user:,.0f} tokens/s</b>; all {b} together "
        f"{b * per_user:,.0f} tokens/s.",
    )
    return scenario, answers, tuple(traps), worked, mistake, followup_q, followup_a


def _draw_q6(rng: np.random.Generator) -> dict:
    m = _choice(rng, _dense_models())
    g = _choice(rng, list(gpus()))
    ctx = [t for t in (512, 1000, 2048, 4096, 8192) if t <= get_model(m).max_context_tokens]
    return dict(
        model=m,
        gpu=g,
        weight_precision=_choice(rng, _weight_precisions(g)),
        usd_per_gpu_hour=float(round(rng.uniform(0.8, 7.0), 2)),
        batch=int(_choice(rng, [8, 16, 32, 48, 64, 96, 128])),
        context_tokens=int(_choice(rng, ctx)),
    )


# Q7 ------------------------------------------------------------------------------------------------------
def _build_q7(p: dict):
    k, c, ideal = p["kernels_per_step"], p["launch_s"], p["ideal_step_s"]
    p1, s1, p2, s2 = p["part_fraction"], p["part_speedup"], p["part2_fraction"], p["part2_speedup"]
    overhead = launch_overhead_s(k, c)
    share = overhead / ideal
    speed = amdahl_speedup(p1, s1)
    ceil = amdahl_ceiling(p1)
    left = amdahl_new_time_fraction(p1, np.inf)  # the untouched time when the part becomes free
    new_one = amdahl_new_time_fraction(p1, s1)
    new_two = amdahl_new_time_fraction([p1, p2], [s1, s2])
    untouched_two = amdahl_new_time_fraction([p1, p2], [np.inf, np.inf])
    speed_two = amdahl_speedup([p1, p2], [s1, s2])
    graphs = launch_overhead_s(1, c)

    scenario = (
        f"<p>A decode step launches about {k:,} kernels at about {c / US:.0f} µs of CPU time each, "
        f"against an ideal step of {_ms(ideal)}. What does launching cost, as time and as a share of the "
        f"step, and how would you cut it? Separately, a teammate made {p['part_name']} ({p1:.0%} of the "
        f"step) {s1:g}× faster and claims decode is now {s1:g}× faster. Give the real speedup and its "
        f"ceiling; then the follow-up: {p['part_name']} ({p1:.0%}) {s1:g}× faster and "
        f"{p['part2_name']} ({p2:.0%}) {s2:g}× faster together.</p>"
    )
    answers = (
        Answer("launch_ms", "launch overhead per step", "ms", overhead / MS),
        Answer("launch_pct", "overhead as a share of the ideal step", "%", share * PERCENT),
        Answer("speedup_x", "overall speedup", "×", speed),
        Answer("ceiling_x", f"ceiling if {p['part_name']} were free", "×", ceil),
        Answer("two_speedup_x", "follow-up: speedup of both", "×", speed_two),
    )
    traps = (
        Trap(
            "launch_pct",
            TRAP_SHARE_OF_TOTAL,
            overhead / (ideal + overhead) * PERCENT,
            "The question compares the launch time with the ideal step, not with the step that already "
            "includes it.",
        ),
        Trap(
            "speedup_x",
            TRAP_PART_SPEEDUP,
            float(s1),
            f"Only {p1:.0%} of the step got faster; the other {1 - p1:.0%} takes as long as before.",
        ),
        Trap(
            "ceiling_x",
            TRAP_CEILING_AS_TIME_LEFT,
            left,
            f"{left:.0%} is the time that is left, a fraction of the old time; the ceiling is the ratio of "
            f"times, 1 ÷ {left:.2f}.",
        ),
        Trap(
            "ceiling_x",
            TRAP_CEILING_AS_TIME_LEFT,
            left * PERCENT,
            f"{left:.0%} is the time that is left; the ceiling is a speedup, 1 ÷ {left:.2f}.",
        ),
        Trap(
            "two_speedup_x",
            TRAP_ADDED_SPEEDUPS,
            float(s1 + s2),
            "Speedups never add: add the new times of the parts, then divide the old time by the sum.",
        ),
        Trap(
            "two_speedup_x",
            TRAP_MULTIPLIED_SPEEDUPS,
            float(s1 * s2),
            "Speedups multiply only when one applies to the whole of the other's result; these touch "
            "different parts of the step. Add the new times instead.",
        ),
    )
    worked = _ul(
        f"Launching: {k:,} × {c / US:.0f} µs = <b>{_ms(overhead)}</b> of CPU time per step, which is "
        f"{_ms(overhead)} ÷ {_ms(ideal)} = <b>{share:.0%}</b> of the ideal step.",
        f"Cut it by launching less: CUDA graphs record the step once and replay it as one launch "
        f"({fmt_value(graphs / US, 'µs')}), and kernel fusion leaves fewer kernels to launch. Fewer bytes "
        "would not help here: that shortens the memory part, not the launching.",
        f"Amdahl: {p['part_name']} is {p1:.0%} of the step and the other {1 - p1:.0%} does not change. New "
        f"time: {1 - p1:.2f} + {p1:.2f} ÷ {s1:g} = {new_one:.3g} of the old, so the speedup is 1 ÷ "
        f"{new_one:.3g} = <b>{speed:.2f}×</b>, not {s1:g}×.",
        f"Even if {p['part_name']} cost nothing, the {1 - p1:.0%} remains: the ceiling is 1 ÷ {left:.2f} = "
        f"<b>{ceil:.2f}×</b>. Speed up the part that dominates the time.",
    )
    mistake = (
        "<p>Offering 'fewer bytes' (quantization) as the cure for launch overhead: it shortens the memory "
        "part of the step, while the CPU keeps spending the same time launching.</p>"
        f"<p>Giving the ceiling as '{left:.0%}': that is the fraction of the time left, not a speedup. The "
        f"ceiling is a ratio of times, {ceil:.2f}×.</p>"
    )
    followup_q = (
        f"Two optimizations: {p['part_name']} ({p1:.0%}) made {s1:g}× faster and "
        f"{p['part2_name']} ({p2:.0%}) made {s2:g}× faster. Overall?"
    )
    followup_a = _ul(
        f"Work in times. Untouched: {untouched_two:.0%}. {p['part_name'].capitalize()} shrinks to "
        f"{p1:.2f} ÷ {s1:g} = {p1 / s1:.3g}; {p['part2_name']} to {p2:.2f} ÷ {s2:g} = {p2 / s2:.3g}.",
        f"New time: {new_two:.3g} of the old, so the speedup is 1 ÷ {new_two:.3g} = <b>{speed_two:.2f}×</b>. "
        f"Not {s1 + s2:g}× (added) nor {s1 * s2:g}× (multiplied): speedups combine only through the new "
        "times.",
    )
    return scenario, answers, traps, worked, mistake, followup_q, followup_a


def _draw_q7(rng: np.random.Generator) -> dict:
    m = _choice(rng, _dense_models())
    g = _choice(rng, list(gpus()))
    prec = _choice(rng, _weight_precisions(g))
    ideal = _sig(decode_floor_s(weight_bytes(m, prec), get_gpu(g).memory_bandwidth_bytes_per_s), 2)
    p1 = float(round(rng.uniform(0.1, 0.6), 2))
    p2 = float(round(rng.uniform(0.1, 0.9 - p1), 2))
    names = [("attention", "the MLP"), ("the MLP", "attention")][int(rng.integers(2))]
    return dict(
        kernels_per_step=int(rng.integers(10, 101)) * 10,
        launch_s=float(_choice(rng, [2, 3, 4, 5, 6, 8, 10])) * US,
        ideal_step_s=ideal,
        part_name=names[0],
        part_fraction=p1,
        part_speedup=float(_choice(rng, [1.5, 2, 2.5, 3, 4, 5, 8])),
        part2_name=names[1],
        part2_fraction=p2,
        part2_speedup=float(_choice(rng, [1.5, 2, 2.5, 3, 4])),
    )


# ---------------------------------------------------------------------------------------------------------
# Registry: the card's own figures (default scenario) and the parameters each card takes
# ---------------------------------------------------------------------------------------------------------
_SPECS: dict[str, _Spec] = {
    "Q1": _Spec(
        "Can we advertise {advertised_tps:,.0f} tokens/s?",
        ("02", "06", "16", "24"),
        ids=dict(
            model="llama-3-8b",
            gpu="h100-sxm",
            weight_precision="bf16",
            advertised_tps=300.0,
            benchmark_tps=2000.0,
            tp_model="llama-3-70b",
            tp_precision="fp8",
            tp_num_gpus=2,
            tp_measured_s=14e-3,
        ),
        # The card quotes 16 GB (8.03 B × 2 bytes = 16.06 GB) and 70 GB (the tables: 70.55 GB).
        stated=dict(weight_bytes=16e9, tp_weight_bytes=70e9),
        build=_build_q1,
        draw=_draw_q1,
    ),
    "Q2": _Spec(
        "Why is a {prompt_tokens:,}-token prefill so close to one decode step?",
        ("04", "15", "16", "44"),
        ids=dict(
            model="llama-3-8b",
            gpu="h100-sxm",
            weight_precision="bf16",
            prompt_tokens=500,
            paste_tokens=8000,
            users=30,
        ),
        stated=dict(parameters=8e9, weight_bytes=16e9),  # the card's "8 B parameters, 16 GB"
        build=_build_q2,
        draw=_draw_q2,
    ),
    "Q3": _Spec(
        "{batch} users means {batch}× slower, right?",
        ("02", "16", "25", "28"),
        ids=dict(
            model="llama-3-8b",
            gpu="h100-sxm",
            weight_precision="bf16",
            kv_precision="bf16",
            batch=32,
            context_tokens=1000,
            queued_users=20,
            queued_wait_s=40.0,
        ),
        # The card's 4.1 GB of KV is 32 × 1,000 × 128 KB in decimal units (128 KiB would give 4.2 GB).
        stated=dict(weight_bytes=16e9, kv_bytes_per_token=128e3),
        build=_build_q3,
        draw=_draw_q3,
    ),
    "Q4": _Spec(
        "When does decode become compute-bound?",
        ("02", "04", "61"),
        ids=dict(
            model="llama-3-8b",
            gpu="h100-sxm",
            weight_precision="bf16",
            example_batch=100,
            example_context=4096,
        ),
        stated={},
        build=_build_q4,
        draw=_draw_q4,
    ),
    "Q5": _Spec(
        "GPU-util is 100%, we need more GPUs",
        ("09", "16", "59", "60"),
        ids=dict(
            model="llama-3-8b",
            gpu="h100-sxm",
            weight_precision="bf16",
            measured_step_s=6e-3,
            power_w=350.0,
            gpu_util_pct=100.0,
        ),
        stated=dict(parameters=8e9, weight_bytes=16e9),
        build=_build_q5,
        draw=_draw_q5,
    ),
    "Q6": _Spec(
        "What does a million tokens cost?",
        ("01", "02"),
        ids=dict(
            model="llama-3-8b",
            gpu="h100-sxm",
            weight_precision="bf16",
            usd_per_gpu_hour=3.0,
            batch=64,
            context_tokens=4096,
        ),
        # The card's round speeds (~200 and ~4,300 tokens/s); its 34 GB of KV uses 128 KiB per token.
        stated=dict(weight_bytes=16e9, kv_bytes_per_token=128 * 1024, tps_single=200.0, tps_batched=4300.0),
        build=_build_q6,
        draw=_draw_q6,
    ),
    "Q7": _Spec(
        "Kernel launches and Amdahl",
        ("03", "04", "09", "60"),
        ids=dict(
            kernels_per_step=300,
            launch_s=4e-6,
            ideal_step_s=4.8e-3,
            part_name="attention",
            part_fraction=0.3,
            part_speedup=3.0,
            part2_name="the MLP",
            part2_fraction=0.5,
            part2_speedup=2.0,
        ),
        stated={},
        build=_build_q7,
        draw=_draw_q7,
    ),
}

QIDS: tuple[str, ...] = tuple(_SPECS)


def default_params(qid: str) -> dict:
    """The study card's own scenario for ``qid``: its ids plus the round figures it quotes.

    >>> default_params("Q3")["batch"], default_params("Q3")["kv_bytes_per_token"]
    (32, 128000.0)
    """
    spec = _spec(qid)
    return {**spec.ids, **spec.stated}


def card(qid: str, scenario_params: Mapping | None = None) -> Card:
    """Build card ``qid`` (``"Q1"`` … ``"Q7"``) for a scenario; all numbers from the roofline library.

    ``scenario_params`` overrides the card's ids (model, gpu, batch, context_tokens, usd_per_gpu_hour, …;
    see ``default_params(qid)``). Without it the card uses the study card's own scenario and round figures.
    With it, stated figures not given (``weight_bytes``, ``kv_bytes_per_token``, ``parameters``, …) are
    taken from the tables and rounded to three significant digits, so the text and the answers agree.
    Times in seconds, sizes in bytes, prices in US dollars per GPU-hour.

    Taught in the Pack 01 notebook (self-checks for lessons 01–04, 06, 09, 15, 16, 24, 25, 28, 44, 59–61).

    >>> round(card("Q3").answer("step_ms").value, 2)
    6.0
    >>> round(card("Q3", {"batch": 64}).answer("step_ms").value, 2)    # 16.1 GB + 64 × 1,000 × 131 KB
    7.3
    >>> card("Q3", {"batch": 1024, "context_tokens": 8192})
    Traceback (most recent call last):
    ...
    roofline.errors.DoesNotFitError: Does not fit: ...
    """
    spec = _spec(qid)
    if scenario_params is None:
        p, is_default = default_params(qid), True
    else:
        allowed = set(spec.ids) | set(spec.stated)
        unknown = sorted(set(scenario_params) - allowed)
        if unknown:
            raise InvalidConfigurationError(
                f"{qid} has no parameter {', '.join(map(repr, unknown))}; "
                f"it takes {', '.join(sorted(allowed))}"
            )
        p = {**spec.ids, **dict(scenario_params)}
        is_default = p == default_params(qid)
    _validate(p)
    scenario, answers, traps, worked, mistake, fq, fa = spec.build(p)
    by_name = {a.name: a for a in answers}
    built = len(traps)
    # A trap that lands within the answer's tolerance cannot be told apart from the right answer: drop it.
    traps = tuple(t for t in traps if not by_name[t.answer].accepts(t.value))
    return Card(
        qid=qid,
        title=spec.title.format(**p),
        lessons=spec.lessons,
        params=dict(p),
        scenario=scenario,
        answers=answers,
        traps=traps,
        worked=worked,
        mistake=mistake,
        followup_question=fq,
        followup_answer=fa,
        is_default=is_default,
        trap_count_built=built,
    )


def cards() -> list[Card]:
    """The seven default cards, Q1 to Q7."""
    return [card(q) for q in QIDS]


def shuffled_card(qid: str, rng: np.random.Generator | int | None = None, max_tries: int = 200) -> Card:
    """Card ``qid`` with other numbers: another model, GPU, precision, batch, context, price or fraction.

    Draws from ``rng`` (a seeded ``numpy.random.Generator``, or a seed) until the scenario is valid: the
    weights and KV fit in memory, the GPU has the precision's math, the context fits the model, a batched
    decode step is memory-bound (so the card's formula holds), the answers differ from the default
    card's, and every trap stays distinguishable from its right answer (a scenario where one user's KV
    and everyone's KV give the same step would teach nothing). The answers are computed by the library
    like those of the default card.

    >>> c = shuffled_card("Q6", np.random.default_rng(1))
    >>> c.is_default, all(r.correct for r in check(c, c.expected()))
    (False, True)
    """
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    spec = _spec(qid)
    default = card(qid).expected()
    for _ in range(max_tries):
        params = spec.draw(rng)
        if not _valid_draw(qid, params):
            continue
        try:
            c = card(qid, params)
        except RooflineError:
            continue
        sane = all(math.isfinite(v) and v > 0 for v in c.expected().values())
        new_numbers = any(not _close(v, default[k], DEFAULT_REL_TOL) for k, v in c.expected().items())
        if sane and new_numbers and len(c.traps) == c.trap_count_built:
            return c  # every trap of the card is still distinguishable from its answer
    raise InvalidConfigurationError(f"no valid shuffled scenario for {qid} in {max_tries} draws")


def _spec(qid: str) -> _Spec:
    key = str(qid).strip().upper()
    if key not in _SPECS:
        raise InvalidConfigurationError(f"unknown card {qid!r}; the cards are {', '.join(QIDS)}")
    return _SPECS[key]


def _validate(p: dict) -> None:
    for key in ("model", "tp_model"):
        if key in p:
            get_model(p[key])
    if "gpu" in p:
        g = get_gpu(p["gpu"])
        for key in ("weight_precision", "tp_precision"):
            if key in p:
                peak_flops_per_s(g, p[key])
    for key in (
        "batch",
        "context_tokens",
        "prompt_tokens",
        "paste_tokens",
        "tp_num_gpus",
        "kernels_per_step",
    ):
        if key in p and (not float(p[key]).is_integer() or p[key] < 1):
            raise InvalidConfigurationError(f"{key} must be a whole number ≥ 1, got {p[key]!r}")
    for key in (
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
    ):
        if key in p and not p[key] > 0:
            raise InvalidConfigurationError(f"{key} must be > 0, got {p[key]!r}")


def _valid_draw(qid: str, p: dict) -> bool:
    """Extra conditions on a shuffled scenario, beyond what ``card`` checks."""
    if qid in ("Q3", "Q6"):
        s = decode_step(
            p["model"],
            p["gpu"],
            p["batch"],
            p["context_tokens"],
            weight_precision=p["weight_precision"],
            kv_precision=p.get("kv_precision", "bf16"),
            on_overflow="mask",
        )
        return (
            bool(s.fits)
            and s.binding == "memory"
            and p["context_tokens"] <= get_model(p["model"]).max_context_tokens
        )
    if qid == "Q7":  # launching should not dwarf the step it launches
        return launch_overhead_s(p["kernels_per_step"], p["launch_s"]) <= p["ideal_step_s"]
    if qid == "Q4":
        return bool(
            fits(
                p["model"],
                p["gpu"],
                p["example_batch"],
                p["example_context"],
                weight_precision=p["weight_precision"],
            )
        )
    return True


def _dense_models() -> list[str]:
    return [m.id for m in models().values() if not m.is_moe]


def _supports(gpu_id: str, precision: str) -> bool:
    return get_precision(precision).compute in get_gpu(gpu_id).dense_flops_per_s


def _weight_precisions(gpu_id: str) -> list[str]:
    return [p for p in ("bf16", "fp8", "int4") if _supports(gpu_id, p)]


def _choice(rng: np.random.Generator, options):
    options = list(options)
    return options[int(rng.integers(len(options)))]


# ---------------------------------------------------------------------------------------------------------
# The widget: inputs, Check, Reveal, Shuffle — all judging done by ``check`` above
# ---------------------------------------------------------------------------------------------------------
_STATUS_STYLE = {
    "right": ("✓", "#1b7f3b"),
    "trap": ("⚠", "#b35c00"),
    "wrong": ("✗", "#b00020"),
    "unanswered": ("…", "#666666"),
}


def results_html(results: list[Result]) -> str:
    """The verdicts as an HTML list, coloured by status."""
    items = []
    for r in results:
        mark, colour = _STATUS_STYLE[r.status]
        items.append(
            f'<li style="color:{colour}" data-status="{r.status}">{mark} {html.escape(r.text())}</li>'
        )
    return (
        '<ul class="roofline-results" style="font-size:15px;list-style:none;padding-left:0">'
        + "".join(items)
        + "</ul>"
    )


class CardWidget(W.VBox):
    """A card as a small panel: one box per answer, Check, Reveal, Shuffle the numbers, Card's numbers.

    Usable from code too (tests, demos): ``enter``, ``press_check``, ``press_reveal``, ``press_shuffle``,
    ``press_reset``, ``result_text``.

    >>> w = CardWidget(card("Q7"), seed=0)
    >>> w.enter("speedup_x", 1.25); w.enter("two_speedup_x", 6)
    >>> print(w.press_check() and w.result_text())
    launch overhead per step: no answer yet
    overhead as a share of the ideal step: no answer yet
    overall speedup: 1.25× is right (the library gives 1.25×, ±5%)
    ceiling if attention were free: no answer yet
    follow-up: speedup of both: 6.00× is wrong, a known trap: multiplied the speedups. ...
    """

    def __init__(self, card_: Card | str, seed: int | None = 0):
        self.card = card(card_) if isinstance(card_, str) else card_
        self.rng = np.random.default_rng(seed)
        self.results: list[Result] = []
        self.revealed = False
        self.header = W.HTML()
        self.inputs: dict[str, W.FloatText] = {}
        self.input_box = W.VBox()
        self.check_button = W.Button(description="Check", button_style="primary", icon="check")
        self.reveal_button = W.Button(description="Reveal", icon="eye")
        self.shuffle_button = W.Button(
            description="Shuffle the numbers", icon="random", layout=W.Layout(width="13em")
        )
        self.reset_button = W.Button(description="Card's numbers", layout=W.Layout(width="10em"))
        self.result_area = W.HTML()
        self.answer_area = W.HTML()
        self.check_button.on_click(lambda _b: self.press_check())
        self.reveal_button.on_click(lambda _b: self.press_reveal())
        self.shuffle_button.on_click(lambda _b: self.press_shuffle())
        self.reset_button.on_click(lambda _b: self.press_reset())
        buttons = W.HBox([self.check_button, self.reveal_button, self.shuffle_button, self.reset_button])
        super().__init__([self.header, self.input_box, buttons, self.result_area, self.answer_area])
        self.add_class("roofline-selfcheck")
        self._show(self.card)

    def __repr__(self) -> str:
        return f"<CardWidget {self.card.qid}: {', '.join(self.card.answer_names())}>"

    def _show(self, c: Card) -> None:
        self.card, self.results, self.revealed = c, [], False
        self.header.value = c.question_html()
        self.inputs = {
            a.name: W.FloatText(
                value=0.0,
                description=a.label,
                style={"description_width": "22em"},
                layout=W.Layout(width="34em"),
            )
            for a in c.answers
        }
        self.input_box.children = [
            W.HBox([box, W.Label(self.card.answer(n).unit)]) for n, box in self.inputs.items()
        ]
        self.result_area.value = ""
        self.answer_area.value = ""
        self.reveal_button.description = "Reveal"

    def enter(self, name: str, value: float | None) -> None:
        """Type ``value`` into the box of answer ``name`` (``None`` clears it)."""
        if name not in self.inputs:
            raise InvalidConfigurationError(
                f"{self.card.qid} has no answer {name!r}; it has {list(self.inputs)}"
            )
        self.inputs[name].value = 0.0 if value is None else float(value)

    def answers(self) -> dict[str, float | None]:
        """What the boxes hold; an empty box (0) counts as no answer."""
        return {n: (box.value if box.value != 0 else None) for n, box in self.inputs.items()}

    def press_check(self) -> list[Result]:
        """Judge the boxes with ``check`` and show the verdicts."""
        self.results = check(self.card, self.answers())
        self.result_area.value = results_html(self.results)
        return self.results

    def press_reveal(self) -> bool:
        """Show (or hide again) the worked answer, common mistake and follow-up. Returns the new state."""
        self.revealed = not self.revealed
        self.answer_area.value = self.card.reveal_html() if self.revealed else ""
        self.reveal_button.description = "Hide" if self.revealed else "Reveal"
        return self.revealed

    def press_shuffle(self) -> Card:
        """Swap in the same question with other numbers (drawn from this widget's seeded generator)."""
        self._show(shuffled_card(self.card.qid, self.rng))
        return self.card

    def press_reset(self) -> Card:
        """Back to the study card's own numbers."""
        self._show(card(self.card.qid))
        return self.card

    def result_text(self) -> str:
        """The last verdicts in plain text, one line per answer ('' before the first Check)."""
        return "\n".join(r.text() for r in self.results)

    def revealed_text(self) -> str:
        """The revealed answer as plain text ('' while folded)."""
        import re

        return html.unescape(re.sub(r"<[^>]+>", " ", self.answer_area.value)).strip()
