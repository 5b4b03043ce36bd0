"""Lesson 28, the KV cache: notebooks/28_kv_cache.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.kv_cache.lab import MaxBatchVsContext, kv_cache_explorer, kv_readout, kv_table_html
from roofline.lessons.kv_cache.numbers import (
    COMPARE_GPUS,
    COMPARE_KV_PRECISIONS,
    CONTEXT_SWEEP,
    compare_gpus_memory,
    gqa_factor,
    kv_table_rows,
    kv_token_capacity,
)
from roofline.lessons.step_time import MemoryUse
