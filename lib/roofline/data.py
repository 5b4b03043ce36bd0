"""The GPU, model and price tables in ``data/``, loaded into frozen dataclasses in SI units.

The TOML files keep the units spec sheets print (GB, TB/s, TFLOPS); this module converts them once, here,
so everything downstream works in bytes, bytes/s and FLOP/s. Derived figures (ridge point, parameter
counts) are computed by the library, never stored. ``data/README.md`` documents every field.

>>> gpu = get_gpu("h100-sxm")
>>> gpu.memory_bandwidth_bytes_per_s
3350000000000.0
>>> get_model("llama-3-8b").layers
32
"""

from __future__ import annotations

import functools
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import InvalidConfigurationError, UnknownNameError
from .units import GB, TB, TFLOPS

# ROOFLINE_DATA_DIR points the library at your own tables (same schema) for "what if" studies.
DATA_DIR = Path(os.environ.get("ROOFLINE_DATA_DIR", Path(__file__).resolve().parents[2] / "data"))


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

    @property
    def is_moe(self) -> bool:
        return self.experts > 1


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


def _read(name: str) -> dict:
    with open(DATA_DIR / name, "rb") as f:
        return tomllib.load(f)


@functools.cache
def gpus() -> dict[str, GPU]:
    """All GPUs by id, in file order; then the user's own rows (``roofline measure --save``)."""
    table = {}
    rows = _read("gpus.toml")["gpu"]
    # --- user rows (issue 15): rows saved by `roofline measure --save NAME` in the user data directory
    # ($SPEED_PHYSICS_HOME, else $XDG_CONFIG_HOME/speed-physics, else ~/.config/speed-physics), same
    # schema. Imported lazily (measure sits above this module). After saving, call
    # roofline.measure.userdata.reload_tables() (= gpus.cache_clear()) to see them.
    from .measure.userdata import load_user_gpu_rows, user_gpu_table_path

    project_ids, user_rows = {row["id"] for row in rows}, load_user_gpu_rows()
    for row in user_rows:
        if row["id"] in project_ids:
            raise InvalidConfigurationError(
                f"GPU id {row['id']!r} is in both {user_gpu_table_path()} and {DATA_DIR / 'gpus.toml'}; "
                "rename the user row"
            )
    rows = [*rows, *user_rows]
    # --- end user rows
    for row in rows:
        table[row["id"]] = GPU(
            id=row["id"],
            name=row["name"],
            vendor=row["vendor"],
            form_factor=row["form_factor"],
            memory_bytes=float(row["memory_gb"]) * GB,
            memory_type=row["memory_type"],
            memory_bandwidth_bytes_per_s=float(row["memory_bandwidth_tb_per_s"]) * TB,
            dense_flops_per_s={k: float(v) * TFLOPS for k, v in row["dense_tflops"].items()},
            interconnect=row["interconnect"],
            interconnect_bytes_per_s=float(row["interconnect_gb_per_s"]) * GB,
            power_w=float(row["power_w"]),
            source=row.get("source", ""),
            note=row.get("note", ""),
        )
    return table


@functools.cache
def models() -> dict[str, Model]:
    """All models by id, in file order."""
    table = {}
    for row in _read("models.toml")["model"]:
        table[row["id"]] = Model(
            id=row["id"],
            name=row["name"],
            layers=int(row["layers"]),
            hidden_size=int(row["hidden_size"]),
            attention_heads=int(row["attention_heads"]),
            kv_heads=int(row["kv_heads"]),
            head_dim=int(row["head_dim"]),
            intermediate_size=int(row["intermediate_size"]),
            vocab_size=int(row["vocab_size"]),
            tied_embeddings=bool(row.get("tied_embeddings", False)),
            attention_bias=bool(row.get("attention_bias", False)),
            experts=int(row.get("experts", 1)),
            experts_per_token=int(row.get("experts_per_token", 1)),
            max_context_tokens=int(row["max_context_tokens"]),
            published_parameters=float(row["published_parameters"]),
            published_active_parameters=(
                float(row["published_active_parameters"]) if "published_active_parameters" in row else None
            ),
            source=row.get("source", ""),
            parameter_source=row.get("parameter_source", ""),
            note=row.get("note", ""),
        )
    return table


@functools.cache
def prices() -> dict[str, Price]:
    """All example prices by id."""
    return {
        row["id"]: Price(
            id=row["id"],
            gpu=row["gpu"],
            usd_per_gpu_hour=float(row["usd_per_gpu_hour"]),
            provider=row["provider"],
            offering=row.get("offering", ""),
            date=str(row["date"]),
            source=row.get("source", ""),
            note=row.get("note", ""),
        )
        for row in _read("prices.toml")["price"]
    }


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
    """Look an example price up by id."""
    table = prices()
    key = str(price_id).strip().lower()
    if key not in table:
        raise UnknownNameError("price", price_id, list(table))
    return table[key]
