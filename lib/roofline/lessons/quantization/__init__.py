"""Quantization: notebooks/quantization.ipynb."""

from roofline.course.widgets import Prediction
from roofline.lessons.quantization.cards import QUANT
from roofline.lessons.quantization.lab import (
    QuantizationVsBatch,
    quantization_explorer,
    quantization_readout,
    supported_precisions,
)
