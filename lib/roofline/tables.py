"""Reading a checked table: one value by its TOML type, unit and range; one row against its dataclass; a
file of ``[[array]]`` rows, then the rules that span a row's fields.

A row is a dataclass whose fields say how the file gives them (``column``: the TOML key, its type, the
unit the file writes it in, the factor to SI, its range; ``count``, ``number`` and ``flag`` for the common
kinds). Every problem raises ``DataTableError`` naming the file, the row id and the field
(``table_error``). ``roofline.data`` declares the course's rows and tables with it.

>>> parse_number("80")
Traceback (most recent call last):
...
roofline.tables.BadValue: expected a number, got '80' (a string)
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from typing import Any

from roofline.errors import DataTableError
from roofline.files import read_regular_file

# --------------------------------------------------------------------------------------------------
# Reading one value: its TOML type, then its range and unit
# --------------------------------------------------------------------------------------------------


def table_error(file: str, row_id: str | None, field: str | None, problem: str) -> DataTableError:
    """A ``DataTableError`` whose message starts with where: file, row and field (each when known).

    The parts are kept as attributes too (``file``, ``row_id``, ``field``, ``problem``) for tools.

    >>> str(table_error("gpus.toml", "'h100-sxm'", "memory_gb", "must be more than 0 GB, got -80"))
    "gpus.toml, row 'h100-sxm', field 'memory_gb': must be more than 0 GB, got -80"
    """
    where = file
    if row_id is not None:
        where += f", row {row_id}"
    if field is not None:
        where += f", field {field!r}"
    error = DataTableError(f"{where}: {problem}")
    error.file, error.row_id, error.field, error.problem = file, row_id, field, problem
    return error


_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class BadValue(ValueError):
    """One value that breaks its field's rule; the loaders turn it into a ``DataTableError``."""


def _describe(value: Any) -> str:
    """A value as the TOML author wrote it, with its TOML type: ``true (a boolean)``, ``'80' (a string)``."""
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", dict: "a table"}
    kind = next((k for t, k in kinds.items() if isinstance(value, t)), type(value).__name__)
    try:
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
    except RecursionError:  # a value nested hundreds deep (a corrupted or hostile file)
        shown = "a deeply nested value"
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{shown} ({kind})"


# Value parsers: each checks the TOML type of one value and returns it as a plain Python value, or raises
# BadValue saying what it expected and what it got. ``Field.parse`` is one of these.


def parse_text(value: Any) -> str:
    """A non-empty string.

    >>> parse_text("NVLink 4")
    'NVLink 4'
    """
    if not isinstance(value, str) or not value.strip():
        raise BadValue(f"expected a non-empty string, got {_describe(value)}")
    return value


def parse_id(value: Any) -> str:
    """A lowercase id: the lookups lowercase what they are given, so an uppercase id could never be found."""
    if not isinstance(value, str) or not _ID.match(value):
        raise BadValue(
            f"expected a lowercase id (letters, digits, '.', '-', '_'; no spaces), got {_describe(value)}"
        )
    return value


def parse_url(value: Any) -> str:
    """The http(s) URL of a source."""
    if not isinstance(value, str) or not value.startswith(("https://", "http://")) or " " in value.strip():
        raise BadValue(f"expected the URL of a primary source (https://...), got {_describe(value)}")
    return value.strip()


def parse_bool(value: Any) -> bool:
    """A TOML boolean; the string ``"false"`` is refused (``bool("false")`` would be True).

    >>> parse_bool("false")
    Traceback (most recent call last):
    ...
    roofline.tables.BadValue: expected true or false (a TOML boolean, without quotes), got 'false' (a string)
    """
    if not isinstance(value, bool):
        raise BadValue(f"expected true or false (a TOML boolean, without quotes), got {_describe(value)}")
    return value


def parse_date(value: Any) -> str:
    """A date, as an ISO string: a TOML date (``2026-11-29``) or a string ``"2026-11-29"``."""
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, str) and _DATE.match(value):
        try:
            return datetime.date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise BadValue(f"expected a date YYYY-MM-DD, got {_describe(value)}")


def parse_number(value: Any) -> float:
    """A finite int or float, as a float; a boolean is refused (``float(True)`` would be 1.0).

    >>> parse_number(80)
    80.0
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadValue(f"expected a number, got {_describe(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise BadValue(f"expected a finite number, got {_describe(value)}")
    return number


def parse_integer(value: Any) -> int:
    """A TOML integer (``32.0`` and booleans are refused)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadValue(f"expected a whole number (a TOML integer, no decimal point), got {_describe(value)}")
    return value


def parse_text_list(value: Any) -> tuple[str, ...]:
    """A list of non-empty strings, as a tuple (may be empty).

    >>> parse_text_list(["meta-llama/Meta-Llama-3-8B"])
    ('meta-llama/Meta-Llama-3-8B',)
    """
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise BadValue(f"expected a list of non-empty strings, got {_describe(value)}")
    return tuple(value)


def parse_choice(*options: str) -> Callable[[Any], str]:
    """A parser accepting exactly one of ``options`` (strings).

    >>> parse_choice("rent", "own")("buy")
    Traceback (most recent call last):
    ...
    roofline.tables.BadValue: expected one of 'rent', 'own', got 'buy' (a string)
    """

    def parse(value: Any) -> str:
        if value not in options:
            raise BadValue(f"expected one of {', '.join(map(repr, options))}, got {_describe(value)}")
        return value

    return parse


def did_you_mean(key: str, known) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass(frozen=True)
class Bound:
    """The range an assumption of one kind may take, in the row's unit: ``minimum``/``above``/``maximum``
    (inclusive, exclusive, inclusive), ``whole`` for a count; ``says`` is the rule in words."""

    says: str
    minimum: float | None = None
    above: float | None = None
    maximum: float | None = None
    whole: bool = False

    def problem(self, value: float) -> str | None:
        """Why ``value`` breaks the bound, or None.

        >>> Bound("a fraction must be more than 0 and at most 1", above=0, maximum=1).problem(5.0)
        'a fraction must be more than 0 and at most 1, got 5'
        """
        broken = (
            (self.minimum is not None and value < self.minimum)
            or (self.above is not None and value <= self.above)
            or (self.maximum is not None and value > self.maximum)
            or (self.whole and not float(value).is_integer())
        )
        return f"{self.says}, got {value:g}" if broken else None


def column(parse=None, *, key=None, unit="", scale=1.0, minimum=None, above=None, maximum=None, keys=(),
           default=dataclasses.MISSING):  # fmt: skip
    """A dataclass field read from one TOML key (``key``, default the field's name): ``parse`` checks the TOML
    type (default ``parse_text``), ``scale`` converts the file's ``unit`` to SI (GB → bytes), and the bounds
    (``minimum`` inclusive, ``above`` exclusive, ``maximum`` inclusive) are in the file's unit. ``keys``
    makes it a table of numbers (``dense_tflops``) keyed by those names. With a ``default`` it is optional.

    >>> from roofline.data import GPU
    >>> f = dataclasses.fields(GPU)[4]
    >>> f.name, f.metadata["key"], convert(f, 80)
    ('memory_bytes', 'memory_gb', 80000000000.0)
    """
    meta = dict(parse=parse or parse_text, key=key, unit=unit, scale=scale, bounds=(minimum, above, maximum),
                keys=keys)  # fmt: skip
    return field(metadata=meta) if default is dataclasses.MISSING else field(default=default, metadata=meta)


def count(least: int = 1, most: int = 10**7, default=dataclasses.MISSING):
    """A whole-number field from ``least`` to ``most`` (layers, heads, sizes)."""
    return column(parse_integer, minimum=least, maximum=most, default=default)


def number(
    unit: str, scale: float = 1.0, *, most: float, key=None, zero=False, keys=(), default=dataclasses.MISSING
):
    """A number in ``unit``, more than 0 (``zero``: at least 0) and at most ``most``, stored after multiplying
    by ``scale``; with ``keys``, a table of such numbers."""
    low = dict(minimum=0) if zero else dict(above=0)
    return column(
        parse_number, key=key, unit=unit, scale=scale, maximum=most, keys=keys, default=default, **low
    )


def flag(default: bool = False):
    """An optional TOML boolean."""
    return column(parse_bool, default=default)


def convert(f: dataclasses.Field, value: Any, parse: Callable | None = None) -> Any:
    """``value`` for the dataclass field ``f`` (read with ``parse`` instead of the field's own, if given), in
    SI units, or ``BadValue`` saying what is wrong with it."""
    m = {**f.metadata, "parse": parse or f.metadata["parse"]}
    if m["keys"]:
        if not isinstance(value, dict) or not value:
            raise BadValue(f"expected an inline table like {{ bf16 = 989.0 }}, got {_describe(value)}")
        out = {}
        for k, v in value.items():
            if k not in m["keys"]:
                raise BadValue(
                    f"unknown key {k!r}{did_you_mean(k, m['keys'])}; known: {', '.join(m['keys'])}"
                )
            try:
                out[k] = _scalar(m, v)
            except BadValue as exc:
                raise BadValue(f"{k}: {exc}") from None
        return out
    return _scalar(m, value)


def _scalar(m: Mapping, value: Any) -> Any:
    unit = f" {m['unit']}" if m["unit"] else ""
    try:
        parsed = m["parse"](value)
    except BadValue as exc:
        raise BadValue(f"{exc} (the file gives it in {m['unit']})" if m["unit"] else str(exc)) from None
    if m["parse"] not in (parse_number, parse_integer):
        return parsed
    least, above, most = m["bounds"]
    if least is not None and parsed < least:
        raise BadValue(f"must be at least {least:g}{unit}, got {parsed:g}")
    if above is not None and parsed <= above:
        raise BadValue(f"must be more than {above:g}{unit}, got {parsed:g}")
    if most is not None and parsed > most:
        raise BadValue(f"must be at most {most:g}{unit}, got {parsed:g}")
    return parsed * m["scale"] if m["scale"] != 1.0 else parsed


# --------------------------------------------------------------------------------------------------
# Reading a table: every row against its dataclass, then the rules that span fields
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """One file: its name, the key of its ``[[array]]`` rows, the row kind for messages, the dataclass each
    row becomes, other allowed top-level keys, the rules that span fields (the first one a built row
    breaks, as ``(field, problem)``, or None), and whether a ``source`` may be a sentence instead of a URL
    (a learner's own rows: a measurement or a calibration has no URL)."""

    file: str
    array: str
    kind: str
    cls: type
    top_level: tuple[str, ...] = ()
    rules: Callable[[Any], tuple[str, str] | None] = lambda row: None
    sentence_sources: bool = False


MAX_TABLE_BYTES = 64 * 10**6  # the largest table or measured CSV (the shipped ones are under 1 MB)


def read_text_file(source: Traversable | str | os.PathLike, max_bytes: int = MAX_TABLE_BYTES) -> str:
    """``read_regular_file`` decoded as UTF-8 (a leading byte-order mark dropped): the text of a table,
    a measured CSV or a trace. Raises ``OSError`` or ``UnicodeDecodeError``.

    >>> from roofline.data import table_path
    >>> read_text_file(table_path("gpus.toml")).startswith("#")
    True
    """
    return read_regular_file(source, max_bytes).decode("utf-8-sig")


def parse_toml_file(source: Traversable, env_var: str | None = None) -> tuple[str, dict]:
    """The path of ``source`` for messages and its parsed TOML; a missing file, a special file, a file over
    ``MAX_TABLE_BYTES`` or a syntax error is a ``DataTableError`` naming the file (and ``env_var``, if that
    chose the directory)."""
    label = str(source)
    try:
        raw = read_regular_file(source, MAX_TABLE_BYTES)
    except OSError as exc:
        where = f" (set by {env_var})" if env_var else ""
        raise table_error(label, None, None, f"cannot read the table{where}: {exc.strerror or exc}") from None
    try:
        return label, tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise table_error(label, None, None, f"not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nesting level: ~1,000 levels exhaust the stack
        raise table_error(label, None, None, "nested too deeply to be a table") from None


def read_rows(directory: Traversable, table: Table, env_var: str | None = None) -> list:
    """Every row of ``table`` in ``directory``, checked against its dataclass's fields, converted to SI, in
    file order. Raises ``DataTableError`` (file, row id, field) at the first problem.

    >>> from roofline.data import GPU_TABLE, data_dir
    >>> [g.id for g in read_rows(data_dir(), GPU_TABLE)][:2]
    ['h100-sxm', 'h100-pcie']
    """
    label, doc = parse_toml_file(directory / table.file, env_var)
    known = (table.array, *table.top_level)
    for key in doc:
        if key not in known:
            problem = f"unknown top-level key{did_you_mean(key, known)}; expected [[{table.array}]] rows"
            raise table_error(label, None, key, problem)
    rows = doc.get(table.array)
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise table_error(label, None, table.array, f"expected one or more [[{table.array}]] tables")
    out, seen = [], {}
    for number, row in enumerate(rows, start=1):
        raw_id = row.get("id")
        row_id = repr(raw_id) if isinstance(raw_id, str) else f"#{number} (no valid id)"
        item = check_row(table, row, label, row_id)
        if item.id in seen:
            problem = f"duplicate id: rows #{seen[item.id]} and #{number} both use it"
            raise table_error(label, row_id, "id", problem)
        seen[item.id] = number
        out.append(item)
    return out


def check_row(table: Table, row: Mapping, label: str, row_id: str):
    """One row of ``table`` (a mapping of its TOML keys) checked and built: unknown keys, every field's type,
    unit and range, then the rules that span fields. ``label`` and ``row_id`` name it in the
    ``DataTableError``.

    >>> from roofline.data import GPU_TABLE
    >>> check_row(GPU_TABLE, {"id": "x"}, "my.toml", "'x'")
    Traceback (most recent call last):
    ...
    roofline.errors.DataTableError: my.toml, row 'x', field 'name': missing: every GPU row needs it
    """
    by_key = {f.metadata["key"] or f.name: f for f in dataclasses.fields(table.cls)}
    for key in row:
        if key not in by_key:
            raise table_error(label, row_id, key, f"unknown key{did_you_mean(key, by_key)}")
    values = {f.name: _field_value(table, f, key, row, label, row_id) for key, f in by_key.items()}
    item = table.cls(**values)
    broken = table.rules(item)
    if broken:
        raise table_error(label, row_id, *broken)
    return item


def _field_value(table: Table, f: dataclasses.Field, key: str, row: dict, label: str, row_id: str) -> Any:
    """The value of field ``f`` in ``row`` (its default if the row leaves it out and it has one)."""
    if key not in row:
        if f.default is dataclasses.MISSING:
            unit = f" (in {f.metadata['unit']})" if f.metadata["unit"] else ""
            raise table_error(label, row_id, key, f"missing: every {table.kind} row needs it{unit}")
        return f.default
    sentence = table.sentence_sources and f.name in ("source", "scheduler_source", "parameter_source")
    try:
        return convert(f, row[key], parse_text if sentence else None)
    except BadValue as exc:
        raise table_error(label, row_id, key, str(exc)) from None
