"""Lesson 06 (notebooks/06_benchmarks_that_lie.ipynb): what its notebook imports as ``lesson``."""

from roofline.course.widgets import Prediction
from roofline.lessons.benchmarks_that_lie.lab import (
    CeilingVsBatch,
    burst_figure,
    file_figure,
    file_report,
    latency_figure,
    plausibility_explorer,
)
from roofline.lessons.benchmarks_that_lie.numbers import (
    benchmark_ttft,
    latency_summary,
    plausibility,
    reported_tokens_per_s,
    request_time_s,
    simulated_latencies_s,
    time_decode,
)
from roofline.measure.benchmark_diagnosis import diagnose_file
from roofline.measure.benchmark_files import example_path
