"""``roofline measure``: this machine's roofline, measured (bandwidth, matmul FLOP/s, ridge, call overhead).

Taught in notebooks/measure_your_machine.ipynb; docs/cli.md describes the output and every JSON field.
``--save NAME`` stores the figures as a user GPU row (``roofline.measure.userdata``) every command and
explorer can use; ``--engine llama.cpp`` also places llama.cpp's speeds on random-weight models made here
on the measured roofline (``roofline.measure.engine_lab`` and ``engine_roofline``).
"""

from __future__ import annotations

import json
import sys

from roofline.apps import cli_output as out
from roofline.measure import bench
from roofline.measure.userdata import check_save_name, save_user_gpu
from roofline.units import GB, MS, US

ENGINES = ("llama.cpp",)


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
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default=None,
        help="also run a real engine on models made here and place it on the measured roofline "
        "(needs the 'engine' group: uv run --group engine roofline measure --engine llama.cpp)",
    )


def run(args) -> int:
    """Measure, print (text or JSON), optionally save; return the exit code."""
    if args.save is not None:
        check_save_name(args.save)  # fail before spending the time measuring
    if args.engine is not None:
        from roofline.measure import llamacpp

        llamacpp.binding()  # a clear error (with the install command) before measuring anything
    m = bench.measure(quick=args.quick)
    saved = save_user_gpu(args.save, m) if args.save is not None else None
    engine = run_engine(m, args) if args.engine is not None else None
    if args.json:
        payload = {"command": "measure", **m.to_dict(), "saved_to": str(saved) if saved else None}
        print(json.dumps({**payload, **(engine or {})}, indent=2, default=float))
        return out.EXIT_OK
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
    if engine is not None:
        print_engine(engine)
    return out.EXIT_OK


def run_engine(machine, args) -> dict:
    """Run the engine lab (progress on stderr), save the record, and return the JSON fields it adds."""
    from roofline.measure import engine_lab, engine_roofline, gguf_model

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    models = gguf_model.LAB_MODELS[:1] if args.quick else gguf_model.LAB_MODELS
    record = engine_lab.run_lab(machine, models=models, repeats=2 if args.quick else 3, say=say)
    path = engine_lab.save_run(record)  # kept even if placing it fails below
    say(f"run saved to {path}")
    return {
        "engine": args.engine,
        "engine_build": record["engine"],
        "engine_load_average_1min": record["load_average_1min"],
        "engine_points": engine_roofline.place(record),
        "numpy_decoder": engine_roofline.place_numpy(record),
        "calibration_points": engine_roofline.calibration_points(record),
        "engine_run_saved_to": str(path),
    }


def _predicted(row: dict, key: str, spec: str) -> str:
    """A predicted figure formatted with ``spec``, or "n/a" where the library could not predict it."""
    value = row[key]
    return "n/a".rjust(len(format(0.0, spec))) if value is None else format(value, spec)


def print_engine(engine: dict) -> None:
    """The engine lab's table: measured beside the library's llama.cpp prediction, MBU and MFU."""
    build, load = engine["engine_build"], engine["engine_load_average_1min"]
    print(
        f"\nllama.cpp through {build['package']} {build['version']} "
        f"(load average {load['before']:.1f} before, {load['after']:.1f} after)"
    )
    print("Decode at batch 1: tokens/s measured | predicted (llama.cpp on this roofline);")
    print("  MBU = the bytes the library counts ÷ step time ÷ measured bandwidth")
    for r in (r for r in engine["engine_points"] if r["phase"] == "decode"):
        print(
            f"  {r['model']:<18} {r['file_type']:<5} {r['threads']} thr  "
            f"{r['measured_tokens_per_s']:7.1f} | {_predicted(r, 'predicted_tokens_per_s', '7.1f')} tok/s   "
            f"MBU {r['mbu']:.2f} | {_predicted(r, 'predicted_mbu', '.2f')}   ({r['measured_s'] / MS:.1f} ms, "
            f"{r['samples']} steps)"
        )
    print("Prompt, one pass: tokens/s measured | predicted;")
    print("  MFU = the FLOPs the library counts ÷ time ÷ measured fp32 matmul FLOP/s")
    for r in (r for r in engine["engine_points"] if r["phase"] == "prompt"):
        print(
            f"  {r['model']:<18} {r['file_type']:<5} {r['threads']} thr  P={r['prompt_tokens']:<4} "
            f"{r['measured_tokens_per_s']:7.0f} | {_predicted(r, 'predicted_tokens_per_s', '7.0f')} tok/s   "
            f"MFU {r['mfu']:.2f} | {_predicted(r, 'predicted_mfu', '.2f')}"
        )
    errors = sorted({r["prediction_error"] for r in engine["engine_points"] if r["prediction_error"]})
    for error in errors:
        print(f"no llama.cpp prediction for this machine: {error}")
    for r in engine["numpy_decoder"]:
        print(
            f"numpy decoder, same shapes in fp32: {r['model']} {r['measured_s'] / MS:.1f} ms per step, "
            f"MBU {r['mbu']:.2f}"
        )
    print(f"Run saved to {engine['engine_run_saved_to']} (notebooks/measure_your_machine.ipynb shows it)")
