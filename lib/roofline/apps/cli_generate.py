"""``roofline generate``: a static batch, the ideal floor and the achievable (calibrated) figures.

    roofline generate --model M --gpu G [--gpus N] [--parallel tensor|pipeline] --batch B \\
        --input I --output O [--weights P] [--kv P] [--engine E] [--json]

B requests, each with I prompt tokens and O output tokens, run together: one prefill of the B × I prompt
tokens (TTFT), then O decode steps with each request's context growing from I to I + O. The numbers come
from ``roofline.achievable.generate``; this module only parses and formats. docs/cli.md lists every field.
With ``--json`` every failure prints ``{"error": {"type": ..., "message": ...}}`` and exits non-zero.
"""

from __future__ import annotations

import json
import math
import sys

from roofline import achievable as ach
from roofline.errors import RooflineError, UnknownNameError
from roofline.units import fmt_time

EXIT_OK = 0
EXIT_ERROR = 2

TIMING_FIELDS = ("ttft_s", "tpot_s", "latency_s", "output_tokens_per_s", "total_tokens_per_s")


def add_parser(subparsers, parent=None) -> None:
    """Add the ``generate`` subcommand to an argparse ``subparsers`` object. With ``parent`` (the top-level
    parser), its usage errors on a ``generate ... --json`` command line are printed as JSON too."""
    p = subparsers.add_parser(
        "generate",
        help="a static batch: TTFT, time per output token, latency and tokens/s, ideal and achievable",
        description="A static batch of B requests, each with I prompt tokens and O output tokens: the ideal "
        "floor and what a calibrated engine achieves (see docs/cli.md).",
    )
    # Numbers are read as text and checked in run(), so that a bad value gets the JSON error too.
    p.add_argument("--model", default=None, help="model id (see `roofline list models`)")
    p.add_argument("--gpu", default=None, help="GPU id (see `roofline list gpus`)")
    p.add_argument("--gpus", default="1", metavar="N", help="GPUs (default 1)")
    p.add_argument(
        "--parallel",
        default=None,
        metavar="tensor|pipeline",
        help="tensor: every layer split over the GPUs; pipeline: layers split, a token visits the GPUs in "
        "turn (default: how the engine runs; llama.cpp pipeline, the others tensor)",
    )
    p.add_argument("--batch", default=None, metavar="B", help="requests in the static batch")
    p.add_argument("--input", default=None, metavar="I", help="prompt tokens per request")
    p.add_argument("--output", default=None, metavar="O", help="output tokens per request")
    p.add_argument("--weights", default="bf16", metavar="PRECISION", help="weight precision (default bf16)")
    p.add_argument("--kv", default="bf16", metavar="PRECISION", help="KV-cache precision (default bf16)")
    p.add_argument(
        "--engine",
        default=ach.DEFAULT_ENGINE,
        help=f"engine whose calibration to use: {', '.join(sorted(ach.ENGINE_PARALLEL))} "
        f"(default {ach.DEFAULT_ENGINE})",
    )
    p.add_argument("--json", action="store_true", help="print a JSON object (SI units)")
    p.set_defaults(handler=run)
    p.error = lambda message: _argparse_error(p, message)
    if parent is not None:
        plain = parent.error

        def parent_error(message):
            if "generate" in sys.argv[1:] and "--json" in sys.argv[1:]:
                _print_error("UsageError", message)
                raise SystemExit(EXIT_ERROR)
            plain(message)

        parent.error = parent_error


def _argparse_error(parser, message: str):
    if "--json" in sys.argv[1:]:
        _print_error("UsageError", message)
        raise SystemExit(EXIT_ERROR)
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_ERROR)


def _print_error(kind: str, message: str, **extra) -> None:
    print(json.dumps({"error": {"type": kind, "message": message, **extra}}, ensure_ascii=False))


class _UsageError(RooflineError):
    pass


def _int(value, name: str) -> int:
    if value is None:
        raise _UsageError(f"--{name} is required")
    try:
        return int(str(value).strip())
    except ValueError:
        raise _UsageError(f"--{name} must be a whole number, got {value!r}") from None


def _finite(obj):
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def result_dict(r: ach.GenerateResult) -> dict:
    """The JSON object of one result (the CLI contract; SI units)."""
    d = r.to_dict()
    return _finite(
        {
            "command": "generate",
            "model": d["model_id"],
            "gpu": d["gpu_id"],
            "gpus": d["num_gpus"],
            "parallel": d["parallel"],
            "batch": d["batch"],
            "input_tokens": d["input_tokens"],
            "output_tokens": d["output_tokens"],
            "weights": d["weight_precision"],
            "kv": d["kv_precision"],
            "engine": d["engine"],
            "default_engine": ach.DEFAULT_ENGINE,
            "fits": d["fits"],
            "ideal": d["ideal"],
            "achievable": d["achievable"],
            "calibration": d["calibration"],
        }
    )


def run(args) -> int:
    """Run ``generate`` from parsed ``args``; return the exit code."""
    try:
        r = ach.generate(
            (args.model or _missing("model")).strip().lower(),
            (args.gpu or _missing("gpu")).strip().lower(),
            batch=_int(args.batch, "batch"),
            input_tokens=_int(args.input, "input"),
            output_tokens=_int(args.output, "output"),
            num_gpus=_int(args.gpus, "gpus"),
            parallel=args.parallel,
            weight_precision=args.weights.strip().lower(),
            kv_precision=args.kv.strip().lower(),
            engine=args.engine,
        )
    except RooflineError as exc:
        kind = "UsageError" if isinstance(exc, _UsageError) else type(exc).__name__
        extra = {"suggestions": exc.suggestions} if isinstance(exc, UnknownNameError) else {}
        if args.json:
            _print_error(kind, str(exc), **extra)
        else:
            print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (OSError, ValueError) as exc:  # a missing or broken data/calibration file
        if args.json:
            _print_error(type(exc).__name__, f"could not read the data or calibration: {exc}")
        else:
            print(f"error: could not read the data or calibration: {exc}", file=sys.stderr)
        return EXIT_ERROR
    d = result_dict(r)
    if args.json:
        print(json.dumps(d, indent=2, ensure_ascii=False))
        return EXIT_OK
    print(_human(r))
    return EXIT_OK


def _missing(name: str):
    raise _UsageError(f"--{name} is required")


def _human(r: ach.GenerateResult) -> str:
    c = r.calibration
    rows = [
        ("TTFT (prefill of the batch)", fmt_time(r.ideal.ttft_s), fmt_time(r.achievable.ttft_s)),
        ("time per output token", fmt_time(r.ideal.tpot_s), fmt_time(r.achievable.tpot_s)),
        ("latency (whole batch)", fmt_time(r.ideal.latency_s), fmt_time(r.achievable.latency_s)),
        (
            "output tokens/s",
            f"{r.ideal.output_tokens_per_s:,.0f}",
            f"{r.achievable.output_tokens_per_s:,.0f}",
        ),
        ("total tokens/s", f"{r.ideal.total_tokens_per_s:,.0f}", f"{r.achievable.total_tokens_per_s:,.0f}"),
    ]
    w0 = max(len(x[0]) for x in rows)
    w1 = max(len("ideal"), *(len(x[1]) for x in rows))
    lines = [
        f"{r.model_id} on {r.num_gpus} × {r.gpu_id} ({r.parallel} parallel), {r.batch} requests × "
        f"{r.input_tokens:,} in / {r.output_tokens:,} out, weights {r.weight_precision}, KV {r.kv_precision}",
        "",
        f"{'':<{w0}}  {'ideal':>{w1}}  achievable ({r.engine})",
        *(f"{a:<{w0}}  {b:>{w1}}  {c_}" for a, b, c_ in rows),
        "",
        f"calibration: {c['gpu_family']} × {r.engine}: {c['bandwidth_fraction']:.0%} of bandwidth, "
        f"{c['compute_fraction']:.0%} of peak math ({c['fractions_from']}); per step "
        f"{fmt_time(c['step_overhead_s'])} + {fmt_time(c['sequence_overhead_s'])} per request, per layer "
        f"{fmt_time(c['layer_overhead_s'])}",
    ]
    if c.get("waves", 1) > 1:
        lines.append(f"the batch's KV does not fit beside the weights at once: it runs in {c['waves']} waves")
    if c["extrapolated"]:
        lines.append("extrapolated: " + "; ".join(c["extrapolation_reasons"]))
        for x in c["nearest_measured"]:
            lines.append(
                f"  nearest measured: {x['model']} on {x['num_gpus']} × {x['gpu']} ({x['engine']}), "
                f"batch {x['batch']}, {x['input_tokens']} in / {x['output_tokens']} out [{x['source']}]"
            )
    return "\n".join(lines)
