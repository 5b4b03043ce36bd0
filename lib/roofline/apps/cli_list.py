"""``roofline list gpus|models|prices|engines``: the data tables, with the figures derived from them
(ridge points, parameter counts, bytes, each GPU's default price).

>>> from roofline.apps.cli import main
>>> main(["list", "engines", "--json"]) == 0      # doctest: +ELLIPSIS
{...
True
"""

from __future__ import annotations

from dataclasses import asdict

import roofline as rl
from roofline.apps import cli_figures as fig
from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.engines import engine_ids, get_engine
from roofline.units import GB, TB, TFLOPS, KiB


def add_parser(sub) -> None:
    """The ``list`` subcommand and its options."""
    p = sub.add_parser("list", help="the GPU, model and price tables")
    p.add_argument("what", choices=["gpus", "models", "prices", "engines"])
    p.add_argument("--precision", type=opt.lower, default="bf16", help="precision for the peak/ridge "
                   "(gpus) or bytes (models) columns (default bf16)")  # fmt: skip
    opt.add_json_argument(p)


def run(args) -> int:
    """Run ``list`` from parsed ``args``; return the exit code."""
    rl.get_precision(args.precision)
    tables = {"gpus": _gpus, "models": _models, "prices": _prices, "engines": _engines}
    items, headers, rows, right, note = tables[args.what](args.precision)
    if args.json:
        precision = {"precision": args.precision} if args.what == "models" else {}
        out.print_json({"command": "list", "what": args.what, **precision, "items": items})
    else:
        print(out.table(headers, rows, right))
        print(note)
    return out.EXIT_OK


def _gpus(prec: str):
    """`roofline list gpus`: each GPU with its ridge points and default price."""
    items, rows = [], []
    for g in rl.gpus().values():
        usd, row = fig.price_of(g)
        ridges = {k: rl.ridge_point_flop_per_byte(v, g.memory_bandwidth_bytes_per_s)
                  for k, v in g.dense_flops_per_s.items()}  # fmt: skip
        items.append({**asdict(g), "ridge_point_flop_per_byte": ridges, "usd_per_gpu_hour": usd,
                      **fig.price_fields(row)})  # fmt: skip
        try:
            peak = rl.peak_flops_per_s(g, prec)
            ridge = rl.ridge_point_flop_per_byte(peak, g.memory_bandwidth_bytes_per_s)
        except rl.UnsupportedPrecisionError:
            peak = ridge = None
        rows.append([
            g.id,
            out.fmt_capacity(g),  # as the data sheet prints it (80 GiB of HBM), and in decimal bytes
            f"{g.memory_bandwidth_bytes_per_s / TB:g}",
            "-" if peak is None else f"{peak / TFLOPS:g}",
            "-" if ridge is None else f"{ridge:.0f}",
            f"{g.interconnect_bytes_per_s / GB:g}",
            f"{g.power_w:g}",
            "-" if usd is None else f"{usd:.2f}" + (" own" if row.kind == "own" else ""),
            g.source,
        ])  # fmt: skip
    headers = ["id", "memory", "bandwidth TB/s", f"{prec} TFLOPS", "ridge FLOP/byte", "link GB/s",
               "power W", "$/GPU-hour", "source"]  # fmt: skip
    note = (
        f"(dense peaks; ridge point = {prec} peak ÷ memory bandwidth, computed; memory as the data sheet "
        "prints it, binary-sized for HBM and GDDR (80 GB = 80 GiB), with decimal GB in brackets; "
        "$/GPU-hour: the GPU's default price, a listed rental or, marked own, purchase and power spread "
        "over its life: `roofline list prices`)"
    )
    return items, headers, rows, {1, 2, 3, 4, 5, 6, 7}, note


def _models(prec: str):
    """`roofline list models`: each model with its derived parameter counts and bytes."""
    items = [
        {**asdict(m), "parameter_count": rl.parameter_count(m),
         "active_parameter_count": rl.active_parameter_count(m), "weight_bytes": rl.weight_bytes(m, prec),
         "kv_bytes_per_token": rl.kv_bytes_per_token(m, prec)}
        for m in rl.models().values()
    ]  # fmt: skip
    published = ["—" if i["published_parameters"] is None else f"{i['published_parameters'] / 1e9:.2f}"
                 for i in items]  # fmt: skip
    rows = [
        [i["id"], f"{i['parameter_count'] / 1e9:.2f}", f"{i['active_parameter_count'] / 1e9:.2f}", p,
         str(i["layers"]), f"{i['attention_heads']}/{i['kv_heads']}", f"{i['kv_bytes_per_token'] / KiB:g}",
         f"{i['weight_bytes'] / GB:.1f}", f"{i['max_context_tokens']:,}", i["source"]]
        for i, p in zip(items, published, strict=True)
    ]  # fmt: skip
    headers = ["id", "params B", "active B", "published B", "layers", "heads/kv", f"KV KiB/token {prec}",
               f"weights GB {prec}", "max context", "source"]  # fmt: skip
    note = (
        "(params and active params derived from the architecture; published = the publisher's count, "
        "— for a model read from your config.json)"
    )
    return items, headers, rows, {1, 2, 3, 4, 6, 7, 8}, note


def _prices(prec: str):
    """`roofline list prices`: the price rows, each dated and sourced."""
    items = [asdict(p) for p in rl.prices().values()]
    rows = [
        [p["id"], p["gpu"], f"{p['usd_per_gpu_hour']:.2f}", p["kind"], p["provider"], p["date"], p["source"]]
        for p in items
    ]
    note = (
        "(dated examples, not quotes: check the source before relying on one; kind own: a GPU people buy, "
        "its purchase price and power spread over its life, data/assumptions.toml; a GPU's first row is its "
        "default)"
    )
    return items, ["id", "gpu", "$/GPU-hour", "kind", "provider", "date", "source"], rows, {2}, note


def _engines(prec: str):
    """`roofline list engines`: the engines of data/engines.toml (and yours), each with its release."""
    items = [
        {**e, "kernels_timed": bool(e["kernels"])} for e in (asdict(get_engine(i)) for i in engine_ids())
    ]
    rows = [[i["id"], i["kind"], i["parallel"], i["kernels"] or "-", i["version"]] for i in items]
    headers = ["id", "kind", "splits a model", "kernels timed", "release its numbers describe"]
    note = (
        "(`--engine ID` in step, prefill, cost, generate, serve, speculate, diagnose; the ideal is the floor)"
    )
    return items, headers, rows, set(), note
