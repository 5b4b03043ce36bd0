"""``roofline serve``: simulate a serving deployment under load (``roofline.sim``), with the engine's step
times and scheduler (``--engine``, default ``vllm``) and, beside it, the same run with every step at the
roofline floor. Taught in notebooks/slos_and_capacity.ipynb; docs/cli.md lists every JSON field.

Each GPU is priced with its own price (``roofline.pricing.default_price``) unless ``--usd-per-hour`` or
``--price`` says otherwise. Exit code 1: the load is unsustainable (the queue grows without bound; the
numbers are still printed). The load and target options serve ``roofline plan`` too.

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

import math

import numpy as np

from roofline import sim
from roofline.apps import cli_figures as fig
from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.data import get_gpu
from roofline.engines import default_engine, get_engine

MAX_REQUESTS = 1_000_000  # simulated requests (and closed-loop clients): memory and time stay bounded
MAX_REPLICAS = 1_000  # simulated workers: each is an object with its own queues
MAX_RATE_PER_S = 1e6  # requests per second
MAX_STAGES = 1_000  # and at most the model's layers (checked once the model is known)
SEED = opt.whole_number(0, 2**63 - 1)

# Fields of ``SimResult.to_dict`` that ``serve`` prints, in order (a promise to scripts: never removed).
FIELDS = (
    "model_id", "gpu_id", "engine", "load", "rate_per_s", "concurrency", "num_gpus_total", "requests",
    "requests_completed", "ttft_s", "tpot_s", "e2e_s", "ttft_mean_s", "tpot_mean_s", "duration_s",
    "throughput_tokens_per_s", "throughput_output_tokens_per_s", "requests_per_s", "slo_ttft_s", "slo_tpot_s",
    "goodput_requests_per_s", "goodput_output_tokens_per_s", "busy_fraction", "preemptions", "steps",
    "kv_capacity_tokens", "usd_per_gpu_hour", "usd_per_million_output_tokens_at_slo",
    "sustainable_rate_per_s", "unstable", "truncated", "message",
)  # fmt: skip
# The options giving each replica's shape, passed to the simulator and echoed in JSON as they are.
WORKERS = ("replicas", "pipeline_stages", "prefill_workers", "decode_workers", "prefix_hit_rate")
IDEAL_FIELDS = ("ttft_s", "tpot_s", "e2e_s", "ttft_mean_s", "tpot_mean_s", "throughput_output_tokens_per_s",
                "goodput_requests_per_s",
                "usd_per_million_output_tokens_at_slo", "sustainable_rate_per_s", "unstable")  # fmt: skip


def add_parser(subparsers) -> None:
    """Register ``serve`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "serve",
        help="simulate serving under load: TTFT/TPOT percentiles, throughput, goodput, cost",
        description="Discrete-event simulation of continuous batching (roofline.sim) with a real engine's "
        "step times and scheduler, and the ideal beside it.",
    )
    opt.add_common_arguments(p)
    add_load_arguments(p)
    p.add_argument("--seed", type=SEED, default=0, help="random seed (default 0); same seed, same result")
    opt.add_engine_argument(p, "the step times and the scheduler")
    _add_scheduler_arguments(p)
    add_slo_arguments(p)
    opt.add_price_arguments(p)
    workers = opt.whole_number(0, MAX_REPLICAS, "workers")
    for flag, kind, default, metavar, text in (
        ("--max-sim-time-s", opt.real_number(0, 1e9, "s", above=True), 3600.0, "S",
         "simulated seconds after which the run stops (default 3600)"),
        ("--replicas", opt.whole_number(1, MAX_REPLICAS, "replicas"), 1, "R",
         f"identical replicas behind a router (default 1, at most {MAX_REPLICAS:,})"),
        ("--pipeline-stages", opt.whole_number(1, MAX_STAGES, "stages"), 1, "S",
         "pipeline-parallel stages per replica, at most the model's layers (GPUs per replica = --gpus × S)"),
        ("--prefill-workers", workers, 0, "P", "disaggregated: prefill workers (with --decode-workers)"),
        ("--decode-workers", workers, 0, "D", "disaggregated: decode workers (with --prefill-workers)"),
        ("--prefix-hit-rate", opt.real_number(0, 1, below=True), 0.0, "F",
         "share of each prompt found in the prefix cache, in [0, 1) (default 0)"),
        ("--kv-capacity-tokens", opt.whole_number(1, 10**12, "tokens"), None, "TOKENS",
         "KV cache per replica (default: what the engine leaves beside the weights)"),
    ):  # fmt: skip
        p.add_argument(flag, type=kind, default=default, metavar=metavar, help=text)


def add_load_arguments(p, *, trace: bool = True) -> None:
    """The load (``--rate``, ``--concurrency``, ``--trace``), the lengths and ``--requests``, bounded."""
    load = p.add_mutually_exclusive_group(required=True)
    rate = opt.real_number(0, MAX_RATE_PER_S, "requests/s", above=True)
    load.add_argument("--rate", type=rate, metavar="R", help="Poisson arrivals, requests per second")
    if trace:
        load.add_argument(
            "--concurrency",
            type=opt.whole_number(1, MAX_REQUESTS, "clients"),
            metavar="C",
            help="closed loop: C clients, each sending its next request when the last ends",
        )
        load.add_argument("--trace", metavar="FILE", help="a request trace: JSON or CSV with arrival_s, "
                          "input_tokens, output_tokens (roofline.sim.load_trace)")  # fmt: skip
    p.add_argument("--input", type=opt.CONTEXT, default=None, metavar="I", help="prompt tokens per request")
    p.add_argument("--output", type=opt.TOKENS, default=None, metavar="O", help="output tokens per request")
    p.add_argument("--range-ratio", type=opt.real_number(0, 1, below=True), default=0.0, metavar="R",
                   help="prompt and answer lengths uniform in [L(1 - R), L(1 + R)], as vllm bench serve's "
                   "--random-range-ratio draws them (default 0: exactly --input and --output)")  # fmt: skip
    p.add_argument("--requests", type=opt.whole_number(1, MAX_REQUESTS, "requests"), default=None,
                   metavar="K", help="requests in all (default 1000; a trace: all its rows). The run's time "
                   "grows with the requests and the workers: 10^5 requests on 2,000 workers take about "
                   "a minute on 2 cores; a terminal shows a progress line")  # fmt: skip


def _add_scheduler_arguments(p) -> None:
    """Changes to the engine's scheduler (``roofline.sim.engine_policy``); left out, the engine's own."""
    tokens = opt.whole_number(1, opt.MAX_TOKENS, "tokens")
    p.add_argument("--chunk", type=tokens, default=None, metavar="TOKENS",
                   help="prompt tokens per sequence per step (default: the engine's)")  # fmt: skip
    p.add_argument("--max-batch", type=opt.whole_number(1, opt.MAX_BATCH, "sequences"), default=None,
                   metavar="B", help="sequences per step at most (default: the engine's)")  # fmt: skip
    p.add_argument("--token-budget", type=tokens, default=None, metavar="TOKENS",
                   help="tokens per step at most (default: the engine's)")  # fmt: skip
    p.add_argument("--priority", type=str.lower, default=None, choices=sim.PRIORITIES,
                   help="how prefill and decode share a step (default: the engine's)")  # fmt: skip


def add_slo_arguments(p) -> None:
    """``--slo-ttft-ms`` and ``--slo-tpot-ms``: more than 0; default the course's targets."""
    for name in ("ttft", "tpot"):
        default = f"{name}_target_s of data/assumptions.toml"
        p.add_argument(f"--slo-{name}-ms", type=opt.MILLISECONDS, default=None, metavar="MS",
                       help=f"p99 {name.upper()} target, ms (default: {default})")  # fmt: skip


def slo_targets(args) -> dict:
    """``--slo-ttft-ms`` and ``--slo-tpot-ms`` as ``simulate``'s keywords, in seconds (None: the default)."""
    ms = {"slo_ttft_s": args.slo_ttft_ms, "slo_tpot_s": args.slo_tpot_ms}
    return {k: None if v is None else v / 1000 for k, v in ms.items()}


def workload(args, command: str = "serve") -> dict:
    """The load as ``simulate`` keywords, checked: the lengths given (or a trace), the window, the count."""
    if getattr(args, "trace", None) is not None:
        if args.input is not None or args.output is not None:
            raise opt.usage_error(command, "--input and --output come from the trace: leave them out")
        trace = sim.load_trace(args.trace)
        rows = len(trace["arrival_s"])
        if args.requests is None and rows > MAX_REQUESTS:
            raise opt.usage_error(command, f"the trace has {rows:,} rows; give --requests (at most "
                              f"{MAX_REQUESTS:,}) to simulate its first ones")  # fmt: skip
        n = min(rows, args.requests or rows)
        longest = int(np.max(trace["input_tokens"][:n] + trace["output_tokens"][:n]))
        opt.check_window(args.model, longest, "the trace's longest request (prompt + answer)")
        return {"trace": trace, "requests": n}
    missing = [f"--{k}" for k in ("input", "output") if getattr(args, k) is None]
    if missing:
        raise opt.usage_error(command, f"the following arguments are required: {', '.join(missing)}")
    (low_in, high_in), (low_out, high_out) = (
        length_range(n, args.range_ratio) for n in (args.input, args.output)
    )
    opt.check_window(args.model, high_in + high_out, "the longest request (prompt + answer)")
    ranged = args.range_ratio > 0
    return {
        "rate_per_s": args.rate,
        "concurrency": getattr(args, "concurrency", None),
        "input_tokens": sim.LengthSpec("uniform", low=low_in, high=high_in) if ranged else args.input,
        "output_tokens": sim.LengthSpec("uniform", low=max(1, low_out), high=high_out)
        if ranged
        else args.output,
        "requests": args.requests or 1000,
    }


def length_range(tokens: int, range_ratio: float) -> tuple[int, int]:
    """The lengths (tokens) a benchmark draws around ``tokens`` with ``--random-range-ratio`` R, as vllm bench
    serve does: whole numbers from ⌊L(1 − R)⌋ to ⌈L(1 + R)⌉.

    >>> length_range(1000, 0.2), length_range(1000, 0.0)
    ((800, 1200), (1000, 1000))
    """
    return int(math.floor(tokens * (1 - range_ratio))), int(math.ceil(tokens * (1 + range_ratio)))


def sim_config(args, load: dict, usd: float | None, **options) -> dict:
    """The ``sim.SimConfig`` keywords ``serve`` and ``plan`` share: the ``load`` (``workload``), the seed, the
    GPUs and precisions, the p99 targets and ``usd`` per GPU-hour (none: 0), then ``options``."""
    return dict(
        **load,
        seed=args.seed,
        num_gpus=args.gpus,
        weight_precision=args.weights,
        kv_precision=args.kv,
        **slo_targets(args),
        usd_per_gpu_hour=0.0 if usd is None else usd,
        **options,
    )


def run(args) -> int:
    """Simulate with the engine and with the ideal; print both; exit 1 if the engine's queue grows."""
    opt.check_tensor_parallel(args.model, args.gpus, args.engine)
    opt.check_pipeline(args.model, args.pipeline_stages)
    usd, price = fig.price_of(args.gpu, args.usd_per_hour, args.price)
    scheduler = {"max_batch": args.max_batch, "token_budget": args.token_budget, "chunk_tokens": args.chunk,
                 "priority": args.priority}  # fmt: skip
    common = sim_config(
        args,
        workload(args),
        usd,
        **{k: sim.ENGINE_DEFAULT if v is None else v for k, v in scheduler.items()},  # None: the engine's
        **{k: getattr(args, k) for k in ("max_sim_time_s", *WORKERS)},
        kv_capacity=args.kv_capacity_tokens,
    )
    engine = get_engine(args.engine)
    shown = out.progress_for("serve", args)
    report = (lambda name: None) if shown is None else (lambda name: lambda t, n: shown.simulated(t, n, name))
    try:
        r = sim.simulate(sim.SimConfig(args.model, args.gpu, engine=engine.id, **common), report(engine.id))
        # The floor of the same run: every step at the roofline, the engine's scheduler kept.
        if engine.kind == "ideal":
            ideal = r
        else:
            floor = sim.SimConfig(args.model, args.gpu, engine="ideal", policy=engine.id, **common)
            ideal = sim.simulate(floor, report("the floor"))
    finally:
        if shown is not None:
            shown.done()
    d = result_dict(args, r, ideal, usd, price, common)
    if args.json:
        out.print_json(d)
    else:
        print(_human(d, args, price))
    return out.EXIT_NO if r.unstable else out.EXIT_OK


def result_dict(args, r: sim.SimResult, ideal: sim.SimResult, usd, price, common: dict) -> dict:
    """The JSON object of ``serve`` (SI units); docs/cli.md lists the fields."""
    policy, trace = r.policy, common.get("trace")
    inp = args.input if trace is None else int(np.max(trace["input_tokens"]))  # nominal, or the longest
    outp = args.output if trace is None else int(np.max(trace["output_tokens"]))
    d = {
        "command": "serve",
        **out.picked(r, FIELDS),
        "input_tokens": args.input,
        "output_tokens": args.output,
        "trace": args.trace if trace is not None else None,
        "seed": args.seed,
        "chunk_tokens": policy.chunk_tokens,
        "max_batch": policy.max_sequences,
        "token_budget": policy.token_budget,
        "priority": policy.priority,
        "scheduler": policy.describe(),
        **{k: getattr(args, k) for k in WORKERS},
        "weight_precision": args.weights,
        "kv_precision": args.kv,
        "default_engine": default_engine(get_gpu(args.gpu)),  # what --engine falls back to on this GPU
        **fig.price_fields(price),
        "ideal": out.picked(ideal, IDEAL_FIELDS),
        **fig.coverage_fields(args, args.concurrency, input_tokens=inp, output_tokens=outp),
        "protocol": protocol(r, args.trace)
        if trace is not None
        else protocol(r, lengths=(args.input, args.output, args.range_ratio)),
        "range_ratio": None if trace is not None else args.range_ratio,
        "statistic": STATISTIC,
    }
    if usd is None:  # a GPU with no price (a measured machine): no cost, rather than an invented one
        d["usd_per_gpu_hour"] = d["usd_per_million_output_tokens_at_slo"] = None
        d["ideal"]["usd_per_million_output_tokens_at_slo"] = None
    return out.jsonable(d)


# What every figure of ``serve`` summarises, as the serving benchmarks compute it.
STATISTIC = (
    "over every request sent, none dropped as warm-up: mean, p50, p90, p99; a request's TPOT is (end to end "
    "- TTFT) / (output tokens - 1), as vllm bench serve and SGLang's bench_serving compute it"
)


def protocol(r: sim.SimResult, trace_file: str | None = None, lengths: tuple = ()) -> dict:
    """How the run's requests were sent, named as the benchmark command that sends them so; ``lengths`` is
    (input tokens, output tokens, range ratio) for a load without a trace.

    >>> r = sim.simulate(sim.SimConfig("llama-3-8b", "h100-sxm", concurrency=2, requests=4, input_tokens=8,
    ...                                output_tokens=4))
    >>> sent_by = protocol(r, lengths=(8, 4, 0.0))["as_sent_by"]
    >>> sent_by[:59]
    'vllm bench serve --dataset-name random --random-input-len 8'
    >>> sent_by[-54:]
    '--max-concurrency 2 --num-prompts 4 --request-rate inf'
    """
    dataset = ""
    if lengths:
        inp, outp, ratio = lengths
        dataset = f"--dataset-name random --random-input-len {inp} --random-output-len {outp} "
        dataset += f"--random-range-ratio {ratio:g} " if ratio else ""
    if r.load == "closed":
        return {
            "kind": "closed loop, burst start",
            "clients": r.concurrency,
            "requests": r.requests,
            "start": "every client sends its first request at t = 0, and its next when its answer ends",
            "as_sent_by": f"vllm bench serve {dataset}--max-concurrency {r.concurrency} "
            f"--num-prompts {r.requests} --request-rate inf",
        }
    if r.load == "trace":
        return {"kind": "trace", "requests": r.requests, "file": trace_file,
                "start": "each request at its arrival_s", "as_sent_by": None}  # fmt: skip
    return {
        "kind": "open loop, Poisson arrivals",
        "rate_per_s": r.rate_per_s,
        "requests": r.requests,
        "start": "exponential gaps between arrivals, whatever the server's state",
        "as_sent_by": f"vllm bench serve {dataset}--request-rate {r.rate_per_s:g} --num-prompts {r.requests}",
    }


def _ms3(p: dict) -> str:
    """p50 / p90 / p99 in ms."""
    if p["p50"] is None:
        return "n/a"
    return " / ".join(f"{p[k] * 1e3:,.1f}" for k in ("p50", "p90", "p99")) + " ms"


def _ms(x) -> str:
    return "n/a" if x is None else f"{x * 1e3:,.1f} ms"


def _usd(x) -> str:
    return "nothing meets the SLO" if x is None else f"${x:.3g} per million output tokens"


def _load_text(d: dict) -> str:
    if d["load"] == "closed":
        c = d["concurrency"]
        return f"{c:,} client{'s' if c != 1 else ''} (closed loop)"
    if d["load"] == "trace":
        return f"trace {d['trace']} ({d['requests']:,} requests)"
    return f"Poisson {d['rate_per_s']:g} req/s"


def _human(d: dict, args, price) -> str:
    i, eng = d["ideal"], d["engine"]
    lengths = "" if d["load"] == "trace" else f", {d['input_tokens']:,} in / {d['output_tokens']:,} out"
    lengths += f" (± {d['range_ratio']:.0%})" if d.get("range_ratio") else ""
    rows = [
        ("", eng, "ideal (every step at the floor)"),
        ("TTFT mean", _ms(d["ttft_mean_s"]), _ms(i["ttft_mean_s"])),
        ("TTFT p50/p90/p99", _ms3(d["ttft_s"]), _ms3(i["ttft_s"])),
        ("TPOT mean", _ms(d["tpot_mean_s"]), _ms(i["tpot_mean_s"])),
        ("TPOT p50/p90/p99", _ms3(d["tpot_s"]), _ms3(i["tpot_s"])),
        ("end to end p50/p90/p99", _ms3(d["e2e_s"]), _ms3(i["e2e_s"])),
        ("output tokens/s", f"{d['throughput_output_tokens_per_s']:,.0f}",
         f"{i['throughput_output_tokens_per_s']:,.0f}"),
        ("goodput req/s", f"{d['goodput_requests_per_s']:,.2f}", f"{i['goodput_requests_per_s']:,.2f}"),
        ("sustainable req/s", f"about {d['sustainable_rate_per_s']:,.1f}",
         f"about {i['sustainable_rate_per_s']:,.1f}"),
    ]  # fmt: skip
    if d["usd_per_gpu_hour"] is not None:
        slo_cost = "usd_per_million_output_tokens_at_slo"
        rows.append(("cost at the SLO", _usd(d[slo_cost]), _usd(i[slo_cost])))
    rows += [
        ("requests", f"{d['requests_completed']:,} of {d['requests']:,} completed in "
                     f"{d['duration_s']:,.1f} s"),
        ("SLO", f"TTFT <= {d['slo_ttft_s'] * 1e3:,.0f} ms, TPOT <= {d['slo_tpot_s'] * 1e3:,.0f} ms"),
        ("GPU busy", f"{100 * d['busy_fraction']:.0f}% of the time; {d['preemptions']:,} preemptions"),
        ("scheduler", d["scheduler"]),
        ("load as sent by", d["protocol"]["as_sent_by"] or "the trace's arrival times"),
        ("price", "no price for this GPU: give --usd-per-hour" if d["usd_per_gpu_hour"] is None
         else out.price_text(d["usd_per_gpu_hour"], price, d["num_gpus_total"])),
        *out.extrapolation_rows(d),
    ]  # fmt: skip
    head = (
        f"serve: {d['model_id']} on {d['num_gpus_total']:,} × {d['gpu_id']}, {_load_text(d)}{lengths}, "
        f"weights {out.weights_text(d['weight_precision'], args.weights_defaulted)}, seed {d['seed']}"
    )
    lines = [head, out.rows_text(rows)]
    if d["message"]:
        lines.append(("warning: " if d["unstable"] else "note: ") + d["message"])
    return "\n".join(lines)
