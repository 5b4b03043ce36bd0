"""Validating the serving simulator: notebooks/serving_validation.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.figures import show
from roofline.course.readouts import table_html
from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.serving_validation.lab import ENGINE_COLORS, residual_figure, validation_figure
