"""Achievable performance: what a real engine reaches, as a calibrated layer on top of the ideal roofline.

Taught in notebooks/floor_to_real_server.ipynb ("From the floor to a real server"); validated in
notebooks/calibration_validation.ipynb.

The ideal (``decode_step``, ``prefill``) is the floor: every byte moved at peak bandwidth, every FLOP at
peak math, nothing else. A real engine adds a few things with physical meaning, and nothing more:

    t = max(FLOPs ÷ (f_c × peak), bytes ÷ (f_b × bandwidth))    real kernels' efficiency
        + t_step + B × t_seq                                      per step (launch, scheduler), per sequence
        + L × t_layer                                             per layer: small kernels, norms, RoPE
        + n_allreduce × 2(N − 1) × t_hop + ring bytes ÷ link       tensor-parallel collectives

``f_b`` and ``f_c`` are fitted per GPU family (ampere, hopper) and engine; ``t_step``, ``t_layer``, a
per-sequence cost and ``t_hop`` per engine (engines bring their own all-reduce kernels; a ring all-reduce
over N GPUs takes 2(N − 1) hops). FLOPs and bytes come from the ideal's own results, so the physics stays in
one place. A GPU without measurements gets its data sheet and its family's fitted fractions. llama.cpp
splits the layers over its GPUs (a pipeline): one sequence visits the GPUs one after another, so its
per-token time is the sum over GPUs, one GPU's bandwidth, not N of them. A static batch whose KV cache
does not fit beside the weights (in 90 % of memory) runs in waves, as engines queue what does not fit.

The parameters live in ``data/calibration.toml``; ``tools/fit_calibration.py`` refits them from
``data/measured/`` with :func:`fit` and writes that file.

>>> r = generate("llama-3-8b", "h100-sxm", batch=1, input_tokens=128, output_tokens=128, engine="vllm")
>>> r.achievable.tpot_s >= r.ideal.tpot_s
True
>>> round(r.ideal.tpot_s * 1e3, 2)
4.49
"""

from __future__ import annotations

import csv
import datetime
import difflib
import functools
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import roofline as rl
from roofline._results import Result

from .errors import InvalidConfigurationError, UnknownNameError

DATA_DIR = Path(os.environ.get("ROOFLINE_DATA_DIR", Path(__file__).resolve().parents[2] / "data"))
CALIBRATION_FILE = "calibration.toml"
MEASURED_DIR = "measured"

DEFAULT_ENGINE = "vllm"
# The gap budget's parts above the floor, in the order they stack.
BUDGET_PARTS = ("kernel efficiency", "per-step", "per-layer", "communication")
# Engines the fit knows, and how each splits a model over several GPUs.
ENGINE_PARALLEL = {
    "vllm": "tensor",
    "tensorrt-llm": "tensor",
    "sglang": "tensor",
    "llama.cpp": "pipeline",
    "deepspeed-mii": "tensor",
    "splitwise-2023": "tensor",
}
ENGINE_ALIASES = {
    "trtllm": "tensorrt-llm",
    "trt-llm": "tensorrt-llm",
    "tensorrt_llm": "tensorrt-llm",
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "deepspeed": "deepspeed-mii",
    "mii": "deepspeed-mii",
}
REGIMES = ("batch-1 decode", "batched decode", "prefill/TTFT", "end-to-end", "throughput")
GOALS = {"batch-1 decode": 0.10, "batched decode": 0.15, "end-to-end": 0.15, "prefill/TTFT": 0.20}

# Decode steps of one measured row are summed by the midpoint rule over this many context points (the step
# time is almost linear in context, so a few points are exact to well under 1 %). ``generate`` sums every
# step exactly.
_QUAD_POINTS = 16


# --------------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------------


def engine_id(name: str) -> str:
    """The canonical engine id for ``name`` (case and common spellings forgiven).

    >>> engine_id("TensorRT-LLM"), engine_id("trtllm"), engine_id("llama.cpp")
    ('tensorrt-llm', 'tensorrt-llm', 'llama.cpp')
    >>> engine_id("vllmm")
    Traceback (most recent call last):
    ...
    roofline.errors.UnknownNameError: Unknown engine 'vllmm'. Did you mean 'vllm', ...? Known: ...
    """
    key = str(name).strip().lower()
    key = ENGINE_ALIASES.get(key, key)
    if key not in ENGINE_PARALLEL:
        raise UnknownNameError("engine", name, sorted(ENGINE_PARALLEL))
    return key


# --------------------------------------------------------------------------------------------------
# Calibration parameters
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Params:
    """Fitted parameters, all SI: fractions (0–1) and seconds.

    ``fractions`` maps (family, engine) → (bandwidth fraction f_b, compute fraction f_c).
    """

    fractions: dict
    step_overhead_s: dict  # engine -> s per step
    layer_overhead_s: dict  # engine -> s per layer per step
    sequence_overhead_s: dict  # engine -> s per sequence per step (sampling, bookkeeping)
    allreduce_hop_latency_s: dict  # engine -> s per ring hop; one all-reduce over N GPUs = 2(N − 1) hops
    gpu_family: dict  # gpu id -> family
    ranges: dict = field(default_factory=dict)  # (family, engine) -> fitted range
    provenance: dict = field(default_factory=dict)

    def family(self, gpu_id: str) -> str:
        """GPU family of ``gpu_id`` ("ampere", "hopper", …); "unknown" if the table does not say."""
        return self.gpu_family.get(gpu_id) or _gpu_family_table().get(gpu_id, "unknown")

    def resolve(self, family: str, engine: str) -> tuple[float, float, str]:
        """(f_b, f_c, how) for a family and engine; ``how`` says where the numbers came from.

        Fitted pair first; else the same engine on the other fitted families (mean); else the family's
        mean over engines; else the mean of everything.
        """
        if (family, engine) in self.fractions:
            fb, fc = self.fractions[(family, engine)]
            return fb, fc, "fitted"
        same_engine = [v for (f, e), v in self.fractions.items() if e == engine]
        if same_engine:
            fb, fc = np.mean(same_engine, axis=0)
            return float(fb), float(fc), f"{engine} on other GPU families (no {family} rows)"
        same_family = [v for (f, e), v in self.fractions.items() if f == family]
        if same_family:
            fb, fc = np.mean(same_family, axis=0)
            return float(fb), float(fc), f"mean of other engines on {family} (no {engine} rows)"
        fb, fc = np.mean(list(self.fractions.values()), axis=0)
        return float(fb), float(fc), "mean of all fitted pairs (nothing for this family or engine)"

    def hop_latency_s(self, engine: str) -> float:
        """Latency of one ring hop of a tensor-parallel all-reduce with ``engine`` (s); the median over the
        fitted engines if it was not fitted."""
        if engine in self.allreduce_hop_latency_s:
            return self.allreduce_hop_latency_s[engine]
        return float(np.median(list(self.allreduce_hop_latency_s.values())))

    def engine_overheads(self, engine: str) -> tuple[float, float, float, str]:
        """(per-step s, per-layer s, per-sequence s, how) for an engine; medians over the fitted engines
        if it was not fitted."""
        if engine in self.step_overhead_s:
            e = engine
            return self.step_overhead_s[e], self.layer_overhead_s[e], self.sequence_overhead_s[e], "fitted"
        return (
            float(np.median(list(self.step_overhead_s.values()))),
            float(np.median(list(self.layer_overhead_s.values()))),
            float(np.median(list(self.sequence_overhead_s.values()))),
            "median over fitted engines",
        )


def _calibration_path(path=None) -> Path:
    return Path(path) if path is not None else DATA_DIR / CALIBRATION_FILE


@functools.lru_cache(maxsize=4)
def _load_calibration_cached(path: str) -> Params:
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    fractions, ranges = {}, {}
    for fam, engines in raw.get("fraction", {}).items():
        for eng, v in engines.items():
            fractions[(fam, eng)] = (float(v["bandwidth"]), float(v["compute"]))
    for fam, engines in raw.get("range", {}).items():
        for eng, v in engines.items():
            ranges[(fam, eng)] = dict(v)
    return Params(
        fractions=fractions,
        step_overhead_s={e: float(v["step_overhead_s"]) for e, v in raw["engine"].items()},
        layer_overhead_s={e: float(v["layer_overhead_s"]) for e, v in raw["engine"].items()},
        sequence_overhead_s={e: float(v["sequence_overhead_s"]) for e, v in raw["engine"].items()},
        allreduce_hop_latency_s={e: float(v["allreduce_hop_latency_s"]) for e, v in raw["engine"].items()},
        gpu_family=dict(raw["gpu_family"]),
        ranges=ranges,
        provenance=dict(raw.get("provenance", {})),
    )


def load_calibration(path=None) -> Params:
    """The stored fit (``data/calibration.toml`` unless ``path``), as :class:`Params`.

    >>> p = load_calibration()
    >>> 0 < p.resolve("hopper", "vllm")[0] <= 1
    True
    """
    return _load_calibration_cached(str(_calibration_path(path)))


# --------------------------------------------------------------------------------------------------
# The ideal's pieces, and the achievable time built on them
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pieces:
    """Ideal compute and memory times of a set of passes (decode steps or prefills), on the GPUs that
    actually work in parallel on them (N for tensor parallel, 1 for a pipeline), plus their collectives."""

    compute_s: np.ndarray
    memory_s: np.ndarray
    comm_bytes_s: np.ndarray  # ring all-reduce bytes ÷ link, ideal (0 without tensor parallel)
    allreduces: float  # all-reduce latency hops per pass: 2 per layer × 2(N − 1)
    layers: int
    sequences: np.ndarray  # sequences in the pass (each pays the per-sequence cost)


def _effective_gpus(num_gpus: int, parallel: str) -> int:
    return num_gpus if parallel == "tensor" else 1


def _decode_pieces(model, gpu, batch, contexts, num_gpus, parallel, wp, kvp) -> _Pieces:
    m, g = rl.get_model(model), rl.get_gpu(gpu)
    n_eff = _effective_gpus(num_gpus, parallel)
    # forward_step, not decode_step: serving rows give a mean (fractional) decode batch
    s = rl.forward_step(
        m, g, batch, contexts, num_gpus=num_gpus, count_new_kv=False,
        weight_precision=wp, kv_precision=kvp, on_overflow="mask",
    )  # fmt: skip
    peak = rl.peak_flops_per_s(g, wp)
    tc = np.asarray(s.flops, dtype=float) / (n_eff * peak)
    tm = np.asarray(s.bytes_read, dtype=float) / (n_eff * g.memory_bandwidth_bytes_per_s)
    tp = parallel == "tensor" and num_gpus > 1
    comm = (
        rl.tensor_parallel_comm_time_s(m, batch, num_gpus, g.interconnect_bytes_per_s, latency_s=0.0)
        if tp
        else 0.0
    )
    tc, tm = np.broadcast_arrays(tc, tm)
    hops = 2.0 * m.layers * 2 * (num_gpus - 1) if tp else 0.0
    return _Pieces(tc, tm, np.broadcast_to(comm, tc.shape), hops, m.layers, np.asarray(batch, float))


def _prefill_pieces(model, gpu, batch, prompt_tokens, num_gpus, parallel, wp, kvp) -> _Pieces:
    """One prefill pass of ``batch`` prompts of ``prompt_tokens`` each (B × P tokens in one pass)."""
    m, g = rl.get_model(model), rl.get_gpu(gpu)
    n_eff = _effective_gpus(num_gpus, parallel)
    tokens = batch * prompt_tokens
    # B prompts in one pass, each attending to itself (the step engine's batched prefill). Measured runs
    # went past some models' windows (Llama 2 at 4k + 4k), so the window is not enforced here.
    p = rl.forward_step(
        m, g, batch, 0, new_tokens=prompt_tokens, num_gpus=num_gpus, weight_precision=wp, kv_precision=kvp,
        on_overflow="ignore",
    )  # fmt: skip
    peak = rl.peak_flops_per_s(g, wp)
    tc = np.asarray(p.flops) / (n_eff * peak)
    tm = np.asarray(p.bytes_moved) / (n_eff * g.memory_bandwidth_bytes_per_s)
    tp = parallel == "tensor" and num_gpus > 1
    comm = (
        rl.tensor_parallel_comm_time_s(m, tokens, num_gpus, g.interconnect_bytes_per_s, latency_s=0.0)
        if tp
        else 0.0
    )
    tc, tm = np.broadcast_arrays(np.asarray(tc, float), np.asarray(tm, float))
    hops = 2.0 * m.layers * 2 * (num_gpus - 1) if tp else 0.0
    return _Pieces(tc, tm, np.broadcast_to(comm, tc.shape), hops, m.layers, np.asarray(batch, float))


@dataclass(frozen=True)
class TimeBudget:
    """One pass's time split into the gap budget's parts (s, arrays like the pieces).

    ``ideal_s`` is the floor; ``kernel_s`` what real kernels add on top of it; ``step_s`` the fixed cost
    per step (with its per-sequence part), ``layer_s`` the per-layer costs, then communication.
    ``total_s`` adds them up.
    """

    ideal_s: np.ndarray
    kernel_s: np.ndarray
    step_s: float
    layer_s: float
    communication_s: np.ndarray
    total_s: np.ndarray
    binding: np.ndarray  # "memory" or "compute" after the efficiencies


def _budget(pc: _Pieces, fb, fc, step_s, layer_s, seq_s, allreduce_s, overhead=True) -> TimeBudget:
    ideal = np.maximum(pc.compute_s, pc.memory_s)
    real_c, real_m = pc.compute_s / fc, pc.memory_s / fb
    real = np.maximum(real_c, real_m)
    comm = pc.comm_bytes_s + pc.allreduces * allreduce_s
    step = (step_s + pc.sequences * seq_s) if overhead else 0.0
    layer = pc.layers * layer_s if overhead else 0.0
    total = real + step + layer + comm
    binding = np.where(real_c > real_m, "compute", "memory")
    return TimeBudget(
        ideal, real - ideal, step, layer, np.broadcast_to(comm, ideal.shape) * 1.0, total, binding
    )


def engine_parameters(gpu, engine: str = DEFAULT_ENGINE, params: Params | None = None) -> dict:
    """The calibrated parameters of ``engine`` on ``gpu``'s family, for other models to use (the serving
    simulator): ``bandwidth_fraction``, ``compute_fraction`` (of peak), ``step_overhead_s``,
    ``layer_overhead_s``, ``sequence_overhead_s`` (s) and ``allreduce_hop_latency_s`` (s).

    >>> p = engine_parameters("h100-sxm", "vllm")
    >>> 0 < p["bandwidth_fraction"] <= 1 and p["step_overhead_s"] > 0
    True
    """
    params = params or load_calibration()
    g, eng = rl.get_gpu(gpu), engine_id(engine)
    _, fb, fc, _, t_step, t_layer, t_seq, _ = _engine_setup(params, g.id, eng)
    return {
        "engine": eng,
        "bandwidth_fraction": float(fb),
        "compute_fraction": float(fc),
        "step_overhead_s": float(t_step),
        "layer_overhead_s": float(t_layer),
        "sequence_overhead_s": float(t_seq),
        "allreduce_hop_latency_s": float(params.hop_latency_s(eng)),
    }


def _engine_setup(params: Params, gpu_id: str, engine: str):
    fam = params.family(gpu_id)
    fb, fc, how = params.resolve(fam, engine)
    t_step, t_layer, t_seq, how_overheads = params.engine_overheads(engine)
    return fam, fb, fc, how, t_step, t_layer, t_seq, how_overheads


# --------------------------------------------------------------------------------------------------
# generate: a static batch, ideal and achievable side by side
# --------------------------------------------------------------------------------------------------


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


def _timing(ttft, steps, batch, inp, outp) -> Timing:
    decode_total = float(np.sum(steps))
    latency = float(ttft) + decode_total
    return Timing(
        ttft_s=float(ttft),
        tpot_s=decode_total / outp,
        latency_s=latency,
        output_tokens_per_s=batch * outp / latency,
        total_tokens_per_s=batch * (inp + outp) / latency,
    )


def generate(
    model,
    gpu,
    batch=1,
    input_tokens=128,
    output_tokens=128,
    *,
    num_gpus=1,
    parallel=None,
    weight_precision="bf16",
    kv_precision="bf16",
    engine=DEFAULT_ENGINE,
    params: Params | None = None,
) -> GenerateResult:
    """Ideal and achievable timings of a static batch: ``batch`` requests (B), each with ``input_tokens``
    prompt tokens (I) and ``output_tokens`` generated tokens (O), on ``num_gpus`` GPUs (N).

    The batch's prompts are prefilled in one pass (TTFT), then O decode steps run with each request's
    context growing from I to I + O − 1 tokens. ``parallel`` is ``"tensor"`` (split every layer: N GPUs'
    bandwidth add up) or ``"pipeline"`` (split the layers: a token visits the GPUs in turn, so the time is
    the sum over GPUs); default: how ``engine`` runs (llama.cpp: pipeline, the others: tensor).
    ``engine`` picks the calibrated parameters (default ``"vllm"``). Raises ``DoesNotFitError`` if the
    weights and the final KV cache do not fit in the N GPUs' memory.

    >>> r = generate("llama-3-8b", "h100-sxm", batch=1, input_tokens=1, output_tokens=1, engine="vllm")
    >>> round(r.ideal.ttft_s * 1e3, 2), round(r.ideal.tpot_s * 1e3, 2)     # 15.01 GB ÷ 3.35 TB/s twice
    (4.48, 4.48)
    >>> r.achievable.latency_s > r.ideal.latency_s
    True
    """
    params = params or load_calibration()
    m, g = rl.get_model(model), rl.get_gpu(gpu)
    eng = engine_id(engine)
    b = _positive_int(batch, "batch")
    i = _positive_int(input_tokens, "input_tokens")
    o = _positive_int(output_tokens, "output_tokens")
    n = _positive_int(num_gpus, "num_gpus")
    par = ENGINE_PARALLEL[eng] if parallel is None else str(parallel).lower()
    if par not in ("tensor", "pipeline"):
        raise InvalidConfigurationError(f"parallel must be 'tensor' or 'pipeline', got {parallel!r}")
    rl.check_fits(m, g, b, i + o, num_gpus=n, weight_precision=weight_precision, kv_precision=kv_precision)
    fam, fb, fc, how, t_step, t_layer, t_seq, how_oh = _engine_setup(params, g.id, eng)
    contexts = np.arange(i, i + o, dtype=float)
    ar = params.hop_latency_s(eng)
    ideal_dec = _decode_pieces(m, g, b, contexts, n, par, weight_precision, kv_precision)
    ideal_pre = _prefill_pieces(m, g, b, i, n, par, weight_precision, kv_precision)
    ideal = _timing(
        _budget(ideal_pre, 1, 1, 0, 0, 0, 0).ideal_s, _budget(ideal_dec, 1, 1, 0, 0, 0, 0).ideal_s, b, i, o
    )
    # A real engine keeps ~10 % of memory for activations and its own buffers; a batch whose KV does not
    # fit in the rest runs in waves (sequential sub-batches), each a prefill and O decode steps.
    waves, b_wave = serving_waves(m, g, b, i + o, num_gpus=n, weight_precision=weight_precision,
                                  kv_precision=kv_precision)  # fmt: skip
    dec = _decode_pieces(m, g, b_wave, contexts, n, par, weight_precision, kv_precision)
    pre = _prefill_pieces(m, g, b_wave, i, n, par, weight_precision, kv_precision)
    d_budget = _budget(dec, fb, fc, t_step, t_layer, t_seq, ar)
    p_budget = _budget(pre, fb, fc, t_step, t_layer, t_seq, ar)
    # With waves, the first token of the last wave comes after every earlier wave has finished.
    wave_s = float(p_budget.total_s) + float(np.sum(d_budget.total_s))
    real = _timing(float(p_budget.total_s) + (waves - 1) * wave_s, np.asarray(d_budget.total_s), b, i, o)
    extrapolated, reasons = _outside_range(params, fam, eng, g.id, m.id, b, i, o, n, weight_precision)
    calibration = {
        "source": _display_path(_calibration_path()),
        "fitted": params.provenance.get("date", ""),
        "gpu_family": fam,
        "bandwidth_fraction": fb,
        "compute_fraction": fc,
        "fractions_from": how,
        "step_overhead_s": t_step,
        "layer_overhead_s": t_layer,
        "sequence_overhead_s": t_seq,
        "overheads_from": how_oh,
        "memory_model": "engine (rl.memory_available_bytes: vLLM's defaults)",
        "waves": waves,
        "allreduce_hop_latency_s": ar,
        "allreduce_latency_s": 2 * (n - 1) * ar if (par == "tensor" and n > 1) else 0.0,
        "parallel": par,
        "extrapolated": extrapolated,
        "extrapolation_reasons": reasons,
        "nearest_measured": nearest_measured(m.id, g.id, eng, b, i, o, n) if extrapolated else [],
    }
    return GenerateResult(
        model_id=m.id,
        gpu_id=g.id,
        num_gpus=n,
        parallel=par,
        batch=b,
        input_tokens=i,
        output_tokens=o,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        engine=eng,
        ideal=ideal,
        achievable=real,
        fits=True,
        calibration=calibration,
    )


def _display_path(path: Path) -> str:
    """``data/calibration.toml`` relative to the repository when it lies inside it, else the full path."""
    try:
        return str(Path(path).resolve().relative_to(Path(__file__).resolve().parents[2]))
    except ValueError:
        return str(path)


def _positive_int(value, name: str) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise InvalidConfigurationError(f"{name} must be a whole number, got {value!r}") from None
    if v != value or v < 1:
        raise InvalidConfigurationError(f"{name} must be a whole number >= 1, got {value!r}")
    return v


def _precision_class(p: str) -> str:
    """bf16 and fp16 move the same bytes and run at the same peak: one class for range checks."""
    return "16-bit" if p in ("bf16", "fp16") else p


def serving_waves(
    model, gpu, batch, context_tokens, *, num_gpus=1, weight_precision="bf16", kv_precision="bf16"
):
    """(waves, requests per wave) for a static batch whose KV cache, at ``context_tokens`` each, must fit in
    what an engine leaves weights and KV (``rl.memory_available_bytes``, vLLM's defaults) beside the
    weights: the engine runs what does not fit in later waves. One wave (of the whole batch) when it fits.

    >>> serving_waves("llama-2-7b", "a100-40gb", 64, 4096)     # MHA: 0.5 MB of KV per token
    (8, 8.0)
    >>> serving_waves("llama-3-8b", "h100-sxm", 64, 4096)
    (1, 64.0)
    """
    fit = _users_that_fit(model, gpu, context_tokens, num_gpus, weight_precision, kv_precision)
    waves = max(1, math.ceil(batch / fit))
    return waves, batch / waves


def _users_that_fit(model, gpu, context_tokens, num_gpus, weight_precision, kv_precision) -> int:
    """Requests whose KV at ``context_tokens`` fits in the usable memory beside the weights (at least 1)."""
    m, g = rl.get_model(model), rl.get_gpu(gpu)
    usable = float(rl.memory_available_bytes(g, num_gpus))
    free = usable - rl.weight_bytes(m, weight_precision)
    per_request = float(rl.sequence_kv_bytes(m, context_tokens, kv_precision))
    return max(1, math.floor(free / per_request)) if per_request > 0 else 10**9


def _outside_range(params: Params, fam, eng, gpu_id, model_id, b, i, o, n, wp) -> tuple[bool, list[str]]:
    reasons = []
    rng = params.ranges.get((fam, eng))
    if rng is None:
        reasons.append(f"no measurements of {eng} on {fam} GPUs")
        return True, reasons
    for name, v in (("batch", b), ("input_tokens", i), ("output_tokens", o), ("num_gpus", n)):
        lo, hi = rng[name]
        if not lo <= v <= hi:
            reasons.append(f"{name} {v} outside the measured {lo}–{hi}")
    if gpu_id not in rng["gpus"]:
        reasons.append(f"GPU {gpu_id} not measured: its data sheet and the {fam} fractions are used")
    if model_id not in rng["models"]:
        reasons.append(f"model {model_id} not measured with {eng} on {fam}")
    if _precision_class(wp) not in {_precision_class(x) for x in rng["weight_precisions"]}:
        reasons.append(f"weights {wp} not measured with {eng} on {fam}")
    return bool(reasons), reasons


# --------------------------------------------------------------------------------------------------
# Gap budget and "paste your measurement"
# --------------------------------------------------------------------------------------------------


def _decode_budget(
    model, gpu, batch, contexts, num_gpus, parallel, weight_precision, kv_precision, engine, params
):
    """The itemised decode step (``TimeBudget``) with the engine's calibration, and the model and GPU rows."""
    params = params or load_calibration()
    m, g, eng = rl.get_model(model), rl.get_gpu(gpu), engine_id(engine)
    n = _positive_int(num_gpus, "num_gpus")
    par = ENGINE_PARALLEL[eng] if parallel is None else parallel
    _, fb, fc, _, t_step, t_layer, t_seq, _ = _engine_setup(params, g.id, eng)
    pc = _decode_pieces(m, g, batch, contexts, n, par, weight_precision, kv_precision)
    bd = _budget(pc, fb, fc, t_step, t_layer, t_seq, params.hop_latency_s(eng))
    return bd, m, g


def gap_budget(
    model,
    gpu,
    batch=1,
    context_tokens=0,
    *,
    num_gpus=1,
    parallel=None,
    weight_precision="bf16",
    kv_precision="bf16",
    engine=DEFAULT_ENGINE,
    params: Params | None = None,
) -> dict:
    """One decode step's time, itemised from the floor up (s): ``floor``, ``kernel efficiency`` (real
    kernels reach f_b of the bandwidth and f_c of peak math), ``per-step`` (scheduler, launch, and the
    per-sequence sampling and bookkeeping),
    ``per-layer`` (the small kernels of every layer), ``communication`` (tensor-parallel all-reduces).
    Scalar inputs only. Parts add up to ``total``.

    >>> b = gap_budget("llama-3-8b", "h100-sxm", engine="vllm")
    >>> parts = ["floor", "kernel efficiency", "per-step", "per-layer", "communication"]
    >>> abs(sum(b[k] for k in parts) - b["total"]) < 1e-12
    True
    """
    bd, _, _ = _decode_budget(
        model, gpu, batch, context_tokens, num_gpus, parallel, weight_precision, kv_precision, engine, params
    )
    return {
        "floor": float(bd.ideal_s),
        "kernel efficiency": float(bd.kernel_s),
        "per-step": float(bd.step_s),
        "per-layer": float(bd.layer_s),
        "communication": float(bd.communication_s),
        "total": float(bd.total_s),
    }


def decode_step_times(
    model,
    gpu,
    batch=1,
    context_tokens=0,
    *,
    num_gpus=1,
    parallel=None,
    weight_precision="bf16",
    kv_precision="bf16",
    engine=DEFAULT_ENGINE,
    params: Params | None = None,
) -> dict:
    """One decode step, ideal and achievable, vectorised over ``batch`` and ``context_tokens`` (s).

    Returns arrays ``floor`` (the ideal), the gap-budget parts (``BUDGET_PARTS``) and ``total`` (the
    achievable step), NaN where the configuration does not fit in memory, and ``fits``.

    >>> t = decode_step_times("llama-3-8b", "h100-sxm", batch=[1, 64], context_tokens=1000)
    >>> bool(np.all(t["total"] > t["floor"]))
    True
    """
    bd, m, g = _decode_budget(
        model, gpu, batch, context_tokens, num_gpus, parallel, weight_precision, kv_precision, engine, params
    )
    n = _positive_int(num_gpus, "num_gpus")
    ok = np.asarray(
        rl.decode_step(
            m,
            g,
            batch,
            context_tokens,
            num_gpus=n,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            on_overflow="mask",
        ).fits  # fmt: skip
    )
    mask = lambda x: np.where(ok, np.broadcast_to(x, ok.shape), np.nan)  # noqa: E731
    return {
        "floor": mask(bd.ideal_s),
        "kernel efficiency": mask(bd.kernel_s),
        "per-step": mask(bd.step_s),
        "per-layer": mask(bd.layer_s),
        "communication": mask(bd.communication_s),
        "total": mask(bd.total_s),
        "fits": ok,
    }


def prefill_times(
    model,
    gpu,
    prompt_tokens,
    batch=1,
    *,
    num_gpus=1,
    parallel=None,
    weight_precision="bf16",
    kv_precision="bf16",
    engine=DEFAULT_ENGINE,
    params: Params | None = None,
) -> dict:
    """One prefill pass of ``batch`` prompts of ``prompt_tokens`` each, ideal and achievable (s): ``floor``,
    the gap-budget parts (``BUDGET_PARTS``) and ``total``. Scalar inputs.

    >>> t = prefill_times("llama-3-8b", "h100-sxm", 8000)
    >>> t["total"] > t["floor"] > 0.13    # 2 × 8.03e9 × 8000 FLOP ÷ 989e12 FLOP/s = 0.130 s, + attention
    True
    """
    params = params or load_calibration()
    m, g, eng = rl.get_model(model), rl.get_gpu(gpu), engine_id(engine)
    n = _positive_int(num_gpus, "num_gpus")
    par = ENGINE_PARALLEL[eng] if parallel is None else parallel
    _, fb, fc, _, t_step, t_layer, t_seq, _ = _engine_setup(params, g.id, eng)
    pc = _prefill_pieces(m, g, _positive_int(batch, "batch"), _positive_int(prompt_tokens, "prompt_tokens"),
                         n, par, weight_precision, kv_precision)  # fmt: skip
    bd = _budget(pc, fb, fc, t_step, t_layer, t_seq, params.hop_latency_s(eng))
    return {
        "floor": float(bd.ideal_s),
        "kernel efficiency": float(bd.kernel_s),
        "per-step": float(bd.step_s),
        "per-layer": float(bd.layer_s),
        "communication": float(bd.communication_s),
        "total": float(bd.total_s),
    }


def diagnose_measurement(
    model,
    gpu,
    measured_step_s,
    batch=1,
    context_tokens=0,
    *,
    num_gpus=1,
    parallel=None,
    weight_precision="bf16",
    kv_precision="bf16",
    engine=DEFAULT_ENGINE,
    params: Params | None = None,
) -> dict:
    """Your measured decode step (s per step, i.e. the time between tokens) against the floor and the gap
    budget: MBU, MFU, and which part of the gap it sits in.

    >>> d = diagnose_measurement("llama-3-8b", "h100-sxm", 6e-3)   # 16.06 GB in 6 ms on 3.35 TB/s
    >>> round(d["mbu"], 2), d["sits_in"] in BUDGET_PARTS
    (0.8, True)
    >>> diagnose_measurement("llama-3-8b", "h100-sxm", 4e-3)["sits_in"]
    'below the floor (check the measurement: bytes, GPUs, precision)'
    """
    t = float(measured_step_s)
    if not t > 0 or not math.isfinite(t):
        raise InvalidConfigurationError(f"measured_step_s must be a positive number, got {measured_step_s!r}")
    m, g = rl.get_model(model), rl.get_gpu(gpu)
    n = _positive_int(num_gpus, "num_gpus")
    s = rl.decode_step(
        m, g, batch=batch, context_tokens=context_tokens, num_gpus=n,
        weight_precision=weight_precision, kv_precision=kv_precision, on_overflow="mask",
    )  # fmt: skip
    budget = gap_budget(
        m, g, batch, context_tokens, num_gpus=n, parallel=parallel, weight_precision=weight_precision,
        kv_precision=kv_precision, engine=engine, params=params,
    )  # fmt: skip
    mbu = float(rl.mbu(s.bytes_read, t, n * g.memory_bandwidth_bytes_per_s))
    mfu = float(rl.mfu(s.flops, t, n * rl.peak_flops_per_s(g, weight_precision)))
    edges = np.cumsum(
        [budget[k] for k in ("floor", "kernel efficiency", "per-step", "per-layer", "communication")]
    )
    names = ["kernel efficiency", "per-step", "per-layer", "communication"]
    if t < edges[0] * (1 - 1e-9):
        where = "below the floor (check the measurement: bytes, GPUs, precision)"
    elif t <= edges[-1]:
        where = names[min(int(np.searchsorted(edges[1:], t)), 3)]
    else:
        where = "beyond a tuned engine (queueing, small batches, CPU, a slower stack)"
    return {
        "measured_step_s": t,
        "floor_s": budget["floor"],
        "achievable_s": budget["total"],
        "mbu": mbu,
        "mfu": mfu,
        "measured_over_floor": t / budget["floor"],
        "measured_over_achievable": t / budget["total"],
        "sits_in": where,
        "budget": budget,
    }


# --------------------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------------------

# Hugging Face ids of the public studies → this library's model ids (models without a row are skipped).
HF_MODELS = {
    "meta-llama/Llama-2-7b-hf": "llama-2-7b",
    "meta-llama/Llama-2-70b-hf": "llama-2-70b",
    "meta-llama/Meta-Llama-3-8B": "llama-3-8b",
    "meta-llama/Meta-Llama-3-70B": "llama-3-70b",
    "mistralai/Mistral-7B-v0.1": "mistral-7b",
    "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "Qwen/Qwen2-7B": "qwen2-7b",
    "Qwen/Qwen2-72B": "qwen2-72b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "llama2-70b": "llama-2-70b",
}
# The assumption for LLM-Inference-Bench's unnamed variants (the study's A100 runs were on ALCF Polaris,
# A100 SXM4 40 GB; its H100 runs on an 80 GB H100, taken as SXM). See data/measured/README.md.
HARDWARE = {
    "Nvidia A100 GPU": "a100-40gb",
    "Nvidia H100 GPU": "h100-sxm",
    "a100-80gb": "a100-80gb-sxm",
    "h100-80gb": "h100-sxm",
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200",
}
FRAMEWORKS = {
    "vLLM": "vllm",
    "TensorRT-LLM": "tensorrt-llm",
    "llama.cpp": "llama.cpp",
    "Deepspeed-MII": "deepspeed-mii",
    "vllm": "vllm",
    "trtllm": "tensorrt-llm",
    "sglang": "sglang",
}
_PREC = {"fp16": "fp16", "fp8": "fp8", "int8": "int8", "int4": "int4", "bf16": "bf16"}


@dataclass
class Measurements:
    """Measured rows, one entry per row in every array field."""

    source: np.ndarray  # dataset name
    kind: np.ndarray  # "latency", "ttft", "tpot", "tpot_serving"
    model: np.ndarray
    gpu: np.ndarray
    engine: np.ndarray
    num_gpus: np.ndarray
    batch: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    weight_precision: np.ndarray
    kv_precision: np.ndarray
    measured_s: np.ndarray
    measured_throughput: np.ndarray  # tokens/s as the study printed it (latency rows), else NaN
    prefill_chunk: np.ndarray  # prompt tokens per prefill pass (llama.cpp's -b); 0 = the whole prompt

    def __len__(self) -> int:
        return len(self.measured_s)

    def subset(self, mask) -> Measurements:
        return Measurements(**{k: v[mask] for k, v in asdict_shallow(self).items()})

    @property
    def regime(self) -> np.ndarray:
        """The regime each row measures (see ``REGIMES``; throughput rows are the latency rows again)."""
        return np.select(
            [
                (self.kind == "tpot") & (self.batch == 1),
                (self.kind == "tpot") | (self.kind == "tpot_serving"),
                self.kind == "ttft",
            ],
            ["batch-1 decode", "batched decode", "prefill/TTFT"],
            "end-to-end",
        )

    @property
    def group(self) -> np.ndarray:
        """Configuration group of each row: model × GPU × engine (held out together in validation)."""
        return np.array([f"{m}|{g}|{e}" for m, g, e in zip(self.model, self.gpu, self.engine, strict=True)])


def asdict_shallow(obj) -> dict:
    return {k: getattr(obj, k) for k in obj.__dataclass_fields__}


def _read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _lib_precisions(text: str) -> tuple[str, str]:
    # "Weight = fp16, KV Cache = fp8"
    w, kv = (part.split("=")[1].strip().lower() for part in text.split(","))
    return _PREC[w], _PREC[kv]


@functools.lru_cache(maxsize=2)
def _load_measurements_cached(directory: str) -> Measurements:
    d = Path(directory)
    rows = []

    def add(**r):
        rows.append(r)

    for name, quant in (("llm_inference_bench.csv", False), ("llm_inference_bench_quant.csv", True)):
        for x in _read_csv(d / name):
            if x["Model"] not in HF_MODELS:
                continue
            wp, kvp = _lib_precisions(x["kv_cache_dtype"]) if quant else ("fp16", "fp16")
            L = int(x["Input Output Length"])
            # llama.cpp's "batch size" is its prompt-processing batch (-b), not concurrent requests: the
            # study's llama.cpp throughput is 2L ÷ latency (one sequence), and at "batch 1" the prompt goes
            # through one token per pass (twice the time). So: one sequence, prompt in chunks of that size.
            llama_cpp = x["Framework"] == "llama.cpp"
            batch = 1 if llama_cpp else int(x["Batch Size"])
            chunk = int(x["Batch Size"]) if llama_cpp else 0
            latency = float(x["latency" if quant else "Latency"])
            add(
                source="LLM-Inference-Bench" + (" (precision sweep)" if quant else ""),
                kind="latency",
                model=HF_MODELS[x["Model"]],
                gpu=HARDWARE[x["Hardware"]],
                engine=FRAMEWORKS[x["Framework"]],
                num_gpus=int(x["Num of Hardware"]),
                batch=batch,
                input_tokens=L,
                output_tokens=L,
                weight_precision=wp,
                kv_precision=kvp,
                measured_s=latency,
                measured_throughput=float(x["throughput" if quant else "Throughput"]),
                prefill_chunk=chunk,
            )
    # Splitwise: 5 repeats per configuration, averaged; TTFT and the mean decode step are separate rows.
    sw: dict = {}
    for x in _read_csv(d / "splitwise_perf_model.csv"):
        key = (x["model"], x["hardware"], int(x["tensor_parallel"]), int(x["batch_size"]),
               int(x["prompt_size"]), int(x["token_size"]))  # fmt: skip
        sw.setdefault(key, []).append((float(x["prompt_time"]) * 1e-3, float(x["token_time"]) * 1e-3))
    for (mdl, hw, tp, b, p, o), v in sw.items():
        ttft, tpot = np.mean(v, axis=0)
        common = dict(source="Splitwise", model=HF_MODELS[mdl], gpu=HARDWARE[hw], engine="splitwise-2023",
                      num_gpus=tp, batch=b, input_tokens=p, output_tokens=o, weight_precision="fp16",
                      kv_precision="fp16", measured_throughput=math.nan,
                      prefill_chunk=0)  # fmt: skip
        add(kind="ttft", measured_s=float(ttft), **common)
        add(kind="tpot", measured_s=float(tpot), **common)
    # aiconfigurator: aggregated serving at a concurrency; only TPOT is used (TTFT holds queueing).
    for x in _read_csv(d / "aiconfigurator_silicon_hopper.csv"):
        if x["model_path"] not in HF_MODELS or x["mode"] != "agg" or int(x["pp_size"] or 1) != 1:
            continue
        eng = FRAMEWORKS[x["backend"]]
        wp = "fp8" if x["gemm_quant_mode"].startswith("fp8") else "bf16"
        kvp = "fp8" if (wp == "fp8" and eng == "tensorrt-llm") else "bf16"
        add(
            source="aiconfigurator",
            kind="tpot_serving",
            model=HF_MODELS[x["model_path"]],
            gpu=HARDWARE[x["system"]],
            engine=eng,
            num_gpus=int(x["tp_size"]),
            batch=int(x["batch_size"]),
            input_tokens=int(x["isl"]),
            output_tokens=int(x["osl"]),
            weight_precision=wp,
            kv_precision=kvp,
            measured_s=float(x["silicon_tpot_ms"]) * 1e-3,
            measured_throughput=math.nan,
            prefill_chunk=0,
        )
    cols = {k: np.array([r[k] for r in rows]) for k in rows[0]}
    return Measurements(**cols)


def load_measurements(directory=None) -> Measurements:
    """The measured rows in ``data/measured/`` (or ``directory``), mapped to this library's ids.

    >>> m = load_measurements()
    >>> sorted(set(m.kind.tolist()))
    ['latency', 'tpot', 'tpot_serving', 'ttft']
    """
    return _load_measurements_cached(str(Path(directory) if directory else DATA_DIR / MEASURED_DIR))


def nearest_measured(
    model_id, gpu_id, engine, batch, input_tokens, output_tokens, num_gpus, k=3
) -> list[dict]:
    """The ``k`` measured configurations closest to this one (same engine first; distance in log sizes).

    >>> nearest_measured("llama-3-8b", "h100-sxm", "vllm", 1, 128, 128, 1, k=1)[0]["model"]
    'llama-3-8b'
    """
    ms = load_measurements()
    ok = ms.engine == engine
    if not ok.any():
        ok = np.ones(len(ms), bool)
    ms = ms.subset(ok)
    log = np.log
    params = np.array([rl.active_parameter_count(x) for x in ms.model])
    dist = (
        np.abs(log(ms.batch / batch)) + np.abs(log(ms.input_tokens / input_tokens))
        + np.abs(log(ms.output_tokens / output_tokens)) + np.abs(log(ms.num_gpus / num_gpus))
        + np.abs(log(params / rl.active_parameter_count(model_id)))
        + (ms.model != model_id) * 0.5 + (ms.gpu != gpu_id) * 1.0
    )  # fmt: skip
    seen, outl = set(), []
    for j in np.argsort(dist, kind="stable"):
        key = (ms.source[j], ms.model[j], ms.gpu[j], int(ms.num_gpus[j]), int(ms.batch[j]),
               int(ms.input_tokens[j]), int(ms.output_tokens[j]))  # fmt: skip
        if key in seen:
            continue
        seen.add(key)
        key = tuple(x.item() if isinstance(x, np.generic) else x for x in key)
        outl.append(dict(zip(("source", "model", "gpu", "num_gpus", "batch", "input_tokens", "output_tokens"),
                             key, strict=True), engine=str(ms.engine[j])))  # fmt: skip
        if len(outl) == k:
            break
    return outl


# --------------------------------------------------------------------------------------------------
# Terms: every measured row as a sum of passes whose ideal times are precomputed
# --------------------------------------------------------------------------------------------------


@dataclass
class _Terms:
    row: np.ndarray  # row index of each pass
    weight: np.ndarray  # how many times the pass counts in the row's time
    compute_s: np.ndarray
    memory_s: np.ndarray
    comm_bytes_s: np.ndarray
    allreduces: np.ndarray  # latency hops
    layers: np.ndarray
    overhead: np.ndarray  # 1 if the pass pays per-step and per-layer costs
    sequences: np.ndarray  # sequences paying the per-sequence cost (0 where overhead is 0)
    family: np.ndarray
    engine: np.ndarray
    n_rows: int


def _quad_contexts(i: int, o: int) -> np.ndarray:
    """Midpoints of ``_QUAD_POINTS`` equal bins of the contexts i … i + o − 1 (fewer if o is small)."""
    k = min(_QUAD_POINTS, o)
    return i + (np.arange(k) + 0.5) * o / k - 0.5


@functools.lru_cache(maxsize=4)
def _terms_cached(directory: str) -> _Terms:
    ms = load_measurements(directory)
    fam_map = _gpu_family_table()
    acc = {k: [] for k in ("row", "weight", "compute_s", "memory_s", "comm_bytes_s", "allreduces",
                            "layers", "overhead", "sequences")}  # fmt: skip

    def push(r, pc: _Pieces, w, overhead):
        n = pc.compute_s.size
        acc["row"].append(np.full(n, r))
        acc["weight"].append(np.broadcast_to(np.asarray(w, float), (n,)))
        acc["compute_s"].append(pc.compute_s.ravel())
        acc["memory_s"].append(pc.memory_s.ravel())
        acc["comm_bytes_s"].append(np.asarray(pc.comm_bytes_s, float).ravel())
        acc["allreduces"].append(np.full(n, pc.allreduces))
        acc["layers"].append(np.full(n, pc.layers, float))
        acc["overhead"].append(np.full(n, float(overhead)))
        acc["sequences"].append(np.broadcast_to(pc.sequences * float(overhead), (n,)).astype(float))

    for r in range(len(ms)):
        mdl, gpu, eng = ms.model[r], ms.gpu[r], ms.engine[r]
        n, b = int(ms.num_gpus[r]), int(ms.batch[r])
        i, o = int(ms.input_tokens[r]), int(ms.output_tokens[r])
        wp, kvp = ms.weight_precision[r], ms.kv_precision[r]
        par = ENGINE_PARALLEL[eng]
        kind = ms.kind[r]
        if kind == "latency":  # a static batch: what does not fit runs in later waves
            waves, b_run = serving_waves(
                mdl, gpu, b, i + o, num_gpus=n, weight_precision=wp, kv_precision=kvp
            )
        elif kind == "tpot_serving":  # at a concurrency: at most what fits decodes together
            waves, b_run = 1, min(b, _users_that_fit(mdl, gpu, i + o, n, wp, kvp))
        else:  # a measured step or prefill of the batch that ran
            waves, b_run = 1, b
        chunk = int(ms.prefill_chunk[r])
        if kind in ("latency", "ttft") and 0 < chunk < i:  # the prompt in ceil(i / chunk) passes
            push(
                r,
                _prefill_pieces(mdl, gpu, b_run, chunk, n, par, wp, kvp),
                waves * math.ceil(i / chunk),
                True,
            )
        elif kind in ("latency", "ttft"):
            push(r, _prefill_pieces(mdl, gpu, b_run, i, n, par, wp, kvp), float(waves), True)
        if kind in ("latency", "tpot"):
            ctx = _quad_contexts(i, o)
            w = (waves * o / ctx.size) if kind == "latency" else 1.0 / ctx.size
            push(r, _decode_pieces(mdl, gpu, b_run, ctx, n, par, wp, kvp), w, True)
        if kind == "tpot_serving":
            # Closed loop at concurrency c: while one request decodes its o tokens, each of the other c − 1
            # requests is replaced once, so c − 1 prompts of i tokens are prefilled in the steps it waits
            # for. The engines mix those prompt chunks into the decode steps (chunked prefill), so each step
            # carries (c − 1) ÷ o of a prefill's FLOPs and bytes on top of its own, under the same max().
            ctx = _quad_contexts(i, o)
            dec = _decode_pieces(mdl, gpu, b_run, ctx, n, par, wp, kvp)
            pre = _prefill_pieces(mdl, gpu, 1, i, n, par, wp, kvp)
            share = (b - 1) / o
            kv_write_s = pre.memory_s - _prefill_pieces(mdl, gpu, 1, 1, n, par, wp, kvp).memory_s
            mixed = _Pieces(
                dec.compute_s + share * pre.compute_s,
                dec.memory_s + share * kv_write_s,
                dec.comm_bytes_s + share * pre.comm_bytes_s,
                dec.allreduces,
                dec.layers,
                dec.sequences,
            )
            push(r, mixed, 1.0 / ctx.size, True)
    t = {k: np.concatenate(v) for k, v in acc.items()}
    fam = np.array([fam_map.get(g, "unknown") for g in ms.gpu])
    return _Terms(family=fam[t["row"]], engine=ms.engine[t["row"]], n_rows=len(ms), **t)


def _gpu_family_table() -> dict:
    """GPU id → family, for every GPU in ``data/gpus.toml`` (from the product names)."""
    out_ = {}
    for gid in rl.gpus():
        g = rl.get_gpu(gid)
        name = f"{g.id} {g.name}".lower()
        if g.vendor == "amd":
            fam = "cdna3" if "mi3" in name else "cdna"
        elif "a100" in name or "a10g" in name or name.endswith(" a10"):
            fam = "ampere"
        elif "h100" in name or "h200" in name or "gh200" in name or "hopper" in name:
            fam = "hopper"
        elif "b200" in name or "b100" in name or "blackwell" in name:
            fam = "blackwell"
        elif "l40" in name or "l4" in name or "4090" in name:
            fam = "ada"
        else:
            fam = "unknown"
        out_[g.id] = fam
    return out_


# --------------------------------------------------------------------------------------------------
# Prediction and fit
# --------------------------------------------------------------------------------------------------

# Weak priors (log/logit space) that keep parameters the data cannot see at sensible values:
# kernels reach ~80 % of bandwidth and ~60 % of peak math; ~1 ms per step, ~20 µs per layer, ~20 µs per
# sequence in a step, 5 µs per ring hop (NCCL's small all-reduce on 2 GPUs: ~10 µs). Each prior is a
# pseudo-observation (θ − μ) / sd × ``_PRIOR_WEIGHT`` in the least squares.
_PRIOR = {
    "fb": (0.8, 1.5),
    "fc": (0.6, 1.5),
    "step": (1e-3, 2.5),
    "layer": (20e-6, 2.5),
    "seq": (20e-6, 2.5),
    "ar": (5e-6, 1.5),
}
_PRIOR_WEIGHT = 0.3


def _logit(p):
    return math.log(p / (1 - p))


@dataclass
class _Layout:
    pairs: list  # (family, engine)
    engines: list

    @property
    def size(self) -> int:
        return 2 * len(self.pairs) + 4 * len(self.engines)


def _unpack(theta, lay: _Layout, gpu_family: dict, ranges=None, provenance=None) -> Params:
    k = len(lay.pairs)
    sig = 1 / (1 + np.exp(-theta[: 2 * k]))
    e = len(lay.engines)
    return Params(
        fractions={p: (float(sig[j]), float(sig[k + j])) for j, p in enumerate(lay.pairs)},
        step_overhead_s={x: float(np.exp(theta[2 * k + j])) for j, x in enumerate(lay.engines)},
        layer_overhead_s={x: float(np.exp(theta[2 * k + e + j])) for j, x in enumerate(lay.engines)},
        sequence_overhead_s={x: float(np.exp(theta[2 * k + 2 * e + j])) for j, x in enumerate(lay.engines)},
        allreduce_hop_latency_s={
            x: float(np.exp(theta[2 * k + 3 * e + j])) for j, x in enumerate(lay.engines)
        },
        gpu_family=gpu_family,
        ranges=ranges or {},
        provenance=provenance or {},
    )


def _term_params(t: _Terms, params: Params):
    """Per-pass f_b, f_c, per-step and per-layer seconds (fallbacks as ``Params.resolve``)."""
    fb = np.empty(t.row.size)
    fc = np.empty(t.row.size)
    st = np.empty(t.row.size)
    la = np.empty(t.row.size)
    sq = np.empty(t.row.size)
    ar = np.empty(t.row.size)
    keys = np.char.add(np.char.add(t.family.astype(str), "|"), t.engine.astype(str))
    for key in np.unique(keys):
        fam, eng = key.split("|")
        sel = keys == key
        fb[sel], fc[sel], _ = params.resolve(fam, eng)
        st[sel], la[sel], sq[sel], _ = params.engine_overheads(eng)
        ar[sel] = params.hop_latency_s(eng)
    return fb, fc, st, la, sq, ar


def _predict_terms(t: _Terms, params: Params) -> np.ndarray:
    fb, fc, st, la, sq, ar = _term_params(t, params)
    real = np.maximum(t.compute_s / fc, t.memory_s / fb)
    per = (real + t.overhead * (st + t.layers * la) + t.sequences * sq + t.comm_bytes_s
           + t.allreduces * ar)  # fmt: skip
    return np.bincount(t.row, weights=t.weight * per, minlength=t.n_rows)


def predict(params: Params | None = None) -> np.ndarray:
    """Predicted time (s) of every row of ``load_measurements()``: latency, TTFT or mean decode step, as
    the row measures; with ``params`` (default: the stored fit).

    >>> bool(np.all(predict() > 0))
    True
    """
    return _predict_terms(_terms(), params or load_calibration())


def _terms() -> _Terms:
    return _terms_cached(str(DATA_DIR / MEASURED_DIR))


def ideal_times() -> np.ndarray:
    """The ideal (floor) time of every measured row (s): fractions 1, no overheads, no communication."""
    t = _terms()
    return np.bincount(t.row, weights=t.weight * np.maximum(t.compute_s, t.memory_s), minlength=t.n_rows)


def usable_rows() -> np.ndarray:
    """Rows the fit and the validation use: all but those measured faster than the ideal floor, which
    no real run can be (a data error, e.g. Splitwise's batch-64 prefills at TP 2)."""
    return load_measurements().measured_s >= ideal_times()


def _fit_theta(t: _Terms, y: np.ndarray, train_rows: np.ndarray, lay: _Layout, iters=60):
    """Levenberg–Marquardt on log(predicted ÷ measured) over the training rows, analytic Jacobian.
    Returns θ and, per parameter, whether the prior outweighs the data (curvature of the prior term larger
    than that of the data term at the optimum)."""
    k, e = len(lay.pairs), len(lay.engines)
    pair_idx = {p: j for j, p in enumerate(lay.pairs)}
    eng_idx = {x: j for j, x in enumerate(lay.engines)}
    use_term = train_rows[t.row]
    tt = _Terms(**{f: (getattr(t, f)[use_term] if isinstance(getattr(t, f), np.ndarray) else getattr(t, f))
                   for f in t.__dataclass_fields__})  # fmt: skip
    pj = np.array([pair_idx[(f, x)] for f, x in zip(tt.family, tt.engine, strict=True)])
    ej = np.array([eng_idx[x] for x in tt.engine])
    rows = np.flatnonzero(train_rows)
    mu = np.array(
        [_logit(_PRIOR["fb"][0])] * k + [_logit(_PRIOR["fc"][0])] * k
        + [math.log(_PRIOR["step"][0])] * e + [math.log(_PRIOR["layer"][0])] * e
        + [math.log(_PRIOR["seq"][0])] * e + [math.log(_PRIOR["ar"][0])] * e
    )  # fmt: skip
    sd = np.array([_PRIOR["fb"][1]] * k + [_PRIOR["fc"][1]] * k + [_PRIOR["step"][1]] * e
                  + [_PRIOR["layer"][1]] * e + [_PRIOR["seq"][1]] * e + [_PRIOR["ar"][1]] * e)  # fmt: skip
    theta = mu.copy()
    logy = np.log(y[rows])

    def evaluate(th):
        fb = 1 / (1 + np.exp(-th[pj]))
        fc = 1 / (1 + np.exp(-th[k + pj]))
        st = np.exp(th[2 * k + ej])
        la = np.exp(th[2 * k + e + ej])
        sq = np.exp(th[2 * k + 2 * e + ej])
        ar = np.exp(th[2 * k + 3 * e + ej])
        rc, rm = tt.compute_s / fc, tt.memory_s / fb
        comp = rc > rm
        per = (np.maximum(rc, rm) + tt.overhead * (st + tt.layers * la) + tt.sequences * sq
               + tt.comm_bytes_s + tt.allreduces * ar)  # fmt: skip
        pred = np.bincount(tt.row, weights=tt.weight * per, minlength=t.n_rows)[rows]
        r = np.log(pred) - logy
        # d per / d theta, then summed into rows and divided by pred (d log pred)
        pos = np.searchsorted(rows, tt.row)
        w = tt.weight
        size = th.size
        cols = (pj, k + pj, 2 * k + ej, 2 * k + e + ej, 2 * k + 2 * e + ej, 2 * k + 3 * e + ej)
        vals = (
            np.where(~comp, -rm * (1 - fb), 0.0) * w,
            np.where(comp, -rc * (1 - fc), 0.0) * w,
            tt.overhead * st * w,
            tt.overhead * tt.layers * la * w,
            tt.sequences * sq * w,
            tt.allreduces * ar * w,
        )
        # The Jacobian, transposed (parameters × rows) and contiguous: J^T J is then a fast matmul.
        flat = np.concatenate([c * rows.size + pos for c in cols])
        jac_t = np.bincount(flat, weights=np.concatenate(vals), minlength=rows.size * size)
        jac_t = jac_t.reshape(size, rows.size)
        jac_t /= pred[None, :]
        return r, jac_t

    def objective(r, th):
        pr = _PRIOR_WEIGHT * (th - mu) / sd
        return float(r @ r + pr @ pr)

    lam = 1e-2
    r, jac = evaluate(theta)
    cost = objective(r, theta)
    for _ in range(iters):
        # einsum's own loops, not BLAS: threaded BLAS stalls on a busy machine at these small sizes
        a = np.einsum("ij,kj->ik", jac, jac) + np.diag((_PRIOR_WEIGHT / sd) ** 2)
        g = np.einsum("ij,j->i", jac, r) + (_PRIOR_WEIGHT / sd) ** 2 * (theta - mu)
        step = _spd_solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
        cand = theta + step
        r2, jac2 = evaluate(cand)
        c2 = objective(r2, cand)
        if c2 < cost:
            improved = cost - c2
            theta, r, jac, cost = cand, r2, jac2, c2
            lam = max(lam / 3, 1e-6)
            if improved < 1e-10 * max(cost, 1e-12):
                break
        else:
            lam *= 4
            if lam > 1e8:
                break
    prior_dominated = (jac**2).sum(axis=1) < (_PRIOR_WEIGHT / sd) ** 2
    return theta, prior_dominated


def _spd_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve a x = b for a small symmetric positive-definite ``a`` by Gaussian elimination (no pivoting
    needed). Plain numpy: threaded LAPACK is far slower at this size on a busy machine.

    >>> _spd_solve(np.array([[4.0, 2.0], [2.0, 3.0]]), np.array([2.0, 1.0])).tolist()
    [0.5, 0.0]
    """
    m = np.array(a, dtype=float)
    x = np.array(b, dtype=float)
    n = len(x)
    for k in range(n):
        f = m[k + 1 :, k] / m[k, k]
        m[k + 1 :, k:] -= f[:, None] * m[k, k:]
        x[k + 1 :] -= f * x[k]
    for k in range(n - 1, -1, -1):
        x[k] = (x[k] - m[k, k + 1 :] @ x[k + 1 :]) / m[k, k]
    return x


def _layout_for(t: _Terms, ms: Measurements, train_rows) -> _Layout:
    rows = np.flatnonzero(train_rows)
    fam = t.family[np.searchsorted(t.row, rows)] if rows.size else np.array([])
    pairs = sorted({(f, e) for f, e in zip(fam, ms.engine[rows], strict=True)})
    engines = sorted({e for _, e in pairs})
    return _Layout(pairs, engines)


def _ranges(ms: Measurements, fam_map: dict, train_rows) -> dict:
    out_ = {}
    rows = np.flatnonzero(train_rows)
    fam = np.array([fam_map.get(g, "unknown") for g in ms.gpu])
    for f, e in sorted({(fam[r], ms.engine[r]) for r in rows}):
        sel = rows[(fam[rows] == f) & (ms.engine[rows] == e)]
        out_[(f, e)] = {
            "batch": [int(ms.batch[sel].min()), int(ms.batch[sel].max())],
            "input_tokens": [int(ms.input_tokens[sel].min()), int(ms.input_tokens[sel].max())],
            "output_tokens": [int(ms.output_tokens[sel].min()), int(ms.output_tokens[sel].max())],
            "num_gpus": [int(ms.num_gpus[sel].min()), int(ms.num_gpus[sel].max())],
            "models": sorted(set(ms.model[sel].tolist())),
            "gpus": sorted(set(ms.gpu[sel].tolist())),
            "weight_precisions": sorted(set(ms.weight_precision[sel].tolist())),
            "rows": int(sel.size),
        }
    return out_


def fit(train_rows=None, gpu_family: dict | None = None) -> Params:
    """Fit the parameters to the measured rows ``train_rows`` (bool mask; default all) and return them.

    Least squares on log(predicted ÷ measured), so every row counts by its relative error; weak priors
    hold parameters the data does not constrain. Deterministic.

    >>> p = fit()
    >>> sorted(p.step_overhead_s) == sorted(set(load_measurements().engine.tolist()))
    True
    """
    ms = load_measurements()
    fam_map = gpu_family or _gpu_family_table()
    t = _terms()
    train = usable_rows() if train_rows is None else np.asarray(train_rows, bool) & usable_rows()
    lay = _layout_for(t, ms, train)
    theta, weak = _fit_theta(t, ms.measured_s, train, lay)
    names = _parameter_names(lay)
    prov = {"prior_dominated": [n for n, w in zip(names, weak, strict=True) if w]}
    return _unpack(theta, lay, fam_map, ranges=_ranges(ms, fam_map, train), provenance=prov)


def _parameter_names(lay: _Layout) -> list[str]:
    pairs = [f"{f}.{e}" for f, e in lay.pairs]
    return (
        [f"fraction.{p}.bandwidth" for p in pairs]
        + [f"fraction.{p}.compute" for p in pairs]
        + [f"engine.{e}.{name}" for name in ("step_overhead_s", "layer_overhead_s", "sequence_overhead_s",
                                               "allreduce_hop_latency_s") for e in lay.engines]
    )  # fmt: skip


# --------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------


def group_folds(groups: np.ndarray, k: int = 5) -> np.ndarray:
    """Fold (0 … k−1) of every row, whole groups together: groups sorted by name, dealt round-robin.

    >>> group_folds(np.array(["b", "a", "b", "c"]), k=2).tolist()
    [1, 0, 1, 0]
    """
    names = np.unique(groups)
    fold_of = {g: j % k for j, g in enumerate(names)}
    return np.array([fold_of[g] for g in groups])


@dataclass(frozen=True)
class Validation:
    """Held-out predictions for every row (each from a fit that never saw its group), and their errors."""

    measurements: Measurements
    predicted_s: np.ndarray  # held-out prediction of each row
    fold: np.ndarray
    k: int

    @property
    def abs_error(self) -> np.ndarray:
        """|predicted ÷ measured − 1| per row (fraction)."""
        return np.abs(self.predicted_s / self.measurements.measured_s - 1)

    def throughput_abs_error(self) -> np.ndarray:
        """|predicted ÷ measured − 1| of the study's throughput column, NaN elsewhere: latency rows whose
        printed throughput agrees (within 5 %) with B × 2L ÷ its own latency. That leaves out llama.cpp
        (its "batch" is not concurrent requests) and a few rows whose throughput column is inconsistent."""
        ms = self.measurements
        own = ms.batch * (ms.input_tokens + ms.output_tokens) / ms.measured_s
        lat = (ms.kind == "latency") & (np.abs(own / ms.measured_throughput - 1) < 0.05)
        pred_tp = np.where(lat, ms.batch * (ms.input_tokens + ms.output_tokens) / self.predicted_s, np.nan)
        return np.abs(pred_tp / ms.measured_throughput - 1)

    def table(self, by: str = "regime") -> list[dict]:
        """Median and p90 absolute % error per regime (``by="regime"``) or per engine (``by="engine"``)."""
        ms = self.measurements
        err = self.abs_error
        out_ = []
        if by == "regime":
            keys = [(r, ms.regime == r) for r in REGIMES if r != "throughput"]
            keys.insert(1, ("batch-1 end-to-end", (ms.kind == "latency") & (ms.batch == 1)))
        else:
            keys = [(e, ms.engine == e) for e in sorted(set(ms.engine.tolist()))]
        for name, sel in keys:
            if sel.any():
                out_.append(_summary(name, err[sel], ms.group[sel]))
        if by == "regime":
            tp = self.throughput_abs_error()
            sel = np.isfinite(tp)
            out_.append(_summary("throughput", tp[sel], ms.group[sel]))
        return out_


def _summary(name, err, groups) -> dict:
    return {
        "name": name,
        "rows": int(err.size),
        "groups": int(np.unique(groups).size),
        "median_abs_pct": float(np.median(err) * 100),
        "p90_abs_pct": float(np.percentile(err, 90) * 100),
        "goal_pct": GOALS[name] * 100 if name in GOALS else None,
    }


def validate(k: int = 5) -> Validation:
    """k-fold cross-validation by configuration group (model × GPU × engine): each group's rows are
    predicted by a fit on the other groups only.

    >>> v = validate(k=5)
    >>> len(v.predicted_s) == len(v.measurements)
    True
    """
    ms = load_measurements()
    ok = usable_rows()
    folds = group_folds(ms.group, k)
    pred = np.full(len(ms), np.nan)
    t = _terms()
    for f in range(k):
        held = folds == f
        p = fit(train_rows=~held)
        pred[held] = _predict_terms(t, p)[held]
    return Validation(ms.subset(ok), pred[ok], folds[ok], k)


def in_sample_table(params: Params | None = None) -> list[dict]:
    """Median and p90 absolute % error per regime of ``params`` (default: the stored fit) on all rows."""
    ms = load_measurements()
    ok = usable_rows()
    v = Validation(ms.subset(ok), predict(params)[ok], np.zeros(ok.sum(), int), 1)
    return v.table("regime")


# --------------------------------------------------------------------------------------------------
# The calibration file
# --------------------------------------------------------------------------------------------------


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(float(f"{v:.6g}"))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(type(v))


def calibration_toml(params: Params, provenance: dict) -> str:
    """The text of ``data/calibration.toml`` for ``params`` with ``provenance`` (a flat dict + tables)."""
    lines = [
        "# Achievable-performance calibration: fitted by tools/fit_calibration.py. Do not edit by hand;",
        "# rerun the tool. Units: fractions 0-1, seconds. See lib/roofline/achievable.py.",
        "",
        "[provenance]",
    ]
    tables = {k: v for k, v in provenance.items() if isinstance(v, dict)}
    for key, v in provenance.items():
        if not isinstance(v, dict):
            lines.append(f"{key} = {_toml_value(v)}")
    for name, tab in tables.items():
        lines += ["", f"[provenance.{name}]"]
        for key, v in tab.items():
            lines.append(f'"{key}" = {_toml_value(v)}')
    lines += [
        "",
        "# Per engine: s per step, per layer, per sequence in a step, and per ring hop of an all-reduce",
        "# (an all-reduce over N GPUs pays 2(N-1) hops, plus its bytes over the link).",
    ]
    for eng in sorted(params.step_overhead_s):
        lines += ["", f'[engine."{eng}"]']
        lines.append(f"step_overhead_s = {_toml_value(params.step_overhead_s[eng])}")
        lines.append(f"layer_overhead_s = {_toml_value(params.layer_overhead_s[eng])}")
        lines.append(f"sequence_overhead_s = {_toml_value(params.sequence_overhead_s[eng])}")
        lines.append(f"allreduce_hop_latency_s = {_toml_value(params.allreduce_hop_latency_s[eng])}")
        lines.append(f"parallel = {_toml_value(ENGINE_PARALLEL[eng])}")
    for (fam, eng), (fb, fc) in sorted(params.fractions.items()):
        lines += ["", f'[fraction.{fam}."{eng}"]']
        lines.append(f"bandwidth = {_toml_value(fb)}")
        lines.append(f"compute = {_toml_value(fc)}")
    for (fam, eng), rng in sorted(params.ranges.items()):
        lines += ["", f'[range.{fam}."{eng}"]']
        for key, v in rng.items():
            lines.append(f"{key} = {_toml_value(v)}")
    lines += ["", "[gpu_family]"]
    for g, fam in sorted(params.gpu_family.items()):
        lines.append(f'"{g}" = {_toml_value(fam)}')
    return "\n".join(lines) + "\n"


def fit_provenance(params: Params, validation: Validation | None, tool: str) -> dict:
    """Provenance of a fit: datasets, rows, date, tool, split, and residual summaries."""
    ms = load_measurements()
    prov = {
        "tool": tool,
        "date": datetime.date.today().isoformat(),
        "numpy": np.__version__,
        "datasets": sorted(set(ms.source.tolist())),
        "rows_used": int(usable_rows().sum()),
        "rows_dropped_faster_than_ideal": int((~usable_rows()).sum()),
        "groups": int(np.unique(ms.group).size),
        "objective": "least squares on log(predicted / measured), Levenberg-Marquardt, weak priors",
        "split": "final fit on all rows; validation: 5-fold by model x GPU x engine group",
        "prior_dominated": params.provenance.get("prior_dominated", []),
        "prior_note": "parameters the data barely constrain: their weak prior outweighs the data there",
        "assumptions": "LLM-Inference-Bench A100 = a100-40gb (SXM4 40 GB), H100 = h100-sxm; "
        "aiconfigurator: TPOT only (TTFT includes queueing), KV fp8 for TensorRT-LLM fp8 else bf16",
    }
    ins = {
        r["name"]: [round(r["median_abs_pct"], 2), round(r["p90_abs_pct"], 2)]
        for r in in_sample_table(params)
    }
    prov["in_sample_median_p90_pct"] = ins
    if validation is not None:
        prov["held_out_median_p90_pct"] = {
            r["name"]: [round(r["median_abs_pct"], 2), round(r["p90_abs_pct"], 2)] for r in validation.table()
        }
        prov["held_out_by_engine_median_p90_pct"] = {
            r["name"]: [round(r["median_abs_pct"], 2), round(r["p90_abs_pct"], 2)]
            for r in validation.table("engine")
        }
    return prov


def closest_engine(name: str) -> list[str]:
    """Known engine ids closest to ``name`` (for messages).

    >>> closest_engine("tensorrt")
    ['tensorrt-llm']
    """
    return difflib.get_close_matches(str(name).lower(), sorted(ENGINE_PARALLEL), n=3, cutoff=0.4)
