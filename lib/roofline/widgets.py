"""Sliders and an explorer that connects them to a LiveFigure: each lesson's lab bench in a few lines.

    from roofline.widgets import Explorer
    from roofline.plots import StepTimeVsBatch
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

from .cost import cost_per_million_tokens_usd
from .data import gpus, models
from .errors import RooflineError
from .plots import LiveFigure, StepTimeVsBatch
from .precision import PRECISIONS
from .scenario import Scenario
from .units import GB, MS

BATCH_OPTIONS = [1, 2, 4, 8, 16, 20, 24, 30, 32, 48, 64, 96, 128, 192, 256, 300, 384, 512, 768, 1024]
CONTEXT_OPTIONS = [128, 256, 500, 1000, 2000, 4096, 8192, 16384, 32768, 65536, 131072]
PROMPT_OPTIONS = [16, 32, 64, 128, 256, 500, 1000, 2000, 4000, 8000, 16000, 32000]
GPU_COUNT_OPTIONS = [1, 2, 4, 8]

_STYLE = {"description_width": "11em"}
_LAYOUT = W.Layout(width="26em")


def _selection_slider(options, value, description):
    return W.SelectionSlider(options=options, value=value, description=description, style=_STYLE,
                             layout=_LAYOUT, continuous_update=True)


def _dropdown(options, value, description):
    return W.Dropdown(options=options, value=value, description=description, style=_STYLE, layout=_LAYOUT)


CONTROL_FACTORIES: dict[str, Callable] = {
    "model": lambda v: _dropdown(list(models()), v, "model"),
    "gpu": lambda v: _dropdown(list(gpus()), v, "GPU"),
    "num_gpus": lambda v: _dropdown(GPU_COUNT_OPTIONS, v, "GPUs (tensor parallel) G"),
    "weight_precision": lambda v: _dropdown(list(PRECISIONS), v, "weight precision"),
    "kv_precision": lambda v: _dropdown(["bf16", "fp16", "fp8", "int8", "int4"], v, "KV precision"),
    "batch": lambda v: _selection_slider(sorted(set(BATCH_OPTIONS) | {v}), v, "batch B (users)"),
    "context_tokens": lambda v: _selection_slider(sorted(set(CONTEXT_OPTIONS) | {v}), v,
                                                  "context T (tokens/user)"),
    "prompt_tokens": lambda v: _selection_slider(sorted(set(PROMPT_OPTIONS) | {v}), v, "prompt P (tokens)"),
    "usd_per_gpu_hour": lambda v: W.BoundedFloatText(value=v, min=0.01, max=100, step=0.1,
                                                     description="$ per GPU-hour", style=_STYLE, layout=_LAYOUT),
}


def control(field: str, value) -> W.Widget:
    """The standard widget for one ``Scenario`` field, set to ``value``."""
    if field not in CONTROL_FACTORIES:
        raise KeyError(f"No standard control for {field!r}; known: {', '.join(CONTROL_FACTORIES)}")
    return CONTROL_FACTORIES[field](value)


def decode_readout(s: Scenario) -> str:
    """HTML table of the decode numbers for a scenario: what the explorers print beside their figure."""
    step = s.decode()
    rows = [("memory needed", f"{step.memory_needed_bytes / GB:.1f} GB of {step.memory_capacity_bytes / GB:.0f} GB")]
    if not step.fits:
        rows.append(("step time", "does not fit in memory: no step time"))
    else:
        cost = cost_per_million_tokens_usd(s.usd_per_gpu_hour, step.tokens_per_s_total, s.num_gpus)
        rows += [
            ("step time", f"{step.step_time_s / MS:.2f} ms ({step.binding}-bound)"),
            ("memory / compute time", f"{step.memory_time_s / MS:.2f} ms / {step.compute_time_s / MS:.2f} ms"),
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
    controls : ``Scenario`` field names to put sliders/dropdowns on, in order.
    scenario : starting values (the lesson's worked example).
    readout : function Scenario -> HTML shown beside the figure (``decode_readout`` by default; None hides it).
    """

    def __init__(self, figure=StepTimeVsBatch, controls: Sequence[str] = ("batch", "context_tokens"),
                 scenario: Scenario | None = None, readout: Callable[[Scenario], str] | None = decode_readout):
        self.scenario = scenario or Scenario()
        self.live = figure if isinstance(figure, LiveFigure) else figure(self.scenario)
        self.readout_fn = readout
        self.controls = {name: control(name, getattr(self.scenario, name)) for name in controls}
        self.image = W.Image(format="jpeg", value=jpeg(self.live), layout=W.Layout(width="900px", max_width="100%"))
        self.readout = W.HTML(readout(self.scenario) if readout else "")
        self.message = W.HTML("")
        self.last_update_s = 0.0
        for name, widget in self.controls.items():
            widget.observe(lambda change, name=name: self._changed(name, change["new"]), names="value")
        grid = W.GridBox(list(self.controls.values()),
                         layout=W.Layout(grid_template_columns="repeat(2, 27em)", grid_gap="2px 12px"))
        super().__init__([grid, self.message, W.HBox([self.image, self.readout])])
        self.add_class("roofline-explorer")

    def __repr__(self) -> str:  # the default repr would print the whole picture's bytes
        return f"<Explorer {type(self.live).__name__}: {', '.join(self.controls)}>"

    def set(self, **values) -> None:
        """Move controls from code (tests, benchmarks, a demo script): same path as a slider move."""
        for name, value in values.items():
            self.controls[name].value = value

    def _changed(self, name: str, value) -> None:
        start = time.perf_counter()
        candidate = self.scenario.with_(**{name: value})
        try:
            self.live.update(candidate)
            picture = jpeg(self.live)
            text = self.readout_fn(candidate) if self.readout_fn else ""
        except RooflineError as err:
            self.message.value = f'<p style="color:#b00020;font-size:15px"><b>Not possible:</b> {html.escape(str(err))}</p>'
            self.live.update(self.scenario)  # keep the figure consistent with the last valid scenario
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
        return (f'<details class="roofline-reveal"><summary><b>{html.escape(self.summary)}</b></summary>'
                f"{self.body_html}</details>")

    def __repr__(self) -> str:
        return f"<Reveal: {self.summary}>"
