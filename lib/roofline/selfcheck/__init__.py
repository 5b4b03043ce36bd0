"""Self-check cards for Pack 01 (speed physics): seven questions to answer aloud, then check with numbers.

Taught in notebooks/pack01_speed_physics.ipynb, which revisits lessons 01–04, 06, 09, 15, 16, 24, 25, 28,
44 and 59–61.

One module per card (``q1_decode_floor``, ``q2_prefill``, ``q3_batching``, ``q4_compute_bound``,
``q5_gpu_util``, ``q6_token_cost``, ``q7_launch_amdahl``), each declaring a ``CardSpec``: the data (title,
lessons, the study card's scenario, the answers with their tolerances, the known traps) and the code that
computes every answer and trap value with the roofline library. Around them:

- ``spec``: the spec types and the trap names; ``text``: numbers in words;
- ``cards``: ``card``, ``cards``, ``shuffled_card`` build a ``Card`` from its spec;
- ``judge``: ``check`` gives one ``Result`` per answer (right, a named trap, wrong, unanswered);
- ``render``: the card and the verdicts as HTML; ``ui``: ``CardWidget``, the card as an ipywidgets panel
  (the only module here that imports ipywidgets).

Answer values are in the unit the learner types (ms, tokens/s, %, ×, $). An empty answer is unanswered; a
typed 0 is judged like any number. Each answer accepts both the card's simplified figure (worked from the
round numbers it states) and the library's exact one (what the lessons print), and the verdict says which
it is (``Result.matched``: ``CARD_FIGURE`` or ``EXACT_FIGURE``).

>>> c = card("Q1")
>>> [(a.name, round(a.value, 1), a.unit) for a in c.answers][:2]
[('floor_ms', 4.8, 'ms'), ('ceiling_tps', 209.4, 'tokens/s')]
>>> [r.status for r in check(c, {"floor_ms": 4.8, "ceiling_tps": 2090})]
['right', 'trap', 'unanswered', 'unanswered']
>>> [r.matched for r in check(c, {"floor_ms": 4.48, "ceiling_tps": 209})][:2]     # lesson 02's, the card's
["the library's exact figure", "the card's simplified figure"]
>>> check(c, {"floor_ms": 16e9 / 989e12 * 1e3})[0].trap
'bytes ÷ FLOP/s'
"""

from roofline.selfcheck.cards import QIDS, SPECS, Card, card, cards, default_params, shuffled_card
from roofline.selfcheck.judge import Result, check, parse_answer
from roofline.selfcheck.render import results_html
from roofline.selfcheck.spec import (
    CARD_FIGURE,
    DEFAULT_REL_TOL,
    EXACT_FIGURE,
    LESSONS,
    TRAP_ADDED_SPEEDUPS,
    TRAP_B_TIMES_SLOWER,
    TRAP_BYTES_OVER_FLOPS,
    TRAP_BYTES_PER_WEIGHT,
    TRAP_CEILING_AS_TIME_LEFT,
    TRAP_DOLLARS_HOURS,
    TRAP_FORGOT_3600,
    TRAP_FORGOT_TWO,
    TRAP_FULL_B_GAIN,
    TRAP_GPU_UTIL,
    TRAP_INVERTED_MBU,
    TRAP_INVERTED_RIDGE,
    TRAP_MFU_FOR_MBU,
    TRAP_MULTIPLIED_SPEEDUPS,
    TRAP_NO_PROMPT_SCALING,
    TRAP_ONE_GPU_BANDWIDTH,
    TRAP_ONE_STREAM_PRICE,
    TRAP_ONE_USER_KV,
    TRAP_PART_SPEEDUP,
    TRAP_POWER_AS_UTIL,
    TRAP_POWER_OF_TEN,
    TRAP_PREFILL_AS_WEIGHT_READ,
    TRAP_SHARE_OF_TOTAL,
    TRAP_TOTAL_FOR_USER,
    Answer,
    AnswerSpec,
    CardCode,
    CardSpec,
    CardText,
    Trap,
    TrapSpec,
)
from roofline.selfcheck.text import fmt_value

__all__ = [
    "CARD_FIGURE",
    "DEFAULT_REL_TOL",
    "EXACT_FIGURE",
    "LESSONS",
    "QIDS",
    "SPECS",
    "TRAP_ADDED_SPEEDUPS",
    "TRAP_BYTES_OVER_FLOPS",
    "TRAP_BYTES_PER_WEIGHT",
    "TRAP_B_TIMES_SLOWER",
    "TRAP_CEILING_AS_TIME_LEFT",
    "TRAP_DOLLARS_HOURS",
    "TRAP_FORGOT_3600",
    "TRAP_FORGOT_TWO",
    "TRAP_FULL_B_GAIN",
    "TRAP_GPU_UTIL",
    "TRAP_INVERTED_MBU",
    "TRAP_INVERTED_RIDGE",
    "TRAP_MFU_FOR_MBU",
    "TRAP_MULTIPLIED_SPEEDUPS",
    "TRAP_NO_PROMPT_SCALING",
    "TRAP_ONE_GPU_BANDWIDTH",
    "TRAP_ONE_STREAM_PRICE",
    "TRAP_ONE_USER_KV",
    "TRAP_PART_SPEEDUP",
    "TRAP_POWER_AS_UTIL",
    "TRAP_POWER_OF_TEN",
    "TRAP_PREFILL_AS_WEIGHT_READ",
    "TRAP_SHARE_OF_TOTAL",
    "TRAP_TOTAL_FOR_USER",
    "Answer",
    "AnswerSpec",
    "Card",
    "CardCode",
    "CardSpec",
    "CardText",
    "Result",
    "Trap",
    "TrapSpec",
    "card",
    "cards",
    "check",
    "default_params",
    "fmt_value",
    "parse_answer",
    "results_html",
    "shuffled_card",
]
