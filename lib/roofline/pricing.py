"""What a GPU-hour costs: the price table's rows, an owned GPU's hour worked out from what it cost.

Taught in notebooks/01_token_cost.ipynb (renting) and notebooks/your_own_hardware.ipynb (owning). A rented
row is the provider's listed price per GPU-hour. An owned row gives what the GPU cost; its hour of use is
the purchase spread over the hours used in its lifetime plus the electricity drawn
(``roofline.physics.cost.ownership_usd_per_hour``), under the ownership assumptions of
``data/assumptions.toml``.

>>> get_price("h100-example-3usd").usd_per_gpu_hour
3.0
>>> round(get_price("rtx-4090-own").usd_per_gpu_hour, 3)     # $1,599 over 3 years of 8 h days, and power
0.267
"""

from __future__ import annotations

import dataclasses

from roofline.data import GPU, Price, assumptions, get_gpu, lookup, price_rows
from roofline.physics.cost import ownership_usd_per_hour

# The ownership assumptions an owned price row is costed with (ids in assumptions.toml).
OWNERSHIP_ASSUMPTIONS = (
    "ownership_lifetime_years",
    "ownership_hours_per_day",
    "ownership_power_fraction",
    "electricity_usd_per_kwh",
)


def owned_usd_per_hour(purchase_usd: float, gpu: GPU) -> float:
    """USD per hour of use of a ``gpu`` bought for ``purchase_usd`` (USD), under the ownership assumptions
    in use: ``ownership_usd_per_hour`` with the GPU row's ``power_w`` times ``ownership_power_fraction`` as
    the power drawn.

    >>> round(owned_usd_per_hour(1599.0, get_gpu("rtx-4090")), 3)  # 1,599 / (3 x 365.25 x 8) + 0.45 x 0.187
    0.267
    """
    lifetime, hours, share, usd_per_kwh = (assumptions()[k].value for k in OWNERSHIP_ASSUMPTIONS)
    return float(ownership_usd_per_hour(purchase_usd, lifetime, hours, gpu.power_w * share, usd_per_kwh))


def prices() -> dict[str, Price]:
    """All prices by id (rented and owned, each with its ``usd_per_gpu_hour``), in file order."""
    table = {}
    for p in price_rows().values():
        if p.kind == "own":
            p = dataclasses.replace(p, usd_per_gpu_hour=owned_usd_per_hour(p.purchase_usd, get_gpu(p.gpu)))
        table[p.id] = p
    return table


def default_price(gpu: str | GPU) -> Price | None:
    """The price a lesson uses for ``gpu`` when the learner gives none: the first row of ``prices.toml``
    for it (the table lists the course's round example first where there is one). None for a GPU the
    table does not price (a learner's own measured machine): there is then no cost until one is typed.

    >>> default_price("h100-sxm").id, default_price("l4").usd_per_gpu_hour
    ('h100-example-3usd', 0.8048)
    >>> default_price("rtx-4090").kind
    'own'
    """
    gpu_id = get_gpu(gpu).id
    return next((p for p in prices().values() if p.gpu == gpu_id), None)


def get_price(price_id: str) -> Price:
    """Look a price up by id; an unknown id raises with the closest ids.

    >>> get_price("h100-example-3usd").gpu
    'h100-sxm'
    """
    return lookup("price", prices(), price_id)
