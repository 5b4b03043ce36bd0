"""``roofline serve``: simulate a serving deployment under load and print latency percentiles.

Taught in notebooks/slos_and_capacity.ipynb; the simulator is ``roofline.sim``. docs/cli.md documents
the command and every JSON field.

    roofline serve --model M --gpu G [--gpus N] (--rate R | --concurrency C) --input I --output O
                   [--requests K] [--seed S] [--chunk TOKENS] [--max-batch B] [--engine E] [--json]

Exit codes: 0 success; 1 the simulation ran but the load is unsustainable (the queue grows without bound;
the numbers are still printed); 2 bad input. With ``--json`` every failure, argument errors included,
prints ``{"error": {"type": ..., "message": ...}}`` on stdout.

>>> import contextlib, io, json
>>> buf = io.StringIO()
>>> with contextlib.redirect_stdout(buf):
...     code = main(["--model", "llama-3-8b", "--gpu", "h100-sxm", "--concurrency", "4", "--input", "128",
...                  "--output", "16", "--requests", "8", "--json"])
>>> code, json.loads(buf.getvalue())["requests_completed"]
(0, 8)
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import roofline as rl
from roofline import sim

EXIT_OK, EXIT_UNSTABLE, EXIT_ERROR = 0, 1, 2
MAX_REQUESTS = 1_000_000


def _clean(value):
    """numpy scalars to Python, NaN and infinities to None (JSON has neither)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _print_error(as_json: bool, kind: str, message: str) -> int:
    if as_json:
        print(json.dumps({"error": {"type": kind, "message": message}}, ensure_ascii=False))
    else:
        print(f"error: {message}", file=sys.stderr)
    return EXIT_ERROR


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``serve`` on an ``argparse`` subparsers object; returns the new parser."""
    p = subparsers.add_parser(
        "serve",
        help="simulate serving under load: TTFT/TPOT percentiles, throughput, goodput",
        description="Discrete-event simulation of continuous batching (roofline.sim).",
    )
    low = lambda s: s.strip().lower()  # noqa: E731
    p.add_argument("--model", type=low, required=True, help="model id (see `roofline list models`)")
    p.add_argument("--gpu", type=low, required=True, help="GPU id (see `roofline list gpus`)")
    p.add_argument("--gpus", type=int, default=1, metavar="N", help="GPUs in tensor parallel (default 1)")
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--rate", type=float, metavar="R", help="Poisson arrivals, requests per second")
    load.add_argument("--concurrency", type=int, metavar="C", help="closed loop: C clients, zero think time")
    p.add_argument("--input", type=int, required=True, metavar="I", help="prompt tokens per request")
    p.add_argument("--output", type=int, required=True, metavar="O", help="output tokens per request")
    p.add_argument("--requests", type=int, default=1000, metavar="K", help="requests in all (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0); same seed, same result")
    p.add_argument(
        "--chunk", type=int, default=None, metavar="TOKENS", help="chunked prefill size (default off)"
    )
    p.add_argument("--max-batch", type=int, default=sim.engine.DEFAULT_MAX_BATCH, metavar="B",
                   help=f"sequences per step at most (default {sim.engine.DEFAULT_MAX_BATCH})")  # fmt: skip
    p.add_argument("--token-budget", type=int, default=sim.engine.DEFAULT_TOKEN_BUDGET, metavar="TOKENS",
                   help=f"tokens per step at most (default {sim.engine.DEFAULT_TOKEN_BUDGET})")  # fmt: skip
    p.add_argument("--priority", type=low, default="decode-first", choices=sim.PRIORITIES,
                   help="scheduling priority (default decode-first)")  # fmt: skip
    p.add_argument("--engine", type=low, default="ideal", choices=sim.ENGINES,
                   help="step-cost engine (default ideal: the roofline; vllm, tensorrt-llm, sglang, "
                   "llama.cpp: the achievable layer's calibration)")  # fmt: skip
    p.add_argument("--weights", type=low, default="bf16", metavar="PRECISION", help="weight precision")
    p.add_argument("--kv", type=low, default="bf16", metavar="PRECISION", help="KV-cache precision")
    p.add_argument("--slo-ttft-ms", type=float, default=1000 * sim.engine.DEFAULT_SLO_TTFT_S, metavar="MS",
                   help="TTFT SLO for goodput and cost, ms (default 1000)")  # fmt: skip
    p.add_argument("--slo-tpot-ms", type=float, default=1000 * sim.engine.DEFAULT_SLO_TPOT_S, metavar="MS",
                   help="TPOT SLO for goodput and cost, ms (default 50)")  # fmt: skip
    p.add_argument("--usd-per-hour", type=float, default=None, metavar="USD",
                   help="price of one GPU-hour (default the course example, $3)")  # fmt: skip
    p.add_argument("--max-sim-time-s", type=float, default=3600.0, metavar="S",
                   help="simulated seconds after which the run stops (default 3600)")  # fmt: skip
    p.add_argument("--replicas", type=int, default=1, metavar="R", help="identical replicas behind a router")
    p.add_argument("--pipeline-stages", type=int, default=1, metavar="S",
                   help="pipeline-parallel stages per replica (GPUs per replica = --gpus × S)")  # fmt: skip
    p.add_argument("--prefill-workers", type=int, default=0, metavar="P",
                   help="disaggregated: prefill workers (with --decode-workers)")  # fmt: skip
    p.add_argument("--decode-workers", type=int, default=0, metavar="D",
                   help="disaggregated: decode workers (with --prefill-workers)")  # fmt: skip
    p.add_argument("--prefix-hit-rate", type=float, default=0.0, metavar="F",
                   help="share of each prompt found in the prefix cache, in [0, 1) (default 0)")  # fmt: skip
    p.add_argument("--kv-capacity-tokens", type=int, default=None, metavar="TOKENS",
                   help="KV cache per replica (default: memory minus weights)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print a JSON object (SI units)")
    p.set_defaults(handler=run)

    # With --json, argument errors print the JSON error object too: remember whether it was asked for.
    wants_json = {"on": False}
    parse_known = p.parse_known_args

    def parse_known_args(args=None, namespace=None):
        wants_json["on"] = "--json" in (args if args is not None else sys.argv[1:])
        return parse_known(args, namespace)

    def error(message):
        if wants_json["on"]:
            _print_error(True, "usage", message)
            raise SystemExit(EXIT_ERROR)
        p.print_usage(sys.stderr)
        p.exit(EXIT_ERROR, f"{p.prog}: error: {message}\n")

    p.parse_known_args = parse_known_args
    p.error = error
    return p


def result_dict(args, r: sim.SimResult) -> dict:
    """The JSON object of ``serve`` (SI units); docs/cli.md lists the fields."""
    d = r.to_dict()
    keep = (
        "model_id", "gpu_id", "engine", "load", "rate_per_s", "concurrency", "num_gpus_total", "requests",
        "requests_completed", "ttft_s", "tpot_s", "e2e_s", "duration_s", "throughput_tokens_per_s",
        "throughput_output_tokens_per_s", "requests_per_s", "slo_ttft_s", "slo_tpot_s",
        "goodput_requests_per_s", "goodput_output_tokens_per_s", "busy_fraction", "preemptions", "steps",
        "kv_capacity_tokens", "usd_per_gpu_hour", "usd_per_million_output_tokens_at_slo",
        "sustainable_rate_per_s", "unstable", "truncated", "message",
    )  # fmt: skip
    out = {"command": "serve", **{k: d[k] for k in keep}}
    out.update(
        input_tokens=args.input,
        output_tokens=args.output,
        seed=args.seed,
        chunk_tokens=args.chunk,
        max_batch=args.max_batch,
        token_budget=args.token_budget,
        priority=args.priority,
        replicas=args.replicas,
        pipeline_stages=args.pipeline_stages,
        prefill_workers=args.prefill_workers,
        decode_workers=args.decode_workers,
        prefix_hit_rate=args.prefix_hit_rate,
        weight_precision=args.weights,
        kv_precision=args.kv,
    )
    return _clean(out)


def _ms(x) -> str:
    return "n/a" if x is None else f"{x * 1e3:,.1f} ms"


def _human(d: dict) -> str:
    load = f"Poisson {d['rate_per_s']:g} req/s" if d["load"] == "poisson" else f"{d['concurrency']} clients"
    rows = [
        (
            "requests",
            f"{d['requests_completed']:,} of {d['requests']:,} completed in {d['duration_s']:,.1f} s",
        ),
        *[
            (name, "  ".join(f"{k} {_ms(v)}" for k, v in d[key].items()))
            for name, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("end to end", "e2e_s"))
        ],
        (
            "throughput",
            f"{d['throughput_output_tokens_per_s']:,.0f} output tokens/s, "
            f"{d['throughput_tokens_per_s']:,.0f} tokens/s in all",
        ),  # fmt: skip
        (
            "goodput",
            f"{d['goodput_requests_per_s']:,.2f} req/s within TTFT <= {_ms(d['slo_ttft_s'])}, "
            f"TPOT <= {_ms(d['slo_tpot_s'])}",
        ),  # fmt: skip
        ("GPU busy", f"{100 * d['busy_fraction']:.0f}% of the time; {d['preemptions']} preemptions"),
        (
            "cost at the SLO",
            "no request meets the SLO"
            if d["usd_per_million_output_tokens_at_slo"] is None
            else f"${d['usd_per_million_output_tokens_at_slo']:.3g} per million output tokens "
            f"(${d['usd_per_gpu_hour']:.2f}/GPU-hour)",
        ),  # fmt: skip
        ("sustainable", f"about {d['sustainable_rate_per_s']:,.1f} req/s (closed form)"),
    ]
    width = max(len(a) for a, _ in rows)
    head = (
        f"serve: {d['model_id']} on {d['num_gpus_total']} × {d['gpu_id']} ({d['engine']}), {load}, "
        f"{d['input_tokens']} in / {d['output_tokens']} out, seed {d['seed']}"
    )
    lines = [head, *(f"  {a:<{width}}  {b}" for a, b in rows)]
    if d["message"]:
        lines.append(("warning: " if d["unstable"] else "note: ") + d["message"])
    return "\n".join(lines)


def run(args) -> int:
    """Run ``serve`` from parsed arguments; print the result; return the exit code."""
    try:
        if not 1 <= args.requests <= MAX_REQUESTS:
            raise rl.InvalidConfigurationError(
                f"--requests must be in 1 … {MAX_REQUESTS:,}, got {args.requests}"
            )
        r = sim.simulate(
            args.model,
            args.gpu,
            rate_per_s=args.rate,
            concurrency=args.concurrency,
            requests=args.requests,
            input_tokens=args.input,
            output_tokens=args.output,
            seed=args.seed,
            num_gpus=args.gpus,
            weight_precision=args.weights,
            kv_precision=args.kv,
            engine=args.engine,
            max_batch=args.max_batch,
            token_budget=args.token_budget,
            chunk_tokens=args.chunk,
            priority=args.priority,
            slo_ttft_s=args.slo_ttft_ms / 1000,
            slo_tpot_s=args.slo_tpot_ms / 1000,
            usd_per_gpu_hour=args.usd_per_hour,
            max_sim_time_s=args.max_sim_time_s,
            replicas=args.replicas,
            pipeline_stages=args.pipeline_stages,
            prefill_workers=args.prefill_workers,
            decode_workers=args.decode_workers,
            prefix_hit_rate=args.prefix_hit_rate,
            kv_capacity=args.kv_capacity_tokens,
        )
    except rl.RooflineError as exc:
        return _print_error(args.json, type(exc).__name__, str(exc))
    except (ValueError, OverflowError) as exc:
        return _print_error(args.json, "InvalidConfigurationError", str(exc))
    d = result_dict(args, r)
    if args.json:
        print(json.dumps(d, indent=2, allow_nan=False, ensure_ascii=False))
    else:
        print(_human(d))
    return EXIT_UNSTABLE if r.unstable else EXIT_OK


def main(argv=None) -> int:
    """``serve`` alone (for tests and ``python -m roofline.apps.cli_serve``); returns the exit code."""
    parser = argparse.ArgumentParser(prog="roofline")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    try:
        args = parser.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
