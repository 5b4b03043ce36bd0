"""How long `roofline measure --quick` takes, end to end, in a fresh process (as a learner runs it).

    uv run python benchmarks/measure_quick.py [RUNS]       (--smoke: one run; CI)

Goal: well under 30 s on the 2-core reference machine (target ≤ 10 s). Prints each run's wall time, the
min and median, and the load average (other work on a shared machine slows every run).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from roofline.measure.bench import load_average


def measure_once(home: str) -> tuple[float, dict]:
    """One `roofline measure --quick --json` in a fresh process with ``home`` as the user folder: its wall
    time (s) and its JSON (tests/test_measure.py checks the JSON of this same run: the benchmark's smoke)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "roofline.apps.cli", "measure", "--quick", "--json"],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "SPEED_PHYSICS_HOME": home},
        timeout=120,
    )
    return time.perf_counter() - t0, json.loads(proc.stdout)


def main(argv: list[str]) -> int:
    runs = 1 if argv == ["--smoke"] else int(argv[0]) if argv else 3  # --smoke: one run (CI)
    times = []
    with tempfile.TemporaryDirectory() as home:  # never touch the real user table
        for i in range(runs):
            times.append(measure_once(home)[0])
            print(f"run {i + 1}: {times[-1]:.2f} s", flush=True)
    print(
        f"measure --quick: min {min(times):.2f} s, median {statistics.median(times):.2f} s "
        f"over {runs} runs (load average {load_average():.1f}; goal < 30 s, target <= 10 s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
