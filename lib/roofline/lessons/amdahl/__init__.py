"""Lesson 60 (notebooks/60_amdahl.ipynb): what its notebook imports as ``lesson``."""

from roofline.course.widgets import Prediction
from roofline.lessons.amdahl.cards import Q7
from roofline.lessons.amdahl.lab import amdahl_bars_figure, amdahl_explorer
from roofline.lessons.amdahl.numbers import (
    amdahl_breakdown,
    decode_profile,
    fmt_ceiling,
    naive_combined_speedups,
    profile_fractions,
    speedup_of_each_part,
)
from roofline.lessons.launch_overhead.numbers import (
    CARD_CPU_S_PER_LAUNCH,
    CARD_KERNELS_PER_STEP,
)  # the card's Q7
