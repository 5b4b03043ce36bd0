"""The figures, readouts and explorer of lesson 02, taught in notebooks/02_decode_floor.ipynb."""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import LogNorm
from matplotlib.patches import Rectangle

from roofline.course.figures import LiveFigure
from roofline.course.readouts import decode_readout, table_html
from roofline.course.widgets import STEP, Explorer
from roofline.data import gpus as _gpu_table
from roofline.lessons.decode_floor.numbers import CEILING_COLOR_RANGE_TOKENS_PER_S, ceiling_table
from roofline.physics.precision import PRECISIONS, get_precision
from roofline.scenario import Scenario
from roofline.units import GB, MS, TB


class CeilingHeatmap(LiveFigure):
    """Per-user ceiling (tokens/s) of the scenario's model for every GPU × weight precision, G GPUs each, at
    the scenario's B users × T tokens (B = 1, T = 0: the batch-1 ceiling, the lesson's headline).

    Each cell shows the ceiling; "does not fit" cells are hatched grey and say how much memory the weights
    and KV need; "—" marks formats the GPU has no tensor-core math for. The scenario's own GPU × precision
    cell is outlined. Colours use one fixed log scale, so a colour means the same speed for every model.
    The cells are part of the cached background: a change of GPU or precision moves only the outline.
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
        hatched = dict(facecolor="#dddddd", edgecolor="#999999", hatch="///", lw=0, zorder=2)
        for i in range(rows):
            for j in range(cols):
                self.hatches[i, j] = ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, **hatched))
                self.labels[i, j] = ax.text(j, i, "", ha="center", va="center", linespacing=0.95, zorder=4)
        outline = Rectangle((-0.48, -0.46), 0.96, 0.92, fill=False, edgecolor="#D55E00", lw=3.5, zorder=5)
        self.outline = self._moving(ax.add_patch(outline))

    def _draw(self, s: Scenario):
        self._draw_outline(s)
        key = (s.model, s.num_gpus, s.batch, s.context_tokens, s.kv_precision)
        if self.background_key == key:
            return  # the cells already show this table
        self.background_key = key
        t = ceiling_table(s.model, self.gpu_ids, self.precisions, *key[1:])
        self.image.set_data(t.ceiling_tokens_per_s)
        for i in range(len(self.gpu_ids)):
            for j in range(len(self.precisions)):
                label, no_fit = self.labels[i, j], t.supported[i, j] and not t.fits[i, j]
                self.hatches[i, j].set_visible(no_fit)
                if not t.supported[i, j]:
                    label.set(text="—", color="#777777", fontsize=12)
                elif no_fit:
                    # one line that fits a cell at the course's smallest text (the hatching says the rest)
                    label.set(text=f"{t.memory_needed_bytes[j] / GB:.0f} GB", color="#333333", fontsize=11)
                else:
                    v = t.ceiling_tokens_per_s[i, j]
                    label.set(
                        text=f"{v:,.0f}", color="white" if self.norm(v) < 0.55 else "black", fontsize=11
                    )
        g = "1 GPU" if s.num_gpus == 1 else f"{s.num_gpus} GPUs in tensor parallel"
        load = (
            ""
            if (s.batch, s.context_tokens) == (1, 0)
            else f", B={s.batch} users × T={s.context_tokens:,} tokens"
        )
        self.axes[0].set_title(
            "Batch-1 decode ceiling for one user" if not load else "Decode ceiling per user",
            fontsize=13,
            pad=24,
        )
        self.subtitle.set_text(f"{s.model} on {g} of each type{load}")

    def _draw_outline(self, s: Scenario):
        here = s.gpu in self.gpu_ids and s.weight_precision in self.precisions
        self.outline.set_visible(here)
        if here:
            i, j = self.gpu_ids.index(s.gpu), self.precisions.index(s.weight_precision)
            self.outline.set_xy((j - 0.48, i - 0.46))

    def __repr__(self) -> str:
        return f"<CeilingHeatmap: {self.scenario.model}, G={self.scenario.num_gpus}>"


def ceiling_readout(s: Scenario, options: dict | None = None) -> str:
    """HTML table of the scenario's batch-1 floor and ceiling (the headline), then the per-user ceiling at
    its B users × T tokens, and that step beside what a good engine reaches (what lesson 02's explorer
    prints).

    >>> text = ceiling_readout(Scenario(batch=32, context_tokens=1000))
    >>> "ceiling for one user" in text, "32 users × 1,000 tokens" in text, "cost per 1M tokens" in text
    (True, True, True)
    """
    t = ceiling_table(s.model, [s.gpu], [s.weight_precision], s.num_gpus)
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
        if (s.batch, s.context_tokens) != (1, 0):
            load = (s.num_gpus, s.batch, s.context_tokens, s.kv_precision)
            each = ceiling_table(s.model, [s.gpu], [s.weight_precision], *load).ceiling(
                s.gpu, s.weight_precision
            )
            text = "does not fit in memory" if np.isnan(each) else f"{each:,.0f} tokens/s each (weights + KV)"
            rows.append((f"{s.batch} users × {s.context_tokens:,} tokens", text))
        # The scenario's decode step: the floor beside what a good engine reaches, and what a token costs.
        return table_html(rows) + decode_readout(s, options)
    return table_html(rows)


def ceiling_explorer(scenario: Scenario | None = None) -> Explorer:
    """Lesson 02's explorer: the per-user ceiling of every GPU × weight format at B users × T tokens (one
    user and no context by default: the decode floor), and one cell read out with what a good engine
    reaches.

    >>> ceiling_explorer()
    <Explorer CeilingHeatmap: batch, context_tokens, weight_precision, num_gpus, gpu, model, engine>
    """
    return Explorer(
        CeilingHeatmap,
        STEP,
        scenario or Scenario(context_tokens=0),
        ceiling_readout,
        auto_gpus=False,  # the hatched cells that do not fit are the lesson
        presets={
            "the card: Llama 3 8B, BF16, one H100": {
                "batch": 1,
                "context_tokens": 0,
                "weight_precision": "bf16",
            },
            "the card's follow-up: 70B FP8 on two H100s": {
                "model": "llama-3-70b",
                "num_gpus": 2,
                "weight_precision": "fp8",
                "batch": 1,
                "context_tokens": 0,
            },
            "32 users × 1,000 tokens (the card's Q3)": {"batch": 32, "context_tokens": 1000},
        },
    )
