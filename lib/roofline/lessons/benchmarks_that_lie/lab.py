"""The figures, readouts and explorer of lesson 06, taught in notebooks/06_benchmarks_that_lie.ipynb."""

from __future__ import annotations

import html

import ipywidgets as W
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import HTML

from roofline.checks import checked
from roofline.course.figures import (
    BATCH_SWEEP,
    COLORS,
    LOG_LOG,
    STYLE_PATH,
    LiveFigure,
    describe,
    new_figure,
    nice_limits,
    plain_log_ticks,
    show,
)
from roofline.course.readouts import decode_readout, table_html
from roofline.course.widgets import STEP, Explorer
from roofline.lessons.benchmarks_that_lie.numbers import BurstTTFT, latency_summary, plausibility
from roofline.measure.benchmark_plot import draw as draw_benchmark
from roofline.scenario import Scenario
from roofline.units import MS, fmt_time


class CeilingVsBatch(LiveFigure):
    """The decode ceiling (total tokens/s) against batch, the impossible region above it, and a claim.

    Option: ``claimed_tokens_per_s`` (the claim, at the scenario's batch).
    """

    def _build(self):
        ax = self.axes[0]
        self.ceiling = self._line(ax, color=COLORS["step"], label="ceiling: B ÷ roofline step time")
        self.claim = self._line(ax, "X", ms=14, color=COLORS["prefill"], label="the claim", zorder=6)
        ax.fill_between([], [], color=COLORS["prefill"], alpha=0.12, label="impossible for plain decoding")
        batch = "batch B (users decoding together)"
        ax.set(**LOG_LOG, xlabel=batch, ylabel="tokens/s, all users", xlim=(0.8, BATCH_SWEEP[-1] * 1.05))
        ax.legend(loc="upper left")

    def _draw(self, s):
        ax = self.axes[0]
        claimed = float(self.options.get("claimed_tokens_per_s", 2000))
        sweep = s.decode(batch=BATCH_SWEEP)
        ceiling = sweep.tokens_per_s_total
        self.ceiling.set_data(BATCH_SWEEP, ceiling)
        lo, hi = nice_limits(np.concatenate([ceiling, [claimed]]), log=True)
        hi = max(hi, lo * 1e4)
        ax.set_ylim(lo, hi)
        self._transient_artist(
            ax.fill_between(BATCH_SWEEP, ceiling, hi, color=COLORS["prefill"], alpha=0.12, lw=0)
        )
        p = plausibility(s, claimed)
        self.claim.set_data([s.batch], [claimed])
        look = dict(ha="right" if s.batch > 32 else "left", color="#b00020" if not p.plausible else "black")
        box = {"fc": "white", "alpha": 0.85, "lw": 0}
        self._note(ax, p.verdict, (s.batch, claimed), (10, 10), fontsize=11, bbox=box, **look)
        self._shade_overflow(ax, s.users_that_fit() + 1)
        ax.set_title(f"Decode ceiling: {describe(s)}, T={s.context_tokens:,}", fontsize=12)


def plausibility_readout(s: Scenario, options) -> str:
    """HTML table: the claim, the ceiling, the ratio and the verdict."""
    p = plausibility(s, options["claimed_tokens_per_s"])
    rows = [("claimed", f"{p.claimed_tokens_per_s:,.0f} tokens/s")]
    if np.isfinite(p.ceiling_tokens_per_s):
        rows += [
            ("ceiling (B ÷ roofline step)", f"{p.ceiling_tokens_per_s:,.0f} tokens/s"),
            ("claim ÷ ceiling", f"{p.ratio:.2f}x"),
        ]
    rows.append(("verdict", p.verdict.split(":")[0]))
    # The same decode step as a server would run it: floor beside achievable, and the cost per 1M tokens.
    return table_html(rows) + decode_readout(s, options)


def latency_figure(latencies_s, warmup_calls: int = 1):
    """Each call's latency (ms, log scale) with the mean and percentiles, with and without the first
    ``warmup_calls`` calls.

    A Picture for a notebook.
    """
    x = checked(latencies_s, "latencies_s", above=0).ravel()
    cold, warm = latency_summary(x), latency_summary(x, warmup_calls)
    fig, (ax,) = new_figure(figsize=(9, 4.2))
    with plt.style.context(STYLE_PATH):
        calls = np.arange(1, x.size + 1)
        ax.plot(calls, x / MS, ".", color=COLORS["decode"], ms=6, label="one call")
        ax.plot(
            calls[:warmup_calls],
            x[:warmup_calls] / MS,
            "o",
            color=COLORS["prefill"],
            ms=10,
            label="cold (warm-up) call",
        )
        lines = [
            (cold.mean_s, "mean, all calls", COLORS["prefill"], "--"),
            (warm.mean_s, "mean after warm-up", COLORS["kv"], "--"),
            (warm.p50_s, "p50 after warm-up", COLORS["step"], "-"),
            (warm.p99_s, "p99 after warm-up", COLORS["compute"], "-"),
        ]
        for value, label, color, ls in lines:
            ax.axhline(value / MS, color=color, ls=ls, lw=1.8, label=f"{label}: {value / MS:.1f} ms")
        ax.set(yscale="log", xlabel="call number", ylabel="latency (ms)", xlim=(0, x.size + 1))
        ax.legend(loc="upper right", ncols=2, fontsize=10)
        ax.set_title("One latency sample, summarized four ways", fontsize=12)
    return show(fig, "latency sample")


def burst_figure(b: BurstTTFT):
    """Each request's TTFT (ms, log scale) in the order a serving benchmark sent them: the first wave of C
    prompts queues behind each other; with the harness's mean and median, and one request alone.

    A Picture for a notebook.
    """
    fig, (ax,) = new_figure(figsize=(9, 4.2))
    n = np.arange(1, b.ttft_s.size + 1)
    first = n <= b.concurrency
    ax.plot(n[~first], b.ttft_s[~first] / MS, ".", color=COLORS["decode"], ms=5, label="later requests")
    ax.plot(n[first], b.ttft_s[first] / MS, "o", color=COLORS["prefill"], ms=5,
            label=f"first wave: {b.concurrency} sent at once")  # fmt: skip
    lines = [
        (b.mean_s, "mean (what the harness reports)", COLORS["prefill"], "--"),
        (b.median_s, "median", COLORS["step"], "-"),
        (b.alone_s, "one request alone", COLORS["kv"], ":"),
    ]
    for value, label, color, ls in lines:
        ax.axhline(value / MS, color=color, ls=ls, lw=1.8, label=f"{label}: {value / MS:.0f} ms")
    ax.set(yscale="log", xlabel="request, in the order sent", ylabel="TTFT (ms)", xlim=(0, n[-1] + 1))
    plain_log_ticks(ax.yaxis)  # 10, 20, 50, 100, … ms
    fig.legend(loc="outside lower center", ncols=3)  # below the axes, so it hides no request
    ax.set_title(f"TTFT of one server under a benchmark's burst ({b.concurrency} clients)", fontsize=12)
    return show(fig, "benchmark burst")


def plausibility_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 06's explorer: type a claimed tokens/s (2,000 to start); choose model, GPU, GPU count, weight
    precision, batch and context.

    >>> ex = plausibility_explorer()
    >>> ex.set(claimed_tokens_per_s=150.0); ex.readout.value.count("plausible")
    1
    """
    knobs = {
        "claimed_tokens_per_s": W.BoundedFloatText(
            value=2000, min=1, max=1e7, step=10, description="claimed tokens/s"
        )
    }
    return Explorer(
        CeilingVsBatch,
        STEP,
        scenario or Scenario(context_tokens=0),
        plausibility_readout,  # the claim against the ceiling, then one step: floor, a good engine, the cost
        knobs=knobs,
        presets={
            "the card: teammate's 2,000 tok/s, one user": {"claimed_tokens_per_s": 2000.0, "batch": 1},
            "the card: the PM's 300 tok/s, one user": {"claimed_tokens_per_s": 300.0, "batch": 1},
        },
    )


def file_report(result: dict) -> HTML:
    """A diagnosed result file (``diagnose_file``) as a table: a row per measurement with its floor, the
    engine's time, the ratio to the floor, MBU, where it sits; then each serving run replayed in the
    simulator under the file's load (``replay_rows``); the file's flags below."""
    rows = [("", "measured", "floor", "engine", "÷ floor", "MBU", "sits in")]
    flags = []
    for run in result["runs"]:
        for p in run["placements"]:
            mbu = "—" if p["mbu"] is None else f"{p['mbu']:.0%}"
            rows.append((f"record {run['record']}: {p['metric'].upper()}", f"{p['measured_s'] / MS:.2f} ms",
                         f"{p['floor_s'] / MS:.2f} ms", f"{p['achievable_s'] / MS:.2f} ms",
                         f"{p['measured_over_floor']:.2f}×", mbu, p["sits_in"].split(" (")[0]))  # fmt: skip
        flags += [f"record {run['record']}: {f}" for f in run["flags"]]
    notes = "".join(f"<li>{html.escape(f)}</li>" for f in flags) or "<li>no flags: nothing impossible</li>"
    replayed = replay_rows(result)
    return HTML(table_html(rows) + (table_html(replayed) if len(replayed) > 1 else "") + f"<ul>{notes}</ul>")


def replay_rows(result: dict) -> list[tuple]:
    """A header, then per serving run of a diagnosed file: its load and the simulated mean TTFT, TPOT and
    request latency, each with its ratio to the measured one (``roofline.measure.benchmark_replay``)."""
    rows = [("", "simulated under the file's load", "TTFT", "TPOT", "request latency")]
    for run in result["runs"]:
        if "replay" not in run or "error" in run["replay"]:
            continue
        r = run["replay"]
        ratios = {k: "" if v is None else f" ({v:.2f}× measured)" for k, v in r["ratio"].items()}
        cells = [fmt_time(r["simulated"][k]) + ratios[k] for k in ("ttft", "tpot", "request_latency")]
        rows.append((f"record {run['record']} on {r['engine']}", r["load"], *cells))
    return rows


def file_figure(result: dict):
    """``roofline.measure.benchmark_plot.draw`` in the course's style: each measurement of a diagnosed
    result file against the floor and the engine. A Picture for a notebook."""
    measured = sum(len(run["placements"]) for run in result["runs"])
    fig, (ax,) = new_figure(figsize=(9, 0.45 * measured + 2.4))
    with plt.style.context(STYLE_PATH):
        draw_benchmark(result, ax)
    return show(fig, f"{measured} measurements of a benchmark file against the floor and a tuned engine")
