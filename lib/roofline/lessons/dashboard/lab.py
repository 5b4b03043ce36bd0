"""The figures, readouts and explorer of lesson 59, taught in notebooks/59_dashboard.ipynb."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from matplotlib.layout_engine import PlaceHolderLayoutEngine
from matplotlib.patches import Rectangle

from roofline.course.figures import COLORS, LiveFigure
from roofline.course.readouts import (
    StepCase,
    case_readout_for,
    decode_case,
    fold,
    table_html,
)
from roofline.course.widgets import STEP, Explorer
from roofline.engines.registry import get_engine
from roofline.lessons.dashboard.numbers import (
    ANSWER_TOKENS,
    DEFAULT_TPOT_TARGET_S,
    DEFAULT_TTFT_TARGET_S,
    Dashboard,
    dashboard,
    diagnose,
)
from roofline.physics.architecture import weight_bytes
from roofline.physics.memory import memory_available_bytes
from roofline.scenario import Scenario
from roofline.units import GB, MS

# Latency gauges within / past their target: Okabe-Ito blue and vermillion (told apart with every kind of
# colour blindness), the second also hatched.
GAUGE_OK, GAUGE_OVER = "#0072B2", "#D55E00"


class DashboardFigure(LiveFigure):
    """The serving dashboard as a grid of eight panels: a big number, a line of context and a gauge each.

    A latency gauge past its target turns from blue to vermillion and is hatched (colour-blind safe: the
    Okabe-Ito pair, and a pattern that needs no colour at all).
    """

    # Drawn 1,100 px wide, it is shown as narrow as 766 px (a projector's 150 % on a 1280 px screen): 12 pt
    # is 16.7 px drawn and 11.6 px there.
    min_text_pt = 12.0

    def _build(self):
        fig = self.fig
        for ax in self.axes:
            ax.remove()
        fig.set_size_inches(11, 5)
        fig.set_layout_engine(PlaceHolderLayoutEngine(adjust_compatible=True, colorbar_gridspec=True))
        fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=0.86, hspace=0.35, wspace=0.08)
        self.axes = [fig.add_subplot(2, 4, i + 1) for i in range(8)]
        m = self._moving
        self.big, self.small, self.bars = {}, {}, {}
        for (key, title), ax in zip(PANELS.items(), self.axes, strict=True):
            ax.set(xlim=(0, 1), ylim=(0, 1))
            ax.axis("off")
            ax.set_title(title, fontsize=13)
            ax.add_patch(Rectangle((0.05, 0.08), 0.9, 0.13, color="#e6e6e6", lw=0))
            self.big[key] = m(ax.text(0.5, 0.62, "", ha="center", va="center", fontsize=24, weight="bold"))
            self.small[key] = m(
                ax.text(0.5, 0.34, "", ha="center", va="center", fontsize=10.5, color="#444444")
            )
            colors = (COLORS["decode"], COLORS["kv"]) if key == "requests" else (COLORS["decode"],)
            self.bars[key] = [
                m(ax.add_patch(Rectangle((0.05, 0.08), 0, 0.13, color=col, lw=0))) for col in colors
            ]

    def _draw(self, s):
        d = self.dashboard = dashboard(s)
        for key, (big, small, fractions) in panel_values(d).items():
            self.big[key].set_text(big)
            self.small[key].set_text(small)
            x = 0.05
            for bar, f in zip(self.bars[key], fractions, strict=False):
                f = float(np.nan_to_num(f))
                width = 0.9 * min(max(f, 0.0), 1.0)
                bar.set_x(x)
                bar.set_width(width)
                if key in ("ttft", "tpot"):
                    over = f > 1
                    bar.set_color(GAUGE_OVER if over else GAUGE_OK)
                    bar.set_hatch("////" if over else "")
                    bar.set_edgecolor("white" if over else GAUGE_OK)
                x += width
        if not d.fits:
            need = weight_bytes(s.model, s.weight_precision)
            cap = memory_available_bytes(s.gpu, s.num_gpus)
            text = f"does not fit in memory: weights alone need {need / GB:.0f} GB of {cap / GB:.0f} GB"
            grey = dict(facecolor=COLORS["overflow"], alpha=0.3, lw=0)
            # across the top row of panels, in figure coordinates; on the last panel, so drawn after them all
            at = dict(at=(0.5, 0.66), transform=self.fig.transFigure)
            self._no_fit(self.axes[-1], text, shade=False, fontsize=15, bbox=grey, **at)
        self.fig.suptitle(
            f"{s.batch} user{'' if s.batch == 1 else 's'}, T={s.context_tokens:,}, P={s.prompt_tokens:,}, "
            f"O={ANSWER_TOKENS}: {s.model} on {s.num_gpus}x {s.gpu}",
            fontsize=13,
        )


def dashboard_case(s: Scenario, d: Dashboard) -> StepCase:
    """The step lesson 59's readout is about: one decode step of the batch the server runs (the users it
    holds, not those waiting) at the scenario's context, its step time only: the dashboard's panels give the
    server's one tokens/s and one cost (with prompts and random answer lengths).

    >>> s = Scenario(batch=300, context_tokens=4096)
    >>> dashboard_case(s, dashboard(s)).title
    'the running batch: one decode step of 102 users at 4,096 tokens each (tokens/s and cost: the panels)'
    """
    running = max(1, round(d.running)) if d.fits else s.batch
    case = decode_case(s, batch=running)
    title = f"the running batch: {case.title} (tokens/s and cost: the panels)"
    return replace(case, title=title, rates=False)


def dashboard_explorer(scenario: Scenario | None = None):
    """An ``Explorer`` over the dashboard: concurrent users, context, precision, GPUs, GPU and model; its
    readout gives the diagnosis, how the numbers were made (folded), then the running batch's step.

    >>> ex = dashboard_explorer(Scenario(batch=64, context_tokens=4096))
    >>> ex.set(batch=300); round(ex.live.dashboard.waiting)
    198
    """
    s = scenario or Scenario(batch=64, context_tokens=4096)
    live = DashboardFigure(s)

    def readout(scenario, options=None):  # the explorer updates the figure first: its dashboard is current
        d = live.dashboard
        source = fold(table_html([("source", d.source)]), "how it was made")
        step = case_readout_for(lambda s, o: dashboard_case(s, d))(scenario, options)
        server = [("diagnosis", diagnose(d))]
        if d.fits:  # the server's one tokens/s and one cost: the panels' figures
            cost = f"${d.cost_per_million_usd:.2f}" if np.isfinite(d.cost_per_million_usd) else "no price"
            server += [
                ("output tokens/s (the dashboard)", f"{d.tokens_per_s:,.0f}"),
                ("cost per 1M tokens", cost),
            ]
        return table_html(server) + source + step

    ex = Explorer(live, controls=STEP, scenario=s, readout=readout)
    ex.controls["batch"].description = "concurrent users B"
    return ex


PANELS = {
    "mbu": "MBU",
    "mfu": "MFU",
    "tokens": "output tokens/s",
    "kv": "KV-cache use",
    "requests": "running / waiting",
    "ttft": "TTFT p50 (p90, p99)",
    "tpot": "TPOT p50 (p90, p99)",
    "cost": "$ per 1M tokens",
}


def panel_values(d: Dashboard):
    """(big number, small line, gauge fraction(s)) for each panel, from a Dashboard."""
    if not d.fits:
        return {k: ("", "", (0.0, 0.0)) for k in PANELS}
    scale = max(d.concurrent_users, d.max_batch)
    return {
        "mbu": (f"{d.mbu:.0%}", f"steps timed by {get_engine(d.engine).name}", (d.mbu,)),
        "mfu": (f"{d.mfu:.1%}", f"decode tokens alone {d.mfu_decode:.2%}", (d.mfu,)),
        "tokens": (
            f"{d.tokens_per_s:,.0f}",
            f"of {d.best_tokens_per_s:,.0f} at the best batch",
            (d.tokens_per_s / d.best_tokens_per_s,),
        ),
        "kv": (
            f"{d.kv_use_fraction:.0%}" if d.kv_use_fraction >= 0.1 else f"{d.kv_use_fraction:.1%}",
            f"{d.kv_bytes / GB:.1f} of {d.kv_free_bytes / GB:.0f} GB left by weights",
            (d.kv_use_fraction,),
        ),
        "requests": (
            f"{d.running:.0f} / {d.waiting:.0f}",
            f"max batch {d.max_batch:,}",
            (d.running / scale, d.waiting / scale),
        ),
        "ttft": _latency(d.ttft_p50_s, d.ttft_p90_s, d.ttft_p99_s, DEFAULT_TTFT_TARGET_S),
        "tpot": _latency(d.tpot_p50_s, d.tpot_p90_s, d.tpot_p99_s, DEFAULT_TPOT_TARGET_S),
        "cost": (
            (
                f"${d.cost_per_million_usd:.2f}",
                f"${d.best_cost_per_million_usd:.2f} at the best batch",
                (d.best_cost_per_million_usd / d.cost_per_million_usd,),
            )
            if np.isfinite(d.cost_per_million_usd)
            else ("no price", "no listed price for this GPU", (0.0,))
        ),
    }


def _latency(p50_s, p90_s, p99_s, target_s):
    """A latency panel: p50 big, p90 and p99 below, the gauge at p99 ÷ the target."""
    return fmt_s(p50_s), f"p90 {fmt_s(p90_s)} · p99 {fmt_s(p99_s)}", (p99_s / target_s,)


def fmt_s(seconds: float) -> str:
    """A latency as a panel shows it: "1.2 s", "35 ms", "4.5 ms"; "—" for none."""
    if not np.isfinite(seconds):
        return "—"
    if seconds >= 1:
        return f"{seconds:.1f} s"
    return f"{seconds / MS:.0f} ms" if seconds >= 0.01 else f"{seconds / MS:.1f} ms"
