"""Speculative decoding: draft k tokens cheaply, verify them in one forward step of the target model.

Taught in notebooks/speculative_decoding.ipynb (exercise: exercises/speculative_decoding.py).

A proposer drafts k tokens for each user: a small draft model (k sequential decode steps of it), an n-gram
lookup in the prompt (about free), or the model's own multi-token-prediction head (a fraction of a target
step). The target then runs ONE forward step over the k + 1 positions of every user (the step engine's
``forward_step`` with ``new_tokens = k + 1``): it keeps the longest prefix of drafts it agrees with, plus
one token of its own. While batch × (k + 1) stays below the ridge, that step reads the same weights as a
plain decode step and costs about the same; past the ridge it grows with the tokens and the gain is gone.

With per-token acceptance α (each draft accepted with probability α, independently, until the first
rejection), the expected tokens a user gets per verify step are

    E(α, k) = 1 + α + α² + … + α^k = (1 − α^(k+1)) ÷ (1 − α)          (α = 1: k + 1)

and, with draft time D and verify time V per cycle, and the plain decode step S of the same configuration,

    tokens/s per user = E ÷ (D + V),        speedup = E × S ÷ (D + V)

D is k × (a draft model's decode step), or k × r × S for a proposer that costs r target decode steps per
drafted token (r = 0: n-gram lookup).

>>> s = speculative_step("llama-3-70b", "h100-sxm", num_gpus=4, draft_tokens=4, acceptance=0.8,
...                      draft_model="llama-3.2-1b", context_tokens=1000)
>>> round(s.expected_tokens_per_step, 3), round(s.speedup, 2)       # 1 + .8 + .64 + .512 + .4096
(3.362, 3.14)
>>> s = speculative_step("llama-3-8b", "h100-sxm", batch=[1, 256], draft_tokens=4, acceptance=0.7,
...                      draft_cost_ratio=0.0, context_tokens=128)
>>> np.round(s.speedup, 2).tolist()          # the gain collapses once the verify is compute-bound
[2.77, 0.81]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.checks import checked, out
from roofline.data import get_gpu, get_model
from roofline.errors import ContextTooLongError, DoesNotFitError, InvalidConfigurationError
from roofline.physics.architecture import active_parameter_count, parameter_breakdown
from roofline.physics.step import StepOptions, decode_step, forward_step
from roofline.results import Flag, Label, Number, Result
from roofline.units import GB

# Batches the collapse search sweeps (users): every whole number up to 4,096.
COLLAPSE_BATCHES = np.arange(1, 4097)


def expected_tokens_per_step(acceptance, draft_tokens):
    """Expected tokens one user gets from one verify step: (1 − α^(k+1)) ÷ (1 − α); k + 1 at α = 1.

    ``acceptance`` α in [0, 1] is the chance that each drafted token is accepted (given the ones before it
    were); ``draft_tokens`` k ≥ 0 whole drafts per user. Always at least 1 (the target's own token) and
    at most k + 1. Broadcasts (tokens).

    >>> expected_tokens_per_step(0.8, 4)                  # 1 + 0.8 + 0.64 + 0.512 + 0.4096
    3.3616...
    >>> expected_tokens_per_step([0.0, 1.0], 4).tolist()
    [1.0, 5.0]
    """
    checked(acceptance, "acceptance", minimum=0, maximum=1)
    checked(draft_tokens, "draft_tokens", minimum=0, whole=True)
    a, k = np.asarray(acceptance, dtype=float), np.asarray(draft_tokens, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.where(a < 1, (1 - a ** (k + 1)) / np.where(a < 1, 1 - a, 1), k + 1)
    return out(e)


@dataclass(frozen=True)
class SpeculativeStep(Result):
    """One speculative cycle (draft k, verify k + 1) per user, against plain decode of the same setup.

    Array fields broadcast over batch, context, draft tokens and acceptance. Where the target plus the
    draft model do not fit (``fits`` False, asked for with ``on_overflow="mask"``) times are NaN.
    """

    model_id: str
    gpu_id: str
    proposer: str  # the draft model's id, or "cost ratio r" for a proposer priced against the target
    weight_precision: str
    kv_precision: str
    num_gpus: Number
    batch: Number  # B, users
    context_tokens: Number  # T, tokens in each user's KV cache
    draft_tokens: Number  # k, drafts per user per cycle
    acceptance: Number  # α, per-token acceptance probability
    draft_cost_ratio: Number  # r: one draft step ÷ one target decode step (measured for a draft model)
    expected_tokens_per_step: Number  # E = (1 − α^(k+1)) ÷ (1 − α), tokens per user per cycle
    draft_time_s: Number  # D: the k draft steps (s)
    verify_time_s: Number  # V: one target step over B × (k + 1) tokens (s)
    verify_binding: Label  # "memory" or "compute" (the verify step's roofline)
    step_time_s: Number  # D + V: one cycle (s)
    plain_step_time_s: Number  # S: a plain decode step of the same configuration (s)
    tokens_per_s_per_user: Number  # E ÷ (D + V)
    plain_tokens_per_s_per_user: Number  # 1 ÷ S
    tokens_per_s_total: Number  # B × E ÷ (D + V)
    speedup: Number  # per user, speculative ÷ plain
    memory_needed_bytes: Number  # target and draft weights plus both KV caches
    memory_capacity_bytes: Number
    fits: Flag


def speculative_step(
    model, gpu, batch=1, context_tokens=0, *, draft_tokens, acceptance, draft_model=None,
    draft_cost_ratio=None, draft_precision: str | None = None, **options,
) -> SpeculativeStep:  # fmt: skip
    """Model speculative decoding for ``batch`` users at ``context_tokens`` each.

    Parameters
    ----------
    model, gpu : the target model and the GPU (ids or dataclasses).
    batch : B ≥ 1 users, whole (users). Broadcasts.
    context_tokens : T ≥ 0 tokens in each user's KV cache (tokens).
    draft_tokens : k ≥ 0 drafted tokens per user per cycle, whole (tokens); k = 0 is plain decode.
    acceptance : α in [0, 1], the chance each draft is accepted.
    draft_model : a draft model id: drafting costs k of its decode steps (``decode_step``), at
        ``draft_precision`` (default: the target's weight precision), on the same GPUs; its weights and
        KV take memory too. Give this or ``draft_cost_ratio``, not both.
    draft_cost_ratio : r ≥ 0, one drafted token's cost in target decode steps (0 for n-gram lookup, about
        the MTP module's share of the weights for a multi-token-prediction head).
    options : ``StepOptions`` (``num_gpus``, precisions, ``on_overflow``: ``"raise"`` raises
        ``DoesNotFitError`` or ``ContextTooLongError``, ``"mask"`` gives NaN where it does not fit).

    The verify step is ``forward_step(..., new_tokens=k + 1)``; it writes the KV of its k + 1 positions.
    The plain baseline is the same engine with one new token per user (its KV written likewise), so k = 0
    gives a speedup of exactly 1 with a free proposer. A draft model's steps are ``decode_step`` at context
    T (the few tokens it adds during a cycle are left out).

    >>> s = speculative_step("llama-3-8b", "h100-sxm", draft_tokens=3, acceptance=1.0, draft_cost_ratio=0)
    >>> s.expected_tokens_per_step, s.verify_binding, round(s.speedup, 2)
    (4.0, 'memory', 4.0)
    """
    b = checked(batch, "batch", minimum=1, whole=True)
    t = checked(context_tokens, "context_tokens", minimum=0)
    k = checked(draft_tokens, "draft_tokens", minimum=0, whole=True)
    a = checked(acceptance, "acceptance", minimum=0, maximum=1)
    checked(draft_cost_ratio, "draft_cost_ratio", minimum=0, allow_none=True)
    o = StepOptions(**options)
    m, g = get_model(model), get_gpu(gpu)
    if (draft_model is None) == (draft_cost_ratio is None):
        raise InvalidConfigurationError("give either draft_model or draft_cost_ratio (not both, not neither)")
    longest = t + k + 1
    if o.on_overflow == "raise" and np.any(longest > m.max_context_tokens):
        raise ContextTooLongError(
            f"{m.id} reads at most {m.max_context_tokens:,} tokens of context; a verify step at "
            f"{np.max(t):,.0f} tokens with {np.max(k):,.0f} drafts needs {np.max(longest):,.0f}."
        )
    common = dict(num_gpus=o.num_gpus, weight_precision=o.weight_precision, kv_precision=o.kv_precision)
    verify = forward_step(m, g, b, t, new_tokens=k + 1, on_overflow="ignore", **common)
    plain_s = np.asarray(forward_step(m, g, b, t, new_tokens=1, on_overflow="ignore", **common).step_time_s)
    if draft_model is not None:
        precision = draft_precision or o.weight_precision
        drafter = decode_step(draft_model, g, b, t, **{**common, "weight_precision": precision},
                              on_overflow="ignore")  # fmt: skip
        one_draft_s = np.asarray(drafter.step_time_s)
        draft_memory, ratio, proposer = (
            np.asarray(drafter.memory_needed_bytes),
            one_draft_s / plain_s,
            drafter.model_id,
        )
    else:
        ratio = np.asarray(draft_cost_ratio, dtype=float)
        one_draft_s, draft_memory = ratio * plain_s, np.zeros(())
        proposer = f"cost ratio {float(np.max(ratio)):g}" if ratio.ndim == 0 else "cost ratio"
    need = np.asarray(verify.memory_needed_bytes) + draft_memory
    have = np.asarray(verify.memory_capacity_bytes)
    ok = (need <= have) & (longest <= m.max_context_tokens)
    if o.on_overflow == "raise" and not np.all(ok):
        raise DoesNotFitError(
            f"Does not fit: {m.id}" + (f" with draft {proposer}" if draft_model is not None else "")
            + f" at batch {np.max(b):,.0f} x {np.max(t):,.0f} tokens needs {np.max(need) / GB:,.1f} GB "
            f"(weights + KV) on {np.max(have) / GB:,.0f} GB of {g.id}. Use fewer users, a shorter "
            "context, more GPUs or a smaller precision."
        )  # fmt: skip
    shown = ok | (o.on_overflow == "ignore")
    times = (ratio, k * one_draft_s, np.asarray(verify.step_time_s), plain_s)
    return _speculative_result(m, g, o, proposer, verify, (b, t, k, a), times, (need, have, ok, shown))


def _speculative_result(m, g, o: StepOptions, proposer: str, verify, load, times, memory) -> SpeculativeStep:
    """The ``SpeculativeStep`` of a cycle's load (B, T, k, α), times (r, draft, verify, plain; s) and memory
    (need, have, ok, shown), NaN where it cannot run."""
    e = np.asarray(expected_tokens_per_step(load[3], load[2]))
    arrays = np.broadcast_arrays(*load, e, *times, *memory)
    b, t, k, a, e, ratio, draft_s, verify_s, plain_s, need, have, ok, shown = arrays
    cycle_s = draft_s + verify_s
    nan = lambda x: out(np.where(shown, x, np.nan))  # noqa: E731
    with np.errstate(divide="ignore", invalid="ignore"):
        per_user = e / cycle_s
        plain_per_user = 1.0 / plain_s
    vb = np.broadcast_to(np.asarray(verify.binding), shown.shape)
    binding = np.where(shown, vb, "does not fit")
    return SpeculativeStep(
        model_id=m.id,
        gpu_id=g.id,
        proposer=proposer,
        weight_precision=o.weight_precision,
        kv_precision=o.kv_precision,
        num_gpus=out(np.asarray(verify.num_gpus)),
        batch=out(b),
        context_tokens=out(t),
        draft_tokens=out(k),
        acceptance=out(a),
        draft_cost_ratio=nan(ratio),
        expected_tokens_per_step=out(e),
        draft_time_s=nan(draft_s),
        verify_time_s=nan(verify_s),
        verify_binding=str(binding) if binding.ndim == 0 else binding,
        step_time_s=nan(cycle_s),
        plain_step_time_s=nan(plain_s),
        tokens_per_s_per_user=nan(per_user),
        plain_tokens_per_s_per_user=nan(plain_per_user),
        tokens_per_s_total=nan(b * per_user),
        speedup=nan(per_user / plain_per_user),
        memory_needed_bytes=out(need),
        memory_capacity_bytes=out(have),
        fits=out(ok),
    )


def mtp_draft_cost_ratio(model) -> float:
    """Draft-cost ratio r of a multi-token-prediction head (DeepSeek-V3's MTP module): one extra
    transformer block plus the shared LM head, against the whole model's active weights (1).

    r ≈ [(N_active − embedding − LM head) ÷ L + LM head] ÷ N_active: the block is the average layer, an
    approximation (DeepSeek-V3's MTP block is an MoE layer like the average one). At batch 1 a memory-bound
    draft step costs its bytes, so r is the ratio of weights read.

    >>> round(mtp_draft_cost_ratio("deepseek-v3"), 3)
    0.04
    """
    m = get_model(model)
    parts = parameter_breakdown(m)
    active = active_parameter_count(m)
    block = (active - parts["embedding"] - parts["lm_head"]) / m.layers
    return float((block + parts["lm_head"]) / active)


def speculative_collapse_batch(model, gpu, context_tokens=0, *, batches=None, **options):
    """The smallest batch at which speculative decoding stops paying: speedup < 1 (users).

    Sweeps ``batches`` (default every batch from 1 to 4,096) with ``speculative_step`` (same keyword
    options: ``draft_tokens``, ``acceptance``, ``draft_model`` or ``draft_cost_ratio``, precisions,
    ``num_gpus``) and returns the first batch whose speedup drops below 1, or NaN if it never does within
    the sweep (or the memory runs out first: batches that do not fit are skipped).

    >>> speculative_collapse_batch("llama-3-8b", "h100-sxm", 128, draft_tokens=4, acceptance=0.7,
    ...                            draft_cost_ratio=0.0)
    200.0

    At long contexts each user's KV read keeps even a big verify step memory-bound (it reads the KV once
    for all k + 1 positions), and the memory runs out before the gain does:

    >>> speculative_collapse_batch("llama-3-8b", "h100-sxm", 4096, draft_tokens=4, acceptance=0.7,
    ...                            draft_cost_ratio=0.0)
    nan
    """
    sweep = COLLAPSE_BATCHES if batches is None else np.asarray(batches)
    options = {"on_overflow": "mask", **options}
    s = speculative_step(model, gpu, sweep, context_tokens, **options)
    below = np.asarray(s.speedup) < 1  # NaN (does not fit) compares False
    if not below.any():
        return float("nan")
    return float(np.asarray(s.batch)[np.argmax(below)])
