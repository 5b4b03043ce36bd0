"""Figures and readouts of lesson 61, taught in notebooks/61_compute_bound.ipynb; the numbers live in
``roofline.lessons.saturation``."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator

from roofline.data import get_gpu
from roofline.lessons.saturation import (
    CONTEXT_SWEEP,
    LABELLED_BATCHES,
    SATURATION_BATCHES,
    context_limit_tokens,
    throughput_ceiling_tokens_per_s,
)
from roofline.physics.balance import compute_bound_batch
from roofline.physics.core import ridge_point_flop_per_byte
from roofline.physics.memory import max_batch
from roofline.physics.precision import peak_flops_per_s
from roofline.units import MS
from roofline.views.plots import COLORS, LiveFigure, nice_limits


class ThroughputVsLatency(LiveFigure):
    """The concurrency sweep as a throughput–latency curve: x = each user's time per token (ms, log),
    y = total tokens/s, one point per batch (labelled), memory-bound part blue, compute-bound part green,
    the compute ceiling dashed, and the region past the memory limit shaded."""

    def _build(self):
        ax = self.axes[0]
        m = self._moving
        self.mem = m(ax.plot([], [], color=COLORS["decode"], label="memory-bound")[0])
        self.comp = m(ax.plot([], [], color=COLORS["compute"], label="compute-bound")[0])
        self.points = m(ax.plot([], [], "o", color="black", ms=6, zorder=5)[0])
        self.ceiling = m(ax.axhline(1, color=COLORS["compute"], ls="--", lw=1.5, label="compute ceiling"))
        self.flip = m(
            ax.plot(
                [],
                [],
                "*",
                color=COLORS["compute"],
                ms=18,
                mec="black",
                zorder=6,
                label="first compute-bound batch",
            )[0]
        )
        ax.set(
            xscale="log", yscale="log", xlabel="each user's time per token (ms)", ylabel="tokens/s, all users"
        )
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.legend(loc="lower right")

    def _draw(self, s):
        ax = self.axes[0]
        d = s.decode(batch=SATURATION_BATCHES)
        x, y = d.step_time_s / MS, d.tokens_per_s_total
        compute = np.asarray(d.binding) == "compute"
        first_c = int(np.argmax(compute)) if compute.any() else len(x)
        y_mem = np.where(np.arange(len(x)) <= first_c, y, np.nan)
        y_comp = np.where(compute, y, np.nan)
        self.mem.set_data(x, y_mem)
        self.comp.set_data(x, y_comp)
        ceiling = throughput_ceiling_tokens_per_s(
            s.model, s.gpu, s.context_tokens, num_gpus=s.num_gpus, weight_precision=s.weight_precision
        )
        self.ceiling.set_ydata([ceiling, ceiling])
        self._transient_artist(
            ax.text(
                0.99,
                ceiling * 1.15,
                f"ceiling {ceiling:,.0f} tokens/s",
                ha="right",
                transform=ax.get_yaxis_transform(),
                fontsize=11,
                color=COLORS["compute"],
            )
        )
        labelled = np.isin(SATURATION_BATCHES, LABELLED_BATCHES) & np.isfinite(x)
        self.points.set_data(x[labelled], y[labelled])
        for b, xi, yi in zip(SATURATION_BATCHES[labelled], x[labelled], y[labelled], strict=True):
            self._transient_artist(
                ax.annotate(
                    f"B={b}", (xi, yi), xytext=(8, -4), textcoords="offset points", fontsize=11, ha="left"
                )
            )
        flip = compute_bound_batch(
            s.model, s.gpu, s.context_tokens, weight_precision=s.weight_precision, kv_precision=s.kv_precision
        )
        here = s.decode(batch=flip) if flip is not None else None
        if here is not None and here.fits:
            self.flip.set_data([here.step_time_s / MS], [here.tokens_per_s_total])
            self._transient_artist(
                ax.annotate(
                    f"compute-bound from B={flip:,}",
                    (here.step_time_s / MS, here.tokens_per_s_total),
                    xytext=(10, -22),
                    textcoords="offset points",
                    fontsize=12,
                    color=COLORS["compute"],
                )
            )
        else:
            self.flip.set_data([], [])
            why = "never, at any batch" if flip is None else f"only at B={flip:,}, past the memory limit"
            self._transient_artist(
                ax.text(
                    0.02,
                    0.95,
                    f"compute-bound: {why}",
                    transform=ax.transAxes,
                    fontsize=12,
                    va="top",
                    color=COLORS["compute"],
                )
            )
        xs = x[np.isfinite(x)]
        lo, hi = (xs.min() / 1.3, xs.max() * 2.5) if xs.size else (1.0, 10.0)
        ax.set_xlim(lo, hi)
        ax.set_ylim(nice_limits(np.concatenate([y[np.isfinite(y)], [ceiling * 3]]), log=True))
        limit = max_batch(
            s.model,
            s.gpu,
            max(s.context_tokens, 1),
            num_gpus=s.num_gpus,
            weight_precision=s.weight_precision,
            kv_precision=s.kv_precision,
        )
        if limit < SATURATION_BATCHES[-1] and xs.size:
            edge = xs.max()
            self._transient_artist(ax.axvspan(edge, hi, color=COLORS["overflow"], alpha=0.25, lw=0))
            self._transient_artist(
                ax.text(
                    edge * 1.05,
                    0.5,
                    f"memory full\nat B={limit:,}",
                    transform=ax.get_xaxis_transform(),
                    fontsize=11,
                    color="#444444",
                )
            )
        ax.set_title(
            f"Saturation: {s.model} ({s.weight_precision}) on {s.num_gpus}x {s.gpu}, T={s.context_tokens:,}",
            fontsize=12,
        )


class FlipBatchVsContext(LiveFigure):
    """The batch where decode turns compute-bound against context per user (log-log), beside the largest
    batch memory holds. Where the flip needs more users than fit, or never comes, decode stays
    memory-bound in practice."""

    def _build(self):
        ax = self.axes[0]
        m = self._moving
        self.flip = m(
            ax.plot([], [], color=COLORS["compute"], label="batch where decode turns compute-bound")[0]
        )
        self.memory = m(
            ax.plot([], [], color=COLORS["capacity"], label="largest batch that fits in memory")[0]
        )
        self.limit = m(ax.axvline(1, color=COLORS["compute"], ls=":", lw=1.5))
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="context per user, T (tokens)",
            ylabel="batch B (users)",
            xlim=(CONTEXT_SWEEP[0], CONTEXT_SWEEP[-1]),
        )
        ax.legend(loc="lower left")

    def _draw(self, s):
        ax = self.axes[0]
        kw = dict(weight_precision=s.weight_precision, kv_precision=s.kv_precision)
        flip = compute_bound_batch(s.model, s.gpu, CONTEXT_SWEEP, **kw)
        fit = max_batch(s.model, s.gpu, CONTEXT_SWEEP, num_gpus=s.num_gpus, **kw).astype(float)
        fit[fit < 1] = np.nan
        self.flip.set_data(CONTEXT_SWEEP, np.where(np.isfinite(flip), flip, np.nan))
        self.memory.set_data(CONTEXT_SWEEP, fit)
        t_star = context_limit_tokens(s.model, s.gpu, **kw)
        ax.set_ylim(1e2 if np.nanmin(np.concatenate([flip, fit])) >= 1e2 else 1, 1e7)
        if np.isfinite(t_star) and t_star < CONTEXT_SWEEP[-1]:
            self.limit.set_xdata([t_star, t_star])
            self._transient_artist(
                ax.axvspan(t_star, CONTEXT_SWEEP[-1], color=COLORS["overflow"], alpha=0.2, lw=0)
            )
            self._transient_artist(
                ax.text(
                    t_star * 1.15,
                    0.9,
                    f"T ≥ {t_star:,.0f}: never\ncompute-bound",
                    transform=ax.get_xaxis_transform(),
                    fontsize=11,
                    va="top",
                )
            )
        reachable = np.isfinite(flip) & (flip <= np.nan_to_num(fit, nan=0))
        if reachable.any() and not reachable.all():
            t_cross = CONTEXT_SWEEP[np.argmin(reachable)]
            self._transient_artist(
                ax.annotate(
                    f"past T≈{t_cross:,}, memory\nruns out first",
                    (t_cross, fit[np.argmin(reachable)]),
                    xytext=(-140, -50),
                    textcoords="offset points",
                    fontsize=11,
                    arrowprops=dict(arrowstyle="->", color="#444444"),
                )
            )
        ax.set_title(
            f"When decode turns compute-bound: {s.model} ({s.weight_precision}) on {s.num_gpus}x {s.gpu}",
            fontsize=12,
        )


def saturation_readout(s) -> str:
    """HTML table for the lesson-61 explorer: ridge, flip batch, memory limit, throughput ceiling.
    Taught in lesson 61.

    >>> from roofline.lessons.scenario import Scenario
    >>> "B = 425" in saturation_readout(Scenario(context_tokens=128))
    True
    """
    from roofline.ui.widgets import table_html

    g = get_gpu(s.gpu)
    ridge = ridge_point_flop_per_byte(peak_flops_per_s(g, s.weight_precision), g.memory_bandwidth_bytes_per_s)
    flip = compute_bound_batch(
        s.model, s.gpu, s.context_tokens, weight_precision=s.weight_precision, kv_precision=s.kv_precision
    )
    limit = max_batch(
        s.model,
        s.gpu,
        max(s.context_tokens, 1),
        num_gpus=s.num_gpus,
        weight_precision=s.weight_precision,
        kv_precision=s.kv_precision,
    )
    ceiling = throughput_ceiling_tokens_per_s(
        s.model, s.gpu, s.context_tokens, num_gpus=s.num_gpus, weight_precision=s.weight_precision
    )
    rows = [
        ("ridge point", f"{ridge:.0f} FLOP/byte"),
        (
            "compute-bound from",
            "never"
            if flip is None
            else f"B = {flip:,}" + ("" if flip is None or flip <= limit else " (does not fit)"),
        ),
        ("largest batch that fits", f"{limit:,}"),
        ("compute ceiling", f"{ceiling:,.0f} tokens/s"),
    ]
    return table_html(rows)
