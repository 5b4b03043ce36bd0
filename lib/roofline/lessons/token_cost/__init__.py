"""Lesson 01, what a token costs: notebooks/01_token_cost.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.token_cost.cards import Q6
from roofline.lessons.token_cost.lab import CostVsBatch, cost_explorer
