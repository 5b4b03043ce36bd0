"""Lesson 25, batching: notebooks/25_batching.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.batching.lab import (
    QueueVsBatching,
    latency_vs_load_figure,
    serving_case,
    serving_explorer,
    serving_readout,
)
from roofline.lessons.batching.numbers import (
    HOCKEY_STICK_LOADS,
    OUTPUT_TOKEN_OPTIONS,
    USER_OPTIONS,
    USERS_SWEEP,
    ServingOutcome,
    batching_under_arrivals,
    gpu_upgrade_vs_batching,
    knee_load,
    latency_against_load,
    serve_continuous_batching,
    serve_one_at_a_time,
)
