"""A tool's JSON result file, read safely and field by field: the machinery under
``roofline.measure.benchmark_files``, which knows the tools' formats.

Reading: regular files only, at most ``MAX_FILE_BYTES`` (a directory, a device or a FIFO is refused before a
byte is read, so ``/dev/zero`` or a named pipe never hangs the reader), UTF-8 text, then one JSON value (an
object or an array of them) or JSON lines. Checking: a ``Record`` is one JSON object whose readers return a
checked value (a count, a finite number in some unit, a string, a list) or raise ``BenchmarkFileError``
naming the file, the record and the field, and saying what was expected. No physics here.

>>> r = Record("run.json", "record 1", 1, {"completed": 3, "duration": -1})
>>> r.count("completed", "completed requests")
3
>>> try:
...     r.number("duration", "seconds")
... except BenchmarkFileError as err:
...     print(err.field, "|", err.problem)
duration | expected seconds (a finite number, at least 0), got -1 (an integer)
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from roofline.errors import RooflineError
from roofline.files import read_regular_file

MAX_FILE_BYTES = 64 * 1024 * 1024  # a result file is kilobytes to a few megabytes; more is the wrong file
MAX_COUNT = 2**53  # tokens, requests, bytes, ns: above this a count is no longer exact as a float


class BenchmarkFileError(RooflineError):
    """A benchmark result file that cannot be read as its tool writes it. The message starts with where
    (file, record, field, each when known) and says what was expected; the parts are attributes too
    (``file``, ``record``, ``field``, ``problem``).

    >>> str(BenchmarkFileError("run.json", "record 1", "duration", "expected seconds, got -1 (an integer)"))
    "run.json, record 1, field 'duration': expected seconds, got -1 (an integer)"
    """

    def __init__(self, file: str, record: str | None, field: str | None, problem: str):
        where = file + (f", {record}" if record else "") + (f", field {field!r}" if field else "")
        self.file, self.record, self.field, self.problem = file, record, field, problem
        super().__init__(f"{where}: {problem}")


def _read_bytes(path: str | os.PathLike) -> bytes:
    """At most ``MAX_FILE_BYTES`` of a regular file; anything else (directory, device, FIFO) is refused
    before a byte is read, so ``/dev/zero`` or a named pipe never hangs the reader."""
    file = os.fspath(path)
    if os.path.isdir(file):
        raise BenchmarkFileError(file, None, None, "is a directory; give the path of one result file")
    try:
        return read_regular_file(file, MAX_FILE_BYTES)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        reason = getattr(exc, "strerror", None) or str(exc)
        raise BenchmarkFileError(file, None, None, f"cannot be read: {reason}") from None


def _decode(file: str, raw: bytes) -> str:
    """The file's text (UTF-8, an optional byte-order mark dropped)."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise BenchmarkFileError(
            file,
            f"line {line}",
            None,
            f"is not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})",
        ) from None


def _loads(text: str) -> Any:
    """``json.loads``; every way it can fail on a bad file becomes ``ValueError``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to be a result") from None
    except MemoryError:
        raise ValueError("too large to hold in memory") from None


def _split_records(file: str, text: str, supported: str) -> list[tuple[str, int, Any]]:
    """(label, number, value) for each record: the whole file if it is one JSON value (an object: one
    record; an array: one per item), else one per non-blank line (JSON lines). ``supported`` names the
    formats the caller reads, for the messages."""
    if not text.strip():
        raise BenchmarkFileError(file, None, None, f"is empty; expected a result file of {supported}")
    try:
        whole = _loads(text)
    except ValueError as exc:
        return _split_lines(file, text, exc, supported)
    if isinstance(whole, dict):
        return [("record 1", 1, whole)]
    if isinstance(whole, list):
        if not whole:
            raise BenchmarkFileError(file, None, None, "is an empty JSON array: it holds no test")
        return [(f"record {i}", i, item) for i, item in enumerate(whole, 1)]
    raise BenchmarkFileError(
        file,
        "record 1",
        None,
        f"expected a JSON object or array, got {describe(whole)}; supported: {supported}",
    )


def _split_lines(file: str, text: str, whole_error: ValueError, supported: str) -> list[tuple[str, int, Any]]:
    """One record per non-blank line. A first line that is not JSON means the file is not JSON at all (the
    whole-file error is reported); a later one is a broken record (often a truncated last line)."""
    records: list[tuple[str, int, Any]] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            value = _loads(line)
        except ValueError as exc:
            if not records:
                where = f"line {getattr(whole_error, 'lineno', number)}"
                problem = getattr(whole_error, "msg", str(whole_error))
                raise BenchmarkFileError(
                    file, where, None, f"is not valid JSON ({problem}); expected a result file of {supported}"
                ) from None
            problem = getattr(exc, "msg", str(exc))
            raise BenchmarkFileError(
                file, f"line {number}", None, f"is not a complete JSON object ({problem}); a truncated line?"
            ) from None
        records.append((f"line {number}", number, value))
    return records


# --------------------------------------------------------------------------------------------------
# One record: checked readers of its fields
# --------------------------------------------------------------------------------------------------


def describe(value: Any) -> str:
    """A JSON value as the file wrote it, with its JSON type: ``true (a boolean)``, ``'12' (a string)``."""
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"an object with {len(value)} keys"
    if value is None:
        return "null"
    kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    kind = next((k for t, k in kinds.items() if isinstance(value, t)), type(value).__name__)
    if isinstance(value, bool):
        shown = str(value).lower()
    elif isinstance(value, int) and abs(value) > MAX_COUNT:
        shown = f"a {len(str(abs(value)))}-digit number" if abs(value) < 10**4000 else "a huge number"
    else:
        shown = repr(value)
    return f"{shown[:57] + '...' if len(shown) > 60 else shown} ({kind})"


def _is_count(value: Any) -> bool:
    """A JSON whole number from 0 to ``MAX_COUNT`` (not a boolean, not ``12.0``)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _as_float(value: Any) -> float | None:
    """A JSON number as a float (NaN and infinities kept), ``None`` for anything else (booleans too)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:  # an integer too large for a float
        return None


class Record:
    """One JSON object of a file; each reader returns a checked value or raises ``BenchmarkFileError``
    naming the file, this record and the field."""

    def __init__(self, file: str, label: str, number: int, values: dict[str, Any]):
        self.file, self.label, self.index, self.values = file, label, number, values

    def error(self, field: str | None, problem: str) -> BenchmarkFileError:
        return BenchmarkFileError(self.file, self.label, field, problem)

    def key(self, *names: str) -> str:
        """The first of ``names`` the record has (a field one tool version renamed), else the first."""
        return next((name for name in names if name in self.values), names[0])

    def raw(self, key: str, expected: str, required: bool) -> Any:
        """The value of ``key``; ``None`` if absent or null and not required."""
        value = self.values.get(key)
        if value is None and required:
            got = "null" if key in self.values else "nothing (the key is missing)"
            raise self.error(key, f"expected {expected}, got {got}")
        return value

    def count(self, key: str, expected: str, minimum: int = 0, required: bool = True) -> int | None:
        """A whole number ≥ ``minimum`` (and ≤ ``MAX_COUNT``); booleans and ``12.0`` are refused."""
        value = self.raw(key, expected, required)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_COUNT:
            raise self.error(
                key, f"expected {expected} (a whole number, at least {minimum}), got {describe(value)}"
            )
        return value

    def number(
        self, key: str, expected: str, scale: float = 1.0, positive: bool = False, required: bool = True
    ) -> float | None:
        """A finite number ≥ 0 (> 0 if ``positive``) times ``scale`` (0.001 for the files' milliseconds)."""
        value = self.raw(key, expected, required)
        if value is None:
            return None
        number = _as_float(value)
        if number is None or not math.isfinite(number) or number < 0 or (positive and number == 0):
            bound = "more than 0" if positive else "at least 0"
            raise self.error(key, f"expected {expected} (a finite number, {bound}), got {describe(value)}")
        return number * scale

    def text(self, key: str, expected: str, required: bool = False) -> str | None:
        """A string (``None`` if absent or null and not required)."""
        value = self.raw(key, expected, required)
        if value is not None and not isinstance(value, str):
            raise self.error(key, f"expected {expected} (a string), got {describe(value)}")
        return value

    def request_rate(self, key: str = "request_rate") -> float | None:
        """Requests/s: a positive number, ``"inf"`` or JSON ``Infinity`` (all at once: ``math.inf``), or
        SGLang's ``"trace"`` (arrival times from a trace: ``None``)."""
        value = self.raw(key, 'a request rate (requests/s, or "inf")', required=True)
        if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
            return math.inf
        if isinstance(value, str) and value.strip().lower() == "trace":
            return None
        number = _as_float(value)
        if number is None or math.isnan(number) or number <= 0:
            raise self.error(
                key,
                f'expected a request rate (a number of requests/s above 0, or "inf"), got {describe(value)}',
            )
        return number

    def listed(self, key: str, expected: str, whole: bool) -> tuple | None:
        """A list of whole numbers (``whole``: tokens, ns) or of finite numbers ≥ 0 (seconds, tokens/s),
        as a tuple; ``None`` if absent or null."""
        value = self.values.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.error(key, f"expected a list of {expected}, got {describe(value)}")
        if whole:
            bad = [v for v in value if not _is_count(v)]
            result: tuple = tuple(value)
        else:
            floats = [_as_float(v) for v in value]
            bad = [v for v, f in zip(value, floats, strict=True) if f is None or not 0 <= f < math.inf]
            result = tuple(floats)
        if bad:
            kind = "whole numbers from 0" if whole else "finite numbers from 0"
            raise self.error(key, f"expected a list of {expected} ({kind}), found {describe(bad[0])}")
        return result

    def whole_number(self, key: str, expected: str, minimum: int = 0, required: bool = True) -> int | None:
        """A count written as a number (aiperf's ``request_count.avg`` is ``320.0``): whole, ≥ ``minimum``."""
        value = self.number(key, expected, required=required)
        if value is None:
            return None
        if value != int(value) or value < minimum or value > MAX_COUNT:
            raise self.error(key, f"expected {expected} (a whole number, at least {minimum}), got {value!r}")
        return int(value)


def flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects as one level of dotted keys: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def read_records(path: str | os.PathLike, supported: str) -> list[Record]:
    """The records of a result file, each a JSON object, checked as they are split (``supported`` names the
    formats the caller reads, for the messages)."""
    file = os.fspath(path)
    text = _decode(file, _read_bytes(file))
    records = []
    for label, number, value in _split_records(file, text, supported):
        if not isinstance(value, dict):
            raise BenchmarkFileError(
                file, label, None, f"expected a JSON object (one run or test), got {describe(value)}"
            )
        records.append(Record(file, label, number, value))
    return records
