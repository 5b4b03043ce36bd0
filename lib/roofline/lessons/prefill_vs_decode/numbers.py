"""Lesson 15's numbers: prefill against decode, and what one long prompt does to everyone else.

Prefill pushes all P prompt tokens through the model in one pass, so the weights are read once for P
tokens: it turns compute-bound once P passes roughly the ridge point. A decode step at batch 1 reads the
same weights for a single token and stays memory-bound. While an unchunked prefill runs, every streaming
user waits: they miss prefill time ÷ decode step time steps.

>>> import roofline as rl
>>> s = prefill_stall("llama-3-8b", "h100-sxm", 8000)
>>> round(s.prefill_time_s * 1e3), round(s.stalled_steps)
(130, 29)
>>> rl.prefill_crossover_prompt_tokens("llama-3-8b", "h100-sxm")
317
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.checks import checked, out
from roofline.data import get_gpu
from roofline.physics.architecture import kv_bytes_per_token, parameter_count
from roofline.physics.memory import kv_cache_bytes, memory_available_bytes, memory_needed_bytes
from roofline.physics.precision import peak_flops_per_s
from roofline.physics.step import decode_step, prefill, stalled_decode_steps
from roofline.results import Number, Result
from roofline.scenario import Scenario

# Prompt lengths every prefill sweep evaluates (1 … 65,536 tokens, log-spaced integers).
PROMPT_SWEEP = np.unique(np.round(np.geomspace(1, 65536, 200)).astype(int))


@dataclass(frozen=True)
class PrefillStall(Result):
    """An unchunked prefill and the streaming users it holds up. Arrays broadcast over P, B and T."""

    prompt_tokens: Number  # P, tokens of the pasted prompt
    batch: Number  # B, users streaming meanwhile
    context_tokens: Number  # T, KV tokens each streaming user holds
    prefill_time_s: Number  # how long every stream is frozen
    decode_step_time_s: Number  # one decode step of the B streaming users (NaN if they do not fit)
    stalled_steps: Number  # decode steps each user misses: prefill ÷ step


def prefill_stall(
    model,
    gpu,
    prompt_tokens,
    batch=1,
    context_tokens=0,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
    include_attention: bool = True,
) -> PrefillStall:
    """How long B streaming users freeze while one unchunked prefill of P tokens runs.

    Parameters
    ----------
    prompt_tokens : P, the pasted prompt, ≥ 1 (tokens). Array-like broadcasts.
    batch : B, users decoding when the paste arrives, ≥ 1 (users). Array-like broadcasts.
    context_tokens : T, KV tokens each of them holds, ≥ 0 (tokens).
    include_attention : False leaves out attention's P² term (the card's 2·N·P rule also leaves it out, but
        multiplies the embedding table and the LM head by every prompt token; see ``paste_freeze``).

    The missed steps are counted against the step time of the B users decoding together (where they do not
    fit in memory the step and the count are NaN). A larger B makes each step longer, so the same freeze
    costs fewer, longer steps.

    >>> s = prefill_stall("llama-3-8b", "h100-sxm", 8000, batch=[1, 30], context_tokens=1000)
    >>> np.round(s.prefill_time_s * 1e3).tolist(), np.round(s.stalled_steps, 1).tolist()
    ([130.0, 130.0], [28.7, 23.0])
    """
    p = prefill(
        model,
        gpu,
        prompt_tokens,
        num_gpus=num_gpus,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        include_attention=include_attention,
        on_overflow="ignore",  # the freeze is drawn even where the prompt would not fit; decode is masked
    )
    d = decode_step(
        model,
        gpu,
        batch,
        context_tokens,
        num_gpus=num_gpus,
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        on_overflow="mask",
    )
    pt, b, t, prefill_s, step_s = np.broadcast_arrays(
        np.asarray(p.prompt_tokens),
        np.asarray(d.batch),
        np.asarray(d.context_tokens),
        np.asarray(p.time_s),
        np.asarray(d.step_time_s),
    )
    steps = np.full(step_s.shape, np.nan)
    ok = np.isfinite(step_s)
    steps[ok] = stalled_decode_steps(prefill_s[ok], step_s[ok])
    return PrefillStall(
        prompt_tokens=out(pt),
        batch=out(b),
        context_tokens=out(t),
        prefill_time_s=out(prefill_s),
        decode_step_time_s=out(step_s),
        stalled_steps=out(steps),
    )


def paste_fits(s: Scenario) -> bool:
    """True if the weights, the KV of B users at T tokens and the pasted prompt's P tokens of KV all fit.

    >>> paste_fits(Scenario(batch=30, prompt_tokens=8000))
    True
    >>> paste_fits(Scenario(batch=500, prompt_tokens=8000))   # 65.5 GB of KV + 16 GB of weights
    False
    """
    need = memory_needed_bytes(s.model, s.batch, s.context_tokens, s.weight_precision, s.kv_precision)
    need += kv_cache_bytes(1, s.prompt_tokens, kv_bytes_per_token(s.model, s.kv_precision))
    return bool(need <= memory_available_bytes(s.gpu, s.num_gpus))


# The card's pasted document, and the server it lands on in lessons 15 and 44: one configuration, one freeze.
PASTE_TOKENS = 8000


PASTE_STREAMING_USERS = 30


PASTE_CONTEXT_TOKENS = 1000


@dataclass(frozen=True)
class PasteFreeze(Result):
    """The one figure for "an 8,000-token paste freezes the streams" (lessons 15 and 44 quote this).

    ``freeze_s`` is the library's prefill (``rl.prefill``: layer matmuls for every prompt token, causal
    attention, the LM head for the last token only). ``card_estimate_s`` is the study card's 2·N·P ÷ peak,
    which multiplies every parameter (embedding and LM head included) by every prompt token and leaves
    attention out; ``card_vs_freeze`` says how close the rounding lands. Steps are counted against the
    decode step of ``batch`` users at ``context_tokens`` (lesson 15's stall) and at batch 1 (the card's
    count).
    """

    prompt_tokens: int
    batch: int
    context_tokens: int
    freeze_s: float
    card_estimate_s: float
    card_vs_freeze: float  # card estimate ÷ freeze
    attention_share: float  # attention's share of the prefill FLOPs
    decode_step_s: float  # the B streaming users' step
    steps_missed: float  # freeze ÷ their step
    batch1_step_s: float
    batch1_steps_missed: float  # freeze ÷ the batch-1 floor (the card's way of counting)


def card_prefill_s(model, gpu, prompt_tokens, *, num_gpus=1, weight_precision="bf16"):
    """The study card's prefill estimate (s): 2·N·P FLOPs, every one of the N parameters multiplied by
    every prompt token, over the G GPUs' peak; no attention. The library's prefill (``prefill``) counts
    less (the embedding is a lookup, the LM head serves the last token only) and adds attention.

    Taught in lesson 15.

    >>> round(float(card_prefill_s("llama-3-8b", "h100-sxm", 500)) * 1e3, 2)   # 2 × 8.03e9 × 500 ÷ 989e12
    8.12
    """
    n = parameter_count(model)
    peak = num_gpus * peak_flops_per_s(get_gpu(gpu), weight_precision)
    return out(2.0 * n * np.asarray(prompt_tokens, dtype=float) / peak)


def paste_freeze(
    model="llama-3-8b",
    gpu="h100-sxm",
    prompt_tokens=PASTE_TOKENS,
    batch=PASTE_STREAMING_USERS,
    context_tokens=PASTE_CONTEXT_TOKENS,
    *,
    weight_precision="bf16",
    kv_precision="bf16",
) -> PasteFreeze:
    """The freeze of one unchunked paste of ``prompt_tokens`` (P), and the steps the streams miss (s).

    One value per quantity: lessons 15 and 44 both call this, so they show the same freeze.

    Taught in lesson 15 (with the card's rounding) and used in lesson 44.

    >>> f = paste_freeze()
    >>> round(f.freeze_s * 1e3), round(f.card_estimate_s * 1e3)     # 2 × 8.03e9 × 8,000 ÷ 989e12 = 129.9 ms
    (130, 130)
    """
    checked(prompt_tokens, "prompt_tokens", minimum=1, whole=True)
    opts = dict(weight_precision=weight_precision, kv_precision=kv_precision)
    p = int(prompt_tokens)
    full = prefill(model, gpu, p, on_overflow="ignore", **opts)
    stall = prefill_stall(model, gpu, p, batch, context_tokens, **opts)
    one = decode_step(model, gpu, 1, 0, **opts)
    card = card_prefill_s(model, gpu, p, weight_precision=weight_precision)
    freeze = float(full.time_s)
    return PasteFreeze(
        prompt_tokens=p,
        batch=int(batch),
        context_tokens=int(context_tokens),
        freeze_s=freeze,
        card_estimate_s=float(card),
        card_vs_freeze=float(card / freeze),
        attention_share=float(full.attention_flops / full.flops),
        decode_step_s=float(stall.decode_step_time_s),
        steps_missed=float(stall.stalled_steps),
        batch1_step_s=float(one.step_time_s),
        batch1_steps_missed=float(stalled_decode_steps(freeze, one.step_time_s)),
    )
