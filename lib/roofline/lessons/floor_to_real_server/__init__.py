"""From the floor to a real server: notebooks/floor_to_real_server.ipynb."""

from roofline.course.widgets import Explorer, Prediction
from roofline.lessons.floor_to_real_server.lab import (
    AchievableVsBatch,
    achievable_explorer,
    achievable_readout,
    gap_budget_figure,
    measured_over_floor_figure,
)
