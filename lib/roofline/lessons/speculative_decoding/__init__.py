"""Speculative decoding: notebooks/speculative_decoding.ipynb."""

from roofline.course.widgets import Prediction
from roofline.lessons.speculative_decoding.cards import SPEC
from roofline.lessons.speculative_decoding.lab import (
    ExpectedTokens,
    SpeculativeSpeedupVsBatch,
    speculative_explorer,
    speculative_readout,
)
