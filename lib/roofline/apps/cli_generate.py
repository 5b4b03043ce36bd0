"""``roofline generate``: a static batch, the ideal floor and the achievable (calibrated) figures.

B requests of I prompt and O output tokens run together: one prefill of B × I tokens (TTFT), then O decode
steps (``roofline.engines.generate``), after the checks a real engine would make (the model's window, the
tensor-parallel split, the pipeline stages). docs/cli.md lists every field.

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
from roofline.apps import cli_figures as fig
from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.calibration.measurements import nearest_measured
from roofline.units import fmt_time

# The JSON names `generate` promises (docs/cli.md), each with its field of ``GenerateResult.to_dict``.
FIELDS = {"model": "model_id", "gpu": "gpu_id", "gpus": "num_gpus", "parallel": "parallel", "batch": "batch",
          "input_tokens": "input_tokens", "output_tokens": "output_tokens", "weights": "weight_precision",
          "kv": "kv_precision", "engine": "engine"}  # fmt: skip


def add_parser(subparsers) -> None:
    """Add the ``generate`` subcommand to an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        "generate",
        help="a static batch: TTFT, time per output token, latency and tokens/s, ideal and achievable",
        description="A static batch of B requests, each with I prompt tokens and O output tokens: the ideal "
        "floor and what a calibrated engine achieves (see docs/cli.md).",
    )
    opt.add_common_arguments(p)
    p.add_argument(
        "--parallel", choices=("tensor", "pipeline"), type=str.lower, default=None,
        help="tensor: every layer split over the GPUs; pipeline: layers split, a token visits the GPUs in "
        "turn (default: how the engine runs; llama.cpp pipeline, the others tensor)",
    )  # fmt: skip
    p.add_argument("--batch", type=opt.BATCH, required=True, metavar="B", help="requests in the static batch")
    p.add_argument("--input", type=opt.TOKENS, required=True, metavar="I", help="prompt tokens per request")
    p.add_argument("--output", type=opt.TOKENS, required=True, metavar="O", help="output tokens per request")
    opt.add_engine_argument(p)


def result_dict(r: engines.GenerateResult) -> dict:
    """The JSON object of one result (the CLI contract; SI units)."""
    d = r.to_dict()
    named = {
        "command": "generate",
        **{k: d[v] for k, v in FIELDS.items()},
        "default_engine": engines.default_engine(d["gpu_id"]),  # what --engine falls back to on this GPU
    }
    return out.jsonable({**named, **{k: d[k] for k in ("fits", "ideal", "achievable", "calibration")}})


def run(args) -> int:
    """Run ``generate`` from parsed ``args``; return the exit code (errors raise, ``cli.main`` reports)."""
    opt.check_window(args.model, args.input + args.output, "a request of --input + --output tokens")
    parallel = args.parallel or engines.get_engine(args.engine).parallel
    if parallel == "pipeline":
        opt.check_pipeline(args.model, args.gpus, "--gpus in a pipeline")
    opt.check_tensor_parallel(args.model, args.gpus, args.engine, parallel)
    r = engines.generate(
        fig.step_timer(args), batch=args.batch, input_tokens=args.input, output_tokens=args.output
    )
    c = r.calibration  # where the engine's figure is extrapolated, the measured runs closest to it
    c["nearest_measured"] = (
        nearest_measured(r.model_id, r.gpu_id, r.engine, r.batch, r.input_tokens, r.output_tokens, r.num_gpus)
        if c["extrapolated"]
        else []
    )
    if args.json:
        out.print_json(result_dict(r))
    else:
        print(_human(r, args.weights_defaulted))
    return out.EXIT_OK


def _human(r: engines.GenerateResult, weights_defaulted: str) -> str:
    c, i, a = r.calibration, r.ideal, r.achievable
    rows = [
        ("", "ideal", f"achievable ({r.engine})"),
        ("TTFT (prefill of the batch)", fmt_time(i.ttft_s), fmt_time(a.ttft_s)),
        ("time per output token", fmt_time(i.tpot_s), fmt_time(a.tpot_s)),
        ("latency (whole batch)", fmt_time(i.latency_s), fmt_time(a.latency_s)),
        ("output tokens/s", f"{i.output_tokens_per_s:,.0f}", f"{a.output_tokens_per_s:,.0f}"),
        ("total tokens/s", f"{i.total_tokens_per_s:,.0f}", f"{a.total_tokens_per_s:,.0f}"),
    ]
    lines = [
        f"{r.model_id} on {r.num_gpus} × {r.gpu_id} ({r.parallel} parallel), {r.batch} requests × "
        f"{r.input_tokens:,} in / {r.output_tokens:,} out, "
        f"{out.precisions_text(r.weight_precision, r.kv_precision, weights_defaulted)}",
        "",
        out.rows_text(rows, indent="", right=frozenset({1})),
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
