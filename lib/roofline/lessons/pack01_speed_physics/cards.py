"""The seven Pack 01 self-check cards, Q1 to Q7, gathered from the lessons they belong to.

Taught in notebooks/pack01_speed_physics.ipynb. Each card lives in its lesson (Q1 in ``decode_floor``, Q2
in ``prefill_vs_decode``, Q3 in ``step_time``, Q4 in ``compute_bound``, Q5 in ``gpu_util``, Q6 in
``token_cost``, Q7 in ``amdahl``); this module looks them up by name.

>>> c = card("Q1")
>>> [(a.name, round(a.value, 1), a.unit) for a in c.answers][:2]
[('floor_ms', 4.8, 'ms'), ('ceiling_tps', 200.0, 'tokens/s')]
>>> [r.status for r in check(c, {"floor_ms": 4.8, "ceiling_tps": 2090})]
['right', 'trap', 'unanswered', 'unanswered']
>>> [r.matched for r in check(c, {"floor_ms": 4.48, "ceiling_tps": 200})][:2]     # lesson 02's, the card's
["the library's exact figure", "the card's simplified figure"]
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from roofline.course.cards import Card, CardSpec, check, spec_named
from roofline.lessons.amdahl.cards import Q7
from roofline.lessons.compute_bound.cards import Q4
from roofline.lessons.decode_floor.cards import Q1
from roofline.lessons.gpu_util.cards import Q5
from roofline.lessons.prefill_vs_decode.cards import Q2
from roofline.lessons.step_time.cards import Q3
from roofline.lessons.token_cost.cards import Q6

SPECS: Mapping[str, CardSpec] = MappingProxyType({s.qid: s for s in (Q1, Q2, Q3, Q4, Q5, Q6, Q7)})
QIDS: tuple[str, ...] = tuple(SPECS)

__all__ = ["QIDS", "SPECS", "card", "check", "shuffled_card"]


def card(qid: str, scenario_params: Mapping[str, Any] | None = None) -> Card:
    """Card ``qid`` (``"Q1"`` … ``"Q7"``, any case) for a scenario (see ``CardSpec.card``); without one, the
    study card's own scenario and round figures.

    >>> card("Q3").answer("step_ms").value       # the card's ≈ 6.0 ms
    6.0
    >>> round(card("Q3", {"batch": 64}).answer("step_ms").value, 2)    # 16.1 GB + 64 × 1,000 × 131 KB
    7.3
    """
    return spec_named(SPECS, qid).card(scenario_params)


def shuffled_card(qid: str, rng: np.random.Generator | int | None = None, max_tries: int = 200) -> Card:
    """Card ``qid`` with other numbers drawn from ``rng`` (a seeded generator, or a seed).

    >>> c = shuffled_card("Q6", np.random.default_rng(1))
    >>> c.is_default, all(r.correct for r in check(c, c.expected()))
    (False, True)
    """
    return spec_named(SPECS, qid).shuffled_card(rng, max_tries)
