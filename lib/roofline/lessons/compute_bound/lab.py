"""The figures, readouts and explorer of lesson 61, taught in notebooks/61_compute_bound.ipynb."""

from __future__ import annotations

import numpy as np

from roofline.course.figures import (
    COLORS,
    LOG_LOG,
    LiveFigure,
    new_figure,
    nice_limits,
    plain_log_ticks,
    show,
)
from roofline.course.readouts import combine_readouts, decode_readout, table_html
from roofline.course.widgets import STEP, Explorer
from roofline.data import get_gpu
from roofline.lessons.compute_bound.numbers import (
    CONTEXT_SWEEP,
    LABELLED_BATCHES,
    SATURATION_BATCHES,
    context_limit_tokens,
    matmul_flip_batch,
    per_kernel_ceiling_tokens_per_s,
    per_kernel_decode,
    throughput_ceiling_tokens_per_s,
)
from roofline.physics.balance import compute_bound_batch
from roofline.physics.core import ridge_point_flop_per_byte
from roofline.physics.memory import max_batch
from roofline.physics.precision import peak_flops_per_s
from roofline.scenario import Scenario
from roofline.units import MS


class ThroughputVsLatency(LiveFigure):
    """The concurrency sweep as a throughput–latency curve: x = each user's time per token (ms, log),
    y = total tokens/s, one point per batch (labelled), memory-bound part blue, compute-bound part green,
    the compute ceiling dashed, and the region past the memory limit shaded."""

    def _build(self):
        ax = self.axes[0]
        self.mem = self._line(ax, color=COLORS["decode"], label="memory-bound")
        self.comp = self._line(ax, color=COLORS["compute"], label="compute-bound")
        self.points = self._line(ax, "o", color="black", ms=6, zorder=5)
        ceiling = dict(color=COLORS["compute"], ls="--", lw=1.5, label="compute ceiling")
        self.ceiling = self._moving(ax.axhline(1, **ceiling))
        star = dict(color=COLORS["compute"], ms=18, mec="black", zorder=6, label="first compute-bound batch")
        self.flip = self._line(ax, "*", **star)
        ring = dict(ms=16, mfc="none", mec=COLORS["prefill"], mew=2.5, zorder=7, label="the batch B you set")
        self.here = self._line(ax, "o", **ring)
        ax.set(**LOG_LOG, xlabel="each user's time per token (ms)", ylabel="tokens/s, all users")
        plain_log_ticks(ax.xaxis)
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
        style = dict(ha="right", transform=ax.get_yaxis_transform(), fontsize=11, color=COLORS["compute"])
        self._transient_artist(ax.text(0.99, ceiling * 1.15, f"ceiling {ceiling:,.0f} tokens/s", **style))
        labelled = np.isin(SATURATION_BATCHES, LABELLED_BATCHES) & np.isfinite(x)
        self.points.set_data(x[labelled], y[labelled])
        for b, xi, yi in zip(SATURATION_BATCHES[labelled], x[labelled], y[labelled], strict=True):
            self._note(ax, f"B={b}", (xi, yi), (8, -4), fontsize=11)
        xs = x[np.isfinite(x)]
        lo, hi = (xs.min() / 1.3, xs.max() * 2.5) if xs.size else (1.0, 10.0)
        ax.set_xlim(lo, hi)
        ax.set_ylim(nice_limits(np.concatenate([y[np.isfinite(y)], [ceiling * 3]]), log=True))
        self._mark_flip(ax, s)
        self._mark_batch(ax, s)  # after the limits: its label goes to the side with room
        self._shade_memory_limit(ax, s, xs, hi)
        ax.set_title(
            f"Saturation: {s.model} ({s.weight_precision}) on {s.num_gpus}x {s.gpu}, T={s.context_tokens:,}",
            fontsize=12,
        )

    def _mark_flip(self, ax, s):
        """The star at the first compute-bound batch, or why there is none."""
        flip = compute_bound_batch(
            s.model, s.gpu, s.context_tokens, weight_precision=s.weight_precision, kv_precision=s.kv_precision
        )
        here = s.decode(batch=flip) if flip is not None else None
        if here is not None and here.fits:
            self.flip.set_data([here.step_time_s / MS], [here.tokens_per_s_total])
            xy = (here.step_time_s / MS, here.tokens_per_s_total)
            label = f"compute-bound from B={flip:,}"
            self._note(ax, label, xy, (10, -22), fontsize=12, color=COLORS["compute"])
        else:
            self.flip.set_data([], [])
            why = "never, at any batch" if flip is None else f"only at B={flip:,}, past the memory limit"
            style = dict(transform=ax.transAxes, fontsize=12, va="top", color=COLORS["compute"])
            self._transient_artist(ax.text(0.02, 0.95, f"compute-bound: {why}", **style))

    def _mark_batch(self, ax, s):
        """The ring at the explorer's batch B: its time per token and tokens/s, or why it has none."""
        here = s.decode()
        xy = (here.step_time_s / MS, here.tokens_per_s_total)
        if self._mark(self.here, here.fits, [xy[0]], [xy[1]]):
            text = f"B={s.batch:,}: {xy[0]:.1f} ms, {xy[1]:,.0f} tok/s"
            right_half = ax.transAxes.inverted().transform(ax.transData.transform(xy))[0] > 0.5
            offset, ha = ((-12, 14), "right") if right_half else ((12, 14), "left")
            self._note(ax, text, xy, offset, ha=ha, fontsize=12, color=COLORS["prefill"])

    def _shade_memory_limit(self, ax, s, xs, hi):
        """Shade the latencies past the largest batch that fits in memory."""
        limit = s.users_that_fit()
        if limit < SATURATION_BATCHES[-1] and xs.size:
            self._shade(ax, xs.max(), hi, f"memory full\nat B={limit:,}", xs.max() * 1.05)


class FlipBatchVsContext(LiveFigure):
    """The batch where decode turns compute-bound against context per user (log-log), beside the largest
    batch memory holds. Where the flip needs more users than fit, or never comes, decode stays
    memory-bound in practice."""

    def _build(self):
        ax = self.axes[0]
        self.flip = self._line(ax, color=COLORS["compute"], label="batch where decode turns compute-bound")
        self.memory = self._line(ax, color=COLORS["capacity"], label="largest batch that fits in memory")
        self.limit = self._moving(ax.axvline(1, color=COLORS["compute"], ls=":", lw=1.5))
        ax.set(**LOG_LOG, xlabel="context per user, T (tokens)", ylabel="batch B (users)")
        ax.set_xlim(CONTEXT_SWEEP[0], CONTEXT_SWEEP[-1])
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
            style = dict(transform=ax.get_xaxis_transform(), fontsize=11, va="top")
            self._transient_artist(
                ax.text(t_star * 1.15, 0.9, f"T ≥ {t_star:,.0f}: never\ncompute-bound", **style)
            )
        reachable = np.isfinite(flip) & (flip <= np.nan_to_num(fit, nan=0))
        if reachable.any() and not reachable.all():
            t_cross = CONTEXT_SWEEP[np.argmin(reachable)]
            text, arrow = (
                f"past T≈{t_cross:,}, memory\nruns out first",
                dict(arrowstyle="->", color="#444444"),
            )
            self._note(
                ax, text, (t_cross, fit[np.argmin(reachable)]), (-140, -50), fontsize=11, arrowprops=arrow
            )
        ax.set_title(
            f"When decode turns compute-bound: {s.model} ({s.weight_precision}) on {s.num_gpus}x {s.gpu}",
            fontsize=12,
        )


def saturation_readout(s) -> str:
    """HTML table for the lesson-61 explorer: ridge, flip batch, memory limit, throughput ceiling.

    >>> from roofline.scenario import Scenario
    >>> "B = 438" in saturation_readout(Scenario(context_tokens=128))
    True
    """
    g = get_gpu(s.gpu)
    ridge = ridge_point_flop_per_byte(peak_flops_per_s(g, s.weight_precision), g.memory_bandwidth_bytes_per_s)
    flip = compute_bound_batch(
        s.model, s.gpu, s.context_tokens, weight_precision=s.weight_precision, kv_precision=s.kv_precision
    )
    limit = s.users_that_fit()
    ceiling = throughput_ceiling_tokens_per_s(
        s.model, s.gpu, s.context_tokens, num_gpus=s.num_gpus, weight_precision=s.weight_precision
    )
    flip_text = "never" if flip is None else f"B = {flip:,}" + ("" if flip <= limit else " (does not fit)")
    rows = [
        ("ridge point", f"{ridge:.0f} FLOP/byte"),
        ("compute-bound from", flip_text),
        ("largest batch that fits", f"{limit:,}"),
        ("compute ceiling", f"{ceiling:,.0f} tokens/s"),
    ]
    return table_html(rows)


def per_kernel_figure():
    """Static figure of the per-kernel view of Llama 3 8B on an H100 in BF16 (lesson 61). Left: intensity of
    each kind of kernel against the batch, beside the ridge: the weight matmuls climb with B and cross the
    ridge at the same batch for every context; attention over the KV cache stays flat far below it. Right:
    total tokens/s against the batch at T = 0, 1,000 and 4,096, per-kernel (solid: matmuls + attention, one
    after the other) and whole-step roofline (dashed), with the per-kernel ceiling (dotted) moving down as
    context grows. Returns a picture."""
    model, gpu, contexts = "llama-3-8b", "h100-sxm", (0, 1000, 4096)
    g = get_gpu(gpu)
    ridge = ridge_point_flop_per_byte(peak_flops_per_s(g, "bf16"), g.memory_bandwidth_bytes_per_s)
    batches = SATURATION_BATCHES
    fig, (left, right) = new_figure(2, figsize=(9.5, 4.2))
    left.axhline(ridge, color="black", ls=":", lw=1.5)
    left.text(1.2, ridge * 1.15, f"ridge {ridge:.0f} FLOP/byte", fontsize=10)
    colors = [COLORS["decode"], COLORS["kv"], COLORS["prefill"], COLORS["capacity"]]
    for t, color in zip(contexts, colors, strict=False):
        k = per_kernel_decode(model, gpu, batches, t)
        if t == contexts[0]:
            left.plot(batches, k.matmul_flops / k.matmul_bytes, "-", color=COLORS["weights"], lw=2.5,
                      label="weight matmuls (any T)")  # fmt: skip
        if t > 0:
            left.plot(batches, np.broadcast_to(k.attention_intensity_flop_per_byte, batches.shape), "--",
                      color=color, label=f"attention over KV, T={t:,}")  # fmt: skip
        right.plot(batches, k.tokens_per_s, "-", color=color, label=f"T={t:,} per kernel")
        whole = batches / k.whole_step_s
        right.plot(batches, whole, "--", color=color, lw=1)
        top = float(per_kernel_ceiling_tokens_per_s(model, gpu, t))
        right.axhline(top, color=color, ls=":", lw=1)
    flip = matmul_flip_batch(model, gpu)
    left.axvline(flip, color=COLORS["weights"], ls=":", lw=1)
    left.text(flip * 1.1, 1.5, f"matmuls flip\nat B = {flip}", fontsize=10, color=COLORS["weights"])
    left.set(xscale="log", yscale="log", xlabel="batch B (users)", ylabel="FLOP per byte",
             title="Intensity of each kernel")  # fmt: skip
    right.set(xscale="log", yscale="log", xlabel="batch B (users)", ylabel="tokens/s (all users)",
              title="tokens/s: per kernel, one roofline dashed")  # fmt: skip
    left.legend(loc="upper left", fontsize=9)
    right.legend(loc="lower right", fontsize=9)
    fig.suptitle(f"{model} (bf16) on {gpu}: the step as its kernels run it", fontsize=12)
    return show(fig, "per-kernel view")


def saturation_wall_figure(s, ceiling_tokens_per_s):
    """The saturation wall from the serving simulator (``simulated_saturation``): output tokens/s (left, with
    the compute ceiling in tokens/s) and TPOT p50/p99 (right) against the number of concurrent clients.
    Returns a picture. Lesson 61."""
    fig, (left, right) = new_figure(2, figsize=(9.5, 4.0))
    c = np.asarray(s.concurrency)
    left.plot(c, s.throughput_output_tokens_per_s, "o-", color=COLORS["decode"], label="simulated")
    left.axhline(ceiling_tokens_per_s, color=COLORS["compute"], ls=":", lw=2, label="compute ceiling")
    right.plot(c, np.asarray(s.tpot_p50_s) / MS, "o-", color=COLORS["decode"], label="TPOT p50")
    right.plot(c, np.asarray(s.tpot_p99_s) / MS, "s--", color=COLORS["prefill"], label="TPOT p99")
    left.set(xscale="log", xlabel="concurrent clients", ylabel="output tokens/s", title="Throughput")
    right.set(xscale="log", xlabel="concurrent clients", ylabel="ms per output token", title="Latency")
    for ax in (left, right):
        ax.legend(loc="upper left", fontsize=10)
    fig.suptitle("The saturation wall under a closed-loop load (roofline.sim)", fontsize=12)
    return show(fig, "saturation wall")


def saturation_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 61's explorer: throughput against latency as the batch grows; B marks the lesson's batch
    (512 users at 128 tokens each: past the flip, compute-bound).

    >>> s = saturation_explorer().scenario; s.batch, s.context_tokens
    (512, 128)
    """
    return Explorer(
        ThroughputVsLatency,
        STEP,
        scenario or Scenario(batch=512, context_tokens=128),
        combine_readouts(saturation_readout, decode_readout),  # then the step at B: floor, engine, cost
    )
