"""Lesson 24, tensor parallelism: notebooks/24_tensor_parallel.ipynb."""

from roofline.course.widgets import Prediction
from roofline.lessons.tensor_parallel.lab import scaling_comparison_figure, tensor_parallel_explorer
from roofline.lessons.tensor_parallel.numbers import tensor_parallel_scaling, weight_bytes_per_gpu
