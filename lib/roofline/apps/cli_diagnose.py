"""``roofline diagnose``: your measured speed against the floor and what a tuned engine reaches.

Taught in notebooks/floor_to_real_server.ipynb. Give one measurement: a user's decode rate
(``--tokens-per-s``) or time per output token (``--tpot-ms``), or a time to first token (``--ttft-ms`` with
``--prompt``). The
command places it against the ideal floor and the engine's achievable time, itemised (the gap budget:
kernel efficiency, per-step, per-layer, communication), and says which part of the gap it sits in. A
measurement below the floor is impossible at the precision given: it names the weight precisions whose
floor would allow it, both from ``roofline.engines.diagnose_measurement`` (a prompt: one request alone, no
queueing). docs/cli.md lists the JSON fields.

    roofline diagnose --model M --gpu G [--gpus N] (--tokens-per-s X | --tpot-ms X | --ttft-ms X --prompt P)
                      [--batch B] [--context T] [--weights P] [--kv P] [--engine E] [--json]

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

from roofline import engines
from roofline.apps import cli_support as support
from roofline.physics.precision import PRECISIONS, WEIGHT_FORMATS

EXIT_OK = 0

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
    support.add_common_arguments(p)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--tokens-per-s",
        type=support.real_number(0, 1e9, "tokens/s", above=True),
        metavar="X",
        help="one user's decode rate (1 ÷ time per output token), tokens/s",
    )
    ms = support.real_number(0, support.MAX_MS, "ms", above=True)
    what.add_argument("--tpot-ms", type=ms, metavar="MS", help="time per output token (one decode step), ms")
    what.add_argument("--ttft-ms", type=ms, metavar="MS", help="time to first token of one request alone, ms")
    p.add_argument(
        "--batch",
        type=support.BATCH,
        default=1,
        metavar="B",
        help="users decoding together when you measured (default 1)",
    )
    p.add_argument(
        "--context",
        type=support.CONTEXT,
        default=0,
        metavar="T",
        help="tokens of KV each user held, decode (default 0)",
    )
    p.add_argument(
        "--prompt", type=support.TOKENS, default=None, metavar="P", help="prompt tokens, with --ttft-ms"
    )
    support.add_engine_argument(p, "the achievable time")


def _measure(args, measured_s: float, prompt_tokens=None) -> dict:
    d = engines.diagnose_measurement(
        args.model, args.gpu, measured_s, args.batch, args.context, num_gpus=args.gpus,
        weight_precision=args.weights, kv_precision=args.kv, engine=args.engine, prompt_tokens=prompt_tokens,
    )  # fmt: skip
    d["measured_s"] = d.pop("measured_step_s")
    return d


def precisions_within(args, measured_s: float, phase: str) -> list[dict]:
    """The weight precisions (basic and presets) whose floor on this GPU is at or below ``measured_s``:
    what the measurement could have run in, if not in ``--weights``."""
    out = []
    for w in dict.fromkeys([*PRECISIONS, *WEIGHT_FORMATS]):
        try:
            if phase == "decode":
                floor = float(
                    engines.decode_step_times(
                        args.model,
                        args.gpu,
                        args.batch,
                        args.context,
                        num_gpus=args.gpus,
                        weight_precision=w,
                        kv_precision=args.kv,
                        engine="ideal",
                    )["floor"]
                )
            else:
                floor = float(
                    engines.prefill_times(
                        args.model,
                        args.gpu,
                        args.prompt,
                        num_gpus=args.gpus,
                        weight_precision=w,
                        kv_precision=args.kv,
                        engine="ideal",
                    )["floor"]
                )
        except support.rl.UnsupportedPrecisionError:
            continue
        if np.isfinite(floor) and floor <= measured_s:
            out.append({"weight_precision": w, "floor_s": floor})
    return out


def run(args) -> int:
    """Diagnose one measurement; print the verdict."""
    support.check_tensor_parallel(args.model, args.gpus, args.engine)
    if args.ttft_ms is not None:
        if args.prompt is None:
            raise support.usage_error("diagnose", "--ttft-ms needs --prompt (the prompt's tokens)")
        support.check_window(args.model, args.prompt, "a prompt of --prompt tokens")
        phase, measured = "prefill", {"ttft_s": args.ttft_ms / 1000}
        d = _measure(args, args.ttft_ms / 1000, prompt_tokens=args.prompt)
        cover = dict(input_tokens=args.prompt)
    else:
        if args.prompt is not None:
            raise support.usage_error("diagnose", "--prompt goes with --ttft-ms; a decode step has --context")
        support.check_window(args.model, args.context, "a decode step at --context tokens")
        step_s = 1 / args.tokens_per_s if args.tokens_per_s is not None else args.tpot_ms / 1000
        phase = "decode"
        measured = {"tokens_per_s": args.tokens_per_s} if args.tokens_per_s else {"tpot_s": step_s}
        d = _measure(args, step_s)
        cover = dict(context_tokens=args.context)
    below = d["sits_in"].startswith("below the floor")
    out = {
        "command": "diagnose",
        "model_id": support.rl.get_model(args.model).id,
        "gpu_id": support.rl.get_gpu(args.gpu).id,
        "engine": engines.get_engine(args.engine).id,
        "default_engine": engines.DEFAULT_ENGINE,
        "num_gpus": args.gpus,
        "weight_precision": args.weights,
        "kv_precision": args.kv,
        "phase": phase,
        "batch": args.batch if phase == "decode" else 1,
        "context_tokens": args.context if phase == "decode" else None,
        "prompt_tokens": args.prompt,
        "measured": measured,
        **d,
        "below_floor": below,
        "precisions_within_floor": precisions_within(args, d["measured_s"], phase) if below else [],
        **support.coverage_fields(
            args.engine, args.model, args.gpu, out_batch(args, phase), args.gpus, args.weights, **cover
        ),
    }
    if args.json:
        support.print_json(out)
    else:
        print(_human(out, args))
    return EXIT_OK


def out_batch(args, phase: str) -> int:
    return args.batch if phase == "decode" else 1


def _t(s: float) -> str:
    return "0" if s == 0 else support._fmt_time(s)


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
    phase = d["phase"]
    what = (
        f"decode at batch {d['batch']:,}, context {d['context_tokens']:,} tokens"
        if phase == "decode"
        else f"first token of a {d['prompt_tokens']:,}-token prompt"
    )
    head = (
        f"diagnose: {d['model_id']} on {d['num_gpus']:,} × {d['gpu_id']}, {what}, weights "
        f"{support.weights_text(d['weight_precision'], support.weights_defaulted(args))}, "
        f"KV {d['kv_precision']}"
    )
    m, floor, real = d["measured_s"], d["floor_s"], d["achievable_s"]

    def vs(ref: float) -> str:  # the measurement against a reference time (and its rate, for decode)
        if phase == "decode":
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
        ("floor (ideal)", vs(floor)),
        (f"achievable ({d['engine']})", vs(real)),
        ("MBU, MFU", f"{d['mbu']:.1%}, {d['mfu']:.1%} (bytes and FLOPs of the step ÷ time ÷ peak)"),
        ("gap budget", f"{parts} = {_t(d['budget']['total'])}"),
        ("verdict", _verdict(d)),
        *support.extrapolation_rows(d),
    ]
    width = max(len(a) for a, _ in rows)
    return "\n".join([head, *(f"  {a:<{width}}  {b}" for a, b in rows)])
