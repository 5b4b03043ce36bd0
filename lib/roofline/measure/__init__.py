"""Measure it yourself: this machine's roofline and a real numpy transformer decoding on it (issue 15).

Taught in notebooks/measure_your_machine.ipynb. ``bench`` (bandwidth, FLOP/s, ridge, overhead),
``transformer`` (a Llama-architecture decoder in numpy, timed against the roofline), ``userdata`` (save
the measurement as a user GPU row) and ``accelerator`` (the same on PyTorch CUDA/MPS, when installed).
"""


def __getattr__(name: str):  # submodules load on first use: ``from roofline import measure; measure.bench``
    import importlib
    import pkgutil

    if name in {m.name for m in pkgutil.iter_modules(__path__)}:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
