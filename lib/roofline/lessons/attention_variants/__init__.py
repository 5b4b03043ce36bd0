"""Attention variants: notebooks/attention_variants.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.figures import show
from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.attention_variants.cards import ATTN
from roofline.lessons.attention_variants.lab import (
    ATTENTION_MODELS,
    CONTEXT_SWEEP,
    KvPerUserVsContext,
    as_mqa,
    attention_explorer,
    attention_kind,
    attention_readout,
    kv_per_token_figure,
)
