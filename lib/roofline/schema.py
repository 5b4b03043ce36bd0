"""The schema language the data tables are checked with: one ``Field`` per key (its TOML type, the unit
the file writes it in, the factor to SI, its range), a ``Table`` per file, and ``read_rows``, which reads a
file's rows against its table and raises ``DataTableError`` naming the file, the row and the field.

The tables themselves (``GPU_TABLE``, ``MODEL_TABLE``, ...) and where they are found are in
``roofline.data``; this module knows no table.

>>> field = Field("memory_gb", parse_number, "GB", 1e9, above=0)
>>> field.convert(80)
80000000000.0
>>> field.convert(-80)
Traceback (most recent call last):
...
roofline.schema.BadValue: must be more than 0 GB, got -80
"""

from __future__ import annotations

import datetime
import difflib
import math
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, fields
from importlib.resources.abc import Traversable
from typing import Any

from roofline.errors import DataTableError


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


_REQUIRED = object()


class BadValue(ValueError):
    """One value that breaks its field's rule; the loader turns it into a DataTableError with file, row
    and field. (Not a RooflineError itself: it never leaves this module's loaders.)"""


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
    roofline.schema.BadValue: expected true or false (a TOML boolean, without quotes), got 'false' (a string)
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


@dataclass(frozen=True)
class Field:
    """One key of a table row: how to read it, check it and convert it to SI.

    ``parse`` checks the TOML type and returns a plain value; ``scale`` converts the file's ``unit`` to SI
    (e.g. GB → bytes); ``minimum``/``above``/``maximum`` bound the value in the file's unit (inclusive,
    exclusive, inclusive). ``attr`` is the dataclass attribute (defaults to ``key``). A field with a
    ``default`` is optional. ``each`` marks a table of numbers (``dense_tflops``) whose keys must come from
    ``keys`` and whose values each follow the numeric rules.
    """

    key: str
    parse: Callable[[Any], Any]
    unit: str = ""
    scale: float = 1.0
    minimum: float | None = None
    above: float | None = None
    maximum: float | None = None
    attr: str | None = None
    default: Any = _REQUIRED
    keys: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.attr or self.key

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def _check_range(self, number: float) -> None:
        unit = f" {self.unit}" if self.unit else ""
        if self.minimum is not None and number < self.minimum:
            raise BadValue(f"must be at least {self.minimum:g}{unit}, got {number:g}")
        if self.above is not None and number <= self.above:
            raise BadValue(f"must be more than {self.above:g}{unit}, got {number:g}")
        if self.maximum is not None and number > self.maximum:
            raise BadValue(f"must be at most {self.maximum:g}{unit}, got {number:g}")

    def convert(self, value: Any) -> Any:
        """The value in SI units, or ``BadValue`` saying what is wrong with it."""
        if self.keys:
            if not isinstance(value, dict) or not value:
                raise BadValue(f"expected an inline table like {{ bf16 = 989.0 }}, got {_describe(value)}")
            out = {}
            for k, v in value.items():
                if k not in self.keys:
                    raise BadValue(
                        f"unknown key {k!r}{did_you_mean(k, self.keys)}; known: {', '.join(self.keys)}"
                    )
                try:
                    out[k] = self._scalar(v)
                except BadValue as exc:
                    raise BadValue(f"{k}: {exc}") from None
            return out
        return self._scalar(value)

    def _scalar(self, value: Any) -> Any:
        try:
            parsed = self.parse(value)
        except BadValue as exc:
            raise BadValue(f"{exc} (the file gives it in {self.unit})" if self.unit else str(exc)) from None
        if self.parse in (parse_number, parse_integer):
            self._check_range(parsed)
            return parsed * self.scale if self.scale != 1.0 else parsed
        return parsed


def did_you_mean(key: str, known) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def count_field(key: str, *, least: int = 1, most: int = 10**7, default: Any = _REQUIRED) -> Field:
    """A whole-number field from ``least`` to ``most`` (layers, heads, sizes)."""
    return Field(key, parse_integer, minimum=least, maximum=most, default=default)


def positive_field(
    key: str, unit: str, scale: float = 1.0, attr: str | None = None, *, most: float, **kw: Any
) -> Field:
    """A positive number in ``unit`` (at most ``most``), stored as ``attr`` after multiplying by ``scale``."""
    return Field(key, parse_number, unit, scale, above=0, maximum=most, attr=attr, **kw)


def one_of(*options: str) -> Callable[[Any], str]:
    """A parser accepting exactly one of ``options`` (strings)."""

    def parse(value: Any) -> str:
        if value not in options:
            raise BadValue(f"expected one of {', '.join(map(repr, options))}, got {_describe(value)}")
        return value

    return parse


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
        low = (self.minimum is not None and value < self.minimum) or (
            self.above is not None and value <= self.above
        )
        high = self.maximum is not None and value > self.maximum
        if low or high or (self.whole and not float(value).is_integer()):
            return f"{self.says}, got {value:g}"
        return None


@dataclass(frozen=True)
class Table:
    """One file: its name, the key of its ``[[array]]`` rows, the row kind for messages, the row schema,
    the dataclass each row becomes, other allowed top-level keys and cross-field ``rules`` (a function of
    the built row returning ``(field, problem)`` pairs). ``read_rows(directory, table)`` reads one."""

    file: str
    array: str
    kind: str
    schema: tuple[Field, ...]
    cls: type
    top_level: tuple[str, ...] = ()
    rules: Callable[[Any], list[tuple[str, str]]] | None = None


def schema_matches_dataclass(table: Table) -> bool:
    """Whether the schema fills exactly the dataclass's fields (a test keeps the two in step).

    >>> from roofline import data
    >>> tables = (data.GPU_TABLE, data.MODEL_TABLE, data.PRICE_TABLE, data.ASSUMPTION_TABLE)
    >>> all(schema_matches_dataclass(t) for t in tables)
    True
    """
    names = [f.name for f in table.schema]
    return len(names) == len(set(names)) and set(names) == {f.name for f in fields(table.cls)}


def _read(directory: Traversable, table: Table, env_var: str | None = None) -> tuple[str, dict]:
    """The parsed TOML of one table and the label errors use for its file."""
    source = directory / table.file
    label = str(source)
    try:
        raw = source.read_bytes()
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
    """Every row of ``table`` in ``directory``, checked against its schema, converted to SI, in file order.

    Raises ``DataTableError`` (file, row id, field) at the first problem.

    >>> from roofline.data import GPU_TABLE, data_dir
    >>> [g.id for g in read_rows(data_dir(), GPU_TABLE)][:2]
    ['h100-sxm', 'h100-pcie']
    """
    label, doc = _read(directory, table, env_var)
    for key in doc:
        if key not in (table.array, *table.top_level):
            known = (table.array, *table.top_level)
            raise table_error(
                label,
                None,
                key,
                f"unknown top-level key{did_you_mean(key, known)}; expected [[{table.array}]] rows",
            )
    rows = doc.get(table.array)
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise table_error(label, None, table.array, f"expected one or more [[{table.array}]] tables")

    by_name = {f.key: f for f in table.schema}
    out, seen = [], {}
    for number, row in enumerate(rows, start=1):
        raw_id = row.get("id")
        row_id = repr(raw_id) if isinstance(raw_id, str) else f"#{number} (no valid id)"
        for key in row:
            if key not in by_name:
                raise table_error(label, row_id, key, f"unknown key{did_you_mean(key, by_name)}")
        values = {}
        for f in table.schema:
            if f.key not in row:
                if f.required:
                    unit = f" (in {f.unit})" if f.unit else ""
                    raise table_error(label, row_id, f.key, f"missing: every {table.kind} row needs it{unit}")
                values[f.name] = f.default
                continue
            try:
                values[f.name] = f.convert(row[f.key])
            except BadValue as exc:
                raise table_error(label, row_id, f.key, str(exc)) from None
        if values["id"] in seen:
            raise table_error(
                label, row_id, "id", f"duplicate id: rows #{seen[values['id']]} and #{number} both use it"
            )
        seen[values["id"]] = number
        item = table.cls(**values)
        for field_name, problem in table.rules(item) if table.rules else ():
            raise table_error(label, row_id, field_name, problem)
        out.append(item)
    return out
