"""Chunked prefill: spread a long prompt over many decode steps instead of freezing every stream for it.

Taught in lesson 44 (notebooks/44_chunked_prefill.ipynb).

A step that carries B decoding users plus a chunk of C prompt tokens is one forward pass over B + C tokens,
so its time is the roofline of the combined work:

    bytes = weights (read once) + B × T × KV (decoders' caches) + S × KV (the prompt's earlier chunks, read)
            + C × KV (the chunk's own keys and values, written)
    FLOPs = (B + C) × 2 × N_active + B × attention over T + chunk's attention over S and itself
    step  = max(FLOPs ÷ (G × peak), bytes ÷ (G × bandwidth))

where S is the number of prompt tokens already processed (the prefix). Summed over all chunks, the FLOPs
equal those of the unchunked prefill: chunking moves the work around, it does not remove it.

Without chunking the prompt runs alone in one long step and every decoder waits for it (their worst
inter-token gap is the whole prefill). With chunks of C tokens each decoder waits one mixed step at most,
but the prompt needs ceil(P ÷ C) steps, each re-reading the weights, so its time to first token grows as C
shrinks: the trade-off this module sweeps.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from roofline.checks import checked, out
from roofline.errors import DoesNotFitError, InvalidConfigurationError
from roofline.physics.memory import fits, memory_available_bytes, memory_needed_bytes
from roofline.physics.step import mixed_step
from roofline.results import Number, Result
from roofline.scenario import Scenario
from roofline.sim import LengthSpec, SimConfig, simulate
from roofline.units import GB

# Cells of the padded (chunk index × chunk size) grid a sweep may build before it refuses.
_MAX_GRID_CELLS = 5_000_000


@dataclass(frozen=True)
class Timeline(Result):
    """Decode steps around the arrival of one long prompt (times relative to its arrival, s). Unchunked, the
    prompt's prefill runs alone and the decoders make no token during it."""

    step_start_s: np.ndarray  # start of each step, s (negative: before the prompt arrived)
    step_time_s: np.ndarray  # duration of each step, s
    prompt_tokens_in_step: np.ndarray  # prompt tokens each step carries (0 for pure decode steps)
    decoders_in_step: np.ndarray  # users that get a token at the end of each step
    ttft_s: float  # prompt arrival → its first token, s
    worst_gap_s: float  # longest wait between two tokens of an already-running decoder, s
    normal_gap_s: float  # a decoder's gap with no prompt around: one decode step of B users, s
    stalled_steps: float  # (worst gap − normal gap) ÷ normal gap: decode steps each decoder missed
    prefill_steps: int  # steps the prompt was spread over


def prompt_fits(s: Scenario) -> bool:
    """True if the scenario's B users × T tokens plus the new prompt's P tokens of KV fit beside the
    weights."""
    kv_tokens_per_user = s.context_tokens + s.prompt_tokens / max(s.batch, 1)  # same total KV: B × T + P
    return bool(fits(s.model, s.gpu, s.batch, kv_tokens_per_user, **s.deployment))


def prompt_arrival_timeline(
    s: Scenario, chunk_tokens=None, *, steps_before=4, steps_after=6, include_attention=True
) -> Timeline:
    """Simulate, step by step, the scenario's B ≥ 1 users decoding at T tokens of context each when a
    P-token prompt (its ``prompt_tokens``) arrives at a step boundary, with chunks of ``chunk_tokens`` (C)
    or, for ``None``, no chunking; on the scenario's GPUs, in its precisions.

    ``steps_before`` plain decode steps precede the arrival; after the prompt's first token the new user
    joins the batch for ``steps_after`` more steps. Decoders' contexts are held at T (a few dozen steps
    change them by well under 1%). Raises ``DoesNotFitError`` if B × T + P tokens of KV do not fit.

    >>> t = prompt_arrival_timeline(Scenario(batch=1, context_tokens=0, prompt_tokens=8000))
    >>> round(t.ttft_s * 1e3), round(t.stalled_steps)        # lesson 15's freeze: 130 ms, 29 steps missed
    (130, 29)
    """
    checked(s.batch, "decode_batch", minimum=1, whole=True)
    checked(s.context_tokens, "context_tokens", minimum=0, whole=True)
    checked(s.prompt_tokens, "prompt_tokens", minimum=1, whole=True)
    checked(chunk_tokens, "chunk_tokens", minimum=1, allow_none=True, whole=True)
    checked(steps_before, "steps_before", minimum=0, whole=True)
    checked(steps_after, "steps_after", minimum=0, whole=True)
    if not prompt_fits(s):
        need = memory_needed_bytes(
            s.model, s.batch, s.context_tokens + s.prompt_tokens / s.batch, s.weight_precision, s.kv_precision
        )
        raise DoesNotFitError(
            f"Does not fit: {s.batch} users x {s.context_tokens:,} tokens plus a {s.prompt_tokens:,}-token "
            f"prompt need {need / GB:.1f} GB, {memory_available_bytes(s.gpu, s.num_gpus) / GB:.0f} GB "
            "available."
        )
    b, t, p = int(s.batch), int(s.context_tokens), int(s.prompt_tokens)
    before, after = int(steps_before), int(steps_after)
    if chunk_tokens is None:
        chunks = np.array([p])
        decoders_during = 0  # the prefill step runs alone
    else:
        c = int(chunk_tokens)
        chunks = np.minimum(c, p - c * np.arange(-(-p // c)))
        decoders_during = b
    prefix = np.concatenate([[0], np.cumsum(chunks)[:-1]])
    decoders = np.concatenate(
        [np.full(before, b), np.full(chunks.size, decoders_during), np.full(after, b + 1)]
    )
    prompt = np.concatenate([np.zeros(before), chunks, np.zeros(after)]).astype(int)
    prefixes = np.concatenate([np.zeros(before), prefix, np.zeros(after)])
    opts = dict(include_attention=include_attention, **s.deployment)
    steps = np.asarray(mixed_step(s.model, s.gpu, decoders, t, prompt, prefixes, **opts).step_time_s, float)
    end = np.cumsum(steps)
    arrival = end[before - 1] if before else 0.0
    start = end - steps - arrival
    # Token times of a decoder that was running before the prompt arrived: ends of steps it was part of.
    token_times = np.concatenate([[start[0]], (end - arrival)[decoders > 0]])
    normal = float(mixed_step(s.model, s.gpu, b, t, 0, **opts).step_time_s)
    worst = float(np.max(np.diff(token_times)))
    return Timeline(
        step_start_s=start,
        step_time_s=steps,
        prompt_tokens_in_step=prompt,
        decoders_in_step=decoders,
        ttft_s=float(end[before + chunks.size - 1] - arrival),
        worst_gap_s=worst,
        normal_gap_s=normal,
        stalled_steps=(worst - normal) / normal,
        prefill_steps=int(chunks.size),
    )


@dataclass(frozen=True)
class ChunkTradeoff(Result):
    """Time to first token of the new prompt against the decoders' worst gap, per chunk size."""

    chunk_tokens: Number  # C, tokens
    prefill_steps: Number  # ceil(P ÷ C)
    ttft_s: Number  # s
    worst_gap_s: Number  # s
    normal_gap_s: float  # s, one decode step of B users with no prompt around
    fits: bool  # B × T + P tokens of KV fit beside the weights


def chunk_size_tradeoff(s: Scenario, chunk_tokens) -> ChunkTradeoff:
    """TTFT and worst decoder gap (s) for the scenario's P-token prompt arriving while its B users decode at
    T tokens each, prefilled in chunks of ``chunk_tokens`` (C, tokens; any array).

    TTFT is the sum of the ceil(P ÷ C) mixed steps; the worst gap is the longest of them (decoders get one
    token per mixed step). C ≥ P is one step carrying the whole prompt with the decoders. Where the KV does
    not fit, times are NaN and ``fits`` is False.

    >>> r = chunk_size_tradeoff(Scenario(batch=30, prompt_tokens=8000), [128, 512, 2048, 8000])
    >>> np.round(r.ttft_s * 1e3).tolist()
    [366.0, 137.0, 132.0, 130.0]
    >>> np.round(r.worst_gap_s * 1e3, 1).tolist()
    [6.0, 9.7, 34.9, 130.3]
    """
    b = float(checked(s.batch, "decode_batch", minimum=1))
    t = float(checked(s.context_tokens, "context_tokens", minimum=0))
    p = float(checked(s.prompt_tokens, "prompt_tokens", minimum=1, whole=True))
    c = checked(chunk_tokens, "chunk_tokens", minimum=1, whole=True)
    n = np.ceil(p / c)
    depth = int(n.max())
    if depth * max(c.size, 1) > _MAX_GRID_CELLS:
        raise InvalidConfigurationError(
            f"chunks too small for the prompt: {depth:,} steps x {c.size:,} chunk sizes is too large a grid; "
            "use a larger minimum chunk_tokens"
        )
    j = np.arange(depth).reshape((depth,) + (1,) * c.ndim)
    chunk = np.clip(p - j * c, 0, c)
    opts = s.deployment
    step = np.asarray(mixed_step(s.model, s.gpu, b, t, chunk, np.minimum(j * c, p), **opts).step_time_s)
    normal = float(mixed_step(s.model, s.gpu, b, t, 0, **opts).step_time_s)
    ok = prompt_fits(s)
    real = np.where(chunk > 0, step, 0.0)
    nan = lambda x: x if ok else np.full_like(x, np.nan)  # noqa: E731
    return ChunkTradeoff(
        chunk_tokens=out(c),
        prefill_steps=out(n.astype(int)),
        ttft_s=out(nan(real.sum(axis=0))),
        worst_gap_s=out(nan(np.maximum(real.max(axis=0), normal))),
        normal_gap_s=normal if ok else float("nan"),
        fits=ok,
    )


# The explorer's chunk sizes, and those the trade-off chart sweeps (tokens).
CHUNK_OPTIONS = [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
SWEEP_CHUNKS = np.unique(np.round(np.geomspace(16, 32768, 120)).astype(int))


@dataclass(frozen=True)
class ChunkScenario(Scenario):
    """A ``Scenario`` plus the chunk size C (prompt tokens per step); ``batch`` is the decoding users."""

    chunk_tokens: int = 512


def chunk_scenario(s: Scenario) -> ChunkScenario:
    """``s`` as a ``ChunkScenario`` (the default chunk size where it has none)."""
    return s if isinstance(s, ChunkScenario) else ChunkScenario(**asdict(s))


ARRIVAL_CHUNKS = (64, 128, 256, 512, 1024, 2048, None)


@dataclass(frozen=True)
class ChunkUnderLoad(Result):
    """The chunk-size trade-off under random arrivals (``roofline.sim``), one entry per chunk size."""

    chunk_tokens: Number  # tokens per prompt per step; 0 stands for unchunked (whole prompts)
    rate_per_s: float  # Poisson arrivals, requests/s
    ttft_p50_s: Number
    ttft_p99_s: Number
    tpot_p50_s: Number
    tpot_p99_s: Number


def chunk_tradeoff_under_arrivals(model, gpu, chunks=ARRIVAL_CHUNKS, *, requests=300) -> ChunkUnderLoad:
    """Simulate the same Poisson load (6 requests/s) for each chunk size and collect TTFT and TPOT
    percentiles (s).

    Prompts are lognormal (mean 2,000 tokens, log-spread 1: a few long pastes among many short prompts),
    answers 200 tokens long. Each step carries every decoding sequence plus at most C prompt tokens (token
    budget = C + the batch cap of 256, Sarathi style); ``None`` in ``chunks`` means unchunked (whole prompts,
    budget 8,192). Small chunks keep the decoders' gaps short (low TPOT p99) but re-read the weights for
    every slice (TTFT grows); large chunks bring back the freezes (TPOT p99 grows). The same seed gives the
    same arrivals for every chunk size; ``requests`` per chunk size.

    >>> r = chunk_tradeoff_under_arrivals("llama-3-8b", "h100-sxm", (128, None), requests=150)
    >>> bool(r.tpot_p99_s[1] > r.tpot_p99_s[0])          # unchunked prompts stall the streams
    True
    """
    checked(requests, "requests", minimum=1, whole=True)
    rate_per_s, max_batch = 6.0, 256
    prompts = LengthSpec("lognormal", mean=2000.0, sigma=1.0, minimum=1)
    load = SimConfig(
        model,
        gpu,
        rate_per_s=rate_per_s,
        requests=int(requests),
        input_tokens=prompts,
        output_tokens=200,
        max_batch=max_batch,
        seed=0,
        record_timeline=False,
    )
    runs = []
    for c in chunks:
        c = None if c is None else int(checked(c, "chunk_tokens", minimum=1, whole=True))
        budget = 8192 if c is None else c + max_batch
        runs.append(simulate(load.with_(chunk_tokens=c, token_budget=budget)))
    pct = lambda attr, q: np.array([getattr(r, attr)[q] for r in runs])  # noqa: E731
    return ChunkUnderLoad(
        chunk_tokens=np.array([0 if c is None else int(c) for c in chunks]),
        rate_per_s=rate_per_s,
        ttft_p50_s=pct("ttft_s_percentiles", "p50"),
        ttft_p99_s=pct("ttft_s_percentiles", "p99"),
        tpot_p50_s=pct("tpot_s_percentiles", "p50"),
        tpot_p99_s=pct("tpot_s_percentiles", "p99"),
    )
