"""Speculative decoding: notebooks/speculative_decoding.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.speculative_decoding.cards import SPEC
from roofline.lessons.speculative_decoding.lab import (
    ACCEPTANCES,
    SPECULATIVE_DEFAULTS,
    ExpectedTokens,
    SpeculativeSpeedupVsBatch,
    speculative_case,
    speculative_explorer,
    speculative_knobs,
    speculative_readout,
)
