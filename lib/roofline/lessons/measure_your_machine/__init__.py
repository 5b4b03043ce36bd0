"""Measure your machine: notebooks/measure_your_machine.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.measure_your_machine.lab import (
    GFLOPS,
    compute_bound_batch,
    decode_vs_roofline,
    machine_roofline,
)
