"""Figures of the achievable layer: the floor and what engines reach, side by side. The numbers all come
from ``roofline.engines``; this module only draws them.

>>> AchievableVsBatch(Scenario(batch=16), engine="vllm")
<AchievableVsBatch: llama-3-8b on 1x h100-sxm, bf16 weights, bf16 KV, B=16, T=1000>
>>> "achievable" in achievable_readout(Scenario(batch=16), {"engine": "vllm"})
True
"""

from __future__ import annotations

import numpy as np

from roofline import engines
from roofline.calibration import measurements
from roofline.course.figures import (
    BATCH_AXIS,
    BATCH_SWEEP,
    COLORS,
    LiveFigure,
    Picture,
    describe,
    new_figure,
    nice_limits,
    plain_log_ticks,
)
from roofline.course.readouts import cost_text, extrapolation_note, fold, table_html
from roofline.course.widgets import STEP, Explorer
from roofline.scenario import Scenario
from roofline.units import MS

# Colours of the gap budget's parts, of the engines and markers of the measured regimes (colour-blind-safe).
BUDGET_COLORS = {
    "floor": "#0072B2",
    "kernel efficiency": "#56B4E9",
    "per-step": "#E69F00",
    "per-layer": "#F0E442",
    "communication": "#CC79A7",
}
ENGINE_COLORS = {
    "vllm": "#0072B2",
    "tensorrt-llm": "#009E73",
    "sglang": "#CC79A7",
    "llama.cpp": "#D55E00",
    "llama.cpp-2025": "#882255",
    "deepspeed-mii": "#E69F00",
    "splitwise-2023": "#56B4E9",
}
REGIME_MARKERS = {"batch-1 decode": "o", "batched decode": "s", "prefill/TTFT": "^", "end-to-end": "D"}


class AchievableVsBatch(LiveFigure):
    """Decode step time against batch: the ideal floor and the calibrated achievable step (ms, log-log) of
    the engine ``options["engine"]`` (default vllm)."""

    def _build(self):
        ax = self.axes[0]
        self.floor = self._line(ax, color=COLORS["step"], ls="--", label="ideal floor")
        self.real = self._line(ax, color=COLORS["prefill"], label="achievable (calibrated)")
        self.marks = self._line(ax, "o", color=COLORS["prefill"], zorder=5)
        batch = "batch B (users decoding together)"
        ax.set(yscale="log", xlabel=batch, ylabel="time per step (ms)", **BATCH_AXIS)
        ax.legend(loc="upper left")

    def _draw(self, s: Scenario):
        ax = self.axes[0]
        engine = self._engine(s)
        timer = engines.StepTimer.of(s, engine)
        t = engines.decode_step_times(timer, BATCH_SWEEP, s.context_tokens)
        self.floor.set_data(BATCH_SWEEP, t["floor"] / MS)
        self.real.set_data(BATCH_SWEEP, t["total"] / MS)
        self.real.set_label(f"achievable ({engines.get_engine(engine).id})")
        ax.legend(loc="upper left")
        ax.set_ylim(nice_limits(np.concatenate([t["floor"], t["total"]]) / MS, log=True))
        here = engines.decode_step_times(timer, s.batch, s.context_tokens)
        lo, hi = float(here["floor"]), float(here["total"])
        if self._mark(self.marks, here["fits"], [s.batch, s.batch], [lo / MS, hi / MS]):
            text = f"B={s.batch}: floor {lo / MS:.2f} ms, achievable {hi / MS:.2f} ms ({hi / lo:.2f}x)"
            box = {"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85}
            self._transient_artist(ax.text(0.02, 0.74, text, transform=ax.transAxes, fontsize=12, bbox=box))
        self._shade_overflow(ax, s.users_that_fit() + 1)
        ax.set_title(describe(s), fontsize=11)
        self.background_key = engine


def achievable_readout(s: Scenario, options: dict | None = None) -> str:
    """HTML table: one decode step at the scenario, ideal beside achievable (step, tokens/s, the cost per 1M
    tokens at the scenario's price), with the gap itemised.

    >>> # the ideal: 15.0 GB of weights read (the embedding is looked up) + 64 × 1000 × 128 KiB of KV at
    >>> # 3.35 TB/s is a 6.98 ms step for 64 tokens; at $3 an hour, $0.09 per million
    >>> "$0.09" in achievable_readout(Scenario(batch=64, context_tokens=1000, usd_per_gpu_hour=3.0))
    True
    """
    engine = (options or {}).get("engine") or engines.default_engine(s.gpu)
    t = engines.decode_step_times(engines.StepTimer.of(s, engine), s.batch, s.context_tokens)
    if not bool(t["fits"]):
        return "<p>Does not fit in memory: no step runs.</p>"
    floor, total = float(t["floor"]), float(t["total"])
    rows = [
        ("", "ideal", f"achievable ({engines.get_engine(engine).id})"),
        ("step", f"{floor / MS:.2f} ms", f"{total / MS:.2f} ms"),
        ("tokens/s per user", f"{1 / floor:,.0f}", f"{1 / total:,.0f}"),
        ("tokens/s total", f"{s.batch / floor:,.0f}", f"{s.batch / total:,.0f}"),
        ("cost per 1M tokens", cost_text(s, s.batch / floor), cost_text(s, s.batch / total)),
    ]
    gap = [("", "", "the gap, part by part")]
    gap += [(f"+ {k}", "", f"{float(t[k]) / MS:.2f} ms") for k in engines.BUDGET_PARTS]
    keys = ("", "ideal", "achievable")
    return (
        table_html(rows, column_keys=keys)
        + extrapolation_note(s, engine)
        + fold(table_html(gap, column_keys=keys), "the gap, part by part")
    )


def achievable_explorer(scenario: Scenario | None = None) -> Explorer:
    """The floor beside what an engine reaches against batch: batch, context, weight precision, GPU count,
    GPU and model, and the engine menu (starting on the one people run on the GPU).

    >>> achievable_explorer().knobs["engine"].value
    'vllm'
    """
    return Explorer(AchievableVsBatch, STEP, scenario or Scenario(batch=16), achievable_readout)


def gap_budget_figure(budgets: dict) -> Picture:
    """Stacked bars of the gap budget (ms) for a few configurations: ``budgets`` maps a label to what
    ``engines.gap_budget`` returns for it."""
    fig, (ax,) = new_figure(1, figsize=(9, 4.5))
    cases, budgets = list(budgets), list(budgets.values())
    bottoms = np.zeros(len(cases))
    for part in ("floor", *engines.BUDGET_PARTS):
        vals = np.array([b[part] for b in budgets]) / MS
        ax.bar(range(len(cases)), vals, bottom=bottoms, color=BUDGET_COLORS[part], label=part, width=0.6)
        bottoms += vals
    for j, b in enumerate(budgets):
        ax.text(j, bottoms[j], f"{b['total'] / b['floor']:.2f}x floor", ha="center", va="bottom", fontsize=11)
    ax.set_xticks(range(len(cases)), cases, fontsize=10)
    ax.set(ylabel="time per decode step (ms)", ylim=(0, bottoms.max() * 1.15))
    ax.set_title("Where a decode step's time goes", fontsize=12)
    ax.legend(loc="upper left", fontsize=10)
    return Picture(fig, "gap budget")


def measured_over_floor_figure() -> Picture:
    """Splitwise's measured decode steps (Llama 2 70B in FP16, tensor parallel over 2 and 8 GPUs, 512-token
    prompts) against batch, over the ideal floor and the achievable curve of its engine, one panel per GPU
    (A100 and H100)."""
    model, gpus, tp = "llama-2-70b", ("a100-80gb-sxm", "h100-sxm"), (2, 8)
    ms = measurements.load_measurements()
    fig, axes = new_figure(len(gpus), figsize=(11, 4.2))
    batches = np.unique(np.round(np.geomspace(1, 64, 40)).astype(int))
    styles = {tp[0]: "-", tp[-1]: "-."}
    for ax, gpu in zip(axes, gpus, strict=True):
        for n in tp:
            sel = (ms.source == "Splitwise") & (ms.kind == "tpot") & (ms.gpu == gpu) & (ms.num_gpus == n)
            sel &= ms.input_tokens == 512
            timer = engines.StepTimer("splitwise-2023", model, gpu, num_gpus=n, weight_precision="fp16",
                                      kv_precision="fp16")  # fmt: skip
            t = engines.decode_step_times(timer, batches, 512 + 64)
            ax.plot(
                batches, t["floor"] / MS, color=COLORS["step"], ls=styles[n], lw=1, label=f"floor, TP {n}"
            )
            ax.plot(
                batches, t["total"] / MS, color=COLORS["prefill"], ls=styles[n], label=f"achievable, TP {n}"
            )
            dot = COLORS["decode"] if n == tp[0] else "#56B4E9"
            ax.plot(ms.batch[sel], ms.measured_s[sel] / MS, "o", color=dot, label=f"measured, TP {n}")
        ax.set(xscale="log", yscale="log", xlabel="batch B", ylabel="time per decode step (ms)")
        plain_log_ticks(ax.xaxis)
        plain_log_ticks(ax.yaxis)
        ax.set_title(f"{model} on {gpu} (Splitwise)", fontsize=12)
    axes[0].legend(fontsize=9, loc="lower left")
    return Picture(fig, "measured over the floor")
