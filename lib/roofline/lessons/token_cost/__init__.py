"""Lesson 01, what a token costs: notebooks/01_token_cost.ipynb."""

from roofline.course.widgets import Prediction
from roofline.lessons.token_cost.cards import Q6
from roofline.lessons.token_cost.lab import CostVsBatch, cost_explorer
