"""What an engine reaches, beside the ideal: decode steps, prefills, a static batch, a measurement judged.

Taught in notebooks/floor_to_real_server.ipynb. Every function here builds the step with the physics
(``roofline.physics.step.forward_step``) and times it with an engine (``roofline.engines.model``), so the
ideal and the engine see the same bytes and FLOPs. Each takes the deployment as a ``StepTimer``
(``StepTimer.of(scenario, engine)`` makes one from a lesson's ``Scenario``).

>>> r = generate(StepTimer("vllm", "llama-3-8b", "h100-sxm"), batch=1, input_tokens=128, output_tokens=128)
>>> r.achievable.tpot_s >= r.ideal.tpot_s
True
>>> round(r.ideal.tpot_s * 1e3, 2)
4.49
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from roofline.checks import checked
from roofline.engines.coverage import coverage
from roofline.engines.model import BUDGET_PARTS, StepTimer
from roofline.engines.params import KERNEL_NAMES, load_calibration
from roofline.errors import DoesNotFitError
from roofline.physics.architecture import sequence_kv_bytes, weight_bytes
from roofline.physics.memory import check_fits, memory_available_bytes
from roofline.physics.metrics import mbu, mfu
from roofline.physics.precision import peak_flops_per_s
from roofline.physics.step import forward_step
from roofline.results import Result


def _count(value, name: str) -> int:
    return int(checked(value, name, minimum=1, whole=True, scalar=True))


def decode_work(
    model, gpu, batch, contexts, *, num_gpus, parallel, weight_precision, kv_precision, memory="engine"
):
    """The decode step of ``batch`` sequences at each of ``contexts`` (a mean batch may be fractional;
    NaN times where it does not fit in the ``memory`` model), as ``decode_step`` counts it: a user's own
    new KV is left out."""
    return forward_step(
        model,
        gpu,
        batch,
        contexts,
        num_gpus=num_gpus,
        count_new_kv=False,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        on_overflow="mask",
        parallelism=parallel,
        memory=memory,
    )


def prefill_work(
    model, gpu, batch, prompt_tokens, *, num_gpus, parallel, weight_precision, kv_precision, context_tokens=0,
    logits="last",
):  # fmt: skip
    """One pass over ``batch`` prompts of ``prompt_tokens`` each, after ``context_tokens`` already in the
    KV cache (may be an array), logits for each prompt's last token (``logits="none"``: a pass before the
    prompt's last, which reads no LM head). Measured runs went past some models' windows (Llama 2 at
    4k + 4k), so the window is not enforced."""
    return forward_step(
        model,
        gpu,
        batch,
        context_tokens,
        new_tokens=prompt_tokens,
        num_gpus=num_gpus,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        on_overflow="ignore",
        logits=logits,
        parallelism=parallel,
    )


def _deployment(timer: StepTimer, parallel: bool = True) -> dict:
    kw = dict(
        num_gpus=timer.num_gpus, weight_precision=timer.weight_precision, kv_precision=timer.kv_precision
    )
    return {**kw, "parallel": timer.parallel} if parallel else kw


def decode_step_times(timer: StepTimer, batch=1, context_tokens=0, *, launch_overhead_s=0.0, memory="engine"):
    """One decode step on ``timer``'s deployment, ideal and achievable, vectorised over ``batch`` and
    ``context_tokens`` (s).

    Returns arrays ``floor`` (the ideal), the gap-budget parts (``BUDGET_PARTS``) and ``total`` (the
    engine's step), NaN where the configuration does not fit in memory (``memory``: a model of
    ``roofline.physics.memory``, ``"local"`` for llama.cpp on your own machine), and ``fits``.
    ``launch_overhead_s`` (s) is CPU time per step that every engine pays alike (lesson 03).

    >>> t = decode_step_times(StepTimer("vllm", "llama-3-8b", "h100-sxm"), batch=[1, 64], context_tokens=1000)
    >>> bool(np.all(t["total"] > t["floor"]))
    True
    """
    s = decode_work(timer.model, timer.gpu, batch, context_tokens, memory=memory, **_deployment(timer))
    ok = np.asarray(s.fits)
    budget = timer.of_step(s, extra_s=launch_overhead_s)

    def masked(x):
        return np.where(ok, np.broadcast_to(x, ok.shape), np.nan)

    return {**{k: masked(v) for k, v in budget.parts.items()}, "fits": ok}


def gap_budget(timer: StepTimer, batch=1, context_tokens=0, *, launch_overhead_s=0.0) -> dict:
    """One decode step's time, itemised from the floor up (s): ``floor``, ``kernel efficiency`` (real
    kernels reach a fraction of peak bandwidth and math), ``per-step`` (scheduler, launches, per-sequence
    sampling), ``per-layer`` (each layer's small kernels), ``communication`` (tensor-parallel all-reduces)
    and ``total``. Scalar inputs only; the parts add up to ``total``. Raises ``DoesNotFitError`` where the
    weights and the users' KV cache do not fit in what the engine leaves.

    >>> b = gap_budget(StepTimer("vllm", "llama-3-8b", "h100-sxm"))
    >>> parts = ["floor", "kernel efficiency", "per-step", "per-layer", "communication"]
    >>> abs(sum(b[k] for k in parts) - b["total"]) < 1e-12
    True
    """
    t = decode_step_times(timer, batch, context_tokens, launch_overhead_s=launch_overhead_s)
    if not np.all(t["fits"]):
        check_fits(timer.model, timer.gpu, batch, context_tokens, **_deployment(timer, parallel=False))
        raise DoesNotFitError(f"{batch} users at {context_tokens} tokens do not fit beside the weights")
    return {k: float(v) for k, v in t.items() if k != "fits"}


def prefill_times(timer: StepTimer, prompt_tokens, batch=1) -> dict:
    """One prefill pass of ``batch`` prompts of ``prompt_tokens`` each on ``timer``'s deployment, ideal
    and achievable (s): ``floor``, the gap-budget parts (``BUDGET_PARTS``) and ``total``. Scalar inputs.

    >>> t = prefill_times(StepTimer("vllm", "llama-3-8b", "h100-sxm"), 8000)
    >>> round(t["floor"], 3), t["total"] > t["floor"]    # (1.117e14 + 16.8e12 of attention) ÷ 989e12 FLOP/s
    (0.13, True)
    """
    b, p = _count(batch, "batch"), _count(prompt_tokens, "prompt_tokens")
    work = prefill_work(timer.model, timer.gpu, b, p, **_deployment(timer))
    budget = timer.of_step(work, extra_s=0.0, prompt=True)
    return {k: float(v) for k, v in budget.parts.items()}


@dataclass(frozen=True)
class Timing:
    """Timings of one static batch (s, tokens/s)."""

    ttft_s: float  # prefill of the batch: B × I tokens
    tpot_s: float  # mean decode step over the O steps
    latency_s: float  # ttft + every decode step
    output_tokens_per_s: float  # B × O ÷ latency
    total_tokens_per_s: float  # B × (I + O) ÷ latency


@dataclass(frozen=True)
class GenerateResult(Result):
    """Ideal and achievable timings of a static batch, and where the achievable figures came from."""

    model_id: str
    gpu_id: str
    num_gpus: int
    parallel: str
    batch: int
    input_tokens: int
    output_tokens: int
    weight_precision: str
    kv_precision: str
    engine: str
    ideal: Timing
    achievable: Timing
    fits: bool
    calibration: dict


def _batch_timing(timer: StepTimer, b, i, o, waves=1) -> Timing:
    """Prefill of ``b`` prompts of ``i`` tokens, then ``o`` decode steps, ``waves`` times over (the first
    token of the last wave comes after every earlier wave has finished)."""
    kw = _deployment(timer)
    pre = float(
        timer.of_step(prefill_work(timer.model, timer.gpu, b, i, **kw), extra_s=0.0, prompt=True).total_s
    )
    contexts = np.arange(i, i + o, dtype=float)
    dec = timer.of_step(decode_work(timer.model, timer.gpu, b, contexts, **kw), extra_s=0.0).total_s
    decode_s = float(np.sum(dec))
    ttft = pre + (waves - 1) * (pre + decode_s)
    latency = ttft + decode_s
    return Timing(
        ttft_s=ttft,
        tpot_s=decode_s / o,
        latency_s=latency,
        output_tokens_per_s=b * waves * o / latency,
        total_tokens_per_s=b * waves * (i + o) / latency,
    )


MEMORY_OF = {"engine": "vLLM's defaults", "local": "llama.cpp's on its own machine"}  # engines.toml memory


def _calibration_record(timer: StepTimer, b: int, i: int, o: int, waves: int) -> dict:
    """Where ``generate``'s achievable figures came from: the calibration, the engine's numbers, the
    memory model, the waves, and whether the figure leaves the calibrated range (and why)."""
    eng, p, n = timer.engine, timer.params, timer.num_gpus
    extrapolated, reasons = coverage(eng.id, timer.gpu.id, timer.model.id, b, i, o, n, timer.weight_precision)
    cal = load_calibration() if eng.kind == "calibrated" else None
    return {
        "source": "/".join(Path(cal.source).parts[-2:]) if cal else "the roofline (no calibration)",
        "fitted": cal.provenance.get("date", "") if cal else "",
        "engine": eng.id,
        "engine_version": eng.version,
        "gpu_family": p.gpu_family,
        "bandwidth_fraction": p.bandwidth_fraction,
        "compute_fraction": p.compute_fraction,
        "fractions_from": p.kernels_from,
        "kernels": {f.name: getattr(p, f.name) for f in fields(p) if f.name in KERNEL_NAMES.values()},
        "step_overhead_s": p.step_overhead_s,
        "layer_overhead_s": p.layer_overhead_s,
        "sequence_overhead_s": p.sequence_overhead_s,
        "overheads_from": p.overheads_from,
        "allreduce_hop_latency_s": p.hop_latency_s,
        "allreduce_latency_s": (p.collective_latency_s + 2 * (n - 1) * p.hop_latency_s)
        if timer.collectives
        else 0.0,
        "memory_model": f"{eng.memory} (rl.memory_available_bytes: {MEMORY_OF[eng.memory]})",
        "waves": waves,
        "parallel": timer.parallel,
        "extrapolated": extrapolated,
        "extrapolation_reasons": reasons,
    }


def generate(timer: StepTimer, batch=1, input_tokens=128, output_tokens=128) -> GenerateResult:
    """Ideal and achievable timings of a static batch on ``timer``'s deployment: ``batch`` requests (B),
    each with ``input_tokens`` prompt tokens (I) and ``output_tokens`` generated tokens (O).

    The batch's prompts are prefilled in one pass (TTFT), then O decode steps run with each request's
    context growing from I to I + O − 1 tokens. The timer's ``parallel`` is ``"tensor"`` (split every
    layer: N GPUs' bandwidth add up) or ``"pipeline"`` (split the layers: a token visits the GPUs in turn).
    A batch whose KV cache does not fit in what the engine leaves beside the weights runs in waves, as
    engines queue what does not fit. Raises ``DoesNotFitError`` if the weights and the final KV cache do
    not fit in the N GPUs' memory at all.

    >>> r = generate(StepTimer("vllm", "llama-3-8b", "h100-sxm"), batch=1, input_tokens=1, output_tokens=1)
    >>> round(r.ideal.ttft_s * 1e3, 2), round(r.ideal.tpot_s * 1e3, 2)     # 15.01 GB ÷ 3.35 TB/s twice
    (4.48, 4.48)
    >>> r.achievable.latency_s > r.ideal.latency_s
    True
    """
    b, i = _count(batch, "batch"), _count(input_tokens, "input_tokens")
    o = _count(output_tokens, "output_tokens")
    m, g, n, wp, kvp = timer.model, timer.gpu, timer.num_gpus, timer.weight_precision, timer.kv_precision
    deployment = dict(num_gpus=n, weight_precision=wp, kv_precision=kvp)
    check_fits(m, g, b, i + o, **deployment)
    waves, b_wave = serving_waves(m, g, b, i + o, memory=timer.engine.memory, **deployment)
    return GenerateResult(
        model_id=m.id,
        gpu_id=g.id,
        num_gpus=n,
        parallel=timer.parallel,
        batch=b,
        input_tokens=i,
        output_tokens=o,
        weight_precision=wp,
        kv_precision=kvp,
        engine=timer.engine.id,
        ideal=_batch_timing(timer.with_engine("ideal"), b, i, o),
        achievable=_batch_timing(timer, b_wave, i, o, waves),
        fits=True,
        calibration=_calibration_record(timer, b, i, o, waves),
    )


def serving_waves(model, gpu, batch, context_tokens, **deployment):
    """(waves, requests per wave) for a static batch whose KV cache, at ``context_tokens`` each, must fit in
    what the engine leaves beside the weights (``users_that_fit_engine``, whose keywords ``deployment``
    takes): the engine runs what does not fit in later waves. One wave (of the whole batch) when it fits.

    >>> serving_waves("llama-2-7b", "a100-40gb", 64, 4096)     # MHA: 0.5 MB of KV per token
    (8, 8.0)
    >>> serving_waves("llama-3-8b", "h100-sxm", 64, 4096)
    (1, 64.0)
    """
    waves = max(1, math.ceil(batch / users_that_fit_engine(model, gpu, context_tokens, **deployment)))
    return waves, batch / waves


def users_that_fit_engine(
    model, gpu, context_tokens, *, num_gpus=1, weight_precision="bf16", kv_precision="bf16", memory="engine"
) -> int:
    """Requests whose KV at ``context_tokens`` fits beside the weights in what an engine leaves (≥ 1), under
    its ``memory`` model (``memory_available_bytes``: vLLM's "engine" accounting, or llama.cpp's "local").

    >>> users_that_fit_engine("llama-3-8b", "h100-sxm", 4096), users_that_fit_engine(
    ...     "llama-3-8b", "h100-sxm", 4096, memory="local")
    (102, 127)
    """
    free = float(memory_available_bytes(gpu, num_gpus, memory)) - weight_bytes(model, weight_precision)
    per_request = float(sequence_kv_bytes(model, context_tokens, kv_precision))
    return max(1, math.floor(free / per_request)) if per_request > 0 else 10**9


def place_in_budget(measured_s: float, budget: dict) -> str:
    """Which part of ``budget`` (s, from the floor up, as ``gap_budget`` itemises it) the measured time
    ``measured_s`` (s) falls in: one of ``BUDGET_PARTS``, or below the floor, or beyond a tuned engine.

    >>> place_in_budget(5e-3, {"floor": 4e-3, "kernel efficiency": 2e-3, "per-step": 1e-3,
    ...                        "per-layer": 0.0, "communication": 0.0})
    'kernel efficiency'
    """
    edges = np.cumsum([budget[k] for k in ("floor", *BUDGET_PARTS)])
    if measured_s < edges[0] * (1 - 1e-9):
        return "below the floor (check the measurement: bytes, GPUs, precision)"
    if measured_s <= edges[-1]:
        return BUDGET_PARTS[min(int(np.searchsorted(edges[1:], measured_s)), len(BUDGET_PARTS) - 1)]
    return "beyond a tuned engine (queueing, small batches, CPU, a slower stack)"


def diagnose_measurement(timer: StepTimer, measured_step_s, batch=1, context_tokens=0, *, prompt_tokens=None):
    """Your measured decode step (s per step, i.e. the time between tokens) on ``timer``'s deployment
    against the floor and the gap budget: MBU, MFU, and which part of the gap it sits in. With
    ``prompt_tokens``, the measurement is the time to first token of one request alone (its prefill),
    placed the same way.

    >>> vllm = StepTimer("vllm", "llama-3-8b", "h100-sxm")
    >>> d = diagnose_measurement(vllm, 6e-3)   # 15.01 GB in 6 ms on 3.35 TB/s
    >>> round(d["mbu"], 2), d["sits_in"] in BUDGET_PARTS
    (0.75, True)
    >>> diagnose_measurement(vllm, 4e-3)["sits_in"]
    'below the floor (check the measurement: bytes, GPUs, precision)'
    >>> diagnose_measurement(vllm, 18e-3, prompt_tokens=1024)["sits_in"]   # floor 14.7 ms
    'kernel efficiency'
    """
    t = float(checked(measured_step_s, "measured_step_s", above=0, scalar=True))
    m, g, n, kw = timer.model, timer.gpu, timer.num_gpus, _deployment(timer)
    if prompt_tokens is None:
        budget = gap_budget(timer, batch, context_tokens)
        s = decode_work(m, g, batch, context_tokens, **kw)
    else:
        budget = prefill_times(timer, prompt_tokens, batch)
        s = prefill_work(m, g, batch, prompt_tokens, **kw)
    return {
        "measured_step_s": t,
        "floor_s": budget["floor"],
        "achievable_s": budget["total"],
        "mbu": float(mbu(s.bytes_moved, t, n * g.memory_bandwidth_bytes_per_s)),
        "mfu": float(mfu(s.flops, t, n * peak_flops_per_s(g, timer.weight_precision))),
        "measured_over_floor": t / budget["floor"],
        "measured_over_achievable": t / budget["total"],
        "sits_in": place_in_budget(t, budget),
        "budget": budget,
    }
