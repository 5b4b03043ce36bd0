"""Lesson 44, chunked prefill: notebooks/44_chunked_prefill.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.chunked_prefill.lab import (
    ChunkTradeoffChart,
    PrefillTimeline,
    arrivals_tradeoff_figure,
    chunk_case,
    chunk_explorer,
    chunk_readout,
)
from roofline.lessons.chunked_prefill.numbers import (
    ARRIVAL_CHUNKS,
    CHUNK_OPTIONS,
    SWEEP_CHUNKS,
    ChunkScenario,
    ChunkSweep,
    ChunkTradeoff,
    ChunkUnderLoad,
    Timeline,
    chunk_attention_flops,
    chunk_size_sweep,
    chunk_size_tradeoff,
    chunk_tradeoff_under_arrivals,
    prompt_arrival_timeline,
)
from roofline.lessons.prefill_vs_decode import paste_freeze
