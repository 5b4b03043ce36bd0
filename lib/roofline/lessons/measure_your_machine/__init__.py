"""Measure your machine: notebooks/measure_your_machine.ipynb."""

from roofline.course.widgets import Prediction
from roofline.lessons.measure_your_machine.lab import (
    compute_bound_batch,
    decode_vs_roofline,
    machine_roofline,
)
