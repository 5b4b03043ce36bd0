"""Lesson 04, the roofline: notebooks/04_roofline.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.roofline.lab import (
    HtmlTable,
    LessonRooflineChart,
    RooflineChart,
    ridge_table,
    roofline_explorer,
    roofline_readout,
)
from roofline.lessons.roofline.numbers import bytes_over_flops_trap, ridge_points, throughput_tokens_per_s
