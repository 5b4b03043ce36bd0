"""Lesson 15's numbers: prefill against decode, and what one long prompt does to everyone else.

Prefill pushes all P prompt tokens through the model in one pass, so the weights are read once for P
tokens: it turns compute-bound once P passes roughly the ridge point. A decode step at batch 1 reads the
same weights for a single token and stays memory-bound. While an unchunked prefill runs, every streaming
user waits: they miss prefill time ÷ decode step time steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.checks import checked
from roofline.data import get_gpu
from roofline.physics.architecture import kv_bytes_per_token, parameter_count
from roofline.physics.memory import kv_cache_bytes, memory_available_bytes, memory_needed_bytes
from roofline.physics.precision import peak_flops_per_s
from roofline.physics.step import decode_step, stalled_decode_steps
from roofline.results import Result
from roofline.scenario import Scenario

# Prompt lengths every prefill sweep evaluates (1 … 65,536 tokens, log-spaced integers).
PROMPT_SWEEP = np.unique(np.round(np.geomspace(1, 65536, 200)).astype(int))


@dataclass(frozen=True)
class PrefillStall(Result):
    """An unchunked prefill and the streaming users it holds up (s)."""

    prefill_time_s: float  # how long every stream is frozen
    decode_step_time_s: float  # one decode step of the B streaming users (NaN if they do not fit)
    stalled_steps: float  # decode steps each user misses: prefill ÷ step


def prefill_stall(s: Scenario, *, include_attention: bool = True) -> PrefillStall:
    """How long the scenario's B users, streaming at T tokens of context each, freeze while one unchunked
    prefill of its P prompt tokens runs, on its GPUs and in its precisions.

    ``include_attention`` False leaves out attention's P² term (the card's 2·N·P rule also leaves it out, but
    multiplies the embedding table and the LM head by every prompt token; see ``paste_freeze``). The missed
    steps are counted against the step of the B users decoding together (NaN where they do not fit): a
    larger B makes each step longer, so the same freeze costs fewer, longer steps.

    >>> s = prefill_stall(Scenario(batch=30, prompt_tokens=8000))
    >>> round(s.prefill_time_s * 1e3), round(s.stalled_steps, 1)
    (130, 23.0)
    """
    checked(s.prompt_tokens, "prompt_tokens", minimum=1)
    # the freeze is drawn even where the prompt would not fit; the decode step is masked
    prefill_s = float(s.prefill(on_overflow="ignore", include_attention=include_attention).step_time_s)
    step_s = float(s.decode().step_time_s)
    steps = stalled_decode_steps(prefill_s, step_s) if np.isfinite(step_s) else np.nan
    return PrefillStall(prefill_time_s=prefill_s, decode_step_time_s=step_s, stalled_steps=float(steps))


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


def card_prefill_s(s: Scenario) -> float:
    """The study card's prefill estimate of the scenario's P-token prompt (s): 2·N·P FLOPs, every one of the
    N parameters multiplied by every prompt token, over its G GPUs' peak; no attention. The library's
    prefill (``prefill``) counts less (the embedding is a lookup, the LM head serves the last token only)
    and adds attention.

    >>> round(card_prefill_s(Scenario(prompt_tokens=500)) * 1e3, 2)   # 2 × 8.03e9 × 500 ÷ 989e12
    8.12
    """
    peak = s.num_gpus * peak_flops_per_s(get_gpu(s.gpu), s.weight_precision)
    return float(2.0 * parameter_count(s.model) * float(s.prompt_tokens) / peak)


def paste_freeze(model="llama-3-8b", gpu="h100-sxm") -> PasteFreeze:
    """The freeze of the card's unchunked 8,000-token paste while 30 users stream at 1,000 tokens each, and
    the steps they miss (s). One value per quantity: lessons 15 and 44 both call this, so they show the same
    freeze.

    Taught in lesson 15 (with the card's rounding) and used in lesson 44.

    >>> f = paste_freeze()
    >>> round(f.freeze_s * 1e3), round(f.card_estimate_s * 1e3)     # 2 × 8.03e9 × 8,000 ÷ 989e12 = 129.9 ms
    (130, 130)
    """
    s = Scenario(model, gpu, batch=30, context_tokens=1000, prompt_tokens=8000)
    full = s.prefill(on_overflow="ignore")
    stall = prefill_stall(s)
    one = decode_step(model, gpu, 1, 0)
    card = card_prefill_s(s)
    freeze = float(full.step_time_s)
    return PasteFreeze(
        prompt_tokens=s.prompt_tokens,
        batch=s.batch,
        context_tokens=s.context_tokens,
        freeze_s=freeze,
        card_estimate_s=float(card),
        card_vs_freeze=float(card / freeze),
        attention_share=float(full.attention_flops / full.flops),
        decode_step_s=stall.decode_step_time_s,
        steps_missed=stall.stalled_steps,
        batch1_step_s=float(one.step_time_s),
        batch1_steps_missed=float(stalled_decode_steps(freeze, one.step_time_s)),
    )
