"""The GPU, model and price tables (``gpus.toml``, ``models.toml``, ``prices.toml``), validated on load.

The TOML files keep the units spec sheets print (GB, TB/s, TFLOPS); this module converts them once, here,
so everything downstream works in bytes, bytes/s and FLOP/s. Derived figures (ridge point, parameter
counts) are computed by the library, never stored. ``data/README.md`` documents every field. Taught
in lesson 02 (notebooks/02_decode_floor.ipynb), the first to read the tables; later lessons all use them.

**Validation.** Each table is described by one declarative schema (``GPU_SCHEMA``, ``MODEL_SCHEMA``,
``PRICE_SCHEMA``): one ``Field`` per key with its type, the unit the file writes it in, the factor to SI
and its allowed range. Loading checks every row against it: types (a quoted ``"false"`` is not a
boolean, ``true`` is not a number), ranges (no negative memory), unknown keys (with the closest known
key), missing keys, duplicate ids and a missing ``source`` or ``note``. Any problem raises
``DataTableError`` naming the file, the row id and the field. A new optional field is one line in the
schema plus one attribute in the dataclass (a test checks the two agree).

**Where the tables are found** (``data_dir()``), first match wins:

1. ``$ROOFLINE_DATA_DIR``, if set: your own tables (same schema) for "what if" studies;
2. the tables shipped inside the installed package, ``roofline/tables/`` (a wheel built with
   ``pip install .`` or ``uv build`` carries a copy of ``data/*.toml`` there);
3. the repository's ``data/`` folder (the editable install used for the course).

The tables are read once and cached; ``clear_cache()`` re-reads them (after changing
``ROOFLINE_DATA_DIR``). ``load_gpus(directory)`` and friends read a directory without the cache.

>>> gpu = get_gpu("h100-sxm")
>>> gpu.memory_bandwidth_bytes_per_s
3350000000000.0
>>> get_model("llama-3-8b").layers
32
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import functools
import importlib.resources
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from roofline.errors import RooflineError, UnknownNameError
from roofline.units import GB, TB, TFLOPS, GiB

try:
    from roofline.errors import DataTableError
except ImportError:  # pragma: no cover - an errors.py from before the class was added

    class DataTableError(RooflineError):
        """A row of a data table is malformed: the message names the file, the row id and the field."""


def _table_error(file: str, row_id: str | None, field: str | None, problem: str) -> DataTableError:
    """A ``DataTableError`` whose message starts with where: file, row and field (each when known).

    The parts are kept as attributes too (``file``, ``row_id``, ``field``, ``problem``) for tools.

    >>> str(_table_error("gpus.toml", "'h100-sxm'", "memory_gb", "must be more than 0 GB, got -80"))
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


ENV_VAR = "ROOFLINE_DATA_DIR"
TABLE_FILES = ("gpus.toml", "models.toml", "prices.toml")

# The tensor-core precisions a GPU row may quote a dense peak for (keys of ``dense_tflops``).
COMPUTE_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


# --------------------------------------------------------------------------------------------------
# Dataclasses (SI units)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GPU:
    """One accelerator, figures in SI units (see ``data/README.md`` for what each one is)."""

    id: str
    name: str
    vendor: str
    form_factor: str
    memory_bytes: float
    memory_type: str
    memory_bandwidth_bytes_per_s: float
    dense_flops_per_s: dict[str, float]  # precision -> dense peak FLOP/s (never the sparse figure)
    interconnect: str
    interconnect_bytes_per_s: float  # per GPU, both directions together, as vendors quote it
    power_w: float
    source: str
    note: str
    # The file's memory_gb is the vendor's printed figure; HBM, GDDR and unified memory are binary-sized,
    # so a row with memory_binary = true means GiB (80 GB on an H100 is 80 x 2^30 bytes). User rows saved
    # by ``roofline measure`` give decimal GB of RAM and leave it false.
    memory_binary: bool = False

    def __post_init__(self) -> None:
        if self.memory_binary:  # memory_bytes arrives as memory_gb x 1e9; the row says it is GiB
            object.__setattr__(self, "memory_bytes", self.memory_bytes / GB * GiB)

    def __hash__(self) -> int:  # the dict field makes the default hash fail; ids are unique
        return hash(self.id)


@dataclass(frozen=True)
class Model:
    """One transformer's architecture, from its published config."""

    id: str
    name: str
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied_embeddings: bool
    attention_bias: bool
    experts: int
    experts_per_token: int
    max_context_tokens: int
    published_parameters: float
    published_active_parameters: float | None
    source: str
    parameter_source: str
    note: str
    # Optional architecture fields (issues 10 and 12); the defaults reproduce a plain GQA transformer.
    sliding_window: int = 0  # tokens a sliding-window layer attends to and keeps (0: none)
    sliding_window_layers: int = 0  # how many of the layers slide (the rest attend to all T)
    layer_pattern: str = ""  # which layers slide, in words (config.json's layer_types)
    attention_sinks: bool = False  # one learned logit per head per layer (gpt-oss): H parameters, no KV
    q_lora_rank: int = 0  # MLA query compression rank (0: queries projected directly)
    kv_lora_rank: int = 0  # MLA latent width cached per token per layer (0: not MLA)
    qk_nope_head_dim: int = 0  # MLA per-head q/k dims without rotary position
    qk_rope_head_dim: int = 0  # MLA per-head q/k rotary dims; the key part is cached, shared by heads
    v_head_dim: int = 0  # MLA per-head value dims
    moe_intermediate_size: int = 0  # width of one expert's gated MLP (0: intermediate_size)
    shared_experts: int = 0  # experts every token uses, on top of the routed experts_per_token
    first_dense_layers: int = 0  # leading layers with a dense MLP of intermediate_size
    routing_groups: int = 1  # expert groups for group-limited routing (DeepSeek n_group)
    routing_groups_per_token: int = 1  # groups one token's experts may come from (DeepSeek topk_group)
    mtp_layers: int = 0  # multi-token-prediction modules shipped with the checkpoint (not in layers)
    published_mtp_parameters: float | None = None
    qk_norm: bool = False  # RMSNorm on q and k per head (Qwen3): 2 x head_dim parameters per layer
    attention_output_bias: bool = False  # o_proj has a bias (gpt-oss); attention_bias is q/k/v only
    expert_bias: bool = False  # expert matmuls have biases (gpt-oss)
    router_bias: bool = False  # the router has a bias of E values per MoE layer
    checkpoint_format: str = "bf16"  # the native release format, a weight-format id of physics.precision
    published_active_excludes_embedding: bool = False  # gpt-oss's active count leaves out the input table

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek): the KV cache holds a latent, not per-head K and V."""
        return self.kv_lora_rank > 0


@dataclass(frozen=True)
class Price:
    """An example rental price for one GPU, with its date and source."""

    id: str
    gpu: str
    usd_per_gpu_hour: float
    provider: str
    offering: str
    date: str
    source: str
    note: str


# --------------------------------------------------------------------------------------------------
# The schema: one Field per key
# --------------------------------------------------------------------------------------------------

_REQUIRED = object()


class BadValue(ValueError):
    """One value that breaks its field's rule; the loader turns it into a DataTableError with file, row
    and field. (Not a RooflineError itself: it never leaves this module's loaders.)"""


def _describe(value: Any) -> str:
    """A value as the TOML author wrote it, with its TOML type: ``true (a boolean)``, ``'80' (a string)``."""
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", dict: "a table"}
    kind = next((k for t, k in kinds.items() if isinstance(value, t)), type(value).__name__)
    shown = str(value).lower() if isinstance(value, bool) else repr(value)
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
    roofline.data.BadValue: expected true or false (a TOML boolean, without quotes), got 'false' (a string)
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
                        f"unknown key {k!r}{_did_you_mean(k, self.keys)}; known: {', '.join(self.keys)}"
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


def _did_you_mean(key: str, known) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _count(key: str, *, least: int = 1, most: int = 10**7, default: Any = _REQUIRED) -> Field:
    """A whole-number field from ``least`` to ``most`` (layers, heads, sizes)."""
    return Field(key, parse_integer, minimum=least, maximum=most, default=default)


def _positive(
    key: str, unit: str, scale: float = 1.0, attr: str | None = None, *, most: float, **kw: Any
) -> Field:
    """A positive number in ``unit`` (at most ``most``), stored as ``attr`` after multiplying by ``scale``."""
    return Field(key, parse_number, unit, scale, above=0, maximum=most, attr=attr, **kw)


# One line per key. An optional field is one line with a default, e.g.
#     _count("sliding_window", most=10**9, default=None),
#     _count("shared_experts", least=0, most=1_000, default=0),
# plus the attribute (typed, with the same default) at the end of the dataclass.
GPU_SCHEMA: tuple[Field, ...] = (
    Field("id", parse_id),
    Field("name", parse_text),
    Field("vendor", parse_text),
    Field("form_factor", parse_text),
    _positive("memory_gb", "GB", GB, "memory_bytes", most=1e5),
    Field("memory_type", parse_text),
    _positive("memory_bandwidth_tb_per_s", "TB/s", TB, "memory_bandwidth_bytes_per_s", most=1e3),
    _positive("dense_tflops", "TFLOPS", TFLOPS, "dense_flops_per_s", most=1e6, keys=COMPUTE_PRECISIONS),
    Field("interconnect", parse_text),
    # 0 where there is none to speak of (a single CPU or a laptop GPU saved by `roofline measure`)
    Field(
        "interconnect_gb_per_s",
        parse_number,
        "GB/s",
        GB,
        minimum=0,
        maximum=1e6,
        attr="interconnect_bytes_per_s",
    ),
    Field("power_w", parse_number, "W", minimum=0, maximum=1e5),  # 0: not known (a measured machine)
    Field("source", parse_url),
    Field("note", parse_text),
    Field("memory_binary", parse_bool, default=False),
)

MODEL_SCHEMA: tuple[Field, ...] = (
    Field("id", parse_id),
    Field("name", parse_text),
    _count("layers", most=10_000),
    _count("hidden_size"),
    _count("attention_heads", most=100_000),
    _count("kv_heads", most=100_000),
    _count("head_dim", most=100_000),
    _count("intermediate_size"),
    _count("vocab_size", most=10**8),
    Field("tied_embeddings", parse_bool, default=False),
    Field("attention_bias", parse_bool, default=False),
    _count("experts", most=100_000, default=1),
    _count("experts_per_token", most=100_000, default=1),
    _count("max_context_tokens", most=10**9),
    _positive("published_parameters", "parameters", most=1e15),
    _positive("published_active_parameters", "parameters", most=1e15, default=None),
    Field("source", parse_url),
    Field("parameter_source", parse_url),
    Field("note", parse_text),
    _count("sliding_window", least=0, most=10**9, default=0),
    _count("sliding_window_layers", least=0, most=10_000, default=0),
    Field("layer_pattern", parse_text, default=""),
    Field("attention_sinks", parse_bool, default=False),
    _count("q_lora_rank", least=0, default=0),
    _count("kv_lora_rank", least=0, default=0),
    _count("qk_nope_head_dim", least=0, most=100_000, default=0),
    _count("qk_rope_head_dim", least=0, most=100_000, default=0),
    _count("v_head_dim", least=0, most=100_000, default=0),
    _count("moe_intermediate_size", least=0, default=0),
    _count("shared_experts", least=0, most=1_000, default=0),
    _count("first_dense_layers", least=0, most=10_000, default=0),
    _count("routing_groups", most=100_000, default=1),
    _count("routing_groups_per_token", most=100_000, default=1),
    _count("mtp_layers", least=0, most=100, default=0),
    _positive("published_mtp_parameters", "parameters", most=1e15, default=None),
    Field("qk_norm", parse_bool, default=False),
    Field("attention_output_bias", parse_bool, default=False),
    Field("expert_bias", parse_bool, default=False),
    Field("router_bias", parse_bool, default=False),
    Field("checkpoint_format", parse_id, default="bf16"),
    Field("published_active_excludes_embedding", parse_bool, default=False),
)

PRICE_SCHEMA: tuple[Field, ...] = (
    Field("id", parse_id),
    Field("gpu", parse_id),
    _positive("usd_per_gpu_hour", "USD per GPU-hour", most=1e4),
    Field("provider", parse_text),
    Field("offering", parse_text),
    Field("date", parse_date),
    Field("source", parse_url),
    Field("note", parse_text),
)


def _model_rules(row: Model) -> list[tuple[str, str]]:
    """Checks that span fields: (field, problem) for each one broken."""
    problems = []
    if row.kv_heads > row.attention_heads:
        problems.append(("kv_heads", f"{row.kv_heads} KV heads exceed {row.attention_heads} attention heads"))
    if row.experts_per_token > row.experts:
        problems.append(("experts_per_token", f"{row.experts_per_token} exceeds experts = {row.experts}"))
    if row.sliding_window_layers > row.layers:
        problems.append(
            ("sliding_window_layers", f"{row.sliding_window_layers} exceeds layers = {row.layers}")
        )
    if (row.sliding_window > 0) != (row.sliding_window_layers > 0):
        problems.append(("sliding_window", "give both sliding_window and sliding_window_layers, or neither"))
    if row.first_dense_layers > row.layers:
        problems.append(("first_dense_layers", f"{row.first_dense_layers} exceeds layers = {row.layers}"))
    if row.kv_lora_rank and not (row.qk_rope_head_dim and row.qk_nope_head_dim and row.v_head_dim):
        problems.append(
            ("kv_lora_rank", "an MLA row needs qk_nope_head_dim, qk_rope_head_dim and v_head_dim")
        )
    return problems


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


GPU_TABLE = Table("gpus.toml", "gpu", "GPU", GPU_SCHEMA, GPU)
MODEL_TABLE = Table("models.toml", "model", "model", MODEL_SCHEMA, Model, rules=_model_rules)
PRICE_TABLE = Table("prices.toml", "price", "price", PRICE_SCHEMA, Price, top_level=("as_of",))
# A learner's own GPU rows (``roofline measure --save``): the same checks, but the source may be a sentence
# ("measured on this machine …"): a measurement has no URL.
USER_GPU_TABLE = dataclasses.replace(
    GPU_TABLE, schema=tuple(Field("source", parse_text) if f.key == "source" else f for f in GPU_SCHEMA)
)


def schema_matches_dataclass(table: Table) -> bool:
    """Whether the schema fills exactly the dataclass's fields (a test keeps the two in step).

    >>> all(schema_matches_dataclass(t) for t in (GPU_TABLE, MODEL_TABLE, PRICE_TABLE))
    True
    """
    names = [f.name for f in table.schema]
    return len(names) == len(set(names)) and set(names) == {f.name for f in fields(table.cls)}


# --------------------------------------------------------------------------------------------------
# Finding and reading the tables
# --------------------------------------------------------------------------------------------------


def _packaged_tables() -> Traversable | None:
    """``roofline/tables`` inside the installed package, if this install carries one."""
    try:
        tables = importlib.resources.files("roofline") / "tables"
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - roofline is always importable here
        return None
    return tables if tables.joinpath("gpus.toml").is_file() else None


def _repository_tables() -> Path:
    """The repository's ``data/`` folder, as seen from ``lib/roofline/data.py`` (editable install)."""
    return Path(__file__).resolve().parents[2] / "data"


def data_dir() -> Traversable:
    """Where the tables are read from: ``$ROOFLINE_DATA_DIR``, else the package's copy, else ``data/``.

    Returns a path-like object (a ``Path``, or a ``Traversable`` inside an installed package).

    >>> (data_dir() / "gpus.toml").is_file()
    True
    """
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else shipped_dir()


def shipped_dir() -> Traversable:
    """The tables that came with the library (the package's copy, else the repository's ``data/``).

    Unlike ``data_dir()`` this ignores ``$ROOFLINE_DATA_DIR``: for tables a user is not meant to replace.
    """
    return _packaged_tables() or _repository_tables()


def __getattr__(name: str):  # ``DATA_DIR`` kept for old callers; computed when asked, so never stale
    if name == "DATA_DIR":
        return data_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _read(directory: Traversable, table: Table) -> tuple[str, dict]:
    """The parsed TOML of one table and the label errors use for its file."""
    source = directory / table.file
    label = str(source)
    try:
        raw = source.read_bytes()
    except OSError as exc:
        where = f" (set by {ENV_VAR})" if os.environ.get(ENV_VAR) else ""
        raise _table_error(
            label, None, None, f"cannot read the table{where}: {exc.strerror or exc}"
        ) from None
    try:
        return label, tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise _table_error(label, None, None, f"not valid TOML: {exc}") from None


def read_rows(directory: Traversable, table: Table) -> list:
    """Every row of ``table`` in ``directory``, checked against its schema, converted to SI, in file order.

    Raises ``DataTableError`` (file, row id, field) at the first problem.

    >>> [g.id for g in read_rows(data_dir(), GPU_TABLE)][:2]
    ['h100-sxm', 'h100-pcie']
    """
    label, doc = _read(directory, table)
    for key in doc:
        if key not in (table.array, *table.top_level):
            known = (table.array, *table.top_level)
            raise _table_error(
                label,
                None,
                key,
                f"unknown top-level key{_did_you_mean(key, known)}; expected [[{table.array}]] rows",
            )
    rows = doc.get(table.array)
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise _table_error(label, None, table.array, f"expected one or more [[{table.array}]] tables")

    by_name = {f.key: f for f in table.schema}
    out, seen = [], {}
    for number, row in enumerate(rows, start=1):
        raw_id = row.get("id")
        row_id = repr(raw_id) if isinstance(raw_id, str) else f"#{number} (no valid id)"
        for key in row:
            if key not in by_name:
                raise _table_error(label, row_id, key, f"unknown key{_did_you_mean(key, by_name)}")
        values = {}
        for f in table.schema:
            if f.key not in row:
                if f.required:
                    unit = f" (in {f.unit})" if f.unit else ""
                    raise _table_error(
                        label, row_id, f.key, f"missing: every {table.kind} row needs it{unit}"
                    )
                values[f.name] = f.default
                continue
            try:
                values[f.name] = f.convert(row[f.key])
            except BadValue as exc:
                raise _table_error(label, row_id, f.key, str(exc)) from None
        if values["id"] in seen:
            raise _table_error(
                label, row_id, "id", f"duplicate id: rows #{seen[values['id']]} and #{number} both use it"
            )
        seen[values["id"]] = number
        item = table.cls(**values)
        for field_name, problem in table.rules(item) if table.rules else ():
            raise _table_error(label, row_id, field_name, problem)
        out.append(item)
    return out


def load_gpus(directory: Traversable | str | None = None) -> dict[str, GPU]:
    """Read and check ``gpus.toml`` from ``directory`` (default ``data_dir()``); GPUs by id, in file order.

    >>> load_gpus()["h100-sxm"].memory_bytes / 2**30   # "80 GB" of HBM is 80 GiB
    80.0
    """
    d = data_dir() if directory is None else _as_dir(directory)
    return {g.id: g for g in read_rows(d, GPU_TABLE)}


def load_models(directory: Traversable | str | None = None) -> dict[str, Model]:
    """Read and check ``models.toml`` from ``directory`` (default ``data_dir()``); models by id.

    >>> load_models()["llama-3-8b"].kv_heads
    8
    """
    d = data_dir() if directory is None else _as_dir(directory)
    return {m.id: m for m in read_rows(d, MODEL_TABLE)}


def load_prices(
    directory: Traversable | str | None = None, gpu_ids: Mapping[str, Any] | None = None
) -> dict[str, Price]:
    """Read and check ``prices.toml``; every row's ``gpu`` must be a GPU id (of ``gpu_ids`` if given).

    >>> load_prices()["h100-example-3usd"].usd_per_gpu_hour
    3.0
    """
    d = data_dir() if directory is None else _as_dir(directory)
    known = load_gpus(d) if gpu_ids is None else gpu_ids
    table = {}
    for p in read_rows(d, PRICE_TABLE):
        if p.gpu not in known:
            raise _table_error(
                str(d / PRICE_TABLE.file),
                repr(p.id),
                "gpu",
                f"unknown GPU {p.gpu!r}{_did_you_mean(p.gpu, known)}; it must be an id of gpus.toml",
            )
        table[p.id] = p
    return table


def _as_dir(directory: Traversable | str) -> Traversable:
    return Path(directory) if isinstance(directory, str | os.PathLike) else directory


# --------------------------------------------------------------------------------------------------
# Cached tables and lookups (the public API)
# --------------------------------------------------------------------------------------------------


def user_data_dir() -> Path:
    """Where a learner's own tables live (``roofline measure --save``): ``$SPEED_PHYSICS_HOME``, else
    ``$XDG_CONFIG_HOME/speed-physics``, else ``~/.config/speed-physics``. Never the project's ``data/``."""
    if os.environ.get("SPEED_PHYSICS_HOME"):
        return Path(os.environ["SPEED_PHYSICS_HOME"]).expanduser()
    if os.environ.get("XDG_CONFIG_HOME"):
        return Path(os.environ["XDG_CONFIG_HOME"]).expanduser() / "speed-physics"
    return Path.home() / ".config" / "speed-physics"


@functools.cache
def gpus() -> dict[str, GPU]:
    """All GPUs by id, in file order, then the user's own rows (``user_data_dir()/gpus.toml``, same
    schema and checks); a user id that repeats a project id is an error naming both files."""
    table = load_gpus()
    user_dir = user_data_dir()
    if (user_dir / "gpus.toml").is_file():
        for g in read_rows(user_dir, USER_GPU_TABLE):
            if g.id in table:
                raise DataTableError(
                    f"{user_dir / 'gpus.toml'}, row {g.id!r}: the project's gpus.toml "
                    f"({data_dir()}) has this id too; rename your row"
                )
            table[g.id] = g
    return table


@functools.cache
def models() -> dict[str, Model]:
    """All models by id, in file order."""
    return load_models()


@functools.cache
def prices() -> dict[str, Price]:
    """All example prices by id."""
    return load_prices(gpu_ids=gpus())


def clear_cache() -> None:
    """Forget the loaded tables, so the next lookup re-reads them (e.g. after setting ROOFLINE_DATA_DIR)."""
    for loader in (gpus, models, prices):
        loader.cache_clear()


def get_gpu(gpu: str | GPU) -> GPU:
    """Look a GPU up by id (objects pass through); an unknown id raises with the closest ids.

    >>> get_gpu("h100").id
    Traceback (most recent call last):
    ...
    roofline.errors.UnknownNameError: Unknown GPU 'h100'. Did you mean ...'h100-sxm'...
    """
    if isinstance(gpu, GPU):
        return gpu
    table = gpus()
    key = str(gpu).strip().lower()
    if key not in table:
        raise UnknownNameError("GPU", gpu, list(table))
    return table[key]


def get_model(model: str | Model) -> Model:
    """Look a model up by id (objects pass through); an unknown id raises with the closest ids.

    >>> get_model("llama3-8b")
    Traceback (most recent call last):
    ...
    roofline.errors.UnknownNameError: Unknown model 'llama3-8b'. Did you mean 'llama-3-8b'...
    """
    if isinstance(model, Model):
        return model
    table = models()
    key = str(model).strip().lower()
    if key not in table:
        raise UnknownNameError("model", model, list(table))
    return table[key]


def get_price(price_id: str) -> Price:
    """Look an example price up by id.

    >>> get_price("h100-example-3usd").gpu
    'h100-sxm'
    """
    table = prices()
    key = str(price_id).strip().lower()
    if key not in table:
        raise UnknownNameError("price", price_id, list(table))
    return table[key]
