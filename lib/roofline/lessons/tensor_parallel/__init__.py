"""Lesson 24, tensor parallelism: notebooks/24_tensor_parallel.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.tensor_parallel.lab import (
    SpeedupVsGPUs,
    scaling_comparison_figure,
    tensor_parallel_case,
    tensor_parallel_explorer,
    tensor_parallel_readout,
)
from roofline.lessons.tensor_parallel.numbers import (
    GPU_COUNTS,
    TensorParallelScaling,
    tensor_parallel_scaling,
    weight_bytes_per_gpu,
)
