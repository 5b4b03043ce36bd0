"""How long one slider move takes in Python: recompute the physics + redraw + encode the picture.

    uv run python benchmarks/explorer_redraw.py            (--smoke: three moves, that it runs; CI)

Compares, in the same run and on the same moves (batch 1 → 1024 and back, at T = 1,000):
- the course's Explorer (LiveFigure updated in place, cached background, JPEG), and
- the naive pattern of ``ipywidgets.interact`` + inline plotting: a new pyplot figure per move, drawn
  from scratch and saved as PNG (what the inline backend does), then closed.
Goal: median under 50 ms for the course's explorer on the 2-core reference machine.
The browser side (key press to new pixels) is measured by benchmarks/browser_latency.py.
"""

from __future__ import annotations

import io
import statistics
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from roofline.course.figures import BATCH_SWEEP, STYLE_PATH
from roofline.course.widgets import BATCH_OPTIONS, Explorer
from roofline.lessons.step_time.lab import StepTimeVsBatch, ThroughputVsBatch
from roofline.scenario import Scenario  # noqa: E402
from roofline.units import MS  # noqa: E402

MOVES = BATCH_OPTIONS + BATCH_OPTIONS[::-1]


def naive_step_figure(s: Scenario) -> bytes:
    """What an ``interact`` callback typically does: build, plot, render to PNG, close."""
    sweep = s.decode(batch=BATCH_SWEEP)
    here = s.decode()
    with plt.style.context(STYLE_PATH):
        fig, ax = plt.subplots(figsize=(9, 4.5))
        ax.plot(
            BATCH_SWEEP,
            sweep.weight_bytes_read / sweep.bytes_read * sweep.memory_time_s / MS,
            "--",
            label="weight read",
        )
        ax.plot(
            BATCH_SWEEP,
            sweep.kv_bytes_read / sweep.bytes_read * sweep.memory_time_s / MS,
            "--",
            label="KV read",
        )
        ax.plot(BATCH_SWEEP, sweep.compute_time_s / MS, ":", label="compute")
        ax.plot(BATCH_SWEEP, sweep.step_time_s / MS, label="step")
        ax.plot([s.batch], [here.step_time_s / MS], "o")
        ax.set(xscale="log", yscale="log", xlabel="batch B", ylabel="time per step (ms)")
        ax.legend()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        plt.close(fig)
    return buf.getvalue()


def time_moves(move, moves=MOVES) -> list[float]:
    times = []
    for batch in moves:
        start = time.perf_counter()
        move(batch)
        times.append(time.perf_counter() - start)
    return times


def summary(name: str, times: list[float]) -> str:
    ms = np.array(times) * 1e3
    median, p95 = statistics.median(ms), np.percentile(ms, 95)
    return f"{name:<44} median {median:6.1f} ms   p95 {p95:6.1f} ms   n={len(ms)}"


def main(argv: list[str]) -> int:
    moves = MOVES[:3] if "--smoke" in argv else MOVES  # --smoke: three moves, that it runs (CI)
    base = Scenario(context_tokens=1000)
    results = {}
    for cls in (StepTimeVsBatch, ThroughputVsBatch):
        explorer = Explorer(cls, controls=["batch", "context_tokens"], scenario=base)
        results[f"course Explorer ({cls.__name__})"] = time_moves(lambda b, e=explorer: e.set(batch=b), moves)
    results["naive interact + new figure (step time)"] = time_moves(
        lambda b: naive_step_figure(base.with_(batch=b)), moves
    )
    for name, times in results.items():
        print(summary(name, times))
    ours = statistics.median(results["course Explorer (StepTimeVsBatch)"])
    naive = statistics.median(results["naive interact + new figure (step time)"])
    print(
        f"speed-up of the in-place explorer over the naive pattern: {naive / ours:.1f}x "
        f"(goal: course median < 50 ms: {'met' if ours < 0.05 else 'NOT met'})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


def naive_step_figure_pyplot(batch: int) -> None:
    """The naive ``interact`` callback for the browser benchmark: a new pyplot figure shown inline."""
    from IPython.display import Image, display

    display(Image(naive_step_figure(Scenario(batch=batch))))
