"""Lesson 03, launch overhead: notebooks/03_launch_overhead.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.launch_overhead.lab import (
    SHARE_GRID_GPUS,
    LaunchBars,
    launch_case,
    launch_explorer,
    launch_readout,
    share_grid_figure,
)
from roofline.lessons.launch_overhead.numbers import (
    CARD_CPU_S_PER_LAUNCH,
    CARD_KERNELS_PER_STEP,
    LaunchBudget,
    LaunchHiding,
    kernels_per_step_estimate,
    launch_budget,
    launch_hiding,
    overhead_share,
    share_grid,
    step_time_with_launches_s,
)
