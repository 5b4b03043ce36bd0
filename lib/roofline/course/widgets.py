"""Controls and an explorer that connects them to a LiveFigure: each lesson's lab bench in a few lines.

Every control sets one field of a ``Scenario``; on a change the ``Explorer`` recomputes the physics, moves
the figure's artists in place, swaps the picture and refreshes the readout beside it. An impossible choice
(FP8 on an A100) shows the library's error instead of a figure with nonsense in it, and menus never lead to
a dead end: a model whose weights need more GPUs raises G with a note. ``Prediction`` asks for a prediction
before it opens the answer; ``Reveal`` folds an answer.
"""

from __future__ import annotations

import html
import inspect
import itertools
from collections.abc import Callable, Sequence

import ipywidgets as W
import traitlets

from roofline import engines
from roofline.course.accessibility import ACCESSIBILITY_JS
from roofline.course.figures import LiveFigure, alt_text, smallest_text_px
from roofline.course.readouts import decode_readout
from roofline.data import get_gpu, gpus, models
from roofline.errors import RooflineError
from roofline.physics.precision import PRECISIONS, peak_flops_per_s
from roofline.scenario import GPU_COUNTS, Scenario, nearest_supported_precision

BATCH_OPTIONS = [1, 2, 4, 8, 16, 20, 24, 30, 32, 48, 64, 96, 128, 192, 256, 300, 384, 512, 768, 1024]
CONTEXT_OPTIONS = [0, 128, 256, 500, 1000, 2000, 4096, 8192, 16384, 32768, 65536, 131072]
PROMPT_OPTIONS = [16, 32, 64, 128, 256, 500, 1000, 2000, 4000, 8000, 16000, 32000]
KV_PRECISIONS = ["bf16", "fp16", "fp8", "int8", "int4"]
# The controls of a step every explorer offers, in the order they are laid out (batch, context, precision,
# GPU count), then the GPU and the model.
FOUR = ["batch", "context_tokens", "weight_precision", "num_gpus"]
STEP = [*FOUR, "gpu", "model"]
# The Scenario fields of the four controls of a step: B the batch, T the context (or a prompt), P the
# weight precision, G the GPU count.
AXES = {"batch": "B", "context_tokens": "T", "prompt_tokens": "T", "weight_precision": "P", "num_gpus": "G"}

RUN_HINT = "Run the notebook (Run ▸ Run All Cells) to use the sliders."
PREDICTION_HINT = "Run the notebook (Run ▸ Run All Cells), write your prediction, then open the answer."
# The figure is shown between 3/4 (its flex basis, beside the readout) and 4/5 (its widest) of the size it
# is drawn at: a course figure (900 px wide) between 675 and 720 px, so controls, figure and headline fit a
# laptop screen and its smallest text (figures.MIN_TEXT_PT, 15.3 px drawn) stays above 11 px on screen.
# A notebook narrower than the basis plus the readout's puts the readout below the figure.
IMAGE_SHOWN_MIN, IMAGE_SHOWN_MAX = 0.75, 0.8
READOUT_BASIS_PX = 300  # the readout's width beside the figure (its values wrap within it)
CONTROL_MIN_WIDTH = "21em"  # a control's column: three fit beside each other at 1440 px with the file browser
LABEL_WIDTH = "9.5em"  # every control's label, so the controls line up in columns
_ids = itertools.count()


def mark_axis(widget: W.Widget, axis: str) -> W.Widget:
    """Mark ``widget`` as one of the four controls of a step (``axis``: "B", "T", "P", "G", or a field of
    ``AXES``), with the class ``roofline-axis-<letter>`` the browser tests read; returns the widget.

    >>> "roofline-axis-B" in mark_axis(W.IntSlider(), "batch")._dom_classes
    True
    """
    letter = AXES.get(axis, axis)
    if letter not in ("B", "T", "P", "G"):
        raise KeyError(f"unknown axis {axis!r}: one of B, T, P, G or {', '.join(AXES)}")
    widget.add_class(f"roofline-axis-{letter}")
    return widget


class NumberControl(W.HBox):
    """A slider over round values plus a box for any typed value, both bound to one ``value``.

    The slider steps through ``options`` and sends its value on release; the box accepts any integer in
    [``minimum``, ``maximum``], and a typed value joins the slider's stops so both always agree.

    >>> c = NumberControl([1, 2, 4], 2, "batch B", minimum=1, maximum=4096)
    >>> c.box.value = 37; c.value, c.slider.value
    (37, 37)
    >>> c.value = 4; c.box.value
    4
    """

    value = traitlets.Int()

    def __init__(self, options, value, description, minimum=0, maximum=10**7):
        self._syncing = False
        self.label = W.HTML(layout=W.Layout(width=LABEL_WIDTH, min_width=LABEL_WIDTH, margin="0 4px 0 0"))
        # The slider's own readout stays in the page (hidden by the course CSS): the accessibility script
        # announces it as the slider's value (32 users, not the stop's index 8).
        self.slider = W.SelectionSlider(
            options=sorted(set(options) | {value}),
            value=value,
            readout=True,
            continuous_update=False,
            layout=W.Layout(flex="1 1 6em", min_width="5em", width="auto"),
        )
        self.box = W.BoundedIntText(value=value, min=minimum, max=maximum, layout=W.Layout(width="5.5em"))
        super().__init__([self.label, self.slider, self.box], layout=W.Layout(width="100%"))
        self.description = description
        self.value = value
        self.add_class("roofline-number")
        self.slider.observe(lambda c: self._from_part(c["new"]), names="value")
        self.box.observe(lambda c: self._from_part(c["new"]), names="value")
        self.observe(lambda c: self._to_parts(c["new"]), names="value")

    @property
    def description(self) -> str:
        """The control's label (what it sets)."""
        return self._description

    @description.setter
    def description(self, text: str) -> None:
        self._description = self.box.tooltip = text
        self.label.value = (
            f'<div class="roofline-number-label" title="{html.escape(text)}">{html.escape(text)}</div>'
        )

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


CONTROL_FACTORIES: dict[str, Callable] = {
    "model": lambda v: W.Dropdown(options=list(models()), value=v, description="model"),
    "gpu": lambda v: W.Dropdown(options=list(gpus()), value=v, description="GPU"),
    "num_gpus": lambda v: W.Dropdown(options=sorted({*GPU_COUNTS, v}), value=v, description="GPUs G"),
    "weight_precision": lambda v: W.Dropdown(options=list(PRECISIONS), value=v, description="weights P"),
    "kv_precision": lambda v: W.Dropdown(options=KV_PRECISIONS, value=v, description="KV precision"),
    "batch": lambda v: NumberControl(BATCH_OPTIONS, v, "batch B (users)", minimum=1, maximum=65536),
    "context_tokens": lambda v: NumberControl(CONTEXT_OPTIONS, v, "context T (tokens)"),
    "prompt_tokens": lambda v: NumberControl(PROMPT_OPTIONS, v, "prompt (tokens)", minimum=1),
    "usd_per_gpu_hour": lambda v: W.BoundedFloatText(
        value=v or 0.0, min=0.0, max=1000, step=0.1, description="$ per GPU-hour"
    ),
}


def engine_menu(gpu: str) -> W.Dropdown:
    """The engine menu of an explorer: every calibrated engine by name, starting on the one people run on
    ``gpu`` (``roofline.engines.default_engine``: llama.cpp on a Mac or a GeForce, vLLM on a datacenter GPU).

    >>> engine_menu("m4-max").value, engine_menu("h100-sxm").value
    ('llama.cpp', 'vllm')
    """
    options = [(engines.get_engine(e).name, e) for e in engines.engine_ids("calibrated")]
    menu = W.Dropdown(options=options, value=engines.default_engine(gpu), description="engine")
    menu.add_class("roofline-control")
    menu.add_class("roofline-control-engine")
    return menu


def control(field: str, value) -> W.Widget:
    """The standard widget for one ``Scenario`` field, set to ``value`` (the Explorer lays it out).

    >>> control("batch", 32).value
    32
    """
    if field not in CONTROL_FACTORIES:
        raise KeyError(f"No standard control for {field!r}; known: {', '.join(CONTROL_FACTORIES)}")
    widget = CONTROL_FACTORIES[field](value)
    widget.add_class("roofline-control")
    widget.add_class(f"roofline-control-{field}")
    return widget


def stops_slider(options: Sequence, value, description: str) -> W.SelectionSlider:
    """A knob's slider over the values ``options``, at ``value``, that sends its value on release.

    >>> stops_slider([0.5, 1.0, 2.0], 1.0, "sampler window (ms)").value
    1.0
    """
    return W.SelectionSlider(options=options, value=value, description=description, continuous_update=False)


# The explorers' look: controls in as many columns as fit (three beside each other in a laptop's notebook,
# wrapping on a narrow one); the figure and the readout's headline side by side within one laptop screen,
# the readout below the figure, its tables in columns, when the notebook is narrower than about 990 px
# (flex-wrap); details folded;
# colours from JupyterLab's theme variables (light or dark), with light-theme fallbacks.
_CSS = """
.roofline-explorer {--rf-fg1: var(--jp-ui-font-color1, #1f1f1f); --rf-fg2: var(--jp-ui-font-color2, #555);
  --rf-warn: var(--jp-warn-color0, #8a5a00); --rf-error: var(--jp-error-color1, #b00020);
  color: var(--rf-fg1)}
.roofline-explorer .roofline-readout-box .widget-html-content {line-height: 1.35}
.roofline-explorer .roofline-readout {font-size: 13px; border-collapse: collapse; color: var(--rf-fg1)}
.roofline-explorer .roofline-readout-box .widget-html-content {column-width: 330px; column-gap: 28px}
.roofline-explorer .roofline-readout-box table, .roofline-explorer .roofline-readout-box .roofline-case
  {break-inside: avoid}
.roofline-explorer .roofline-readout-box .roofline-case {break-after: avoid}
.roofline-explorer .roofline-readout td, .roofline-explorer .roofline-readout th
  {padding: 0 0.6em 1px 0; text-align: left; vertical-align: top; color: var(--rf-fg1)}
.roofline-explorer .roofline-readout th {font-weight: normal; color: var(--rf-fg2); font-size: 90%}
.roofline-explorer .roofline-readout td.k {color: var(--rf-fg2)}
.roofline-explorer .roofline-case {font-size: 12px; color: var(--rf-fg2); margin: 6px 0 1px}
.roofline-explorer .roofline-details summary {cursor: pointer; color: var(--rf-fg2); font-size: 12px}
.roofline-explorer .widget-label, .roofline-explorer .widget-inline-hbox .widget-label,
.roofline-explorer select, .roofline-explorer input, .roofline-explorer button,
.roofline-explorer .roofline-message, .roofline-explorer .roofline-number-label {font-size: 13px}
.roofline-explorer .roofline-number-label {text-align: right; padding-right: 4px; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; color: var(--rf-fg1)}
.roofline-explorer .roofline-number .widget-readout {display: none}
.roofline-explorer .roofline-note {font-size: 12px; color: var(--rf-fg2); margin-top: 0.3em; max-width: 34em}
.roofline-explorer .roofline-message p {margin: 2px 0}
.roofline-explorer .roofline-message .roofline-warn {color: var(--rf-warn)}
.roofline-explorer .roofline-message .roofline-error {color: var(--rf-error)}
.roofline-explorer .roofline-stale {opacity: 0.3}
.roofline-explorer .roofline-alt {position: absolute; width: 1px; height: 1px; overflow: hidden;
  clip: rect(0 0 0 0); white-space: nowrap}
.roofline-explorer .roofline-stale-note {color: var(--rf-error); font-size: 13px; max-width: 24em}
"""


def _model_label(s: Scenario, model_id: str) -> str:
    """The model menu's entry: the model, marked (briefly, so a narrow menu still shows it) where its
    weights need more GPUs than ``s`` has: "(≥ 2 GPUs)", or "(> 8 GPUs)" where no menu count holds them."""
    need = s.with_(model=model_id, batch=1, context_tokens=1).gpus_needed()
    if need is None:
        return f"{model_id} (> {GPU_COUNTS[-1]} GPUs)"
    return f"{model_id} (≥ {need} GPUs)" if need > s.num_gpus else model_id


class Explorer(W.VBox):
    """Controls + a LiveFigure + a readout, updated in place on every change.

    Parameters
    ----------
    figure : a LiveFigure subclass (or instance) to draw.
    controls : ``Scenario`` fields to put controls on, in order: a field name gets the standard widget;
        a ``(name, widget)`` pair brings its own (e.g. a field of a Scenario subclass, like a chunk size).
    scenario : starting values (the lesson's worked example); ``reset()`` returns to it.
    readout : function -> HTML shown beside the figure, called as ``readout(scenario)``, or
        ``readout(scenario, options)`` when there are knobs (default ``decode_readout``; None hides it).
    knobs : ``{name: widget}`` for settings that are not ``Scenario`` fields (kernels per step, all-reduces
        on/off, the engine, ...). Their values become the figure's ``options`` (it is built with them).
    to_options : converts the knob values (a dict) into figure options, e.g. µs into s. Default: as they are.
    presets : ``{name: settings}`` (the card's examples), offered in a menu and by ``apply_preset(name)``.
    auto_gpus : raise G (``num_gpus``) when a model's weights need more GPUs, with a note (default True).
    engine : an engine menu (``engine_menu``) among the knobs when the readout takes options (default
        True): the figure and the readout show that engine beside the floor. It starts on the engine people
        run on the scenario's GPU and follows a new GPU's until the learner picks one.

    >>> from roofline.lessons.step_time import StepTimeVsBatch
    >>> ex = Explorer(StepTimeVsBatch, controls=["batch"], knobs={"note": W.Checkbox(value=True)})
    >>> ex.set(note=False, batch=64); ex.live.options["note"], ex.scenario.batch
    (False, 64)
    >>> ex.set(model="llama-3-70b", batch=1); ex.scenario.num_gpus     # G is no control here: raised
    2
    """

    def __init__(
        self,
        figure,
        controls: Sequence = ("batch", "context_tokens"),
        scenario: Scenario | None = None,
        readout: Callable | None = decode_readout,
        *,
        knobs: dict[str, W.Widget] | None = None,
        to_options: Callable[[dict], dict] | None = None,
        presets: dict[str, dict] | None = None,
        auto_gpus: bool = True,
        engine: bool = True,
    ):
        self.scenario = scenario or Scenario()
        self.knobs = dict(knobs or {})
        takes_options = readout is not None and len(inspect.signature(readout).parameters) >= 2
        if engine and takes_options and "engine" not in self.knobs:
            self.knobs["engine"] = engine_menu(self.scenario.gpu)
        self.to_options = to_options or dict
        self.presets = dict(presets or {})
        self.auto_gpus = auto_gpus
        self.readout_fn = readout
        self._quiet = False  # set while several controls move at once (set, presets, reset)
        self._price_from_code = None  # a price set from code together with a new GPU wins over the listed one
        self._stale = False  # an impossible choice is showing: the next possible one redraws everything
        self._engine_from_code = False  # set() names the engine: a new GPU does not move the menu
        self.controls = dict(
            i if isinstance(i, tuple) else (i, control(i, getattr(self.scenario, i))) for i in controls
        )
        for name, widget in [*self.controls.items(), *self.knobs.items()]:
            if name in AXES and name in self.controls:
                mark_axis(widget, name)
            if not isinstance(widget, NumberControl):
                widget.layout.width = "auto"  # stretched to its grid cell, margins included
                if not isinstance(widget, W.Checkbox):  # a checkbox's label sits to its right, unindented
                    widget.style.description_width = LABEL_WIDTH
            widget.observe(lambda change: self._changed(), names="value")
        self.initial = (self.scenario, {name: w.value for name, w in self.knobs.items()})
        options = self._options()
        self.live = figure if isinstance(figure, LiveFigure) else figure(self.scenario, **options)
        self.live.options.update(options)
        drawn_px = self.live.fig.get_figwidth() * self.live.fig.dpi  # the picture's width
        self.image = W.Image(
            format="jpeg",
            value=self.live.jpeg(),
            layout=W.Layout(
                flex=f"1 1 {round(IMAGE_SHOWN_MIN * drawn_px)}px",
                max_width=f"{round(IMAGE_SHOWN_MAX * drawn_px)}px",
                min_width="0",
                height="auto",
            ),
        )
        self.image.add_class("roofline-figure")
        # The figure in words: read by screen readers where it stands (visually hidden), and copied into the
        # image's alt text by the accessibility script.
        self.alt = W.HTML(self._alt_html())
        self.alt.add_class("roofline-alt")
        # The readout asks for READOUT_BASIS_PX beside the figure (its long values wrap); in a notebook too
        # narrow for both it goes below the figure, as wide as the notebook, its tables side by side
        # (columns) so that the figure and the headline still fit one laptop screen.
        self.readout = W.HTML(
            self._readout_html(self.scenario),
            layout=W.Layout(flex=f"1 1 {READOUT_BASIS_PX}px", min_width=f"{READOUT_BASIS_PX}px"),
        )
        self.readout.add_class("roofline-readout-box")
        self.message = W.HTML("")
        self.message.add_class("roofline-message")
        self._refresh_menus()
        grid = W.GridBox(
            [*self.controls.values(), *self.knobs.values()],
            layout=W.Layout(
                grid_template_columns=f"repeat(auto-fill, minmax({CONTROL_MIN_WIDTH}, 1fr))",
                grid_gap="1px 14px",
            ),
        )
        grid.add_class("roofline-controls")
        self.figure_row = W.Box(
            [self.image, self.alt, self.readout],
            layout=W.Layout(display="flex", flex_flow="row wrap", align_items="flex-start", grid_gap="10px"),
        )
        style = W.HTML(f"<style>{_CSS}</style>", layout=W.Layout(display="none"))
        super().__init__([style, grid, self._toolbar(), self.message, self.figure_row])
        self.add_class("roofline-explorer")

    def __repr__(self) -> str:  # the default repr would print the whole picture's bytes
        return f"<Explorer {type(self.live).__name__}: {', '.join([*self.controls, *self.knobs])}>"

    def _repr_mimebundle_(self, **kwargs):
        """Unrun (a saved notebook without widget state) a front end shows the text: say what to do."""
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"{RUN_HINT} ({type(self.live).__name__} explorer)"
        return bundle

    def _ipython_display_(self) -> None:
        """Show the explorer, after the small script that makes its sliders and figure accessible."""
        from IPython.display import Javascript, display

        display(Javascript(ACCESSIBILITY_JS))
        display(self._repr_mimebundle_(), raw=True)

    def set(self, _force: bool = False, **values) -> None:
        """Move controls, knobs or any other ``Scenario`` field from code (tests, set-up buttons, presets,
        a demo script): one redraw for all of them, the same path as a slider move."""
        widgets = {**self.controls, **self.knobs}
        menu = self.knobs.get("engine")
        if menu is not None and "gpu" in values and "engine" not in values:
            if menu.value == engines.default_engine(self.scenario.gpu):  # the menu follows the GPU
                values = {**values, "engine": engines.default_engine(values["gpu"])}
        hidden = {k: v for k, v in values.items() if k not in widgets}
        if hidden:
            self.scenario = self.scenario.with_(**hidden)
        self._quiet = True
        priced = "usd_per_gpu_hour" in self.controls
        self._price_from_code = values.get("usd_per_gpu_hour") if priced else None
        try:
            for name, value in values.items():
                if name in widgets:
                    widgets[name].value = value
        finally:
            self._quiet = False
        self._engine_from_code = "engine" in values
        try:
            self._changed(force=_force or bool(hidden))
        finally:
            self._price_from_code = None
            self._engine_from_code = False

    def setup_button(self, label: str = "Set up this question in the explorer", **settings) -> W.Button:
        """A button that puts a question into this explorer: the starting scenario with ``settings``
        (controls, knobs or other Scenario fields) on top, then asks the page (the accessibility script) to
        scroll the explorer's top into view, as the button sits below it, beside its question.

        >>> from roofline.lessons.step_time import StepTimeVsBatch
        >>> ex = Explorer(StepTimeVsBatch, controls=["batch", "context_tokens"])
        >>> b = ex.setup_button("Question 1", batch=64, context_tokens=4096); b.click()
        >>> ex.scenario.batch, ex.scenario.context_tokens, "Question 1" in ex.message.value
        (64, 4096, True)
        """
        said = ", ".join(f"{k} = {v}" for k, v in settings.items())
        button = SetupButton(
            description=label, icon="sliders", tooltip=f"{label}: {said}", layout=W.Layout(width="auto")
        )
        button.add_class("roofline-setup")

        def click(_):
            self.reset(**settings)
            if not self.message.value:
                self.message.value = f"<p><b>{html.escape(label)}:</b> {html.escape(said)}</p>"
            self.message.value += f'<span class="roofline-scroll-request" data-request="{next(_ids)}"></span>'

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
        self.set(_force=True, **{**fields, **knobs, **settings})

    def pin(self) -> None:
        """Keep the current curves as a grey baseline to compare the next moves against."""
        self.live.pin()
        self.image.value = self.live.jpeg()

    def unpin(self) -> None:
        """Remove the pinned baseline."""
        self.live.unpin()
        self.image.value = self.live.jpeg()

    def _alt_html(self) -> str:
        """The figure in words, carrying its smallest text in the picture's pixels (``data-text-px``: the
        browser tests scale it by the shown size)."""
        px = f"{smallest_text_px(self.live):.1f}"
        return f'<div class="roofline-alt-text" data-text-px="{px}">{html.escape(alt_text(self.live))}</div>'

    def _toolbar(self) -> W.Widget:
        """Reset (class ``roofline-reset``), Pin baseline (``roofline-pin``) and, with presets, an examples
        menu (``roofline-presets``; its first entry is the starting scenario)."""
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
        items = [reset, pin]
        if self.presets:
            start = "the lesson's example"
            menu = W.Dropdown(
                options=[start, *self.presets],
                value=start,
                description="Preset",
                layout=W.Layout(width="auto"),
            )
            menu.add_class("roofline-presets")
            menu.observe(
                lambda c: self.apply_preset(c["new"]) if c["new"] in self.presets else self.reset(),
                names="value",
            )
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
                f"{GPU_COUNTS[-1]} × {candidate.gpu}: pick a smaller model, a lower precision or "
                "another GPU."
            )
        if need <= candidate.num_gpus:
            return candidate, ""
        note = (
            f"{candidate.model} in {candidate.weight_precision} needs at least {need} × {candidate.gpu}: "
            f"G raised from {candidate.num_gpus} to {need}."
        )
        return candidate.with_(num_gpus=need), note

    def _supported_precision(self, candidate: Scenario) -> tuple[Scenario, str]:
        """A new GPU without math for the weights' precision (bf16 on an Apple GPU, fp8 on an A100): the
        nearest precision it has, with a note. A precision chosen by hand that the GPU lacks stays an
        error ("Not possible"), so the menu's marks are the lesson."""
        new_gpu = get_gpu(candidate.gpu).id != get_gpu(self.scenario.gpu).id
        if not new_gpu or _supports(candidate.gpu, candidate.weight_precision):
            return candidate, ""
        other = nearest_supported_precision(candidate.gpu, candidate.weight_precision)
        if other is None:
            return candidate, ""
        note = f"{candidate.gpu} has no {candidate.weight_precision} math: weights P set to {other}."
        return candidate.with_(weight_precision=other), note

    def _refresh_menus(self) -> None:
        """Mark what each model needs on this GPU and precision, GPUs without the weights' precision, and
        precisions this GPU lacks."""
        s = self.scenario
        labels = {
            "model": lambda m: _model_label(s, m),
            "gpu": lambda g: g if _supports(g, s.weight_precision) else f"{g} (no {s.weight_precision})",
            "weight_precision": lambda p: p if _supports(s.gpu, p) else f"{p} (not on {s.gpu})",
        }
        self._quiet, was_quiet = True, self._quiet
        try:
            for field, label in labels.items():
                menu = self.controls.get(field)
                if isinstance(menu, W.Dropdown):
                    _set_options(menu, [(label(v), v) for v in _values(menu)])
            if "usd_per_gpu_hour" in self.controls:
                self.controls["usd_per_gpu_hour"].value = s.usd_per_gpu_hour or 0.0
        finally:
            self._quiet = was_quiet

    def _changed(self, force: bool = False) -> None:
        if self._quiet:
            return
        try:
            candidate = self._from_controls()
        except RooflineError as err:
            self._error(err)
            return
        candidate, precision_note = self._supported_precision(candidate)
        candidate, note = self._raise_gpus(candidate)
        note = " ".join(n for n in (precision_note, note) if n)
        self._follow_gpu_engine(candidate)
        if (
            not force
            and not self._stale
            and candidate == self.scenario
            and self._options() == {k: self.live.options.get(k) for k in self._options()}
        ):
            return
        old_options = dict(self.live.options)
        self.live.options.update(self._options())
        try:
            self.live.update(candidate)
            picture = self.live.jpeg()
            text = self._readout_html(candidate)
        except RooflineError as err:
            self._error(err)
            self.live.options = old_options
            self.live.update(self.scenario)  # keep the figure consistent with the last valid state
            return
        fields = ("gpu", "num_gpus", "weight_precision")
        menus_changed = any(getattr(candidate, f) != getattr(self.scenario, f) for f in fields)
        self.scenario = candidate
        self.message.value = f'<p class="roofline-warn"><b>Note:</b> {html.escape(note)}</p>' if note else ""
        self.image.value = picture
        self.alt.value = self._alt_html()
        self.image.remove_class("roofline-stale")
        self._stale = False
        self.readout.value = text
        if menus_changed or note:
            self._refresh_menus()
            self._quiet = True
            try:  # controls the explorer moved itself (G raised, a precision the new GPU has)
                for field in ("num_gpus", "weight_precision"):
                    if note and field in self.controls:
                        self.controls[field].value = getattr(candidate, field)
            finally:
                self._quiet = False

    def _follow_gpu_engine(self, candidate: Scenario) -> None:
        """On a new GPU, move the engine menu to the engine people run there, unless the learner chose
        another engine than the old GPU's usual one."""
        menu = self.knobs.get("engine")
        if menu is None or candidate.gpu == self.scenario.gpu or self._engine_from_code:
            return
        new = engines.default_engine(candidate.gpu)
        if menu.value == engines.default_engine(self.scenario.gpu) and new != menu.value:
            quiet, self._quiet = self._quiet, True
            try:
                menu.value = new
            finally:
                self._quiet = quiet

    def _error(self, err: Exception) -> None:
        """Say why the choice is not possible; grey out the figure (it still shows the last possible
        choice) and take the numbers away, so no stale number sits under the message."""
        self.message.value = f'<p class="roofline-error"><b>Not possible:</b> {html.escape(str(err))}</p>'
        self.image.add_class("roofline-stale")
        self._stale = True
        self.readout.value = (
            '<div class="roofline-stale-note">No numbers for this choice (see the message above). The '
            "greyed figure still shows the last possible one; change a control to go on.</div>"
        )


def _set_options(menu: W.Dropdown, labelled: list[tuple[str, object]]) -> None:
    """Relabel a dropdown's options, keeping its value (no-op when nothing changed)."""
    if list(menu.options) != labelled:
        value, menu.options = menu.value, labelled
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
    """A folded answer: "predict, then check" questions show it only when the reader opens it; plain HTML,
    readable even before the notebook runs.

    >>> Reveal("Answer", "<p>4.8 ms</p>")._repr_html_()
    '<details class="roofline-reveal"><summary><b>Answer</b></summary><p>4.8 ms</p></details>'
    """

    def __init__(self, summary: str, body_html: str):
        self.summary, self.body_html = summary, body_html

    def _repr_html_(self) -> str:
        return (
            f'<details class="roofline-reveal"><summary><b>{html.escape(self.summary)}</b></summary>'
            f"{self.body_html}</details>"
        )

    def __repr__(self) -> str:
        return f"<Reveal: {self.summary}>"


class Prediction(W.VBox):
    """Predict, then check: a box for the learner's prediction and a button that opens the answer only
    once the box holds one (the answer is not in the page before). With ``setup=(explorer, settings)`` or
    ``(explorer, settings, label)`` a "set up this question" button comes first (``Explorer.setup_button``).
    Unrun, a front end without widgets shows the folded answer (``Reveal``) instead.

    >>> p = Prediction("Check your prediction", "<p>4.8 ms</p>")
    >>> p.open_button.disabled, "4.8 ms" in p.answer.value
    (True, False)
    >>> p.box.value = "about 5 ms"; p.open_button.disabled
    False
    >>> p.open_button.click(); "4.8 ms" in p.answer.value and "about 5 ms" in p.answer.value
    True
    """

    def __init__(
        self, summary: str = "Check your prediction", body_html: str = "", setup: tuple | None = None
    ):
        self.summary, self.body_html = summary, body_html
        self.box = W.Textarea(
            placeholder="Your prediction first (a number, a direction, a sentence)",
            rows=1,
            layout=W.Layout(width="30em", max_width="100%"),
        )
        self.box.add_class("roofline-prediction")
        self.open_button = W.Button(
            description=summary, icon="eye", disabled=True, tooltip="Write your prediction first",
            layout=W.Layout(width="auto"),
        )  # fmt: skip
        self.open_button.add_class("roofline-open-answer")
        # A closed, empty fold until the answer opens (the presenter view finds a question's answer by it).
        self.answer = W.HTML(
            f'<details class="roofline-reveal"><summary><b>{html.escape(summary)}</b>: write your prediction '
            "above first</summary></details>"
        )
        self.answer.add_class("roofline-answer")
        self.box.observe(self._typed, names="value")
        self.open_button.on_click(lambda _: self.open_answer())
        row = W.HBox([self.box, self.open_button], layout=W.Layout(flex_flow="row wrap", grid_gap="6px"))
        button = [] if setup is None else [setup[0].setup_button(*setup[2:], **setup[1])]
        super().__init__([*button, row, self.answer])
        self.add_class("roofline-predict")

    def _typed(self, change) -> None:
        ready = bool(str(change["new"]).strip())
        self.open_button.disabled = not ready
        self.open_button.tooltip = "" if ready else "Write your prediction first"

    def open_answer(self) -> None:
        """Show the answer under the learner's prediction (only once a prediction is written)."""
        said = self.box.value.strip()
        if not said:
            return
        self.answer.value = (
            f'<details class="roofline-reveal" open><summary><b>{html.escape(self.summary)}</b></summary>'
            f"<p><i>Your prediction: {html.escape(said)}</i></p>{self.body_html}</details>"
        )

    def _ipython_display_(self) -> None:
        """The widget, then an empty folded-answer marker: the instructor app's presenter view pairs each
        question with its answer by ``details.roofline-reveal`` before the widgets have drawn."""
        from IPython.display import HTML, display

        display(self._repr_mimebundle_(), raw=True)
        display(HTML('<details class="roofline-reveal roofline-answer-marker" hidden></details>'))

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"{self.summary}: {PREDICTION_HINT}"
        bundle["text/html"] = Reveal(self.summary, self.body_html)._repr_html_()
        return bundle

    def __repr__(self) -> str:
        return f"<Prediction: {self.summary}>"
