"""Number formats: how many bytes a weight or a KV element takes, and which tensor-core math it uses.

Taught in lesson 02 (the two levers: fewer bytes per step) and lesson 28 (KV precision).

Grouped quantization stores a scale per group of values, so a 4-bit weight costs a little more than half
a byte: with a 16-bit scale per 128 weights it is 4/8 + 2/128 = 0.515625 bytes. Weights and KV cache are
chosen separately (e.g. FP8 weights with a BF16 KV cache).

**Precision per tensor.** A real low-bit checkpoint does not store every tensor in its
headline format: AWQ/GPTQ, FP8 and NVFP4 checkpoints quantize the linear layers of the transformer blocks
and keep the input embedding, the LM head, the norms and the MoE router in 16 bits. A *weight format*
(``WeightFormat``) says which element format each group of tensors uses. The rule for a plain id:

* ``"bf16"``, ``"fp16"``, ``"fp32"``: every tensor in that format;
* any narrower id (``"fp8"``, ``"int8"``, ``"int4"``, ``"fp4"``): the attention and MLP/expert matmul
  weights in that format, the embedding, LM head, norms, router and biases in BF16;
* a preset id (``WEIGHT_FORMATS``): its own table, e.g. ``"mxfp4-experts"`` (gpt-oss: only the MoE experts
  in MXFP4) or ``"gguf-q4_k_m"`` (llama.cpp: every tensor, whole-file average bits per weight).

**Which math a format runs in.** FP8, INT8 and FP4 weights use tensor-core math of that precision, which a
GPU has or lacks. A *weight-only* format is dequantized and multiplied in the activations' precision: W4A16
(``int4``, ``awq-int4``, ``gptq-int4``) in BF16, or FP16/FP32 where the GPU has no BF16 math; GGUF blocks
(llama.cpp) in FP16, else FP32; gpt-oss's ``mxfp4-experts`` in BF16, else FP16/FP32 (llama.cpp on a Mac).
So these formats run on every GPU, Apple's included (``compute_precision`` picks the math).

A model's default weights are its release format (``default_weight_precision``: models.toml's
``checkpoint_format``, e.g. DeepSeek-V3's ``fp8-block128``, gpt-oss's ``mxfp4-experts``).

>>> bytes_per_element("bf16")
2.0
>>> bytes_per_element("int4")
0.515625
>>> bytes_per_element("mxfp4")           # 32 four-bit values share one 8-bit scale: 17 bytes per 32
0.53125
>>> weight_format("int4").embedding.id, weight_format("int4").body.id
('bf16', 'int4')
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.errors import UnknownNameError, UnsupportedPrecisionError

# Weight-only formats dequantize to the activations' precision: where a GPU lacks BF16 math (Apple GPUs)
# they run in FP16, else FP32. GGUF kernels (llama.cpp) multiply in FP16, else FP32.
W16_FALLBACK = ("fp16", "fp32")
GGUF_FALLBACK = ("fp32",)


@dataclass(frozen=True)
class Precision:
    """A storage format.

    ``compute`` names the tensor-core precision the matrix multiplies run in (a key of a GPU's
    ``dense_flops_per_s``). Weight-only INT4 (W4A16, as in AWQ/GPTQ kernels) is unpacked to BF16 for the
    math, so its compute precision is ``bf16``; ``fallback`` lists the precisions a weight-only format's math
    runs in instead on a GPU without ``compute`` (FP16, then FP32), in order.
    """

    id: str
    bits: float
    group_size: int = 0  # values sharing one scale; 0 means no per-group scale
    scale_bits: int = 0
    compute: str = ""
    description: str = ""
    fallback: tuple[str, ...] = ()  # weight-only formats: the math used where the GPU lacks ``compute``

    @property
    def bytes_per_element(self) -> float:
        """Bytes per stored value, scale overhead included (bytes)."""
        scale = self.scale_bits / 8 / self.group_size if self.group_size else 0.0
        return self.bits / 8 + scale


PRECISIONS: dict[str, Precision] = {
    p.id: p
    for p in (
        Precision("fp32", 32, compute="fp32", description="IEEE single precision"),
        Precision("bf16", 16, compute="bf16", description="bfloat16, the usual serving format"),
        Precision("fp16", 16, compute="fp16", description="IEEE half precision"),
        Precision("fp8", 8, compute="fp8", description="FP8 (E4M3), per-tensor scale (negligible overhead)"),
        Precision("int8", 8, compute="int8", description="INT8, per-channel scale (negligible overhead)"),
        Precision(
            "int4",
            4,
            group_size=128,
            scale_bits=16,
            compute="bf16",
            description="INT4 weights, one 16-bit scale per 128 weights, math in BF16 (W4A16)",
            fallback=W16_FALLBACK,
        ),
        Precision(
            "fp4",
            4,
            group_size=16,
            scale_bits=8,
            compute="fp4",
            description="FP4 (NVFP4), one FP8 scale per 16 values, FP4 tensor-core math",
        ),
    )
}


# Element formats of real checkpoints, beyond the seven basic ids above (which the lessons' menus list).
# Sources: llama.cpp ggml/src/ggml-common.h (block_q4_0 = 18 bytes per 32 weights, block_q8_0 = 34 per 32,
# block_q6_K = 210 per 256, block_mxfp4 = 17 per 32, block_nvfp4 = 36 per 64), llama.cpp
# tools/quantize/README.md (Llama-3.1-8B Q4_K_M file: 4.8944 bits per weight), the OCP Microscaling (MX)
# v1.0 spec (MXFP4: 32 E2M1 values + one E8M0 scale), NVIDIA's NVFP4 blog (16 E2M1 values + one E4M3
# scale), DeepSeek-V3 README_WEIGHTS.md (FP8 E4M3 with one FP32 scale per 128 x 128 block), AutoAWQ's
# GEMM layout (int4 + one FP16 scale and one 4-bit zero point per group of 128). GGUF blocks are
# dequantized and multiplied in FP16 (llama.cpp's CUDA and Metal matmuls use F16 or F32 activations), so
# their compute is fp16, with fp32 where a GPU has no FP16 figure (a measured CPU row).
CHECKPOINT_ELEMENTS: dict[str, Precision] = {
    p.id: p
    for p in (
        Precision(
            "awq-int4",
            4,
            group_size=128,
            scale_bits=20,
            compute="bf16",
            description="AWQ int4 (GEMM layout): one FP16 scale + one 4-bit zero point per 128 weights, "
            "4.156 bits; math in BF16 (W4A16)",
            fallback=W16_FALLBACK,
        ),
        Precision(
            "fp8-block128",
            8,
            group_size=128 * 128,
            scale_bits=32,
            compute="fp8",
            description="FP8 E4M3 with one FP32 scale per 128 x 128 block (DeepSeek-V3), 8.002 bits",
        ),
        Precision(
            "mxfp4",
            4,
            group_size=32,
            scale_bits=8,
            compute="fp4",
            description="MXFP4 (OCP MX): 32 E2M1 values share one E8M0 scale, 4.25 bits",
        ),
        Precision(
            "nvfp4",
            4,
            group_size=16,
            scale_bits=8,
            compute="fp4",
            description="NVFP4: 16 E2M1 values share one E4M3 scale (plus one FP32 per tensor), 4.5 bits",
        ),
        Precision(
            "q4_0",
            4,
            group_size=32,
            scale_bits=16,
            compute="fp16",
            description="GGUF Q4_0: 32 4-bit values + one FP16 scale (18 bytes), 4.5 bits",
            fallback=GGUF_FALLBACK,
        ),
        Precision(
            "q8_0",
            8,
            group_size=32,
            scale_bits=16,
            compute="fp16",
            description="GGUF Q8_0: 32 int8 values + one FP16 scale (34 bytes), 8.5 bits",
            fallback=GGUF_FALLBACK,
        ),
        Precision(
            "q6_k",
            6.5625,
            compute="fp16",
            description="GGUF Q6_K: 210 bytes per 256 weights, 6.5625 bits (llama.cpp's usual output tensor)",
            fallback=GGUF_FALLBACK,
        ),
        Precision(
            "q4_k_m",
            4.8944,
            compute="fp16",
            description="GGUF Q4_K_M, a mix of Q4_K and Q6_K tensors: 4.8944 bits per weight averaged "
            "over the Llama-3.1-8B file (llama.cpp quantize README); model-dependent, 4.84 for Llama 2 7B",
            fallback=GGUF_FALLBACK,
        ),
    )
}


def get_precision(precision: str | Precision) -> Precision:
    """Look an element format up by id (a basic id, a checkpoint element, or a weight-format preset,
    which gives its main matmul format).

    >>> get_precision("fp8").bits
    8
    >>> get_precision("gguf-q4_0").id
    'q4_0'
    >>> get_precision("float8")
    Traceback (most recent call last):
    ...
    roofline.errors.UnknownNameError: Unknown precision 'float8'. Did you mean ...'fp8'...
    """
    if isinstance(precision, Precision):
        return precision
    if isinstance(precision, WeightFormat):
        return precision.body
    key = str(precision).strip().lower()
    if key in PRECISIONS:
        return PRECISIONS[key]
    if key in CHECKPOINT_ELEMENTS:
        return CHECKPOINT_ELEMENTS[key]
    if key in WEIGHT_FORMATS:
        return WEIGHT_FORMATS[key].body
    raise UnknownNameError(
        "precision", precision, list(dict.fromkeys([*PRECISIONS, *CHECKPOINT_ELEMENTS, *WEIGHT_FORMATS]))
    )


# The tensor groups a weight format assigns (keys of ``architecture.parameter_groups``).
TENSOR_GROUPS = ("embedding", "lm_head", "attention", "mlp", "experts", "other")


@dataclass(frozen=True)
class WeightFormat:
    """Which element format each group of weight tensors is stored in.

    ``body``: attention and dense/shared MLP matmul weights; ``experts``: the routed MoE experts;
    ``embedding``, ``lm_head``; ``other``: norms, router, biases, sinks. ``compute`` is ``body.compute``
    (the tensor-core math the matmuls run in); ``computes`` adds the fallbacks of a weight-only format
    (``fallback``, default the body's).
    """

    id: str
    body: Precision
    experts: Precision
    embedding: Precision
    lm_head: Precision
    other: Precision
    description: str = ""
    source: str = ""
    fallback: tuple[str, ...] | None = None  # None: the body's ``fallback``

    @property
    def compute(self) -> str:
        """The tensor-core math of the matmuls: the body's (``mxfp4-experts`` runs in BF16, as weight-only
        MXFP4 kernels on Hopper do; a Blackwell FP4 path would be faster, so this is not a lower bound
        there for compute-bound steps)."""
        return self.body.compute

    @property
    def computes(self) -> tuple[str, ...]:
        """The precisions the matmuls may run in, preferred first (``compute_precision`` picks one).

        >>> weight_format("gguf-q4_k_m").computes, weight_format("fp8").computes
        (('fp16', 'fp32'), ('fp8',))
        """
        return (self.compute, *(self.body.fallback if self.fallback is None else self.fallback))

    def element(self, group: str) -> Precision:
        """The element format of one tensor group (``TENSOR_GROUPS``)."""
        return self.body if group == "attention" or group == "mlp" else getattr(self, group)


def _preset(fid, body, *, experts=None, embedding="bf16", lm_head="bf16", other="bf16", description="",
            source="", fallback=None):  # fmt: skip
    e = get_precision(experts or body)
    return WeightFormat(fid, get_precision(body), e, get_precision(embedding), get_precision(lm_head),
                        get_precision(other), description, source, fallback)  # fmt: skip


# The common release and quantization formats, each with where it is defined.
PRESETS = (
    _preset(
        "awq-int4",
        "awq-int4",
        description="AWQ int4 linear layers; embedding, LM head in 16 bits",
        source="https://github.com/casper-hansen/AutoAWQ",
    ),
    _preset(
        "gptq-int4",
        "int4",
        description="GPTQ int4 (symmetric, FP16 scale per 128); embedding, LM head in 16 bits",
        source="https://github.com/ModelCloud/GPTQModel",
    ),
    _preset(
        "fp8-block128",
        "fp8-block128",
        description="DeepSeek-V3's release format: FP8 linear layers "
        "with 128 x 128 block scales; embedding, LM head, norms, router in BF16",
        source="https://github.com/deepseek-ai/DeepSeek-V3/blob/main/README_WEIGHTS.md",
    ),
    _preset(
        "mxfp4",
        "mxfp4",
        description="MXFP4 linear layers; embedding, LM head in BF16",
        source="https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf",
    ),
    _preset(
        "nvfp4",
        "nvfp4",
        description="NVFP4 linear layers; embedding, LM head in BF16",
        source="https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/",
    ),
    _preset(
        "mxfp4-experts",
        "bf16",
        experts="mxfp4",
        description="gpt-oss's release format: MoE expert "
        "weights in MXFP4, attention, router, embedding and LM head in BF16 (the gpt-oss "
        "quantization_config modules_to_not_convert)",
        source="https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json",
        fallback=W16_FALLBACK,  # weight-only: FP16 math where there is no BF16 (llama.cpp on a Mac)
    ),
    _preset(
        "gguf-q4_0",
        "q4_0",
        embedding="q4_0",
        lm_head="q6_k",
        other="fp32",
        description="llama.cpp Q4_0: every matmul and the token embedding in Q4_0, the output "
        "tensor in Q6_K, norms in FP32",
        source="https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-common.h",
    ),
    _preset(
        "gguf-q4_k_m",
        "q4_k_m",
        embedding="q4_k_m",
        lm_head="q4_k_m",
        other="fp32",
        description="llama.cpp Q4_K_M: the whole-file average (4.8944 bits on Llama-3.1-8B) for "
        "every tensor; the real mix keeps attn_v, half of ffn_down and the output in Q6_K",
        source="https://github.com/ggml-org/llama.cpp/blob/master/tools/quantize/README.md",
    ),
    _preset(
        "gguf-q8_0",
        "q8_0",
        embedding="q8_0",
        lm_head="q8_0",
        other="fp32",
        description="llama.cpp Q8_0: every matmul, embedding and output in Q8_0, norms in FP32",
        source="https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-common.h",
    ),
    _preset(
        "gguf-f16",
        "fp16",
        embedding="fp16",
        lm_head="fp16",
        other="fp32",
        description="llama.cpp F16: every matmul, embedding and output in FP16, norms in FP32",
        source="https://github.com/ggml-org/llama.cpp/blob/master/tools/quantize/README.md",
        fallback=W16_FALLBACK,  # llama.cpp widens F16 to FP32 math where there is no FP16 (a CPU)
    ),
)
WEIGHT_FORMATS: dict[str, WeightFormat] = {f.id: f for f in PRESETS}


def weight_format(precision: str | Precision | WeightFormat) -> WeightFormat:
    """The per-tensor weight format a precision id stands for (see the module docstring for the rule).

    >>> f = weight_format("fp8")
    >>> f.body.id, f.experts.id, f.embedding.id, f.lm_head.id, f.other.id
    ('fp8', 'fp8', 'bf16', 'bf16', 'bf16')
    >>> weight_format("fp16").embedding.id
    'fp16'
    >>> weight_format("mxfp4-experts").experts.bytes_per_element   # 4.25 bits
    0.53125
    """
    if isinstance(precision, WeightFormat):
        return precision
    if not isinstance(precision, Precision):
        key = str(precision).strip().lower()
        if key in WEIGHT_FORMATS:
            return WEIGHT_FORMATS[key]
    p = get_precision(precision)
    wide = p if p.bits >= 16 else PRECISIONS["bf16"]
    return WeightFormat(
        p.id, p, p, wide, wide, wide, f"{p.description}; embedding, LM head, norms in {wide.id}"
    )


def bytes_per_element(precision: str | Precision) -> float:
    """Bytes one stored value takes, group-scale overhead included (bytes).

    >>> bytes_per_element("fp8")
    1.0
    """
    return get_precision(precision).bytes_per_element


def compute_precision(gpu, precision: str | Precision | WeightFormat) -> str:
    """The math ``precision``'s matmuls run in on ``gpu``: the first of ``weight_format(precision).computes``
    the GPU's row quotes a dense peak for; raises ``UnsupportedPrecisionError`` if none.

    >>> from roofline.data import get_gpu
    >>> compute_precision(get_gpu("h100-sxm"), "gguf-q4_k_m"), compute_precision(get_gpu("m4-max"), "int4")
    ('fp16', 'fp16')
    """
    f = weight_format(precision)
    table = gpu.dense_flops_per_s
    found = next((c for c in f.computes if c in table), None)
    if found is None:
        supported = ", ".join(k for k in PRECISIONS if any(c in table for c in weight_format(k).computes))
        raise UnsupportedPrecisionError(
            f"{gpu.name} has no {f.compute} tensor-core math (asked for {f.id} weights). "
            f"Supported here: {supported or 'none'}. A precision missing from a GPU's row means the "
            "data sheet gives no dense figure for it (unsupported, or not published)."
        )
    return found


def peak_flops_per_s(gpu, precision: str | Precision) -> float:
    """Dense peak FLOP/s of ``gpu`` for the math ``precision`` runs in (``compute_precision``); raises if the
    GPU lacks it (FLOP/s).

    >>> from roofline.data import get_gpu
    >>> peak_flops_per_s(get_gpu("h100-sxm"), "bf16") / 1e12
    989.0
    >>> peak_flops_per_s(get_gpu("m4-max"), "gguf-q4_k_m") / 1e12    # Apple: FP16 at the FP32 shader rate
    17.2
    >>> peak_flops_per_s(get_gpu("a100-80gb-sxm"), "fp8")
    Traceback (most recent call last):
    ...
    roofline.errors.UnsupportedPrecisionError: NVIDIA A100 ... has no fp8 tensor-core math...
    """
    return gpu.dense_flops_per_s[compute_precision(gpu, precision)]


def default_weight_precision(model, gpu=None) -> str:
    """The weight format ``model`` (an id or ``Model``) is released in: its ``checkpoint_format`` in
    ``models.toml`` (config.json's ``torch_dtype`` or ``quantization_config``), the default a what-if starts
    from. A weight-format id of ``weight_format``. With ``gpu``: a BF16 release on a GPU without BF16 math
    (Apple's) runs as FP16, the same bytes, as llama.cpp and MLX load it there.

    >>> default_weight_precision("deepseek-v3"), default_weight_precision("gpt-oss-20b")
    ('fp8-block128', 'mxfp4-experts')
    >>> default_weight_precision("llama-3-8b"), default_weight_precision("llama-2-7b")
    ('bf16', 'fp16')
    >>> default_weight_precision("llama-3-8b", "m4-max")
    'fp16'
    """
    from roofline.data import get_gpu, get_model  # the tables sit below the formulas; imported when used

    released = weight_format(get_model(model).checkpoint_format).id
    if gpu is not None and released == "bf16":
        table = get_gpu(gpu).dense_flops_per_s
        if "bf16" not in table and "fp16" in table:
            return "fp16"
    return released
