"""From the floor to a real server: notebooks/floor_to_real_server.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Explorer, Prediction, Reveal
from roofline.lessons.floor_to_real_server.lab import (
    BUDGET_COLORS,
    ENGINE_COLORS,
    REGIME_MARKERS,
    AchievableVsBatch,
    achievable_readout,
    gap_budget_figure,
    measured_over_floor_figure,
)
