"""How long the story lessons' simulator-backed explorers and figures take (lessons 25, 44, 59, 61).

    uv run python benchmarks/story_redraw.py               (--smoke: one move, that it runs; CI)

- lesson 59: one move of the dashboard explorer (the step-by-step dashboard, the simulator's percentiles, the
  eight panels redrawn), over the explorer's batch stops at T = 4,096, and the simulator part alone;
- lesson 25: the hockey-stick sweep (9 loads x 800 requests), drawn once per notebook run;
- lesson 44: the chunk trade-off under arrivals (7 chunk sizes x 300 requests);
- lesson 61: the simulated saturation wall (8 concurrencies).
Goal: a dashboard move under about 1 s on the 2-core reference machine (the explorer moves on release).
"""

from __future__ import annotations

import statistics
import sys
import time

import matplotlib

matplotlib.use("Agg")

from roofline.lessons.batching.numbers import latency_against_load
from roofline.lessons.chunked_prefill.numbers import chunk_tradeoff_under_arrivals
from roofline.lessons.compute_bound.numbers import simulated_saturation
from roofline.lessons.dashboard.lab import dashboard_explorer
from roofline.lessons.dashboard.numbers import simulated_latency
from roofline.scenario import Scenario  # noqa: E402

M, G = "llama-3-8b", "h100-sxm"
USERS = (1, 8, 32, 64, 128, 300)


def timed(fn, *args, **kwargs) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    ex = dashboard_explorer(Scenario(batch=64, context_tokens=4096))
    if "--smoke" in argv:  # one move and one simulation: that it runs (CI)
        print(f"lesson 59 dashboard move: {timed(ex.set, batch=8) * 1e3:6.0f} ms (smoke run)")
        sim_s = timed(simulated_latency, Scenario(batch=8, context_tokens=4096))
        print(f"  the simulator: {sim_s * 1e3:6.0f} ms")
        return 0
    moves = [timed(ex.set, batch=u) for u in USERS]
    print(f"lesson 59 dashboard move: median {statistics.median(moves) * 1e3:6.0f} ms, "
          f"max {max(moves) * 1e3:6.0f} ms over users {USERS}")  # fmt: skip
    sims = [timed(simulated_latency, Scenario(batch=u, context_tokens=4096)) for u in USERS]
    med, top = statistics.median(sims) * 1e3, max(sims) * 1e3
    print(f"  of which the simulator:  median {med:6.0f} ms, max {top:6.0f} ms")
    print(f"lesson 25 hockey stick:   {timed(latency_against_load, M, G) * 1e3:6.0f} ms")
    print(f"lesson 44 chunk sweep:    {timed(chunk_tradeoff_under_arrivals, M, G) * 1e3:6.0f} ms")
    print(f"lesson 61 saturation:     {timed(simulated_saturation, M, G) * 1e3:6.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
