"""``roofline prefill``: one prompt pass, ideal and on a real engine, and how many decode steps it stalls.
docs/cli.md lists every JSON field.

>>> import contextlib, io, json
>>> from roofline.apps.cli import main
>>> buf = io.StringIO()
>>> with contextlib.redirect_stdout(buf):
...     code = main(["prefill", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--prompt", "8000", "--json"])
>>> code, json.loads(buf.getvalue())["binding"]
(0, 'compute')
"""

from __future__ import annotations

import roofline as rl
from roofline.apps import cli_figures as fig
from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.units import fmt_bytes

# The JSON fields of the library's result `prefill` promises (docs/cli.md), in order.
FIELDS = (
    "model_id", "gpu_id", "prompt_tokens", "num_gpus", "flops", "attention_flops", "bytes_moved",
    "compute_time_s", "memory_time_s", "time_s", "binding",
)  # fmt: skip
NAMES = {"prompt_tokens": "new_tokens", "time_s": "step_time_s"}  # the JSON's names for the step's fields


def add_parser(sub) -> None:
    """The ``prefill`` subcommand and its options."""
    p = sub.add_parser("prefill", help="one prompt pass, and how many decode steps it stalls")
    opt.add_common_arguments(p)
    p.add_argument("--prompt", type=opt.TOKENS, required=True, help="prompt length in tokens")
    p.add_argument(
        "--no-attention", action="store_true", help="leave out attention's P² FLOPs (2 × N × P only)"
    )
    p.add_argument("--decode-context", type=opt.CONTEXT, default=0, metavar="TOKENS",
                   help="context of the batch-1 decode step the stall is counted in (default 0)")  # fmt: skip
    opt.add_engine_argument(p)


def run(args) -> int:
    """Run ``prefill`` from parsed ``args``; return the exit code."""
    common = dict(num_gpus=args.gpus, weight_precision=args.weights, kv_precision=args.kv)
    try:
        # The prompt's KV has to sit beside the weights.
        rl.check_fits(args.model, args.gpu, 1, args.prompt, **common)
        p = rl.prefill(args.model, args.gpu, args.prompt, include_attention=not args.no_attention, **common)
    except rl.DoesNotFitError:
        return fig.does_not_fit(args, "prefill", 1, args.prompt, why=": no prompt pass")
    try:
        decode = fig.ideal_step(args, 1, args.decode_context)
    except rl.DoesNotFitError:
        why = ": no decode step to count the stall in"
        return fig.does_not_fit(args, "prefill", 1, args.decode_context, why=why)
    d = {
        "command": "prefill",
        **out.picked(p, FIELDS, counts=("prompt_tokens", "num_gpus"), renamed=NAMES),
        "weight_precision": args.weights,
        "kv_precision": args.kv,
        "include_attention": not args.no_attention,
        "decode_context_tokens": args.decode_context,
        "decode_step_time_s": decode.step_time_s,
        "stalled_decode_steps": rl.stalled_decode_steps(p.step_time_s, decode.step_time_s),
        "compute_bound_prompt_tokens": rl.compute_bound_prompt_tokens(args.model, args.gpu, args.weights),
        "achievable": fig.achievable_prefill(args),
    }
    if args.json:
        out.print_json(d)
        return out.EXIT_OK
    print(
        f"prefill: {p.model_id} on {args.gpus} × {p.gpu_id}, prompt {args.prompt:,} tokens, "
        f"{out.precisions_text(args.weights, args.kv, args.weights_defaulted)}"
    )
    print(out.rows_text(_rows(p, d, args)))
    return out.EXIT_OK


def _rows(p, d: dict, args) -> list[tuple[str, str]]:
    attention = (
        f" (of which attention {out.fmt_flop(p.attention_flops)})"
        if not args.no_attention
        else " (2 × N × P; attention left out)"
    )
    return [
        ("FLOPs", out.fmt_flop(p.flops) + attention),
        ("bytes moved", f"{fmt_bytes(p.bytes_moved)} (weights read once + the prompt's KV written)"),
        ("compute time", out.fmt_seconds(p.compute_time_s)),
        ("memory time", out.fmt_seconds(p.memory_time_s)),
        ("prefill time", out.fmt_seconds(p.step_time_s) + " (the ideal: a floor no engine beats)"),
        *out.achievable_rows(d["achievable"], "time_s"),
        ("binding", f"{p.binding}-bound"),
        ("stalls", f"{out.fmt_count(d['stalled_decode_steps'])} decode steps of "
                   f"{out.fmt_seconds(d['decode_step_time_s'])} (batch-1 decode at context "
                   f"{args.decode_context:,}) if the prompt runs unchunked"),
        ("compute-bound", f"above about {d['compute_bound_prompt_tokens']:,.0f} prompt tokens at "
                          f"{args.weights} (attention and KV writes ignored)"),
    ]  # fmt: skip
