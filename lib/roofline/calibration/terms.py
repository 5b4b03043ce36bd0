"""Every measured row as a weighted sum of steps, each step's aggregates precomputed once.

Taught in notebooks/calibration_validation.ipynb. A row's predicted time is Σ weight × (the engine's time
of each of its steps) (``roofline.engines.model.assemble``): a static batch is its prefill (in waves and in
chunks where the run did that) plus its decode steps, a TTFT row one prefill, a TPOT row the mean decode
step, a serving TPOT row the mean mixed step of a closed loop. Only the engine's numbers change while the
fit runs, so the steps' bytes, FLOPs and collectives are computed here once.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from roofline.calibration.measurements import Measurements, load_measurements
from roofline.engines.achievable import decode_work, prefill_work, serving_waves, users_that_fit_engine
from roofline.engines.model import StepTimer, StepWork, step_load
from roofline.engines.params import (
    KERNEL_NAMES,
    MOE_NAMES,
    architecture_of,
    gpu_families,
    kernel_numbers,
    link_latencies,
)
from roofline.engines.registry import get_engine

# A row's decode steps are summed by the midpoint rule over this many context points (the step time is
# almost linear in context, so a few points are exact to well under 1 %).
QUAD_POINTS = 16


@dataclass
class Terms:
    """The steps of every measured row: ``work`` holds one entry per step (arrays), ``row`` says whose,
    ``weight`` how many times it counts; ``kernels``, ``family`` and ``engine`` pick the numbers that time
    it."""

    row: np.ndarray
    weight: np.ndarray
    work: StepWork
    kernels: dict  # name -> one value per step: the kernel and link numbers of the step's GPU and engine
    family: np.ndarray
    engine: np.ndarray
    n_rows: int

    def total_s(self, step_times_s: np.ndarray) -> np.ndarray:
        """Each row's time (s) from one time (s) per step: Σ weight × step time."""
        return np.bincount(self.row, weights=self.weight * step_times_s, minlength=self.n_rows)

    def floor_s(self) -> np.ndarray:
        """Each row's ideal floor (s): every step at max(math time, memory time), nothing else.

        >>> bool((measured_terms().floor_s() > 0).all())
        True
        """
        return self.total_s(np.maximum(self.work.compute_s, self.work.memory_s))


def _quad_contexts(i: int, o: int) -> np.ndarray:
    """Midpoints of ``QUAD_POINTS`` equal bins of the contexts i … i + o − 1 (fewer if o is small)."""
    k = min(QUAD_POINTS, o)
    return i + (np.arange(k) + 0.5) * o / k - 0.5


def _row_steps(ms: Measurements, r: int, parallel: str, memory: str = "engine"):
    """(load, weight) pairs of row ``r`` run in ``parallel`` with the engine's ``memory`` model: the work
    (``StepTimer.work`` keywords) of each of its steps."""
    mdl, gpu, n, b = ms.model[r], ms.gpu[r], int(ms.num_gpus[r]), int(ms.batch[r])
    i, o = int(ms.input_tokens[r]), int(ms.output_tokens[r])
    wp, kvp, kind = ms.weight_precision[r], ms.kv_precision[r], ms.kind[r]
    kw_fit = dict(num_gpus=n, weight_precision=wp, kv_precision=kvp)
    kw = dict(kw_fit, parallel=parallel)
    if kind == "latency":  # a static batch: what does not fit runs in later waves
        waves, b_run = serving_waves(mdl, gpu, b, i + o, memory=memory, **kw_fit)
    elif kind == "tpot_serving":  # at a concurrency: at most what fits decodes together
        waves, b_run = 1, min(b, users_that_fit_engine(mdl, gpu, i + o, memory=memory, **kw_fit))
    else:  # a measured step or prefill of the batch that ran
        waves, b_run = 1, b
    chunk, depth = int(ms.prefill_chunk[r]), int(ms.context_tokens[r])
    if kind in ("latency", "ttft"):
        if 0 < chunk < i:  # ceil(i / chunk) passes of `chunk` tokens, each after the depth and the passes
            passes = math.ceil(i / chunk)  # before it; only the last asks for logits. The others are summed
            before = depth + chunk * _quad_contexts(0, passes - 1)  # by the midpoint rule, as decode steps
            middle = prefill_work(mdl, gpu, b_run, chunk, context_tokens=before, logits="none", **kw)
            yield step_load(middle), waves * (passes - 1) / before.size
            last = depth + chunk * (passes - 1)
            yield step_load(prefill_work(mdl, gpu, b_run, chunk, context_tokens=last, **kw)), float(waves)
        else:
            yield step_load(prefill_work(mdl, gpu, b_run, i, context_tokens=depth, **kw)), float(waves)
    ctx = _quad_contexts(i, o)
    if kind in ("latency", "tpot"):
        weight = (waves * o / ctx.size) if kind == "latency" else (1.0 / ctx.size)
        yield step_load(decode_work(mdl, gpu, b_run, ctx, **kw)), weight
    if kind == "tpot_serving":
        yield _closed_loop_step(mdl, gpu, b, b_run, i, o, ctx, kw), 1.0 / ctx.size


def _closed_loop_step(mdl, gpu, c, b_run, i, o, ctx, kw) -> dict:
    """The mean step of a closed loop at concurrency ``c`` (a ``StepTimer.work`` load): while one request
    decodes its ``o`` tokens each of the other c − 1 requests is replaced once, so c − 1 prompts of ``i``
    tokens are prefilled in the steps it waits for. Engines mix those prompt chunks into the decode steps
    (chunked prefill): each step carries (c − 1) ÷ o of a prefill's FLOPs and KV writes on top of its own."""
    dec = step_load(decode_work(mdl, gpu, b_run, ctx, **kw))
    pre = step_load(prefill_work(mdl, gpu, 1, i, **kw))
    share = (c - 1) / o
    load = {k: dec[k] + share * pre[k] for k in ("gemm_flops", "attention_flops", "kv_write_bytes",
                                                 "prompt_tokens", "tokens")}  # fmt: skip
    one_row = step_load(prefill_work(mdl, gpu, 1, 1, **kw))["weight_bytes"]  # a prompt reads no more weights
    load["weight_bytes"] = dec["weight_bytes"] + share * (pre["weight_bytes"] - one_row)
    return {**dec, **load}


@functools.cache
def measured_terms() -> Terms:
    """The steps of every row of ``load_measurements()`` (computed once per process)."""
    return terms_for(load_measurements())


def terms_for(ms: Measurements, kernels_of: dict | None = None) -> Terms:
    """The steps of every row of ``ms``, with the kernel and link numbers of each row's GPU, engine and
    precisions (``kernels``: one array per name; fractions 0–1, times in s). ``kernels_of`` maps an engine
    id to the engine whose kernels it runs (a learner's calibrated engine runs its base engine's).

    >>> t = terms_for(load_measurements().subset([0]))
    >>> t.n_rows, bool(np.all(t.row == 0)), bool((t.kernels["gemm_compute_fraction"] <= 1).all())
    (1, True, True)
    """
    names = StepWork._fields
    fixed = (*KERNEL_NAMES.values(), *MOE_NAMES, "hop_latency_s", "collective_latency_s")
    parts = {k: [] for k in ("row", "weight", *names, *fixed)}
    for r in range(len(ms)):
        eng = get_engine((kernels_of or {}).get(ms.engine[r], ms.engine[r]))
        gpu, wp, kvp = ms.gpu[r], ms.weight_precision[r], ms.kv_precision[r]
        timer = StepTimer(
            eng, ms.model[r], gpu, num_gpus=int(ms.num_gpus[r]), weight_precision=wp, kv_precision=kvp
        )
        kernels, _ = kernel_numbers(eng.kernels, gpu, wp, kvp, architecture_of(ms.model[r]))
        kernels = {**kernels, **link_latencies(gpu)}
        for load, weight in _row_steps(ms, r, timer.parallel, eng.memory):
            w = timer.work(**load)
            size = np.size(w.compute_s)
            parts["row"].append(np.full(size, r))
            parts["weight"].append(np.full(size, float(weight)))
            for name in names:
                parts[name].append(np.broadcast_to(np.asarray(getattr(w, name), float), (size,)))
            for name, value in kernels.items():
                parts[name].append(np.full(size, value))
    t = {k: np.concatenate(v) for k, v in parts.items()}
    families = gpu_families()
    fam = np.array([families.get(g, "unknown") for g in ms.gpu])
    return Terms(row=t["row"], weight=t["weight"], work=StepWork(**{k: t[k] for k in names}),
                 kernels={k: t[k] for k in fixed}, family=fam[t["row"]],
                 engine=ms.engine[t["row"]], n_rows=len(ms))  # fmt: skip
