"""Lesson 04's figures, readout and explorer: the decode step on the roofline chart, and the ridge table."""

from __future__ import annotations

import html

import numpy as np

from roofline.course.figures import COLORS, LiveFigure, nice_limits
from roofline.course.readouts import combine_readouts, decode_readout, table_html
from roofline.course.widgets import STEP, Explorer
from roofline.data import get_gpu, gpus
from roofline.lessons.roofline.numbers import ridge_points
from roofline.physics.core import attainable_flops_per_s, ridge_point_flop_per_byte
from roofline.physics.precision import get_precision, peak_flops_per_s
from roofline.scenario import Scenario
from roofline.units import MS, TFLOPS


class LessonRooflineChart(LiveFigure):
    """The roofline (log-log): memory slope, compute roof, ridge, and where decode and prefill sit; the
    legend in the empty upper-left corner, clear of the ridge label at the bottom.

    >>> LessonRooflineChart(Scenario()).axes[0].get_legend()._loc
    2
    """

    decode_batches = (1, 8, 32, 128, 512)
    prefill_prompts = (16, 128, 500, 2000, 8000)
    intensities = np.geomspace(0.5, 3e4, 200)

    def _build(self):
        ax = self.axes[0]
        m = self._moving
        self.roof = self._line(ax, color="black", label="roofline: min(peak, intensity x bandwidth)")
        self.ridge = m(ax.axvline(1, color="grey", ls="--", lw=1.5))
        self.decode_pts = self._line(ax, "o", color=COLORS["decode"], label="decode at batch B")
        self.prefill_pts = self._line(ax, "s", color=COLORS["prefill"], label="prefill of P tokens")
        span = (self.intensities[0], self.intensities[-1])
        ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP per byte)", xlim=span)
        ax.set_ylabel("achieved TFLOP/s")
        ax.legend(loc="upper left")

    def _draw(self, s):
        ax = self.axes[0]
        g = get_gpu(s.gpu)
        peak = peak_flops_per_s(g, s.weight_precision) * s.num_gpus
        bw = g.memory_bandwidth_bytes_per_s * s.num_gpus
        self.roof.set_data(self.intensities, attainable_flops_per_s(self.intensities, peak, bw) / TFLOPS)
        ridge = ridge_point_flop_per_byte(peak, bw)
        self.ridge.set_xdata([ridge, ridge])
        text = f"ridge ≈ {ridge:.0f} FLOP/byte"
        where = ax.get_xaxis_transform()
        self._transient_artist(ax.text(ridge * 1.1, 0.04, text, transform=where, fontsize=11, color="grey"))
        d = s.decode(batch=np.array(self.decode_batches))
        d_int = d.flops / d.bytes_read
        d_perf = np.where(d.fits, d.flops / d.step_time_s / TFLOPS, np.nan)
        self.decode_pts.set_data(d_int, d_perf)
        p = s.prefill(prompt_tokens=np.array(self.prefill_prompts))
        p_int = p.flops / p.bytes_moved
        p_perf = p.flops / p.step_time_s / TFLOPS
        self.prefill_pts.set_data(p_int, p_perf)
        for x, y, b in zip(d_int, d_perf, self.decode_batches, strict=True):
            if np.isfinite(y):
                self._note(ax, f"B={b}", (x, y), (-6, 8), color=COLORS["decode"], ha="right", fontsize=10)
        for x, y, n in zip(p_int, p_perf, self.prefill_prompts, strict=True):
            self._note(ax, f"P={n}", (x, y), (4, -14), color=COLORS["prefill"], fontsize=10)
        ax.set_ylim(nice_limits([peak / TFLOPS / 3000, peak / TFLOPS * 3], log=True))
        ax.set_title(
            f"Roofline: {s.num_gpus}x {s.gpu} ({s.weight_precision} math), {s.model}, "
            f"decode at T={s.context_tokens:,}",
            fontsize=12,
        )


class HtmlTable:
    """A small HTML table that shows itself in a notebook, with a short stable text form."""

    def __init__(self, header, rows):
        self.header, self.rows = list(header), [list(r) for r in rows]

    def _repr_html_(self) -> str:
        cell = '<{0} style="text-align:right;padding:2px 10px">{1}</{0}>'
        head = "".join(cell.format("th", html.escape(h)) for h in self.header)
        body = "".join(
            "<tr>" + "".join(cell.format("td", html.escape(c)) for c in r) + "</tr>" for r in self.rows
        )
        return f'<table class="roofline-table" style="font-size:14px"><tr>{head}</tr>{body}</table>'

    def __repr__(self) -> str:
        return f"<HtmlTable: {len(self.rows)} rows>"


def ridge_table() -> HtmlTable:
    """Every GPU's bandwidth, BF16 and FP8 peaks and ridge points, computed from the data tables.

    >>> ridge_table().rows[0][:2]
    ['NVIDIA H100 SXM5 80GB', '3.35']
    """
    precisions = ("bf16", "fp8")
    ridges = {p: ridge_points(p) for p in precisions}
    header = ["GPU", "bandwidth (TB/s)"]
    header += [f"{p.upper()} dense (TFLOPS)" for p in precisions]
    header += [f"ridge {p.upper()} (FLOP/byte)" for p in precisions]
    compute, rows = [get_precision(p).compute for p in precisions], []
    for gid, g in gpus().items():
        flops = g.dense_flops_per_s
        peaks = [f"{flops[c] / TFLOPS:,.0f}" if c in flops else "—" for c in compute]
        ridge = [("—" if np.isnan(ridges[p][gid]) else f"{ridges[p][gid]:,.0f}") for p in precisions]
        rows.append([g.name, f"{g.memory_bandwidth_bytes_per_s / 1e12:.2f}", *peaks, *ridge])
    return HtmlTable(header, rows)


def roofline_readout(s: Scenario) -> str:
    """HTML readout for the roofline explorer: the ridge, and where decode and prefill sit."""
    g = get_gpu(s.gpu)
    peak = peak_flops_per_s(g, s.weight_precision)
    ridge = ridge_point_flop_per_byte(peak, g.memory_bandwidth_bytes_per_s)
    peak_tflops, bw_tbps = s.num_gpus * peak / TFLOPS, s.num_gpus * g.memory_bandwidth_bytes_per_s / 1e12
    d, p = s.decode(), s.prefill()
    d_int, p_int = d.arithmetic_intensity_flop_per_byte, p.flops / p.bytes_moved
    decode = f"{d_int:,.1f} FLOP/byte, {d.step_time_s / MS:.2f} ms ({d.binding}-bound)"
    prefill = f"{p_int:,.0f} FLOP/byte, {p.step_time_s / MS:.2f} ms ({p.binding}-bound)"
    no_room = "does not fit in memory: no"
    return table_html(
        [
            ("ridge point", f"{ridge:,.0f} FLOP/byte"),
            ("peak / bandwidth", f"{peak_tflops:,.0f} TFLOP/s / {bw_tbps:.2f} TB/s"),
            (f"decode B={s.batch}, T={s.context_tokens:,}", decode if d.fits else f"{no_room} step time"),
            (f"prefill P={s.prompt_tokens:,}", prefill if p.fits else f"{no_room} time"),
        ]
    )


def roofline_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 04's explorer: the decode step on the roofline chart.

    >>> roofline_explorer()
    <Explorer LessonRooflineChart: batch, context_tokens, weight_precision, num_gpus, gpu, model, engine>
    """
    return Explorer(
        LessonRooflineChart,
        STEP,
        scenario or Scenario(),
        combine_readouts(roofline_readout, decode_readout),
        presets={
            "decode, one user, no context": {"batch": 1, "context_tokens": 0},
            "decode, 64 users x 4,096 tokens": {"batch": 64, "context_tokens": 4096},
        },
    )
