"""Lesson 09, gPU-util is a duty cycle: notebooks/09_gpu_util.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.engines import card_server_params
from roofline.lessons.gpu_util.cards import Q5
from roofline.lessons.gpu_util.lab import UtilTimeline, utilization_explorer, utilization_readout
from roofline.lessons.gpu_util.numbers import (
    Timeline,
    TimelineMetrics,
    busy_time_fraction,
    decode_timeline,
    gpu_util,
    sample_busy,
    timeline_metrics,
)
