"""Lesson 16's figures and explorer: the step's parts, the throughput and the memory against batch.

>>> StepTimeVsBatch(Scenario(batch=32))
<StepTimeVsBatch: llama-3-8b on 1x h100-sxm, bf16 weights, bf16 KV, B=32, T=1000>
"""

from __future__ import annotations

import numpy as np

from roofline.course.figures import (
    BATCH_AXIS,
    BATCH_SWEEP,
    COLORS,
    LiveFigure,
    TwoPanelsVsBatch,
    describe,
    engine_sweep_s,
    nice_limits,
)
from roofline.course.widgets import STEP, Explorer
from roofline.data import get_gpu
from roofline.physics.architecture import kv_bytes_per_token, weight_bytes
from roofline.physics.memory import kv_cache_bytes
from roofline.scenario import Scenario
from roofline.units import GB, MS


class StepTimeVsBatch(LiveFigure):
    """Decode step time against batch, split into weight read, KV read and compute (ms, log-log), with
    what a good engine (the menu's, else the GPU's usual one: ``roofline.engines``) reaches beside the ideal
    step."""

    def _build(self):
        ax = self.axes[0]
        self.lines = {
            "weights": self._line(ax, color=COLORS["weights"], ls="--", label="weight read"),
            "kv": self._line(ax, color=COLORS["kv"], ls="--", label="KV read"),
            "compute": self._line(ax, color=COLORS["compute"], ls=":", label="compute"),
            "step": self._line(ax, color=COLORS["step"], label="step = max(memory, compute)"),
            "achievable": self._line(ax, color=COLORS["prefill"], ls="-.", lw=2, label="a good engine"),
        }
        self.marker = self._line(ax, "o", color=COLORS["step"], zorder=5)
        batch = "batch B (users decoding together)"
        ax.set(yscale="log", xlabel=batch, ylabel="time per step (ms)", **BATCH_AXIS)
        ax.legend(loc="upper left")

    def _draw(self, s):
        ax = self.axes[0]
        sweep = s.decode(batch=BATCH_SWEEP)
        seconds_per_byte = 1 / (s.num_gpus * get_gpu(s.gpu).memory_bandwidth_bytes_per_s)
        # Parts of a step that cannot run (memory overflow) are not drawn: no time without a server.
        weights_ms = np.where(sweep.fits, sweep.weight_bytes_read * seconds_per_byte / MS, np.nan)
        kv_ms = np.where(
            sweep.fits & (sweep.kv_bytes_read > 0), sweep.kv_bytes_read * seconds_per_byte / MS, np.nan
        )
        self.lines["weights"].set_data(BATCH_SWEEP, weights_ms)
        self.lines["kv"].set_data(BATCH_SWEEP, kv_ms)
        self.lines["compute"].set_data(BATCH_SWEEP, np.where(sweep.fits, sweep.compute_time_s / MS, np.nan))
        self.lines["step"].set_data(BATCH_SWEEP, sweep.step_time_s / MS)
        engine = self._engine(s)
        real_ms = engine_sweep_s(s, engine) / MS  # NaN without a calibration for this case: the ideal alone
        self.lines["achievable"].set_data(BATCH_SWEEP, real_ms)
        self.lines["achievable"].set_label(f"a good engine ({engine})")
        ax.legend(loc="upper left")
        ax.set_ylim(nice_limits(np.concatenate([weights_ms, sweep.step_time_s / MS, real_ms]), log=True))
        here = s.decode()
        y = here.step_time_s / MS
        if self._mark(self.marker, here.fits, [s.batch], [y]):
            text = f"B={s.batch}, T={s.context_tokens:,}: {y:.2f} ms ({here.binding}-bound)"
            # above the point, on the side where the curve is flatter and lower
            offset, ha = ((10, 12), "left") if s.batch < 16 else ((-10, 10), "right")
            box = {"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85}
            self._note(ax, text, (s.batch, y), offset, ha=ha, fontsize=12, bbox=box)
        self._shade_overflow(ax, s.users_that_fit() + 1)
        ax.set_title(f"Decode step time: {describe(s)}", fontsize=12)


class ThroughputVsBatch(TwoPanelsVsBatch):
    """Total tokens/s (the GPU's output) and per-user tokens/s (what one user feels) against batch."""

    panels = (
        ("tokens/s, all users", "GPU output", COLORS["decode"]),
        ("tokens/s, each user", "What each user feels", COLORS["prefill"]),
    )

    def _curves(self, s, sweep):
        return sweep.tokens_per_s_total, sweep.tokens_per_s_per_user

    def _real_curves(self, s, step_s):
        return BATCH_SWEEP / step_s, 1 / step_s

    def _points(self, s, here):
        return tuple((v, f"{v:,.0f} tok/s") for v in (here.tokens_per_s_total, here.tokens_per_s_per_user))

    def _suptitle(self, s):
        return f"Throughput: {describe(s)}, T={s.context_tokens:,}"


class MemoryUse(LiveFigure):
    """Weights plus every user's KV cache against the GPUs' memory, as batch grows (GB)."""

    def _build(self):
        ax = self.axes[0]
        m = self._moving
        self.capacity = m(ax.axhline(1, color=COLORS["capacity"], lw=3, label="GPU memory (all GPUs)"))
        self.marker = m(ax.axvline(1, color="black", lw=1.5, ls=":"))
        # Proxy handles so the legend (part of the cached background) never changes.
        ax.fill_between([], [], color=COLORS["weights"], alpha=0.7, label="weights")
        ax.fill_between([], [], color=COLORS["kv"], alpha=0.7, label="KV cache, B users x T tokens")
        ax.set(xlabel="batch B (users)", ylabel="memory (GB)", **BATCH_AXIS)
        ax.legend(loc="upper left")

    def _draw(self, s):
        ax = self.axes[0]
        w = weight_bytes(s.model, s.weight_precision)
        kv = kv_cache_bytes(BATCH_SWEEP, s.context_tokens, kv_bytes_per_token(s.model, s.kv_precision))
        cap = get_gpu(s.gpu).memory_bytes * s.num_gpus
        tr = self._transient_artist
        tr(ax.fill_between(BATCH_SWEEP, 0, w / GB, color=COLORS["weights"], alpha=0.7))
        tr(ax.fill_between(BATCH_SWEEP, w / GB, (w + kv) / GB, color=COLORS["kv"], alpha=0.7))
        self.capacity.set_ydata([cap / GB, cap / GB])
        self.marker.set_xdata([s.batch, s.batch])
        text = f" {s.num_gpus} x {get_gpu(s.gpu).memory_bytes / GB:.0f} GB"
        tr(ax.text(1.2, cap / GB, text, va="bottom", fontsize=11, color=COLORS["capacity"]))
        self._shade_overflow(ax, s.users_that_fit() + 1, label="KV does not fit")
        ax.set_ylim(nice_limits([cap / GB * 1.3, w / GB * 1.3], log=False))
        ax.set_title(f"Memory: {describe(s)}, T={s.context_tokens:,}", fontsize=12)


def step_time_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 16's explorer: the step's parts against batch, with the KV precision too.

    >>> step_time_explorer().scenario.batch
    32
    """
    return Explorer(
        StepTimeVsBatch,
        [*STEP[:4], "kv_precision", *STEP[4:]],
        scenario or Scenario(batch=32),
        presets={
            "32 users x 1,000 tokens (the card's case, exact bytes)": {"batch": 32, "context_tokens": 1000},
            "one user at 1,000 tokens": {"batch": 1, "context_tokens": 1000},
            "64 users x 4,096 tokens": {"batch": 64, "context_tokens": 4096},
        },
    )
