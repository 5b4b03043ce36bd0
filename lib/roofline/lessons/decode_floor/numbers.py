"""The batch-1 speed ceiling for every GPU and weight precision at once, and its figure.

Taught in lesson 02 (notebooks/02_decode_floor.ipynb).

With one user, a decode step reads every weight the token needs once, so no step beats the floor, and one
user can never stream faster than the ceiling:

    floor (s)        = weight bytes read per step ÷ (G × bandwidth of one GPU)
    ceiling (tok/s)  = 1 ÷ floor

The table below evaluates that for a model over GPUs (rows) × weight precisions (columns) in one numpy
broadcast. A cell has no ceiling when the GPU has no tensor-core math for that format (``supported``
False) or when the stored weights do not fit in the G GPUs' memory (``fits`` False): a server that cannot
start has no speed. Only the weights are counted (context 0, no KV cache), so "fits" is a best case.

>>> t = batch1_ceiling_table("llama-3-8b", gpus=["h100-sxm", "l4"], precisions=["fp32", "bf16", "int4"])
>>> t.ceiling_tokens_per_s.round().tolist()
[[112.0, 223.0, 720.0], [nan, 20.0, 65.0]]
>>> t.status("l4", "fp32")
'does not fit'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from roofline.checks import checked, out
from roofline.data import get_gpu, get_model
from roofline.data import gpus as _gpu_table
from roofline.errors import InvalidConfigurationError, UnsupportedPrecisionError
from roofline.physics.architecture import weight_bytes, weight_bytes_read
from roofline.physics.precision import PRECISIONS, compute_precision, get_precision

# Colour scale of the heatmap, fixed so that a colour means the same speed for every model (tokens/s).
CEILING_COLOR_RANGE_TOKENS_PER_S = (10.0, 1e4)


def decode_ceiling_tokens_per_s(weight_bytes_, bandwidth_bytes_per_s):
    """Fastest possible speed for ONE user (tokens/s): 1 ÷ (weight bytes ÷ bandwidth). Broadcasts.

    ``weight_bytes_`` are the bytes one batch-1 step reads (bytes); ``bandwidth_bytes_per_s`` is the memory
    bandwidth of all G GPUs in tensor parallel together (bytes/s).

    Taught in lesson 02.

    >>> round(decode_ceiling_tokens_per_s(16e9, 3.35e12))           # 8B in BF16 on one H100: ≈ 200
    209
    >>> decode_ceiling_tokens_per_s([16e9, 8e9], 3.35e12).round().tolist()   # BF16, then FP8 weights
    [209.0, 419.0]
    """
    w = checked(weight_bytes_, "weight_bytes", above=0)
    bw = checked(bandwidth_bytes_per_s, "bandwidth_bytes_per_s", above=0)
    return out(bw / w)


@dataclass(frozen=True)
class CeilingTable:
    """Batch-1 floor and ceiling of one model, GPUs (rows) × weight precisions (columns).

    Arrays are indexed ``[gpu, precision]`` unless their name says otherwise; times in s, rates in
    tokens/s, sizes in bytes. ``floor_s`` and ``ceiling_tokens_per_s`` are NaN where there is no ceiling.
    """

    model_id: str
    num_gpus: int  # G, GPUs in tensor parallel in every row
    gpu_ids: tuple[str, ...]
    precisions: tuple[str, ...]
    weight_bytes_stored: np.ndarray  # [precision] bytes to hold every weight (what must fit)
    weight_bytes_read: np.ndarray  # [precision] bytes a batch-1 step reads (MoE: only k of E experts)
    bandwidth_bytes_per_s: np.ndarray  # [gpu] of all G GPUs together
    memory_capacity_bytes: np.ndarray  # [gpu] of all G GPUs together
    supported: np.ndarray  # bool: the GPU has tensor-core math for this format
    fits: np.ndarray  # bool: the stored weights fit in the G GPUs' memory
    floor_s: np.ndarray
    ceiling_tokens_per_s: np.ndarray

    def _index(self, gpu: str, precision: str) -> tuple[int, int]:
        g, p = get_gpu(gpu).id, get_precision(precision).id
        if g not in self.gpu_ids or p not in self.precisions:
            raise InvalidConfigurationError(f"The table has no cell for {g} × {p}.")
        return self.gpu_ids.index(g), self.precisions.index(p)

    def status(self, gpu: str, precision: str) -> str:
        """``"ok"``, ``"unsupported"`` (no tensor-core math at that format) or ``"does not fit"``."""
        i, j = self._index(gpu, precision)
        if not self.supported[i, j]:
            return "unsupported"
        return "ok" if self.fits[i, j] else "does not fit"

    def ceiling(self, gpu: str, precision: str) -> float:
        """The ceiling of one cell (tokens/s); NaN where there is none."""
        i, j = self._index(gpu, precision)
        return float(self.ceiling_tokens_per_s[i, j])

    def floor(self, gpu: str, precision: str) -> float:
        """The floor of one cell (s); NaN where there is none."""
        i, j = self._index(gpu, precision)
        return float(self.floor_s[i, j])


def _has_math(gpu, precision: str) -> bool:
    """Whether ``gpu`` has math for weights in ``precision`` (``compute_precision``: a weight-only INT4 runs
    in BF16, or FP16 where the GPU lacks BF16)."""
    try:
        compute_precision(gpu, precision)
    except UnsupportedPrecisionError:
        return False
    return True


def batch1_ceiling_table(
    model,
    gpus: Sequence[str] | None = None,
    precisions: Sequence[str] | None = None,
    num_gpus: int = 1,
) -> CeilingTable:
    """Batch-1 decode floor and ceiling for ``model`` on every GPU × weight precision, in one broadcast.

    Parameters
    ----------
    model : model id or ``roofline.data.Model``.
    gpus : GPU ids for the rows (default: every GPU in ``data/gpus.toml``, in file order).
    precisions : weight precision ids for the columns (default: every id in ``PRECISIONS``).
    num_gpus : G, GPUs in tensor parallel in every row, ≥ 1 (their bandwidths and memories add).

    Taught in lesson 02.

    >>> t = batch1_ceiling_table("llama-3-70b", gpus=["h100-sxm"], precisions=["bf16", "fp8"], num_gpus=2)
    >>> (t.floor_s * 1e3).round(2).tolist()    # 139 GB (BF16) or 70.6 GB read (FP8) over 2 x 3.35 TB/s
    [[20.75, 10.53]]
    >>> batch1_ceiling_table("llama-3-8b", gpus=["a100-80gb-sxm"], precisions=["fp8"]).status(
    ...     "a100-80gb-sxm", "fp8")
    'unsupported'
    """
    checked(num_gpus, "num_gpus", minimum=1, scalar=True, whole=True)
    m = get_model(model)
    n = int(num_gpus)
    g_objs = [get_gpu(g) for g in (gpus if gpus is not None else list(_gpu_table()))]
    p_objs = [get_precision(p) for p in (precisions if precisions is not None else list(PRECISIONS))]
    if not g_objs or not p_objs:
        raise InvalidConfigurationError("Need at least one GPU and one precision.")

    # Each precision as the library's weight format (a narrow id quantizes the matmul weights; the
    # embedding, LM head and norms stay 16-bit, as real checkpoints do): bytes stored, and the bytes one
    # batch-1 token reads (all of a dense model but the embedding rows it skips; shared part + k experts
    # of an MoE).
    stored = np.array([weight_bytes(m, p.id) for p in p_objs])  # [P]
    read = np.array([float(weight_bytes_read(m, p.id, 1)) for p in p_objs])  # [P]
    bandwidth = n * np.array([g.memory_bandwidth_bytes_per_s for g in g_objs])  # [G]
    capacity = n * np.array([g.memory_bytes for g in g_objs])  # [G]
    supported = np.array([[_has_math(g, p.id) for p in p_objs] for g in g_objs])
    fits_ = stored[None, :] <= capacity[:, None]  # [G, P]
    ok = supported & fits_
    floor = np.where(ok, read[None, :] / bandwidth[:, None], np.nan)
    return CeilingTable(
        model_id=m.id,
        num_gpus=n,
        gpu_ids=tuple(g.id for g in g_objs),
        precisions=tuple(p.id for p in p_objs),
        weight_bytes_stored=stored,
        weight_bytes_read=read,
        bandwidth_bytes_per_s=bandwidth,
        memory_capacity_bytes=capacity,
        supported=supported,
        fits=fits_,
        floor_s=floor,
        ceiling_tokens_per_s=1.0 / floor,
    )
