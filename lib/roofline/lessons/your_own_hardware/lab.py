"""Your own machine: llama.cpp's speed on Macs and home GPUs, as a figure, a table and an explorer.

>>> local_speeds_figure(local_speeds(["llama-3-8b"], ["m4-max", "rtx-4090"], ["gguf-q4_k_m"]))
<local speeds>
"""

from __future__ import annotations

import html

import ipywidgets as W
import numpy as np

from roofline.course.figures import COLORS, LiveFigure, Picture, new_figure
from roofline.course.widgets import Explorer
from roofline.engines.registry import engine_ids
from roofline.lessons.your_own_hardware.numbers import LOCAL_MEMORY, local_speeds
from roofline.scenario import Scenario

PAD = " style='padding:2px 10px'"  # table cells: a column gap wide enough to read numbers apart


def local_speeds_figure(rows: list[dict], title: str = "One user, llama.cpp") -> Picture:
    """Horizontal bars of the engine's decode speed (tokens/s) per row, with the floor's speed as a tick;
    rows that do not fit are drawn as an empty bar labelled "does not fit"."""
    fig, (ax,) = new_figure(figsize=(8, 0.42 * len(rows) + 1.8))
    labels = [f"{r['model']} {r['format']} on {r['gpu']}" for r in rows]
    y = np.arange(len(rows))[::-1]
    engine = np.array([r["engine_tokens_per_s"] for r in rows])
    floor = np.array([r["floor_tokens_per_s"] for r in rows])
    ok = np.isfinite(engine)
    ax.barh(y[ok], engine[ok], color=COLORS["decode"], label="llama.cpp (predicted)")
    ax.plot(floor[ok], y[ok], "|", ms=14, mew=2, color=COLORS["step"], label="floor (weights ÷ bandwidth)")
    for yy, e in zip(y, engine, strict=True):
        text = "does not fit" if not np.isfinite(e) else f"{e:.0f}"
        ax.text((e if np.isfinite(e) else 0) + 2, yy, text, va="center")
    ax.set_yticks(y, labels)
    ax.set(xlabel="tokens/s, one user", title=title)
    fig.legend(loc="outside lower center", ncols=2)  # below the bars, so it hides no floor tick
    return Picture(fig, "local speeds")


class LocalSpeedsTable:
    """``local_speeds`` rows as an HTML table in a notebook (weights, fits, floor, llama.cpp, prompt speed
    and $/M tokens), with a short, stable text form (for nbval).

    >>> LocalSpeedsTable(local_speeds(["llama-3-8b"], ["m4-max"], ["gguf-q4_k_m"]))
    <table of 1 rows>
    """

    def __init__(self, rows: list[dict]):
        self.rows = rows

    def __repr__(self) -> str:
        return f"<table of {len(self.rows)} rows>"

    def _repr_html_(self) -> str:
        head = ("model", "format", "machine", "weights (GB)", "fits", "floor (tok/s)", "llama.cpp (tok/s)")
        head += ("prompt (tok/s)", "$ per M tokens")

        def num(x, fmt):
            return "–" if not np.isfinite(x) else format(x, fmt)

        body = []
        for r in self.rows:
            name = (r["model"], r["format"], r["gpu"], num(r["weights_bytes"] / 1e9, ".1f"))
            speeds = [num(r[k], ".0f") for k in ("floor_tokens_per_s", "engine_tokens_per_s")]
            last = (num(r["prompt_tokens_per_s"], ",.0f"), num(r["usd_per_million_tokens"], ".2f"))
            cells = (*name, "yes" if r["fits"] else "no", *speeds, *last)
            body.append("<tr>" + "".join(f"<td{PAD}>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
        header = "<tr>" + "".join(f"<th{PAD}>{h}</th>" for h in head) + "</tr>"
        return f"<table class='roofline-table'>{header}{''.join(body)}</table>"


HOME_GPUS = ("m4-max", "m4-pro", "m3-max", "m2-ultra", "rtx-3090", "rtx-4090", "rtx-5090", "rtx-pro-6000")
HOME_FORMATS = ("gguf-q4_k_m", "gguf-q8_0", "gguf-f16", "mxfp4-experts")
PER_MACHINE = "per machine"  # the engine menu's first entry: on each machine, the engine people run there


class HomeMachines(LiveFigure):
    """Every home machine at once for the scenario's model, weight format, batch, context and GPU count:
    the engine's tokens/s for all B users (bars), the floor's (ticks), "does not fit" where it does not.
    The engine is ``options["engine"]``, or on each machine the one people run there."""

    def _build(self):
        ax = self.axes[0]
        self.floor = self._line(
            ax, "|", ms=14, mew=2, color=COLORS["step"], label="floor (bytes ÷ bandwidth)"
        )
        ax.barh([], [], color=COLORS["decode"], label="the engine (predicted)")
        ax.set_yticks(range(len(HOME_GPUS)), HOME_GPUS[::-1], fontsize=10)
        ax.set(xlabel="tokens/s, all B users", xscale="log")
        ax.legend(fontsize=9, loc="upper right")

    def _draw(self, s):
        ax = self.axes[0]
        engine = self.options.get("engine") or None
        engine = None if engine == PER_MACHINE else engine
        self.rows = local_speeds([s.model], HOME_GPUS, [s.weight_precision], context_tokens=s.context_tokens,
                                 batch=s.batch, num_gpus=s.num_gpus, engine=engine)  # fmt: skip
        by_gpu = {r["gpu"]: r for r in self.rows}
        y = {g: len(HOME_GPUS) - 1 - i for i, g in enumerate(HOME_GPUS)}
        floor = [(r["floor_tokens_per_s"] * s.batch, y[g]) for g, r in by_gpu.items() if r["fits"]]
        self.floor.set_data([f for f, _ in floor], [yy for _, yy in floor])
        values = [r["engine_tokens_per_s_total"] for r in self.rows if r["fits"]] or [1.0]
        lo, hi = min(values) / 3, max(f for f, _ in floor) * 3 if floor else 10.0
        for g in HOME_GPUS:
            r = by_gpu.get(g)
            if r is None or not r["fits"]:
                why = "does not fit" if r is not None else f"no {s.weight_precision} math"
                self._transient_artist(ax.text(lo * 1.1, y[g], why, va="center", fontsize=10))
                continue
            value = r["engine_tokens_per_s_total"]
            for bar in ax.barh([y[g]], [value - lo], left=lo, color=COLORS["decode"], height=0.6):
                self._transient_artist(bar)
            # the engine's name inside its bar, the speed past its end: clear of the floor's tick
            name = ax.text(lo * 1.08, y[g], r["engine"], va="center", fontsize=9, color="white")
            self._transient_artist(name)
            self._transient_artist(ax.text(value * 1.05, y[g], f"{value:,.0f}", va="center", fontsize=9))
        ax.set_xlim(lo, hi)
        users = "one user" if s.batch == 1 else f"{s.batch} users"
        ax.set_title(f"{s.model} {s.weight_precision}, {users} at T={s.context_tokens:,}, "
                     f"{s.num_gpus} GPU(s) per machine", fontsize=11)  # fmt: skip
        self.background_key = (s.model, s.weight_precision)


def home_readout(live: HomeMachines):
    """The explorer's readout: the figure's rows as a table (``LocalSpeedsTable``)."""

    def readout(s, options=None):
        return (
            LocalSpeedsTable(live.rows)._repr_html_()
            if live.rows
            else "<p>No home machine computes this format.</p>"
        )

    return readout


def home_explorer(model: str = "qwen3-30b-a3b") -> Explorer:
    """One model (id) in one weight format on every home machine: what the engine (llama.cpp on each by
    default) reaches for B users at T tokens on G GPUs per machine, the floor, whether it fits and what a
    million tokens cost (``local_speeds``), as a figure and a table.

    >>> ex = home_explorer(); ex.set(batch=4); ex.live.rows[0]["batch"]
    4
    """
    # memory "local": the model menu marks what needs more GPUs by llama.cpp's memory, as the table does
    s = Scenario(model=model, gpu="rtx-4090", weight_precision=HOME_FORMATS[0], batch=1, memory=LOCAL_MEMORY)
    live = HomeMachines(s, engine=PER_MACHINE)
    engine = W.Dropdown(options=[PER_MACHINE, *engine_ids("calibrated")], value=PER_MACHINE,
                        description="engine")  # fmt: skip
    formats = W.Dropdown(options=HOME_FORMATS, value=HOME_FORMATS[0], description="weights P")
    controls = ["batch", "context_tokens", ("weight_precision", formats), "num_gpus", "model"]
    return Explorer(live, controls, s, home_readout(live), knobs={"engine": engine}, auto_gpus=False)
