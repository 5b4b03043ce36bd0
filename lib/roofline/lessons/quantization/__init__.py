"""Quantization: notebooks/quantization.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.quantization.cards import QUANT
from roofline.lessons.quantization.lab import (
    PALETTE,
    QUANT_PRECISIONS,
    QuantizationVsBatch,
    quantization_explorer,
    quantization_readout,
    supported_precisions,
)
