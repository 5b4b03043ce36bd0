"""Lesson 09, GPU-util is a duty cycle: notebooks/09_gpu_util.ipynb."""

from roofline.course.widgets import Prediction
from roofline.engines import card_server_params
from roofline.lessons.gpu_util.cards import Q5
from roofline.lessons.gpu_util.lab import UtilTimeline, utilization_explorer
from roofline.lessons.gpu_util.numbers import busy_time_fraction, decode_timeline, gpu_util, timeline_metrics
