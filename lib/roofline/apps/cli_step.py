"""``roofline step``: one decode step, ideal (bytes, FLOPs, the two roofs and what binds, tokens/s, memory)
and on a real engine (``--engine``). docs/cli.md lists every JSON field.

>>> import contextlib, io, json
>>> from roofline.apps.cli import main
>>> buf = io.StringIO()
>>> with contextlib.redirect_stdout(buf):
...     code = main(["step", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--json"])
>>> code, round(json.loads(buf.getvalue())["step_time_s"] * 1e3, 2)     # 15.01 GB ÷ 3.35 TB/s
(0, 4.48)
"""

from __future__ import annotations

import roofline as rl
from roofline.apps import cli_figures as fig
from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.units import MS, fmt_bytes

# The JSON fields `step` promises (docs/cli.md), in order, picked by name from the library's result.
FIELDS = (
    "model_id", "gpu_id", "weight_precision", "kv_precision", "num_gpus", "batch", "context_tokens",
    "weight_bytes_read", "kv_bytes_read", "bytes_read", "flops", "memory_time_s", "compute_time_s",
    "communication_time_s", "launch_overhead_s", "step_time_s", "binding", "memory_needed_bytes",
    "memory_capacity_bytes", "fits", "tokens_per_s_per_user", "tokens_per_s_total",
)  # fmt: skip


def add_parser(sub) -> None:
    """The ``step`` subcommand and its options."""
    p = sub.add_parser("step", help="one decode step: bytes, FLOPs, times, tokens/s, memory")
    opt.add_common_arguments(p)
    p.add_argument("--batch", type=opt.BATCH, default=1, help="users decoding together (default 1)")
    p.add_argument("--context", type=opt.CONTEXT, default=0, help="tokens of KV each user holds (default 0)")
    p.add_argument("--launch-overhead-ms", type=opt.real_number(0, 1e6, "ms"), default=0.0, metavar="MS",
                   help="CPU kernel-launch time added to every step, in ms (default 0)")  # fmt: skip
    p.add_argument("--comm", action="store_true", help="add tensor-parallel all-reduce time")
    opt.add_engine_argument(p)


def _step_fields(s: rl.Step, args) -> dict:
    """The JSON object of a decode step (SI units), without the engine's figure."""
    gpu = rl.get_gpu(s.gpu_id)
    ridge = rl.ridge_point_flop_per_byte(
        rl.peak_flops_per_s(gpu, args.weights), gpu.memory_bandwidth_bytes_per_s
    )
    return {
        "command": "step",
        **out.picked(s, FIELDS, counts=("num_gpus", "batch", "context_tokens")),
        "include_communication": args.comm,
        "arithmetic_intensity_flop_per_byte": s.arithmetic_intensity_flop_per_byte,
        "ridge_point_flop_per_byte": ridge,
    }


def run(args) -> int:
    """Run ``step`` from parsed ``args``; return the exit code."""
    options = dict(launch_overhead_s=args.launch_overhead_ms * MS, include_communication=args.comm)
    try:
        s = fig.ideal_step(args, args.batch, args.context, **options)
    except rl.DoesNotFitError:
        extra = None
        if args.json:  # the step's other numbers still exist: give them to scripts
            masked = fig.ideal_step(args, args.batch, args.context, on_overflow="mask", **options)
            extra = {**_step_fields(masked, args), "binding": None}  # no step runs, so nothing binds
        return fig.does_not_fit(args, "step", args.batch, args.context, json_extra=extra)
    d = {**_step_fields(s, args), "achievable": fig.achievable_decode(args, args.batch, args.context)}
    if args.json:
        out.print_json(d)
        return out.EXIT_OK
    print(
        f"decode step: {s.model_id} on {args.gpus} × {s.gpu_id}, batch {args.batch}, context "
        f"{args.context:,} tokens, "
        f"{out.precisions_text(s.weight_precision, s.kv_precision, args.weights_defaulted)}"
    )
    print(out.rows_text(_rows(s, d, args)))
    return out.EXIT_OK


def _rows(s: rl.Step, d: dict, args) -> list[tuple[str, str]]:
    rows = [
        ("bytes read", f"{fmt_bytes(s.bytes_read)} (weights {fmt_bytes(s.weight_bytes_read)} + KV "
                       f"{fmt_bytes(s.kv_bytes_read)})"),
        ("FLOPs", f"{out.fmt_flop(s.flops)} ({d['arithmetic_intensity_flop_per_byte']:.3g} FLOP/byte; "
                  f"ridge point {d['ridge_point_flop_per_byte']:.0f})"),
        ("memory time", out.fmt_seconds(s.memory_time_s)),
        ("compute time", out.fmt_seconds(s.compute_time_s)),
    ]  # fmt: skip
    if args.comm:
        rows.append(("communication", out.fmt_seconds(s.communication_time_s)))
    if args.launch_overhead_ms:
        rows.append(("launch overhead", out.fmt_seconds(s.launch_overhead_s)))
    return rows + [
        ("step time", out.fmt_seconds(s.step_time_s) + " (the ideal: a floor no engine beats)"),
        *out.achievable_rows(d["achievable"]),
        ("binding", _binding_text(s)),
        ("tokens/s", f"{out.fmt_count(s.tokens_per_s_per_user)} per user, "
                     f"{out.fmt_count(s.tokens_per_s_total)} total"),
        ("memory", f"{fmt_bytes(s.memory_needed_bytes)} needed of {fmt_bytes(s.memory_capacity_bytes)} an "
                   f"engine leaves weights and KV on {out.fmt_capacity(s.gpu_id, args.gpus)}"),
    ]  # fmt: skip


def _binding_text(s: rl.Step) -> str:
    """ "memory-bound", or, when waiting on the CPU's launches or on the link takes longer than either
    roof, says that this wait, not the GPU's roof, sets the step."""
    text = f"{s.binding}-bound"
    roof = max(float(s.memory_time_s), float(s.compute_time_s))
    waits = {
        "the CPU's kernel launches": float(s.launch_overhead_s),
        "communication": float(s.communication_time_s),
    }
    longest = max(waits, key=waits.get)
    if waits[longest] > roof:
        text += (
            f" of the two roofs; waiting on {longest} ({out.fmt_seconds(waits[longest])}) takes longer still"
        )
    return text
