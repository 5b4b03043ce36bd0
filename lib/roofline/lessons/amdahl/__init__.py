"""Lesson 60, amdahl's law and profiling: notebooks/60_amdahl.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.amdahl.cards import Q7
from roofline.lessons.amdahl.lab import AmdahlBars, amdahl_bars_figure, amdahl_explorer, amdahl_readout
from roofline.lessons.amdahl.numbers import (
    PART_COLORS,
    AmdahlBreakdown,
    amdahl_breakdown,
    decode_profile,
    fmt_ceiling,
    naive_combined_speedups,
    profile_fractions,
    speedup_of_each_part,
)
