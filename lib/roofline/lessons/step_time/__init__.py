"""Lesson 16, the step-time model: notebooks/16_step_time.ipynb."""

from roofline.course.card_scenarios import card_figures
from roofline.course.widgets import Prediction
from roofline.lessons.roofline.numbers import throughput_tokens_per_s
from roofline.lessons.step_time.cards import Q3
from roofline.lessons.step_time.lab import MemoryUse, StepTimeVsBatch, ThroughputVsBatch, step_time_explorer
from roofline.lessons.step_time.numbers import batching_gain, per_user_slowdown
