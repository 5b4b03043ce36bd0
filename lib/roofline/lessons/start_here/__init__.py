"""Start here: notebooks/00_start_here.ipynb."""

from roofline.course.course_map import course_map, total_minutes
from roofline.lessons.start_here.lab import course_map_html, tour_explorer
from roofline.lessons.step_time import StepTimeVsBatch
