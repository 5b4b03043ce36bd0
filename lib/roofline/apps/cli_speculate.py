"""``roofline speculate``: speculative decoding against plain decode of the same configuration.

Taught in notebooks/speculative_decoding.ipynb; the numbers are ``roofline.physics.speculative``, and
beside them the same cycle's steps timed by a real engine (``--engine``). docs/cli.md lists every field.

>>> import contextlib, io, json
>>> buf = io.StringIO()
>>> from roofline.apps.cli import main
>>> with contextlib.redirect_stdout(buf):
...     code = main(["speculate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--draft-cost-ratio", "0",
...                  "--draft-tokens", "4", "--acceptance", "0.8", "--json"])
>>> code, round(json.loads(buf.getvalue())["expected_tokens_per_step"], 4)     # 1 + .8 + .64 + .512 + .4096
(0, 3.3616)
"""

from __future__ import annotations

from roofline.apps import cli_figures as fig
from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.engines import decode_step_times
from roofline.physics.speculative import speculative_collapse_batch, speculative_step
from roofline.physics.step import forward_step
from roofline.units import GB, MS

FIELDS = (
    "model_id", "gpu_id", "proposer", "weight_precision", "kv_precision", "num_gpus", "batch",
    "context_tokens", "draft_tokens", "acceptance", "draft_cost_ratio", "expected_tokens_per_step",
    "draft_time_s", "verify_time_s", "verify_binding", "step_time_s", "plain_step_time_s",
    "tokens_per_s_per_user", "plain_tokens_per_s_per_user", "tokens_per_s_total", "speedup",
    "memory_needed_bytes", "memory_capacity_bytes", "fits",
)  # fmt: skip
COUNTS = ("num_gpus", "batch", "context_tokens", "draft_tokens")  # whole numbers in JSON


def add_parser(subparsers) -> None:
    """Register ``speculate`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "speculate",
        help="speculative decoding: tokens per verify step, step time, tokens/s per user, speedup",
        description="Draft k tokens (a draft model, or a proposer costing r target decode steps per "
        "token), verify them in one forward step of the target; compare with plain decode.",
    )
    opt.add_common_arguments(p)
    proposer = p.add_mutually_exclusive_group()
    proposer.add_argument("--draft", metavar="D", help="draft model id (k decode steps of it per cycle)")
    proposer.add_argument(
        "--draft-cost-ratio",
        type=opt.real_number(0, 1e3),
        metavar="r",
        help="cost of one drafted token in target decode steps (default 0: a free proposer, n-gram lookup)",
    )
    p.add_argument("--draft-tokens", type=opt.whole_number(0, 64, "tokens"), required=True, metavar="k",
                   help="drafts per user")  # fmt: skip
    p.add_argument(
        "--acceptance", type=opt.real_number(0, 1), required=True, metavar="a", help="per-token acceptance α"
    )
    p.add_argument("--batch", type=opt.BATCH, default=1, metavar="B",
                   help="users decoding together (default 1)")  # fmt: skip
    p.add_argument("--context", type=opt.CONTEXT, default=0, metavar="T",
                   help=f"tokens/user (default 0, ≤ {opt.MAX_TOKENS:,})")  # fmt: skip
    opt.add_engine_argument(p, "the achievable cycle")


def achievable(args, s) -> dict:
    """The same cycle on ``args.engine``: draft, verify and plain steps timed by the engine (SI units)."""
    timer = fig.step_timer(args)
    k, b, t = args.draft_tokens, args.batch, args.context
    common = dict(num_gpus=args.gpus, weight_precision=args.weights, kv_precision=args.kv,
                  on_overflow="ignore", parallelism=timer.parallel)  # fmt: skip
    verify = float(
        timer.of_step(forward_step(args.model, args.gpu, b, t, new_tokens=k + 1, **common)).total_s
    )
    plain = float(timer.of_step(forward_step(args.model, args.gpu, b, t, new_tokens=1, **common)).total_s)
    if args.draft:
        one = float(decode_step_times(fig.step_timer(args, model=args.draft), b, t)["total"])
    else:
        one = float(s.draft_cost_ratio) * plain
    cycle = k * one + verify
    per_user = float(s.expected_tokens_per_step) / cycle
    return {
        "engine": timer.engine.id,
        "draft_time_s": k * one,
        "verify_time_s": verify,
        "step_time_s": cycle,
        "plain_step_time_s": plain,
        "tokens_per_s_per_user": per_user,
        "plain_tokens_per_s_per_user": 1.0 / plain,
        "tokens_per_s_total": b * per_user,
        "speedup": per_user * plain,
        **fig.coverage_fields(args, b, context_tokens=t),
    }


def run(args) -> int:
    """Compute and print; errors raise ``RooflineError`` for the framework to report."""
    options = dict(
        draft_tokens=args.draft_tokens,
        acceptance=args.acceptance,
        draft_model=args.draft.strip().lower() if args.draft else None,
        draft_cost_ratio=None if args.draft else (args.draft_cost_ratio or 0.0),
        num_gpus=args.gpus,
        weight_precision=args.weights,
        kv_precision=args.kv,
    )
    s = speculative_step(args.model, args.gpu, args.batch, args.context, **options)
    collapse = speculative_collapse_batch(args.model, args.gpu, args.context, **options)
    d = {"command": "speculate", **out.picked(s, FIELDS, counts=COUNTS)}
    d["collapse_batch"] = None if collapse != collapse else int(collapse)
    d["achievable"] = real = achievable(args, s)
    if args.json:
        out.print_json(d)
        return out.EXIT_OK
    rows = [
        ("setup", f"{s.model_id} on {s.num_gpus:.0f}x {s.gpu_id}, "
                  f"{out.precisions_text(s.weight_precision, s.kv_precision, args.weights_defaulted)}; "
                  f"B={s.batch:,.0f}, T={s.context_tokens:,.0f}"),
        ("proposer", f"{s.proposer}: k={s.draft_tokens:.0f} drafts, acceptance α={s.acceptance:g}"),
        ("tokens per verify step", f"{s.expected_tokens_per_step:.3f}  (1 − α^(k+1)) ÷ (1 − α)"),
        ("draft time", f"{s.draft_time_s / MS:.3f} ms  ({s.draft_cost_ratio:.3f} target steps per draft)"),
        ("verify time", f"{s.verify_time_s / MS:.3f} ms  ({s.verify_binding}-bound, "
                        f"{s.batch * (s.draft_tokens + 1):,.0f} tokens)"),
        ("cycle (draft + verify)", f"{s.step_time_s / MS:.3f} ms"),
        ("plain decode step", f"{s.plain_step_time_s / MS:.3f} ms"),
        ("tokens/s per user",
         f"{s.tokens_per_s_per_user:,.1f}  (plain {s.plain_tokens_per_s_per_user:,.1f})"),
        ("speedup per user", f"{s.speedup:.2f}x"),
        (f"achievable ({real['engine']})",
         f"cycle {real['step_time_s'] / MS:.3f} ms (draft {real['draft_time_s'] / MS:.3f} + verify "
         f"{real['verify_time_s'] / MS:.3f}), plain step {real['plain_step_time_s'] / MS:.3f} ms"),
        ("  tokens/s per user", f"{real['tokens_per_s_per_user']:,.1f}  (plain "
                                f"{real['plain_tokens_per_s_per_user']:,.1f}), "
                                f"speedup {real['speedup']:.2f}x"),
        *out.extrapolation_rows(real),
        ("speedup < 1 from batch", "never up to 4,096 users (or memory runs out first)"
         if d["collapse_batch"] is None else f"{d['collapse_batch']:,}"),
        ("memory", f"{s.memory_needed_bytes / GB:.1f} GB of {s.memory_capacity_bytes / GB:.0f} GB"),
    ]  # fmt: skip
    print(out.rows_text(rows, indent=""))
    return out.EXIT_OK
