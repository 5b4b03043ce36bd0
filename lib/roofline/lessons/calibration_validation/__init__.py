"""Calibration and its validation: notebooks/calibration_validation.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.calibration_validation.lab import (
    SHAPES,
    kernel_fit_explorer,
    kernel_fit_figure,
    residuals_figure,
)
from roofline.lessons.calibration_validation.numbers import kernel_origin, kernel_table
