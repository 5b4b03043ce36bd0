"""``roofline cost``: dollars per million output tokens, of a modelled step (ideal and the engine's) or of
a throughput given directly, at the GPU's own price unless one is given.

>>> import io, json, contextlib
>>> from roofline.apps.cli import main
>>> buf = io.StringIO()
>>> with contextlib.redirect_stdout(buf):
...     code = main(["cost", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "64", "--context",
...                  "4096", "--usd-per-hour", "3", "--engine", "ideal", "--json"])
>>> code, round(json.loads(buf.getvalue())["usd_per_million_tokens"], 2)      # the card's $0.19
(0, 0.19)
"""

from __future__ import annotations

import sys

import roofline as rl
from roofline.apps import cli_figures as fig
from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.units import SECONDS_PER_HOUR


def add_parser(sub) -> None:
    """The ``cost`` subcommand and its options."""
    p = sub.add_parser("cost", help="dollars per million output tokens, ideal and achievable")
    opt.add_common_arguments(p, required=False, kv_default=None)
    p.add_argument("--batch", type=opt.BATCH, default=None, help="users decoding together (default 1)")
    p.add_argument("--context", type=opt.CONTEXT, default=None,
                   help="tokens of KV each user holds (default 0)")  # fmt: skip
    p.add_argument("--tokens-per-s", type=opt.real_number(0, 1e12, "tokens/s", above=True), default=None,
                   metavar="RATE",
                   help="a throughput to price directly (all GPUs together), instead of a model")  # fmt: skip
    opt.add_price_arguments(p)
    opt.add_engine_argument(p)
    p.set_defaults(parser=p)  # reports options that do not go together


def run(args) -> int:
    """Run ``cost`` from parsed ``args``; return the exit code."""
    if args.tokens_per_s is not None:
        usd_per_gpu_hour, price = _throughput_price(args)
        d, step, tps = {"command": "cost", "mode": "throughput"}, None, args.tokens_per_s
    else:
        gpu = args.gpu or (rl.get_price(args.price).gpu if args.price else None)
        if not args.model or not gpu:
            args.parser.error("give --tokens-per-s, or --model and --gpu (the GPU may come from --price)")
        args.kv = args.kv or "bf16"
        usd_per_gpu_hour, price = fig.price_of(gpu, args.usd_per_hour, args.price)
        if usd_per_gpu_hour is None:
            args.parser.error(
                f"GPU {rl.get_gpu(gpu).id} has no price in data/prices.toml: give --usd-per-hour"
            )
        if price and rl.get_gpu(gpu).id != price.gpu:
            print(
                f"warning: price {price.id!r} is for {price.gpu}, not {rl.get_gpu(gpu).id}", file=sys.stderr
            )
        batch, context = args.batch or 1, args.context or 0
        try:
            step = fig.ideal_step(args, batch, context, gpu=gpu)
            real = fig.achievable_decode(args, batch, context, gpu=gpu)
        except rl.DoesNotFitError:
            return fig.does_not_fit(args, "cost", batch, context, gpu=gpu, why=": no throughput to price")
        real["usd_per_million_tokens"] = rl.cost_per_million_tokens_usd(
            usd_per_gpu_hour, real["tokens_per_s_total"], args.gpus
        )
        d = {
            "command": "cost",
            "mode": "model",
            "model_id": step.model_id,
            "gpu_id": step.gpu_id,
            "weight_precision": args.weights,
            "kv_precision": args.kv,
            "batch": batch,
            "context_tokens": context,
            "step_time_s": step.step_time_s,
            "binding": step.binding,
            "tokens_per_s_per_user": step.tokens_per_s_per_user,
            "achievable": real,
        }
        tps = step.tokens_per_s_total
    d.update(
        num_gpus=args.gpus,
        usd_per_gpu_hour=usd_per_gpu_hour,
        **fig.price_fields(price),
        tokens_per_s_total=tps,
        tokens_per_hour=rl.tokens_per_hour(tps),
        seconds_per_million_tokens=rl.seconds_per_million_tokens(tps),
        usd_per_million_tokens=rl.cost_per_million_tokens_usd(usd_per_gpu_hour, tps, args.gpus),
    )
    if args.json:
        out.print_json(d)
    else:
        _print_cost(args, d, step, price)
    return out.EXIT_OK


def _throughput_price(args):
    """Throughput mode: the price given (a throughput has no model or GPU to take one from)."""
    model_args = [("--model", args.model), ("--gpu", args.gpu), ("--batch", args.batch),
                  ("--context", args.context), ("--weights", args.weights), ("--kv", args.kv)]  # fmt: skip
    given = [flag for flag, v in model_args if v is not None]
    if given:
        args.parser.error(
            f"--tokens-per-s does not go with {', '.join(given)}: give either a throughput "
            "or a model and GPU to model one"
        )
    if args.usd_per_hour is None and args.price is None:
        args.parser.error("a throughput has no GPU to take a price from: give --usd-per-hour or --price")
    return fig.price_of(None, args.usd_per_hour, args.price)


def _print_cost(args, d: dict, step, price) -> None:
    tps, num_gpus, usd = d["tokens_per_s_total"], d["num_gpus"], d["usd_per_million_tokens"]
    if step is None:
        print(f"cost: {out.fmt_count(tps)} tokens/s on {num_gpus} GPU{'s' if num_gpus > 1 else ''}")
        rows = [("throughput", f"{out.fmt_count(tps)} tokens/s total")]
    else:
        real = d["achievable"]
        print(
            f"cost: {step.model_id} on {num_gpus} × {step.gpu_id}, batch {d['batch']}, context "
            f"{d['context_tokens']:,} tokens, "
            f"{out.precisions_text(args.weights, args.kv, args.weights_defaulted)}"
        )
        rows = [
            ("step time", f"{out.fmt_seconds(step.step_time_s)} ({step.binding}-bound) ideal; "
                          f"{out.fmt_seconds(real['step_time_s'])} {real['engine']}"),
            ("throughput", f"{out.fmt_count(tps)} tokens/s total "
                           f"({out.fmt_count(step.tokens_per_s_per_user)} per user) ideal; "
                           f"{out.fmt_count(real['tokens_per_s_total'])} {real['engine']}"),
        ]  # fmt: skip
    spm = d["seconds_per_million_tokens"]
    rows += [
        ("price", out.price_text(d["usd_per_gpu_hour"], price, num_gpus)),
        ("tokens per hour", out.fmt_count(d["tokens_per_hour"])),
        ("1M tokens take", f"{out.fmt_count(spm)} s ({spm / SECONDS_PER_HOUR:.3g} h)"),
    ]
    if step is None:
        rows.append(("cost", f"{out.fmt_usd(usd)} per million output tokens"))
    else:
        rows += [
            ("cost (ideal)",
             f"{out.fmt_usd(usd)} per million output tokens (the floor: no engine is cheaper)"),
            (f"cost ({real['engine']})", f"{out.fmt_usd(real['usd_per_million_tokens'])} per million output "
                                         "tokens (achievable, calibrated on published runs)"),
            *out.extrapolation_rows(real),
        ]  # fmt: skip
    print(out.rows_text(rows))
