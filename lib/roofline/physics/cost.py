"""What a token costs: the GPU is billed by the hour, whatever it produces in that hour.

Taught in lesson 01 (notebooks/01_token_cost.ipynb).

    cost per 1M tokens = $/GPU-hour × G ÷ (tokens/s × 3,600) × 10⁶

A rented GPU's hour is its listed price. A GPU you own costs, per hour you use it, its purchase price
spread over the hours of its life you use it, plus the electricity it draws that hour:

    $/hour owned = purchase ÷ (lifetime years × 365.25 × hours used a day) + kW drawn × $/kWh

(``ownership_usd_per_hour``; the lifetime, hours, power and electricity price are assumptions in
``data/assumptions.toml``, and ``roofline.pricing.default_price`` gives every GPU its price.)

>>> round(cost_per_million_tokens_usd(3.0, 200), 2)     # one user on a $3/h H100
4.17
>>> round(cost_per_million_tokens_usd(3.0, 4300), 2)    # 64 users batched
0.19
"""

from __future__ import annotations

from roofline.checks import checked, out
from roofline.units import SECONDS_PER_HOUR, TOKENS_PER_MILLION

DAYS_PER_YEAR = 365.25  # a Julian year: leap years included
W_PER_KW = 1000.0


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


def ownership_usd_per_hour(purchase_usd, lifetime_years, hours_per_day, power_w, usd_per_kwh):
    """US dollars per hour of use of hardware you own: the purchase spread over the hours you use it in its
    lifetime, plus the electricity of that hour. ``purchase_usd`` (USD), ``lifetime_years`` (years),
    ``hours_per_day`` (hours of use a day, at most 24), ``power_w`` (W drawn while in use, at the wall),
    ``usd_per_kwh`` (electricity, USD per kWh).

    An RTX 4090 bought for $1,599, used 8 h a day for 3 years, drawing 450 W at $0.187/kWh:
    1,599 ÷ (3 × 365.25 × 8) = $0.1824/h for the card and 0.45 kW × $0.187 = $0.0842/h for power.

    >>> round(float(ownership_usd_per_hour(1599, 3, 8, 450, 0.187)), 4)
    0.2666
    >>> ownership_usd_per_hour(1599, 3, [8, 24], 450, 0.187).round(3)  # 24 h a day: a third of the card
    array([0.267, 0.145])
    """
    price = checked(purchase_usd, "purchase_usd", minimum=0)
    years = checked(lifetime_years, "lifetime_years", above=0)
    hours = checked(hours_per_day, "hours_per_day", above=0, maximum=24)
    watts = checked(power_w, "power_w", minimum=0)
    energy = checked(usd_per_kwh, "usd_per_kwh", minimum=0)
    return out(price / (years * DAYS_PER_YEAR * hours) + watts / W_PER_KW * energy)
