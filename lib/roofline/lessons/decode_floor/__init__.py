"""Lesson 02 (notebooks/02_decode_floor.ipynb): what its notebook imports as ``lesson``."""

from roofline.course.card_scenarios import card_figures
from roofline.course.widgets import Prediction
from roofline.lessons.decode_floor.cards import Q1
from roofline.lessons.decode_floor.lab import CeilingHeatmap, ceiling_explorer
from roofline.lessons.decode_floor.numbers import ceiling_table, decode_ceiling_tokens_per_s
