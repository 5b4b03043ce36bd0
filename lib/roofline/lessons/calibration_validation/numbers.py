"""Where an engine's kernel numbers come from, GPU by GPU: notebooks/calibration_validation.ipynb."""

from __future__ import annotations

import re

from roofline.data import get_gpu
from roofline.engines.params import engine_params
from roofline.engines.registry import DEFAULT_ENGINE


def kernel_origin(kernels_from: str) -> str:
    """A short label of where an engine's kernel numbers come from: "timed" (its kernels were timed on
    this GPU), "borrowed from <gpu>" (a sibling of the same family), "sourced" (data sheet plus a cited
    achievable bandwidth and GEMM fraction), or "fitted end to end" (an engine without kernel timings).

    >>> kernel_origin(engine_params("vllm", "h100-sxm").kernels_from)
    'timed'
    >>> kernel_origin(engine_params("vllm", "gh200").kernels_from)
    'borrowed from h100-sxm'
    """
    if kernels_from.startswith("bandwidth fractions fitted end to end"):
        return "fitted end to end"
    borrowed = re.search(r"has no kernel timings: (\S+)'s \(same", kernels_from)
    if borrowed:
        return f"borrowed from {borrowed.group(1)}"
    if "sourced" in kernels_from:
        return "sourced"
    return "timed (median over today's engines)" if "median over" in kernels_from else "timed"


def kernel_table(gpus, engine: str = DEFAULT_ENGINE) -> list[dict]:
    """Per GPU (ids): its family, the engine's kernel numbers (fractions of peak; ``gemm_kernel_s`` in s) and
    their origin (:func:`kernel_origin`).

    >>> [r["origin"] for r in kernel_table(["h100-sxm", "mi300x"])]
    ['timed', 'sourced']
    """
    keys = ("gemm_compute_fraction", "gemm_bandwidth_fraction", "kv_bandwidth_fraction", "gemm_kernel_s")
    rows = []
    for gpu in gpus:
        p = engine_params(engine, gpu)
        row = {"gpu": get_gpu(gpu).id, "family": p.gpu_family, **{k: getattr(p, k) for k in keys}}
        rows.append({**row, "origin": kernel_origin(p.kernels_from)})
    return rows
