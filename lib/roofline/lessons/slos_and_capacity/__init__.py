"""SLOs and capacity planning: notebooks/slos_and_capacity.ipynb."""

from roofline.course.readouts import table_html
from roofline.course.widgets import Prediction
from roofline.lessons.batching import latency_vs_load_figure
from roofline.lessons.slos_and_capacity.lab import BatchTimeline, timeline_explorer
