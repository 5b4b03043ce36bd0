"""Measure it yourself: this machine's roofline, a real numpy transformer and llama.cpp decoding on it.

Taught in notebooks/measure_your_machine.ipynb. ``bench`` (bandwidth, FLOP/s, ridge, overhead),
``transformer`` (a Llama-architecture decoder in numpy, timed against the roofline), ``userdata`` (save
the measurement as a user GPU row), ``accelerator`` (the same on PyTorch CUDA/MPS, when installed) and the
llama.cpp lab: ``gguf_model`` (the models), ``llamacpp`` (the engine), ``engine_lab`` (the run record) and
``engine_roofline`` (the record placed on the roofline).
"""
