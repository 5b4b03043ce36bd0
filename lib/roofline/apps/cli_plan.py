"""``roofline plan``: how many GPUs serve a request rate within TTFT and TPOT targets, and what they cost.

Taught in notebooks/slos_and_capacity.ipynb; the search is ``roofline.sim.plan_capacity`` (replicas 1, 2,
3, … of one deployment, each run through the serving simulator, until p99 TTFT and p99 TPOT meet the
targets). The answer uses a real engine's step times and scheduler (``--engine``, default ``vllm``); the
same search with every step at the roofline floor is shown beside it (the fewest GPUs physics allows).
Each GPU is priced with its own price unless ``--usd-per-hour`` or ``--price`` says otherwise. docs/cli.md
lists every JSON field.

    roofline plan --model M --gpu G [--gpus N] --rate R --input I --output O [--slo-ttft-ms MS]
                  [--slo-tpot-ms MS] [--requests K] [--max-replicas R] [--engine E] [--json]

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

from roofline import sim
from roofline.apps import cli_support as support
from roofline.apps.cli_serve import add_load_arguments, add_slo_arguments
from roofline.engines import DEFAULT_ENGINE, get_engine

EXIT_OK = 0


def add_parser(subparsers) -> None:
    """Register ``plan`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "plan",
        help="capacity: the fewest GPUs that serve a rate within p99 TTFT and TPOT targets, priced",
        description="Replicas of one deployment, tried in turn through the serving simulator "
        "(roofline.sim.plan_capacity), until p99 TTFT and p99 TPOT meet the targets.",
    )
    support.add_common_arguments(p)
    add_load_arguments(p, trace=False)
    add_slo_arguments(p)
    p.add_argument(
        "--max-replicas",
        type=support.whole_number(1, support.MAX_REPLICAS, "replicas"),
        default=64,
        metavar="R",
        help="give up beyond this many replicas (default 64)",
    )
    p.add_argument(
        "--seed", type=support.whole_number(0, 2**63 - 1), default=0, help="random seed (default 0)"
    )
    support.add_engine_argument(p, "the step times and the scheduler")
    support.add_price_arguments(p)


def error_band(engine_id: str) -> dict:
    """The simulator's measured error for ``engine_id`` against real servers
    (``roofline.sim.validation.error_band``): ``validated``, and the median and p90 absolute errors of TTFT
    and TPOT over ``rows`` measured rows, or a ``note`` saying why there is none."""
    from roofline.sim import validation

    return support.jsonable(dict(validation.error_band(engine_id)))


def band_text(band: dict) -> str:
    """The error band in words: "TTFT ± 25 % (p90 ± 60 %), TPOT ± 12 % (p90 ± 30 %) on 40 measured rows"."""
    if not band["validated"]:
        return f"not validated: {band.get('note', '')}"
    from roofline.sim.validation import band_value

    def one(name: str) -> str:
        median, p90 = band[f"{name}_median_abs_error"], band[f"{name}_p90_abs_error"]
        return f"{name.upper()} {band_value(median)} (p90 {band_value(p90)})"

    rows = f"{band['rows']:,} measured rows of {band['engine']}"
    return f"{one('ttft')}, {one('tpot')}: the simulator against {rows}"


def _plan(args, engine: str, policy, usd: float, workload: dict):
    return sim.plan_capacity(
        args.model,
        args.gpu,
        args.rate,
        input_tokens=workload["input_tokens"],
        output_tokens=workload["output_tokens"],
        slo_ttft_s=_s(args.slo_ttft_ms),
        slo_tpot_s=_s(args.slo_tpot_ms),
        requests=workload["requests"],
        max_replicas=args.max_replicas,
        seed=args.seed,
        engine=engine,
        policy=policy,
        num_gpus=args.gpus,
        weight_precision=args.weights,
        kv_precision=args.kv,
        usd_per_gpu_hour=usd,
    )


def _s(ms):
    return None if ms is None else ms / 1000


def run(args) -> int:
    """Plan with the engine and with the ideal; print both."""
    from roofline.apps.cli_serve import workload

    support.check_tensor_parallel(args.model, args.gpus, args.engine)
    load = workload(args, "plan")
    usd, price = support.price_of(args.gpu, args.usd_per_hour, args.price)
    engine = get_engine(args.engine)
    p = _plan(args, engine.id, None, 0.0 if usd is None else usd, load)
    try:  # the floor: the same search with every step at the roofline, the engine's scheduler kept
        ideal = (
            p
            if engine.kind == "ideal"
            else _plan(args, "ideal", engine.id, 0.0 if usd is None else usd, load)
        )
    except support.rl.InvalidConfigurationError:  # cannot happen when the engine's plan succeeded; be safe
        ideal = None
    d = result_dict(args, p, ideal, usd, price, load)
    if args.json:
        support.print_json(d)
    else:
        print(_human(d, args))
    return EXIT_OK


def _plan_dict(p, usd) -> dict:
    return {
        "replicas": p.replicas,
        "num_gpus_total": p.num_gpus_total,
        "meets_slo": p.meets_slo,
        "p99_ttft_s": p.p99_ttft_s,
        "p99_tpot_s": p.p99_tpot_s,
        "usd_per_hour": None if usd is None else p.usd_per_hour,
        "usd_per_million_output_tokens": None if usd is None else p.usd_per_million_output_tokens,
    }


def result_dict(args, p, ideal, usd, price, load: dict) -> dict:
    """The JSON object of ``plan`` (SI units); docs/cli.md lists the fields."""
    from roofline.assumptions import assumption

    m = support.rl.get_model(args.model)
    cap = sim.kv_capacity_tokens(m, args.gpu, args.gpus, args.weights, args.kv)
    policy = sim.engine_policy(
        args.engine, args.gpu, kv_capacity_tokens=cap, context_tokens=m.max_context_tokens
    )
    return support.jsonable(
        {
            "command": "plan",
            "model_id": support.rl.get_model(args.model).id,
            "gpu_id": support.rl.get_gpu(args.gpu).id,
            "engine": get_engine(args.engine).id,
            "default_engine": DEFAULT_ENGINE,
            "num_gpus": args.gpus,
            "weight_precision": args.weights,
            "kv_precision": args.kv,
            "rate_per_s": args.rate,
            "input_tokens": load["input_tokens"],
            "output_tokens": load["output_tokens"],
            "requests": load["requests"],
            "seed": args.seed,
            "slo_ttft_s": assumption("ttft_target_s")
            if args.slo_ttft_ms is None
            else args.slo_ttft_ms / 1000,
            "slo_tpot_s": assumption("tpot_target_s")
            if args.slo_tpot_ms is None
            else args.slo_tpot_ms / 1000,
            "scheduler": policy.describe(),
            **_plan_dict(p, usd),
            "usd_per_gpu_hour": usd,
            "price_id": price.id if price else None,
            "price_kind": price.kind if price else None,
            "tried": [
                {"replicas": k, "p99_ttft_s": t, "p99_tpot_s": o, "meets_slo": ok} for k, t, o, ok in p.tried
            ],
            "ideal": None if ideal is None else _plan_dict(ideal, usd),
            "error_band": error_band(get_engine(args.engine).id),
            **support.coverage_fields(
                args.engine,
                args.model,
                args.gpu,
                None,
                args.gpus,
                args.weights,
                input_tokens=load["input_tokens"],
                output_tokens=load["output_tokens"],
            ),
        }
    )


def _ms(x) -> str:
    return "n/a" if x is None else f"{x * 1e3:,.1f} ms"


def _gpus(x: dict) -> str:
    n, r = x["num_gpus_total"], x["replicas"]
    return f"{n:,} GPU{'s' if n != 1 else ''} ({r:,} replica{'s' if r != 1 else ''})"


def _cost(x: dict) -> str:
    if x["usd_per_hour"] is None:
        return "no price for this GPU: give --usd-per-hour"
    per_million = x["usd_per_million_output_tokens"]
    return f"${x['usd_per_hour']:,.2f} an hour, ${per_million:.3g} per million output tokens"


def _human(d: dict, args) -> str:
    head = (
        f"plan: {d['model_id']} on {d['gpu_id']} ({d['num_gpus']:,} per replica), "
        f"Poisson {d['rate_per_s']:g} req/s, "
        f"{d['input_tokens']:,} in / {d['output_tokens']:,} out, weights "
        f"{support.weights_text(d['weight_precision'], support.weights_defaulted(args))}; "
        "targets p99 TTFT <= "
        f"{_ms(d['slo_ttft_s'])}, p99 TPOT <= {_ms(d['slo_tpot_s'])}"
    )
    band = d["error_band"]
    rows = [
        (f"{d['engine']}", f"{_gpus(d)}: p99 TTFT {_ms(d['p99_ttft_s'])}, p99 TPOT {_ms(d['p99_tpot_s'])}"),
        ("  cost", _cost(d)),
        ("  error band", band_text(band)),
    ]
    if d["ideal"] is not None:
        i = d["ideal"]
        rows += [
            (
                "ideal",
                f"{_gpus(i)}: p99 TTFT {_ms(i['p99_ttft_s'])}, p99 TPOT {_ms(i['p99_tpot_s'])} "
                "(every step at the floor: no engine needs fewer)",
            ),
            ("  cost", _cost(i)),
        ]
    tried = ", ".join(f"{t['replicas']} ({'meets' if t['meets_slo'] else 'misses'})" for t in d["tried"])
    price = "" if d["usd_per_gpu_hour"] is None else support.price_text(d["usd_per_gpu_hour"], _row(d), 1)
    rows += [("tried", f"replicas {tried}"), ("scheduler", d["scheduler"])]
    if price:
        rows.append(("price", price))
    rows += support.extrapolation_rows(d)
    width = max(len(a) for a, _ in rows)
    return "\n".join([head, *(f"  {a:<{width}}  {b}" for a, b in rows)])


def _row(d: dict):
    return support.rl.get_price(d["price_id"]) if d["price_id"] else None
