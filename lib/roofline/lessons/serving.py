"""Serving many users: one request at a time (a queue) against continuous batching (a shared weight read).

Taught in lesson 25 (notebooks/25_batching.ipynb).

U users arrive together, each wanting n output tokens, each holding about T tokens of KV.

    one at a time:        request i (0-based) starts at i × n × step(1), ends at (i + 1) × n × step(1)
                          last user done after U × n × step(1); the GPU makes 1 ÷ step(1) tokens/s
    continuous batching:  all U decode together; everyone is done after n × step(U);
                          the GPU makes U ÷ step(U) tokens/s

step(B) is ``decode_step``'s time for B users. Prefill and arrivals spread over time are left out: they
add the same work to both policies (lesson 44 handles prefill).

>>> q = serve_one_at_a_time("llama-3-8b", "h100-sxm", users=20, output_tokens=400, context_tokens=0)
>>> round(q.finish_last_s, 1)          # the card's "20 users wait about 40 s"
38.4
>>> b = serve_continuous_batching("llama-3-8b", "h100-sxm", users=20, output_tokens=400, context_tokens=0)
>>> round(b.finish_last_s, 2)
1.92
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline._arrays import checked, out
from roofline.data import get_gpu
from roofline.errors import InvalidConfigurationError
from roofline.physics.step import decode_step

# Numbers of users the lesson's figure sweeps.
USERS_SWEEP = np.unique(np.round(np.geomspace(1, 512, 120)).astype(int))


OUTPUT_TOKEN_OPTIONS = [50, 100, 200, 400, 800, 1600, 3200]


USER_OPTIONS = [1, 2, 4, 5, 8, 10, 16, 20, 32, 50, 64, 100, 128, 200, 256, 384, 512]


@dataclass(frozen=True)
class ServingOutcome:
    """What users see under one serving policy. Array fields broadcast over users, output tokens, context.

    All users arrive at t = 0. "Wait" is the time until a user's first output token; "finish" is the time
    until the user's whole answer is out. Times and rates are NaN where the policy's batch does not fit in
    memory (continuous batching with too many users).
    """

    policy: str
    users: object  # U
    output_tokens: object  # n, tokens each request generates
    context_tokens: object  # T, KV tokens each user holds (typical over the request)
    step_time_s: object  # s, one decode step under this policy
    wait_mean_s: object  # s, mean time to first token
    wait_last_s: object  # s, the last user's time to first token
    finish_mean_s: object  # s, mean time until the answer is complete
    finish_last_s: object  # s, until the last user is done
    tokens_per_s_total: object  # tokens/s the GPU(s) produce while serving
    tokens_per_s_per_user: object  # tokens/s a user sees while being served
    fits: object  # bool


def _inputs(users, output_tokens, context_tokens):
    u = checked(users, "users", minimum=1)
    if np.any(u != np.round(u)):
        raise InvalidConfigurationError(f"users must be a whole number, got {users!r}")
    n = checked(output_tokens, "output_tokens", minimum=1)
    t = checked(context_tokens, "context_tokens", minimum=0)
    return np.broadcast_arrays(u, n, t)


def serve_one_at_a_time(
    model,
    gpu,
    users,
    output_tokens,
    context_tokens=1000,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
) -> ServingOutcome:
    """A server that runs ``generate()`` for one request after another: a queue at batch 1.

    Parameters
    ----------
    model, gpu : ids or dataclasses. users : requests arriving together, U ≥ 1 (whole number).
    output_tokens : tokens each request generates, n ≥ 1. context_tokens : KV tokens per user, T ≥ 0.
    num_gpus, weight_precision, kv_precision : as in ``decode_step``. All array-likes broadcast.

    Request i (0-based) waits for the i before it, each taking n × step(1) seconds.

    Taught in lesson 25.

    >>> q = serve_one_at_a_time("llama-3-8b", "h100-sxm", users=[1, 20], output_tokens=400, context_tokens=0)
    >>> q.wait_last_s.round(2).tolist(), q.tokens_per_s_total.round().tolist()
    ([0.0, 36.4], [209.0, 209.0])
    """
    u, n, t = _inputs(users, output_tokens, context_tokens)
    step = np.asarray(
        decode_step(
            model,
            gpu,
            1,
            t,
            num_gpus=num_gpus,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            on_overflow="mask",
        ).step_time_s
    )
    request = n * step
    return ServingOutcome(
        policy="one at a time",
        users=out(u),
        output_tokens=out(n),
        context_tokens=out(t),
        step_time_s=out(step + 0 * u),
        wait_mean_s=out((u - 1) / 2 * request + step),
        wait_last_s=out((u - 1) * request + step),
        finish_mean_s=out((u + 1) / 2 * request),
        finish_last_s=out(u * request),
        tokens_per_s_total=out(1 / step + 0 * u),
        tokens_per_s_per_user=out(1 / step + 0 * u),
        fits=out(np.isfinite(step + 0 * u)),
    )


def serve_continuous_batching(
    model,
    gpu,
    users,
    output_tokens,
    context_tokens=1000,
    *,
    num_gpus=1,
    weight_precision="bf16",
    kv_precision="bf16",
) -> ServingOutcome:
    """All ``users`` decode together, sharing every weight read: one step of batch U makes U tokens.

    Same parameters as ``serve_one_at_a_time``. Where U users' KV does not fit beside the weights, the
    times are NaN and ``fits`` is False (a real server would queue the extra users).

    Taught in lesson 25.

    >>> b = serve_continuous_batching("llama-3-8b", "h100-sxm", users=[1, 20], output_tokens=400,
    ...                               context_tokens=1000)
    >>> (b.step_time_s / 1e-3).round(2).tolist(), b.tokens_per_s_total.round().tolist()
    ([4.83, 5.58], [207.0, 3586.0])
    """
    u, n, t = _inputs(users, output_tokens, context_tokens)
    step = np.asarray(
        decode_step(
            model,
            gpu,
            u,
            t,
            num_gpus=num_gpus,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
            on_overflow="mask",
        ).step_time_s
    )
    done = n * step
    return ServingOutcome(
        policy="continuous batching",
        users=out(u),
        output_tokens=out(n),
        context_tokens=out(t),
        step_time_s=out(step),
        wait_mean_s=out(step),
        wait_last_s=out(step),
        finish_mean_s=out(done),
        finish_last_s=out(done),
        tokens_per_s_total=out(u / step),
        tokens_per_s_per_user=out(1 / step),
        fits=out(np.isfinite(step)),
    )


def gpu_upgrade_vs_batching(model, users, output_tokens, context_tokens, gpu="h100-sxm", bigger_gpu="h200"):
    """The trap in numbers: the last user's finish time with a bigger GPU serving one at a time, against
    the same GPU serving the users as one batch (s). Returns a dict of the three times.

    Taught in lesson 25.

    >>> r = gpu_upgrade_vs_batching("llama-3-8b", 20, 400, 1000)
    >>> round(r["one at a time"], 1), round(r["one at a time, bigger GPU"], 1), round(r["batched"], 1)
    (38.7, 27.0, 2.2)
    """
    get_gpu(bigger_gpu)
    return {
        "one at a time": serve_one_at_a_time(model, gpu, users, output_tokens, context_tokens).finish_last_s,
        "one at a time, bigger GPU": serve_one_at_a_time(
            model, bigger_gpu, users, output_tokens, context_tokens
        ).finish_last_s,
        "batched": serve_continuous_batching(model, gpu, users, output_tokens, context_tokens).finish_last_s,
    }
