"""One helper for the layer packages: their modules load on first use, so ``from roofline import views``
costs nothing until ``views.phases`` is asked for (and numbers never pull in plotting by accident)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence


def submodules(package: str, path, fallback: Sequence[str] = ()) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: its submodules by name, imported on first use; other
    public names from the ``fallback`` submodules, the first that has them (``ui.Explorer`` is
    ``ui.widgets.Explorer``, ``ui.launch_explorer`` is ``ui.explorers.launch_explorer``).

    >>> getattr_ = submodules("roofline.lessons", __import__("roofline.lessons").lessons.__path__)
    >>> getattr_("kvcache").__name__
    'roofline.lessons.kvcache'
    """
    names = frozenset(m.name for m in pkgutil.iter_modules(path))

    def __getattr__(name: str):
        if name in names:
            return importlib.import_module(f"{package}.{name}")
        for submodule in fallback if not name.startswith("_") else ():
            module = importlib.import_module(f"{package}.{submodule}")
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
