"""Lesson 04, the roofline: notebooks/04_roofline.ipynb."""

from roofline.course.widgets import Prediction
from roofline.lessons.roofline.lab import LessonRooflineChart, ridge_table, roofline_explorer
from roofline.lessons.roofline.numbers import bytes_over_flops_trap, ridge_points, throughput_tokens_per_s
