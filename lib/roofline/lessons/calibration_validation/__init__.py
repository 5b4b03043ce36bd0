"""Calibration and its validation: notebooks/calibration_validation.ipynb."""

from roofline.course.widgets import Prediction
from roofline.lessons.calibration_validation.lab import (
    kernel_fit_explorer,
    kernel_fit_figure,
    residuals_figure,
)
from roofline.lessons.calibration_validation.numbers import kernel_table
