"""Lesson 25 (notebooks/25_batching.ipynb): what its notebook imports as ``lesson``."""

from roofline.course.widgets import Prediction
from roofline.lessons.batching.lab import QueueVsBatching, latency_vs_load_figure, serving_explorer
from roofline.lessons.batching.numbers import (
    gpu_upgrade_vs_batching,
    knee_load,
    latency_against_load,
    serve_continuous_batching,
    serve_one_at_a_time,
)
