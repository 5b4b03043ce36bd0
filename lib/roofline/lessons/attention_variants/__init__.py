"""Attention variants: notebooks/attention_variants.ipynb."""

from roofline.course.figures import show
from roofline.course.widgets import Prediction
from roofline.lessons.attention_variants.cards import ATTN
from roofline.lessons.attention_variants.lab import (
    KvPerUserVsContext,
    as_mqa,
    attention_explorer,
    attention_kind,
    attention_readout,
    kv_per_token_figure,
)
