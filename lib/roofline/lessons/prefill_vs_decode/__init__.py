"""Lesson 15 (notebooks/15_prefill_vs_decode.ipynb): what its notebook imports as ``lesson``."""

from roofline.course.widgets import Prediction
from roofline.lessons.prefill_vs_decode.cards import Q2
from roofline.lessons.prefill_vs_decode.lab import (
    PrefillVsPrompt,
    StallTimeline,
    prefill_explorer,
    stall_explorer,
)
from roofline.lessons.prefill_vs_decode.numbers import card_prefill_s, paste_freeze, prefill_stall
