"""The speculative-decoding lesson's figures, readout and explorer: tokens per verify step and the speedup.

>>> from roofline.scenario import Scenario
>>> "tokens per verify step" in speculative_readout(Scenario(), SPECULATIVE_DEFAULTS)
True
"""

from __future__ import annotations

import ipywidgets as W
import numpy as np

from roofline.course.figures import BATCH_AXIS, BATCH_SWEEP, COLORS, PALETTE, LiveFigure, nice_limits
from roofline.course.readouts import StepCase, case_readout_for, combine_readouts, table_html
from roofline.course.widgets import STEP, Explorer
from roofline.physics.speculative import (
    expected_tokens_per_step,
    speculative_collapse_batch,
    speculative_step,
)
from roofline.physics.step import forward_step
from roofline.scenario import Scenario
from roofline.units import MS

SPECULATIVE_DEFAULTS = {"draft_tokens": 4, "acceptance": 0.7, "draft_cost_ratio": 0.05}


def _options(s: Scenario, options: dict | None, **changes) -> dict:
    """The keywords of ``speculative_step`` for the scenario and the explorer's k, α and r."""
    o = {**SPECULATIVE_DEFAULTS, **(options or {}), **changes}
    keys = ("draft_tokens", "acceptance", "draft_cost_ratio")
    return {k: o[k] for k in keys} | s.deployment


def _spec(s: Scenario, batch, options, **changes):
    return speculative_step(
        s.model, s.gpu, batch, s.context_tokens, on_overflow="mask", **_options(s, options, **changes)
    )


class ExpectedTokens(LiveFigure):
    """Expected tokens per verify step, (1 − α^(k+1)) ÷ (1 − α), against the drafts k, for a few α;
    the dashed line is k + 1 (every draft accepted). Does not depend on the scenario."""

    def _build(self):
        ax = self.axes[0]
        k = np.arange(0, 13)
        ax.plot(k, k + 1, ls="--", color="#777777", label="α = 1: k + 1")
        for a, c in zip((0.9, 0.8, 0.7, 0.6, 0.5), PALETTE[1:], strict=False):
            ax.plot(k, expected_tokens_per_step(a, k), "o-", ms=4, color=c, label=f"α = {a}")
            ax.axhline(1 / (1 - a), color=c, lw=0.8, ls=":")
        ax.set(xlabel="drafted tokens per step, k", ylabel="expected tokens per verify step", ylim=(0, 14))
        ax.legend(loc="upper left", fontsize=11)
        ax.set_title("Dotted: the limit 1 ÷ (1 − α) however many tokens are drafted", fontsize=12)

    def _draw(self, s):
        pass


class SpeculativeSpeedupVsBatch(LiveFigure):
    """Left: speculative and plain tokens/s per user against batch (log-log). Right: the speed-up per user
    against batch for a few acceptance rates and the explorer's own (bold), with 1× marked and the batch
    where the gain first drops below 1. Options: ``draft_tokens``, ``acceptance``, ``draft_cost_ratio``."""

    ncols = 2

    def _build(self):
        left, right = self.axes
        self.plain = self._line(left, color=COLORS["decode"], label="plain decode")
        self.spec = self._line(left, color=COLORS["prefill"], label="speculative")
        self.marker = self._line(right, "o", color="black", zorder=6)
        self.others = {
            a: self._line(right, color=c, lw=1.2, label=f"α = {a}")
            for a, c in zip((0.5, 0.7, 0.9), PALETTE[1:], strict=False)
        }
        self.mine = self._line(right, color="black", lw=2.6, label="your α")
        left.set(yscale="log", xlabel="batch B (users)", ylabel="tokens/s per user", **BATCH_AXIS)
        right.set(xlabel="batch B (users)", ylabel="speed-up per user (×)", **BATCH_AXIS)
        right.axhline(1.0, color="#777777", lw=1)
        left.legend(loc="lower left")
        right.legend(loc="upper right", fontsize=11)

    def _draw(self, s):
        tr = self._transient_artist
        left, right = self.axes
        o = {**SPECULATIVE_DEFAULTS, **self.options}
        sweep = _spec(s, BATCH_SWEEP, o)
        self.plain.set_data(BATCH_SWEEP, sweep.plain_tokens_per_s_per_user)
        self.spec.set_data(BATCH_SWEEP, sweep.tokens_per_s_per_user)
        left.set_ylim(nice_limits(np.concatenate([sweep.plain_tokens_per_s_per_user,
                                                  sweep.tokens_per_s_per_user]), log=True))  # fmt: skip
        tops = [np.nanmax(np.append(sweep.speedup, 1.0))]
        for a, line in self.others.items():
            other = _spec(s, BATCH_SWEEP, o, acceptance=a)
            line.set_data(BATCH_SWEEP, other.speedup)
            tops.append(np.nanmax(np.append(other.speedup, 1.0)))
        self.mine.set_data(BATCH_SWEEP, sweep.speedup)
        right.set_ylim(nice_limits(tops, log=False))
        here = _spec(s, s.batch, o)
        self._mark(self.marker, here.fits, [s.batch], [here.speedup])
        below = np.asarray(sweep.speedup) < 1
        if below.any():
            b = BATCH_SWEEP[np.argmax(below)]
            text, color, where = f"< 1× from B ≈ {b}", COLORS["prefill"], right.get_xaxis_transform()
            self._transient_artist(right.axvline(b, color=color, ls="--", lw=1))
            tr(right.text(b * 1.08, 0.05, text, transform=where, fontsize=11, color=color))
        self._shade_overflow(right, s.users_that_fit() + 1)
        left.set_title(f"{s.model} on {s.num_gpus}x {s.gpu}, T={s.context_tokens:,}", fontsize=12)
        right.set_title(
            f"k = {o['draft_tokens']}, draft cost r = {o['draft_cost_ratio']:g}, "
            f"your α = {o['acceptance']:g}",
            fontsize=12,
        )


def speculative_readout(s: Scenario, options: dict | None = None) -> str:
    """HTML table of one speculative cycle at the scenario: E, draft, verify, cycle, speed-up, collapse."""
    o = {**SPECULATIVE_DEFAULTS, **(options or {})}
    x = _spec(s, s.batch, o)
    if not x.fits:
        return table_html([("memory", "does not fit: no step time")])
    collapse = speculative_collapse_batch(s.model, s.gpu, s.context_tokens, **_options(s, o))
    never = "never (up to 4,096 users that fit)"
    plain = x.plain_tokens_per_s_per_user
    return table_html(
        [
            ("tokens per verify step", f"{x.expected_tokens_per_step:.2f}"),
            ("draft time", f"{x.draft_time_s / MS:.2f} ms"),
            ("verify time", f"{x.verify_time_s / MS:.2f} ms ({x.verify_binding}-bound)"),
            ("plain step", f"{x.plain_step_time_s / MS:.2f} ms"),
            ("tokens/s per user", f"{x.tokens_per_s_per_user:,.0f} (plain {plain:,.0f})"),
            ("speed-up", f"{x.speedup:.2f}x"),
            ("below 1x from batch", never if collapse != collapse else f"{collapse:,.0f}"),
        ]
    )  # fmt: skip


def speculative_case(s: Scenario, options: dict | None = None) -> StepCase:
    """The step the speculative lesson's explorer is about: one speculative cycle of B users, the verify
    step (k + 1 new tokens each) plus k drafts at r plain decode steps each, giving each user E tokens.

    >>> c = speculative_case(Scenario(context_tokens=128), {"draft_tokens": 4, "acceptance": 0.7,
    ...                                                     "draft_cost_ratio": 0.05})
    >>> c.title, round(c.tokens_per_user, 2)        # E = (1 - 0.7^5) / (1 - 0.7)
    ('one speculative cycle of one user at 128 tokens: 4 drafts, then the verify step', 2.77)
    """
    o = {**SPECULATIVE_DEFAULTS, **(options or {})}
    k, a, r = int(o["draft_tokens"]), float(o["acceptance"]), float(o["draft_cost_ratio"])
    kw = dict(s.deployment, on_overflow="mask")
    verify = forward_step(s.model, s.gpu, s.batch, s.context_tokens, new_tokens=k + 1, **kw)
    plain = forward_step(s.model, s.gpu, s.batch, s.context_tokens, new_tokens=1, **kw)
    who = "one user" if s.batch == 1 else f"{s.batch:,} users"
    title = f"one speculative cycle of {who} at {s.context_tokens:,} tokens: {k} drafts, then the verify step"
    parts = ((verify, 1.0), (plain, k * r))
    return StepCase(title, parts, float(expected_tokens_per_step(a, k)), float(s.batch))


def speculative_explorer(scenario: Scenario | None = None) -> Explorer:
    """The speculative-decoding lesson's explorer: every control of a step, the drafts k, the acceptance α
    and the draft-cost ratio r; the engine column times the speculative cycle (drafts and verify step)."""
    v, lazy = SPECULATIVE_DEFAULTS, dict(continuous_update=False)
    knobs = {
        "draft_tokens": W.IntSlider(value=v["draft_tokens"], min=0, max=12, description="drafts k", **lazy),
        "acceptance": W.FloatSlider(
            value=v["acceptance"], min=0.0, max=1.0, step=0.05, description="acceptance α", **lazy
        ),
        "draft_cost_ratio": W.FloatSlider(
            value=v["draft_cost_ratio"], min=0.0, max=0.5, step=0.01, description="draft cost r", **lazy
        ),
    }
    return Explorer(
        SpeculativeSpeedupVsBatch,
        controls=STEP,
        scenario=scenario or Scenario(context_tokens=128),
        readout=combine_readouts(speculative_readout, case_readout_for(speculative_case)),
        knobs=knobs,
    )
