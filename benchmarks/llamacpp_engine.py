"""The engine lab on this machine, as ``roofline measure --engine llama.cpp`` runs it, timed end to end.

    uv run --group engine python benchmarks/llamacpp_engine.py [--quick] [--wait-load L] [--out FILE]
    uv run python benchmarks/llamacpp_engine.py --smoke     # no engine: the stored run placed (CI)

Measures the machine's roofline (the full ``bench.measure``, or ``--quick``), runs llama.cpp on the lab's
models (the 100M one only with ``--quick``) and prints the table with the wall time and the load average.
``--wait-load L`` first waits (up to 30 min) for the 1-minute load average to fall below L: on a shared
machine a busy neighbour halves the 2-thread figures. ``--out FILE`` also writes the run record there;
``--out lib/roofline/measure/llamacpp_reference.json`` refreshes the run the notebook shows.
"""

from __future__ import annotations

import argparse
import sys
import time
from types import SimpleNamespace

from roofline.apps.cli_measure import print_engine, run_engine
from roofline.measure import bench, engine_lab


def wait_for_quiet(load: float, timeout_s: float = 1800.0) -> float:
    """Wait until the 1-minute load average is below ``load`` (or the timeout); return the load."""
    start = time.monotonic()
    while (now := bench.load_average()) >= load and time.monotonic() - start < timeout_s:
        print(f"load {now:.1f} >= {load}: waiting", file=sys.stderr, flush=True)
        time.sleep(30)
    return bench.load_average()


def smoke() -> int:
    """The lab's last stage on the stored reference run (the notebook's), without llama.cpp: the record
    loads and every point is placed on the roofline."""
    from roofline.measure import engine_roofline

    record = engine_lab.reference_run()
    points = engine_roofline.place(record)
    build = f"{record['engine']['package']} {record['engine']['version']}"
    print(f"reference run of {build}: {len(points)} points placed (smoke run, no engine timed)")
    return 0 if points else 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--wait-load", type=float, default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--smoke", action="store_true", help="place the stored reference run, run no engine: seconds (CI)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        return smoke()
    if args.wait_load is not None:
        wait_for_quiet(args.wait_load)
    t0 = time.perf_counter()
    machine = bench.measure(quick=args.quick)
    engine = run_engine(machine, SimpleNamespace(quick=args.quick, engine="llama.cpp"))
    wall = time.perf_counter() - t0
    load = machine.details["load_average_1min"]
    print(
        f"machine: {machine.memory_bandwidth_bytes_per_s / 1e9:.1f} GB/s, "
        f"{machine.matmul_flops_per_s / 1e9:.0f} GFLOP/s fp32 (load {load:.1f})"
    )
    print_engine(engine)
    print(f"lab wall time {wall:.0f} s (models cached after the first run)")
    if args.out:
        record = engine_lab.load_run(engine["engine_run_saved_to"])
        print(f"record also written to {engine_lab.save_run(record, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
