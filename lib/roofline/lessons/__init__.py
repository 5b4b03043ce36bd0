"""The lessons, one package per notebook: ``roofline.lessons.step_time`` is notebooks/16_step_time.ipynb.

A lesson package holds everything its notebook shows: ``numbers`` (the lesson's own formulas and tables,
numpy only, built on the core), ``lab`` (its figures, readouts and explorers) and the self-check cards it
asks. The notebook imports the core and its lesson, ``from roofline.lessons import step_time as lesson``,
and calls ``lesson.batching_gain``, ``lesson.StepTimeVsBatch``, ``lesson.step_time_explorer``.
"""
