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
[[104.0, 209.0, 809.0], [nan, 19.0, 72.0]]
>>> t.status("l4", "fp32")
'does not fit'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import LogNorm
from matplotlib.patches import Rectangle

from ._arrays import checked, out
from .architecture import parameter_count, weight_bytes_read
from .data import get_gpu, get_model
from .data import gpus as _gpu_table
from .errors import InvalidConfigurationError
from .plots import LiveFigure
from .precision import PRECISIONS, bytes_per_element, get_precision
from .scenario import Scenario
from .units import GB, MS, TB
from .widgets import table_html

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
    >>> (t.floor_s * 1e3).round(1).tolist()    # 141 GB (BF16) or 70.6 GB (FP8) over 2 x 3.35 TB/s
    [[21.1, 10.5]]
    >>> batch1_ceiling_table("llama-3-8b", gpus=["a100-80gb-sxm"], precisions=["fp8"]).status(
    ...     "a100-80gb-sxm", "fp8")
    'unsupported'
    """
    m = get_model(model)
    n = checked(num_gpus, "num_gpus", minimum=1)
    if n.ndim != 0 or n != int(n):
        raise InvalidConfigurationError(f"num_gpus must be one whole number, got {num_gpus!r}")
    g_objs = [get_gpu(g) for g in (gpus if gpus is not None else list(_gpu_table()))]
    p_objs = [get_precision(p) for p in (precisions if precisions is not None else list(PRECISIONS))]
    if not g_objs or not p_objs:
        raise InvalidConfigurationError("Need at least one GPU and one precision.")

    bytes_each = np.array([bytes_per_element(p) for p in p_objs])  # [P] bytes per weight
    # Parameters one batch-1 token reads (all of a dense model; shared part + k experts of an MoE).
    params_read = weight_bytes_read(m, "bf16", 1) / bytes_per_element("bf16")
    stored = parameter_count(m) * bytes_each  # [P]
    read = params_read * bytes_each  # [P]
    bandwidth = float(n) * np.array([g.memory_bandwidth_bytes_per_s for g in g_objs])  # [G]
    capacity = float(n) * np.array([g.memory_bytes for g in g_objs])  # [G]
    supported = np.array([[p.compute in g.dense_flops_per_s for p in p_objs] for g in g_objs])
    fits_ = stored[None, :] <= capacity[:, None]  # [G, P]
    ok = supported & fits_
    floor = np.where(ok, read[None, :] / bandwidth[:, None], np.nan)
    return CeilingTable(
        model_id=m.id,
        num_gpus=int(n),
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


class CeilingHeatmap(LiveFigure):
    """Batch-1 ceiling (tokens/s) of the scenario's model for every GPU × weight precision, G GPUs each.

    Each cell shows the ceiling; "does not fit" cells are hatched grey and say how much memory the weights
    need; "—" marks formats the GPU has no tensor-core math for. The scenario's own GPU × precision cell
    is outlined. Colours use one fixed log scale, so a colour means the same speed for every model.

    The table depends only on the model and G, so the cells are part of the cached background (redrawn
    when the model or G changes) and a change of GPU or precision moves only the outline.
    """

    def _build(self):
        ax = self.axes[0]
        self.fig.set_size_inches(9, 5.6)
        self.gpu_ids = tuple(_gpu_table())
        self.precisions = tuple(PRECISIONS)
        self.norm = LogNorm(*CEILING_COLOR_RANGE_TOKENS_PER_S)
        rows, cols = len(self.gpu_ids), len(self.precisions)
        self.image = ax.imshow(
            np.full((rows, cols), np.nan),
            cmap=colormaps["viridis"].with_extremes(bad="#f2f2f2"),
            norm=self.norm,
            aspect="auto",
            zorder=1,
        )
        bar = self.fig.colorbar(self.image, ax=ax, pad=0.02)
        bar.set_label("tokens/s for one user (ceiling)")
        ax.set_xticks(range(cols), self.precisions)
        ax.set_yticks(range(rows), self.gpu_ids)
        ax.grid(False)
        ax.vlines(np.arange(cols + 1) - 0.5, -0.5, rows - 0.5, color="white", lw=2, zorder=3)
        ax.hlines(np.arange(rows + 1) - 0.5, -0.5, cols - 0.5, color="white", lw=2, zorder=3)
        ax.set_xlabel("weight precision (— = no tensor-core math for it; hatched = weights do not fit)")
        ax.set_xlim(-0.5, cols - 0.5)
        ax.set_ylim(rows - 0.5, -0.5)
        ax.set_title("Batch-1 decode ceiling for one user", fontsize=13, pad=24)
        self.subtitle = ax.text(0.5, 1.012, "", transform=ax.transAxes, ha="center", va="bottom", fontsize=11)
        self.hatches = np.empty((rows, cols), dtype=object)
        self.labels = np.empty((rows, cols), dtype=object)
        for i in range(rows):
            for j in range(cols):
                self.hatches[i, j] = ax.add_patch(_cell_patch(j, i, hatch=True))
                self.labels[i, j] = ax.text(j, i, "", ha="center", va="center", linespacing=0.95, zorder=4)
        self.outline = self._moving(ax.add_patch(_cell_patch(0, 0, outline=True)))

    def _draw(self, s: Scenario):
        self._draw_outline(s)
        if self.background_key == (s.model, s.num_gpus):
            return  # the cells already show this table
        self.background_key = (s.model, s.num_gpus)
        t = batch1_ceiling_table(s.model, self.gpu_ids, self.precisions, s.num_gpus)
        self.image.set_data(t.ceiling_tokens_per_s)
        for i in range(len(self.gpu_ids)):
            for j in range(len(self.precisions)):
                label, no_fit = self.labels[i, j], t.supported[i, j] and not t.fits[i, j]
                self.hatches[i, j].set_visible(no_fit)
                if not t.supported[i, j]:
                    label.set(text="—", color="#777777", fontsize=12)
                elif no_fit:
                    label.set(
                        text=f"no fit\n{t.weight_bytes_stored[j] / GB:.0f} GB", color="#333333", fontsize=8.5
                    )
                else:
                    v = t.ceiling_tokens_per_s[i, j]
                    label.set(
                        text=f"{v:,.0f}", color="white" if self.norm(v) < 0.55 else "black", fontsize=10.5
                    )
        g = "1 GPU" if s.num_gpus == 1 else f"{s.num_gpus} GPUs in tensor parallel"
        self.subtitle.set_text(f"{s.model} on {g} of each type")

    def _draw_outline(self, s: Scenario):
        here = s.gpu in self.gpu_ids and s.weight_precision in self.precisions
        self.outline.set_visible(here)
        if here:
            i, j = self.gpu_ids.index(s.gpu), self.precisions.index(s.weight_precision)
            self.outline.set_xy((j - 0.48, i - 0.46))

    def __repr__(self) -> str:
        return f"<CeilingHeatmap: {self.scenario.model}, G={self.scenario.num_gpus}>"


def _cell_patch(x, y, hatch=False, outline=False):
    if outline:
        return Rectangle((x - 0.48, y - 0.46), 0.96, 0.92, fill=False, edgecolor="#D55E00", lw=3.5, zorder=5)
    return Rectangle(
        (x - 0.5, y - 0.5), 1, 1, facecolor="#dddddd", edgecolor="#999999", hatch="///", lw=0, zorder=2
    )


def ceiling_readout(s: Scenario) -> str:
    """HTML table of the scenario's batch-1 floor and ceiling (what lesson 02's explorer prints).

    >>> "4.79 ms" in ceiling_readout(Scenario())
    True
    """
    t = batch1_ceiling_table(s.model, [s.gpu], [s.weight_precision], s.num_gpus)
    status = t.status(s.gpu, s.weight_precision)
    w_read, w_stored = t.weight_bytes_read[0], t.weight_bytes_stored[0]
    rows = [
        ("setup", f"{s.model}, {s.num_gpus} × {s.gpu}, {s.weight_precision} weights"),
        ("weights stored / read per step", f"{w_stored / GB:.1f} GB / {w_read / GB:.1f} GB"),
        ("memory (all GPUs)", f"{t.memory_capacity_bytes[0] / GB:.0f} GB"),
        ("bandwidth (all GPUs)", f"{t.bandwidth_bytes_per_s[0] / TB:.2f} TB/s"),
    ]
    if status == "unsupported":
        rows.append(
            ("ceiling", f"no {get_precision(s.weight_precision).compute} tensor-core math on {s.gpu}")
        )
    elif status == "does not fit":
        rows.append(("ceiling", "weights do not fit in memory: no ceiling"))
    else:
        rows += [
            ("floor (weights ÷ bandwidth)", f"{t.floor_s[0, 0] / MS:.2f} ms per token"),
            ("ceiling for one user", f"{t.ceiling_tokens_per_s[0, 0]:,.0f} tokens/s"),
        ]
    return table_html(rows)
