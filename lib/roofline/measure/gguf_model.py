"""Llama-architecture GGUF files with random weights, made on this machine for llama.cpp.

Taught in notebooks/measure_your_machine.ipynb ("A real engine"). A model file is written from its *shapes*
(a ``TransformerConfig``, as for the numpy decoder) with the ``gguf`` package: random values, because a
step's time depends on its bytes and FLOPs, never on the values. Nothing is downloaded. The F16 file is
written here; Q8_0 and Q4_0 are made from it by llama.cpp's own quantizer, so they hold exactly the tensor
types llama.cpp chooses. Each GGUF file type is a library weight format, so the bytes a file holds are the
bytes the library counts (the tests check it tensor by tensor):

- ``F16``: every matrix in FP16, the 1-D norm weights in FP32 (llama.cpp keeps 1-D tensors in FP32);
- ``Q8_0``: the library's ``gguf-q8_0`` (every matrix in Q8_0, norms FP32);
- ``Q4_0``: the library's ``gguf-q4_0`` (matrices and token embedding in Q4_0, the output matrix in Q6_K,
  norms FP32): llama.cpp keeps the output tensor in Q6_K when its rows are a multiple of 256 wide, which
  is why the engine models' hidden sizes are, and why their embeddings are untied.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np

from roofline.data import user_data_dir
from roofline.errors import InvalidConfigurationError, UnknownNameError
from roofline.physics.architecture import weight_bytes
from roofline.physics.precision import WeightFormat, weight_format

from .transformer import TransformerConfig

ARCHITECTURE = "llama"
CONTEXT_TOKENS = 4096  # llama.context_length written into the files (the runs use far less)

# GGUF file type → the library's weight format (``physics.precision``), so bytes are counted in one place.
GGUF_FORMATS: dict[str, WeightFormat] = {
    t: weight_format(f"gguf-{t.lower()}") for t in ("F16", "Q8_0", "Q4_0")
}

# A model small enough for tests and doctests (a 140 KB file): 69,824 parameters.
TINY = TransformerConfig(
    layers=1, hidden_size=64, attention_heads=2, kv_heads=1, head_dim=32, intermediate_size=128,
    vocab_size=256, tied_embeddings=False,
)  # fmt: skip

# The engine models: Llama-architecture shapes with untied embeddings and hidden sizes a multiple of 256
# (the tiny one excepted: it is for tests, where only F16 is written).
ENGINE_MODELS: dict[str, TransformerConfig] = {
    # 100,682,496 parameters: 12 × 6,292,992 per layer + 2 × 16,384 × 768 + 768
    "random-llama-100m": TransformerConfig(
        layers=12, hidden_size=768, attention_heads=12, kv_heads=4, head_dim=64, intermediate_size=2048,
        vocab_size=16_384, tied_embeddings=False,
    ),
    # 506,656,000 parameters: 24 × 17,697,280 per layer + 2 × 32,000 × 1,280 + 1,280
    "random-llama-500m": TransformerConfig(
        layers=24, hidden_size=1280, attention_heads=20, kv_heads=4, head_dim=64, intermediate_size=3584,
        vocab_size=32_000, tied_embeddings=False,
    ),
    "random-llama-tiny": TINY,
}  # fmt: skip
LAB_MODELS = ("random-llama-100m", "random-llama-500m")  # what ``roofline measure --engine`` runs


def gguf_format(file_type: str) -> WeightFormat:
    """The library weight format of a GGUF file type (``"F16"``, ``"Q8_0"``, ``"Q4_0"``).

    >>> gguf_format("q4_0").lm_head.id
    'q6_k'
    """
    key = str(file_type).strip().upper()
    if key not in GGUF_FORMATS:
        raise UnknownNameError("GGUF file type", file_type, list(GGUF_FORMATS))
    return GGUF_FORMATS[key]


def engine_model(name: str) -> TransformerConfig:
    """The shapes of an engine model by name (``ENGINE_MODELS``).

    >>> engine_model("random-llama-100m").parameter_count
    100682496
    """
    if name not in ENGINE_MODELS:
        raise UnknownNameError("engine model", name, list(ENGINE_MODELS))
    return ENGINE_MODELS[name]


def tensor_shapes(cfg: TransformerConfig) -> list[tuple[str, tuple[int, ...]]]:
    """GGUF tensor names of a Llama model and their numpy shapes (rows, columns): ``x @ W.T`` layout, as
    llama.cpp stores them (a row per output feature).

    >>> [name for name, _ in tensor_shapes(TINY)][:4]
    ['token_embd.weight', 'output_norm.weight', 'output.weight', 'blk.0.attn_norm.weight']
    """
    d, i = cfg.hidden_size, cfg.intermediate_size
    q, kv = cfg.attention_heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    shapes = [("token_embd.weight", (cfg.vocab_size, d)), ("output_norm.weight", (d,))]
    if not cfg.tied_embeddings:
        shapes.append(("output.weight", (cfg.vocab_size, d)))
    for n in range(cfg.layers):
        shapes += [
            (f"blk.{n}.attn_norm.weight", (d,)),
            (f"blk.{n}.attn_q.weight", (q, d)),
            (f"blk.{n}.attn_k.weight", (kv, d)),
            (f"blk.{n}.attn_v.weight", (kv, d)),
            (f"blk.{n}.attn_output.weight", (d, q)),
            (f"blk.{n}.ffn_norm.weight", (d,)),
            (f"blk.{n}.ffn_gate.weight", (i, d)),
            (f"blk.{n}.ffn_up.weight", (i, d)),
            (f"blk.{n}.ffn_down.weight", (d, i)),
        ]
    return shapes


def _random_tensor(rng, shape) -> np.ndarray:
    if len(shape) == 1:  # a norm's weight: ones, in FP32
        return np.ones(shape, dtype=np.float32)
    # scaled by 1/sqrt(fan in) so activations keep unit size through the layers
    w = rng.standard_normal(shape, dtype=np.float32)
    w *= 1.0 / np.sqrt(shape[1])
    return w.astype(np.float16)


def write_gguf(cfg: TransformerConfig, path, seed: int = 0, name: str = "random-llama") -> Path:
    """Write an F16 Llama-architecture GGUF of ``cfg``'s shapes with random weights to ``path``; return it.

    The metadata is what llama.cpp needs to load it: the hyperparameters, and the smallest tokenizer it
    accepts (``tokenizer.ggml.model = "none"`` with ``llama.vocab_size``; token ids are fed directly).
    Tensors are generated and written one at a time, so memory stays near the largest tensor. The file
    appears only when complete (written beside it, then renamed).
    """
    import gguf  # the engine and test groups install it; imported here so the course runs without it

    if cfg.hidden_size != cfg.attention_heads * cfg.head_dim:
        raise InvalidConfigurationError(
            f"llama.cpp's llama architecture needs hidden_size = attention_heads × head_dim; got "
            f"{cfg.hidden_size} ≠ {cfg.attention_heads} × {cfg.head_dim}"
        )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    writer = gguf.GGUFWriter(tmp, ARCHITECTURE)
    writer.add_name(name)
    writer.add_context_length(CONTEXT_TOKENS)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_block_count(cfg.layers)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(cfg.attention_heads)
    writer.add_head_count_kv(cfg.kv_heads)
    writer.add_rope_dimension_count(cfg.head_dim)
    writer.add_rope_freq_base(cfg.rope_theta)
    writer.add_layer_norm_rms_eps(cfg.norm_eps)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_tokenizer_model("none")
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    shapes = tensor_shapes(cfg)
    for tensor_name, shape in shapes:
        dtype = np.dtype(np.float32 if len(shape) == 1 else np.float16)
        writer.add_tensor_info(tensor_name, shape, dtype, int(np.prod(shape)) * dtype.itemsize)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for _, shape in shapes:
        writer.write_tensor_data(_random_tensor(rng, shape))
    writer.close()
    os.replace(tmp, path)
    return path


def gguf_tensor_types(path) -> dict[str, str]:
    """Each tensor's GGML type in the GGUF file at ``path``, by name (``"F16"``, ``"Q4_0"``, ...).

    >>> import tempfile
    >>> types = gguf_tensor_types(write_gguf(TINY, Path(tempfile.mkdtemp()) / "t.gguf"))
    >>> types["output.weight"], types["output_norm.weight"]
    ('F16', 'F32')
    """
    import gguf

    return {t.name: t.tensor_type.name for t in gguf.GGUFReader(Path(path)).tensors}


def model_path(cfg: TransformerConfig, file_type: str, name: str = "random-llama") -> Path:
    """The cache path of ``cfg``'s model in ``file_type``, in ``user_data_dir()/models`` (never in the
    project): its name carries a hash of the shapes, so a changed shape never reuses a stale file.

    >>> model_path(TINY, "Q4_0").name
    'random-llama-...-q4_0.gguf'
    """
    key = hashlib.sha256(repr(sorted(asdict(cfg).items())).encode()).hexdigest()[:10]
    return user_data_dir() / "models" / f"{name}-{key}-{gguf_format(file_type).id.removeprefix('gguf-')}.gguf"


def check_file_matches_library(path, cfg: TransformerConfig, file_type: str) -> int:
    """The tensor bytes of the file at ``path`` (padding between tensors excluded), after checking they
    equal the library's weight bytes for ``cfg`` in ``file_type`` (bytes); raise if llama.cpp stored other
    tensor types than the library counts.

    >>> import tempfile
    >>> check_file_matches_library(write_gguf(TINY, Path(tempfile.mkdtemp()) / "t.gguf"), TINY, "F16")
    140032
    """
    import gguf

    held = sum(t.n_bytes for t in gguf.GGUFReader(Path(path)).tensors)
    counted = weight_bytes(cfg.as_model(), gguf_format(file_type))
    if held != counted:
        raise InvalidConfigurationError(
            f"{path} holds {held:,} bytes of tensors but the library counts {counted:,.0f} for "
            f"{file_type}: the tensor types differ ({sorted(set(gguf_tensor_types(path).values()))})"
        )
    return held
