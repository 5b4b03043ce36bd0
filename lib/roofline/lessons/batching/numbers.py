"""Serving many users: one request at a time (a queue) against continuous batching (a shared weight read).

Taught in lesson 25 (notebooks/25_batching.ipynb).

U users arrive together, each wanting n output tokens, each holding about T tokens of KV.

    one at a time:        request i (0-based) starts at i × n × step(1), ends at (i + 1) × n × step(1)
                          last user done after U × n × step(1); the GPU makes 1 ÷ step(1) tokens/s
    continuous batching:  all U decode together; everyone is done after n × step(U);
                          the GPU makes U ÷ step(U) tokens/s

step(B) is ``decode_step``'s time for B users. Each request first prefills its prompt of P tokens (by
default P = T: the context a user holds is the prompt it sent), and that pass emits the first token:

    one at a time:        request = prefill(P) + (n − 1) × step(1); user i waits i × request + prefill(P)
    continuous batching:  time to first token = prefill of all U prompts in one pass (batch U × P tokens,
                          compute-bound: about 2·N·U·P ÷ peak), then (n − 1) × step(U)

With P = 0 (no prompt) the first token is one decode step and the formulas above reduce to n × step.
Arrivals spread over time, and queueing, are lesson 25's simulator section (``roofline.sim``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.checks import checked, out
from roofline.physics.step import decode_step, prefill
from roofline.results import Flag, Number, Result
from roofline.sim import SimConfig, latency_vs_load

# Numbers of users the lesson's figure sweeps, and the explorer's choices of users and output tokens.
USERS_SWEEP = np.unique(np.round(np.geomspace(1, 512, 120)).astype(int))
USER_OPTIONS = [1, 2, 4, 5, 8, 10, 16, 20, 32, 50, 64, 100, 128, 200, 256, 384, 512]
OUTPUT_TOKEN_OPTIONS = [50, 100, 200, 400, 800, 1600, 3200]


@dataclass(frozen=True)
class ServingOutcome(Result):
    """What users see under one serving policy. Array fields broadcast over users, output tokens, context.

    All users arrive at t = 0. "Wait" is the time until a user's first output token; "finish" is the time
    until the user's whole answer is out. Times and rates are NaN where the policy's batch does not fit in
    memory (continuous batching with too many users).
    """

    step_time_s: Number  # s, one decode step under this policy
    wait_mean_s: Number  # s, mean time to first token
    wait_last_s: Number  # s, the last user's time to first token
    finish_mean_s: Number  # s, mean time until the answer is complete
    finish_last_s: Number  # s, until the last user is done
    tokens_per_s_total: Number  # tokens/s the GPU(s) produce while serving
    tokens_per_s_per_user: Number  # tokens/s a user sees while being served
    fits: Flag  # bool


def _serve(
    batched: bool, model, gpu, users, output_tokens, context_tokens, prompt_tokens, opts
) -> ServingOutcome:
    """Either policy for U users wanting n tokens each at T tokens of context (P prompt tokens each, P = T
    when ``prompt_tokens`` is None), as in the module's formulas."""
    u, n, t = np.broadcast_arrays(
        checked(users, "users", minimum=1, whole=True),
        checked(output_tokens, "output_tokens", minimum=1),
        checked(context_tokens, "context_tokens", minimum=0),
    )
    b = u if batched else 1
    step = np.asarray(decode_step(model, gpu, b, t, on_overflow="mask", **opts).step_time_s)
    p = t if prompt_tokens is None else checked(prompt_tokens, "prompt_tokens", minimum=0) + 0 * t
    # the prefill of the B prompts in one pass makes the first token; with no prompt, one decode step
    pre = prefill(model, gpu, np.maximum(p, 1), batch=b, on_overflow="mask", **opts)
    first = np.where(p > 0, np.asarray(pre.step_time_s), step)
    if batched:
        done = first + (n - 1) * step
        return ServingOutcome(
            step_time_s=out(step),
            wait_mean_s=out(first),
            wait_last_s=out(first),
            finish_mean_s=out(done),
            finish_last_s=out(done),
            tokens_per_s_total=out(u / step),
            tokens_per_s_per_user=out(1 / step),
            fits=out(np.isfinite(step)),
        )
    request = first + (n - 1) * step
    return ServingOutcome(
        step_time_s=out(step + 0 * u),
        wait_mean_s=out((u - 1) / 2 * request + first),
        wait_last_s=out((u - 1) * request + first),
        finish_mean_s=out((u + 1) / 2 * request),
        finish_last_s=out(u * request),
        tokens_per_s_total=out(1 / step + 0 * u),
        tokens_per_s_per_user=out(1 / step + 0 * u),
        fits=out(np.isfinite(request + 0 * u)),
    )


def serve_one_at_a_time(
    model,
    gpu,
    users,
    output_tokens,
    context_tokens=1000,
    *,
    prompt_tokens=None,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
) -> ServingOutcome:
    """A server that runs ``generate()`` for one request after another: a queue at batch 1.

    Parameters
    ----------
    model, gpu : ids or dataclasses. users : requests arriving together, U ≥ 1 (whole number).
    output_tokens : tokens each request generates, n ≥ 1. context_tokens : KV tokens per user, T ≥ 0.
    prompt_tokens : P, tokens each request prefills first (None: P = T). num_gpus, weight_precision,
    kv_precision : as in ``decode_step``. All array-likes broadcast.

    Request i (0-based) waits for the i before it, each taking prefill(P) + (n − 1) × step(1) seconds.

    >>> q = serve_one_at_a_time("llama-3-8b", "h100-sxm", users=[1, 20], output_tokens=400, context_tokens=0)
    >>> q.wait_last_s.round(2).tolist(), q.tokens_per_s_total.round().tolist()
    ([0.0, 34.06], [223.0, 223.0])
    """
    opts = dict(num_gpus=num_gpus, weight_precision=weight_precision, kv_precision=kv_precision)
    return _serve(False, model, gpu, users, output_tokens, context_tokens, prompt_tokens, opts)


def serve_continuous_batching(
    model,
    gpu,
    users,
    output_tokens,
    context_tokens=1000,
    *,
    prompt_tokens=None,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
) -> ServingOutcome:
    """All ``users`` decode together, sharing every weight read: one step of batch U makes U tokens.

    The U prompts (P tokens each, default P = T) are prefilled together first; that pass emits everyone's
    first token, so the time to first token is the batched prefill, not one decode step.
    Same parameters as ``serve_one_at_a_time``. Where U users' KV does not fit beside the weights, the
    times are NaN and ``fits`` is False (a real server would queue the extra users).

    >>> b = serve_continuous_batching("llama-3-8b", "h100-sxm", users=[1, 20], output_tokens=400,
    ...                               context_tokens=1000)
    >>> (b.step_time_s / 1e-3).round(2).tolist(), b.tokens_per_s_total.round().tolist()
    ([4.52, 5.26], [221.0, 3800.0])
    """
    opts = dict(num_gpus=num_gpus, weight_precision=weight_precision, kv_precision=kv_precision)
    return _serve(True, model, gpu, users, output_tokens, context_tokens, prompt_tokens, opts)


def gpu_upgrade_vs_batching(model, users, output_tokens, context_tokens, gpu="h100-sxm", bigger_gpu="h200"):
    """The trap in numbers: the last user's finish time with a bigger GPU serving one at a time, against
    the same GPU serving the users as one batch (s). Returns a dict of the three times.

    >>> r = gpu_upgrade_vs_batching("llama-3-8b", 20, 400, 1000)
    >>> round(r["one at a time"], 1), round(r["one at a time, bigger GPU"], 1), round(r["batched"], 1)
    (36.4, 25.5, 2.4)
    """
    return {
        "one at a time": serve_one_at_a_time(model, gpu, users, output_tokens, context_tokens).finish_last_s,
        "one at a time, bigger GPU": serve_one_at_a_time(
            model, bigger_gpu, users, output_tokens, context_tokens
        ).finish_last_s,
        "batched": serve_continuous_batching(model, gpu, users, output_tokens, context_tokens).finish_last_s,
    }


HOCKEY_STICK_LOADS = (0.2, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1)


def latency_against_load(
    model, gpu, *, input_tokens=1000, output_tokens=400, load_fractions=HOCKEY_STICK_LOADS
):
    """Latency against load (the hockey stick), from the serving simulator (``roofline.sim``).

    800 requests of ``input_tokens`` + ``output_tokens`` arrive at random (Poisson) at each of the given
    fractions of the closed-form sustainable rate; continuous batching serves them. Returns
    ``sim.LoadSweep`` (rates in requests/s, p50/p99 TTFT and TPOT in s); ``knee_load`` finds where the tail
    takes off.

    >>> s = latency_against_load("llama-3-8b", "h100-sxm", load_fractions=(0.2, 1.0))
    >>> bool(s.ttft_p99_s[1] > 5 * s.ttft_p99_s[0])      # near capacity the tail takes off
    True
    """
    server = SimConfig(
        model,
        gpu,
        rate_per_s=1.0,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        requests=800,
        seed=0,
    )
    return latency_vs_load(server, tuple(load_fractions))


def knee_load(sweep):
    """The first load (fraction of the sustainable rate) whose p99 TTFT exceeds 10 × the lightest load's:
    where the hockey stick turns up. NaN if none does.

    >>> from types import SimpleNamespace
    >>> s = SimpleNamespace(rates_per_s=np.array([2.0, 8.0, 9.0]), sustainable_rate_per_s=10.0,
    ...                     ttft_p99_s=np.array([0.05, 0.2, 0.9]))
    >>> knee_load(s)
    0.9
    """
    p99 = np.asarray(sweep.ttft_p99_s, dtype=float)
    loads = np.asarray(sweep.rates_per_s, dtype=float) / sweep.sustainable_rate_per_s
    over = np.flatnonzero(p99 > 10.0 * p99[0])
    return float(loads[over[0]]) if over.size else float("nan")
