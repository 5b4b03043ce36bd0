"""The figures, readouts and explorer of lesson 25, taught in notebooks/25_batching.ipynb."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from roofline import sim
from roofline.course.figures import COLORS, LOG_LOG, LiveFigure, new_figure, nice_limits, show
from roofline.course.readouts import (
    StepCase,
    case_readout_for,
    combine_readouts,
    cost_text,
    decode_case,
    table_html,
)
from roofline.course.widgets import Explorer, mark_axis, stops_slider
from roofline.lessons.batching.numbers import (
    OUTPUT_TOKEN_OPTIONS,
    USER_OPTIONS,
    USERS_SWEEP,
    serve_continuous_batching,
    serve_one_at_a_time,
)
from roofline.scenario import Scenario
from roofline.units import MS


class QueueVsBatching(LiveFigure):
    """Left: time until the last user is done and mean wait for a first token, against the number of
    users, for both policies (log-log). Right: total tokens/s for both. Options: ``users`` (marked) and
    ``output_tokens`` (per request)."""

    ncols = 2

    def __repr__(self) -> str:
        s = self.scenario
        return (
            f"<QueueVsBatching: {s.model} on {s.num_gpus}x {s.gpu}, U={self.options.get('users', 20)}, "
            f"n={self.options.get('output_tokens', 400)}, T={s.context_tokens}>"
        )

    def _build(self):
        left, right = self.axes
        seq, bat = COLORS["prefill"], COLORS["decode"]
        self.seq_last = self._line(left, color=seq, label="one at a time: last user done")
        self.seq_wait = self._line(left, color=seq, ls=":", label="one at a time: mean wait, 1st token")
        self.bat_last = self._line(left, color=bat, label="batched: everyone done")
        self.bat_wait = self._line(left, color=bat, ls=":", label="batched: wait for 1st token")
        self.seq_tps = self._line(right, color=seq, label="one at a time")
        self.bat_tps = self._line(right, color=bat, label="continuous batching")
        self.markers = [self._line(ax, "o", color="black", zorder=6, ls="none") for ax in self.axes]
        for ax in self.axes:
            ax.set(**LOG_LOG, xlabel="users arriving together, U", xlim=(1, USERS_SWEEP[-1] * 1.05))
        left.set(ylabel="seconds", title="How long users wait")
        right.set(ylabel="tokens/s, all users", title="What the GPU produces")
        left.legend(loc="upper left", fontsize=10)
        right.legend(loc="upper left")

    def _draw(self, s):
        left, right = self.axes
        users = int(self.options.get("users", 20))
        n = int(self.options.get("output_tokens", 400))
        q = serve_one_at_a_time(s.model, s.gpu, USERS_SWEEP, n, s.context_tokens, **s.deployment)
        b = serve_continuous_batching(s.model, s.gpu, USERS_SWEEP, n, s.context_tokens, **s.deployment)
        self.seq_last.set_data(USERS_SWEEP, q.finish_last_s)
        self.seq_wait.set_data(USERS_SWEEP, q.wait_mean_s)
        self.bat_last.set_data(USERS_SWEEP, b.finish_last_s)
        self.bat_wait.set_data(USERS_SWEEP, b.wait_mean_s)
        self.seq_tps.set_data(USERS_SWEEP, q.tokens_per_s_total)
        self.bat_tps.set_data(USERS_SWEEP, b.tokens_per_s_total)
        lo, hi = nice_limits(np.concatenate([q.finish_last_s, b.wait_mean_s]), log=True)
        left.set_ylim(lo, hi * 1000)  # room for the legend above the curves
        lo, hi = nice_limits(np.concatenate([q.tokens_per_s_total, b.tokens_per_s_total]), log=True)
        right.set_ylim(lo, hi * 10)
        qu = serve_one_at_a_time(s.model, s.gpu, users, n, s.context_tokens, **s.deployment)
        bu = serve_continuous_batching(s.model, s.gpu, users, n, s.context_tokens, **s.deployment)
        self.markers[0].set_data([users, users], [qu.finish_last_s, bu.finish_last_s])
        self.markers[1].set_data([users, users], [qu.tokens_per_s_total, bu.tokens_per_s_total])
        note = f"U={users}, {n} tokens each:\none at a time {qu.finish_last_s:.1f} s\n" + (
            f"batched {bu.finish_last_s:.1f} s" if bu.fits else "batched: does not fit"
        )
        self._transient_artist(left.text(0.97, 0.17, note, transform=left.transAxes, ha="right", fontsize=10))
        for ax in self.axes:
            self._shade_overflow(ax, s.users_that_fit() + 1, USERS_SWEEP[-1], label="batch does not fit")
        self.fig.suptitle(
            f"{s.model} on {s.num_gpus}x {s.gpu}, {n} output tokens per request, "
            f"T={s.context_tokens:,} per user",
            fontsize=12,
        )


def serving_readout(s: Scenario, options: dict) -> str:
    """HTML table for the lesson-25 explorer: both policies side by side for ``options["users"]`` users
    wanting ``options["output_tokens"]`` tokens each.

    >>> "36.4 s" in serving_readout(Scenario(), {"users": 20, "output_tokens": 400})
    True
    """
    users, n = int(options.get("users", 20)), int(options.get("output_tokens", 400))
    q = serve_one_at_a_time(s.model, s.gpu, users, n, s.context_tokens, **s.deployment)
    b = serve_continuous_batching(s.model, s.gpu, users, n, s.context_tokens, **s.deployment)
    rows = [
        ("one at a time: last user done", f"{q.finish_last_s:.1f} s"),
        ("one at a time: mean wait, 1st token", f"{q.wait_mean_s:.1f} s"),
        ("one at a time: GPU tokens/s", f"{q.tokens_per_s_total:,.0f}"),
        ("one at a time: cost per 1M tokens", cost_text(s, float(q.tokens_per_s_total))),
    ]
    if b.fits:
        rows += [
            ("batched: first token (prefill of all prompts)", f"{b.wait_last_s / MS:,.0f} ms"),
            ("batched: everyone done", f"{b.finish_last_s:.2f} s"),
            ("batched: step time", f"{b.step_time_s / MS:.2f} ms"),
            ("batched: GPU tokens/s", f"{b.tokens_per_s_total:,.0f}"),
            ("batched: cost per 1M tokens", cost_text(s, float(b.tokens_per_s_total))),
        ]
    else:
        rows.append(("batched", f"{users} users' KV does not fit in memory"))
    return table_html(rows)


def serving_case(s: Scenario, options: dict) -> StepCase:
    """The step lesson 25's explorer is about: one decode step of the batched server, all
    ``options["users"]`` users (U = B) at the scenario's context.

    >>> serving_case(Scenario(), {"users": 20}).title
    'the batched server: one decode step of 20 users at 1,000 tokens each'
    """
    case = decode_case(s, batch=int(options.get("users", 20)))
    return replace(case, title=f"the batched server: {case.title}")


def latency_vs_load_figure(sweep: sim.LoadSweep, title: str = ""):
    """The hockey stick: p50 and p99 TTFT (left) and TPOT (right) against arrival rate, with the
    closed-form sustainable rate marked. Returns a picture for a notebook.

    >>> server = sim.SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1, requests=100)
    >>> latency_vs_load_figure(sim.latency_vs_load(server, (0.3, 0.9)))
    <latency against load>
    """
    fig, (left, right) = new_figure(2)
    x = sweep.rates_per_s
    for ax, p50, p99, name in (
        (left, sweep.ttft_p50_s, sweep.ttft_p99_s, "TTFT"),
        (right, sweep.tpot_p50_s, sweep.tpot_p99_s, "TPOT"),
    ):
        ax.plot(x, p50 / MS, "o-", color=COLORS["decode"], label=f"p50 {name}")
        ax.plot(x, p99 / MS, "s-", color=COLORS["prefill"], label=f"p99 {name}")
        ax.axvline(sweep.sustainable_rate_per_s, color="black", ls=":", lw=1)
        ax.text(sweep.sustainable_rate_per_s, 0.97, " sustainable\n (closed form)", va="top", fontsize=10,
                transform=ax.get_xaxis_transform())  # fmt: skip
        if np.any(sweep.unstable):
            ax.axvspan(x[np.argmax(sweep.unstable)], x[-1], color=COLORS["overflow"], alpha=0.2, lw=0)
        ax.set(xlabel="arrival rate (requests/s)", ylabel="ms", title=f"{name} against load")
        ax.set_yscale("log" if name == "TTFT" else "linear")
        if name == "TPOT":
            ax.set_ylim(nice_limits(p99 / MS, log=False))
        ax.legend(loc="upper left", fontsize=10)
    if title:
        fig.suptitle(title, fontsize=12)
    return show(fig, "latency against load")


def serving_explorer(scenario: Scenario | None = None):
    """The lesson-25 explorer: users queued (they are the batch B of the batched server), output tokens
    per request, context per user, precision, GPUs.

    >>> serving_explorer().live.options
    {'users': 20, 'output_tokens': 400, 'engine': 'vllm'}
    """
    scenario = scenario or Scenario()
    knobs = {
        "users": mark_axis(stops_slider(USER_OPTIONS, 20, "users U = batch B"), "batch"),
        "output_tokens": stops_slider(OUTPUT_TOKEN_OPTIONS, 400, "output tokens n"),
    }
    # the lesson's table, then one decode step of the batched server (all U users): floor, engine, cost
    readout = combine_readouts(serving_readout, case_readout_for(serving_case))
    return Explorer(
        QueueVsBatching, ["context_tokens", "weight_precision", "num_gpus", "gpu", "model"], scenario,
        readout, knobs=knobs,
    )  # fmt: skip
