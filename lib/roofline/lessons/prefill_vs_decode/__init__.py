"""Lesson 15, prefill vs decode: notebooks/15_prefill_vs_decode.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.prefill_vs_decode.cards import Q2
from roofline.lessons.prefill_vs_decode.lab import (
    PrefillVsPrompt,
    StallTimeline,
    prefill_case,
    prefill_explorer,
    prefill_readout,
    stall_explorer,
    stall_readout,
)
from roofline.lessons.prefill_vs_decode.numbers import (
    PASTE_CONTEXT_TOKENS,
    PASTE_STREAMING_USERS,
    PASTE_TOKENS,
    PROMPT_SWEEP,
    PasteFreeze,
    PrefillStall,
    card_prefill_s,
    paste_fits,
    paste_freeze,
    prefill_stall,
)
