"""The mixture-of-experts lesson's figure, readout and explorer: the bytes a step reads against batch."""

from __future__ import annotations

import numpy as np

from roofline.course.figures import BATCH_AXIS, BATCH_SWEEP, COLORS, PALETTE, LiveFigure, nice_limits
from roofline.course.readouts import combine_readouts, decode_readout, table_html
from roofline.course.widgets import STEP, Explorer
from roofline.data import get_model, models
from roofline.physics.architecture import expected_experts_touched, weight_bytes, weight_bytes_read
from roofline.scenario import Scenario
from roofline.units import GB, MS

MOE_MODELS = ("mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-120b", "deepseek-v3")


class MoEReadVsBatch(LiveFigure):
    """Left: fraction of the routed experts a step touches against the tokens in the step, per MoE model.
    Right: the scenario model's weight bytes read per step against batch, between the active-only read
    (one token) and everything resident; and the weight bytes per token produced."""

    ncols = 2

    def _build(self):
        left, right = self.axes
        self.touched = {
            mid: self._line(left, color=c, label=mid)
            for mid, c in zip([m for m in MOE_MODELS if m in models()], PALETTE[1:], strict=False)
        }
        self.read = self._line(right, color=COLORS["weights"], lw=2.4, label="weights read per step")
        self.per_token = self._line(right, color=COLORS["kv"], ls="--", label="weights read per token")
        self.resident = self._line(right, color=COLORS["capacity"], ls=":", label="resident (all experts)")
        self.marker = self._line(right, "o", color="black", zorder=6)
        touched = dict(
            xlabel="tokens in the step (batch × new tokens)", ylabel="routed experts touched (fraction)"
        )
        left.set(ylim=(0, 1.05), **touched, **BATCH_AXIS)
        right.set(yscale="log", xlabel="batch B (users, one token each)", ylabel="GB", **BATCH_AXIS)
        left.legend(loc="lower right", fontsize=11)
        right.legend(loc="lower left", fontsize=11)

    def _draw(self, s):
        left, right = self.axes
        for mid, line in self.touched.items():
            m = get_model(mid)
            shared = getattr(m, "shared_experts", 0)  # always read; the fraction is of the routed ones
            routed = np.asarray(expected_experts_touched(mid, BATCH_SWEEP)) - shared
            line.set_data(BATCH_SWEEP, routed / m.experts)
        read = np.asarray(weight_bytes_read(s.model, s.weight_precision, BATCH_SWEEP)) / GB
        resident = weight_bytes(s.model, s.weight_precision) / GB
        self.read.set_data(BATCH_SWEEP, read)
        self.per_token.set_data(BATCH_SWEEP, read / BATCH_SWEEP)
        self.resident.set_data(BATCH_AXIS["xlim"], [resident, resident])
        right.set_ylim(nice_limits(np.concatenate([read / BATCH_SWEEP, [resident]]), log=True))
        here = float(weight_bytes_read(s.model, s.weight_precision, s.batch)) / GB
        self.marker.set_data([s.batch], [here])
        text = f"B={s.batch}: {here:,.1f} GB read"
        self._note(right, text, (s.batch, here), (8, -20), fontsize=11)
        right.set_title(f"{s.model}, {s.weight_precision} weights", fontsize=12)
        left.set_title("E·(1 − (1 − k/E)^n) ÷ E", fontsize=12)


def moe_readout(s: Scenario) -> str:
    """HTML table: resident vs read weights, experts touched, step and tokens/s at the scenario."""
    m = get_model(s.model)
    step = s.decode()
    touched = float(expected_experts_touched(m, s.batch))
    read = float(weight_bytes_read(m, s.weight_precision, s.batch))
    have = step.memory_capacity_bytes
    rows = [
        ("experts", f"{m.experts} routed, {m.experts_per_token} per token" if m.is_moe else "dense model"),
        ("experts touched per layer", f"{touched:.1f} of {m.experts}"),
        ("weights resident", f"{weight_bytes(m, s.weight_precision) / GB:,.1f} GB"),
        ("weights read per step", f"{read / GB:,.1f} GB"),
        ("memory needed", f"{step.memory_needed_bytes / GB:,.0f} GB of {have / GB:,.0f} GB"),
    ]  # fmt: skip
    if step.fits:
        rows += [
            ("step time", f"{step.step_time_s / MS:.2f} ms ({step.binding}-bound)"),
            ("tokens/s per user", f"{step.tokens_per_s_per_user:,.0f}"),
            ("tokens/s total", f"{step.tokens_per_s_total:,.0f}"),
        ]
    else:
        rows.append(("step time", "does not fit in memory: no step time"))
    return table_html(rows)


def moe_explorer(scenario: Scenario | None = None) -> Explorer:
    """The MoE lesson's explorer: every control of a step."""
    return Explorer(
        MoEReadVsBatch,
        controls=STEP,
        scenario=scenario or Scenario(model="mixtral-8x7b", num_gpus=2, batch=8),
        readout=combine_readouts(moe_readout, decode_readout),
    )
