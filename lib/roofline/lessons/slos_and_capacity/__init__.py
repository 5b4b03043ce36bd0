"""SLOs and capacity planning: notebooks/slos_and_capacity.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.figures import show
from roofline.course.readouts import table_html
from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.batching import latency_vs_load_figure
from roofline.lessons.slos_and_capacity.lab import (
    WAIT_COLOR,
    BatchTimeline,
    timeline_explorer,
    timeline_readout,
)
