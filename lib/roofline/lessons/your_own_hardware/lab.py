"""Your own machine: llama.cpp's speed on Macs and home GPUs, as a figure, a table and an explorer.

>>> local_speeds_figure(local_speeds(["llama-3-8b"], ["m4-max", "rtx-4090"], ["gguf-q4_k_m"]))
<local speeds>
"""

from __future__ import annotations

import html

import ipywidgets as W
import numpy as np

from roofline.course.figures import COLORS, Picture, new_figure
from roofline.data import models
from roofline.lessons.your_own_hardware.numbers import CONTEXT_TOKENS, local_speeds

PAD = " style='padding:2px 10px'"  # table cells: a column gap wide enough to read numbers apart


def local_speeds_figure(rows: list[dict], title: str = "One user, llama.cpp") -> Picture:
    """Horizontal bars of llama.cpp's decode speed (tokens/s) per row, with the floor's speed as a tick;
    rows that do not fit are drawn as an empty bar labelled "does not fit"."""
    fig, (ax,) = new_figure(figsize=(7.5, 0.32 * len(rows) + 1.2))
    labels = [f"{r['model']} {r['format']} on {r['gpu']}" for r in rows]
    y = np.arange(len(rows))[::-1]
    engine = np.array([r["engine_tokens_per_s"] for r in rows])
    floor = np.array([r["floor_tokens_per_s"] for r in rows])
    ok = np.isfinite(engine)
    ax.barh(y[ok], engine[ok], color=COLORS["decode"], label="llama.cpp (predicted)")
    ax.plot(floor[ok], y[ok], "|", ms=14, mew=2, color=COLORS["step"], label="floor (weights ÷ bandwidth)")
    for yy, e in zip(y, engine, strict=True):
        text = "does not fit" if not np.isfinite(e) else f"{e:.0f}"
        ax.text((e if np.isfinite(e) else 0) + 2, yy, text, va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set(xlabel="tokens/s, one user", title=title)
    ax.legend(fontsize=8, loc="lower right")
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


def home_explorer(model: str = "qwen3-30b-a3b") -> W.VBox:
    """One model (id) in one format on every home machine: llama.cpp's decode and prompt speed, the floor,
    whether it fits and what a million tokens cost (``local_speeds``), as a table."""
    model_menu = W.Dropdown(options=list(models()), value=model, description="model")
    format_menu = W.Dropdown(options=HOME_FORMATS, value="gguf-q4_k_m", description="format")
    context = W.IntSlider(value=CONTEXT_TOKENS, min=0, max=32768, step=500, description="context",
                          continuous_update=False)  # fmt: skip
    table = W.HTML()

    def redraw(_=None):
        rows = local_speeds([model_menu.value], HOME_GPUS, [format_menu.value], context_tokens=context.value)
        table.value = (
            LocalSpeedsTable(rows)._repr_html_() if rows else "<p>No home machine computes this format.</p>"
        )

    for w in (model_menu, format_menu, context):
        w.observe(redraw, names="value")
    redraw()
    return W.VBox([W.HBox([model_menu, format_menu, context], layout=W.Layout(flex_flow="row wrap")), table])
