"""Serving many users: one request at a time (a queue) against continuous batching (a shared weight read).

Taught in lesson 25 (notebooks/25_batching.ipynb).

U users arrive together, each wanting n output tokens, each holding about T tokens of KV.

    one at a time:        request i (0-based) starts at i × n × step(1), ends at (i + 1) × n × step(1)
                          last user done after U × n × step(1); the GPU makes 1 ÷ step(1) tokens/s
    continuous batching:  all U decode together; everyone is done after n × step(U);
                          the GPU makes U ÷ step(U) tokens/s

step(B) is ``decode_step``'s time for B users. Prefill and arrivals spread over time are left out: they
add the same work to both policies (lesson 44 handles prefill).

>>> q = serve_one_at_a_time("llama-3-8b", "h100-sxm", users=20, output_tokens=400, context_tokens=0)
>>> round(q.finish_last_s, 1)          # the card's "20 users wait about 40 s"
38.4
>>> b = serve_continuous_batching("llama-3-8b", "h100-sxm", users=20, output_tokens=400, context_tokens=0)
>>> round(b.finish_last_s, 2)
1.92
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as W
import numpy as np

from ._arrays import checked, out
from .data import get_gpu
from .decode import decode_step
from .errors import InvalidConfigurationError
from .plots import COLORS, LiveFigure, nice_limits
from .scenario import Scenario
from .units import MS
from .widgets import Explorer, table_html

# Numbers of users the lesson's figure sweeps.
USERS_SWEEP = np.unique(np.round(np.geomspace(1, 512, 120)).astype(int))
OUTPUT_TOKEN_OPTIONS = [50, 100, 200, 400, 800, 1600, 3200]
USER_OPTIONS = [1, 2, 4, 5, 8, 10, 16, 20, 32, 50, 64, 100, 128, 200, 256, 384, 512]


@dataclass(frozen=True)
class ServingOutcome:
    """What users see under one serving policy. Array fields broadcast over users, output tokens, context.

    All users arrive at t = 0. "Wait" is the time until a user's first output token; "finish" is the time
    until the user's whole answer is out. Times and rates are NaN where the policy's batch does not fit in
    memory (continuous batching with too many users).
    """

    policy: str
    users: object  # U
    output_tokens: object  # n, tokens each request generates
    context_tokens: object  # T, KV tokens each user holds (typical over the request)
    step_time_s: object  # s, one decode step under this policy
    wait_mean_s: object  # s, mean time to first token
    wait_last_s: object  # s, the last user's time to first token
    finish_mean_s: object  # s, mean time until the answer is complete
    finish_last_s: object  # s, until the last user is done
    tokens_per_s_total: object  # tokens/s the GPU(s) produce while serving
    tokens_per_s_per_user: object  # tokens/s a user sees while being served
    fits: object  # bool


def _inputs(users, output_tokens, context_tokens):
    u = checked(users, "users", minimum=1)
    if np.any(u != np.round(u)):
        raise InvalidConfigurationError(f"users must be a whole number, got {users!r}")
    n = checked(output_tokens, "output_tokens", minimum=1)
    t = checked(context_tokens, "context_tokens", minimum=0)
    return np.broadcast_arrays(u, n, t)


def serve_one_at_a_time(
    model,
    gpu,
    users,
    output_tokens,
    context_tokens=1000,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
) -> ServingOutcome:
    """A server that runs ``generate()`` for one request after another: a queue at batch 1.

    Parameters
    ----------
    model, gpu : ids or dataclasses. users : requests arriving together, U ≥ 1 (whole number).
    output_tokens : tokens each request generates, n ≥ 1. context_tokens : KV tokens per user, T ≥ 0.
    num_gpus, weight_precision, kv_precision : as in ``decode_step``. All array-likes broadcast.

    Request i (0-based) waits for the i before it, each taking n × step(1) seconds.

    Taught in lesson 25.

    >>> q = serve_one_at_a_time("llama-3-8b", "h100-sxm", users=[1, 20], output_tokens=400, context_tokens=0)
    >>> q.wait_last_s.round(2).tolist(), q.tokens_per_s_total.round().tolist()
    ([0.0, 36.4], [209.0, 209.0])
    """
    u, n, t = _inputs(users, output_tokens, context_tokens)
    step = np.asarray(
        decode_step(
            model,
            gpu,
            1,
            t,
            num_gpus=num_gpus,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            on_overflow="mask",
        ).step_time_s
    )
    request = n * step
    return ServingOutcome(
        policy="one at a time",
        users=out(u),
        output_tokens=out(n),
        context_tokens=out(t),
        step_time_s=out(step + 0 * u),
        wait_mean_s=out((u - 1) / 2 * request + step),
        wait_last_s=out((u - 1) * request + step),
        finish_mean_s=out((u + 1) / 2 * request),
        finish_last_s=out(u * request),
        tokens_per_s_total=out(1 / step + 0 * u),
        tokens_per_s_per_user=out(1 / step + 0 * u),
        fits=out(np.isfinite(step + 0 * u)),
    )


def serve_continuous_batching(
    model,
    gpu,
    users,
    output_tokens,
    context_tokens=1000,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
) -> ServingOutcome:
    """All ``users`` decode together, sharing every weight read: one step of batch U makes U tokens.

    Same parameters as ``serve_one_at_a_time``. Where U users' KV does not fit beside the weights, the
    times are NaN and ``fits`` is False (a real server would queue the extra users).

    Taught in lesson 25.

    >>> b = serve_continuous_batching("llama-3-8b", "h100-sxm", users=[1, 20], output_tokens=400,
    ...                               context_tokens=1000)
    >>> (b.step_time_s / 1e-3).round(2).tolist(), b.tokens_per_s_total.round().tolist()
    ([4.83, 5.58], [207.0, 3586.0])
    """
    u, n, t = _inputs(users, output_tokens, context_tokens)
    step = np.asarray(
        decode_step(
            model,
            gpu,
            u,
            t,
            num_gpus=num_gpus,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            on_overflow="mask",
        ).step_time_s
    )
    done = n * step
    return ServingOutcome(
        policy="continuous batching",
        users=out(u),
        output_tokens=out(n),
        context_tokens=out(t),
        step_time_s=out(step),
        wait_mean_s=out(step),
        wait_last_s=out(step),
        finish_mean_s=out(done),
        finish_last_s=out(done),
        tokens_per_s_total=out(u / step),
        tokens_per_s_per_user=out(1 / step),
        fits=out(np.isfinite(step)),
    )


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
        m = self._moving
        seq, bat = COLORS["prefill"], COLORS["decode"]
        self.seq_last = m(left.plot([], [], color=seq, label="one at a time: last user done")[0])
        self.seq_wait = m(
            left.plot([], [], color=seq, ls=":", label="one at a time: mean wait, 1st token")[0]
        )
        self.bat_last = m(left.plot([], [], color=bat, label="batched: everyone done")[0])
        self.bat_wait = m(left.plot([], [], color=bat, ls=":", label="batched: wait for 1st token")[0])
        self.seq_tps = m(right.plot([], [], color=seq, label="one at a time")[0])
        self.bat_tps = m(right.plot([], [], color=bat, label="continuous batching")[0])
        self.markers = [m(ax.plot([], [], "o", color="black", zorder=6, ls="none")[0]) for ax in self.axes]
        for ax in self.axes:
            ax.set(
                xscale="log",
                yscale="log",
                xlabel="users arriving together, U",
                xlim=(1, USERS_SWEEP[-1] * 1.05),
            )
        left.set(ylabel="seconds", title="How long users wait")
        right.set(ylabel="tokens/s, all users", title="What the GPU produces")
        left.legend(loc="upper left", fontsize=10)
        right.legend(loc="upper left")

    def _draw(self, s):
        left, right = self.axes
        users = int(self.options.get("users", 20))
        n = int(self.options.get("output_tokens", 400))
        kw = dict(num_gpus=s.num_gpus, weight_precision=s.weight_precision, kv_precision=s.kv_precision)
        q = serve_one_at_a_time(s.model, s.gpu, USERS_SWEEP, n, s.context_tokens, **kw)
        b = serve_continuous_batching(s.model, s.gpu, USERS_SWEEP, n, s.context_tokens, **kw)
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
        qu = serve_one_at_a_time(s.model, s.gpu, users, n, s.context_tokens, **kw)
        bu = serve_continuous_batching(s.model, s.gpu, users, n, s.context_tokens, **kw)
        self.markers[0].set_data([users, users], [qu.finish_last_s, bu.finish_last_s])
        self.markers[1].set_data([users, users], [qu.tokens_per_s_total, bu.tokens_per_s_total])
        note = f"U={users}, {n} tokens each:\none at a time {qu.finish_last_s:.1f} s\n" + (
            f"batched {bu.finish_last_s:.1f} s" if bu.fits else "batched: does not fit"
        )
        self._transient_artist(left.text(0.97, 0.17, note, transform=left.transAxes, ha="right", fontsize=10))
        limit = self._max_users(s)
        if limit is not None:
            for ax in self.axes:
                self._shade_overflow(ax, limit + 1, USERS_SWEEP[-1], label="batch does not fit")
        self.fig.suptitle(
            f"{s.model} on {s.num_gpus}x {s.gpu}, {n} output tokens per request, "
            f"T={s.context_tokens:,} per user",
            fontsize=12,
        )

    def _max_users(self, s):
        from .memory import max_batch

        limit = max_batch(
            s.model,
            s.gpu,
            max(s.context_tokens, 1),
            num_gpus=s.num_gpus,
            weight_precision=s.weight_precision,
            kv_precision=s.kv_precision,
        )
        return limit if limit < USERS_SWEEP[-1] else None


def serving_readout(s: Scenario, options: dict) -> str:
    """HTML table for the lesson-25 explorer: both policies side by side for ``options["users"]`` users
    wanting ``options["output_tokens"]`` tokens each. Taught in lesson 25.

    >>> "38.7 s" in serving_readout(Scenario(), {"users": 20, "output_tokens": 400})
    True
    """
    users, n = int(options.get("users", 20)), int(options.get("output_tokens", 400))
    kw = dict(num_gpus=s.num_gpus, weight_precision=s.weight_precision, kv_precision=s.kv_precision)
    q = serve_one_at_a_time(s.model, s.gpu, users, n, s.context_tokens, **kw)
    b = serve_continuous_batching(s.model, s.gpu, users, n, s.context_tokens, **kw)
    rows = [
        ("one at a time: last user done", f"{q.finish_last_s:.1f} s"),
        ("one at a time: mean wait, 1st token", f"{q.wait_mean_s:.1f} s"),
        ("one at a time: GPU tokens/s", f"{q.tokens_per_s_total:,.0f}"),
    ]
    if b.fits:
        rows += [
            ("batched: everyone done", f"{b.finish_last_s:.2f} s"),
            ("batched: step time", f"{b.step_time_s / MS:.2f} ms"),
            ("batched: GPU tokens/s", f"{b.tokens_per_s_total:,.0f}"),
        ]
    else:
        rows.append(("batched", f"{users} users' KV does not fit in memory"))
    return table_html(rows)


def serving_explorer(scenario: Scenario | None = None, users: int = 20, output_tokens: int = 400):
    """The lesson-25 explorer: users queued, output tokens per request, context per user, GPU.
    Taught in lesson 25.

    >>> serving_explorer().live.options
    {'users': 20, 'output_tokens': 400}
    """

    scenario = scenario or Scenario()
    style = {"description_width": "11em"}
    layout = W.Layout(width="26em")
    knobs = {
        "users": W.SelectionSlider(
            options=sorted(set(USER_OPTIONS) | {users}),
            value=users,
            description="users U",
            style=style,
            layout=layout,
        ),
        "output_tokens": W.SelectionSlider(
            options=sorted(set(OUTPUT_TOKEN_OPTIONS) | {output_tokens}),
            value=output_tokens,
            description="output tokens n",
            style=style,
            layout=layout,
        ),
    }
    return Explorer(QueueVsBatching, ["context_tokens", "gpu"], scenario, serving_readout, knobs=knobs)


def gpu_upgrade_vs_batching(model, users, output_tokens, context_tokens, gpu="h100-sxm", bigger_gpu="h200"):
    """The trap in numbers: the last user's finish time with a bigger GPU serving one at a time, against
    the same GPU serving the users as one batch (s). Returns a dict of the three times.

    Taught in lesson 25.

    >>> r = gpu_upgrade_vs_batching("llama-3-8b", 20, 400, 1000)
    >>> round(r["one at a time"], 1), round(r["one at a time, bigger GPU"], 1), round(r["batched"], 1)
    (38.7, 27.0, 2.2)
    """
    get_gpu(bigger_gpu)
    return {
        "one at a time": serve_one_at_a_time(model, gpu, users, output_tokens, context_tokens).finish_last_s,
        "one at a time, bigger GPU": serve_one_at_a_time(
            model, bigger_gpu, users, output_tokens, context_tokens
        ).finish_last_s,
        "batched": serve_continuous_batching(model, gpu, users, output_tokens, context_tokens).finish_last_s,
    }
