"""Your own hardware: notebooks/your_own_hardware.ipynb."""

from roofline.course.widgets import Prediction
from roofline.lessons.your_own_hardware.lab import LocalSpeedsTable, home_explorer, local_speeds_figure
from roofline.lessons.your_own_hardware.numbers import local_speeds
