"""Lesson 02, the decode floor: notebooks/02_decode_floor.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.decode_floor.cards import Q1
from roofline.lessons.decode_floor.lab import CeilingHeatmap, ceiling_explorer, ceiling_readout
from roofline.lessons.decode_floor.numbers import (
    CEILING_COLOR_RANGE_TOKENS_PER_S,
    CeilingTable,
    ceiling_table,
    decode_ceiling_tokens_per_s,
)
