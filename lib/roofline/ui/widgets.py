"""Sliders and an explorer that connects them to a LiveFigure: each lesson's lab bench in a few lines.

    from roofline.ui.widgets import Explorer
    from roofline.views.plots import StepTimeVsBatch
    Explorer(StepTimeVsBatch, controls=["batch", "context_tokens", "gpu"])

Every control sets one field of a ``Scenario``; on a change the explorer recomputes the physics, moves the
figure's artists in place and swaps the picture (JPEG, fast to encode), and refreshes a readout of the
numbers. An impossible choice (FP8 on an A100, a model that does not fit) shows the library's error in
the readout instead of a figure with nonsense in it.

>>> ex = Explorer(StepTimeVsBatch, controls=["batch"], scenario=Scenario(batch=32))
>>> ex
<Explorer StepTimeVsBatch: batch>
>>> ex.set(batch=64); ex.scenario.batch
64
>>> "15.05 ms" in decode_readout(Scenario(batch=64, context_tokens=4096))
True
"""

from __future__ import annotations

import html
import io
import time
from collections.abc import Callable, Sequence

import ipywidgets as W
from PIL import Image

from roofline.data import gpus, models
from roofline.errors import RooflineError
from roofline.lessons.scenario import Scenario
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.physics.precision import PRECISIONS
from roofline.units import GB, MS
from roofline.views.plots import LiveFigure, StepTimeVsBatch

BATCH_OPTIONS = [1, 2, 4, 8, 16, 20, 24, 30, 32, 48, 64, 96, 128, 192, 256, 300, 384, 512, 768, 1024]
CONTEXT_OPTIONS = [128, 256, 500, 1000, 2000, 4096, 8192, 16384, 32768, 65536, 131072]
PROMPT_OPTIONS = [16, 32, 64, 128, 256, 500, 1000, 2000, 4000, 8000, 16000, 32000]
GPU_COUNT_OPTIONS = [1, 2, 4, 8]

_STYLE = {"description_width": "14em"}
_LAYOUT = W.Layout(width="30em")


def _selection_slider(options, value, description):
    return W.SelectionSlider(
        options=options,
        value=value,
        description=description,
        style=_STYLE,
        layout=_LAYOUT,
        continuous_update=True,
    )


def _dropdown(options, value, description):
    return W.Dropdown(options=options, value=value, description=description, style=_STYLE, layout=_LAYOUT)


CONTROL_FACTORIES: dict[str, Callable] = {
    "model": lambda v: _dropdown(list(models()), v, "model"),
    "gpu": lambda v: _dropdown(list(gpus()), v, "GPU"),
    "num_gpus": lambda v: _dropdown(GPU_COUNT_OPTIONS, v, "GPUs (tensor parallel) G"),
    "weight_precision": lambda v: _dropdown(list(PRECISIONS), v, "weight precision"),
    "kv_precision": lambda v: _dropdown(["bf16", "fp16", "fp8", "int8", "int4"], v, "KV precision"),
    "batch": lambda v: _selection_slider(sorted(set(BATCH_OPTIONS) | {v}), v, "batch B (users)"),
    "context_tokens": lambda v: _selection_slider(
        sorted(set(CONTEXT_OPTIONS) | {v}), v, "context T (tokens/user)"
    ),
    "prompt_tokens": lambda v: _selection_slider(sorted(set(PROMPT_OPTIONS) | {v}), v, "prompt P (tokens)"),
    "usd_per_gpu_hour": lambda v: W.BoundedFloatText(
        value=v, min=0.01, max=100, step=0.1, description="$ per GPU-hour", style=_STYLE, layout=_LAYOUT
    ),
}


def control(field: str, value) -> W.Widget:
    """The standard widget for one ``Scenario`` field, set to ``value``."""
    if field not in CONTROL_FACTORIES:
        raise KeyError(f"No standard control for {field!r}; known: {', '.join(CONTROL_FACTORIES)}")
    return CONTROL_FACTORIES[field](value)


def decode_readout(s: Scenario, options: dict | None = None) -> str:
    """HTML table of the decode numbers for a scenario: what the explorers print beside their figure.
    (``options``, the figure options of an explorer with knobs, are not needed here.)"""
    step = s.decode()
    rows = [
        (
            "memory needed",
            f"{step.memory_needed_bytes / GB:.1f} GB of {step.memory_capacity_bytes / GB:.0f} GB",
        )
    ]
    if not step.fits:
        rows.append(("step time", "does not fit in memory: no step time"))
    else:
        cost = cost_per_million_tokens_usd(s.usd_per_gpu_hour, step.tokens_per_s_total, s.num_gpus)
        rows += [
            ("step time", f"{step.step_time_s / MS:.2f} ms ({step.binding}-bound)"),
            (
                "memory / compute time",
                f"{step.memory_time_s / MS:.2f} ms / {step.compute_time_s / MS:.2f} ms",
            ),
            ("tokens/s per user", f"{step.tokens_per_s_per_user:,.0f}"),
            ("tokens/s total", f"{step.tokens_per_s_total:,.0f}"),
            ("cost per 1M tokens", f"${cost:.2f}"),
        ]
    return table_html(rows)


def table_html(rows: Sequence[tuple[str, str]]) -> str:
    """A two-column table; each value cell carries ``data-key`` so browser tests can read it."""
    body = "".join(
        f'<tr><td style="padding-right:1em">{html.escape(k)}</td>'
        f'<td data-key="{html.escape(k)}"><b>{html.escape(v)}</b></td></tr>'
        for k, v in rows
    )
    return f'<table class="roofline-readout" style="font-size:15px">{body}</table>'


def jpeg(live: LiveFigure, quality: int = 92) -> bytes:
    """Render a LiveFigure as JPEG: about 3 ms to encode against 15-20 ms for PNG at this size."""
    live.render()
    fig = live.fig
    width, height = fig.canvas.get_width_height()
    img = Image.frombuffer("RGBA", (width, height), fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="jpeg", quality=quality)
    return buf.getvalue()


class Explorer(W.VBox):
    """Controls + a LiveFigure + a readout, updated in place on every change.

    Parameters
    ----------
    figure : a LiveFigure subclass (or instance) to draw.
    controls : ``Scenario`` fields to put controls on, in order: a field name gets the standard widget;
        a ``(name, widget)`` pair brings its own (e.g. a field of a Scenario subclass, like a chunk size).
    scenario : starting values (the lesson's worked example).
    readout : function -> HTML shown beside the figure (``decode_readout`` by default; None hides it).
        Called as ``readout(scenario)``, or ``readout(scenario, options)`` when there are knobs.
    knobs : ``{name: widget}`` for settings that are not ``Scenario`` fields (kernels per step, all-reduces
        on/off, ...). Their values become the figure's ``options`` (the figure is built with them).
    to_options : converts the knob values (a dict) into figure options, e.g. µs into s. Default: as they are.

    >>> ex = Explorer(StepTimeVsBatch, controls=["batch"], knobs={"note": W.Checkbox(value=True)})
    >>> ex.set(note=False, batch=64); ex.live.options["note"], ex.scenario.batch
    (False, 64)
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
    ):
        self.scenario = scenario or Scenario()
        self.knobs = dict(knobs or {})
        self.to_options = to_options or dict
        self.controls = {}
        for item in controls:
            name, widget = (
                item if isinstance(item, tuple) else (item, control(item, getattr(self.scenario, item)))
            )
            self.controls[name] = widget
        for widget in [*self.knobs.values(), *self.controls.values()]:
            widget.layout.width = _LAYOUT.width
            if not isinstance(widget, W.Checkbox):  # a checkbox's label sits to its right, unindented
                widget.style.description_width = _STYLE["description_width"]
        options = self._options()
        self.live = figure if isinstance(figure, LiveFigure) else figure(self.scenario, **options)
        self.live.options.update(options)
        self.readout_fn = readout
        self.image = W.Image(
            format="jpeg", value=jpeg(self.live), layout=W.Layout(width="900px", max_width="100%")
        )
        self.readout = W.HTML(self._readout_html(self.scenario))
        self.message = W.HTML("")
        self.last_update_s = 0.0
        for widget in [*self.controls.values(), *self.knobs.values()]:
            widget.observe(lambda change: self._changed(), names="value")
        grid = W.GridBox(
            [*self.controls.values(), *self.knobs.values()],
            layout=W.Layout(grid_template_columns="repeat(2, 31em)", grid_gap="2px 12px"),
        )
        super().__init__([grid, self.message, W.HBox([self.image, self.readout])])
        self.add_class("roofline-explorer")

    def __repr__(self) -> str:  # the default repr would print the whole picture's bytes
        return f"<Explorer {type(self.live).__name__}: {', '.join([*self.controls, *self.knobs])}>"

    def set(self, **values) -> None:
        """Move controls or knobs from code (tests, benchmarks, a demo script): same path as a slider move."""
        for name, value in values.items():
            (self.knobs[name] if name in self.knobs else self.controls[name]).value = value

    def _options(self) -> dict:
        return dict(self.to_options({name: w.value for name, w in self.knobs.items()}))

    def _readout_html(self, scenario: Scenario) -> str:
        if not self.readout_fn:
            return ""
        return self.readout_fn(scenario, self.live.options) if self.knobs else self.readout_fn(scenario)

    def _changed(self) -> None:
        start = time.perf_counter()
        candidate = self.scenario.with_(**{name: w.value for name, w in self.controls.items()})
        old_options = dict(self.live.options)
        self.live.options.update(self._options())
        try:
            self.live.update(candidate)
            picture = jpeg(self.live)
            text = self._readout_html(candidate)
        except RooflineError as err:
            self.message.value = (
                f'<p style="color:#b00020;font-size:15px"><b>Not possible:</b> {html.escape(str(err))}</p>'
            )
            self.live.options = old_options
            self.live.update(self.scenario)  # keep the figure consistent with the last valid state
            return
        self.scenario = candidate
        self.message.value = ""
        self.image.value = picture
        self.readout.value = text
        self.last_update_s = time.perf_counter() - start


class Reveal:
    """A folded answer: "predict, then check" questions show it only when the reader opens it.

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
