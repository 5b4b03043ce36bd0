"""The calibration pipeline: kernel timings and published runs in, the frozen tables the core reads out.

    kernel timings (data/measured/kernels/) ─ kernels, moe_kernels ─> data/calibration_kernels.csv
    published runs (data/measured/*.csv) ─ measurements ─> terms ─> fit ─> data/calibration.toml
                                                                   └─ validation ─> held-out errors

Taught in notebooks/calibration_validation.ipynb. ``tools/fit_calibration.py`` runs it; ``calibrate`` fits a
learner's own engine to a few measurements (``roofline calibrate``). Nothing here runs when the course
only reads an engine's numbers: ``roofline.engines`` reads the frozen tables.
"""
