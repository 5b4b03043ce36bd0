"""The data tables (``gpus.toml``, ``models.toml``, ``prices.toml``, ``assumptions.toml``, ``engines.toml``),
validated on load.

The TOML files keep the units spec sheets print (GB, TB/s, TFLOPS); this module converts them once, here,
so everything downstream works in bytes, bytes/s and FLOP/s. Derived figures (ridge point, parameter
counts) are computed by the library, never stored. ``data/README.md`` documents every field. Taught
in lesson 02 (notebooks/02_decode_floor.ipynb), the first to read the tables; later lessons all use them.

**Validation.** Each table is described by one declarative schema (``GPU_SCHEMA``, ``MODEL_SCHEMA``,
``PRICE_SCHEMA``, ``ASSUMPTION_SCHEMA``, ``ENGINE_SCHEMA``, in ``roofline.schema``'s language): one
``Field`` per key with its type, the unit the file writes it in, the factor to SI and its allowed range.
Loading checks every row against it: types (a quoted ``"false"`` is not a boolean, ``true`` is not a
number), ranges (no negative memory), unknown keys (with the closest known key), missing keys, duplicate
ids and a missing ``source`` or ``note``. Any problem raises ``DataTableError`` naming the file, the row
id and the field. A new optional field is one line in the schema plus one attribute in the dataclass (a
test checks the two agree).

**Where the tables are found** (``data_dir()``), first match wins:

1. ``$ROOFLINE_DATA_DIR``, if set: your own tables (same schema) for "what if" studies;
2. the tables shipped inside the installed package, ``roofline/tables/`` (a wheel built with
   ``pip install .`` or ``uv build`` carries a copy of ``data/*.toml`` there);
3. the repository's ``data/`` folder (the editable install used for the course).

The tables are read once, on first use (importing ``roofline`` reads none), and cached; ``clear_cache()``
re-reads them (after changing
``ROOFLINE_DATA_DIR``). ``load_gpus(directory)`` and friends read a directory without the cache.

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
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

from roofline.errors import DataTableError, RooflineError, UnknownNameError
from roofline.schema import (
    Bound,
    Field,
    Table,
    count_field,
    did_you_mean,
    one_of,
    parse_bool,
    parse_date,
    parse_id,
    parse_number,
    parse_text,
    parse_text_list,
    parse_url,
    positive_field,
    read_rows,
    table_error,
)
from roofline.units import GB, TB, TFLOPS, GiB

ENV_VAR = "ROOFLINE_DATA_DIR"
TABLE_FILES = ("gpus.toml", "models.toml", "prices.toml", "engines.toml")
MEASURED_DIR = "measured"  # third-party measurements (CSV), read by roofline.calibration.measurements

# The tensor-core precisions a GPU row may quote a dense peak for (keys of ``dense_tflops``).
COMPUTE_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")


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
    hf_ids: tuple[str, ...] = ()  # Hugging Face repositories with this shape (how measured studies name it)

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek): the KV cache holds a latent, not per-head K and V."""
        return self.kv_lora_rank > 0


@dataclass(frozen=True)
class Price:
    """What one GPU-hour of ``gpu`` costs, with its date and source.

    ``kind`` ``"rent"``: a listed on-demand price (``usd_per_gpu_hour`` as the provider prints it, per GPU).
    ``kind`` ``"own"``: a GPU people buy; the file gives ``purchase_usd`` (sourced) and the loader derives
    ``usd_per_gpu_hour`` with ``roofline.physics.cost.ownership_usd_per_hour`` from the ownership
    assumptions (``assumptions.toml``: lifetime, hours of use a day, power, electricity price).
    """

    id: str
    gpu: str
    usd_per_gpu_hour: float  # for an "own" row: derived on load, never stored in the file
    provider: str
    offering: str
    date: str
    source: str
    note: str
    kind: str = "rent"  # "rent" (a listed hourly price) or "own" (bought: purchase price + running costs)
    purchase_usd: float | None = None  # "own" rows: the price paid for the GPU (or the machine), USD


@dataclass(frozen=True)
class Assumption:
    """One assumed number (``assumptions.toml``): ``value`` in ``unit``, what it means and why this value.

    ``kind`` names its physical bound (``ASSUMPTION_KINDS``): a fraction is in (0, 1], an overhead is at
    least 0, a count a whole number of at least 1, and so on. ``roofline.assumptions`` reads it.
    """

    id: str
    value: float
    unit: str
    kind: str
    meaning: str
    reason: str
    used_by: str


@dataclass(frozen=True)
class Engine:
    """One inference engine as the library models it (``engines.toml``); ``roofline.engines`` looks it up.

    ``kind`` is ``"ideal"`` (the roofline floor: no calibration) or ``"calibrated"`` (fitted parameters in
    ``calibration.toml`` under this id). ``version`` names the software the calibration represents.
    ``parallel`` is how it splits a model over GPUs: ``"tensor"`` (every matrix) or ``"pipeline"`` (layers).
    The scheduler fields are the engine's documented serving defaults (``data/README.md`` lists them);
    ``roofline.sim.engine_policy`` turns them into the simulator's ``SchedulerPolicy``.
    """

    id: str
    name: str
    kind: str
    parallel: str
    version: str
    aliases: tuple[str, ...]
    scheduler: str  # "decode-first" (chunked prefill rides in decode steps) or "prefill-first"
    token_budget: int  # tokens one step may carry (max_num_batched_tokens and the like)
    max_sequences: int  # sequences one step may carry (max_num_seqs)
    chunk_tokens: int  # largest prompt chunk per step, when chunked prefill is on
    scheduler_source: str
    source: str
    note: str
    chunked_prefill: bool = True  # False: every prompt runs whole in one step
    whole_prompt_must_fit: bool = False  # unchunked: a prompt waits until the step's budget holds all of it
    kv_reservation: str = "prompt"  # "prompt" (grows; a full cache preempts) or "prompt+output" (never)
    pass_tokens: int = 0  # a step runs in physical passes of at most this many tokens; 0: one pass
    # Whose kernel timings (data/measured/kernels/) describe this engine's GEMMs and attention: an engine id
    # with timings ("vllm", "tensorrt-llm", "sglang"), or "" when its kernels are fitted end to end.
    kernels: str = ""


# --------------------------------------------------------------------------------------------------
# The schema: one Field per key
# --------------------------------------------------------------------------------------------------


# One line per key. An optional field is one line with a default, e.g.
#     count_field("sliding_window", most=10**9, default=None),
#     count_field("shared_experts", least=0, most=1_000, default=0),
# plus the attribute (typed, with the same default) at the end of the dataclass.
GPU_SCHEMA: tuple[Field, ...] = (
    Field("id", parse_id),
    Field("name", parse_text),
    Field("vendor", parse_text),
    Field("form_factor", parse_text),
    positive_field("memory_gb", "GB", GB, "memory_bytes", most=1e5),
    Field("memory_type", parse_text),
    positive_field("memory_bandwidth_tb_per_s", "TB/s", TB, "memory_bandwidth_bytes_per_s", most=1e3),
    positive_field("dense_tflops", "TFLOPS", TFLOPS, "dense_flops_per_s", most=1e6, keys=COMPUTE_PRECISIONS),
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
    count_field("layers", most=10_000),
    count_field("hidden_size"),
    count_field("attention_heads", most=100_000),
    count_field("kv_heads", most=100_000),
    count_field("head_dim", most=100_000),
    count_field("intermediate_size"),
    count_field("vocab_size", most=10**8),
    Field("tied_embeddings", parse_bool, default=False),
    Field("attention_bias", parse_bool, default=False),
    count_field("experts", most=100_000, default=1),
    count_field("experts_per_token", most=100_000, default=1),
    count_field("max_context_tokens", most=10**9),
    positive_field("published_parameters", "parameters", most=1e15),
    positive_field("published_active_parameters", "parameters", most=1e15, default=None),
    Field("source", parse_url),
    Field("parameter_source", parse_url),
    Field("note", parse_text),
    count_field("sliding_window", least=0, most=10**9, default=0),
    count_field("sliding_window_layers", least=0, most=10_000, default=0),
    Field("layer_pattern", parse_text, default=""),
    Field("attention_sinks", parse_bool, default=False),
    count_field("q_lora_rank", least=0, default=0),
    count_field("kv_lora_rank", least=0, default=0),
    count_field("qk_nope_head_dim", least=0, most=100_000, default=0),
    count_field("qk_rope_head_dim", least=0, most=100_000, default=0),
    count_field("v_head_dim", least=0, most=100_000, default=0),
    count_field("moe_intermediate_size", least=0, default=0),
    count_field("shared_experts", least=0, most=1_000, default=0),
    count_field("first_dense_layers", least=0, most=10_000, default=0),
    count_field("routing_groups", most=100_000, default=1),
    count_field("routing_groups_per_token", most=100_000, default=1),
    count_field("mtp_layers", least=0, most=100, default=0),
    positive_field("published_mtp_parameters", "parameters", most=1e15, default=None),
    Field("qk_norm", parse_bool, default=False),
    Field("attention_output_bias", parse_bool, default=False),
    Field("expert_bias", parse_bool, default=False),
    Field("router_bias", parse_bool, default=False),
    Field("checkpoint_format", parse_id, default="bf16"),
    Field("published_active_excludes_embedding", parse_bool, default=False),
    Field("hf_ids", parse_text_list, default=()),
)


PRICE_KINDS = ("rent", "own")

PRICE_SCHEMA: tuple[Field, ...] = (
    Field("id", parse_id),
    Field("gpu", parse_id),
    positive_field("usd_per_gpu_hour", "USD per GPU-hour", most=1e4, default=None),  # "rent" rows only
    Field("provider", parse_text),
    Field("offering", parse_text),
    Field("date", parse_date),
    Field("source", parse_url),
    Field("note", parse_text),
    Field("kind", one_of(*PRICE_KINDS), default="rent"),
    positive_field("purchase_usd", "USD", most=1e7, default=None),  # "own" rows only
)


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

ASSUMPTION_SCHEMA: tuple[Field, ...] = (
    Field("id", parse_id),
    Field("value", parse_number),
    Field("unit", parse_text),
    Field("kind", one_of(*ASSUMPTION_KINDS)),
    Field("meaning", parse_text),
    Field("reason", parse_text),
    Field("used_by", parse_text),
)


ENGINE_SCHEMA: tuple[Field, ...] = (
    Field("id", parse_id),
    Field("name", parse_text),
    Field("kind", one_of("ideal", "calibrated")),
    Field("parallel", one_of("tensor", "pipeline")),
    Field("version", parse_text),
    Field("aliases", parse_text_list, default=()),
    Field("scheduler", one_of("decode-first", "prefill-first")),
    count_field("token_budget", most=10**7),
    count_field("max_sequences", most=10**6),
    count_field("chunk_tokens", most=10**7),
    Field("chunked_prefill", parse_bool, default=True),
    Field("whole_prompt_must_fit", parse_bool, default=False),
    Field("kv_reservation", one_of("prompt", "prompt+output"), default="prompt"),
    count_field("pass_tokens", least=0, most=10**7, default=0),
    Field("scheduler_source", parse_url),
    Field("source", parse_url),
    Field("note", parse_text),
    Field("kernels", one_of("", "vllm", "tensorrt-llm", "sglang"), default=""),
)


def _model_rules(row: Model) -> list[tuple[str, str]]:
    """Checks that span fields: (field, problem) for each one broken."""
    problems = []
    if row.kv_heads > row.attention_heads:
        problems.append(("kv_heads", f"{row.kv_heads} KV heads exceed {row.attention_heads} attention heads"))
    elif row.attention_heads % row.kv_heads:  # GQA: each KV head serves a whole group of query heads
        problems.append(
            ("kv_heads", f"{row.kv_heads} KV heads do not divide {row.attention_heads} attention heads")
        )
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


def _price_rules(row: Price) -> list[tuple[str, str]]:
    """A rented row lists its hourly price; an owned row gives what it cost and never an hourly figure."""
    if row.kind == "rent":
        if row.usd_per_gpu_hour is None:
            return [("usd_per_gpu_hour", "missing: a rented (kind 'rent') row needs its listed price")]
        if row.purchase_usd is not None:
            return [("purchase_usd", 'only an owned (kind = "own") row has a purchase price')]
    else:
        if row.purchase_usd is None:
            return [("purchase_usd", "missing: an owned (kind 'own') row needs the price paid (in USD)")]
        if row.usd_per_gpu_hour is not None:
            return [
                (
                    "usd_per_gpu_hour",
                    "an owned row's hourly cost is derived (purchase, lifetime, power, electricity), "
                    "never stored: remove it",
                )
            ]
    return []


def _assumption_rules(row: Assumption) -> list[tuple[str, str]]:
    """The value lies in its kind's range."""
    problem = ASSUMPTION_KINDS[row.kind].problem(row.value)
    return [("value", problem)] if problem else []


GPU_TABLE = Table("gpus.toml", "gpu", "GPU", GPU_SCHEMA, GPU)
MODEL_TABLE = Table("models.toml", "model", "model", MODEL_SCHEMA, Model, rules=_model_rules)
PRICE_TABLE = Table(
    "prices.toml", "price", "price", PRICE_SCHEMA, Price, top_level=("as_of",), rules=_price_rules
)
ASSUMPTION_TABLE = Table(
    "assumptions.toml", "assumption", "assumption", ASSUMPTION_SCHEMA, Assumption, rules=_assumption_rules
)
ENGINE_TABLE = Table("engines.toml", "engine", "engine", ENGINE_SCHEMA, Engine)
# A learner's own GPU rows (``roofline measure --save``): the same checks, but the source may be a sentence
# ("measured on this machine …"): a measurement has no URL.
USER_ENGINE_TABLE = dataclasses.replace(
    ENGINE_TABLE,
    schema=tuple(
        Field(f.key, parse_text) if f.key in ("source", "scheduler_source") else f for f in ENGINE_SCHEMA
    ),
)  # a learner's calibrated engines: their source is a sentence ("calibrated on …"), not a URL
USER_GPU_TABLE = dataclasses.replace(
    GPU_TABLE, schema=tuple(Field("source", parse_text) if f.key == "source" else f for f in GPU_SCHEMA)
)


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


def _repository_root() -> Path:
    """The checkout this module sits in, seen from ``lib/roofline/data.py`` (an editable install); the one
    place the library reaches outside its package."""
    return Path(__file__).resolve().parents[2]


def _repository_tables() -> Path:
    """The repository's ``data/`` folder (editable install)."""
    return _repository_root() / "data"


NOTEBOOKS_ENV_VAR = "SPEED_PHYSICS_NOTEBOOKS"


def notebooks_dir() -> Path:
    """The course's lesson notebooks: ``$SPEED_PHYSICS_NOTEBOOKS`` if set, else the checkout's ``notebooks/``.

    The wheel carries the library and its tables, not the lessons; where neither place holds notebooks this
    raises ``RooflineError`` saying how to point at them (never an empty course).

    >>> (notebooks_dir() / "16_step_time.ipynb").is_file()
    True
    """
    env = os.environ.get(NOTEBOOKS_ENV_VAR)
    directory = Path(env).expanduser() if env else _repository_root() / "notebooks"
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


def __getattr__(name: str):  # ``DATA_DIR`` kept for old callers; computed when asked, so never stale
    if name == "DATA_DIR":
        return data_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _rows(directory: Traversable, table: Table) -> list:
    """``read_rows``, with read errors saying when ``$ROOFLINE_DATA_DIR`` chose the directory."""
    return read_rows(directory, table, ENV_VAR if os.environ.get(ENV_VAR) else None)


def load_gpus(directory: Traversable | str | None = None) -> dict[str, GPU]:
    """Read and check ``gpus.toml`` from ``directory`` (default ``data_dir()``); GPUs by id, in file order.

    >>> load_gpus()["h100-sxm"].memory_bytes / 2**30   # "80 GB" of HBM is 80 GiB
    80.0
    """
    d = data_dir() if directory is None else _as_dir(directory)
    return {g.id: g for g in _rows(d, GPU_TABLE)}


def load_models(directory: Traversable | str | None = None) -> dict[str, Model]:
    """Read and check ``models.toml`` from ``directory`` (default ``data_dir()``); models by id.

    >>> load_models()["llama-3-8b"].kv_heads
    8
    """
    d = data_dir() if directory is None else _as_dir(directory)
    return {m.id: m for m in _rows(d, MODEL_TABLE)}


def load_prices(
    directory: Traversable | str | None = None, gpu_ids: Mapping[str, GPU] | None = None
) -> dict[str, Price]:
    """Read and check ``prices.toml``; every row's ``gpu`` must be a GPU of ``gpu_ids`` (default: that
    directory's ``gpus.toml``). An owned row gets its derived ``usd_per_gpu_hour`` (``owned_usd_per_hour``).

    >>> load_prices()["h100-example-3usd"].usd_per_gpu_hour
    3.0
    """
    d = data_dir() if directory is None else _as_dir(directory)
    known = load_gpus(d) if gpu_ids is None else gpu_ids
    owning = None
    table = {}
    for p in _rows(d, PRICE_TABLE):
        if p.gpu not in known:
            raise table_error(
                str(d / PRICE_TABLE.file),
                repr(p.id),
                "gpu",
                f"unknown GPU {p.gpu!r}{did_you_mean(p.gpu, known)}; it must be an id of gpus.toml",
            )
        if p.kind == "own":
            if owning is None:  # the assumptions next to this prices.toml, else the ones in use
                owning = load_assumptions(d) if (d / ASSUMPTION_TABLE.file).is_file() else assumptions()
            hourly = owned_usd_per_hour(p.purchase_usd, known[p.gpu], owning)
            p = dataclasses.replace(p, usd_per_gpu_hour=hourly)
        table[p.id] = p
    return table


# The ownership assumptions an owned price row is costed with (ids in assumptions.toml).
OWNERSHIP_ASSUMPTIONS = (
    "ownership_lifetime_years",
    "ownership_hours_per_day",
    "ownership_power_fraction",
    "electricity_usd_per_kwh",
)


def owned_usd_per_hour(purchase_usd: float, gpu: GPU, table: Mapping[str, Assumption] | None = None) -> float:
    """USD per hour of use of a ``gpu`` bought for ``purchase_usd``, under the ownership assumptions of
    ``table`` (default: the assumptions in use): ``roofline.physics.cost.ownership_usd_per_hour`` with the
    GPU row's ``power_w`` times ``ownership_power_fraction`` as the power drawn.

    >>> round(owned_usd_per_hour(1599.0, get_gpu("rtx-4090")), 3)  # 1,599 / (3 x 365.25 x 8) + 0.45 x 0.187
    0.267
    """
    from roofline.physics.cost import ownership_usd_per_hour  # formulas sit above the tables

    a = assumptions() if table is None else table
    lifetime, hours, share, usd_per_kwh = (a[k].value for k in OWNERSHIP_ASSUMPTIONS)
    return float(ownership_usd_per_hour(purchase_usd, lifetime, hours, gpu.power_w * share, usd_per_kwh))


def load_assumptions(directory: Traversable | str | None = None) -> dict[str, Assumption]:
    """Read and check ``assumptions.toml`` (default: ``table_dir("assumptions.toml")``); assumptions by id,
    each value within its kind's bound (``ASSUMPTION_KINDS``).

    >>> load_assumptions()["engine_memory_fraction"].kind
    'fraction'
    """
    d = table_dir(ASSUMPTION_TABLE.file) if directory is None else _as_dir(directory)
    return {a.id: a for a in _rows(d, ASSUMPTION_TABLE)}


def load_engines(directory: Traversable | str | None = None) -> dict[str, Engine]:
    """Read and check ``engines.toml`` (default: ``table_dir("engines.toml")``); engines by id. An alias
    must name one engine only and must not be another engine's id.

    >>> load_engines()["vllm"].parallel
    'tensor'
    """
    d = table_dir(ENGINE_TABLE.file) if directory is None else _as_dir(directory)
    table = {e.id: e for e in _rows(d, ENGINE_TABLE)}
    owner: dict[str, str] = {}
    for e in table.values():
        for alias in e.aliases:
            key = alias.strip().lower()
            clash = owner.get(key) or (key if key in table and key != e.id else None)
            if clash:
                raise table_error(
                    str(d / ENGINE_TABLE.file), repr(e.id), "aliases", f"{alias!r} already names {clash!r}"
                )
            owner[key] = e.id
    return table


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
    """The parsed TOML file ``name`` (found by ``table_dir``) and its path for messages; a missing file or
    a syntax error is a ``DataTableError`` naming the file."""
    source = table_path(name)
    try:
        raw = source.read_bytes()
    except OSError as exc:
        raise table_error(str(source), None, None, f"cannot read the table: {exc.strerror or exc}") from None
    try:
        return str(source), tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise table_error(str(source), None, None, f"not valid TOML: {exc}") from None
    except RecursionError:
        raise table_error(str(source), None, None, "nested too deeply to be a table") from None


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
    """All prices by id (rented and owned), in file order."""
    return load_prices(gpu_ids=gpus())


@functools.cache
def assumptions() -> dict[str, Assumption]:
    """All assumptions by id (``roofline.assumptions.assumption`` reads one)."""
    return load_assumptions()


def default_price(gpu: str | GPU) -> Price | None:
    """The price a lesson uses for ``gpu`` when the learner gives none: the first row of ``prices.toml``
    for it (the table lists the course's round example first where there is one). None for a GPU the
    table does not price (a learner's own measured machine): there is then no cost until one is typed.

    >>> default_price("h100-sxm").id, default_price("l4").usd_per_gpu_hour
    ('h100-example-3usd', 0.8048)
    >>> default_price("rtx-4090").kind
    'own'
    """
    gpu_id = get_gpu(gpu).id
    return next((p for p in prices().values() if p.gpu == gpu_id), None)


@functools.cache
def engines() -> dict[str, Engine]:
    """All engines by id, in file order (``roofline.engines.get_engine`` looks one up by id or alias), then
    the user's own calibrated engines (``user_data_dir()/engines.toml``, written by ``roofline
    calibrate``; same schema, a sentence may stand for a URL); a user id that repeats a project id is an
    error naming both files."""
    table = load_engines()
    user_dir = user_data_dir()
    if (user_dir / ENGINE_TABLE.file).is_file():
        for e in read_rows(user_dir, USER_ENGINE_TABLE):
            if e.id in table:
                raise DataTableError(
                    f"{user_dir / ENGINE_TABLE.file}, row {e.id!r}: the project's engines.toml has this id "
                    "too; rename your engine"
                )
            table[e.id] = e
    return table


@functools.cache
def _hf_ids() -> dict[str, str]:
    return {hf.lower(): m.id for m in models().values() for hf in m.hf_ids}


def model_for_hf_id(hf_id: str) -> Model | None:
    """The model row whose ``hf_ids`` lists the Hugging Face repository ``hf_id`` (case-insensitive), or
    None: the one map from the names measured studies use to this library's models.

    >>> model_for_hf_id("meta-llama/Llama-3.1-8B-Instruct").id
    'llama-3.1-8b'
    """
    key = _hf_ids().get(str(hf_id).strip().lower())
    return models()[key] if key else None


def clear_cache() -> None:
    """Forget the loaded tables, so the next lookup re-reads them (e.g. after setting ROOFLINE_DATA_DIR)."""
    for loader in (gpus, models, prices, assumptions, engines, _hf_ids):
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
