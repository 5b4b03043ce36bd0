"""The course's figure machinery: one plot style, and figures built once and updated in place.

Every lesson figure is a ``LiveFigure``: ``update(scenario)`` recomputes the physics and moves the existing
artists instead of building a new figure, which keeps a slider move fast. It shows itself as a PNG with its
alt text in a notebook; ``roofline.course.widgets.Explorer`` puts it behind sliders. Wherever a
configuration does not fit in memory, a figure shades that region and says so.

>>> from roofline.lessons.step_time import StepTimeVsBatch
>>> fig = StepTimeVsBatch(Scenario(batch=32))
>>> fig
<StepTimeVsBatch: llama-3-8b on 1x h100-sxm, bf16 weights, bf16 KV, B=32, T=1000>
>>> fig.update(Scenario(batch=64, context_tokens=4096)); len(fig.png()) > 5_000
True
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
from PIL import Image

from roofline import engines
from roofline.errors import RooflineError
from roofline.scenario import Scenario

STYLE_PATH = Path(__file__).with_name("course.mplstyle")

COLORS = {
    "weights": "#0072B2",
    "kv": "#E69F00",
    "compute": "#009E73",
    "step": "#000000",
    "prefill": "#D55E00",
    "decode": "#0072B2",
    "capacity": "#CC79A7",
    "overflow": "#999999",
}

# The smallest text a course figure draws (pt): 15.3 px at 100 dpi, 11.5 px on screen at the 3/4 size an
# explorer shows a figure at beside its readout. LiveFigure raises any smaller text to it.
MIN_TEXT_PT = 11.0

# Batch sizes every batch sweep evaluates (1 … 1024, log-spaced integers), and an x axis that shows them all.
BATCH_SWEEP = np.unique(np.round(np.geomspace(1, 1024, 160)).astype(int))
BATCH_AXIS = dict(xscale="log", xlim=(1, BATCH_SWEEP[-1] * 1.05))
LOG_LOG = dict(xscale="log", yscale="log")  # both axes logarithmic (set before any limits)
# Colours of a family of lines, one per model, precision or rate (Okabe-Ito, colour-blind safe), black first.
PALETTE = ["#000000", "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#999999"]


def new_figure(ncols: int = 1, figsize=(9, 4.5), nrows: int = 1) -> tuple[Figure, list]:
    """A figure of ``nrows`` × ``ncols`` panels (listed row by row), ``figsize`` in inches, in the course
    style, outside pyplot's registry (so notebooks show it only when asked).

    >>> fig, axes = new_figure(2); len(axes)
    2
    """
    with plt.style.context(STYLE_PATH):
        fig = Figure(figsize=figsize, dpi=100, layout="constrained")
        FigureCanvasAgg(fig)
        axes = [fig.add_subplot(nrows, ncols, i + 1) for i in range(nrows * ncols)]
    return fig, axes


def _encode(image: Image.Image, image_format: str) -> bytes:
    """``image`` as JPEG (an explorer's picture: about 3 ms to encode against 15-20 ms for PNG) or as a
    128-colour palette PNG (a stored figure: the same picture, as the plots use a few flat colours and
    their anti-aliasing, in a third of the bytes)."""
    buf = io.BytesIO()
    image = image.convert("RGB")
    if image_format == "png":
        image = image.quantize(128, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    image.save(buf, format=image_format, **({"quality": 92} if image_format == "jpeg" else {}))
    return buf.getvalue()


def plain_log_ticks(axis) -> None:
    """Label a log axis (``ax.xaxis`` or ``ax.yaxis``) in plain numbers at 1, 2 and 5 of each decade (… 10,
    20, 50, 100 …) and leave its minor ticks unlabelled, instead of matplotlib's 6×10¹ and 3×10¹.

    >>> fig, axes = new_figure()
    >>> axes[0].set(yscale="log", ylim=(3, 80)); plain_log_ticks(axes[0].yaxis)
    [...]
    >>> axes[0].yaxis.get_major_formatter()(20, 0)
    '20'
    """
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def nice_limits(values, log: bool) -> tuple[float, float]:
    """Axis limits that change only in coarse steps (decades for log axes; 1-1.5-2-3-4-5-6-8 steps of the
    leading digit, with 15% headroom, for linear ones), so most slider moves leave the axes, and the cached
    background, unchanged. Non-finite values (memory overflow) are ignored.

    >>> nice_limits([4.8, 6.05, np.nan], log=True)
    (1.0, 10.0)
    >>> nice_limits([209, 165], log=False)
    (0.0, 300.0)
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & ((v > 0) if log else np.ones_like(v, bool))]
    if v.size == 0:
        return (1.0, 10.0) if log else (0.0, 1.0)
    if log:
        lo, hi = 10 ** np.floor(np.log10(v.min())), 10 ** np.ceil(np.log10(v.max()) + 1e-9)
        return float(lo), float(max(hi, lo * 10))
    top = v.max() * 1.15
    if top <= 0:
        return 0.0, 1.0
    step = 10 ** np.floor(np.log10(top))
    return 0.0, float(next(m for m in (1, 1.5, 2, 3, 4, 5, 6, 8, 10) if m * step >= top) * step)


def engine_sweep_s(s: Scenario, engine: str | None = None) -> np.ndarray:
    """What ``engine`` (default: the one people run on the GPU, ``roofline.engines.default_engine``) takes
    per decode step of the scenario at each batch of ``BATCH_SWEEP`` (s); NaN where it cannot say.

    >>> bool(engine_sweep_s(Scenario())[0] > Scenario().decode().step_time_s)
    True
    """
    try:
        timer = engines.StepTimer.of(s, engine or engines.default_engine(s.gpu))
        return engines.decode_step_times(timer, BATCH_SWEEP, s.context_tokens)["total"]
    except RooflineError:
        return np.full(BATCH_SWEEP.shape, np.nan)


def describe(s: Scenario) -> str:
    """A one-line title for a scenario.

    >>> describe(Scenario())
    'llama-3-8b on 1x h100-sxm, bf16 weights, bf16 KV'
    """
    return f"{s.model} on {s.num_gpus}x {s.gpu}, {s.weight_precision} weights, {s.kv_precision} KV"


def _texts(fig: Figure) -> list:
    return fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"), include_self=False)


def raise_small_text(fig: Figure, min_pt: float = MIN_TEXT_PT) -> None:
    """Raise every text of ``fig`` smaller than ``min_pt`` (pt) to it: readable on a laptop and a projector.

    >>> fig, (ax,) = new_figure(); t = ax.text(0, 0, "note", fontsize=8); raise_small_text(fig)
    >>> t.get_fontsize()
    11.0
    """
    for t in _texts(fig):
        if t.get_fontsize() < min_pt:
            t.set_fontsize(min_pt)


def smallest_text_px(figure) -> float:
    """The smallest text the picture holds (tick labels, legends, notes, titles: every visible, non-empty
    text), in the picture's own pixels; multiplied by the shown width ÷ the picture's width it is the
    smallest text on screen. ``figure`` is a ``LiveFigure`` or a matplotlib ``Figure``.

    >>> from roofline.lessons.step_time import StepTimeVsBatch
    >>> round(smallest_text_px(StepTimeVsBatch(Scenario(batch=32))), 1)    # 11 pt at 100 dpi
    15.3
    """
    fig = figure.fig if isinstance(figure, LiveFigure) else figure
    sizes = [t.get_fontsize() for t in _texts(fig) if t.get_visible() and t.get_text().strip()]
    return min(sizes, default=0.0) * fig.dpi / 72


def alt_text(figure) -> str:
    """A figure described in words for a screen reader (its alt text): the kind of figure, its title(s),
    each panel's title and axes, and the scenario it shows. Built from the figure itself, so it says what
    the picture says after every redraw. ``figure`` is a ``LiveFigure`` or a matplotlib ``Figure``.

    >>> from roofline.lessons.step_time import StepTimeVsBatch
    >>> alt_text(StepTimeVsBatch(Scenario(batch=32))).startswith("Figure (StepTimeVsBatch):")
    True
    """
    live = isinstance(figure, LiveFigure)
    fig = figure.fig if live else figure
    parts = [fig.get_suptitle()]
    for ax in fig.axes:
        bits = [ax.get_title()]
        x, y = ax.get_xlabel(), ax.get_ylabel()
        if x or y:
            bits.append(f"{y or 'value'} against {x or 'position'}")
        legend = ax.get_legend()
        if legend is not None:
            bits.append("lines: " + "; ".join(t.get_text() for t in legend.get_texts()))
        parts.append(", ".join(b for b in bits if b))
    text = ". ".join(p for p in parts if p)
    if live:
        s = figure.scenario
        text += f". Shows {describe(s)}, B={s.batch}, T={s.context_tokens:,}"
    return f"Figure ({type(figure).__name__ if live else 'figure'}): {text}."


def png_html(png_bytes: bytes, alt: str) -> str:
    """An ``<img>`` of PNG bytes with its alt text: how a figure shows itself in a notebook, so the saved
    notebook carries the description too.

    >>> png_html(b"png", "a figure")
    '<img alt="a figure" src="data:image/png;base64,cG5n"/>'
    """
    data = base64.b64encode(png_bytes).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"/>'


class LiveFigure:
    """Base class for the course's figures, drawn in place.

    Subclasses implement ``_build`` (axes, static labels, and the artists that move, created with
    ``animated=True``) and ``_draw(scenario)`` (set the moving artists' data and the axis limits). The
    static background (axes, ticks, labels, legend) is drawn once and cached; a slider move redraws only
    the moving artists on top of it, unless the limits or titles changed.
    """

    min_text_pt = MIN_TEXT_PT  # a figure drawn wider than the course's 900 px, so shown smaller, sets more

    ncols = 1
    # Subclasses whose static artists depend on the scenario set this in ``_draw``; a new value redraws
    # the cached background.
    background_key = None

    def __init__(self, scenario: Scenario | None = None, **options):
        self.options = options
        self.scenario = scenario or Scenario()
        self.fig, self.axes = new_figure(self.ncols)
        self._transient: list = []  # artists rebuilt on every update (labels, overflow shading)
        self._background = self._background_key = None
        self._pinned: list = []  # grey copies of the curves at a pinned baseline (part of the background)
        self._pin_version = 0
        with plt.style.context(STYLE_PATH):
            self._build()
            for ax in self.axes:
                ax.minorticks_off()  # minor log ticks double the draw time and add little
            self.update(self.scenario)
        # Lay out once with constrained layout, then freeze it: layout costs a second draw per render.
        self.fig.canvas.draw()
        self.fig.set_layout_engine("none")

    def update(self, scenario: Scenario) -> None:
        """Recompute for ``scenario`` and move the existing artists (nothing is rendered yet)."""
        self.scenario = scenario
        for artist in self._transient:
            artist.remove()
        self._transient = []
        with plt.style.context(STYLE_PATH):
            self._draw(scenario)
        raise_small_text(self.fig, self.min_text_pt)

    def render(self) -> None:
        """Draw into the canvas: the cached background if still valid, then the moving artists."""
        canvas = self.fig.canvas
        key = self._layout_key()
        if key != self._background_key:
            canvas.draw()  # animated artists are skipped: this is the background
            self._background = canvas.copy_from_bbox(self.fig.bbox)
            self._background_key = key
        else:
            canvas.restore_region(self._background)
        for ax in self.axes:
            for artist in sorted((a for a in ax.get_children() if a.get_animated()), key=lambda a: a.zorder):
                ax.draw_artist(artist)

    def png(self) -> bytes:
        """The figure as PNG bytes."""
        return self._encoded("png")

    def jpeg(self) -> bytes:
        """The figure as JPEG bytes (an explorer's picture)."""
        return self._encoded("jpeg")

    def _encoded(self, image_format: str) -> bytes:
        self.render()
        width, height = self.fig.canvas.get_width_height()
        image = Image.frombuffer("RGBA", (width, height), self.fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        return _encode(image, image_format)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """In a notebook: the picture with its alt text (``alt_text``), and the short text form. (No
        ``_repr_png_``: IPython would store the picture a second time beside the HTML.)"""
        return {"text/html": png_html(self.png(), alt_text(self)), "text/plain": repr(self)}

    def __repr__(self) -> str:
        s = self.scenario
        return f"<{type(self).__name__}: {describe(s)}, B={s.batch}, T={s.context_tokens}>"

    def pin(self) -> None:
        """Keep the current curves as a grey baseline (drawn once, into the cached background), labelled
        with the scenario they show, to compare the next moves against.

        >>> from roofline.lessons.step_time import StepTimeVsBatch
        >>> f = StepTimeVsBatch(Scenario()); f.pin(); len(f._pinned) > 0
        True
        >>> f.unpin(); f._pinned
        []
        """
        self.unpin()
        for ax in self.axes:
            for line in ax.get_lines():
                x, y = (np.asarray(v, dtype=float) for v in line.get_data())
                if line.get_animated() and x.size > 2:  # curves, not markers
                    (copy,) = ax.plot(x, y, color="#9a9a9a", lw=2.2, ls="-", alpha=0.55, zorder=1)
                    self._pinned.append(copy)
        if self._pinned:
            s = self.scenario
            text = f"grey: pinned {describe(s)}, B={s.batch}, T={s.context_tokens:,}"
            self._pinned.append(
                self.axes[-1].text(0.99, 0.02, text, transform=self.axes[-1].transAxes, ha="right",
                                   fontsize=10, color="#777777")
            )  # fmt: skip
        self._pin_version += 1

    def unpin(self) -> None:
        """Remove the pinned baseline."""
        for artist in self._pinned:
            artist.remove()
        self._pinned = []
        self._pin_version += 1

    def _layout_key(self):
        parts = [self.background_key, self._pin_version, self.fig.get_suptitle()]
        for ax in self.axes:
            legend = ax.get_legend()
            texts = tuple(t.get_text() for t in legend.get_texts()) if legend else ()
            parts += [ax.get_xlim(), ax.get_ylim(), ax.get_title(), texts]
        return tuple(parts)

    # helpers for subclasses
    def _transient_artist(self, artist):
        self._transient.append(artist)
        return self._moving(artist)

    def _note(self, ax, text, xy, offset, **style):
        """Write ``text`` ``offset`` points away from the point ``xy`` of ``ax``, until the next update
        (``style``: ``ax.annotate``'s)."""
        return self._transient_artist(
            ax.annotate(text, xy, xytext=offset, textcoords="offset points", **style)
        )

    def _shade(self, ax, x0, x1, text, x_text, **style):
        """Grey out ``x0`` ≤ x ≤ ``x1`` on ``ax`` and write ``text`` at ``x_text``, half-way up (``style``:
        the text's look): the configurations that do not fit in memory."""
        self._transient_artist(ax.axvspan(x0, x1, color=COLORS["overflow"], alpha=0.25, lw=0))
        style = dict(transform=ax.get_xaxis_transform(), fontsize=11, color="#444444") | style
        self._transient_artist(ax.text(x_text, 0.5, text, **style))

    def _shade_overflow(self, ax, first_bad, last=BATCH_SWEEP[-1], label="does not fit in memory"):
        """Grey out x ≥ ``first_bad`` (up to ``last``) on ``ax``, labelled upright; nothing if all fits."""
        if first_bad <= last:
            upright = dict(rotation=90, va="center", ha="left")
            self._shade(ax, first_bad, last * 1.05, label, first_bad * 1.08, **upright)

    def _no_fit(self, ax, text, shade=True, at=(0.5, 0.5), **style):
        """Write ``text`` centred at ``at`` (axes fractions) on ``ax``, greyed out all across unless ``shade``
        is False (``style``: the text's look): a figure with nothing to draw, as nothing fits in memory."""
        for scale, limits, set_limits in (
            (ax.get_xscale, ax.get_xlim, ax.set_xlim),
            (ax.get_yscale, ax.get_ylim, ax.set_ylim),
        ):
            if scale() == "log" and min(limits()) <= 0:  # a log axis that never had data: give it a decade
                set_limits(1, 10)
        if shade:
            self._transient_artist(ax.axvspan(*ax.get_xlim(), color=COLORS["overflow"], alpha=0.25, lw=0))
        style = dict(transform=ax.transAxes, ha="center", va="center", fontsize=12, color="#444444") | style
        self._transient_artist(ax.text(*at, text, **style))

    @staticmethod
    def _mark(marker, shown, x, y) -> bool:
        """Put ``marker`` at the points ``x``, ``y`` (lists) if ``shown`` (the scenario fits), else hide it;
        returns ``shown``."""
        marker.set_data(x if shown else [], y if shown else [])
        return bool(shown)

    @staticmethod
    def _moving(artist):
        artist.set_animated(True)
        return artist

    def _engine(self, s: Scenario) -> str:
        """The engine the figure shows: ``options["engine"]`` (an explorer's engine menu), else the one
        people run on the scenario's GPU (``roofline.engines.default_engine``)."""
        return engines.get_engine(self.options.get("engine") or engines.default_engine(s.gpu)).id

    def _line(self, ax, *fmt, **style):
        """A line on ``ax``, without data yet, that moves on every update (``fmt``, ``style``: as plot's)."""
        return self._moving(ax.plot([], [], *fmt, **style)[0])


class TwoPanelsVsBatch(LiveFigure):
    """Two quantities against batch, side by side (left on a log scale), the scenario's batch marked: the
    ideal floor (solid) and what a good engine reaches (dash-dot).

    Subclasses set ``panels`` ((y label, title, colour) for left and right) and implement ``_curves``
    (the two sweeps), ``_real_curves`` (the same two from the engine's step times, s), ``_points`` (value
    and label at the scenario's batch) and ``_suptitle``.
    """

    ncols = 2
    panels: tuple = ()

    def _build(self):
        self.curves, self.real = [], []
        for ax, (ylabel, title, color) in zip(self.axes, self.panels, strict=True):
            self.curves.append(self._line(ax, color=color, label="ideal (floor)"))
            self.real.append(self._line(ax, color=color, ls="-.", lw=2, label="a good engine"))
            ax.set(xlabel="batch B", ylabel=ylabel, title=title, **BATCH_AXIS)
        self.markers = [self._line(ax, "o", color="black", zorder=5) for ax in self.axes]
        self.axes[0].set_yscale("log")
        self.axes[1].legend(loc="upper right", fontsize=10)

    def _draw(self, s):
        engine = self._engine(s)
        ideal = self._curves(s, s.decode(batch=BATCH_SWEEP))
        real = self._real_curves(s, engine_sweep_s(s, engine))
        for line in self.real:
            line.set_label(f"a good engine ({engine})")
        self.axes[1].legend(loc="upper right", fontsize=10)
        for i, (ax, curve, real_curve) in enumerate(zip(self.axes, self.curves, self.real, strict=True)):
            curve.set_data(BATCH_SWEEP, ideal[i])
            real_curve.set_data(BATCH_SWEEP, real[i])
            ax.set_ylim(nice_limits(np.concatenate([ideal[i], real[i]]), log=i == 0))
        here = s.decode()
        points = self._points(s, here) if here.fits else (None, None)
        ha = "right" if s.batch > 64 else "left"
        for ax, marker, point in zip(self.axes, self.markers, points, strict=True):
            value, label = point or (None, None)
            if self._mark(marker, point is not None, [s.batch], [value]):
                self._note(ax, label, (s.batch, value), (8, 8), fontsize=12, ha=ha)
            self._shade_overflow(ax, s.users_that_fit() + 1)
        self.fig.suptitle(self._suptitle(s), fontsize=12)


class Picture:
    """A rendered figure that shows as a PNG image with alt text in a notebook, with a short, stable text
    form (for nbval). Its text is raised to the course's smallest size first (``MIN_TEXT_PT``), as a live
    figure's is.

    >>> fig, (ax,) = new_figure()
    >>> _ = ax.legend(handles=[ax.plot([1, 2], label="a")[0]], fontsize=7)
    >>> round(smallest_text_px(fig), 1), Picture(fig).name, round(smallest_text_px(fig), 1)
    (9.7, 'figure', 15.3)
    """

    def __init__(self, fig: Figure, name: str = "figure"):
        raise_small_text(fig)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        self.png_bytes, self.name = _encode(Image.open(buf), "png"), name
        self.alt = alt_text(fig).replace("Figure (figure):", f"Figure ({name}):", 1)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """In a notebook: the picture with its alt text, and the short text form."""
        return {"text/html": png_html(self.png_bytes, self.alt), "text/plain": repr(self)}

    def __repr__(self) -> str:
        return f"<{self.name}>"


def show(fig: Figure, name: str = "figure") -> Picture:
    """Return a notebook-displayable picture of a plain (non-live) figure made with ``new_figure``."""
    return Picture(fig, name)
