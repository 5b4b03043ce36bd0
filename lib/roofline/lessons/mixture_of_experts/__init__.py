"""Mixture of experts: notebooks/mixture_of_experts.ipynb."""

from roofline.course.widgets import Prediction
from roofline.lessons.mixture_of_experts.cards import MOE
from roofline.lessons.mixture_of_experts.lab import MoEReadVsBatch, moe_explorer, moe_readout
