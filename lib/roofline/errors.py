"""The errors the library raises: each says what was wrong and, where it can, what would be right."""

from __future__ import annotations

import difflib


class RooflineError(ValueError):
    """Base class: every error this library raises on bad input is a ``ValueError``."""


class UnknownNameError(RooflineError, KeyError):
    """A GPU, model or precision id that the tables do not hold."""

    def __init__(self, kind: str, name: str, known: list[str]):
        close = difflib.get_close_matches(str(name).lower(), known, n=3, cutoff=0.4)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        self.kind, self.name, self.suggestions = kind, name, close
        super().__init__(f"Unknown {kind} {name!r}.{hint} Known: {', '.join(known)}.")

    def __str__(self) -> str:  # KeyError would otherwise print the repr of the message
        return self.args[0]


class InvalidConfigurationError(RooflineError):
    """A configuration that cannot exist: zero or negative sizes, fractions above 1, and so on."""


class UnsupportedPrecisionError(RooflineError):
    """The GPU has no tensor-core math at the precision asked for (e.g. FP8 on an A100)."""


class DoesNotFitError(InvalidConfigurationError):
    """Weights plus KV cache need more memory than the GPUs have."""


class ContextTooLongError(InvalidConfigurationError):
    """A context longer than the model's window (``max_context_tokens``): the model cannot read it."""


class ModelConfigError(RooflineError):
    """A model's config.json the library cannot read: the message names the file and the field."""


class DataTableError(RooflineError):
    """A row of a data table is malformed: the message names the file, the row id and the field."""
