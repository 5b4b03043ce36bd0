"""What a token costs: the GPU is billed by the hour, whatever it produces in that hour.

Taught in lesson 01 (notebooks/01_token_cost.ipynb).

    cost per 1M tokens = $/GPU-hour × G ÷ (tokens/s × 3,600) × 10⁶

>>> round(cost_per_million_tokens_usd(3.0, 200), 2)     # one user on a $3/h H100
4.17
>>> round(cost_per_million_tokens_usd(3.0, 4300), 2)    # 64 users batched
0.19
"""

from __future__ import annotations

from roofline._arrays import checked, out
from roofline.units import SECONDS_PER_HOUR, TOKENS_PER_MILLION


def tokens_per_hour(tokens_per_s):
    """Tokens made in one hour at ``tokens_per_s`` (tokens).

    >>> tokens_per_hour(200)
    720000.0
    """
    return out(checked(tokens_per_s, "tokens_per_s", minimum=0) * SECONDS_PER_HOUR)


def cost_per_million_tokens_usd(usd_per_gpu_hour, tokens_per_s, num_gpus=1):
    """US dollars per million output tokens for ``num_gpus`` GPUs making ``tokens_per_s`` together.

    >>> round(cost_per_million_tokens_usd(2 * 3.0 / 2, 4300, num_gpus=1), 3)
    0.194
    """
    price = checked(usd_per_gpu_hour, "usd_per_gpu_hour", minimum=0)
    rate = checked(tokens_per_s, "tokens_per_s", above=0)
    n = checked(num_gpus, "num_gpus", minimum=1)
    return out(price * n / (rate * SECONDS_PER_HOUR) * TOKENS_PER_MILLION)


def seconds_per_million_tokens(tokens_per_s):
    """Seconds to make a million tokens (s); the power-of-ten check: 10⁶ ÷ 200 = 5,000 s.

    >>> seconds_per_million_tokens(200)
    5000.0
    """
    return out(TOKENS_PER_MILLION / checked(tokens_per_s, "tokens_per_s", above=0))
