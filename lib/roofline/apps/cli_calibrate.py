"""``roofline calibrate``: a few of your measurements become an engine you can name everywhere.

Taught in notebooks/floor_to_real_server.ipynb. Each ``--point`` is one measurement of the model on the GPU
(``--model``, ``--gpu``, ``--gpus``, ``--weights``, ``--kv`` as every command takes them):

    tpot=MS[,batch=B][,context=T]      the time between tokens of B users each holding T tokens of KV
    ttft=MS[,batch=B][,prompt=P]       the time to first token of B prompts of P tokens, alone
    latency=MS,batch=B,prompt=P,output=O   a whole static batch

The fit starts from ``--base``'s costs and kernels (``roofline.calibration.calibrate``); unless
``--dry-run`` the engine is saved in your own tables, and ``--engine NAME`` works in every command and
explorer. A measurement below the floor, or two of one configuration more than 2x apart, is refused.
"""

from __future__ import annotations

import math

from roofline import engines
from roofline.apps import cli_from_file as from_file
from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.calibration import calibrate
from roofline.measure import benchmark_diagnosis as bd

KEYS = {"batch": "batch", "context": "input_tokens", "prompt": "input_tokens", "output": "output_tokens"}


def add_parser(subparsers) -> None:
    """Register ``calibrate`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "calibrate",
        help="fit an engine of your own to a few of your measurements, saved under a name",
        description="Fit your engine's per-step, per-layer and per-sequence costs to your measurements; "
        "the kernels keep their measured efficiencies.",
    )
    opt.add_common_arguments(p, required=False)
    p.add_argument("--name", type=opt.lower, required=True, help="your engine's id (e.g. my-vllm)")
    p.add_argument("--base", default=None, metavar="ENGINE",
                   help="the engine you measured (default vllm; with --from, its tool's engine)")  # fmt: skip
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--point",
        action="append",
        metavar="KIND=MS[,key=value]",
        help="one measurement: tpot=MS (with batch=, context=), ttft=MS (batch=, prompt=) or latency=MS "
        "(batch=, prompt=, output=); repeat for several",
    )
    from_file.add_from_arguments(p, source)
    p.add_argument("--dry-run", action="store_true", help="fit and show, but save nothing")


def parse_point(text: str, args) -> calibrate.Point:
    """One ``--point`` as a ``Point`` (times in ms on the command line, seconds inside).

    >>> import argparse
    >>> a = argparse.Namespace(model="llama-3-8b", gpu="h100-sxm", gpus=1, weights="bf16", kv="bf16")
    >>> p = parse_point("tpot=6.4,batch=4,context=1000", a)
    >>> p.kind, p.measured_s, p.batch, p.input_tokens
    ('tpot', 0.0064, 4, 1000)
    """
    kind, fields = None, {}
    for part in filter(None, (x.strip() for x in text.split(","))):
        key, _, value = part.partition("=")
        key = key.strip().lower()
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise opt.usage_error("calibrate", f"--point {text!r}: {key}={value!r} is not a finite number")
        if key in calibrate.KINDS and kind is None:
            kind, fields["measured_s"] = key, number / 1000
        elif key in KEYS and number == int(number) and number >= (0 if key == "context" else 1):
            fields[KEYS[key]] = int(number)
        else:
            raise opt.usage_error(
                "calibrate",
                f"--point {text!r}: unknown or bad part {part!r} (kinds: tpot, ttft, latency in "
                "ms; then batch=, context=, prompt=, output= as whole numbers)",
            )
    if kind is None:
        raise opt.usage_error("calibrate", f"--point {text!r}: give one of tpot=MS, ttft=MS, latency=MS")
    if kind == "tpot":
        fields.setdefault("output_tokens", 1)
    return calibrate.Point(
        model=args.model,
        gpu=args.gpu,
        kind=kind,
        num_gpus=args.gpus,
        weight_precision=args.weights,
        kv_precision=args.kv,
        **fields,
    )


def file_points(runs: list, args) -> list[calibrate.Point]:
    """``--from``: each run's measurements as points on the user's deployment. A TTFT measured under load
    is left out (it holds other prompts' prefill and the wait for them, not one prefill)."""
    points = []
    for run in runs:
        timer = bd.deployment(run, **from_file.deployment_options(args, args.base))
        for m in bd.measurements(run):
            if m.kind == "ttft" and not m.alone:
                continue
            lengths = ({"input_tokens": m.context_tokens, "output_tokens": 1} if m.kind == "tpot" else
                       {"input_tokens": m.prompt_tokens, "output_tokens": m.output_tokens})  # fmt: skip
            points.append(calibrate.Point(model=timer.model.id, gpu=timer.gpu.id, kind=m.kind,
                                          num_gpus=timer.num_gpus, weight_precision=timer.weight_precision,
                                          kv_precision=timer.kv_precision, measured_s=m.measured_s,
                                          batch=m.batch, **lengths))  # fmt: skip
    return points


def run(args) -> int:
    """Fit, report, and save unless ``--dry-run``."""
    if args.from_file:
        runs = from_file.read_runs(args)
        args.base = args.base or bd.tool_engine(runs[0], bd.gpu_of(runs[0], args.gpu))
        points = file_points(runs, args)
    else:
        opt.require_model_and_gpu(args, "calibrate")
        points = [parse_point(t, args) for t in args.point]
    base = engines.get_engine(args.base or "vllm")
    cal = calibrate.fit_points(points, args.name, base.id)
    costs = cal.overheads[args.name]
    saved = [] if args.dry_run else calibrate.save(cal, args.name, base.id, points)
    weak = cal.provenance.get("prior_dominated", [])
    if args.json:
        base_costs = engines.load_calibration().overheads_for(base.id)[0] if args.dry_run else None
        out.print_json({"command": "calibrate", "engine": args.name, "base": base.id, "points": len(points),
                        "costs_s": costs, "base_costs_s": base_costs, "prior_dominated": weak,
                        "saved": saved})  # fmt: skip
        return out.EXIT_OK
    rows = [(name.replace("_s", "").replace("_", " "), out.fmt_seconds(s)) for name, s in costs.items()]
    print(f"calibrate: {args.name}, on {base.name}'s kernels, from {len(points)} measurement(s)")
    print(out.rows_text(rows))
    if weak:
        print(
            f"kept near {base.id}'s values (your points do not pin them): "
            + ", ".join(w.split(".")[-1] for w in weak)
        )
    print("saved: " + ", ".join(saved) if saved else "not saved (--dry-run)")
    return out.EXIT_OK
