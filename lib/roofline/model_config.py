"""A model's architecture from its Hugging Face ``config.json``: the fields of a ``models.toml`` row.

A model outside the table is described by the file its publisher ships. This module reads the standard
fields of the architectures the table covers (Llama 2/3/3.1/3.2, Mistral, Mixtral, Qwen2/2.5 and Qwen2-MoE,
Qwen3 dense and MoE, DeepSeek-V2/V3/R1 with MLA and MoE, gpt-oss with its sliding window, MiniMax-M2/M2.5)
and returns the same keys a row of ``data/models.toml`` has; ``roofline.data.model_from_config`` checks
them as a row. It never guesses: a ``model_type`` it does not know, a missing field, or a feature the row
cannot express (an MLP bias, a linear-attention layer, a quantization it has no format for) raises
``ModelConfigError`` naming the field and what is supported.

Every table model round-trips: ``data/model_configs/<id>.json`` gives its row's architecture (tested).

>>> row = row_from_config({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
...     "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
...     "vocab_size": 128256, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"})
>>> row["head_dim"], row["kv_heads"], row["checkpoint_format"]
(128, 8, 'bf16')
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from roofline.errors import ModelConfigError
from roofline.files import read_regular_file

MAX_CONFIG_BYTES = 4 * 2**20  # a config.json is a few kB; anything this large is not one

DENSE_TYPES = ("llama", "mistral", "qwen2", "qwen3")
MOE_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gpt_oss", "minimax_m2")
SUPPORTED_TYPES = DENSE_TYPES + MOE_TYPES

# torch dtype names (``torch_dtype``, or ``dtype`` in newer transformers) -> weight-format ids
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def _fail(where: str, field: str, problem: str) -> ModelConfigError:
    return ModelConfigError(f"{where}: field {field!r}: {problem}")


class ConfigReader:
    """Typed access to one config's fields, every error naming ``where`` (the file) and the field."""

    def __init__(self, config: Mapping, where: str):
        self.config, self.where = config, where

    def has(self, key: str) -> bool:
        return self.config.get(key) is not None

    def count(self, key: str, default: int | None = None, least: int = 1) -> int:
        """A whole number ≥ ``least`` (``default`` when the field is absent or null, if given)."""
        value = self.config.get(key)
        if value is None:
            if default is None:
                raise _fail(self.where, key, "missing; this architecture needs it")
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise _fail(self.where, key, f"expected a whole number, got {value!r}")
        if not least <= value <= 10**12:
            raise _fail(self.where, key, f"{value} is outside {least}..10^12")
        return int(value)

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.config.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise _fail(self.where, key, f"expected true or false, got {value!r}")
        return value

    def text(self, key: str, default: str = "") -> str:
        value = self.config.get(key, default)
        if value is None:
            return default
        if not isinstance(value, str):
            raise _fail(self.where, key, f"expected a string, got {value!r}")
        return value

    def refuse(self, key: str, allowed, why: str) -> None:
        """Fail if the field is present with a value outside ``allowed`` (``why``: what a row cannot say)."""
        value = self.config.get(key)
        if value is not None and value not in allowed:
            raise _fail(self.where, key, f"{value!r} is not supported: {why}")


def model_type(config: Mapping, where: str) -> str:
    """The config's ``model_type``, one of ``SUPPORTED_TYPES``."""
    kind = config.get("model_type")
    if not isinstance(kind, str) or kind not in SUPPORTED_TYPES:
        nested = " (a multimodal config: read its text_config)" if "text_config" in config else ""
        raise _fail(
            where, "model_type", f"{kind!r} is not supported{nested}; supported: {', '.join(SUPPORTED_TYPES)}"
        )
    return kind


def attention_fields(c: ConfigReader, kind: str) -> dict[str, Any]:
    """Layers, widths, heads and the attention's biases and norms."""
    heads = c.count("num_attention_heads")
    hidden = c.count("hidden_size")
    if not c.has("head_dim") and hidden % heads:
        raise _fail(
            c.where, "head_dim", f"missing, and hidden_size {hidden} is not a multiple of {heads} heads"
        )
    c.refuse("mlp_bias", (False,), "the table has no MLP biases")
    return {
        "layers": c.count("num_hidden_layers"),
        "hidden_size": hidden,
        "attention_heads": heads,
        "kv_heads": c.count("num_key_value_heads", default=heads),  # transformers' default: plain MHA
        "head_dim": c.count("head_dim", default=hidden // heads),
        "intermediate_size": c.count("intermediate_size"),
        "vocab_size": c.count("vocab_size"),
        "tied_embeddings": c.flag("tie_word_embeddings"),
        # Qwen2's q/k/v projections always carry biases (no config key); the others say so or default off.
        "attention_bias": True if kind in ("qwen2", "qwen2_moe", "gpt_oss") else c.flag("attention_bias"),
        "max_context_tokens": c.count("max_position_embeddings"),
        "qk_norm": kind in ("qwen3", "qwen3_moe") or (kind == "minimax_m2" and c.flag("use_qk_norm")),
    }


def sliding_fields(c: ConfigReader, kind: str, layers: int) -> dict[str, Any]:
    """Which layers attend to a sliding window, from ``layer_types`` or the architecture's own rule."""
    window = c.count("sliding_window", default=0, least=0)
    types = c.config.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            raise _fail(c.where, "layer_types", f"expected a list of {layers} layer kinds")
        unknown = sorted({str(t) for t in types if t not in ("full_attention", "sliding_attention")})
        if unknown:
            raise _fail(
                c.where,
                "layer_types",
                f"{unknown} not supported: only full_attention and "
                "sliding_attention layers (a layer without a KV cache cannot be expressed)",
            )
        sliding = types.count("sliding_attention")
        pattern = f"layer_types: {sliding} of {layers} layers slide (window {window})"
    elif kind in ("mistral", "mixtral"):
        sliding, pattern = (layers if window else 0), f"every layer slides (window {window})"
    elif kind.startswith("qwen") and c.flag("use_sliding_window"):
        first = c.count("max_window_layers", default=layers, least=0)  # Qwen2: layers from here on slide
        sliding, pattern = max(layers - first, 0), f"layers {first} and up slide (window {window})"
    else:
        sliding = 0
    if not sliding or not window:
        return {}
    return {"sliding_window": window, "sliding_window_layers": sliding, "layer_pattern": pattern}


def moe_fields(c: ConfigReader, kind: str) -> dict[str, Any]:
    """Experts, their width and sharing, routing, and (DeepSeek) the dense leading layers."""
    if kind not in MOE_TYPES:
        return {}
    experts_key = {"mixtral": "num_local_experts", "gpt_oss": "num_local_experts",
                   "minimax_m2": "num_local_experts"}.get(kind, "num_experts")  # fmt: skip
    if kind.startswith("deepseek"):
        experts_key = "n_routed_experts"
    out = {"experts": c.count(experts_key), "experts_per_token": c.count("num_experts_per_tok")}
    if kind == "gpt_oss":  # every expert is intermediate_size wide; biases on attention output and experts
        out |= {
            "moe_intermediate_size": c.count("intermediate_size"),
            "attention_sinks": True,
            "attention_output_bias": True,
            "expert_bias": True,
            "router_bias": True,
        }
    elif kind == "minimax_m2":  # every layer MoE, experts intermediate_size wide; sigmoid routing with a bias
        c.refuse("shared_intermediate_size", (0,), "the table has no shared expert for this architecture")
        out |= {
            "moe_intermediate_size": c.count("intermediate_size"),
            "shared_experts": 0,
            "router_bias": c.flag("use_routing_bias"),
        }
    elif kind != "mixtral":  # Mixtral's experts are intermediate_size wide (the row leaves this field 0)
        out["moe_intermediate_size"] = c.count("moe_intermediate_size")
    if kind in ("qwen2_moe", "qwen3_moe"):
        c.refuse("decoder_sparse_step", (1,), "every layer must be an MoE layer")
        c.refuse("mlp_only_layers", ([],), "every layer must be an MoE layer")
    if kind == "qwen2_moe":
        out["shared_experts"] = qwen2_shared_experts(c, out["moe_intermediate_size"])
    if kind.startswith("deepseek"):
        c.refuse("moe_layer_freq", (1,), "every layer after the dense ones must be an MoE layer")
        out |= {
            "shared_experts": c.count("n_shared_experts", default=0, least=0),
            "first_dense_layers": c.count("first_k_dense_replace", default=0, least=0),
            "routing_groups": c.count("n_group", default=1),
            "routing_groups_per_token": c.count("topk_group", default=1),
            "mtp_layers": c.count("num_nextn_predict_layers", default=0, least=0),
            "router_bias": c.text("topk_method") == "noaux_tc",  # V3's e_score_correction_bias
        }
    return out


def qwen2_shared_experts(c: ConfigReader, expert_width: int) -> int:
    """Qwen2-MoE's one wide shared expert, as a number of routed-width experts (its width must divide)."""
    width = c.count("shared_expert_intermediate_size", default=0, least=0)
    if width % expert_width:
        raise _fail(
            c.where,
            "shared_expert_intermediate_size",
            f"{width} is not a multiple of moe_intermediate_size {expert_width}",
        )
    return width // expert_width


def mla_fields(c: ConfigReader, kind: str) -> dict[str, Any]:
    """Multi-head latent attention (DeepSeek): the cached latent and the per-head widths."""
    if not kind.startswith("deepseek"):
        return {}
    v_head_dim = c.count("v_head_dim")
    return {
        "q_lora_rank": c.count("q_lora_rank", default=0, least=0),  # null: queries projected directly
        "kv_lora_rank": c.count("kv_lora_rank"),
        "qk_nope_head_dim": c.count("qk_nope_head_dim"),
        "qk_rope_head_dim": c.count("qk_rope_head_dim"),
        "v_head_dim": v_head_dim,
        "head_dim": v_head_dim,  # the row's convention: attention output width per head
    }


def release_format(c: ConfigReader, kind: str) -> str:
    """The weight-format id of the release: from ``quantization_config``, else the dtype."""
    quant = c.config.get("quantization_config")
    if quant is not None:
        if not isinstance(quant, Mapping):
            raise _fail(c.where, "quantization_config", f"expected an object, got {quant!r}")
        method = quant.get("quant_method")
        block = quant.get("weight_block_size")
        if method == "fp8" and block in ([128, 128], None):
            return "fp8-block128" if block else "fp8"
        if method == "mxfp4" and kind == "gpt_oss":
            return "mxfp4-experts"
        raise _fail(
            c.where,
            "quantization_config",
            f"quant_method {method!r} (weight_block_size {block!r}) is not supported: fp8 per tensor "
            "or in 128x128 blocks, and gpt-oss's mxfp4 experts",
        )
    dtype = c.config.get("torch_dtype", c.config.get("dtype"))
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise _fail(
            c.where,
            "torch_dtype",
            f"{dtype!r}: expected one of {', '.join(DTYPES)} (the dtype the weights are released in)",
        )
    return DTYPES[dtype]


def row_from_config(config: Mapping, where: str = "config.json") -> dict[str, Any]:
    """The ``models.toml`` row fields (architecture only: no id, name or sources) of a config.json's
    contents. ``where`` names the file in errors. Raises ``ModelConfigError`` for anything it cannot read.

    >>> row = row_from_config({"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48,
    ...     "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144,
    ...     "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936,
    ...     "max_position_embeddings": 40960, "torch_dtype": "bfloat16"})
    >>> row["experts"], row["moe_intermediate_size"], row["qk_norm"]
    (128, 768, True)
    >>> row_from_config({"model_type": "mamba"})
    Traceback (most recent call last):
    ...
    roofline.errors.ModelConfigError: config.json: field 'model_type': 'mamba' is not supported; ...
    """
    if not isinstance(config, Mapping):
        raise ModelConfigError(f"{where}: expected a JSON object (a model's config.json)")
    kind = model_type(config, where)
    c = ConfigReader(config, where)
    row = attention_fields(c, kind)
    row |= sliding_fields(c, kind, row["layers"])
    row |= moe_fields(c, kind)
    row |= mla_fields(c, kind)
    row["checkpoint_format"] = release_format(c, kind)
    return row


def config_path(path: str | os.PathLike) -> Path:
    """The config.json a user names: the file itself, or a folder holding one."""
    p = Path(path).expanduser()
    return p / "config.json" if p.is_dir() else p


def config_files(folder: str | os.PathLike) -> list[Path]:
    """The configs in ``folder``, in name order: its ``*.json`` files and its subfolders' ``config.json``
    (none if it is not a folder).

    >>> [p.name for p in config_files("no/such/folder")]
    []
    """
    path = Path(folder).expanduser()
    if not path.is_dir():
        return []
    return sorted(p for p in [*path.glob("*.json"), *path.glob("*/config.json")] if p.is_file())


def read_config(path: str | os.PathLike) -> dict:
    """The parsed JSON object of a config.json (a file, or a folder holding one). Refuses what is not a
    regular file, a file over ``MAX_CONFIG_BYTES``, bytes that are not UTF-8 JSON, and JSON that is not an
    object, with ``ModelConfigError`` naming the file.

    >>> read_config("no/such/folder")
    Traceback (most recent call last):
    ...
    roofline.errors.ModelConfigError: no/such/folder: cannot read a config.json there: ...
    """
    p = config_path(path)
    try:
        raw = read_regular_file(p, MAX_CONFIG_BYTES)
    except OSError as exc:
        raise ModelConfigError(f"{path}: cannot read a config.json there: {exc.strerror or exc}") from None
    try:
        config = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ModelConfigError(f"{p}: not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ModelConfigError(f"{p}: expected a JSON object (a model's config.json)")
    return config


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def model_id_for(path: str | os.PathLike, config: Mapping) -> str:
    """An id for the model at ``path``: the Hub cache's ``models--org--name`` folder, else the folder a
    ``config.json`` sits in, else the file's stem; lowercased, other characters turned into '-'.

    >>> model_id_for("/cache/models--Qwen--Qwen2.5-14B/snapshots/ab12/config.json", {})
    'qwen2.5-14b'
    >>> model_id_for("configs/Mistral-Small-24B.json", {})
    'mistral-small-24b'
    """
    p = config_path(path)
    name = p.stem if p.name != "config.json" else p.parent.name
    for part in reversed(p.parts):
        hub = re.fullmatch(r"models--[^/]+--(.+)", part)
        if hub:
            name = hub.group(1)
            break
    slug = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")
    return slug or re.sub(r"[^a-z0-9._-]+", "-", str(config.get("model_type", "model")).lower())


def is_config_path(name: str) -> bool:
    """Whether a ``--model`` value names a file or folder rather than an id: a path separator, a ``.json``
    ending, or an existing folder with a config.json.

    >>> is_config_path("llama-3-8b"), is_config_path("./my-model/config.json")
    (False, True)
    """
    text = str(name)
    if os.sep in text or "/" in text or text.lower().endswith(".json") or text.startswith("~"):
        return True
    return Path(text).is_dir() and (Path(text) / "config.json").is_file()
