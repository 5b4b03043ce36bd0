"""The readout beside every explorer's figure: the ideal floor, what a good engine reaches, and the cost.

A lesson describes its case as a ``StepCase`` (the step its explorer shows); ``case_readout`` turns it into
the table every lesson shares: step time, tokens/s per user and in total, the cost per 1M tokens at the
scenario's price, for the floor and for the engine. ``table_html`` and ``fold`` lay out any lesson's own
numbers the same way. Display only: the numbers come from the core.
"""

from __future__ import annotations

import html
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from roofline import engines
from roofline.errors import RooflineError
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.physics.step import Step
from roofline.scenario import Scenario
from roofline.units import GB, MS


def cost_text(s: Scenario, tokens_per_s: float) -> str:
    """$ per million tokens for ``tokens_per_s`` (all users, tokens/s) on the scenario's G GPUs at its price
    ($ per GPU-hour), as text; what to do where the GPU has no price, "—" where there is no rate.

    >>> cost_text(Scenario(usd_per_gpu_hour=3.0), 200.0)       # $3 / (200 × 3,600 tokens) × 1e6
    '$4.17'
    """
    if s.usd_per_gpu_hour is None:
        return "no price: type $ per GPU-hour"
    if not (tokens_per_s > 0 and math.isfinite(tokens_per_s)):
        return "—"
    return f"${cost_per_million_tokens_usd(s.usd_per_gpu_hour, tokens_per_s, s.num_gpus):.2f}"


@dataclass(frozen=True)
class StepCase:
    """The step a lesson's readout describes, and what one such step yields.

    ``parts`` are the physics steps it is made of with how many times each runs (a speculative cycle: the
    verify step once and k drafts at r decode steps each), the first the one whose memory is shown;
    ``sequences`` sequences get ``tokens_per_user`` tokens each from it; ``communication`` whether the engine
    pays the tensor-parallel all-reduces (None: as a real engine does, yes); ``unit`` what is counted.
    """

    title: str
    parts: tuple[tuple[Step, float], ...]
    tokens_per_user: float = 1.0
    sequences: float = 1.0
    communication: bool | None = None
    unit: str = "tokens"
    ideal_label: str = "ideal (floor)"  # the ideal column's header
    rates: bool = True  # False: the step time only (a figure beside it already shows tokens/s and cost)

    @property
    def step(self) -> Step:
        """The main physics step (the first part)."""
        return self.parts[0][0]


def decode_case(s: Scenario, batch: int | None = None, **step_options) -> StepCase:
    """The ``StepCase`` of one decode step of this scenario (``batch`` overrides its B, e.g. the 20 batched
    users of lesson 25); ``step_options`` pass to ``decode_step`` (``include_communication``, …).

    >>> decode_case(Scenario(), batch=20).title
    'one decode step of 20 users at 1,000 tokens each'
    """
    b, t = s.batch if batch is None else int(batch), s.context_tokens
    step = s.decode(batch=b, context_tokens=t, **step_options)
    who = "one user" if b == 1 else f"{b:,} users"
    context = "with no context yet" if t == 0 else f"at {t:,} tokens{'' if b == 1 else ' each'}"
    title = f"one decode step of {who} {context}"
    return StepCase(title, ((step, 1.0),), 1.0, float(b))


def engine_step_s(s: Scenario, case: StepCase, engine: str | None = None) -> float:
    """What ``engine`` (default: the one people run on the GPU, ``roofline.engines.default_engine``) takes
    for the case's step(s) (s): each part timed by ``roofline.engines.StepTimer``
    (its own launch overhead included), times its count; NaN when the engine cannot say.

    >>> case = decode_case(Scenario())
    >>> engine_step_s(Scenario(), case, "ideal") == float(case.step.step_time_s)
    True
    """
    engine = engine or engines.default_engine(s.gpu)
    try:
        timer = engines.StepTimer(
            engine, s.model, s.gpu, num_gpus=s.num_gpus, weight_precision=s.weight_precision,
            communication=case.communication,
        )  # fmt: skip
        return float(sum(float(timer.of_step(step).total_s) * count for step, count in case.parts if count))
    except RooflineError:
        return float("nan")


def case_readout(s: Scenario, case: StepCase, engine: str | None = None) -> str:
    """HTML of ``case``: its title, the ideal floor beside what ``engine`` (default: the GPU's usual one)
    reaches (step time, tokens/s, cost
    per 1M at the scenario's price) as the headline, then the memory and price source folded below.

    >>> text = case_readout(Scenario(), decode_case(Scenario(), batch=20))
    >>> "one decode step of 20 users" in text and "cost per 1M tokens" in text
    True
    """
    engine_id = engines.get_engine(engine or engines.default_engine(s.gpu)).id
    step, unit = case.step, case.unit
    head = ("", case.ideal_label, f"a good engine ({engine_id})")
    memory = (
        f"{float(step.memory_needed_bytes) / GB:.1f} GB of {float(step.memory_capacity_bytes) / GB:.0f} GB"
    )
    price = "—" if s.usd_per_gpu_hour is None else f"${s.usd_per_gpu_hour:.2f} × {s.num_gpus} GPU"
    if not bool(np.all(step.fits)):
        fit = f" (at most {s.with_(batch=1).users_that_fit()} users fit)" if unit == "tokens" else ""
        headline = [
            head,
            ("step time", f"does not fit in memory: no step time{fit}", ""),
            ("cost per 1M tokens", "—", "—"),
        ]
    else:
        ideal_s = float(sum(float(part.step_time_s) * count for part, count in case.parts if count))
        real_s = engine_step_s(s, case, engine_id)
        per_user, total = case.tokens_per_user, case.tokens_per_user * case.sequences

        def cells(fmt):  # a quantity's ideal and engine columns; ``fmt`` turns a step time (s) into text
            return fmt(ideal_s), fmt(real_s) if real_s == real_s else "—"

        ideal_time, real_time = cells(lambda t: f"{t / MS:.2f} ms")
        headline = [head, ("step time", f"{ideal_time} ({step.binding}-bound)", real_time)]
        if case.rates and (case.sequences > 1 or unit == "tokens"):
            headline.append((f"{unit}/s per user", *cells(lambda t: f"{per_user / t:,.0f}")))
        if case.rates:
            headline.append((f"{unit}/s total", *cells(lambda t: f"{total / t:,.0f}")))
            headline.append((f"cost per 1M {unit}", *cells(lambda t: cost_text(s, total / t))))
    keys = ("", "ideal", "achievable")
    details = table_html([("memory needed", memory, ""), ("$ per GPU-hour", price, "")], column_keys=keys)
    note = f"price: {s.price_note}. A good engine: the course's calibration of {engine_id} against measured "
    note += "servers."
    return (
        f'<div class="roofline-case" data-key="case">{html.escape(case.title)}</div>'
        + table_html(headline, column_keys=keys)
        + extrapolation_note(s, engine_id)
        + fold(details + f'<div class="roofline-note" data-key="price source">{html.escape(note)}</div>')
    )


def extrapolation_note(s: Scenario, engine: str | None = None) -> str:
    """One line under the headline when ``engine``'s figure for this scenario leaves what the engine was
    measured on (``roofline.engines.coverage``: a GPU without its own kernel timings, an architecture or
    GPU count never measured with it, a batch beyond the measured), with the reasons; "" inside.

    >>> extrapolation_note(Scenario())
    ''
    >>> "extrapolated" in extrapolation_note(Scenario(gpu="mi300x"))
    True
    """
    try:
        e = engines.get_engine(engine or engines.default_engine(s.gpu))
        flagged, reasons = engines.coverage(e.id, s.gpu, s.model, s.batch, None, None, s.num_gpus,
                                            s.weight_precision, context_tokens=s.context_tokens)  # fmt: skip
    except RooflineError:
        return ""
    if not flagged:
        return ""
    text = f"{e.id}'s figure is extrapolated: {'; '.join(reasons)}"
    return (
        f'<div class="roofline-note roofline-extrapolated" data-key="extrapolated">{html.escape(text)}</div>'
    )


def fold(body_html: str, summary: str = "details") -> str:
    """``body_html`` folded under a summary line (HTML ``<details>``): what a readout shows below its
    headline, so an explorer fits a laptop screen.

    >>> fold("<p>x</p>")
    '<details class="roofline-details"><summary>details</summary><p>x</p></details>'
    """
    return f'<details class="roofline-details"><summary>{html.escape(summary)}</summary>{body_html}</details>'


def decode_readout(s: Scenario, options: dict | None = None) -> str:
    """HTML of one decode step: the ideal floor beside what a good engine reaches (engine from
    ``options["engine"]``, default the one people run on the GPU), tokens/s and the cost per 1M tokens at
    the scenario's price.

    >>> html_text = decode_readout(Scenario(gpu="l4", batch=8))
    >>> "$0.80 × 1" in html_text and "a good engine (vllm)" in html_text
    True
    """
    return case_readout(s, decode_case(s), (options or {}).get("engine"))


def case_readout_for(make_case: Callable[[Scenario, dict], StepCase]) -> Callable[[Scenario, dict], str]:
    """A readout ``(scenario, options) -> HTML`` of the case ``make_case(scenario, options)`` builds: how a
    lesson's explorer shows its own step beside a good engine.

    >>> readout = case_readout_for(lambda s, o: decode_case(s, batch=o["users"]))
    >>> "20 users" in readout(Scenario(), {"users": 20})
    True
    """

    def readout(s: Scenario, options: dict | None = None) -> str:
        o = options or {}
        return case_readout(s, make_case(s, o), o.get("engine"))

    return readout


def combine_readouts(*readouts: Callable) -> Callable:
    """One readout made of several, stacked: e.g. a lesson's own table, then ``decode_readout``. Each
    part is called with ``(scenario, options)`` if it takes two arguments, else ``(scenario)``.

    >>> both = combine_readouts(lambda s: "<p>a</p>", decode_readout)
    >>> html_text = both(Scenario()); html_text.startswith("<p>a</p>") and "cost per 1M tokens" in html_text
    True
    """
    takes_options = [len(inspect.signature(f).parameters) >= 2 for f in readouts]

    def readout(s: Scenario, options: dict | None = None) -> str:
        return "".join(
            f(s, options or {}) if two else f(s) for f, two in zip(readouts, takes_options, strict=True)
        )

    return readout


# MathJax's "not mathematics" classes (version 3's name and version 2's): readout tables and cards hold
# prices written with "$", and two in one paragraph would typeset as mathematics between them.
NOT_MATH = "mathjax_ignore tex2jax_ignore"
DATA_TABLE = f"roofline-readout {NOT_MATH}"  # a readout table's classes


def table_html(rows: Sequence[tuple[str, ...]], column_keys: Sequence[str] | None = None) -> str:
    """A table whose first column names the quantity; the first value cell carries ``data-key`` = the
    name, later cells ``data-key`` = "name (column key)" (``column_keys``, default the header texts), so
    browser tests can read them. A row whose name is empty is the header row. The table is marked for
    MathJax to leave alone (``DATA_TABLE``), so two prices in one cell ("$72/h at $3.00") never typeset as
    mathematics between their dollar signs.

    >>> table_html([("step time", "4.80 ms")]).split(">", 1)[1]
    '<tr><td class="k">step time</td><td data-key="step time"><b>4.80 ms</b></td></tr></table>'
    """
    header = rows[0] if rows and rows[0][0] == "" else None
    body = []
    for row in rows:
        key, values = row[0], row[1:]
        if row is header:
            cells = "".join(f"<th>{html.escape(v)}</th>" for v in values)
            body.append(f'<tr class="head"><td></td>{cells}</tr>')
            continue
        cells = []
        for i, v in enumerate(values):
            column = (column_keys or header or [str(j) for j in range(len(values) + 1)])[i + 1]
            data_key = key if i == 0 else f"{key} ({column})"
            cells.append(f'<td data-key="{html.escape(data_key)}"><b>{html.escape(v)}</b></td>')
        body.append(f'<tr><td class="k">{html.escape(key)}</td>{"".join(cells)}</tr>')
    return f'<table class="{DATA_TABLE}">{"".join(body)}</table>'
