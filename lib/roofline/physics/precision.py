"""Number formats: how many bytes a weight or a KV element takes, and which tensor-core math it uses.

Taught in lesson 02 (the two levers: fewer bytes per step) and lesson 28 (KV precision).

Grouped quantization stores a scale per group of values, so a 4-bit weight costs a little more than half
a byte: with a 16-bit scale per 128 weights it is 4/8 + 2/128 = 0.515625 bytes. Weights and KV cache are
chosen separately (e.g. FP8 weights with a BF16 KV cache).

>>> bytes_per_element("bf16")
2.0
>>> bytes_per_element("int4")
0.515625
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
    bits: int
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


def get_precision(precision: str | Precision) -> Precision:
    """Look a precision up by id.

    >>> get_precision("fp8").bits
    8
    >>> get_precision("float8")
    Traceback (most recent call last):
    ...
    roofline.errors.UnknownNameError: Unknown precision 'float8'. Did you mean 'fp8'...
    """
    if isinstance(precision, Precision):
        return precision
    key = str(precision).strip().lower()
    if key not in PRECISIONS:
        raise UnknownNameError("precision", precision, list(PRECISIONS))
    return PRECISIONS[key]


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
    p = get_precision(precision)
    table = gpu.dense_flops_per_s
    if p.compute not in table:
        supported = ", ".join(k for k in PRECISIONS if PRECISIONS[k].compute in table)
        raise UnsupportedPrecisionError(
            f"{gpu.name} has no {p.compute} tensor-core math (asked for {p.id} weights). "
            f"Supported here: {supported}."
        )
    return table[p.compute]
