"""Start here: notebooks/00_start_here.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.course_map import course_map, total_minutes
from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.start_here.lab import course_map_html, tour_explorer
from roofline.lessons.step_time import StepTimeVsBatch
