"""Measure it yourself: this machine's roofline and a real numpy transformer decoding on it.

Taught in notebooks/measure_your_machine.ipynb. ``bench`` (bandwidth, FLOP/s, ridge, overhead),
``transformer`` (a Llama-architecture decoder in numpy, timed against the roofline), ``userdata`` (save
the measurement as a user GPU row) and ``accelerator`` (the same on PyTorch CUDA/MPS, when installed).
"""
