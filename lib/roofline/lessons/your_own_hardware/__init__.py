"""Your own hardware: notebooks/your_own_hardware.ipynb.

Everything the lesson shows, in one place: its numbers (``numbers``, numpy only), its figures,
readouts and explorer (``lab``), and the predict-then-check widgets it asks with.
"""

from roofline.course.widgets import Prediction, Reveal
from roofline.lessons.your_own_hardware.lab import (
    HOME_FORMATS,
    HOME_GPUS,
    PAD,
    Table,
    home_explorer,
    local_speeds_figure,
    local_speeds_html,
    local_speeds_table,
)
from roofline.lessons.your_own_hardware.numbers import (
    CONTEXT_TOKENS,
    LOCAL_ENGINE,
    LOCAL_MEMORY,
    PROMPT_TOKENS,
    local_speeds,
)
