"""``roofline serve``: simulate a serving deployment under load, with a real engine and the ideal beside it.

Taught in notebooks/slos_and_capacity.ipynb; the simulator is ``roofline.sim``. docs/cli.md documents
the command and every JSON field.

    roofline serve --model M --gpu G [--gpus N] (--rate R | --concurrency C | --trace FILE) [--input I]
                   [--output O] [--requests K] [--engine E] [--seed S] [--json] ...

The run uses the engine's step times and scheduler (``--engine``, default a real one, ``vllm``); the same
run with every step at the roofline floor (the engine's scheduler kept) is shown beside it as the ideal.
Each GPU is priced with its own price (``roofline.data.default_price``) unless ``--usd-per-hour`` or
``--price`` says otherwise.

Exit codes: 0 success; 1 the simulation ran but the load is unsustainable (the queue grows without bound;
the numbers are still printed); 2 bad input. Errors go through ``roofline.apps.cli.main`` (one ``error:``
line on stderr; with ``--json`` the JSON error object).

>>> import contextlib, io, json
>>> from roofline.apps.cli import main
>>> buf = io.StringIO()
>>> with contextlib.redirect_stdout(buf):
...     code = main(["serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--concurrency", "4",
...                  "--input", "128", "--output", "16", "--requests", "8", "--json"])
>>> d = json.loads(buf.getvalue())
>>> code, d["requests_completed"], d["engine"], d["ideal"]["ttft_s"]["p50"] <= d["ttft_s"]["p50"]
(0, 8, 'vllm', True)
"""

from __future__ import annotations

import numpy as np

from roofline import sim
from roofline.apps import cli_support as support
from roofline.engines import DEFAULT_ENGINE, get_engine

EXIT_OK, EXIT_UNSTABLE = 0, 1
MAX_REQUESTS = support.MAX_REQUESTS
MAX_STAGES = 1_000  # and at most the model's layers (checked once the model is known)


def add_parser(subparsers) -> None:
    """Register ``serve`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "serve",
        help="simulate serving under load: TTFT/TPOT percentiles, throughput, goodput, cost",
        description="Discrete-event simulation of continuous batching (roofline.sim) with a real engine's "
        "step times and scheduler, and the ideal beside it.",
    )
    support.add_common_arguments(p)
    add_load_arguments(p)
    p.add_argument(
        "--seed",
        type=support.whole_number(0, 2**63 - 1),
        default=0,
        help="random seed (default 0); same seed, same result",
    )
    support.add_engine_argument(p, "the step times and the scheduler")
    add_scheduler_arguments(p)
    add_slo_arguments(p)
    support.add_price_arguments(p)
    p.add_argument(
        "--max-sim-time-s",
        type=support.real_number(0, 1e9, "s", above=True),
        default=3600.0,
        metavar="S",
        help="simulated seconds after which the run stops (default 3600)",
    )
    p.add_argument(
        "--replicas",
        type=support.whole_number(1, support.MAX_REPLICAS, "replicas"),
        default=1,
        metavar="R",
        help=f"identical replicas behind a router (default 1, at most {support.MAX_REPLICAS:,})",
    )
    p.add_argument(
        "--pipeline-stages",
        type=support.whole_number(1, MAX_STAGES, "stages"),
        default=1,
        metavar="S",
        help="pipeline-parallel stages per replica, at most the model's layers (GPUs per replica = "
        "--gpus × S)",
    )
    workers = support.whole_number(0, support.MAX_REPLICAS, "workers")
    p.add_argument(
        "--prefill-workers",
        type=workers,
        default=0,
        metavar="P",
        help="disaggregated: prefill workers (with --decode-workers)",
    )
    p.add_argument(
        "--decode-workers",
        type=workers,
        default=0,
        metavar="D",
        help="disaggregated: decode workers (with --prefill-workers)",
    )
    p.add_argument(
        "--prefix-hit-rate",
        type=support.real_number(0, 1, below=True),
        default=0.0,
        metavar="F",
        help="share of each prompt found in the prefix cache, in [0, 1) (default 0)",
    )
    p.add_argument(
        "--kv-capacity-tokens",
        type=support.whole_number(1, 10**12, "tokens"),
        default=None,
        metavar="TOKENS",
        help="KV cache per replica (default: what the engine leaves beside the weights)",
    )


def add_load_arguments(p, *, trace: bool = True) -> None:
    """The load (``--rate``, ``--concurrency``, ``--trace``), the lengths and ``--requests``, bounded."""
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument(
        "--rate",
        type=support.real_number(0, support.MAX_RATE_PER_S, "requests/s", above=True),
        metavar="R",
        help="Poisson arrivals, requests per second",
    )
    if trace:
        load.add_argument(
            "--concurrency",
            type=support.whole_number(1, MAX_REQUESTS, "clients"),
            metavar="C",
            help="closed loop: C clients, each sending its next request when the last ends",
        )
        load.add_argument(
            "--trace",
            metavar="FILE",
            help="a request trace: JSON or CSV with arrival_s, "
            "input_tokens, output_tokens (roofline.sim.load_trace)",
        )
    p.add_argument(
        "--input", type=support.CONTEXT, default=None, metavar="I", help="prompt tokens per request"
    )
    p.add_argument(
        "--output", type=support.TOKENS, default=None, metavar="O", help="output tokens per request"
    )
    p.add_argument(
        "--requests",
        type=support.whole_number(1, MAX_REQUESTS, "requests"),
        default=None,
        metavar="K",
        help="requests in all (default 1000; a trace: all its rows)",
    )


def add_scheduler_arguments(p) -> None:
    """Changes to the engine's scheduler (``roofline.sim.engine_policy``); left out, the engine's own."""
    p.add_argument(
        "--chunk",
        type=support.whole_number(1, support.MAX_TOKENS, "tokens"),
        default=None,
        metavar="TOKENS",
        help="prompt tokens per sequence per step (default: the engine's)",
    )
    p.add_argument(
        "--max-batch",
        type=support.whole_number(1, support.MAX_BATCH, "sequences"),
        default=None,
        metavar="B",
        help="sequences per step at most (default: the engine's)",
    )
    p.add_argument(
        "--token-budget",
        type=support.whole_number(1, support.MAX_TOKENS, "tokens"),
        default=None,
        metavar="TOKENS",
        help="tokens per step at most (default: the engine's)",
    )
    p.add_argument(
        "--priority",
        type=str.lower,
        default=None,
        choices=sim.PRIORITIES,
        help="how prefill and decode share a step (default: the engine's)",
    )


def add_slo_arguments(p) -> None:
    """``--slo-ttft-ms`` and ``--slo-tpot-ms``: more than 0; default the course's targets."""
    ms = support.real_number(0, support.MAX_MS, "ms", above=True)
    p.add_argument(
        "--slo-ttft-ms",
        type=ms,
        default=None,
        metavar="MS",
        help="p99 TTFT target, ms (default: ttft_target_s of data/assumptions.toml)",
    )
    p.add_argument(
        "--slo-tpot-ms",
        type=ms,
        default=None,
        metavar="MS",
        help="p99 TPOT target, ms (default: tpot_target_s of data/assumptions.toml)",
    )


def workload(args, command: str = "serve") -> dict:
    """The load as ``simulate`` keywords, checked: the lengths given (or a trace), the window, the count."""
    trace = None
    if getattr(args, "trace", None) is not None:
        if args.input is not None or args.output is not None:
            raise support.usage_error(command, "--input and --output come from the trace: leave them out")
        trace = sim.load_trace(args.trace)
        rows = len(trace["arrival_s"])
        if args.requests is None and rows > MAX_REQUESTS:
            raise support.usage_error(
                command,
                f"the trace has {rows:,} rows; give --requests (at most "
                f"{MAX_REQUESTS:,}) to simulate its first ones",
            )
        n = min(rows, args.requests or rows)
        longest = int(np.max(trace["input_tokens"][:n] + trace["output_tokens"][:n]))
        support.check_window(args.model, longest, "the trace's longest request (prompt + answer)")
        return {"trace": trace, "requests": n}
    missing = [f"--{k}" for k in ("input", "output") if getattr(args, k) is None]
    if missing:
        raise support.usage_error(command, f"the following arguments are required: {', '.join(missing)}")
    support.check_window(args.model, args.input + args.output, "a request of --input + --output tokens")
    return {
        "rate_per_s": args.rate,
        "concurrency": getattr(args, "concurrency", None),
        "input_tokens": args.input,
        "output_tokens": args.output,
        "requests": args.requests or 1000,
    }


def scheduler(args) -> dict:
    """``simulate``'s scheduler keywords: what was given, the rest the engine's (``ENGINE_DEFAULT``)."""
    given = {
        "max_batch": args.max_batch,
        "token_budget": args.token_budget,
        "chunk_tokens": args.chunk,
        "priority": args.priority,
    }
    return {k: sim.ENGINE_DEFAULT if v is None else v for k, v in given.items()}


def check_deployment(args) -> None:
    """What the engine cannot run: a tensor-parallel size that does not divide the heads, too many stages."""
    support.check_tensor_parallel(args.model, args.gpus, args.engine)
    support.check_pipeline(args.model, args.pipeline_stages)


def run(args) -> int:
    """Simulate with the engine and with the ideal; print both; exit 1 if the engine's queue grows."""
    check_deployment(args)
    usd, price = support.price_of(args.gpu, args.usd_per_hour, args.price)
    common = dict(
        **workload(args),
        seed=args.seed,
        num_gpus=args.gpus,
        weight_precision=args.weights,
        kv_precision=args.kv,
        **scheduler(args),
        slo_ttft_s=_s(args.slo_ttft_ms),
        slo_tpot_s=_s(args.slo_tpot_ms),
        usd_per_gpu_hour=0.0 if usd is None else usd,
        max_sim_time_s=args.max_sim_time_s,
        replicas=args.replicas,
        pipeline_stages=args.pipeline_stages,
        prefill_workers=args.prefill_workers,
        decode_workers=args.decode_workers,
        prefix_hit_rate=args.prefix_hit_rate,
        kv_capacity=args.kv_capacity_tokens,
    )
    engine = get_engine(args.engine)
    r = sim.simulate(args.model, args.gpu, engine=engine.id, **common)
    # The floor of the same run: every step at the roofline, the engine's scheduler kept.
    ideal = (
        r
        if engine.kind == "ideal"
        else sim.simulate(args.model, args.gpu, engine="ideal", policy=engine.id, **common)
    )
    d = result_dict(args, r, ideal, usd, price, common)
    if args.json:
        support.print_json(d)
    else:
        print(_human(d, args))
    return EXIT_UNSTABLE if r.unstable else EXIT_OK


def _s(ms):
    return None if ms is None else ms / 1000


# Fields of ``SimResult.to_dict`` that ``serve`` prints, in order (a promise to scripts: never removed).
KEEP = (
    "model_id",
    "gpu_id",
    "engine",
    "load",
    "rate_per_s",
    "concurrency",
    "num_gpus_total",
    "requests",
    "requests_completed",
    "ttft_s",
    "tpot_s",
    "e2e_s",
    "duration_s",
    "throughput_tokens_per_s",
    "throughput_output_tokens_per_s",
    "requests_per_s",
    "slo_ttft_s",
    "slo_tpot_s",
    "goodput_requests_per_s",
    "goodput_output_tokens_per_s",
    "busy_fraction",
    "preemptions",
    "steps",
    "kv_capacity_tokens",
    "usd_per_gpu_hour",
    "usd_per_million_output_tokens_at_slo",
    "sustainable_rate_per_s",
    "unstable",
    "truncated",
    "message",
)
IDEAL_KEEP = (
    "ttft_s",
    "tpot_s",
    "e2e_s",
    "throughput_output_tokens_per_s",
    "goodput_requests_per_s",
    "usd_per_million_output_tokens_at_slo",
    "sustainable_rate_per_s",
    "unstable",
)


def result_dict(args, r: sim.SimResult, ideal: sim.SimResult, usd, price, common: dict) -> dict:
    """The JSON object of ``serve`` (SI units); docs/cli.md lists the fields."""
    d, i = r.to_dict(), ideal.to_dict()
    out = {"command": "serve", **{k: d[k] for k in KEEP}}
    policy = r.policy
    trace = common.get("trace")
    inp = common["input_tokens"] if trace is None else int(np.max(trace["input_tokens"]))
    outp = common["output_tokens"] if trace is None else int(np.max(trace["output_tokens"]))
    out.update(
        input_tokens=args.input,
        output_tokens=args.output,
        trace=args.trace if trace is not None else None,
        seed=args.seed,
        chunk_tokens=policy.chunk_tokens,
        max_batch=policy.max_sequences,
        token_budget=policy.token_budget,
        priority=policy.priority,
        scheduler=policy.describe(),
        replicas=args.replicas,
        pipeline_stages=args.pipeline_stages,
        prefill_workers=args.prefill_workers,
        decode_workers=args.decode_workers,
        prefix_hit_rate=args.prefix_hit_rate,
        weight_precision=args.weights,
        kv_precision=args.kv,
        default_engine=DEFAULT_ENGINE,
        price_id=price.id if price else None,
        price_kind=price.kind if price else None,
        ideal={k: i[k] for k in IDEAL_KEEP},
        **support.coverage_fields(
            args.engine,
            args.model,
            args.gpu,
            getattr(args, "concurrency", None),
            args.gpus,
            args.weights,
            input_tokens=inp,
            output_tokens=outp,
        ),
    )
    if usd is None:  # a GPU with no price (a measured machine): no cost, rather than an invented one
        out["usd_per_gpu_hour"] = out["usd_per_million_output_tokens_at_slo"] = None
        out["ideal"]["usd_per_million_output_tokens_at_slo"] = None
    return support.jsonable(out)


def _ms3(p: dict) -> str:
    """p50 / p90 / p99 in ms."""
    if p["p50"] is None:
        return "n/a"
    return " / ".join(f"{p[k] * 1e3:,.1f}" for k in ("p50", "p90", "p99")) + " ms"


def _usd(x) -> str:
    return "nothing meets the SLO" if x is None else f"${x:.3g} per million output tokens"


def _load_text(d: dict) -> str:
    if d["load"] == "closed":
        c = d["concurrency"]
        return f"{c:,} client{'s' if c != 1 else ''} (closed loop)"
    if d["load"] == "trace":
        return f"trace {d['trace']} ({d['requests']:,} requests)"
    return f"Poisson {d['rate_per_s']:g} req/s"


def _human(d: dict, args) -> str:
    i, eng = d["ideal"], d["engine"]
    lengths = "" if d["load"] == "trace" else f", {d['input_tokens']:,} in / {d['output_tokens']:,} out"
    head = (
        f"serve: {d['model_id']} on {d['num_gpus_total']:,} × {d['gpu_id']}, {_load_text(d)}{lengths}, "
        f"weights {support.weights_text(d['weight_precision'], support.weights_defaulted(args))}, "
        f"seed {d['seed']}"
    )
    two = [
        ("TTFT p50/p90/p99", _ms3(d["ttft_s"]), _ms3(i["ttft_s"])),
        ("TPOT p50/p90/p99", _ms3(d["tpot_s"]), _ms3(i["tpot_s"])),
        ("end to end p50/p90/p99", _ms3(d["e2e_s"]), _ms3(i["e2e_s"])),
        (
            "output tokens/s",
            f"{d['throughput_output_tokens_per_s']:,.0f}",
            f"{i['throughput_output_tokens_per_s']:,.0f}",
        ),
        ("goodput req/s", f"{d['goodput_requests_per_s']:,.2f}", f"{i['goodput_requests_per_s']:,.2f}"),
        (
            "sustainable req/s",
            f"about {d['sustainable_rate_per_s']:,.1f}",
            f"about {i['sustainable_rate_per_s']:,.1f}",
        ),
    ]
    if d["usd_per_gpu_hour"] is not None:
        two.append(
            (
                "cost at the SLO",
                _usd(d["usd_per_million_output_tokens_at_slo"]),
                _usd(i["usd_per_million_output_tokens_at_slo"]),
            )
        )
    w0 = max(len(a) for a, _, _ in two)
    w1 = max(len(eng), *(len(b) for _, b, _ in two))
    lines = [head, f"  {'':<{w0}}  {eng:<{w1}}  ideal (every step at the floor)"]
    lines += [f"  {a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in two]
    price = (
        "no price for this GPU: give --usd-per-hour"
        if d["usd_per_gpu_hour"] is None
        else support.price_text(d["usd_per_gpu_hour"], _price_row(d), d["num_gpus_total"])
    )
    one = [
        (
            "requests",
            f"{d['requests_completed']:,} of {d['requests']:,} completed in {d['duration_s']:,.1f} s",
        ),
        ("SLO", f"TTFT <= {d['slo_ttft_s'] * 1e3:,.0f} ms, TPOT <= {d['slo_tpot_s'] * 1e3:,.0f} ms"),
        ("GPU busy", f"{100 * d['busy_fraction']:.0f}% of the time; {d['preemptions']:,} preemptions"),
        ("scheduler", d["scheduler"]),
        ("price", price),
        *support.extrapolation_rows(d),
    ]
    lines += [f"  {a:<{w0}}  {b}" for a, b in one]
    if d["message"]:
        lines.append(("warning: " if d["unstable"] else "note: ") + d["message"])
    return "\n".join(lines)


def _price_row(d: dict):
    from roofline.data import get_price

    return get_price(d["price_id"]) if d["price_id"] else None
