"""Your own machine: llama.cpp's speed on Macs and home GPUs, as a figure, a table and an explorer.

Taught in notebooks/your_own_hardware.ipynb.

>>> from roofline.lessons.your_own_hardware.numbers import local_speeds
>>> local_speeds_figure(local_speeds(["llama-3-8b"], ["m4-max", "rtx-4090"], ["gguf-q4_k_m"]))
<local speeds>
"""

from __future__ import annotations

import html

import ipywidgets as W
import numpy as np

from roofline.course.figures import COLORS, Picture, new_figure

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


def local_speeds_html(rows: list[dict]) -> str:
    """An HTML table of ``local_speeds`` rows: weights, fits, floor, llama.cpp, prompt speed and $/M tokens.

    >>> from roofline.lessons.your_own_hardware.numbers import local_speeds
    >>> "<table" in local_speeds_html(local_speeds(["llama-3-8b"], ["m4-max"], ["gguf-q4_k_m"]))
    True
    """
    head = (
        "model",
        "format",
        "machine",
        "weights (GB)",
        "fits",
        "floor (tok/s)",
        "llama.cpp (tok/s)",
        "prompt (tok/s)",
        "$ per M tokens",
    )

    def num(x, fmt):
        return "–" if not np.isfinite(x) else format(x, fmt)

    body = []
    for r in rows:
        cells = (
            r["model"],
            r["format"],
            r["gpu"],
            num(r["weights_bytes"] / 1e9, ".1f"),
            "yes" if r["fits"] else "no",
            num(r["floor_tokens_per_s"], ".0f"),
            num(r["engine_tokens_per_s"], ".0f"),
            num(r["prompt_tokens_per_s"], ",.0f"),
            num(r["usd_per_million_tokens"], ".2f"),
        )
        body.append("<tr>" + "".join(f"<td{PAD}>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    header = "<tr>" + "".join(f"<th{PAD}>{h}</th>" for h in head) + "</tr>"
    return f"<table class='roofline-table'>{header}{''.join(body)}</table>"


class Table:
    """HTML shown as a table in a notebook, with a short, stable text form (for nbval)."""

    def __init__(self, html_text: str, rows: int):
        self.html, self.rows = html_text, rows

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<table of {self.rows} rows>"


def local_speeds_table(rows: list[dict]) -> Table:
    """``local_speeds_html`` as a notebook table.

    >>> from roofline.lessons.your_own_hardware.numbers import local_speeds
    >>> local_speeds_table(local_speeds(["llama-3-8b"], ["m4-max"], ["gguf-q4_k_m"]))
    <table of 1 rows>
    """
    return Table(local_speeds_html(rows), len(rows))


HOME_GPUS = ("m4-max", "m4-pro", "m3-max", "m2-ultra", "rtx-3090", "rtx-4090", "rtx-5090", "rtx-pro-6000")


HOME_FORMATS = ("gguf-q4_k_m", "gguf-q8_0", "gguf-f16", "mxfp4-experts")


def home_explorer(
    model: str = "qwen3-30b-a3b", fmt: str = "gguf-q4_k_m", context_tokens: int = 1000
) -> W.VBox:
    """One model in one format on every home machine: llama.cpp's decode and prompt speed, the floor, whether
    it fits and what a million tokens cost (``local_speeds``), as a table."""
    from roofline.data import models
    from roofline.lessons.your_own_hardware.lab import local_speeds_html
    from roofline.lessons.your_own_hardware.numbers import local_speeds

    model_menu = W.Dropdown(options=list(models()), value=model, description="model")
    format_menu = W.Dropdown(options=HOME_FORMATS, value=fmt, description="format")
    context = W.IntSlider(value=context_tokens, min=0, max=32768, step=500, description="context",
                          continuous_update=False)  # fmt: skip
    table = W.HTML()

    def redraw(_=None):
        rows = local_speeds([model_menu.value], HOME_GPUS, [format_menu.value], context_tokens=context.value)
        table.value = local_speeds_html(rows) if rows else "<p>No home machine computes this format.</p>"

    for w in (model_menu, format_menu, context):
        w.observe(redraw, names="value")
    redraw()
    return W.VBox([W.HBox([model_menu, format_menu, context], layout=W.Layout(flex_flow="row wrap")), table])
