"""The data tables (``gpus.toml``, ``models.toml``, ``prices.toml``, ``assumptions.toml``, ``engines.toml``),
validated on load.

The TOML files keep the units spec sheets print (GB, TB/s, TFLOPS); this module converts them once, here,
so everything downstream works in bytes, bytes/s and FLOP/s. Derived figures (ridge point, parameter
counts) are computed by the library, never stored. ``data/README.md`` documents every field. Taught
in lesson 02 (notebooks/02_decode_floor.ipynb), the first to read the tables; later lessons all use them.

**Validation** (``roofline.tables``). Each row is a dataclass whose fields say how the file gives them
(``column``: the TOML key, its type, the unit the file writes it in, the factor to SI, its range). Loading
checks every row: types (a quoted ``"false"`` is not a boolean, ``true`` is not a number), ranges (no
negative memory), unknown keys (with the closest known key), missing keys, duplicate ids and a missing
``source`` or ``note``, then the rules that span fields. Any problem raises ``DataTableError`` naming the
file, the row id and the field. A new optional field is one typed attribute with a default.

**Where the tables are found** (``data_dir()``), first match wins:

1. ``$ROOFLINE_DATA_DIR``, if set: your own tables (same fields) for "what if" studies;
2. the tables shipped inside the installed package, ``roofline/tables/`` (a wheel built with
   ``pip install .`` or ``uv build`` carries a copy of ``data/*.toml`` there);
3. the repository's ``data/`` folder (the editable install used for the course).

The tables are read once, on first use (importing ``roofline`` reads none), and cached; ``clear_cache()``
re-reads them (after changing ``ROOFLINE_DATA_DIR``). ``load_gpus(directory)`` and friends read a
directory without the cache.

>>> gpu = get_gpu("h100-sxm")
>>> gpu.memory_bandwidth_bytes_per_s
3350000000000.0
>>> get_model("llama-3-8b").layers
32
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

import roofline.model_config as model_config
from roofline.errors import DataTableError, ModelConfigError, RooflineError, UnknownNameError
from roofline.tables import (
    Bound,
    Table,
    check_row,
    column,
    count,
    did_you_mean,
    flag,
    number,
    parse_choice,
    parse_date,
    parse_id,
    parse_number,
    parse_text_list,
    parse_toml_file,
    parse_url,
    read_rows,
    table_error,
)
from roofline.units import GB, TB, TFLOPS, GiB

ENV_VAR = "ROOFLINE_DATA_DIR"
MEASURED_DIR = "measured"  # third-party measurements (CSV), read by roofline.calibration.measurements

# The tensor-core precisions a GPU row may quote a dense peak for (keys of ``dense_tflops``).
COMPUTE_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

# Each assumption names its kind; the kind fixes the physical range (a corrupted or what-if table cannot
# widen it: the bound lives here, not in the row).
ASSUMPTION_KINDS: dict[str, Bound] = {
    "fraction": Bound("a fraction must be more than 0 and at most 1", above=0, maximum=1),
    "duration_s": Bound("an overhead or latency must be from 0 to 3600 s", minimum=0, maximum=3600),
    "target_s": Bound("a latency target must be more than 0 and at most 3600 s", above=0, maximum=3600),
    "bytes": Bound("a memory reservation must be from 0 to 1e15 bytes", minimum=0, maximum=1e15),
    "element_bytes": Bound("bytes per value must be more than 0 and at most 8", above=0, maximum=8),
    "count": Bound("a count must be a whole number from 1 to 1e9", minimum=1, maximum=1e9, whole=True),
    "years": Bound("a lifetime must be more than 0 and at most 50 years", above=0, maximum=50),
    "hours_per_day": Bound("hours of use a day must be more than 0 and at most 24", above=0, maximum=24),
    "usd_per_kwh": Bound(
        "an electricity price must be more than 0 and at most 10 USD/kWh", above=0, maximum=10
    ),
}


# --------------------------------------------------------------------------------------------------
# The rows (SI units); each field says how its TOML key is read
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class GPU:
    """One accelerator, figures in SI units (see ``data/README.md`` for what each one is)."""

    id: str = column(parse_id)
    name: str = column()
    vendor: str = column()
    form_factor: str = column()
    memory_bytes: float = number("GB", GB, key="memory_gb", most=1e5)
    memory_type: str = column()
    memory_bandwidth_bytes_per_s: float = number("TB/s", TB, key="memory_bandwidth_tb_per_s", most=1e3)
    # precision -> dense peak FLOP/s (never the sparse figure)
    dense_flops_per_s: dict[str, float] = number(
        "TFLOPS", TFLOPS, key="dense_tflops", most=1e6, keys=COMPUTE_PRECISIONS
    )
    interconnect: str = column()
    # per GPU, both directions together, as vendors quote it; 0 where there is none (a measured laptop)
    interconnect_bytes_per_s: float = number("GB/s", GB, key="interconnect_gb_per_s", most=1e6, zero=True)
    power_w: float = number("W", most=1e5, zero=True)  # 0: not known (a measured machine)
    source: str = column(parse_url)
    note: str = column()
    # The file's memory_gb is the vendor's printed figure; HBM, GDDR and unified memory are binary-sized,
    # so a row with memory_binary = true means GiB (80 GB on an H100 is 80 x 2^30 bytes). User rows saved
    # by ``roofline measure`` give decimal GB of RAM and leave it false.
    memory_binary: bool = flag()

    def __post_init__(self) -> None:
        if self.memory_binary:  # memory_bytes arrives as memory_gb x 1e9; the row says it is GiB
            object.__setattr__(self, "memory_bytes", self.memory_bytes / GB * GiB)

    def __hash__(self) -> int:  # the dict field makes the default hash fail; ids are unique
        return hash(self.id)


@dataclass(frozen=True, kw_only=True)
class Model:
    """One transformer's architecture, from its published config."""

    id: str = column(parse_id)
    name: str = column()
    layers: int = count(most=10_000)
    hidden_size: int = count()
    attention_heads: int = count(most=100_000)
    kv_heads: int = count(most=100_000)
    head_dim: int = count(most=100_000)
    intermediate_size: int = count()
    vocab_size: int = count(most=10**8)
    tied_embeddings: bool = flag()
    attention_bias: bool = flag()
    experts: int = count(most=100_000, default=1)
    experts_per_token: int = count(most=100_000, default=1)
    max_context_tokens: int = count(most=10**9)
    published_parameters: float | None = number("parameters", most=1e15, default=None)  # None: not published
    published_active_parameters: float | None = number("parameters", most=1e15, default=None)
    source: str = column(parse_url)
    parameter_source: str = column(parse_url)
    note: str = column()
    # Optional architecture fields; the defaults reproduce a plain GQA transformer.
    sliding_window: int = count(0, 10**9, default=0)  # tokens a sliding-window layer attends to and keeps
    sliding_window_layers: int = count(0, 10_000, default=0)  # how many of the layers slide
    layer_pattern: str = column(default="")  # which layers slide, in words (config.json's layer_types)
    attention_sinks: bool = flag()  # one learned logit per head per layer (gpt-oss): H parameters, no KV
    q_lora_rank: int = count(0, default=0)  # MLA query compression rank (0: queries projected directly)
    kv_lora_rank: int = count(0, default=0)  # MLA latent width cached per token per layer (0: not MLA)
    qk_nope_head_dim: int = count(0, 100_000, default=0)  # MLA per-head q/k dims without rotary position
    qk_rope_head_dim: int = count(0, 100_000, default=0)  # MLA rotary dims; the key part is cached, shared
    v_head_dim: int = count(0, 100_000, default=0)  # MLA per-head value dims
    moe_intermediate_size: int = count(0, default=0)  # width of one expert's gated MLP (0: intermediate_size)
    shared_experts: int = count(0, 1_000, default=0)  # experts every token uses, beside the routed ones
    first_dense_layers: int = count(0, 10_000, default=0)  # leading layers with a dense MLP
    routing_groups: int = count(1, 100_000, default=1)  # expert groups for group-limited routing (n_group)
    routing_groups_per_token: int = count(1, 100_000, default=1)  # groups a token's experts may come from
    mtp_layers: int = count(0, 100, default=0)  # multi-token-prediction modules shipped with the checkpoint
    published_mtp_parameters: float | None = number("parameters", most=1e15, default=None)
    qk_norm: bool = flag()  # RMSNorm on q and k per head (Qwen3): 2 x head_dim parameters per layer
    attention_output_bias: bool = flag()  # o_proj has a bias (gpt-oss); attention_bias is q/k/v only
    expert_bias: bool = flag()  # expert matmuls have biases (gpt-oss)
    router_bias: bool = flag()  # the router has a bias of E values per MoE layer
    checkpoint_format: str = column(parse_id, default="bf16")  # the release format, a weight-format id
    published_active_excludes_embedding: bool = flag()  # gpt-oss's active count leaves out the input table
    published_active_excludes_lm_head: bool = flag()  # MiniMax's leaves out the output projection as well
    hf_ids: tuple[str, ...] = column(parse_text_list, default=())  # Hugging Face repositories of this shape

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek): the KV cache holds a latent, not per-head K and V."""
        return self.kv_lora_rank > 0


@dataclass(frozen=True, kw_only=True)
class Price:
    """What one GPU-hour of ``gpu`` costs, with its date and source: ``kind`` ``"rent"``, a listed on-demand
    price per GPU; ``kind`` ``"own"``, a GPU people buy, its ``purchase_usd`` costed per hour of use by
    ``roofline.pricing``."""

    id: str = column(parse_id)
    gpu: str = column(parse_id)
    # for an "own" row: derived by roofline.pricing, never stored in the file
    usd_per_gpu_hour: float | None = number("USD per GPU-hour", most=1e4, default=None)
    provider: str = column()
    offering: str = column()
    date: str = column(parse_date)
    source: str = column(parse_url)
    note: str = column()
    kind: str = column(parse_choice("rent", "own"), default="rent")  # a listed hourly price, or bought
    purchase_usd: float | None = number("USD", most=1e7, default=None)  # "own" rows: the price paid, USD


@dataclass(frozen=True, kw_only=True)
class Assumption:
    """One assumed number (``assumptions.toml``): ``value`` in ``unit``, what it means and why this value.

    ``kind`` names its physical bound (``ASSUMPTION_KINDS``): a fraction is in (0, 1], an overhead is at
    least 0, a count a whole number of at least 1, and so on. ``roofline.assumptions`` reads it.
    """

    id: str = column(parse_id)
    value: float = column(parse_number)
    unit: str = column()
    kind: str = column(parse_choice(*ASSUMPTION_KINDS))
    meaning: str = column()
    reason: str = column()
    used_by: str = column()


@dataclass(frozen=True, kw_only=True)
class Engine:
    """One inference engine as the library models it (``engines.toml``); ``roofline.engines`` looks it up.

    ``kind`` is ``"ideal"`` (the roofline floor) or ``"calibrated"`` (fitted in ``calibration.toml`` under
    this id), ``version`` the software the calibration represents, ``parallel`` how it splits a model over
    GPUs (every matrix, or the layers). The scheduler fields are its documented serving defaults.
    """

    id: str = column(parse_id)
    name: str = column()
    kind: str = column(parse_choice("ideal", "calibrated"))
    parallel: str = column(parse_choice("tensor", "pipeline"))
    version: str = column()
    aliases: tuple[str, ...] = column(parse_text_list, default=())
    # "decode-first" (chunked prefill rides in decode steps) or "prefill-first"
    scheduler: str = column(parse_choice("decode-first", "prefill-first"))
    token_budget: int = count(most=10**7)  # tokens one step may carry (max_num_batched_tokens and the like)
    max_sequences: int = count(most=10**6)  # sequences one step may carry (max_num_seqs)
    chunk_tokens: int = count(most=10**7)  # largest prompt chunk per step, when chunked prefill is on
    scheduler_source: str = column(parse_url)
    source: str = column(parse_url)
    note: str = column()
    chunked_prefill: bool = flag(True)  # False: every prompt runs whole in one step
    whole_prompt_must_fit: bool = flag()  # unchunked: a prompt waits until the step's budget holds all of it
    # "prompt" (grows; a full cache preempts) or "prompt+output" (never)
    kv_reservation: str = column(parse_choice("prompt", "prompt+output"), default="prompt")
    pass_tokens: int = count(0, 10**7, default=0)  # a step runs in passes of at most this many tokens; 0: one
    # Whose kernel timings (data/measured/kernels/) describe this engine's GEMMs and attention: an engine id
    # with timings ("vllm", "tensorrt-llm", "sglang"), or "" when its kernels are fitted end to end.
    kernels: str = column(parse_choice("", "vllm", "tensorrt-llm", "sglang"), default="")
    # The GPUs (ids) where this engine is what people run: an explorer's engine menu starts on it there.
    default_on: tuple[str, ...] = column(parse_text_list, default=())
    # The engine (id) this row is a dated vintage of, calibrated on its own ("": none, it is the program)
    vintage_of: str = column(default="")
    # What it leaves weights and KV (a model of roofline.physics.memory): "engine", vLLM's accounting;
    # "local", llama.cpp's on its own machine (Metal's share of a Mac, a GPU less its context)
    memory: str = column(parse_choice("engine", "local"), default="engine")

    @property
    def software(self) -> str:
        """The program this row describes, whatever its vintage: ``vintage_of``, else its own id."""
        return self.vintage_of or self.id


def _model_rules(row: Model) -> tuple[str, str] | None:
    """The first check that spans fields this row breaks, as (field, problem)."""
    if row.kv_heads > row.attention_heads:
        return "kv_heads", f"{row.kv_heads} KV heads exceed {row.attention_heads} attention heads"
    if row.attention_heads % row.kv_heads:  # GQA: each KV head serves a whole group of query heads
        return "kv_heads", f"{row.kv_heads} KV heads do not divide {row.attention_heads} attention heads"
    if row.experts_per_token > row.experts:
        return "experts_per_token", f"{row.experts_per_token} exceeds experts = {row.experts}"
    if row.sliding_window_layers > row.layers:
        return "sliding_window_layers", f"{row.sliding_window_layers} exceeds layers = {row.layers}"
    if (row.sliding_window > 0) != (row.sliding_window_layers > 0):
        return "sliding_window", "give both sliding_window and sliding_window_layers, or neither"
    if row.first_dense_layers > row.layers:
        return "first_dense_layers", f"{row.first_dense_layers} exceeds layers = {row.layers}"
    if row.kv_lora_rank and not (row.qk_rope_head_dim and row.qk_nope_head_dim and row.v_head_dim):
        return "kv_lora_rank", "an MLA row needs qk_nope_head_dim, qk_rope_head_dim and v_head_dim"
    return None


def _price_rules(row: Price) -> tuple[str, str] | None:
    """A rented row lists its hourly price; an owned row gives what it cost and never an hourly figure."""
    if row.kind == "rent":
        if row.usd_per_gpu_hour is None:
            return "usd_per_gpu_hour", "missing: a rented (kind 'rent') row needs its listed price"
        if row.purchase_usd is not None:
            return "purchase_usd", 'only an owned (kind = "own") row has a purchase price'
    elif row.purchase_usd is None:
        return "purchase_usd", "missing: an owned (kind 'own') row needs the price paid (in USD)"
    elif row.usd_per_gpu_hour is not None:
        why = "an owned row's hourly cost is derived (purchase, lifetime, power, electricity), never stored"
        return "usd_per_gpu_hour", f"{why}: remove it"
    return None


def _assumption_rules(row: Assumption) -> tuple[str, str] | None:
    """The value lies in its kind's range."""
    problem = ASSUMPTION_KINDS[row.kind].problem(row.value)
    return ("value", problem) if problem else None


GPU_TABLE = Table("gpus.toml", "gpu", "GPU", GPU)


def _published_model_rules(row: Model) -> tuple[str, str] | None:
    """A row of the project's table also states its publisher's parameter count (a test compares them)."""
    if row.published_parameters is None:
        return "published_parameters", "missing: every model row of the table needs it (in parameters)"
    return _model_rules(row)


MODEL_TABLE = Table("models.toml", "model", "model", Model, rules=_published_model_rules)
CONFIG_MODEL_TABLE = Table("config.json", "model", "model", Model, rules=_model_rules, sentence_sources=True)
PRICE_TABLE = Table("prices.toml", "price", "price", Price, top_level=("as_of",), rules=_price_rules)
ASSUMPTION_TABLE = Table("assumptions.toml", "assumption", "assumption", Assumption, rules=_assumption_rules)
ENGINE_TABLE = Table("engines.toml", "engine", "engine", Engine)
# A learner's own rows (``roofline measure --save``, ``roofline calibrate``): the same checks, but a source
# may be a sentence ("measured on this machine …"): a measurement has no URL.
USER_GPU_TABLE = dataclasses.replace(GPU_TABLE, sentence_sources=True)
USER_ENGINE_TABLE = dataclasses.replace(ENGINE_TABLE, sentence_sources=True)


# --------------------------------------------------------------------------------------------------
# Finding and reading the tables
# --------------------------------------------------------------------------------------------------

# The checkout this module sits in, seen from ``lib/roofline/data.py`` (an editable install): the one
# place the library reaches outside its package.
_REPOSITORY = Path(__file__).resolve().parents[2]
NOTEBOOKS_ENV_VAR = "SPEED_PHYSICS_NOTEBOOKS"


def _packaged_tables() -> Traversable | None:
    """``roofline/tables`` inside the installed package, if this install carries one."""
    tables = importlib.resources.files("roofline") / "tables"
    return tables if tables.joinpath("gpus.toml").is_file() else None


def _repository_tables() -> Path:
    """The repository's ``data/`` folder (editable install)."""
    return _REPOSITORY / "data"


def notebooks_dir() -> Path:
    """The course's lesson notebooks: ``$SPEED_PHYSICS_NOTEBOOKS`` if set, else the checkout's ``notebooks/``.

    The wheel carries the library and its tables, not the lessons; where neither place holds notebooks this
    raises ``RooflineError`` saying how to point at them (never an empty course).

    >>> (notebooks_dir() / "16_step_time.ipynb").is_file()
    True
    """
    env = os.environ.get(NOTEBOOKS_ENV_VAR)
    directory = Path(env).expanduser() if env else _REPOSITORY / "notebooks"
    if not any(directory.glob("*.ipynb")):
        where = f"${NOTEBOOKS_ENV_VAR} = {env}" if env else f"{directory} (the checkout's notebooks/)"
        raise RooflineError(
            f"no course notebooks in {where}: the installed package carries the library, not the lessons. "
            f"Run from a checkout of the course, or set {NOTEBOOKS_ENV_VAR} to its notebooks/ folder."
        )
    return directory


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


def table_dir(name: str) -> Traversable:
    """The folder to read the table or folder ``name`` from: ``data_dir()`` if it has it, else the shipped
    tables (a ``$ROOFLINE_DATA_DIR`` for what-if GPUs need not copy the engines, calibration or
    measurements). Every path into ``data/`` is built here.

    >>> (table_dir("calibration.toml") / "calibration.toml").is_file()
    True
    """
    own = data_dir()
    here = own / name
    return own if (here.is_file() or here.is_dir()) else shipped_dir()


def table_path(name: str) -> Traversable:
    """``table_dir(name) / name``: a table file (``calibration.toml``) or the ``measured`` folder."""
    return table_dir(name) / name


def read_toml(name: str) -> tuple[str, dict]:
    """The path of the TOML file ``name`` (found by ``table_dir``) for messages, and its parsed contents.

    >>> read_toml("calibration.toml")[1]["engine"]["vllm"]["step_overhead_s"] > 0
    True
    """
    return parse_toml_file(table_path(name))


def _as_dir(directory: Traversable | str | None, default: Traversable) -> Traversable:
    if directory is None:
        return default
    return Path(directory) if isinstance(directory, str | os.PathLike) else directory


def _load(table: Table, directory: Traversable) -> dict:
    """The checked rows of ``table`` in ``directory`` by id, in file order."""
    rows = read_rows(directory, table, ENV_VAR if os.environ.get(ENV_VAR) else None)
    return {row.id: row for row in rows}


def load_gpus(directory: Traversable | str | None = None) -> dict[str, GPU]:
    """Read and check ``gpus.toml`` from ``directory`` (default ``data_dir()``); GPUs by id, in file order.

    >>> load_gpus()["h100-sxm"].memory_bytes / 2**30   # "80 GB" of HBM is 80 GiB
    80.0
    """
    return _load(GPU_TABLE, _as_dir(directory, data_dir()))


def load_models(directory: Traversable | str | None = None) -> dict[str, Model]:
    """Read and check ``models.toml`` from ``directory`` (default ``data_dir()``); models by id.

    >>> load_models()["llama-3-8b"].kv_heads
    8
    """
    return _load(MODEL_TABLE, _as_dir(directory, data_dir()))


def load_price_rows(
    directory: Traversable | str | None = None, gpu_ids: Mapping[str, GPU] | None = None
) -> dict[str, Price]:
    """Read and check ``prices.toml`` from ``directory`` (default ``data_dir()``) as written; every row's
    ``gpu`` must be a GPU of ``gpu_ids`` (default: that directory's ``gpus.toml``). An owned row's hourly
    figure is derived by ``roofline.pricing``.

    >>> load_price_rows()["rtx-4090-own"].purchase_usd
    1599.0
    """
    d = _as_dir(directory, data_dir())
    known = load_gpus(d) if gpu_ids is None else gpu_ids
    table = _load(PRICE_TABLE, d)
    for p in table.values():
        if p.gpu not in known:
            raise table_error(
                str(d / PRICE_TABLE.file),
                repr(p.id),
                "gpu",
                f"unknown GPU {p.gpu!r}{did_you_mean(p.gpu, known)}; it must be an id of gpus.toml",
            )
    return table


def load_assumptions(directory: Traversable | str | None = None) -> dict[str, Assumption]:
    """Read and check ``assumptions.toml`` (default: ``table_dir("assumptions.toml")``); assumptions by id,
    each value within its kind's bound (``ASSUMPTION_KINDS``).

    >>> load_assumptions()["engine_memory_fraction"].kind
    'fraction'
    """
    return _load(ASSUMPTION_TABLE, _as_dir(directory, table_dir(ASSUMPTION_TABLE.file)))


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


def _with_user_rows(table: dict, user_table: Table, clash: str, taken=()) -> dict:
    """``table``, then the learner's own rows of ``user_table`` (``user_data_dir()``, same checks); a user
    id that repeats a project id (or a name in ``taken``) is an error saying ``clash``."""
    path = user_data_dir() / user_table.file
    if path.is_file():
        for row in read_rows(user_data_dir(), user_table):
            if row.id in table or row.id in taken:
                raise DataTableError(f"{path}, row {row.id!r}: {clash}")
            table[row.id] = row
    return table


@functools.cache
def gpus() -> dict[str, GPU]:
    """All GPUs by id, in file order, then the user's own rows (``user_data_dir()/gpus.toml``, written by
    ``roofline measure --save``)."""
    clash = f"the project's gpus.toml ({data_dir()}) has this id too; rename your row"
    return _with_user_rows(load_gpus(), USER_GPU_TABLE, clash)


@functools.cache
def models() -> dict[str, Model]:
    """All models by id: the table's, in file order, then the user's own config.json files
    (``user_data_dir()/models/``: ``NAME.json`` or ``NAME/config.json``), then those added this session
    (``add_model``)."""
    table = load_models()
    for path in user_model_configs():
        model = model_from_config(path)
        if model.id in table:
            raise DataTableError(f"{path}: the model id {model.id!r} is the table's too; rename the file")
        table[model.id] = model
    return table | ADDED_MODELS


# Models read from config.json files this session, by id (``add_model``); ``clear_cache`` keeps them.
ADDED_MODELS: dict[str, Model] = {}


def user_model_configs() -> list[Path]:
    """The learner's own config.json files: ``user_data_dir()/models/*.json`` and ``*/config.json``."""
    return model_config.config_files(user_data_dir() / "models")


def model_from_config(source: str | os.PathLike | Mapping, model_id: str | None = None) -> Model:
    """A model from a Hugging Face ``config.json``: a path to the file, a folder holding one, or its parsed
    contents (then give ``model_id``). The id defaults to the file's name (``model_config.model_id_for``);
    the fields are checked as a table row is. An architecture it cannot read raises ``ModelConfigError``
    naming the field; a shape the table's checks refuse raises ``DataTableError``.

    >>> m = model_from_config(table_path("model_configs") / "qwen2.5-14b.json")
    >>> m.id, m.layers, m.kv_heads, m.checkpoint_format
    ('qwen2.5-14b', 48, 8, 'bf16')
    """
    if isinstance(source, Mapping):
        config, where = source, "config.json"
        model_id = model_id or model_config.model_id_for(where, source)
    else:
        config, where = model_config.read_config(source), str(model_config.config_path(source))
        model_id = model_id or model_config.model_id_for(source, config)
    row = model_config.row_from_config(config, where)
    name = config.get("_name_or_path")
    row |= {
        "id": model_id,
        "name": name if isinstance(name, str) and name.strip() else model_id,
        "source": where,
        "parameter_source": where,
        "note": f"read from {where} (model_type {config.get('model_type')})",
    }
    return check_row(CONFIG_MODEL_TABLE, row, where, repr(model_id))


def add_model(source: str | os.PathLike) -> Model:
    """Read a config.json (a file, or a folder holding one) and add its model to ``models()`` for this
    session, so every model menu and ``get_model`` offers it. A config that is a table model's shape under
    the table's id or alias gives that row; another shape under a table id is refused (rename it).

    >>> add_model(table_path("model_configs") / "mistral-small-24b.json").id in models()
    True
    """
    model = model_from_config(source)
    known = models().get(model.id) or model_for_alias(model.id)
    if known is not None:
        if same_architecture(known, model):
            return known
        raise DataTableError(
            f"{model.source}: the id {model.id!r} names the table's {known.id!r}, whose shape differs; "
            "put the config in a folder of another name"
        )
    ADDED_MODELS[model.id] = model
    models.cache_clear()
    return model


def add_models(folder: str | os.PathLike) -> list[Model]:
    """``add_model`` for every config in ``folder``: its ``*.json`` files and ``*/config.json`` files, in
    name order (a folder of Hub downloads, or of hand-written configs).

    >>> "llama-3.3-70b" in [m.id for m in add_models(table_path("model_configs"))]
    True
    """
    configs = model_config.config_files(folder)
    if not configs:
        raise ModelConfigError(f"{folder}: no config.json files in this folder")
    return [add_model(p) for p in configs]


ROW_TEXT_FIELDS = ("id", "name", "source", "parameter_source", "note", "layer_pattern", "hf_ids")


def same_architecture(a: Model, b: Model) -> bool:
    """Whether two rows describe the same network and release format (ids, names, sources and published
    counts aside).

    >>> same_architecture(get_model("llama-3-70b"), get_model("llama-3.1-70b"))
    False
    """
    fields = [f.name for f in dataclasses.fields(Model)]
    shape = [f for f in fields if f not in ROW_TEXT_FIELDS and not f.startswith("published")]
    return all(getattr(a, f) == getattr(b, f) for f in shape)


@functools.cache
def price_rows() -> dict[str, Price]:
    """The price table's rows by id, as written (``roofline.pricing.prices`` costs the owned ones)."""
    return load_price_rows(gpu_ids=gpus())


@functools.cache
def assumptions() -> dict[str, Assumption]:
    """All assumptions by id (``roofline.assumptions.assumption`` reads one)."""
    return load_assumptions()


@functools.cache
def project_engines() -> dict[str, Engine]:
    """The project's engines by id, in file order (``engines.toml`` found by ``table_dir``), without the
    user's own. An alias must name one engine only and must not be another engine's id; a vintage must be
    of an engine of the table.

    >>> "trtllm" in project_engines()["tensorrt-llm"].aliases
    True
    """
    table = _load(ENGINE_TABLE, table_dir(ENGINE_TABLE.file))
    owner: dict[str, str] = {}
    for e in table.values():
        if e.vintage_of and (e.vintage_of not in table or e.vintage_of == e.id):
            path = str(table_path(ENGINE_TABLE.file))
            raise table_error(path, repr(e.id), "vintage_of", f"{e.vintage_of!r} is not another engine's id")
        for alias in e.aliases:
            key = alias.strip().lower()
            clash = owner.get(key) or (key if key in table and key != e.id else None)
            if clash:
                path = str(table_path(ENGINE_TABLE.file))
                raise table_error(path, repr(e.id), "aliases", f"{alias!r} already names {clash!r}")
            owner[key] = e.id
    return table


def project_engine_names() -> list[str]:
    """Every name that picks a project engine: its ids and aliases, in lowercase (a learner's own engine
    may take none of them).

    >>> {"vllm", "ideal", "trtllm"} <= set(project_engine_names())
    True
    """
    return [name.strip().lower() for e in project_engines().values() for name in (e.id, *e.aliases)]


@functools.cache
def engines() -> dict[str, Engine]:
    """All engines by id, in file order (``roofline.engines.get_engine`` looks one up by id or alias): the
    project's (``project_engines``), then the user's own calibrated engines (``user_data_dir()/engines.toml``,
    written by ``roofline calibrate``), whose ids may be none of the project's ids or aliases."""
    clash = "the project's engines.toml uses this name (an id or an alias); rename your engine"
    return _with_user_rows(dict(project_engines()), USER_ENGINE_TABLE, clash, project_engine_names())


@functools.cache
def model_aliases() -> dict[str, str]:
    """Every other name a model row answers to, lowercased, mapped to its id: each Hugging Face repository
    in its ``hf_ids`` (``deepseek-ai/DeepSeek-R1``), that repository's own name (``deepseek-r1``,
    ``llama-3.1-8b-instruct``) and, for Meta's, the name without ``meta-`` (``llama-3-8b-instruct``). A
    name two rows would share is an error in the table.

    >>> model_aliases()["deepseek-r1"], model_aliases()["llama-3-8b-instruct"]
    ('deepseek-v3', 'llama-3-8b')
    """
    table, owner = models(), {}
    for m in table.values():
        for hf in m.hf_ids:
            repo = hf.strip().lower().rsplit("/", 1)[-1]
            names = {hf.strip().lower(), repo, repo.removeprefix("meta-")} - {m.id}
            for name in names:
                if owner.get(name, m.id) != m.id or (name in table and name != m.id):
                    clash = owner.get(name, name)
                    raise table_error(str(table_path(MODEL_TABLE.file)), repr(m.id), "hf_ids",
                                      f"{name!r} would also name {clash!r}")  # fmt: skip
                owner[name] = m.id
    return owner


def model_for_alias(name: str) -> Model | None:
    """The model row ``name`` is another name of (``model_aliases``), or None.

    >>> model_for_alias("DeepSeek-R1").id
    'deepseek-v3'
    """
    key = model_aliases().get(str(name).strip().lower())
    return models()[key] if key else None


def model_for_hf_id(hf_id: str) -> Model | None:
    """The model row whose ``hf_ids`` lists the Hugging Face repository ``hf_id`` (case-insensitive), or
    None: the one map from the names measured studies use to this library's models.

    >>> model_for_hf_id("meta-llama/Llama-3.1-8B-Instruct").id
    'llama-3.1-8b'
    """
    return model_for_alias(hf_id) if "/" in str(hf_id) else None


def clear_cache() -> None:
    """Forget the loaded tables, so the next lookup re-reads them (e.g. after setting ROOFLINE_DATA_DIR)."""
    for loader in (gpus, models, price_rows, assumptions, project_engines, engines, model_aliases):
        loader.cache_clear()


def lookup(kind: str, table: Mapping, name: str):
    """The row of ``table`` with the id ``name`` (case and spaces forgiven); an unknown id raises
    ``UnknownNameError`` naming the ``kind`` of row and the closest ids.

    >>> lookup("model", models(), " Llama-3-8B ").layers
    32
    """
    key = str(name).strip().lower()
    if key not in table:
        raise UnknownNameError(kind, name, list(table))
    return table[key]


def get_gpu(gpu: str | GPU) -> GPU:
    """Look a GPU up by id (objects pass through); an unknown id raises with the closest ids.

    >>> get_gpu("h100").id
    Traceback (most recent call last):
    ...
    roofline.errors.UnknownNameError: Unknown GPU 'h100'. Did you mean ...'h100-sxm'...
    """
    return gpu if isinstance(gpu, GPU) else lookup("GPU", gpus(), gpu)


def get_model(model: str | os.PathLike | Model) -> Model:
    """Look a model up (objects pass through): by id, by another name (``model_aliases``: a Hugging Face
    repository, ``deepseek-r1``), or by the path of a config.json (or its folder), which ``add_model``
    reads. An unknown name raises with the closest ids.

    >>> get_model("deepseek-ai/DeepSeek-R1").id
    'deepseek-v3'
    >>> get_model("llama3-8b")
    Traceback (most recent call last):
    ...
    roofline.errors.UnknownNameError: Unknown model 'llama3-8b'. Did you mean 'llama-3-8b'...
    """
    if isinstance(model, Model):
        return model
    key = os.fspath(model) if isinstance(model, os.PathLike) else str(model)
    table = models()
    found = table.get(key.strip().lower()) or model_for_alias(key)
    if found is not None:
        return found
    if model_config.is_config_path(key):
        return add_model(key)  # a path that holds no config.json says so, naming it
    return lookup("model", table, key)
