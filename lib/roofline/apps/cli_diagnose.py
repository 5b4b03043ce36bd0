"""``roofline diagnose``: your measured speed against the floor and what a tuned engine reaches.

Taught in notebooks/floor_to_real_server.ipynb. One measurement (a user's decode rate ``--tokens-per-s``,
a time per output token ``--tpot-ms``, or a time to first token ``--ttft-ms`` with ``--prompt``) placed
against the ideal floor and the engine's achievable time, itemised into the gap budget
(``roofline.engines.diagnose_measurement``), with the part of the gap it sits in. A measurement below the
floor names the weight precisions whose floor would allow it. docs/cli.md lists the JSON fields.

>>> import contextlib, io, json
>>> from roofline.apps.cli import main
>>> buf = io.StringIO()
>>> with contextlib.redirect_stdout(buf):   # "my vLLM gets 90 tok/s for Llama 3 8B on an A10G"
...     code = main(["diagnose", "--model", "llama-3-8b", "--gpu", "a10g", "--tokens-per-s", "90", "--json"])
>>> d = json.loads(buf.getvalue())
>>> code, d["below_floor"], round(d["measured_over_floor"], 2)      # 11.1 ms against a 25.0 ms floor
(0, True, 0.44)
"""

from __future__ import annotations

import numpy as np

import roofline as rl
from roofline import engines
from roofline.apps import cli_figures as fig
from roofline.apps import cli_from_file as from_file
from roofline.apps import cli_options as opt
from roofline.apps import cli_output as out
from roofline.measure import benchmark_plot
from roofline.physics.precision import PRECISIONS, WEIGHT_FORMATS

# What each part of the gap budget is, for the verdict (roofline.engines.BUDGET_PARTS).
MEANING = {
    "kernel efficiency": "what real kernels lose to peak bandwidth and math: as fast as tuned kernels",
    "per-step": "the engine's per-step costs (scheduler, launches, sampling): a tuned engine, overheads paid",
    "per-layer": "each layer's small kernels (norms, rotary, activations): close to a tuned engine",
    "communication": "the tensor-parallel all-reduces: a tuned engine on these GPUs",
}


def add_parser(subparsers) -> None:
    """Register ``diagnose`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "diagnose",
        help="place a measured tokens/s, TPOT or TTFT against the floor and a tuned engine",
        description="Your measurement against the ideal floor and the engine's achievable time, itemised; "
        "which part of the gap it sits in.",
    )
    opt.add_common_arguments(p, required=False)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--tokens-per-s", type=opt.real_number(0, 1e9, "tokens/s", above=True), metavar="X",
                      help="one user's decode rate (1 ÷ time per output token), tokens/s")  # fmt: skip
    what.add_argument(
        "--tpot-ms", type=opt.MILLISECONDS, metavar="MS", help="time per output token (one decode step), ms"
    )
    what.add_argument(
        "--ttft-ms", type=opt.MILLISECONDS, metavar="MS", help="time to first token of one request alone, ms"
    )
    p.add_argument("--batch", type=opt.BATCH, default=1, metavar="B",
                   help="users decoding together when you measured (default 1)")  # fmt: skip
    p.add_argument("--context", type=opt.CONTEXT, default=0, metavar="T",
                   help="tokens of KV each user held, decode (default 0)")  # fmt: skip
    p.add_argument("--prompt", type=opt.TOKENS, default=None, metavar="P",
                   help="prompt tokens, with --ttft-ms")  # fmt: skip
    from_file.add_from_arguments(p, what)
    p.add_argument(
        "--plot", metavar="FILE", default=None,
        help="with --from: draw the runs against the floor and the engine (.png, .svg, .pdf)",
    )  # fmt: skip
    opt.add_engine_argument(p, "the achievable time")
    p.set_defaults(engine=None)  # with --from, the file's tool's engine; else the default engine


def precisions_within(args, measured_s: float, phase: str) -> list[dict]:
    """The weight precisions (basic and presets) whose floor on this GPU is at or below ``measured_s``
    (seconds): what the measurement could have run in, if not in ``--weights``."""
    within = []
    for w in dict.fromkeys([*PRECISIONS, *WEIGHT_FORMATS]):
        try:
            timer = fig.step_timer(args, weights=w, engine="ideal")
            times = (
                engines.decode_step_times(timer, args.batch, args.context)
                if phase == "decode"
                else engines.prefill_times(timer, args.prompt)
            )
        except rl.UnsupportedPrecisionError:
            continue
        floor = float(times["floor"])
        if np.isfinite(floor) and floor <= measured_s:
            within.append({"weight_precision": w, "floor_s": floor})
    return within


def run_file(args) -> int:
    """``--from FILE``: every run of a benchmark's result file placed on the roofline."""
    if args.plot and not str(args.plot).lower().endswith(benchmark_plot.PLOT_SUFFIXES):
        raise opt.usage_error("diagnose", f"--plot {args.plot!r}: give a .png, .svg or .pdf file name")
    result = from_file.diagnosed(args)
    if args.plot:
        result["plot"] = benchmark_plot.save_figure(result, args.plot)
    if args.json:
        out.print_json(result)
    else:
        print(from_file.diagnose_text(result) + (f"\n\nplot: {result['plot']}" if args.plot else ""))
    return out.EXIT_OK


def run(args) -> int:
    """Diagnose one measurement, or a result file's runs; print the verdict."""
    if args.from_file:
        return run_file(args)
    if args.plot:
        raise opt.usage_error("diagnose", "--plot draws the runs of a result file: it goes with --from FILE")
    opt.require_model_and_gpu(args, "diagnose")
    args.engine = args.engine or engines.DEFAULT_ENGINE
    opt.check_tensor_parallel(args.model, args.gpus, args.engine)
    decode = args.ttft_ms is None
    if decode:
        if args.prompt is not None:
            raise opt.usage_error("diagnose", "--prompt goes with --ttft-ms; a decode step has --context")
        opt.check_window(args.model, args.context, "a decode step at --context tokens")
        measured_s = 1 / args.tokens_per_s if args.tokens_per_s is not None else args.tpot_ms / 1000
        measured = {"tokens_per_s": args.tokens_per_s} if args.tokens_per_s else {"tpot_s": measured_s}
    else:
        if args.prompt is None:
            raise opt.usage_error("diagnose", "--ttft-ms needs --prompt (the prompt's tokens)")
        opt.check_window(args.model, args.prompt, "a prompt of --prompt tokens")
        measured_s, measured = args.ttft_ms / 1000, {"ttft_s": args.ttft_ms / 1000}
    phase = "decode" if decode else "prefill"
    prompt = None if decode else args.prompt
    d = engines.diagnose_measurement(
        fig.step_timer(args), measured_s, args.batch, args.context, prompt_tokens=prompt
    )
    d["measured_s"] = d.pop("measured_step_s")
    below = d["sits_in"].startswith("below the floor")
    lengths = {"context_tokens": args.context} if decode else {"input_tokens": args.prompt}
    result = {
        "command": "diagnose",
        **fig.setup_fields(args),
        "phase": phase,
        "batch": args.batch if decode else 1,
        "context_tokens": args.context if decode else None,
        "prompt_tokens": args.prompt,
        "measured": measured,
        **d,
        "below_floor": below,
        "precisions_within_floor": precisions_within(args, d["measured_s"], phase) if below else [],
        **fig.coverage_fields(args, args.batch if decode else 1, **lengths),
    }
    if args.json:
        out.print_json(result)
    else:
        print(_human(result, args))
    return out.EXIT_OK


def _t(s: float) -> str:
    return "0" if s == 0 else out.fmt_seconds(s)


def _verdict(d: dict) -> str:
    where = d["sits_in"]
    if d["below_floor"]:
        alts = ", ".join(
            f"{x['weight_precision']} ({_t(x['floor_s'])})" for x in d["precisions_within_floor"]
        )
        return (
            f"below the floor: faster than {d['weight_precision']} weights allow on this GPU, so the "
            "measurement or its precision is wrong (the bytes read, the GPU count, what was counted as a "
            "token). "
            + (f"Floors at or below it: {alts}." if alts else "No weight precision's floor is this low.")
        )
    if where in MEANING:
        return f"in the {where} part of the gap: {MEANING[where]}"
    return (
        "slower than a tuned engine on this GPU: the rest is queueing, small batches, the CPU or a slower "
        "stack"
    )


def _human(d: dict, args) -> str:
    decode, m = d["phase"] == "decode", d["measured_s"]
    what = (
        f"decode at batch {d['batch']:,}, context {d['context_tokens']:,} tokens"
        if decode
        else f"first token of a {d['prompt_tokens']:,}-token prompt"
    )
    head = (
        f"diagnose: {d['model_id']} on {d['num_gpus']:,} × {d['gpu_id']}, {what}, weights "
        f"{out.weights_text(d['weight_precision'], args.weights_defaulted)}, KV {d['kv_precision']}"
    )

    def vs(ref: float) -> str:  # the measurement against a reference time (and its rate, for decode)
        if decode:
            return (
                f"{_t(ref)}, {1 / ref:,.1f} tokens/s per user: the measurement takes {m / ref:.2f}× this "
                f"time ({ref / m:.2f}× its tokens/s)"
            )
        return f"{_t(ref)}: the measurement takes {m / ref:.2f}× this time"

    given = d["measured"]
    shown = (
        f"{given['tokens_per_s']:g} tokens/s per user: a step of {_t(m)}"
        if "tokens_per_s" in given
        else _t(m)
    )
    parts = " + ".join(f"{k} {_t(d['budget'][k])}" for k in ("floor", *engines.BUDGET_PARTS))
    rows = [
        ("measured", shown),
        ("floor (ideal)", vs(d["floor_s"])),
        (f"achievable ({d['engine']})", vs(d["achievable_s"])),
        ("MBU, MFU", f"{d['mbu']:.1%}, {d['mfu']:.1%} (bytes and FLOPs of the step ÷ time ÷ peak)"),
        ("gap budget", f"{parts} = {_t(d['budget']['total'])}"),
        ("verdict", _verdict(d)),
        *out.extrapolation_rows(d),
    ]
    return "\n".join([head, out.rows_text(rows)])
