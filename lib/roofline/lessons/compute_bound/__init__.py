"""Lesson 61 (notebooks/61_compute_bound.ipynb): what its notebook imports as ``lesson``."""

from roofline.course.widgets import Prediction
from roofline.lessons.compute_bound.cards import Q4
from roofline.lessons.compute_bound.lab import (
    FlipBatchVsContext,
    ThroughputVsLatency,
    per_kernel_figure,
    saturation_explorer,
    saturation_wall_figure,
)
from roofline.lessons.compute_bound.numbers import (
    context_limit_tokens,
    matmul_flip_batch,
    per_kernel_ceiling_tokens_per_s,
    per_kernel_decode,
    simulated_saturation,
    throughput_ceiling_tokens_per_s,
)
