"""Lesson 59 (notebooks/59_dashboard.ipynb): what its notebook imports as ``lesson``."""

from roofline.course.widgets import Prediction
from roofline.lessons.dashboard.lab import DashboardFigure, dashboard_explorer
from roofline.lessons.dashboard.numbers import (
    card_to_dashboard,
    dashboard,
    diagnose,
    simulated_latency,
    steady_state,
)
