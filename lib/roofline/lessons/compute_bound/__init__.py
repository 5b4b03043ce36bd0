"""Lesson 61, when decode turns compute-bound: notebooks/61_compute_bound.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.compute_bound.cards import Q4
from roofline.lessons.compute_bound.lab import (
    PER_KERNEL_CONTEXTS,
    FlipBatchVsContext,
    ThroughputVsLatency,
    per_kernel_figure,
    saturation_explorer,
    saturation_readout,
    saturation_wall_figure,
)
from roofline.lessons.compute_bound.numbers import (
    CONTEXT_SWEEP,
    LABELLED_BATCHES,
    SATURATION_BATCHES,
    SATURATION_CONCURRENCY,
    PerKernel,
    SimulatedSaturation,
    context_limit_tokens,
    matmul_flip_batch,
    per_kernel_ceiling_tokens_per_s,
    per_kernel_decode,
    simulated_saturation,
    throughput_ceiling_tokens_per_s,
)
