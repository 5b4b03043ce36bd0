"""The step engine: one forward pass of the model, whatever it carries. Decode, prefill and a mixed
(chunked-prefill) step are the same roofline with different token counts.

Taught in lesson 02 (the batch-1 floor), 15 (prefill), 16 (the step-time model) and 44 (chunked prefill).

A step carries B sequences that each compute n new tokens after T tokens already in their KV cache
(decode: n = 1; prefill of B prompts: T = 0, n = P; a speculative verify: n = k + 1), plus optionally one
prompt chunk of C tokens that follows S tokens of the same prompt done earlier. With N_mm matmul weights
per token in the blocks (``matmul_parameters_per_token``: the embedding is a lookup, not a matmul), an LM
head of V·d, and K bytes of KV per token:

    tokens      = B·n + C
    bytes       = weight bytes read (once for all tokens; B·n + C embedding rows)
                  + K × (B·T' + S') read + K × new tokens written        (T', S': capped by a sliding window)
    FLOPs       = 2 × N_mm × tokens + 2 × V·d × logit tokens + a × attention pairs
    step        = max(FLOPs ÷ (G·peak), bytes ÷ (G·bandwidth)) [+ all-reduces] [+ launch overhead]

where a = ``attention_flops_per_pair`` is the attention cost of one (token, earlier token) pair and the
pairs are B·(n·T + n(n−1)/2) + C·S + C(C−1)/2 in full layers (``attention_pairs``: a sliding layer sees at
most W). Logit tokens: a prefill computes logits for the last token of each prompt only
(``logits="last"``); decode and a speculative verify for every new token (``logits="new"``).
New tokens write their KV, except in ``decode_step``: there a user's one new token is left out of both
the traffic and the cache size (K bytes against a whole context read, below 0.1 % at T ≥ 1,000), the
convention the study card's "weights ÷ bandwidth" floor uses.

>>> s = decode_step("llama-3-8b", "h100-sxm", batch=32, context_tokens=1000)
>>> round(s.step_time_s * 1e3, 2), round(s.tokens_per_s_per_user), s.binding
(5.73, 174, 'memory')
>>> round(prefill("llama-3-8b", "h100-sxm", 8000).step_time_s * 1e3)
130
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from roofline.checks import checked, one_of, out
from roofline.data import get_gpu, get_model
from roofline.errors import ContextTooLongError
from roofline.physics.architecture import (
    attention_flops_per_pair,
    attention_pairs,
    effective_kv_tokens,
    kv_bytes_per_token,
    lm_head_parameters,
    matmul_parameters_per_token,
    weight_bytes,
    weight_bytes_read,
)
from roofline.physics.memory import check_memory, memory_available_bytes
from roofline.physics.parallel import (
    kv_replicas,
    link_bytes_per_s,
    pipeline_comm_time_s,
    tensor_parallel_comm_time_s,
)
from roofline.physics.precision import get_precision, peak_flops_per_s
from roofline.results import Flag, Label, Number, Result

OnOverflow = Literal["raise", "mask", "ignore"]
ON_OVERFLOW = ("raise", "mask", "ignore")  # what every function that takes on_overflow accepts


@dataclass(frozen=True)
class Step(Result):
    """One forward step. Array fields broadcast over the inputs (batch, context, GPU count, …).

    Where a configuration does not fit in memory (``fits`` False) and the step was asked for with
    ``on_overflow="mask"``, its times and rates are NaN: there is no time for a server that cannot start.
    """

    model_id: str
    gpu_id: str
    weight_precision: str
    kv_precision: str
    num_gpus: Number  # G, GPUs (tensor parallel, or a pipeline split with parallelism="pipeline")
    batch: Number  # B, sequences computing n new tokens each
    new_tokens: Number  # n, new tokens per sequence (1 for decode)
    context_tokens: Number  # T, tokens already in each sequence's KV cache
    chunk_tokens: Number  # C, tokens of a prompt chunk riding along (0 if none)
    prefix_tokens: Number  # S, tokens of that prompt done in earlier steps
    tokens: Number  # B·n + C, tokens computed this step
    weight_bytes_read: Number  # bytes, all GPUs together
    kv_bytes_read: Number  # bytes, all GPUs together (replicated KV counted once per copy)
    kv_bytes_written: Number  # bytes
    bytes_moved: Number  # bytes: weights + KV read + KV written
    flops: Number  # FLOP
    attention_flops: Number  # FLOP, the part of ``flops`` that grows with context
    memory_time_s: Number
    compute_time_s: Number
    communication_time_s: Number
    launch_overhead_s: Number
    step_time_s: Number
    binding: Label  # "memory", "compute", or "does not fit"
    memory_needed_bytes: Number  # weights + the KV cache after this step
    memory_capacity_bytes: Number  # what the GPUs leave for weights + KV (``memory`` model)
    fits: Flag
    tokens_per_s_per_user: Number  # n ÷ step: what each of the B sequences sees
    tokens_per_s_total: Number  # tokens ÷ step: what the GPUs produce

    @property
    def arithmetic_intensity_flop_per_byte(self) -> Number:
        """FLOPs per byte moved in this step (FLOP/byte); about B for BF16 decode at short context."""
        return out(np.asarray(self.flops) / np.asarray(self.bytes_moved))

    @property
    def bytes_read(self) -> Number:
        """Bytes read from memory this step: weights plus the KV the step attends to."""
        return out(np.asarray(self.weight_bytes_read) + np.asarray(self.kv_bytes_read))


@dataclass(frozen=True)
class StepOptions:
    """How a step runs and what it counts: the keyword options of ``forward_step`` and its wrappers.

    num_gpus : G ≥ 1 GPUs, a whole number (may be an array). Memory adds up; in tensor parallel bandwidth and
        FLOP/s too.
    weight_precision, kv_precision : ids from ``roofline.physics.precision.PRECISIONS``.
    parallelism : ``"tensor"`` (every matrix split: bandwidths and FLOP/s add, all-reduces per layer) or
        ``"pipeline"`` (llama.cpp's layer split: each GPU holds L/G layers and they run one after another,
        so memory adds up but the step is the sum of the stages, one GPU's time, plus G − 1 hand-offs).
    memory : ``"engine"`` (what a serving engine leaves for weights and KV) or ``"ideal"`` (all of it);
        see ``roofline.physics.memory``.
    include_attention : False drops attention's context terms (the card's 2N rule).
    include_communication : add the tensor-parallel all-reduces, or a pipeline's hand-offs (lesson 24),
        in decode and prefill alike; off gives the ideal.
    allreduce_latency_s : None uses the per-hop model of ``roofline.physics.parallel`` for the GPU's link
        type; a number is a fixed start-up per all-reduce (s).
    launch_overhead_s : CPU time per step spent launching kernels, added to the step (s); lesson 03.
    on_overflow : ``"raise"`` raises ``DoesNotFitError`` if weights + KV exceed memory and
        ``ContextTooLongError`` beyond the model's context window; ``"mask"`` returns NaN times where it
        does not fit and ``fits`` False (for sweeps and plots); ``"ignore"`` returns the times anyway,
        still with ``fits`` False there (for lessons that check memory themselves).

    >>> StepOptions(num_gpus=2, on_overflow="mask").parallelism
    'tensor'
    >>> StepOptions(num_gpus=1.5)
    Traceback (most recent call last):
    ...
    roofline.errors.InvalidConfigurationError: num_gpus must be a whole number >= 1, got 1.5
    """

    num_gpus: Number = 1
    weight_precision: str = "bf16"
    kv_precision: str = "bf16"
    parallelism: Literal["tensor", "pipeline"] = "tensor"
    memory: str = "engine"
    include_attention: bool = True
    include_communication: bool = False
    allreduce_latency_s: float | None = None
    launch_overhead_s: Number = 0.0
    on_overflow: OnOverflow = "raise"

    def __post_init__(self) -> None:
        checked(self.num_gpus, "num_gpus", minimum=1, whole=True)
        checked(self.allreduce_latency_s, "allreduce_latency_s", minimum=0, allow_none=True)
        checked(self.launch_overhead_s, "launch_overhead_s", minimum=0)
        one_of(self.on_overflow, "on_overflow", ON_OVERFLOW)
        one_of(self.parallelism, "parallelism", ("tensor", "pipeline"))
        get_precision(self.kv_precision)


def forward_step(
    model, gpu, batch=1, context_tokens=0, *, new_tokens=1, chunk_tokens=0, prefix_tokens=0,
    count_new_kv: bool = True, logits: Literal["new", "last", "none"] = "new", **options,
) -> Step:  # fmt: skip
    """Model one forward step: ``batch`` sequences × ``new_tokens`` each after ``context_tokens`` cached,
    plus an optional prompt chunk of ``chunk_tokens`` after ``prefix_tokens``; ``options`` are the fields of
    ``StepOptions`` (GPU count, precisions, parallelism, memory model, what to count, ``on_overflow``).

    Parameters
    ----------
    model, gpu : id (``"llama-3-8b"``, ``"h100-sxm"``) or the dataclass from ``roofline.data``.
    batch : sequences B ≥ 0 (sequences; a mean may be fractional here, not in ``decode_step``). Broadcasts.
    context_tokens : T ≥ 0, tokens already in each sequence's KV cache (tokens).
    new_tokens : n ≥ 1, tokens each sequence computes this step (tokens).
    chunk_tokens, prefix_tokens : C, S ≥ 0, a prompt chunk riding along and what came before it (tokens).
    count_new_kv : whether the B sequences' new tokens write KV (False: ``decode_step``'s convention).
    logits : ``"new"``: every new token of the B sequences gets logits (decode, a speculative verify);
        ``"last"``: only each sequence's last (a prefill). A prompt chunk adds one logit token.
        ``"none"``: no token does (a pass in the middle of a prompt), and the LM head is not read.

    >>> s = forward_step("llama-3-8b", "h100-sxm", batch=4, context_tokens=1000, new_tokens=5)
    >>> s.tokens, s.binding                               # a speculative verify of 4 drafts per user
    (20.0, 'memory')
    """
    b = checked(batch, "batch", minimum=0)
    t = checked(context_tokens, "context_tokens", minimum=0)
    n_new = checked(new_tokens, "new_tokens", minimum=1)
    c = checked(chunk_tokens, "chunk_tokens", minimum=0)
    s = checked(prefix_tokens, "prefix_tokens", minimum=0)
    one_of(logits, "logits", ("new", "last", "none"))
    o = StepOptions(**options)
    m, g = get_model(model), get_gpu(gpu)
    g_count, overhead = np.asarray(o.num_gpus, dtype=float), np.asarray(o.launch_overhead_s, dtype=float)
    peak = peak_flops_per_s(g, o.weight_precision)
    held = t + (n_new if count_new_kv else 0)  # tokens each sequence holds once the step is done
    _check_window(m, held, c, s, o.on_overflow)
    kv = kv_bytes_per_token(m, o.kv_precision) * (
        np.asarray(kv_replicas(m, g_count)) if o.parallelism == "tensor" else 1.0
    )
    w_stored = weight_bytes(m, o.weight_precision)
    need = w_stored + _kv_held_after(m, kv, b, held, c, s)
    have = np.asarray(memory_available_bytes(g, g_count, o.memory))
    if o.on_overflow == "raise":
        check_memory(need, have, w_stored)
    tokens = b * n_new + c
    # An empty step (no sequence, no chunk) reads nothing and takes no time.
    read = weight_bytes_read(m, o.weight_precision, np.maximum(tokens, 1), lm_head=logits != "none")
    w_bytes = np.where(tokens > 0, read, 0.0)
    kv_read = kv * (b * effective_kv_tokens(m, t) + np.where(c > 0, effective_kv_tokens(m, s), 0.0))
    kv_written = ((b * n_new if count_new_kv else 0.0) + c) * kv
    attn = _attention_flops(m, b, t, n_new, c, s) if o.include_attention else np.zeros_like(b * t * n_new)
    logit_tokens = (b * n_new if logits == "new" else b) + np.where(c > 0, 1.0, 0.0)
    if logits == "none":
        logit_tokens = 0.0 * logit_tokens
    flops = 2.0 * matmul_parameters_per_token(m) * tokens + 2.0 * lm_head_parameters(m) * logit_tokens + attn
    lanes = g_count if o.parallelism == "tensor" else 1.0  # GPUs working on the same layer at once
    times = (
        (w_bytes + kv_read + kv_written) / (lanes * g.memory_bandwidth_bytes_per_s),
        flops / (lanes * peak),
        _communication_s(m, g, tokens, g_count, o) if o.include_communication else np.zeros(()),
        overhead,
    )
    load = (b, n_new, t, c, s, g_count, tokens, w_bytes, kv_read, kv_written, flops, attn)
    return _step(m, g, o, load, times, need, have)


def _check_window(m, held, c, s, on_overflow) -> None:
    """Refuse (``on_overflow="raise"``) a step whose longest sequence passes the model's context window."""
    longest = np.maximum(held, np.where(c > 0, s + c, 0))
    if on_overflow == "raise" and not np.all(longest <= m.max_context_tokens):
        raise ContextTooLongError(
            f"{m.id} reads at most {m.max_context_tokens:,} tokens of context; this step needs "
            f"{np.max(longest):,.0f}. Use a shorter context or a long-context model."
        )


_LOAD_FIELDS = (
    "batch",
    "new_tokens",
    "context_tokens",
    "chunk_tokens",
    "prefix_tokens",
    "num_gpus",
    "tokens",
)


def _step(m, g, o: StepOptions, load, times, need, have) -> Step:
    """The ``Step`` of a step's load (counts, bytes, FLOPs) and its times (s), NaN where it cannot run."""
    b, n_new, t, c, s, g_count, tokens, w_bytes, kv_read, kv_written, flops, attn = load
    moved = w_bytes + kv_read + kv_written
    ok = need <= have
    shown = ok | (o.on_overflow == "ignore")  # where times are reported
    arrays = np.broadcast_arrays(
        b, n_new, t, c, s, g_count, tokens, w_bytes, kv_read, kv_written, moved, flops, attn
    )
    b, n_new, t, c, s, g_count, tokens, w_bytes, kv_read, kv_written, moved, flops, attn = arrays
    mem_t, comp_t, comm_t, overhead, need, have, ok, shown = np.broadcast_arrays(
        *times, need, have, ok, shown
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        step = np.where(shown, np.maximum(mem_t, comp_t) + comm_t + overhead, np.nan)
        per_user, total = n_new / step, tokens / step
    binding = np.array(["memory", "compute", "does not fit"]).take(
        np.where(shown, (comp_t > mem_t).view(np.int8), 2)
    )
    masked = lambda x: out(np.where(shown, x, np.nan))  # noqa: E731
    return Step(
        model_id=m.id,
        gpu_id=g.id,
        weight_precision=o.weight_precision,
        kv_precision=o.kv_precision,
        num_gpus=out(g_count),
        batch=out(b),
        new_tokens=out(n_new),
        context_tokens=out(t),
        chunk_tokens=out(c),
        prefix_tokens=out(s),
        tokens=out(tokens),
        weight_bytes_read=out(w_bytes),
        kv_bytes_read=out(kv_read),
        kv_bytes_written=out(kv_written),
        bytes_moved=out(moved),
        flops=out(flops),
        attention_flops=out(attn),
        memory_time_s=masked(mem_t),
        compute_time_s=masked(comp_t),
        communication_time_s=masked(comm_t),
        launch_overhead_s=out(overhead),
        step_time_s=out(step),
        binding=str(binding) if binding.ndim == 0 else binding,
        memory_needed_bytes=out(need),
        memory_capacity_bytes=out(have),
        fits=out(ok),
        tokens_per_s_per_user=out(per_user),
        tokens_per_s_total=out(total),
    )


def _kv_held_after(m, kv, b, held_tokens, c, s):
    """KV bytes held once the step is done: each of ``b`` sequences' (window-capped) ``held_tokens``, plus
    the chunk's prompt (``s`` cached + ``c`` new tokens) where a chunk rides along."""
    return kv * (
        b * effective_kv_tokens(m, held_tokens) + np.where(c > 0, effective_kv_tokens(m, s + c), 0.0)
    )


def _attention_flops(m, b, t, n_new, c, s):
    """Attention's FLOPs: ``b`` sequences' ``n_new`` tokens over ``t`` cached ones, and a chunk of ``c``
    prompt tokens over ``s`` cached ones. MLA: decode tokens use the absorbed form, prompt tokens (n > 1,
    chunks) the up-projected one."""
    absorbed, expanded = (
        attention_flops_per_pair(m, absorbed=True),
        attention_flops_per_pair(m, absorbed=False),
    )
    a_seq = np.where(n_new > 1, expanded, absorbed)
    return (
        b * attention_pairs(m, t, n_new) * a_seq + np.where(c > 0, attention_pairs(m, s, c), 0.0) * expanded
    )


def _communication_s(m, g, tokens, g_count, o: StepOptions):
    """The step's collectives (s): all-reduces under tensor parallel, activations passed on under a layer
    split."""
    link_bw = link_bytes_per_s(g, g_count)
    if o.parallelism == "tensor":
        return np.asarray(
            tensor_parallel_comm_time_s(
                m, np.maximum(tokens, 1), g_count, link_bw, o.allreduce_latency_s, link=g.interconnect
            )
        )
    return np.asarray(pipeline_comm_time_s(m, tokens, g_count, link_bw, link=g.interconnect))


def decode_step(model, gpu, batch=1, context_tokens=0, **options) -> Step:
    """One decode step: each of ``batch`` users (B ≥ 1) holding ``context_tokens`` (T) gets one token.

    Keyword options are those of ``forward_step`` (``num_gpus``, precisions, ``include_communication``,
    ``launch_overhead_s``, ``on_overflow`` …). Each user gets 1 ÷ step tokens/s; the GPUs make B ÷ step.

    >>> s = decode_step("llama-3-8b", "h100-sxm")          # batch 1: the decode floor, 15.01 GB / 3.35 TB/s
    >>> round(s.step_time_s * 1e3, 2), round(s.tokens_per_s_per_user)   # the card: 16 GB, 4.8 ms, 209
    (4.48, 223)
    >>> s = decode_step("llama-3-8b", "h100-sxm", batch=[1, 1024], context_tokens=4096, on_overflow="mask")
    >>> s.fits.tolist(), np.isnan(s.step_time_s).tolist()
    ([True, False], [False, True])
    """
    checked(batch, "batch", minimum=1, whole=True)
    return forward_step(model, gpu, batch, context_tokens, new_tokens=1, count_new_kv=False, **options)


def prefill(model, gpu, prompt_tokens, *, batch=1, **options) -> Step:
    """The prefill of ``batch`` prompts of ``prompt_tokens`` (P ≥ 1) each, in one pass (its ``step_time_s``
    is the time to first token of a lone request). ``include_attention=False`` gives the textbook 2·N·P.

    Logits are computed for each prompt's last token only, and the embedding is a lookup: 2 × 6.98e9
    matmul weights × 8,000 tokens + 2 × 0.53e9 for the one logit = 1.117e14 FLOP, 113 ms at 989 TFLOP/s
    (the card's 2·N·P = 1.28e14 FLOP gives 130 ms). Causal attention adds 16.8e12 FLOP: 130 ms in all.

    >>> p = prefill("llama-3-8b", "h100-sxm", 8000, include_attention=False)
    >>> round(p.step_time_s * 1e3), p.binding
    (113, 'compute')
    """
    checked(prompt_tokens, "prompt_tokens", minimum=1)
    checked(batch, "batch", minimum=1, whole=True)
    options.setdefault("logits", "last")
    return forward_step(model, gpu, batch, 0, new_tokens=prompt_tokens, **options)


def mixed_step(
    model,
    gpu,
    decode_batch,
    context_tokens,
    chunk_tokens,
    prefix_tokens=0,
    *,
    on_overflow="ignore",
    **options,
) -> Step:
    """A chunked-prefill step: ``decode_batch`` users (B ≥ 0) at ``context_tokens`` (T) get a token each
    while a chunk of ``chunk_tokens`` (C) prompt tokens after ``prefix_tokens`` (S) rides along.

    The weights are read once for all B + C tokens; the chunks of a prompt add up to its whole prefill.
    A step with no tokens takes 0 s. Memory is only flagged by default (``fits``; lesson 44 checks it).

    >>> s = mixed_step("llama-3-8b", "h100-sxm", 30, 1000, chunk_tokens=[256, 2048])
    >>> np.round(s.step_time_s * 1e3, 2).tolist(), s.binding.tolist()
    ([5.67, 30.49], ['memory', 'compute'])

    Taught in lesson 44.
    """
    return forward_step(
        model, gpu, decode_batch, context_tokens, new_tokens=1, chunk_tokens=chunk_tokens,
        prefix_tokens=prefix_tokens, on_overflow=on_overflow, count_new_kv=False, **options,
    )  # fmt: skip


def causal_attention_flops(model, prompt_tokens):
    """Attention FLOPs of a causal prefill of P tokens: token i attends to the i tokens before it (at most
    W in a sliding layer), a × P(P−1)/2 with a = ``attention_flops_per_pair(model, absorbed=False)`` (FLOP).

    >>> causal_attention_flops("llama-3-8b", 8000) / 1e12
    16.77...
    """
    p = checked(prompt_tokens, "prompt_tokens", minimum=1)
    return out(attention_flops_per_pair(model, absorbed=False) * np.asarray(attention_pairs(model, 0, p)))


def decode_floor_s(weight_bytes_, bandwidth_bytes_per_s):
    """Fastest possible batch-1 decode step: every weight byte read once (s). Ceiling = 1 ÷ floor.

    >>> round(decode_floor_s(16e9, 3.35e12) * 1e3, 1)    # 8B model, BF16, one H100
    4.8
    >>> round(decode_floor_s(70e9, 2 * 3.35e12) * 1e3, 1) # 70B model, FP8, two H100s in tensor parallel
    10.4
    """
    w = checked(weight_bytes_, "weight_bytes", minimum=0)
    bw = checked(bandwidth_bytes_per_s, "bandwidth_bytes_per_s", above=0)
    return out(w / bw)


def batched_step_time_s(weight_bytes_, batch, context_tokens, kv_bytes_per_token_, bandwidth_bytes_per_s):
    """The memory-bound step-time formula in plain numbers (s): (weights + B × T × KV) ÷ bandwidth.

    >>> round(batched_step_time_s(16e9, 32, 1000, 128e3, 3.35e12) * 1e3, 1)   # the card's Q3
    6.0
    """
    w = checked(weight_bytes_, "weight_bytes", minimum=0)
    b = checked(batch, "batch", minimum=1)
    t = checked(context_tokens, "context_tokens", minimum=0)
    k = checked(kv_bytes_per_token_, "kv_bytes_per_token", minimum=0)
    bw = checked(bandwidth_bytes_per_s, "bandwidth_bytes_per_s", above=0)
    return out((w + b * t * k) / bw)


def prefill_flops(parameters, prompt_tokens):
    """The 2 × N × P rule in plain numbers (FLOP).

    >>> prefill_flops(8e9, 500) / 1e12
    8.0
    """
    n = checked(parameters, "parameters", minimum=0)
    p = checked(prompt_tokens, "prompt_tokens", minimum=0)
    return out(2.0 * n * p)


def stalled_decode_steps(prefill_time_s, decode_step_time_s):
    """How many decode steps every other user misses while an unchunked prefill runs (steps).

    >>> round(stalled_decode_steps(0.130, 0.0048))
    27
    """
    p = checked(prefill_time_s, "prefill_time_s", minimum=0)
    d = checked(decode_step_time_s, "decode_step_time_s", above=0)
    return out(p / d)
