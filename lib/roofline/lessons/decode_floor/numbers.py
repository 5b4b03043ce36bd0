"""Lesson 02's numbers: the decode floor and the speed ceiling of one user, for every GPU and weight
format at once (notebooks/02_decode_floor.ipynb).

With one user, a decode step reads every weight the token needs once, so no step beats the floor, and one
user can never stream faster than the ceiling:

    floor (s)        = weight bytes read per step ÷ (G × bandwidth of one GPU)
    ceiling (tok/s)  = 1 ÷ floor

``ceiling_table`` evaluates that for a model over GPUs (rows) × weight precisions (columns) in one numpy
broadcast, and the same for B users at T tokens each: a step then also reads every user's KV cache, and each
user gets one token per step (the roofline of that step, ``decode_step``'s bytes and FLOPs). A cell has no
ceiling when the GPU has no tensor-core math for that format (``supported`` False) or when the weights and
the KV cache do not fit in the G GPUs' memory (``fits`` False, all of it counted: a best case): a server
that cannot start has no speed.

>>> t = ceiling_table("llama-3-8b", gpus=["h100-sxm", "l4"], precisions=["fp32", "bf16", "int4"])
>>> t.ceiling_tokens_per_s.round().tolist()
[[112.0, 223.0, 720.0], [nan, 20.0, 65.0]]
>>> round(ceiling_table("llama-3-8b", ["h100-sxm"], ["bf16"], batch=32, context_tokens=1000).ceiling(
...     "h100-sxm", "bf16"))      # 32 users share the weight read, each reads its own 128 MB of KV
174
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
from roofline.physics.core import roofline_time_s
from roofline.physics.precision import PRECISIONS, get_precision, peak_flops_per_s
from roofline.physics.step import forward_step

# Colour scale of the heatmap, fixed so that a colour means the same speed for every model (tokens/s).
CEILING_COLOR_RANGE_TOKENS_PER_S = (10.0, 1e4)


def decode_ceiling_tokens_per_s(weight_bytes_, bandwidth_bytes_per_s):
    """Fastest possible speed for ONE user (tokens/s): 1 ÷ (weight bytes ÷ bandwidth). Broadcasts.

    ``weight_bytes_`` are the bytes one batch-1 step reads (bytes); ``bandwidth_bytes_per_s`` is the memory
    bandwidth of all G GPUs in tensor parallel together (bytes/s).

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
    """Decode floor and per-user ceiling of one model, GPUs (rows) × weight precisions (columns), for B users
    at T tokens of context each (B = 1, T = 0: the batch-1 floor).

    Arrays are indexed ``[gpu, precision]`` unless their name says otherwise; times in s, rates in
    tokens/s per user, sizes in bytes. ``floor_s`` and ``ceiling_tokens_per_s`` are NaN where there is no
    ceiling.
    """

    gpu_ids: tuple[str, ...]
    precisions: tuple[str, ...]
    weight_bytes_stored: np.ndarray  # [precision] bytes to hold every weight (what must fit)
    weight_bytes_read: np.ndarray  # [precision] weight bytes a step reads (MoE: the experts its tokens use)
    bytes_moved: np.ndarray  # [precision] bytes a step moves: the weights read plus every user's KV
    memory_needed_bytes: np.ndarray  # [precision] weights plus the B users' KV cache
    bandwidth_bytes_per_s: np.ndarray  # [gpu] of all G GPUs together
    memory_capacity_bytes: np.ndarray  # [gpu] of all G GPUs together
    supported: np.ndarray  # bool: the GPU has tensor-core math for this format
    fits: np.ndarray  # bool: weights and KV fit in the G GPUs' memory
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


def ceiling_table(
    model, gpus: Sequence[str] | None = None, precisions: Sequence[str] | None = None, num_gpus: int = 1,
    batch: int = 1, context_tokens: int = 0, kv_precision: str = "bf16",
) -> CeilingTable:  # fmt: skip
    """Decode floor and per-user ceiling for ``model`` on every GPU × weight precision, in one broadcast.

    Parameters
    ----------
    model : model id or ``roofline.data.Model``.
    gpus : GPU ids for the rows (default: every GPU in ``data/gpus.toml``, in file order).
    precisions : weight precision ids for the columns (default: every id in ``PRECISIONS``).
    num_gpus : G, GPUs in tensor parallel in every row, ≥ 1 (their bandwidths and memories add).
    batch, context_tokens : B ≥ 1 users at T ≥ 0 tokens of KV each (users, tokens); B = 1, T = 0 (the
        default) is the batch-1 floor.
    kv_precision : the KV cache's format.

    >>> t = ceiling_table("llama-3-70b", gpus=["h100-sxm"], precisions=["bf16", "fp8"], num_gpus=2)
    >>> (t.floor_s * 1e3).round(2).tolist()    # 139 GB (BF16) or 70.6 GB read (FP8) over 2 x 3.35 TB/s
    [[20.75, 10.53]]
    """
    checked(num_gpus, "num_gpus", minimum=1, scalar=True, whole=True)
    b = int(checked(batch, "batch", minimum=1, scalar=True, whole=True))
    t = int(checked(context_tokens, "context_tokens", minimum=0, scalar=True, whole=True))
    m = get_model(model)
    n = int(num_gpus)
    g_objs = [get_gpu(g) for g in (gpus if gpus is not None else list(_gpu_table()))]
    p_objs = [get_precision(p) for p in (precisions if precisions is not None else list(PRECISIONS))]
    if not g_objs or not p_objs:
        raise InvalidConfigurationError("Need at least one GPU and one precision.")
    # What one step moves and computes does not depend on the GPU: the step engine's count, once per format
    # (each precision as the library's weight format: a narrow id quantizes the matmul weights; the
    # embedding, LM head and norms stay 16-bit, as real checkpoints do).
    work = [_decode_work(m, b, t, n, p.id, kv_precision) for p in p_objs]
    stored = np.array([weight_bytes(m, p.id) for p in p_objs])  # [P]
    read, moved, flops, need = (np.array([w[k] for w in work]) for k in range(4))  # [P]
    bandwidth = n * np.array([g.memory_bandwidth_bytes_per_s for g in g_objs])  # [G]
    capacity = n * np.array([g.memory_bytes for g in g_objs])  # [G]
    peak = n * np.array([[_peak(g, p.id) for p in p_objs] for g in g_objs])  # [G, P], NaN: no math
    supported = np.isfinite(peak)
    fits_ = need[None, :] <= capacity[:, None]  # [G, P]
    ok = supported & fits_
    with np.errstate(invalid="ignore"):
        step = np.asarray(  # cells that cannot run get placeholder numbers, then NaN
            roofline_time_s(
                np.nan_to_num(flops), np.nan_to_num(moved), np.where(ok, peak, 1.0), bandwidth[:, None]
            )
        )
    floor = np.where(ok, step, np.nan)
    return CeilingTable(
        gpu_ids=tuple(g.id for g in g_objs), precisions=tuple(p.id for p in p_objs),
        weight_bytes_stored=stored, weight_bytes_read=read,
        bytes_moved=moved, memory_needed_bytes=need, bandwidth_bytes_per_s=bandwidth,
        memory_capacity_bytes=capacity, supported=supported, fits=fits_, floor_s=floor,
        ceiling_tokens_per_s=1.0 / floor,
    )  # fmt: skip


def _decode_work(m, batch, context_tokens, num_gpus, precision, kv_precision) -> tuple[float, ...]:
    """(weight bytes read, bytes moved, FLOPs, memory needed) of one decode step with weights in
    ``precision``: the step engine's count (``forward_step`` as ``decode_step`` counts it), on any GPU with
    math for the format (what a step moves does not depend on the GPU) and all of its memory. NaN but the
    weights read where no GPU of the tables has the math."""
    ref = next((g for g in _gpu_table().values() if np.isfinite(_peak(g, precision))), None)
    if ref is None:
        return float(weight_bytes_read(m, precision, batch)), np.nan, np.nan, np.nan
    s = forward_step(
        m, ref, batch, context_tokens, count_new_kv=False, num_gpus=num_gpus, weight_precision=precision,
        kv_precision=kv_precision, on_overflow="ignore", memory="ideal",
    )  # fmt: skip
    return float(s.weight_bytes_read), float(s.bytes_moved), float(s.flops), float(s.memory_needed_bytes)


def _peak(gpu, precision: str) -> float:
    """One GPU's dense peak (FLOP/s) for weights in ``precision`` (``peak_flops_per_s``: a weight-only
    INT4 runs in BF16, or FP16 where the GPU lacks BF16); NaN where it has no such math."""
    try:
        return float(peak_flops_per_s(gpu, precision))
    except UnsupportedPrecisionError:
        return float("nan")
