"""Number formats: how many bytes a weight or a KV element takes, and which tensor-core math it uses.

Taught in lesson 02 (the two levers: fewer bytes per step) and lesson 28 (KV precision).

Grouped quantization stores a scale per group of values, so a 4-bit weight costs a little more than half
a byte: with a 16-bit scale per 128 weights it is 4/8 + 2/128 = 0.515625 bytes. Weights and KV cache are
chosen separately (e.g. FP8 weights with a BF16 KV cache).

**Precision per tensor** (issue 10, item 5). A real low-bit checkpoint does not store every tensor in its
headline format: AWQ/GPTQ, FP8 and NVFP4 checkpoints quantize the linear layers of the transformer blocks
and keep the input embedding, the LM head, the norms and the MoE router in 16 bits. A *weight format*
(``WeightFormat``) says which element format each group of tensors uses. The rule for a plain id:

* ``"bf16"``, ``"fp16"``, ``"fp32"``: every tensor in that format;
* any narrower id (``"fp8"``, ``"int8"``, ``"int4"``, ``"fp4"``): the attention and MLP/expert matmul
  weights in that format, the embedding, LM head, norms, router and biases in BF16;
* a preset id (``WEIGHT_FORMATS``): its own table, e.g. ``"mxfp4-experts"`` (gpt-oss: only the MoE experts
  in MXFP4) or ``"gguf-q4_k_m"`` (llama.cpp: every tensor, whole-file average bits per weight).

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


@dataclass(frozen=True)
class Precision:
    """A storage format.

    ``compute`` names the tensor-core precision the matrix multiplies run in (a key of a GPU's
    ``dense_flops_per_s``). Weight-only INT4 (W4A16, as in AWQ/GPTQ kernels) is unpacked to BF16 for the
    math, so its compute precision is ``bf16``.
    """

    id: str
    bits: float
    group_size: int = 0  # values sharing one scale; 0 means no per-group scale
    scale_bits: int = 0
    compute: str = ""
    description: str = ""

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
# GEMM layout (int4 + one FP16 scale and one 4-bit zero point per group of 128).
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
            compute="bf16",
            description="GGUF Q4_0: 32 4-bit values + one FP16 scale (18 bytes), 4.5 bits",
        ),
        Precision(
            "q8_0",
            8,
            group_size=32,
            scale_bits=16,
            compute="bf16",
            description="GGUF Q8_0: 32 int8 values + one FP16 scale (34 bytes), 8.5 bits",
        ),
        Precision(
            "q6_k",
            6.5625,
            compute="bf16",
            description="GGUF Q6_K: 210 bytes per 256 weights, 6.5625 bits (llama.cpp's usual output tensor)",
        ),
        Precision(
            "q4_k_m",
            4.8944,
            compute="bf16",
            description="GGUF Q4_K_M, a mix of Q4_K and Q6_K tensors: 4.8944 bits per weight averaged "
            "over the Llama-3.1-8B file (llama.cpp quantize README); model-dependent, 4.84 for Llama 2 7B",
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
    (the tensor-core math the matmuls run in).
    """

    id: str
    body: Precision
    experts: Precision
    embedding: Precision
    lm_head: Precision
    other: Precision
    description: str = ""
    source: str = ""

    @property
    def compute(self) -> str:
        """The tensor-core math of the matmuls: the body's (``mxfp4-experts`` runs in BF16, as weight-only
        MXFP4 kernels on Hopper do; a Blackwell FP4 path would be faster, so this is not a lower bound
        there for compute-bound steps)."""
        return self.body.compute

    def element(self, group: str) -> Precision:
        """The element format of one tensor group (``TENSOR_GROUPS``)."""
        return self.body if group == "attention" or group == "mlp" else getattr(self, group)


def _preset(fid, body, *, experts=None, embedding="bf16", lm_head="bf16", other="bf16", description="",
            source=""):  # fmt: skip
    e = get_precision(experts or body)
    return WeightFormat(fid, get_precision(body), e, get_precision(embedding), get_precision(lm_head),
                        get_precision(other), description, source)  # fmt: skip


WEIGHT_FORMATS: dict[str, WeightFormat] = {}


def _build_presets() -> None:
    rows = (
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
    )
    WEIGHT_FORMATS.update({f.id: f for f in rows})


_build_presets()


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


def peak_flops_per_s(gpu, precision: str | Precision) -> float:
    """Dense peak FLOP/s of ``gpu`` for math at ``precision`` (FLOP/s); raises if the GPU lacks it.

    >>> from roofline.data import get_gpu
    >>> peak_flops_per_s(get_gpu("h100-sxm"), "bf16") / 1e12
    989.0
    >>> peak_flops_per_s(get_gpu("a100-80gb-sxm"), "fp8")
    Traceback (most recent call last):
    ...
    roofline.errors.UnsupportedPrecisionError: NVIDIA A100 ... has no fp8 tensor-core math...
    """
    f = weight_format(precision)
    table = gpu.dense_flops_per_s
    if f.compute not in table:
        supported = ", ".join(k for k in PRECISIONS if PRECISIONS[k].compute in table)
        raise UnsupportedPrecisionError(
            f"{gpu.name} has no {f.compute} tensor-core math (asked for {f.id} weights). "
            f"Supported here: {supported or 'none'}. A precision missing from a GPU's row means the "
            "data sheet gives no dense figure for it (unsupported, or not published)."
        )
    return table[f.compute]
