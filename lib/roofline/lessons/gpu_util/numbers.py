"""GPU-util is a duty cycle: a sampler that asks "was any kernel running?", beside MBU and MFU.

Taught in lesson 09 (notebooks/09_gpu_util.ipynb). The utilization figure a dashboard shows (``nvidia-smi``'s
"GPU-Util") marks a sampling window busy if one or more kernels ran during it, however little of the chip they
used. Over a stretch of time:

    GPU-util = busy windows ÷ all windows
    MBU      = bytes read ÷ (time × peak bandwidth)       how hard memory works
    MFU      = FLOPs done ÷ (time × peak FLOP/s)          how hard the math units work

A batch-1 decode step is a back-to-back chain of memory-bound kernels, so the first is 100 %, the second
high and the third tiny: the card's Q5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.checks import checked, out
from roofline.data import get_gpu
from roofline.engines.model import StepTimer
from roofline.engines.registry import default_engine
from roofline.errors import InvalidConfigurationError
from roofline.physics.precision import peak_flops_per_s
from roofline.scenario import Scenario

KERNELS_PER_STEP = 12  # a real step launches ~300; a dozen keeps the picture readable


def _intervals(starts_s, ends_s, t_end_s):
    """Checked kernel start and end times (s), and the span's end (s): ``t_end_s`` or the last kernel's."""
    s = checked(starts_s, "starts_s").ravel()
    e = checked(ends_s, "ends_s").ravel()
    if s.shape != e.shape:
        raise InvalidConfigurationError(f"starts_s and ends_s differ in length: {s.size} vs {e.size}")
    if np.any(e < s):
        raise InvalidConfigurationError("every kernel must end at or after its start")
    t1 = float(t_end_s if t_end_s is not None else (e.max() if e.size else 0.0))
    if t1 <= 0:
        raise InvalidConfigurationError(f"the time span must end after 0 s, not at {t1} s")
    return s, e, t1


def sample_busy(starts_s, ends_s, window_s, t_end_s=None):
    """What a utilization sampler sees: window start times (s) and, per window, whether any kernel ran.

    ``starts_s``, ``ends_s`` : kernel start and end times (s); ``window_s`` : sampling window (s); the
    windows tile [0, ``t_end_s``) (default: up to the last kernel's end). A kernel counts in a window if it
    overlaps it for any time at all (beyond float rounding).

    >>> w, busy = sample_busy([0.0, 2.5], [0.5, 2.6], window_s=1.0, t_end_s=4.0)
    >>> w.tolist(), busy.tolist()
    ([0.0, 1.0, 2.0, 3.0], [True, False, True, False])
    """
    s, e, t1 = _intervals(starts_s, ends_s, t_end_s)
    win = float(checked(window_s, "window_s", above=0))
    n = int(np.ceil(t1 / win - 1e-9))
    w0 = win * np.arange(n)
    w1 = np.minimum(w0 + win, t1)
    # overlap longer than a hair (1e-9 of a window), so a kernel ending exactly on a window edge, give or
    # take float rounding, does not mark the next window busy
    overlap = np.minimum(e[:, None], w1[None, :]) - np.maximum(s[:, None], w0[None, :])
    return w0, np.any(overlap > 1e-9 * win, axis=0)


def gpu_util(starts_s, ends_s, window_s, t_end_s=None):
    """The dashboard's "GPU-util": the fraction of sampling windows in which any kernel ran (fraction, 0–1).

    >>> gpu_util([0.0, 2.5], [0.5, 2.6], window_s=1.0, t_end_s=4.0)   # busy 0.6 s of 4 s, "50 %"
    0.5
    """
    return float(np.mean(sample_busy(starts_s, ends_s, window_s, t_end_s)[1]))


def busy_time_fraction(starts_s, ends_s, t_end_s=None):
    """Fraction of [0, ``t_end_s``) at least one kernel was running (the union of the intervals ÷ the span).

    >>> busy_time_fraction([0.0, 0.2, 2.5], [0.5, 0.4, 2.6], t_end_s=4.0)
    0.15
    """
    s, e, t1 = _intervals(starts_s, ends_s, t_end_s)
    order = np.argsort(s)
    s, e = np.clip(s[order], 0.0, t1), np.clip(e[order], 0.0, t1)
    reach = np.maximum.accumulate(e)  # union length: each interval adds what sticks out past all before it
    prev = np.concatenate([[0.0], reach[:-1]])
    return float(np.sum(np.maximum(e - np.maximum(s, prev), 0.0)) / t1)


@dataclass(frozen=True)
class Timeline:
    """Kernels of a few decode steps: start/end times (s), bytes read and FLOPs done by each kernel."""

    gpu_id: str
    precision: str
    starts_s: np.ndarray
    ends_s: np.ndarray
    bytes_read: np.ndarray
    flops: np.ndarray
    step_index: np.ndarray
    step_time_s: float
    gap_s: float
    t_end_s: float
    num_gpus: int = 1  # G, GPUs in tensor parallel: their bandwidths and FLOP/s add


def decode_timeline(
    s: Scenario, *, n_steps=3, step_time_s=None, gap_s=0.0, engine=None, params=None
) -> Timeline:
    """A synthetic timeline of ``n_steps`` decode steps of scenario ``s`` (its batch, context, precisions
    and G GPUs in tensor parallel, whose timeline it is), each ``KERNELS_PER_STEP`` kernels back to back.

    Each step moves ``decode_step``'s bytes and FLOPs, split evenly over its kernels, and lasts
    ``step_time_s`` (s) — by default the step a real engine takes (``engine``, default the one people run
    on the GPU; ``params`` overrides its numbers, see ``roofline.engines``), whose per-step costs keep a
    kernel running but not the memory busy. ``gap_s`` (s) of idle time follows each step (a slow CPU, a
    queue waiting for requests).

    >>> t = decode_timeline(Scenario(), n_steps=2, step_time_s=6e-3, gap_s=1e-3)
    >>> (t.starts_s[[0, 1, 12]] * 1e3).round(1).tolist(), round(t.t_end_s * 1e3, 1)   # 0.5 ms kernels
    ([0.0, 0.5, 7.0], 14.0)
    """
    k = KERNELS_PER_STEP
    steps = int(checked(n_steps, "n_steps", minimum=1))
    gap = float(checked(gap_s, "gap_s", minimum=0))
    n = int(checked(s.num_gpus, "num_gpus", minimum=1))
    step = s.decode(on_overflow="raise")
    if step_time_s is None:
        timer = StepTimer(
            engine or default_engine(s.gpu),
            s.model,
            s.gpu,
            num_gpus=n,
            weight_precision=s.weight_precision,
            params=params,
        )
        step_time_s = float(timer.of_step(step).total_s)
    dur = float(checked(step_time_s, "step_time_s", above=0))
    step_starts = np.arange(steps) * (dur + gap)
    edges = step_starts[:, None] + dur * np.arange(k + 1)[None, :] / k  # each step's kernels, back to back
    starts, ends = edges[:, :-1].ravel(), edges[:, 1:].ravel()
    return Timeline(
        gpu_id=step.gpu_id,
        precision=s.weight_precision,
        starts_s=starts,
        ends_s=ends,
        bytes_read=np.full(steps * k, step.bytes_read / k),
        flops=np.full(steps * k, step.flops / k),
        step_index=np.repeat(np.arange(steps), k),
        step_time_s=dur,
        gap_s=gap,
        t_end_s=float(steps * (dur + gap)),
        num_gpus=n,
    )


@dataclass(frozen=True)
class TimelineMetrics:
    """What the dashboard's GPU-util says next to what memory and math really did (fractions)."""

    gpu_util: float  # busy sampler windows ÷ windows
    busy_time_fraction: float  # time any kernel ran ÷ time
    mbu: float  # bytes ÷ (time × peak bandwidth), over the whole span
    mfu: float  # FLOPs ÷ (time × peak FLOP/s), over the whole span
    kernel_mbu: np.ndarray  # per kernel, while it runs


def timeline_metrics(timeline: Timeline, window_s: float) -> TimelineMetrics:
    """GPU-util (sampler with ``window_s`` windows, s), busy time, MBU and MFU of a timeline, and each
    kernel's MBU while it runs.

    >>> t = decode_timeline(Scenario(context_tokens=0), step_time_s=6e-3, gap_s=6e-3, n_steps=4)
    >>> m = timeline_metrics(t, window_s=1e-3)
    >>> round(m.gpu_util, 2), round(m.mbu, 2), round(float(m.kernel_mbu[0]), 2)   # idle half the time
    (0.5, 0.4, 0.8)
    """
    g, n = get_gpu(timeline.gpu_id), timeline.num_gpus
    bw, peak = n * g.memory_bandwidth_bytes_per_s, n * peak_flops_per_s(g, timeline.precision)
    dur = timeline.ends_s - timeline.starts_s
    span = timeline.t_end_s
    return TimelineMetrics(
        gpu_util=gpu_util(timeline.starts_s, timeline.ends_s, window_s, span),
        busy_time_fraction=busy_time_fraction(timeline.starts_s, timeline.ends_s, span),
        mbu=float(timeline.bytes_read.sum() / (span * bw)),
        mfu=float(timeline.flops.sum() / (span * peak)),
        kernel_mbu=out(timeline.bytes_read / (dur * bw)),
    )
