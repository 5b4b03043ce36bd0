"""Lesson 44 (notebooks/44_chunked_prefill.ipynb): what its notebook imports as ``lesson``."""

from roofline.course.widgets import Prediction
from roofline.lessons.chunked_prefill.lab import (
    ChunkTradeoffChart,
    PrefillTimeline,
    arrivals_tradeoff_figure,
    chunk_explorer,
)
from roofline.lessons.chunked_prefill.numbers import (
    ChunkScenario,
    chunk_size_tradeoff,
    chunk_tradeoff_under_arrivals,
    prompt_arrival_timeline,
)
from roofline.lessons.prefill_vs_decode import paste_freeze
