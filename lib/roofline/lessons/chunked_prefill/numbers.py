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

>>> paste = Scenario(batch=30, context_tokens=1000, prompt_tokens=8000)
>>> t = prompt_arrival_timeline(paste)                                   # no chunking
>>> round(t.ttft_s * 1e3), round(t.worst_gap_s * 1e3)
(130, 136)
>>> c = prompt_arrival_timeline(paste, chunk_tokens=512)
>>> round(c.ttft_s * 1e3), round(c.worst_gap_s * 1e3, 1)
(137, 9.7)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from roofline.checks import checked, out
from roofline.data import get_gpu, get_model
from roofline.errors import DoesNotFitError, InvalidConfigurationError
from roofline.physics.architecture import (
    attention_flops_per_token,
)
from roofline.physics.memory import fits, memory_available_bytes, memory_needed_bytes
from roofline.physics.step import mixed_step
from roofline.results import Flag, Number, Result
from roofline.scenario import Scenario
from roofline.sim import SimConfig, simulate
from roofline.units import GB

# Cells of the padded (chunk index × configuration) grid a sweep may build before it refuses.
_MAX_GRID_CELLS = 5_000_000


def chunk_attention_flops(model, chunk_tokens, prefix_tokens=0):
    """Attention FLOPs of a chunk of C prompt tokens that follows S already-processed ones (FLOP).

    Token i of the chunk (i = 0 … C−1) attends to the S + i tokens before it: C × S + C(C−1)/2 pairs,
    each costing ``attention_flops_per_token(model, 1)``. With S = 0 and C = P this is the causal
    attention of a whole prefill, so the chunks of a prompt add up to exactly the unchunked figure.

    >>> import roofline as rl
    >>> whole = rl.causal_attention_flops("llama-3-8b", 8000)
    >>> parts = sum(chunk_attention_flops("llama-3-8b", 2000, s) for s in (0, 2000, 4000, 6000))
    >>> round(parts / whole, 12)
    1.0
    """
    c = checked(chunk_tokens, "chunk_tokens", minimum=0)
    s = checked(prefix_tokens, "prefix_tokens", minimum=0)
    return out(attention_flops_per_token(model, 1) * (c * s + c * np.maximum(c - 1, 0) / 2))


@dataclass(frozen=True)
class Timeline(Result):
    """Decode steps around the arrival of one long prompt (times relative to its arrival, s).

    ``chunk_tokens`` is None for the unchunked server, where the prompt's prefill runs alone and the
    decoders make no token during it.
    """

    decode_batch: int
    context_tokens: int
    prompt_tokens: int
    chunk_tokens: int | None
    step_start_s: np.ndarray  # start of each step, s (negative: before the prompt arrived)
    step_time_s: np.ndarray  # duration of each step, s
    prompt_tokens_in_step: np.ndarray  # prompt tokens each step carries (0 for pure decode steps)
    decoders_in_step: np.ndarray  # users that get a token at the end of each step
    ttft_s: float  # prompt arrival → its first token, s
    worst_gap_s: float  # longest wait between two tokens of an already-running decoder, s
    normal_gap_s: float  # a decoder's gap with no prompt around: one decode step of B users, s
    stalled_steps: float  # (worst gap − normal gap) ÷ normal gap: decode steps each decoder missed
    prefill_steps: int  # steps the prompt was spread over


def prompt_fits(m, g, b, t, p, num_gpus, weight_precision, kv_precision):
    """True (bool or array) where B users × T tokens plus the new prompt's P tokens of KV fit beside the
    weights."""
    kv_tokens_per_user = t + p / np.maximum(b, 1)  # same total KV: B × T + P
    return fits(
        m,
        g,
        b,
        kv_tokens_per_user,
        num_gpus=num_gpus,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
    )


def prompt_arrival_timeline(
    s: Scenario, chunk_tokens=None, *, steps_before=4, steps_after=6, include_attention=True
) -> Timeline:
    """Simulate, step by step, the scenario's B ≥ 1 users decoding at T tokens of context each when a
    P-token prompt (its ``prompt_tokens``) arrives at a step boundary, with chunks of ``chunk_tokens`` (C)
    or, for ``None``, no chunking; on the scenario's GPUs, in its precisions.

    ``steps_before`` plain decode steps precede the arrival; after the prompt's first token the new user
    joins the batch for ``steps_after`` more steps. Decoders' contexts are held at T (a few dozen steps
    change them by well under 1%). All step times come from one vectorized ``mixed_step`` call.
    Raises ``DoesNotFitError`` if B × T + P tokens of KV do not fit beside the weights.

    >>> t = prompt_arrival_timeline(Scenario(batch=1, context_tokens=0, prompt_tokens=8000))
    >>> round(t.ttft_s * 1e3), round(t.stalled_steps)        # lesson 15's freeze: 130 ms, 29 steps missed
    (130, 29)
    >>> paste = Scenario(context_tokens=0, prompt_tokens=8000)
    >>> c = prompt_arrival_timeline(paste, 1000, include_attention=False)
    >>> c.prefill_steps, round(c.worst_gap_s * 1e3, 1)
    (8, 14.1)

    Taught in lesson 44.
    """
    checked(s.batch, "decode_batch", minimum=1, whole=True)
    checked(s.context_tokens, "context_tokens", minimum=0, whole=True)
    checked(s.prompt_tokens, "prompt_tokens", minimum=1, whole=True)
    checked(chunk_tokens, "chunk_tokens", minimum=1, allow_none=True, whole=True)
    checked(steps_before, "steps_before", minimum=0, whole=True)
    checked(steps_after, "steps_after", minimum=0, whole=True)
    m, g = get_model(s.model), get_gpu(s.gpu)
    b, t, p = int(s.batch), int(s.context_tokens), int(s.prompt_tokens)
    num_gpus, weight_precision, kv_precision = s.num_gpus, s.weight_precision, s.kv_precision
    before, after = int(steps_before), int(steps_after)
    if not prompt_fits(m, g, b, t, p, num_gpus, weight_precision, kv_precision):
        need = memory_needed_bytes(m, b, t + p / b, weight_precision, kv_precision)
        raise DoesNotFitError(
            f"Does not fit: {b} users x {t:,} tokens plus a {p:,}-token prompt need {need / GB:.1f} GB, "
            f"{memory_available_bytes(g, num_gpus) / GB:.0f} GB available."
        )
    if chunk_tokens is None:
        chunks = np.array([p])
        decoders_during = 0  # the prefill step runs alone
    else:
        c = int(chunk_tokens)
        n_chunks = -(-p // c)
        chunks = np.minimum(c, p - c * np.arange(n_chunks))
        decoders_during = b
    prefix = np.concatenate([[0], np.cumsum(chunks)[:-1]])
    decoders = np.concatenate(
        [np.full(before, b), np.full(chunks.size, decoders_during), np.full(after, b + 1)]
    )
    prompt = np.concatenate([np.zeros(before), chunks, np.zeros(after)]).astype(int)
    prefixes = np.concatenate([np.zeros(before), prefix, np.zeros(after)])
    steps = np.asarray(
        mixed_step(
            m,
            g,
            decoders,
            t,
            prompt,
            prefixes,
            num_gpus=num_gpus,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            include_attention=include_attention,
        ).step_time_s,
        dtype=float,
    )
    end = np.cumsum(steps)
    arrival = end[before - 1] if before else 0.0
    start = end - steps - arrival
    ttft = end[before + chunks.size - 1] - arrival
    # Token times of a decoder that was running before the prompt arrived: ends of steps it was part of.
    token_times = np.concatenate([[start[0]], (end - arrival)[decoders > 0]])
    normal = float(
        mixed_step(
            m,
            g,
            b,
            t,
            0,
            num_gpus=num_gpus,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            include_attention=include_attention,
        ).step_time_s
    )
    worst = float(np.max(np.diff(token_times)))
    return Timeline(
        decode_batch=b,
        context_tokens=t,
        prompt_tokens=p,
        chunk_tokens=None if chunk_tokens is None else int(chunk_tokens),
        step_start_s=start,
        step_time_s=steps,
        prompt_tokens_in_step=prompt,
        decoders_in_step=decoders,
        ttft_s=float(ttft),
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
    normal_gap_s: Number  # s, one decode step of B users with no prompt around
    fits: Flag  # bool: B × T + P tokens of KV fit beside the weights


def chunk_size_tradeoff(
    model,
    gpu,
    decode_batch,
    context_tokens,
    prompt_tokens,
    chunk_tokens,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
    include_attention=True,
) -> ChunkTradeoff:
    """TTFT and worst decoder gap for chunked prefill, in one call over any broadcast of B, T, P and C.

    TTFT is the sum of the ceil(P ÷ C) mixed steps; the worst gap is the longest of them (decoders get one
    token per mixed step). C ≥ P is one step carrying the whole prompt with the decoders. Where the KV does
    not fit, times are NaN and ``fits`` is False.

    >>> r = chunk_size_tradeoff("llama-3-8b", "h100-sxm", 30, 1000, 8000, [128, 512, 2048, 8000])
    >>> np.round(r.ttft_s * 1e3).tolist()
    [366.0, 137.0, 132.0, 130.0]
    >>> np.round(r.worst_gap_s * 1e3, 1).tolist()
    [6.0, 9.7, 34.9, 130.3]

    Taught in lesson 44.
    """
    checked(decode_batch, "decode_batch", minimum=1)
    checked(context_tokens, "context_tokens", minimum=0)
    checked(prompt_tokens, "prompt_tokens", minimum=1, whole=True)
    checked(chunk_tokens, "chunk_tokens", minimum=1, whole=True)
    m, g = get_model(model), get_gpu(gpu)
    b, t, p, c = np.broadcast_arrays(
        *(np.asarray(x, dtype=float) for x in (decode_batch, context_tokens, prompt_tokens, chunk_tokens))
    )
    n = np.ceil(p / c)
    depth = int(n.max())
    if depth * max(p.size, 1) > _MAX_GRID_CELLS:
        raise InvalidConfigurationError(
            f"chunks too small for the prompt: {depth:,} steps x {p.size:,} configurations is too large a "
            "grid; use a larger minimum chunk_tokens"
        )
    j = np.arange(depth).reshape((depth,) + (1,) * p.ndim)
    chunk = np.clip(p - j * c, 0, c)
    step = np.asarray(
        mixed_step(
            m,
            g,
            b,
            t,
            chunk,
            np.minimum(j * c, p),
            num_gpus=num_gpus,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            include_attention=include_attention,
        ).step_time_s
    )
    real = chunk > 0
    normal = np.asarray(
        mixed_step(
            m,
            g,
            b,
            t,
            0,
            num_gpus=num_gpus,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            include_attention=include_attention,
        ).step_time_s
    )
    ok = np.asarray(prompt_fits(m, g, b, t, p, num_gpus, weight_precision, kv_precision))
    ttft = np.where(real, step, 0.0).sum(axis=0)
    worst = np.maximum(np.where(real, step, 0.0).max(axis=0), normal)
    nan = lambda x: np.where(ok, x, np.nan)  # noqa: E731
    return ChunkTradeoff(
        chunk_tokens=out(c),
        prefill_steps=out(n.astype(int)),
        ttft_s=out(nan(ttft)),
        worst_gap_s=out(nan(worst)),
        normal_gap_s=out(nan(normal)),
        fits=out(ok),
    )


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
    throughput_output_tokens_per_s: Number


def chunk_tradeoff_under_arrivals(
    model,
    gpu,
    chunks=ARRIVAL_CHUNKS,
    *,
    rate_per_s=6.0,
    mean_prompt_tokens=2000,
    prompt_sigma=1.0,
    output_tokens=200,
    requests=300,
    seed=0,
    max_batch=256,
    **simulate_kwargs,
) -> ChunkUnderLoad:
    """Simulate the same Poisson load for each chunk size and collect TTFT and TPOT percentiles (s).

    Prompts are lognormal (mean ``mean_prompt_tokens``, log-spread ``prompt_sigma``: a few long pastes among
    many short prompts), answers ``output_tokens`` long. Each step carries every decoding sequence plus at
    most C prompt tokens (token budget = C + ``max_batch``, Sarathi style); ``None`` in ``chunks`` means
    unchunked (whole prompts, budget 8,192). Small chunks keep the decoders' gaps short (low TPOT p99) but
    re-read the weights for every slice (prompts wait longer: TTFT grows); large chunks bring back the
    freezes (TPOT p99 grows). The same seed gives the same arrivals for every chunk size. ``requests`` per
    chunk size (300: about 0.2 s each on this machine).

    Taught in lesson 44.

    >>> r = chunk_tradeoff_under_arrivals("llama-3-8b", "h100-sxm", (128, None), requests=150)
    >>> bool(r.tpot_p99_s[1] > r.tpot_p99_s[0])          # unchunked prompts stall the streams
    True
    """
    checked(rate_per_s, "rate_per_s", above=0)
    checked(output_tokens, "output_tokens", minimum=1, whole=True)
    checked(requests, "requests", minimum=1, whole=True)
    checked(max_batch, "max_batch", minimum=1, whole=True)
    from roofline import sim  # the simulator imports the lessons' public API; keep the import local

    lengths = sim.LengthSpec(
        "lognormal", mean=float(mean_prompt_tokens), sigma=float(prompt_sigma), minimum=1
    )
    runs = []
    load = sim.SimConfig(model, gpu, rate_per_s=float(rate_per_s), requests=int(requests),
                         input_tokens=lengths, output_tokens=int(output_tokens), max_batch=int(max_batch),
                         seed=seed, record_timeline=False, **simulate_kwargs)  # fmt: skip
    for c in chunks:
        budget = (
            8192 if c is None else int(checked(c, "chunk_tokens", minimum=1, whole=True)) + int(max_batch)
        )
        runs.append(sim.simulate(load.with_(chunk_tokens=None if c is None else int(c), token_budget=budget)))
    pct = lambda attr, q: np.array([getattr(r, attr)[q] for r in runs])  # noqa: E731
    return ChunkUnderLoad(
        chunk_tokens=np.array([0 if c is None else int(c) for c in chunks]),
        rate_per_s=float(rate_per_s),
        ttft_p50_s=pct("ttft_s_percentiles", "p50"),
        ttft_p99_s=pct("ttft_s_percentiles", "p99"),
        tpot_p50_s=pct("tpot_s_percentiles", "p50"),
        tpot_p99_s=pct("tpot_s_percentiles", "p99"),
        throughput_output_tokens_per_s=np.array([r.throughput_output_tokens_per_s for r in runs]),
    )


@dataclass(frozen=True)
class ChunkSweep(Result):
    """Percentiles against chunk size under Poisson arrivals. Arrays over ``chunk_tokens`` (0: unchunked)."""

    chunk_tokens: Number
    ttft_p50_s: Number
    ttft_p99_s: Number
    tpot_p50_s: Number
    tpot_p99_s: Number


def chunk_size_sweep(
    model,
    gpu,
    chunk_tokens=(0, 128, 256, 512, 1024, 2048),
    *,
    rate_per_s: float = 2.0,
    input_tokens: int = 8000,
    output_tokens: int = 200,
    requests: int = 300,
    seed: int = 0,
    **simulate_kwargs,
) -> ChunkSweep:
    """Lesson 44's trade-off under real arrivals: for each chunk size (0: whole prompts), the p50/p99 TTFT
    (small chunks re-read the weights more often: prompts take longer) and the p99 TPOT (big chunks stall the
    decoders) of the same seeded Poisson load (s).

    >>> s = chunk_size_sweep("llama-3-8b", "h100-sxm", (0, 512), requests=100)
    >>> bool(s.tpot_p99_s[1] < s.tpot_p99_s[0])      # chunking shortens the worst inter-token gaps
    True
    """
    rows = []
    for c in chunk_tokens:
        if int(c) != c or c < 0:
            raise InvalidConfigurationError(f"chunk sizes must be whole numbers >= 0, got {c!r}")
        r = simulate(
            SimConfig(
                model,
                gpu,
                rate_per_s=rate_per_s,
                requests=requests,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                chunk_tokens=int(c) or None,
                seed=seed,
                record_timeline=False,
                **simulate_kwargs,
            )
        )
        rows.append(r.summary())
    return ChunkSweep(
        chunk_tokens=np.asarray(chunk_tokens),
        **{
            k: np.array([row[k] for row in rows])
            for k in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s")
        },
    )
