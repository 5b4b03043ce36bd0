"""``roofline fit``: the memory a model needs against what the GPUs hold, the largest batch at a context,
and (``--batch``) whether that many users fit: exit code 1 if they do not. docs/cli.md lists every field.

>>> import contextlib, io, json
>>> from roofline.apps.cli import main
>>> buf = io.StringIO()
>>> with contextlib.redirect_stdout(buf):
...     code = main(["fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "4096", "--json"])
>>> code, json.loads(buf.getvalue())["max_batch"]
(0, 102)
"""

from __future__ import annotations

import roofline as rl
from roofline.apps import cli_figures as fig
from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.units import fmt_bytes


def add_parser(sub) -> None:
    """The ``fit`` subcommand and its options."""
    p = sub.add_parser("fit", help="memory needed vs available; the largest batch at a context")
    opt.add_common_arguments(p)
    p.add_argument("--context", type=opt.TOKENS, required=True, help="tokens of KV each user holds")
    p.add_argument(
        "--batch", type=opt.BATCH, default=None, help="check this many users (exit 1 if they do not fit)"
    )
    p.add_argument(
        "--memory", choices=["engine", "ideal"], default="engine",
        help="engine: what an engine leaves weights and KV under vLLM's defaults (default); ideal: all of it",
    )  # fmt: skip


def run(args) -> int:
    """Run ``fit`` from parsed ``args``; exit code 1 if ``--batch`` users do not fit."""
    prec = dict(weight_precision=args.weights, kv_precision=args.kv)
    m, g = rl.get_model(args.model), rl.get_gpu(args.gpu)
    rl.peak_flops_per_s(g, args.weights)  # same precision rule as step: no tensor-core math, no answer
    opt.check_window(m, args.context, "a user holding this context")  # as step: no answer beyond the window
    largest = int(rl.max_batch(m, g, args.context, num_gpus=args.gpus, memory=args.memory, **prec))
    per_token = rl.kv_bytes_per_token(m, args.kv)
    have = rl.memory_available_bytes(g, args.gpus, args.memory)
    d = {
        "command": "fit",
        **fig.setup_fields(args, engine=False),
        "context_tokens": args.context,
        "weight_bytes": rl.weight_bytes(m, args.weights),
        "kv_bytes_per_token": per_token,
        "kv_bytes_per_user": rl.kv_cache_bytes(1, args.context, per_token),
        "memory_capacity_bytes": have,
        "gpu_memory_bytes": rl.memory_capacity_bytes(g, args.gpus),
        "memory_model": args.memory,
        "max_batch": largest,
        "memory_needed_at_max_batch_bytes": rl.memory_needed_bytes(m, largest, args.context, args.weights,
                                                                   args.kv),
        "batch": None, "memory_needed_bytes": None, "fits": None, "margin_bytes": None, "margin_users": None,
        # vLLM's memory budget assumes vLLM can run this split: say so when it would refuse it
        "tensor_parallel_problem": (opt.tensor_parallel_problem(m, args.gpus, "vllm") or None)
        if args.memory == "engine" else None,
    }  # fmt: skip
    if args.batch is not None:
        need = rl.memory_needed_bytes(m, args.batch, args.context, args.weights, args.kv)
        ok = bool(rl.fits(m, g, args.batch, args.context, num_gpus=args.gpus, memory=args.memory, **prec))
        d.update(batch=args.batch, memory_needed_bytes=need, fits=ok, margin_bytes=have - need,
                 margin_users=largest - args.batch)  # fmt: skip
    code = out.EXIT_NO if d["fits"] is False else out.EXIT_OK
    if args.json:
        out.print_json(d)
        return code
    print(
        f"fit: {m.id} on {args.gpus} × {g.id}, context {args.context:,} tokens, "
        f"{out.precisions_text(args.weights, args.kv, args.weights_defaulted)}"
    )
    print(out.rows_text(_rows(d, args)))
    return code


def _rows(d: dict, args) -> list[tuple[str, str]]:
    largest, have = d["max_batch"], d["memory_capacity_bytes"]
    rows = [
        ("weights", fmt_bytes(d["weight_bytes"])),
        ("KV cache per user", f"{fmt_bytes(d['kv_bytes_per_user'])} ({fmt_bytes(d['kv_bytes_per_token'])} "
                              f"per token × {args.context:,} tokens)"),
        ("memory available", fig.available_text(have, args.gpu, args.gpus, args.memory,
                                                "; --memory ideal counts all")),
        ("largest batch", f"{largest} users (needing {fmt_bytes(d['memory_needed_at_max_batch_bytes'])})"
         if largest > 0 else f"0: the weights alone need more than {fmt_bytes(have)}"),
    ]  # fmt: skip
    if args.batch is not None:
        need, margin = d["memory_needed_bytes"], d["margin_bytes"]
        if d["fits"]:
            verdict = (
                f"fits: needs {fmt_bytes(need)}, {fmt_bytes(margin)} to spare "
                f"(room for {d['margin_users']} more users)"
            )
        else:
            over = f"{-d['margin_users']} users too many" if largest > 0 else "no batch fits these weights"
            verdict = f"does not fit: needs {fmt_bytes(need)}, short by {fmt_bytes(-margin)} ({over})"
        rows.append((f"batch {args.batch}", verdict))
    if d["tensor_parallel_problem"]:
        rows.append(("note", d["tensor_parallel_problem"] + "; the memory above splits evenly anyway"))
    return rows
