"""``roofline plan``: how many GPUs serve a request rate within TTFT and TPOT targets, and what they cost.

Taught in notebooks/slos_and_capacity.ipynb. ``roofline.sim.plan_capacity`` tries replicas 1, 2, 3, … of one
deployment through the serving simulator until p99 TTFT and p99 TPOT meet the targets, with the engine's
step times and scheduler, and again with every step at the floor (the fewest GPUs physics allows); each GPU
priced as ``roofline serve`` prices it. docs/cli.md lists every JSON field.

>>> import contextlib, io, json
>>> from roofline.apps.cli import main
>>> buf = io.StringIO()
>>> with contextlib.redirect_stdout(buf):
...     code = main(["plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--rate", "2", "--input", "256",
...                  "--output", "32", "--requests", "50", "--json"])
>>> d = json.loads(buf.getvalue())
>>> code, d["replicas"] >= d["ideal"]["replicas"] >= 1, d["usd_per_gpu_hour"]
(0, True, 3.0)
"""

from __future__ import annotations

import roofline as rl
from roofline import sim
from roofline.apps import cli_figures as fig
from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.apps import cli_serve as serve
from roofline.assumptions import assumption
from roofline.engines import get_engine
from roofline.sim import validation

# The targets a plan meets when --slo-ttft-ms or --slo-tpot-ms is left out (data/assumptions.toml).
DEFAULT_TARGETS = {"slo_ttft_s": "ttft_target_s", "slo_tpot_s": "tpot_target_s"}


def add_parser(subparsers) -> None:
    """Register ``plan`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "plan",
        help="capacity: the fewest GPUs that serve a rate within p99 TTFT and TPOT targets, priced",
        description="Replicas of one deployment, tried in turn through the serving simulator "
        "(roofline.sim.plan_capacity), until p99 TTFT and p99 TPOT meet the targets.",
    )
    opt.add_common_arguments(p)
    serve.add_load_arguments(p, trace=False)
    serve.add_slo_arguments(p)
    replicas = opt.whole_number(1, serve.MAX_REPLICAS, "replicas")
    p.add_argument("--max-replicas", type=replicas, default=64, metavar="R",
                   help="give up beyond this many replicas (default 64). Each count tried is one simulation "
                   "of every request: with 10^6 requests and hundreds of replicas a plan runs for many "
                   "minutes; a terminal shows a progress line")  # fmt: skip
    p.add_argument("--seed", type=serve.SEED, default=0, help="random seed (default 0)")
    opt.add_engine_argument(p, "the step times and the scheduler")
    opt.add_price_arguments(p)


def run(args) -> int:
    """Plan with the engine and with the ideal; print both."""
    opt.check_tensor_parallel(args.model, args.gpus, args.engine)
    load = serve.workload(args, "plan")
    usd, price = fig.price_of(args.gpu, args.usd_per_hour, args.price)
    config = serve.sim_config(args, load, usd)
    engine = get_engine(args.engine)
    shown = out.progress_for("plan", args)
    try:
        p = _plan(args, config, engine.id, shown=shown)
        try:  # the floor: the same search with every step at the roofline, the engine's scheduler kept
            ideal = p if engine.kind == "ideal" else _plan(args, config, "ideal", engine.id, shown)
        except rl.InvalidConfigurationError:  # even max_replicas miss within the floor's error band
            ideal = None
    finally:
        if shown is not None:
            shown.done()
    d = result_dict(args, p, ideal, usd, price, load)
    if args.json:
        out.print_json(d)
    else:
        print(_human(d, args, price))
    return out.EXIT_OK


def _plan(args, config: dict, engine: str, policy: str | None = None, shown=None) -> sim.CapacityPlan:
    config = sim.SimConfig(args.model, args.gpu, engine=engine, policy=policy, **config)
    what = "the floor" if engine == "ideal" and policy else engine
    report = None if shown is None else (lambda k, t, n: shown.simulated(t, n, f"{what}, {k} replica(s)"))
    return sim.plan_capacity(config, max_replicas=args.max_replicas, progress=report)


def _plan_dict(p: sim.CapacityPlan, usd: float | None) -> dict:
    fields = ("replicas", "num_gpus_total", "meets_slo", "p99_ttft_s", "p99_tpot_s", "usd_per_hour",
              "usd_per_million_output_tokens")  # fmt: skip
    d = out.picked(p, fields)
    return d if usd is not None else {**d, "usd_per_hour": None, "usd_per_million_output_tokens": None}


def result_dict(args, p, ideal, usd, price, load: dict) -> dict:
    """The JSON object of ``plan`` (SI units); docs/cli.md lists the fields."""
    m = rl.get_model(args.model)
    cap = sim.kv_capacity_tokens(
        m, args.gpu, args.gpus, args.weights, args.kv, get_engine(args.engine).memory
    )
    policy = sim.engine_policy(
        args.engine, args.gpu, kv_capacity_tokens=cap, context_tokens=m.max_context_tokens
    )
    targets = {
        k: assumption(DEFAULT_TARGETS[k]) if v is None else v for k, v in serve.slo_targets(args).items()
    }
    # the nominal lengths (a --range-ratio draws them around these)
    lengths = {"input_tokens": args.input, "output_tokens": args.output}
    return out.jsonable({
        "command": "plan",
        **fig.setup_fields(args),
        "rate_per_s": args.rate,
        **lengths,
        "range_ratio": args.range_ratio,
        "requests": load["requests"],
        "seed": args.seed,
        **targets,
        "scheduler": policy.describe(),
        **_plan_dict(p, usd),
        "usd_per_gpu_hour": usd,
        **fig.price_fields(price),
        "tried": [{"replicas": k, "p99_ttft_s": t, "p99_tpot_s": o, "meets_slo": ok}
                  for k, t, o, ok in p.tried],
        "ideal": None if ideal is None else _plan_dict(ideal, usd),
        "error_band": dict(validation.error_band(get_engine(args.engine).id)),
        **fig.coverage_fields(args, None, **lengths),
    })  # fmt: skip


def _band_text(band: dict) -> str:
    """The simulator's measured error in words: "TTFT ± 25 % (p90 ± 60 %), TPOT ± 12 % (p90 ± 30 %), request
    latency ± 10 % (p90 ± 25 %): the simulator against 40 measured rows of vllm"."""
    if not band["validated"]:
        return f"not validated: {band.get('note', '')}"

    def one(name: str, label: str) -> str:
        median, p90 = band[f"{name}_median_abs_error"], band[f"{name}_p90_abs_error"]
        return f"{label} {validation.band_value(median)} (p90 {validation.band_value(p90)})"

    rows = f"{band['rows']:,} measured rows of {band['engine']}"
    errors = ", ".join(one(*x) for x in (("ttft", "TTFT"), ("tpot", "TPOT"), ("request", "request latency")))
    return f"{errors}: the simulator against {rows}"


def _ms(x) -> str:
    return "n/a" if x is None else f"{x * 1e3:,.1f} ms"


def _gpus(x: dict) -> str:
    n, r = x["num_gpus_total"], x["replicas"]
    times = f"{n:,} GPU{'s' if n != 1 else ''} ({r:,} replica{'s' if r != 1 else ''})"
    return f"{times}: p99 TTFT {_ms(x['p99_ttft_s'])}, p99 TPOT {_ms(x['p99_tpot_s'])}"


def _cost(x: dict) -> str:
    if x["usd_per_hour"] is None:
        return "no price for this GPU: give --usd-per-hour"
    per_million = x["usd_per_million_output_tokens"]
    return f"${x['usd_per_hour']:,.2f} an hour, ${per_million:.3g} per million output tokens"


def _human(d: dict, args, price) -> str:
    spread = f" (± {d['range_ratio']:.0%})" if d["range_ratio"] else ""
    head = (
        f"plan: {d['model_id']} on {d['gpu_id']} ({d['num_gpus']:,} per replica), "
        f"Poisson {d['rate_per_s']:g} req/s, {d['input_tokens']:,} in / {d['output_tokens']:,} out"
        f"{spread}, weights "
        f"{out.weights_text(d['weight_precision'], args.weights_defaulted)}; targets p99 TTFT <= "
        f"{_ms(d['slo_ttft_s'])}, p99 TPOT <= {_ms(d['slo_tpot_s'])}"
    )
    rows = [(d["engine"], _gpus(d)), ("  cost", _cost(d)), ("  error band", _band_text(d["error_band"]))]
    if d["ideal"] is not None:
        floor = " (every step at the floor: no engine needs fewer)"
        rows += [("ideal", _gpus(d["ideal"]) + floor), ("  cost", _cost(d["ideal"]))]
    tried = ", ".join(f"{t['replicas']} ({'meets' if t['meets_slo'] else 'misses'})" for t in d["tried"])
    rows += [("tried", f"replicas {tried}"), ("scheduler", d["scheduler"])]
    if d["usd_per_gpu_hour"] is not None:
        rows.append(("price", out.price_text(d["usd_per_gpu_hour"], price, 1)))
    return "\n".join([head, out.rows_text(rows + out.extrapolation_rows(d))])
