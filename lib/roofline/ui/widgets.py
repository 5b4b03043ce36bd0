"""Controls and an explorer that connects them to a LiveFigure: each lesson's lab bench in a few lines.

    from roofline.ui.widgets import Explorer
    from roofline.views.plots import StepTimeVsBatch
    ex = Explorer(StepTimeVsBatch, controls=["batch", "context_tokens", "gpu"])

Every control sets one field of a ``Scenario``; on a change the explorer recomputes the physics, moves the
figure's artists in place and swaps the picture (JPEG, fast to encode), and refreshes a readout of the
numbers. An impossible choice (FP8 on an A100) shows the library's error in the readout instead of a
figure with nonsense in it.

- Number controls (batch, context, prompt) are a slider over round values plus a box that takes any typed
  value; the slider moves on release (``continuous_update=False``).
- Menus never lead to a dead end: a model whose weights need more GPUs raises G with a note, and the
  model menu marks what each model needs ("needs ≥ 2 GPUs").
- The decode readout shows the ideal floor beside what a good engine reaches (``roofline.achievable``,
  engine named) and the cost per 1M tokens at the GPU's listed price (which follows the GPU).
- ``ex.setup_button("Set up question 1", batch=64)`` puts a predict-then-check question in the explorer;
  ``presets``, ``reset()``, ``pin()`` (a grey baseline) and ``set_scale()`` (projector) serve teaching.

>>> ex = Explorer(StepTimeVsBatch, controls=["batch"], scenario=Scenario(batch=32))
>>> ex
<Explorer StepTimeVsBatch: batch>
>>> ex.set(batch=64); ex.scenario.batch
64
>>> step = Scenario(batch=64, context_tokens=4096).decode()
>>> f"{step.step_time_s * 1e3:.2f} ms" in decode_readout(Scenario(batch=64, context_tokens=4096))
True
"""

from __future__ import annotations

import html
import inspect
import io
import itertools
import time
from collections.abc import Callable, Sequence

import ipywidgets as W
import traitlets
from PIL import Image

from roofline import achievable as ach
from roofline.data import get_gpu, gpus, models
from roofline.errors import RooflineError
from roofline.lessons.scenario import GPU_COUNTS, Scenario
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.physics.precision import PRECISIONS, peak_flops_per_s
from roofline.units import GB, MS
from roofline.views.plots import LiveFigure, StepTimeVsBatch

BATCH_OPTIONS = [1, 2, 4, 8, 16, 20, 24, 30, 32, 48, 64, 96, 128, 192, 256, 300, 384, 512, 768, 1024]
CONTEXT_OPTIONS = [0, 128, 256, 500, 1000, 2000, 4096, 8192, 16384, 32768, 65536, 131072]
PROMPT_OPTIONS = [16, 32, 64, 128, 256, 500, 1000, 2000, 4000, 8000, 16000, 32000]
GPU_COUNT_OPTIONS = list(GPU_COUNTS)
KV_PRECISIONS = ["bf16", "fp16", "fp8", "int8", "int4"]
RUN_HINT = "Run the notebook (Run ▸ Run All Cells) to use the sliders."

_STYLE = {"description_width": "14em"}
_LAYOUT = W.Layout(width="30em")
_ids = itertools.count()


class NumberControl(W.HBox):
    """A slider over round values plus a box for any typed value, both bound to one ``value``.

    The slider steps through ``options`` (keyboard arrows, Home/End work) and sends its value on release;
    the box accepts any integer in [``minimum``, ``maximum``] (Enter or leaving the box), and a typed value
    joins the slider's stops so both always agree.

    >>> c = NumberControl([1, 2, 4], 2, "batch B", minimum=1, maximum=4096)
    >>> c.box.value = 37; c.value, c.slider.value
    (37, 37)
    >>> c.value = 4; c.box.value
    4
    """

    value = traitlets.Int()

    def __init__(self, options, value, description, minimum=0, maximum=10**7):
        self._syncing = False
        self.label = W.HTML(
            f'<div class="roofline-number-label">{html.escape(description)}</div>',
            layout=W.Layout(width="14em", margin="0 4px 0 0"),
        )
        self.slider = W.SelectionSlider(
            options=sorted(set(options) | {value}),
            value=value,
            readout=False,
            continuous_update=False,
            layout=W.Layout(width="10em"),
        )
        self.box = W.BoundedIntText(value=value, min=minimum, max=maximum, layout=W.Layout(width="6.5em"))
        super().__init__([self.label, self.slider, self.box], layout=W.Layout(width="30em"))
        self.description = description
        self.value = value
        self.add_class("roofline-number")
        self.slider.observe(lambda c: self._from_part(c["new"]), names="value")
        self.box.observe(lambda c: self._from_part(c["new"]), names="value")
        self.observe(lambda c: self._to_parts(c["new"]), names="value")

    def _from_part(self, new) -> None:
        if not self._syncing:
            self.value = int(new)

    def _to_parts(self, new) -> None:
        self._syncing = True
        try:
            if new not in self.slider.options:
                self.slider.options = sorted({*self.slider.options, new})
            self.slider.value = new
            self.box.value = new
        finally:
            self._syncing = False


def _dropdown(options, value, description):
    return W.Dropdown(options=options, value=value, description=description, style=_STYLE, layout=_LAYOUT)


CONTROL_FACTORIES: dict[str, Callable] = {
    "model": lambda v: _dropdown(list(models()), v, "model"),
    "gpu": lambda v: _dropdown(list(gpus()), v, "GPU"),
    "num_gpus": lambda v: _dropdown(sorted(set(GPU_COUNT_OPTIONS) | {v}), v, "GPUs (tensor parallel) G"),
    "weight_precision": lambda v: _dropdown(list(PRECISIONS), v, "weight precision"),
    "kv_precision": lambda v: _dropdown(KV_PRECISIONS, v, "KV precision"),
    "batch": lambda v: NumberControl(BATCH_OPTIONS, v, "batch B (users)", minimum=1, maximum=65536),
    "context_tokens": lambda v: NumberControl(
        CONTEXT_OPTIONS, v, "context T (tokens/user)", minimum=0, maximum=10**7
    ),
    "prompt_tokens": lambda v: NumberControl(
        PROMPT_OPTIONS, v, "prompt P (tokens)", minimum=1, maximum=10**7
    ),
    "usd_per_gpu_hour": lambda v: W.BoundedFloatText(
        value=0.0 if v is None else v,
        min=0.0,
        max=1000,
        step=0.1,
        description="$ per GPU-hour",
        style=_STYLE,
        layout=_LAYOUT,
    ),
}


def control(field: str, value) -> W.Widget:
    """The standard widget for one ``Scenario`` field, set to ``value``."""
    if field not in CONTROL_FACTORIES:
        raise KeyError(f"No standard control for {field!r}; known: {', '.join(CONTROL_FACTORIES)}")
    return CONTROL_FACTORIES[field](value)


# --------------------------------------------------------------------------------------------------
# Readouts
# --------------------------------------------------------------------------------------------------


def _cost(s: Scenario, tokens_per_s: float) -> str:
    if s.usd_per_gpu_hour is None:
        return "no price: type $ per GPU-hour"
    if not tokens_per_s > 0:
        return "—"
    return f"${cost_per_million_tokens_usd(s.usd_per_gpu_hour, tokens_per_s, s.num_gpus):.2f}"


def achievable_step_s(s: Scenario, engine: str = ach.DEFAULT_ENGINE) -> float:
    """What a good engine reaches for this scenario's decode step (s), from ``roofline.achievable``; NaN
    when it does not fit or the calibration cannot say.

    >>> 0.0048 < achievable_step_s(Scenario()) < 0.05
    True
    """
    try:
        t = ach.decode_step_times(
            s.model, s.gpu, s.batch, s.context_tokens, num_gpus=s.num_gpus,
            weight_precision=s.weight_precision, kv_precision=s.kv_precision, engine=engine,
        )  # fmt: skip
    except RooflineError:
        return float("nan")
    return float(t["total"])


def decode_rows(s: Scenario, engine: str = ach.DEFAULT_ENGINE) -> list[tuple[str, ...]]:
    """The decode readout's rows: (quantity, ideal floor, what ``engine`` reaches), cost included."""
    step = s.decode()
    memory = f"{step.memory_needed_bytes / GB:.1f} GB of {step.memory_capacity_bytes / GB:.0f} GB usable"
    price = "—" if s.usd_per_gpu_hour is None else f"${s.usd_per_gpu_hour:.2f} × {s.num_gpus}"
    if not step.fits:
        fit = s.users_that_fit()
        return [
            ("", "ideal (floor)", f"a good engine ({ach.engine_id(engine)})"),
            ("memory needed", memory, ""),
            ("step time", f"does not fit in memory: no step time (at most {fit} users fit)", ""),
            ("$ per GPU-hour", price, ""),
        ]
    real_s = achievable_step_s(s, engine)
    real_ok = real_s == real_s  # not NaN
    real_total = s.batch / real_s if real_ok else float("nan")
    return [
        ("", "ideal (floor)", f"a good engine ({ach.engine_id(engine)})"),
        ("memory needed", memory, ""),
        (
            "step time",
            f"{step.step_time_s / MS:.2f} ms ({step.binding}-bound)",
            f"{real_s / MS:.1f} ms" if real_ok else "—",
        ),
        ("tokens/s per user", f"{step.tokens_per_s_per_user:,.0f}", f"{1 / real_s:,.0f}" if real_ok else "—"),
        ("tokens/s total", f"{step.tokens_per_s_total:,.0f}", f"{real_total:,.0f}" if real_ok else "—"),
        ("cost per 1M tokens", _cost(s, step.tokens_per_s_total), _cost(s, real_total) if real_ok else "—"),
        ("$ per GPU-hour", price, ""),
    ]


def decode_readout(s: Scenario, options: dict | None = None) -> str:
    """HTML table of one decode step: the ideal floor beside what a good engine reaches (engine from
    ``options["engine"]``, default vLLM), tokens/s and the cost per 1M tokens at the scenario's price.

    >>> html_text = decode_readout(Scenario(gpu="l4", batch=8))
    >>> "$0.80 × 1" in html_text and "a good engine (vllm)" in html_text
    True
    """
    engine = (options or {}).get("engine", ach.DEFAULT_ENGINE)
    table = table_html(decode_rows(s, engine), column_keys=("", "ideal", "achievable"))
    note = (
        f"price: {s.price_note}. A good engine: the course's calibration of {ach.engine_id(engine)} "
        "against measured servers."
    )
    return f'{table}<div class="roofline-note" data-key="price source">{html.escape(note)}</div>'


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


def table_html(rows: Sequence[tuple[str, ...]], column_keys: Sequence[str] | None = None) -> str:
    """A table whose first column names the quantity; the first value cell carries ``data-key`` = the
    name, later cells ``data-key`` = "name (column key)" (``column_keys``, default the header texts), so
    browser tests can read them. A row whose name is empty is the header row.

    >>> table_html([("step time", "4.80 ms")])[32:]
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
    return f'<table class="roofline-readout">{"".join(body)}</table>'


# The explorers' look: controls in as many columns as fit; the readout beside the figure, or below it when
# the notebook is narrower than about 1,000 px (flex-wrap); a projector scale for teaching.
_CSS = """
.roofline-explorer .roofline-readout {font-size: calc(15px * var(--rs, 1)); border-collapse: collapse}
.roofline-explorer .roofline-readout td, .roofline-explorer .roofline-readout th
  {padding: 1px 0.6em 1px 0; text-align: left; vertical-align: top}
.roofline-explorer .roofline-readout th {font-weight: normal; color: #555; font-size: 90%}
.roofline-explorer .roofline-readout td.k {color: #333}
.roofline-explorer .widget-label, .roofline-explorer .widget-inline-hbox .widget-label,
.roofline-explorer select, .roofline-explorer input, .roofline-explorer button,
.roofline-explorer .roofline-message, .roofline-explorer .roofline-number-label
  {font-size: calc(13px * var(--rs, 1))}
.roofline-explorer .roofline-number-label {text-align: right; padding-right: 4px; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis}
.roofline-explorer .roofline-note {font-size: calc(12px * var(--rs, 1)); color: #555; margin-top: 0.3em;
  max-width: 34em}
"""


def jpeg(live: LiveFigure, quality: int = 92) -> bytes:
    """Render a LiveFigure as JPEG: about 3 ms to encode against 15-20 ms for PNG at this size."""
    live.render()
    fig = live.fig
    width, height = fig.canvas.get_width_height()
    img = Image.frombuffer("RGBA", (width, height), fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="jpeg", quality=quality)
    return buf.getvalue()


def _needs_label(model_id: str, need: int | None, have: int) -> str:
    if need is None:
        return f"{model_id} (does not fit on {GPU_COUNT_OPTIONS[-1]} of these GPUs)"
    if need > have:
        return f"{model_id} (needs ≥ {need} GPUs)"
    return model_id


class Explorer(W.VBox):
    """Controls + a LiveFigure + a readout, updated in place on every change.

    Parameters
    ----------
    figure : a LiveFigure subclass (or instance) to draw.
    controls : ``Scenario`` fields to put controls on, in order: a field name gets the standard widget;
        a ``(name, widget)`` pair brings its own (e.g. a field of a Scenario subclass, like a chunk size).
    scenario : starting values (the lesson's worked example); ``reset()`` returns to it.
    readout : function -> HTML shown beside the figure (``decode_readout`` by default; None hides it).
        Called as ``readout(scenario)``, or ``readout(scenario, options)`` when there are knobs.
    knobs : ``{name: widget}`` for settings that are not ``Scenario`` fields (kernels per step, all-reduces
        on/off, the engine, ...). Their values become the figure's ``options`` (it is built with them).
    to_options : converts the knob values (a dict) into figure options, e.g. µs into s. Default: as they are.
    presets : ``{name: settings}`` (the card's examples), offered in a menu and by ``apply_preset(name)``.
    auto_gpus : raise G (``num_gpus``) when a model's weights need more GPUs, with a note (default True).

    >>> ex = Explorer(StepTimeVsBatch, controls=["batch"], knobs={"note": W.Checkbox(value=True)})
    >>> ex.set(note=False, batch=64); ex.live.options["note"], ex.scenario.batch
    (False, 64)
    >>> ex.set(model="llama-3-70b", batch=1); ex.scenario.num_gpus     # G is no control here: raised
    2
    """

    def __init__(
        self,
        figure=StepTimeVsBatch,
        controls: Sequence = ("batch", "context_tokens"),
        scenario: Scenario | None = None,
        readout: Callable | None = decode_readout,
        *,
        knobs: dict[str, W.Widget] | None = None,
        to_options: Callable[[dict], dict] | None = None,
        presets: dict[str, dict] | None = None,
        auto_gpus: bool = True,
    ):
        self.scenario = scenario or Scenario()
        self.initial = (self.scenario, None)
        self.knobs = dict(knobs or {})
        self.to_options = to_options or dict
        self.presets = dict(presets or {})
        self.auto_gpus = auto_gpus
        self._quiet = False  # set while several controls move at once (set, presets, reset)
        self._price_from_code = None  # a price set from code together with a new GPU wins over the listed one
        self._dirty = False
        self.controls = {}
        for item in controls:
            name, widget = (
                item if isinstance(item, tuple) else (item, control(item, getattr(self.scenario, item)))
            )
            self.controls[name] = widget
        for widget in [*self.knobs.values(), *self.controls.values()]:
            if isinstance(widget, NumberControl):
                continue
            widget.layout.width = _LAYOUT.width
            if not isinstance(widget, W.Checkbox):  # a checkbox's label sits to its right, unindented
                widget.style.description_width = _STYLE["description_width"]
        self.initial = (self.scenario, {name: w.value for name, w in self.knobs.items()})
        options = self._options()
        self.live = figure if isinstance(figure, LiveFigure) else figure(self.scenario, **options)
        self.live.options.update(options)
        self.readout_fn = readout
        self.image = W.Image(
            format="jpeg",
            value=jpeg(self.live),
            layout=W.Layout(flex="1 1 560px", max_width="900px", min_width="0", height="auto"),
        )
        self.readout = W.HTML(self._readout_html(self.scenario), layout=W.Layout(flex="0 1 auto"))
        self.message = W.HTML("")
        self.message.add_class("roofline-message")
        self.last_update_s = 0.0
        self.scale = 1.0
        self._uid = f"roofline-ex-{next(_ids)}"
        self.style_html = W.HTML(self._css(), layout=W.Layout(display="none"))
        for widget in [*self.controls.values(), *self.knobs.values()]:
            widget.observe(lambda change: self._changed(), names="value")
        self._refresh_menus()
        self.grid = W.GridBox(
            [*self.controls.values(), *self.knobs.values()],
            layout=W.Layout(
                grid_template_columns="repeat(auto-fill, minmax(31em, 1fr))", grid_gap="2px 12px"
            ),
        )
        self.toolbar = self._toolbar()
        figure_row = W.Box(
            [self.image, self.readout],
            layout=W.Layout(display="flex", flex_flow="row wrap", align_items="flex-start", grid_gap="8px"),
        )
        super().__init__([self.style_html, self.grid, self.toolbar, self.message, figure_row])
        self.add_class("roofline-explorer")
        self.add_class(self._uid)

    # ---- text forms ----
    def __repr__(self) -> str:  # the default repr would print the whole picture's bytes
        return f"<Explorer {type(self.live).__name__}: {', '.join([*self.controls, *self.knobs])}>"

    def _repr_mimebundle_(self, **kwargs):
        """Unrun (a saved notebook without widget state) a front end shows the text: say what to do."""
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"{RUN_HINT} ({type(self.live).__name__} explorer)"
        return bundle

    # ---- moving it from code ----
    def set(self, _force: bool = False, **values) -> None:
        """Move controls, knobs or any other ``Scenario`` field from code (tests, set-up buttons, presets,
        a demo script): one redraw for all of them, the same path as a slider move."""
        hidden = {k: v for k, v in values.items() if k not in self.controls and k not in self.knobs}
        if hidden:
            self.scenario = self.scenario.with_(**hidden)
        self._quiet = True
        priced = "usd_per_gpu_hour" in self.controls
        self._price_from_code = values.get("usd_per_gpu_hour") if priced else None
        try:
            for name, value in values.items():
                if name in self.knobs:
                    self.knobs[name].value = value
                elif name in self.controls:
                    self.controls[name].value = value
        finally:
            self._quiet = False
        try:
            self._changed(force=_force or bool(hidden))
        finally:
            self._price_from_code = None

    def setup_button(self, label: str = "Set up this question in the explorer", **settings) -> W.Button:
        """A button that puts a question into this explorer: the starting scenario with ``settings``
        (controls, knobs or other Scenario fields) on top. Place it beside a predict-then-check question.

        >>> ex = Explorer(StepTimeVsBatch, controls=["batch", "context_tokens"])
        >>> b = ex.setup_button("Question 1", batch=64, context_tokens=4096); b.click()
        >>> ex.scenario.batch, ex.scenario.context_tokens, "Question 1" in ex.message.value
        (64, 4096, True)
        """
        said = ", ".join(f"{k} = {v}" for k, v in settings.items())
        button = SetupButton(
            description=label,
            icon="sliders",
            tooltip=f"{label}: {said}",
            layout=W.Layout(width="auto"),
        )
        button.add_class("roofline-setup")

        def click(_):
            self.reset(**settings)
            if not self.message.value:
                self.message.value = f"<p><b>{html.escape(label)}:</b> {html.escape(said)}</p>"

        button.on_click(click)
        return button

    def apply_preset(self, name: str) -> None:
        """Apply one of ``presets`` by name."""
        self.set(**self.presets[name])

    def reset(self, **settings) -> None:
        """Back to the starting scenario and knob values (then ``settings``, if any), in one redraw."""
        scenario, knobs = self.initial
        fields = {name: getattr(scenario, name) for name in self.controls if hasattr(scenario, name)}
        self.scenario = scenario
        self.set(_force=True, **{**fields, **(knobs or {}), **settings})

    def pin(self) -> None:
        """Keep the current curves as a grey baseline to compare the next moves against."""
        self.live.pin()
        self.image.value = jpeg(self.live)

    def unpin(self) -> None:
        """Remove the pinned baseline."""
        self.live.unpin()
        self.image.value = jpeg(self.live)

    def pin_baseline(self) -> None:
        """``pin()``, and the toolbar's toggle shows it."""
        self.pin_button.value = True

    def clear_baseline(self) -> None:
        """``unpin()``, and the toolbar's toggle shows it."""
        self.pin_button.value = False

    def set_scale(self, scale: float) -> None:
        """Projector scale: figure resolution, labels and readout grow by ``scale`` (1 = notebook size)."""
        self.scale = float(scale)
        self.live.set_scale(self.scale)
        self.image.layout.max_width = f"{900 * self.scale:.0f}px"
        self.image.layout.flex = f"1 1 {560 * self.scale:.0f}px"
        self.style_html.value = self._css()
        self.image.value = jpeg(self.live)

    # ---- internals ----
    def _css(self) -> str:
        return f"<style>{_CSS} .{self._uid} {{--rs: {getattr(self, 'scale', 1.0)}}}</style>"

    def _toolbar(self) -> W.Widget:
        """Reset (class ``roofline-reset``), Pin as baseline (``roofline-pin``) and, with presets, an
        examples menu (``roofline-presets``; its first entry is the starting scenario)."""
        reset = W.Button(description="Reset", icon="undo", layout=W.Layout(width="auto"))
        reset.add_class("roofline-reset")
        reset.on_click(lambda _: self.reset())
        pin = W.ToggleButton(
            description="Pin baseline",
            icon="thumb-tack",
            tooltip="Keep the current curves in grey to compare against",
            layout=W.Layout(width="auto"),
        )
        pin.add_class("roofline-pin")
        pin.observe(lambda c: self.pin() if c["new"] else self.unpin(), names="value")
        self.pin_button = pin
        items = [reset, pin]
        self.preset_menu = None
        if self.presets:
            start = "the lesson's example"
            menu = W.Dropdown(
                options=[start, *self.presets],
                value=start,
                description="Preset",
                layout=W.Layout(width="auto"),
            )
            menu.add_class("roofline-presets")

            def chosen(c):
                if c["new"] in self.presets:
                    self.apply_preset(c["new"])
                elif c["new"] == start:
                    self.reset()

            menu.observe(chosen, names="value")
            self.preset_menu = menu
            items.append(menu)
        bar = W.HBox(items, layout=W.Layout(grid_gap="8px"))
        bar.add_class("roofline-toolbar")
        return bar

    def _options(self) -> dict:
        return dict(self.to_options({name: w.value for name, w in self.knobs.items()}))

    def _readout_html(self, scenario: Scenario) -> str:
        if not self.readout_fn:
            return ""
        return self.readout_fn(scenario, self.live.options) if self.knobs else self.readout_fn(scenario)

    def _from_controls(self) -> Scenario:
        values = {name: w.value for name, w in self.controls.items()}
        if "usd_per_gpu_hour" in values:
            price = values.pop("usd_per_gpu_hour")
            new_gpu = "gpu" in values and get_gpu(values["gpu"]).id != get_gpu(self.scenario.gpu).id
            if new_gpu and self._price_from_code is None:
                pass  # a new GPU brings its listed price (Scenario.with_)
            elif new_gpu or price != (self.scenario.usd_per_gpu_hour or 0.0):
                values["usd_per_gpu_hour"] = price if price > 0 else None
        return self.scenario.with_(**values)

    def _raise_gpus(self, candidate: Scenario) -> tuple[Scenario, str]:
        """A model whose weights need more GPUs: raise G to the fewest that hold it and the batch (or, if
        none does, one user), and say so."""
        if not self.auto_gpus or candidate.users_that_fit() >= 1:
            return candidate, ""
        need = candidate.gpus_needed(users=candidate.batch) or candidate.gpus_needed()
        if need is None:
            return candidate, (
                f"{candidate.model} in {candidate.weight_precision} does not fit even on "
                f"{GPU_COUNT_OPTIONS[-1]} × {candidate.gpu}: pick a smaller model, a lower precision or "
                "another GPU."
            )
        if need <= candidate.num_gpus:
            return candidate, ""
        note = (
            f"{candidate.model} in {candidate.weight_precision} needs at least {need} × {candidate.gpu}: "
            f"G raised from {candidate.num_gpus} to {need}."
        )
        return candidate.with_(num_gpus=need), note

    def _refresh_menus(self) -> None:
        """Mark what each model needs on this GPU and precision, and precisions this GPU lacks."""
        s = self.scenario
        self._quiet, was_quiet = True, self._quiet
        try:
            menu = self.controls.get("model")
            if isinstance(menu, W.Dropdown) and all(m in models() for m in _values(menu)):
                labels = []
                for model_id in models():
                    need = s.with_(model=model_id, batch=1, context_tokens=1).gpus_needed()
                    labels.append((_needs_label(model_id, need, s.num_gpus), model_id))
                _set_options(menu, labels)
            menu = self.controls.get("gpu")
            if isinstance(menu, W.Dropdown) and all(g in gpus() for g in _values(menu)):
                labels = []
                for gpu_id in _values(menu):
                    ok = _supports(gpu_id, s.weight_precision)
                    labels.append((gpu_id if ok else f"{gpu_id} (no {s.weight_precision})", gpu_id))
                _set_options(menu, labels)
            menu = self.controls.get("weight_precision")
            if isinstance(menu, W.Dropdown):
                labels = []
                for p in _values(menu):
                    labels.append((p, p) if _supports(s.gpu, p) else (f"{p} (not on {s.gpu})", p))
                _set_options(menu, labels)
            price = self.controls.get("usd_per_gpu_hour")
            if price is not None:
                price.value = s.usd_per_gpu_hour or 0.0
        finally:
            self._quiet = was_quiet

    def _changed(self, force: bool = False) -> None:
        if self._quiet:
            return
        start = time.perf_counter()
        try:
            candidate = self._from_controls()
        except RooflineError as err:
            self._error(err)
            return
        candidate, note = self._raise_gpus(candidate)
        if (
            not force
            and candidate == self.scenario
            and self._options() == {k: self.live.options.get(k) for k in self._options()}
        ):
            return
        old_options = dict(self.live.options)
        self.live.options.update(self._options())
        try:
            self.live.update(candidate)
            picture = jpeg(self.live)
            text = self._readout_html(candidate)
        except RooflineError as err:
            self._error(err)
            self.live.options = old_options
            self.live.update(self.scenario)  # keep the figure consistent with the last valid state
            return
        fields = ("gpu", "num_gpus", "weight_precision")
        menus_changed = any(getattr(candidate, f) != getattr(self.scenario, f) for f in fields)
        self.scenario = candidate
        self.message.value = f'<p style="color:#8a5a00"><b>Note:</b> {html.escape(note)}</p>' if note else ""
        self.image.value = picture
        self.readout.value = text
        if menus_changed or note:
            self._refresh_menus()
            if note and "num_gpus" in self.controls:
                self._quiet = True
                try:
                    self.controls["num_gpus"].value = candidate.num_gpus
                finally:
                    self._quiet = False
        self.last_update_s = time.perf_counter() - start

    def _error(self, err: Exception) -> None:
        self.message.value = f'<p style="color:#b00020"><b>Not possible:</b> {html.escape(str(err))}</p>'


def _set_options(menu: W.Dropdown, labelled: list[tuple[str, object]]) -> None:
    """Relabel a dropdown's options, keeping its value (no-op when nothing changed)."""
    if list(menu.options) == labelled:
        return
    value = menu.value
    menu.options = labelled
    menu.value = value


def _supports(gpu_id: str, precision: str) -> bool:
    """Whether ``gpu_id`` has the math for weights in ``precision`` (the library's own check)."""
    try:
        peak_flops_per_s(get_gpu(gpu_id), precision)
    except RooflineError:
        return False
    return True


def _values(menu: W.Dropdown) -> list:
    """A dropdown's option values (options may be plain values or (label, value) pairs)."""
    return [o[1] if isinstance(o, tuple) else o for o in menu.options]


class SetupButton(W.Button):
    """A "set up this question" button; unrun, its text says how to make it work."""

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = "Run the notebook (Run ▸ Run All Cells) to use the set-up button."
        return bundle


class Reveal:
    """A folded answer: "predict, then check" questions show it only when the reader opens it. With
    ``setup=(explorer, settings)`` or ``(explorer, settings, label)`` a "set up this question" button is
    shown first (``Explorer.setup_button``), so the question can be tried in its explorer before the
    answer is opened; the folded answer stays plain HTML, readable even before the notebook runs.

    >>> Reveal("Answer", "<p>4.8 ms</p>")._repr_html_()
    '<details class="roofline-reveal"><summary><b>Answer</b></summary><p>4.8 ms</p></details>'
    """

    def __new__(cls, summary: str, body_html: str, setup: tuple | None = None):
        return super().__new__(_RevealWithSetup if setup is not None and cls is Reveal else cls)

    def __init__(self, summary: str, body_html: str, setup: tuple | None = None):
        self.summary, self.body_html, self.setup = summary, body_html, setup

    def _repr_html_(self) -> str:
        return (
            f'<details class="roofline-reveal"><summary><b>{html.escape(self.summary)}</b></summary>'
            f"{self.body_html}</details>"
        )

    def __repr__(self) -> str:
        return f"<Reveal: {self.summary}>"


class _RevealWithSetup(Reveal):
    """Two outputs: the set-up button (a widget) and the folded answer (HTML)."""

    def button(self) -> W.Button:
        explorer, settings, *label = self.setup
        return explorer.setup_button(*label, **settings)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.button())
        display(Reveal(self.summary, self.body_html))
