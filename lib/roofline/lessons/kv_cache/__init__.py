"""Lesson 28, the KV cache: notebooks/28_kv_cache.ipynb."""

from roofline.course.widgets import Prediction
from roofline.lessons.kv_cache.lab import MaxBatchVsContext, kv_cache_explorer, kv_table_html
from roofline.lessons.kv_cache.numbers import compare_gpus_memory, gqa_factor, kv_token_capacity
from roofline.lessons.step_time import MemoryUse
