"""``roofline measure``: this machine's roofline, measured (bandwidth, matmul FLOP/s, ridge, call overhead).

Taught in notebooks/measure_your_machine.ipynb; docs/cli.md describes the output and every JSON field.

    uv run roofline measure [--quick] [--json] [--save NAME]

``--save NAME`` stores the figures as a user GPU row (``roofline.measure.userdata``), so
``roofline step --gpu NAME --weights fp32 --kv fp32 ...`` and every explorer can use this machine.
"""

from __future__ import annotations

import json

from roofline.measure import bench
from roofline.measure.userdata import check_save_name, save_user_gpu
from roofline.units import GB, US

EXIT_OK = 0


def add_parser(subparsers) -> None:
    """Register ``measure`` on the ``roofline`` command's subparsers."""
    p = subparsers.add_parser(
        "measure", help="measure this machine: memory bandwidth, matmul FLOP/s, ridge, per-call overhead"
    )
    p.add_argument("--quick", action="store_true", help="a few seconds instead of ~half a minute")
    p.add_argument("--json", action="store_true", help="print a JSON object (SI units)")
    p.add_argument(
        "--save",
        metavar="NAME",
        default=None,
        help="save the figures as a user GPU row NAME (e.g. my-laptop) in the user data directory",
    )
    p.set_defaults(handler=run)


def run(args) -> int:
    """Measure, print (text or JSON), optionally save; return the exit code."""
    if args.save is not None:
        check_save_name(args.save)  # fail before spending the time measuring
    m = bench.measure(quick=args.quick)
    saved = save_user_gpu(args.save, m) if args.save is not None else None
    if args.json:
        payload = {"command": "measure", **m.to_dict(), "saved_to": str(saved) if saved else None}
        print(json.dumps(payload, indent=2, default=float))
        return EXIT_OK
    d, t = m.details, m.threads
    print(f"This machine: {d['machine']}, {t['cpu_count']} logical CPUs, BLAS {t['blas']}")
    print(f"  (BLAS threads: {t['blas_threads'] or t['blas_threads_source']}; env {t['env'] or 'none set'})")
    print(
        "Memory bandwidth (best of read / copy / triad, STREAM byte counting, "
        f"{d['stream_array_bytes'] / 1e6:.0f} MB arrays):"
    )
    for name, s in d["stream"].items():
        print(
            f"  {name:<6} {s['best_bytes_per_s'] / GB:7.1f} GB/s best"
            f"   {s['median_bytes_per_s'] / GB:7.1f} GB/s median"
            f"   ({s['repeats']} passes)"
        )
    print(f"  -> memory_bandwidth  {m.memory_bandwidth_bytes_per_s / GB:.1f} GB/s")
    print("Matrix multiply n x n (2 n^3 FLOP), best / median:")
    for dtype, table in d["matmul"].items():
        cells = "   ".join(
            f"n={n}: {v['best_flops_per_s'] / 1e9:.0f} / {v['median_flops_per_s'] / 1e9:.0f}"
            for n, v in table.items()
        )
        print(f"  {dtype}  {cells} GFLOP/s")
    print(
        f"  -> matmul peak fp32  {m.matmul_flops_per_s / 1e9:.1f} GFLOP/s"
        f"  (fp64 {m.matmul_fp64_flops_per_s / 1e9:.1f})"
    )
    print(f"Ridge point            {m.ridge_flop_per_byte:.1f} FLOP/byte  (fp32 matmul peak / bandwidth)")
    print(
        f"Per-call overhead      {m.call_overhead_s / US:.2f} µs median per tiny numpy call "
        f"({d['call_overhead']['min_s'] / US:.2f} µs best)"
    )
    mv = d["small_matvec"]
    print(
        f"One in-cache fp32 matrix-vector product ({mv['bytes'] / 1e6:.1f} MB): "
        f"{mv['min_s'] / US:.0f} µs best, {mv['median_s'] / US:.0f} µs median (BLAS call + thread wake-up)"
    )
    print(
        f"(measured in {d['elapsed_s']:.1f} s with load average {d['load_average_1min']:.1f} on "
        f"{t['cpu_count']} CPUs; other work on the machine lowers every figure: run again and compare)"
    )
    if saved:
        print(
            f"Saved as GPU {args.save!r} in {saved}:\n  try `roofline step --gpu {args.save} "
            "--model llama-3.2-1b --weights fp32 --kv fp32`"
        )
    return EXIT_OK
