"""Validating the serving simulator: notebooks/serving_validation.ipynb."""

from roofline.course.readouts import table_html
from roofline.course.widgets import Prediction
from roofline.lessons.serving_validation.lab import request_figure, residual_figure, validation_figure
from roofline.lessons.serving_validation.numbers import ttft_bracket, ttft_in_the_request
