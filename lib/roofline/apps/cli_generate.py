"""``roofline generate``: a static batch, the ideal floor and the achievable (calibrated) figures.

    roofline generate --model M --gpu G [--gpus N] [--parallel tensor|pipeline] --batch B \\
        --input I --output O [--weights P] [--kv P] [--engine E] [--json]

B requests, each with I prompt tokens and O output tokens, run together: one prefill of the B × I prompt
tokens (TTFT), then O decode steps with each request's context growing from I to I + O. The numbers come
from ``roofline.engines.generate``; this module only parses, checks what a real engine would refuse (a
request longer than the model's window, a tensor-parallel size that does not divide the heads, more
pipeline stages than layers) and formats. docs/cli.md lists every field. Errors go through
``roofline.apps.cli.main``: one ``error:`` line on stderr, and with ``--json`` the JSON error object.

>>> import contextlib, io, json
>>> from roofline.apps.cli import main
>>> buf = io.StringIO()
>>> with contextlib.redirect_stdout(buf):
...     code = main(["generate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "1", "--input", "1",
...                  "--output", "1", "--json"])
>>> code, round(json.loads(buf.getvalue())["ideal"]["tpot_s"] * 1e3, 2)     # 15.01 GB ÷ 3.35 TB/s
(0, 4.48)
"""

from __future__ import annotations

from roofline import engines
from roofline.apps import cli_support as support
from roofline.calibration.measurements import nearest_measured
from roofline.units import fmt_time

EXIT_OK = 0


def add_parser(subparsers) -> None:
    """Add the ``generate`` subcommand to an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        "generate",
        help="a static batch: TTFT, time per output token, latency and tokens/s, ideal and achievable",
        description="A static batch of B requests, each with I prompt tokens and O output tokens: the ideal "
        "floor and what a calibrated engine achieves (see docs/cli.md).",
    )
    support.add_common_arguments(p)
    p.add_argument(
        "--parallel",
        choices=("tensor", "pipeline"),
        type=str.lower,
        default=None,
        help="tensor: every layer split over the GPUs; pipeline: layers split, a token visits the GPUs in "
        "turn (default: how the engine runs; llama.cpp pipeline, the others tensor)",
    )
    p.add_argument(
        "--batch", type=support.BATCH, required=True, metavar="B", help="requests in the static batch"
    )
    p.add_argument(
        "--input", type=support.TOKENS, required=True, metavar="I", help="prompt tokens per request"
    )
    p.add_argument(
        "--output", type=support.TOKENS, required=True, metavar="O", help="output tokens per request"
    )
    support.add_engine_argument(p)
    p.set_defaults(handler=run)


def result_dict(r: engines.GenerateResult) -> dict:
    """The JSON object of one result (the CLI contract; SI units)."""
    d = r.to_dict()
    return support.jsonable(
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
            "default_engine": engines.DEFAULT_ENGINE,
            "fits": d["fits"],
            "ideal": d["ideal"],
            "achievable": d["achievable"],
            "calibration": d["calibration"],
        }
    )


def run(args) -> int:
    """Run ``generate`` from parsed ``args``; return the exit code (errors raise, ``cli.main`` reports)."""
    support.check_window(args.model, args.input + args.output, "a request of --input + --output tokens")
    parallel = args.parallel or engines.get_engine(args.engine).parallel
    if parallel == "pipeline":
        support.check_pipeline(args.model, args.gpus, "--gpus in a pipeline")
    support.check_tensor_parallel(args.model, args.gpus, args.engine, parallel)
    r = engines.generate(
        args.model,
        args.gpu,
        batch=args.batch,
        input_tokens=args.input,
        output_tokens=args.output,
        num_gpus=args.gpus,
        parallel=args.parallel,
        weight_precision=args.weights,
        kv_precision=args.kv,
        engine=args.engine,
    )
    c = r.calibration  # where the engine's figure is extrapolated, the measured runs closest to it
    c["nearest_measured"] = (
        nearest_measured(r.model_id, r.gpu_id, r.engine, r.batch, r.input_tokens, r.output_tokens, r.num_gpus)
        if c["extrapolated"]
        else []
    )
    if args.json:
        support.print_json(result_dict(r))
    else:
        print(_human(r, support.weights_defaulted(args)))
    return EXIT_OK


def _human(r: engines.GenerateResult, weights_defaulted: str = "") -> str:
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
        f"{r.input_tokens:,} in / {r.output_tokens:,} out, weights "
        f"{support.weights_text(r.weight_precision, weights_defaulted)}, KV {r.kv_precision}",
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
