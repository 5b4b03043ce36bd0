"""The quantization lesson's figure, readout and explorer: what fewer bytes per weight buy at each batch.

>>> from roofline.scenario import Scenario
>>> QuantizationVsBatch(Scenario(batch=64))
<QuantizationVsBatch: llama-3-8b on 1x h100-sxm, bf16 weights, bf16 KV, B=64, T=1000>
"""

from __future__ import annotations

import numpy as np

from roofline.course.figures import BATCH_AXIS, BATCH_SWEEP, PALETTE, LiveFigure, nice_limits
from roofline.course.readouts import combine_readouts, decode_readout, table_html
from roofline.course.widgets import STEP, Explorer
from roofline.data import get_gpu
from roofline.physics.architecture import weight_bytes
from roofline.physics.precision import get_precision
from roofline.scenario import Scenario
from roofline.units import GB, MS

# Weight precisions the quantization lesson compares (those the GPU has no math for are left out).
QUANT_PRECISIONS = ("bf16", "fp8", "int8", "int4", "fp4")


def supported_precisions(gpu) -> list[str]:
    """The precisions of ``QUANT_PRECISIONS`` whose matrix math ``gpu`` has (ids, in order).

    >>> supported_precisions("h100-sxm")
    ['bf16', 'fp8', 'int8', 'int4']
    """
    g = get_gpu(gpu)
    return [p for p in QUANT_PRECISIONS if get_precision(p).compute in g.dense_flops_per_s]


def _decode_sweep(s: Scenario, precision: str, batch=BATCH_SWEEP):
    return s.with_(weight_precision=precision).decode(batch=batch)


class QuantizationVsBatch(LiveFigure):
    """Left: decode step time against batch for each weight precision (log-log). Right: each precision's
    tokens/s per user over BF16's at the same batch: what quantization buys, batch by batch."""

    ncols = 2

    def _build(self):
        left, right = self.axes
        styles = {"int8": "--"}  # int8 and fp8 coincide on GPUs that run both at the same rate
        self.lines = {
            p: (
                self._line(left, color=c, ls=styles.get(p, "-"), label=p),
                self._line(right, color=c, ls=styles.get(p, "-"), label=p),
            )
            for p, c in zip(QUANT_PRECISIONS, PALETTE, strict=False)
        }
        self.marker = self._line(left, "o", color="black", zorder=6)
        left.set(yscale="log", xlabel="batch B (users)", ylabel="decode step (ms)", **BATCH_AXIS)
        right.set(xlabel="batch B (users)", ylabel="speed-up per user over BF16 (×)", **BATCH_AXIS)
        right.axhline(1.0, color="#777777", lw=1)
        left.legend(loc="upper left", title="weights")

    @property
    def background_key(self):  # the legend lists the precisions this GPU has
        return tuple(supported_precisions(self.scenario.gpu))

    def _draw(self, s):
        left, right = self.axes
        have = supported_precisions(s.gpu)
        base = _decode_sweep(s, "bf16")
        times = []
        for p, (line, ratio) in self.lines.items():
            if p not in have:
                line.set_data([], []), ratio.set_data([], [])
                continue
            sweep = _decode_sweep(s, p)
            line.set_data(BATCH_SWEEP, sweep.step_time_s / MS)
            ratio.set_data(BATCH_SWEEP, base.step_time_s / sweep.step_time_s)
            times.append(sweep.step_time_s / MS)
        left.set_ylim(nice_limits(np.concatenate(times), log=True))
        right.set_ylim(0, 4.5)
        if s.weight_precision in have:
            here = _decode_sweep(s, s.weight_precision, s.batch)
            self._mark(self.marker, here.fits, [s.batch], [here.step_time_s / MS])
        texts = {t.get_text().split(" ")[0]: t for t in left.get_legend().get_texts()}
        for p, t in texts.items():
            t.set_text(p if p in have else f"{p} (no math on this GPU)")
        left.set_title(f"{s.model} on {s.num_gpus}x {s.gpu}, T={s.context_tokens:,}", fontsize=12)
        right.set_title("BF16 step ÷ this precision's step", fontsize=12)


def quantization_readout(s: Scenario) -> str:
    """HTML table, one row per weight precision the GPU has and one short column per figure (so a row stays
    one line at a projector's scale): weight bytes, the step at the scenario's batch, tokens/s per user, the
    gain over BF16 and the largest batch that fits."""
    rows = [("", "weights", "step", "tok/s each", "vs BF16", "users fit")]
    base = _decode_sweep(s, "bf16", s.batch)
    for p in supported_precisions(s.gpu):
        step = _decode_sweep(s, p, s.batch)
        w = f"{weight_bytes(s.model, p) / GB:.1f}\u00a0GB"  # a no-break space: number and unit on one line
        most = f"{s.with_(weight_precision=p, context_tokens=max(s.context_tokens, 1)).users_that_fit():,}"
        if not step.fits:
            rows.append((p, w, f"B={s.batch} does not fit", "", "", most))
            continue
        gain = f"{base.step_time_s / step.step_time_s:.2f}×" if base.fits else ""
        speed = f"{step.tokens_per_s_per_user:,.0f}"
        rows.append((p, w, f"{step.step_time_s / MS:.2f}\u00a0ms", speed, gain, most))
    return table_html(rows)


def quantization_explorer(scenario: Scenario | None = None) -> Explorer:
    """The quantization lesson's explorer: every control of a step, and the KV precision."""
    return Explorer(
        QuantizationVsBatch,
        controls=[*STEP[:4], "kv_precision", *STEP[4:]],
        scenario=scenario or Scenario(batch=64, context_tokens=128),
        readout=combine_readouts(quantization_readout, decode_readout),
    )
