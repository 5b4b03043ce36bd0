"""Mixture of experts: notebooks/mixture_of_experts.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.mixture_of_experts.cards import MOE
from roofline.lessons.mixture_of_experts.lab import MOE_MODELS, MoEReadVsBatch, moe_explorer, moe_readout
