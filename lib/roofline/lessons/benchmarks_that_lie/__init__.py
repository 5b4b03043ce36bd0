"""Lesson 06, benchmarks that lie: notebooks/06_benchmarks_that_lie.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.benchmarks_that_lie.lab import (
    CeilingVsBatch,
    latency_figure,
    plausibility_explorer,
    plausibility_readout,
)
from roofline.lessons.benchmarks_that_lie.numbers import (
    EDGE_OF_POSSIBLE,
    AsyncStream,
    LatencySummary,
    Plausibility,
    Timing,
    latency_summary,
    plausibility,
    reported_tokens_per_s,
    request_time_s,
    simulated_latencies_s,
    time_decode,
)
