"""Lesson 03 (notebooks/03_launch_overhead.ipynb): what its notebook imports as ``lesson``."""

from roofline.course.card_scenarios import card_figures
from roofline.course.widgets import Prediction
from roofline.lessons.launch_overhead.lab import LaunchBars, launch_explorer, share_grid_figure
from roofline.lessons.launch_overhead.numbers import (
    CARD_CPU_S_PER_LAUNCH,
    CARD_KERNELS_PER_STEP,
    launch_budget,
    launch_hiding,
    share_grid,
)
