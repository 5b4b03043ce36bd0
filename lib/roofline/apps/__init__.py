"""Apps on top of everything: the ``roofline`` CLI (``cli`` and its ``cli_<command>`` modules), the
``instructor`` app (Voilà) and the Jupyter server extension ``server_latency``.
"""

from __future__ import annotations

import importlib
import pkgutil

_MODULES = frozenset(m.name for m in pkgutil.iter_modules(__path__))


def __getattr__(name: str):  # ``from roofline import apps; apps.cli`` imports the module on first use
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULES])
