"""Lesson 59, the dashboard: notebooks/59_dashboard.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.dashboard.lab import (
    DashboardFigure,
    dashboard_case,
    dashboard_explorer,
    dashboard_readout,
    dashboard_table,
)
from roofline.lessons.dashboard.numbers import (
    DEFAULT_TPOT_TARGET_S,
    DEFAULT_TTFT_TARGET_S,
    CardToDashboard,
    Dashboard,
    SteadyState,
    card_to_dashboard,
    dashboard,
    diagnose,
    simulated_latency,
    steady_state,
    step_timer,
)
