"""When decode turns compute-bound, and the saturation wall that follows.

Taught in lesson 61 (notebooks/61_compute_bound.ipynb).

A decode step of B users reads the weights once (shared) and each user's KV (not shared), and does
B × (2 × N_active + attention over T) FLOPs. Its intensity is therefore about B FLOP/byte for BF16
weights and short contexts, and it turns compute-bound where the intensity passes the ridge:

    B × (2N + a·T) ÷ (W + B × T × k) > ridge  ⇔  B × (2N + a·T − ridge × T × k) > ridge × W

(W weight bytes, k KV bytes per token, a = 4·L·H·d_h attention FLOPs per context token). When
2N + a·T ≤ ridge × T × k, every extra user brings more unshared KV bytes than FLOPs can cover, and no
batch ever flips. Past the flip, total throughput stops growing (the compute ceiling, G × peak ÷ FLOPs per
token) while each user's step keeps getting longer: the saturation wall.

>>> compute_bound_batch("llama-3-8b", "h100-sxm", context_tokens=0)      # ridge 295.2 FLOP/byte
296
>>> compute_bound_batch("llama-3-8b", "h100-sxm", context_tokens=[0, 128, 1000]).tolist()
[296.0, 425.0, inf]
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator

from ._arrays import checked, out
from .architecture import active_parameter_count, attention_flops_per_token, kv_bytes_per_token, weight_bytes
from .core import ridge_point_flop_per_byte
from .data import get_gpu, get_model
from .decode import decode_step
from .memory import max_batch
from .plots import COLORS, LiveFigure, nice_limits
from .precision import peak_flops_per_s
from .units import MS

# Batches the throughput–latency curve sweeps, and the ones it labels.
LABELLED_BATCHES = (1, 8, 32, 128, 512, 2048, 8192)
SATURATION_BATCHES = np.union1d(np.round(np.geomspace(1, 8192, 200)).astype(int), LABELLED_BATCHES)
CONTEXT_SWEEP = np.unique(np.round(np.geomspace(1, 65536, 200)).astype(int))


def _is_compute_bound(model, gpu, batch, context_tokens, weight_precision, kv_precision):
    """decode_step's own test (compute time > memory time), also where the batch would not fit."""
    g = get_gpu(gpu)
    step = decode_step(
        model,
        g,
        batch,
        context_tokens,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        on_overflow="mask",
    )
    compute_s = np.asarray(step.flops) / peak_flops_per_s(g, weight_precision)
    memory_s = np.asarray(step.bytes_read) / g.memory_bandwidth_bytes_per_s
    return compute_s > memory_s


def compute_bound_batch(model, gpu, context_tokens=0, *, weight_precision="bf16", kv_precision="bf16"):
    """Smallest batch at which a decode step is compute-bound, for users holding ``context_tokens`` each.

    Parameters
    ----------
    model, gpu : ids or dataclasses. context_tokens : KV tokens per user, T ≥ 0 (tokens); array-like
        gives one answer per context in one call.
    weight_precision, kv_precision : precision ids (the weight precision sets the peak FLOP/s).

    Returns the batch (users), ignoring memory (compare with ``roofline.max_batch``). Where no batch
    ever flips: ``None`` for a scalar context, ``inf`` in an array. The GPU count does not matter: G
    multiplies both bandwidth and FLOP/s. Agrees with ``decode_step(...).binding`` (same formula;
    MoE weight reads that grow with the batch are handled by bisection on that test).

    Taught in lesson 61.

    >>> compute_bound_batch("llama-3-8b", "h100-sxm", 4096) is None
    True
    >>> compute_bound_batch("llama-3-8b", "h100-sxm", 0, weight_precision="int4")   # 0.52 bytes/weight
    77
    """
    m, g = get_model(model), get_gpu(gpu)
    t = checked(context_tokens, "context_tokens", minimum=0)
    ridge = ridge_point_flop_per_byte(peak_flops_per_s(g, weight_precision), g.memory_bandwidth_bytes_per_s)
    flops_per_user = 2.0 * active_parameter_count(m) + np.asarray(attention_flops_per_token(m, t))
    margin = flops_per_user - ridge * t * kv_bytes_per_token(m, kv_precision)
    w = weight_bytes(m, weight_precision)
    possible = margin > 0
    # Upper bound from the full weight bytes (an MoE reads at most that), exact for a dense model.
    hi = np.where(possible, np.floor(ridge * w / np.where(possible, margin, 1.0)) + 1, 1.0)
    for _ in range(4):  # guard against rounding at the boundary
        bad = possible & ~_is_compute_bound(m, g, hi, t, weight_precision, kv_precision)
        if not bad.any():
            break
        hi = np.where(bad, hi * 2, hi)
    lo = np.zeros_like(hi)
    while np.any(possible & (hi - lo > 1)):
        mid = np.where(possible, np.floor((lo + hi) / 2), 1.0)
        mid = np.maximum(mid, 1.0)
        ok = _is_compute_bound(m, g, mid, t, weight_precision, kv_precision)
        active = possible & (hi - lo > 1)
        hi = np.where(active & ok, mid, hi)
        lo = np.where(active & ~ok, mid, lo)
    result = np.where(possible, hi, np.inf)
    if result.ndim == 0:
        return int(result) if np.isfinite(result) else None
    return result


def context_limit_tokens(model, gpu, *, weight_precision="bf16", kv_precision="bf16") -> float:
    """Context per user (tokens) at and beyond which no batch makes decode compute-bound:
    T* = 2·N_active ÷ (ridge × k − a), or ``inf`` if the attention FLOPs alone keep up with the KV bytes.

    Taught in lesson 61.

    >>> round(context_limit_tokens("llama-3-8b", "h100-sxm"))
    421
    """
    m, g = get_model(model), get_gpu(gpu)
    ridge = ridge_point_flop_per_byte(peak_flops_per_s(g, weight_precision), g.memory_bandwidth_bytes_per_s)
    per_token_bytes = ridge * kv_bytes_per_token(m, kv_precision)
    attention_per_token = attention_flops_per_token(m, 1)
    if per_token_bytes <= attention_per_token:
        return float("inf")
    return 2.0 * active_parameter_count(m) / (per_token_bytes - attention_per_token)


def throughput_ceiling_tokens_per_s(model, gpu, context_tokens=0, *, num_gpus=1, weight_precision="bf16"):
    """The compute ceiling on total decode throughput: G × peak FLOP/s ÷ FLOPs per token (tokens/s).
    No batch size gets past it. Broadcasts over context and GPU count.

    Taught in lesson 61.

    >>> round(throughput_ceiling_tokens_per_s("llama-3-8b", "h100-sxm"))   # 989e12 / 16.06e9
    61580
    """
    m, g = get_model(model), get_gpu(gpu)
    n = checked(num_gpus, "num_gpus", minimum=1)
    per_token = 2.0 * active_parameter_count(m) + np.asarray(attention_flops_per_token(m, context_tokens))
    return out(n * peak_flops_per_s(g, weight_precision) / per_token)


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

    >>> from roofline.scenario import Scenario
    >>> "B = 425" in saturation_readout(Scenario(context_tokens=128))
    True
    """
    from .widgets import table_html

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
