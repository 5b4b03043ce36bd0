"""``roofline``: the library's models from the shell.

Subcommands built in here: ``step`` (one decode step), ``prefill`` (one prompt pass) and ``fit`` (memory
and the largest batch); the others (``cost``, ``list``, ``serve``, ``plan``, ``generate``, ``speculate``,
``diagnose``, ``calibrate``, ``measure``) live in ``cli_<name>`` modules. Every one takes ``--json`` for
scripts. docs/cli.md describes each command and every JSON field.

This module only parses arguments, calls the library and formats what comes back; the physics is in the
other modules. Values stay in SI units (bytes, FLOP, seconds) until they are printed, and the JSON output
keeps them in SI.

Exit codes (the contract, tested; docs/cli.md has the table): 0 success; 1 a valid answer that is "no"
(``fit --batch``: does not fit; ``serve``: the load is unsustainable); 2 bad input (unknown name, a number
out of range, unsupported precision, a configuration that does not fit in memory, a broken data table,
argument errors); 3 an internal error (a bug). Every failure prints one ``error: ...`` line on stderr
(argument errors keep argparse's usage line before it) and, with ``--json``, ``{"command": ..., "error":
{"type": ..., "message": ...}}`` on stdout (``suggestions`` too for an unknown name).

A subcommand module (``roofline.apps.cli_<name>``) has ``add_parser(subparsers)`` and ``run(args) -> int``;
``COMMAND_MODULES`` registers it, one line each, and it gets the same error handling, exit codes and JSON
errors as the built-in ones. What they share (``add_common_arguments``, ``add_engine_argument``, the bounded
types ``whole_number``, ``real_number``, ``GPUS``, ``TOKENS``, ..., ``usage_error``, ``check_window``,
``check_tensor_parallel``, ``print_json``) is in ``roofline.apps.cli_support``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Iterable

import numpy as np

import roofline as rl
from roofline.apps.cli_support import (
    BATCH,
    CONTEXT,
    EXIT_DOES_NOT_FIT,
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_OK,
    PREFILL_FIELDS,
    TOKENS,
    _achievable_decode,
    _achievable_prefill,
    _achievable_rows,
    _available_text,
    _block,
    _does_not_fit,
    _fields,
    _fmt_count,
    _fmt_flop,
    _fmt_time,
    _Parser,
    _precisions,
    _report_error,
    _setup,
    _step_dict,
    _UsageError,
    add_common_arguments,
    add_engine_argument,
    check_window,
    fmt_capacity,
    print_json,
    real_number,
    tensor_parallel_problem,
    weights_defaulted,
)
from roofline.units import MS, fmt_bytes

# Subcommand modules, one line each: "roofline.apps.cli_generate", ... (each has add_parser and run).
COMMAND_MODULES: tuple[str, ...] = (
    "roofline.apps.cli_cost",
    "roofline.apps.cli_list",
    "roofline.apps.cli_measure",
    "roofline.apps.cli_serve",
    "roofline.apps.cli_plan",
    "roofline.apps.cli_generate",
    "roofline.apps.cli_speculate",
    "roofline.apps.cli_diagnose",
    "roofline.apps.cli_calibrate",
)


# --------------------------------------------------------------------------------------------------
# step
# --------------------------------------------------------------------------------------------------


def _binding_text(s) -> str:
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
        text += f" of the two roofs; waiting on {longest} ({_fmt_time(waits[longest])}) takes longer still"
    return text


def cmd_step(args) -> int:
    kwargs = dict(
        num_gpus=args.gpus,
        weight_precision=args.weights,
        kv_precision=args.kv,
        launch_overhead_s=args.launch_overhead_ms * MS,
        include_communication=args.comm,
    )
    try:
        s = rl.decode_step(args.model, args.gpu, args.batch, args.context, **kwargs)
    except rl.DoesNotFitError:
        extra = None
        if args.json:  # the step's other numbers still exist: give them to scripts
            masked = rl.decode_step(
                args.model, args.gpu, args.batch, args.context, on_overflow="mask", **kwargs
            )
            extra = _step_dict(masked, args.weights)
            extra["include_communication"] = args.comm
            extra["binding"] = None  # no step runs, so nothing binds
        return _does_not_fit(args, "step", args.model, args.gpu, args.batch, args.context, json_extra=extra)

    d = _step_dict(s, args.weights)
    d["include_communication"] = args.comm
    d["achievable"] = _achievable_decode(args, args.batch, args.context, args.gpus, args.weights, args.kv)
    if args.json:
        print_json(d)
        return EXIT_OK

    g = rl.get_gpu(s.gpu_id)
    rows = [
        (
            "bytes read",
            f"{fmt_bytes(s.bytes_read)} (weights {fmt_bytes(s.weight_bytes_read)} + KV "
            f"{fmt_bytes(s.kv_bytes_read)})",
        ),
        (
            "FLOPs",
            f"{_fmt_flop(s.flops)} ({d['arithmetic_intensity_flop_per_byte']:.3g} FLOP/byte; "
            f"ridge point {d['ridge_point_flop_per_byte']:.0f})",
        ),
        ("memory time", _fmt_time(s.memory_time_s)),
        ("compute time", _fmt_time(s.compute_time_s)),
    ]
    if args.comm:
        rows.append(("communication", _fmt_time(s.communication_time_s)))
    if args.launch_overhead_ms:
        rows.append(("launch overhead", _fmt_time(s.launch_overhead_s)))
    rows += [
        ("step time", _fmt_time(s.step_time_s) + " (the ideal: a floor no engine beats)"),
        *_achievable_rows(d["achievable"]),
        ("binding", _binding_text(s)),
        (
            "tokens/s",
            f"{_fmt_count(s.tokens_per_s_per_user)} per user, {_fmt_count(s.tokens_per_s_total)} total",
        ),
        (
            "memory",
            f"{fmt_bytes(s.memory_needed_bytes)} needed of {fmt_bytes(s.memory_capacity_bytes)} an engine "
            f"leaves weights and KV on {fmt_capacity(g, args.gpus)}",
        ),
    ]
    print(
        f"decode step: {_setup(s.model_id, s.gpu_id, args.gpus)}, batch {args.batch}, context "
        f"{args.context:,} tokens, {_precisions(s.weight_precision, s.kv_precision, weights_defaulted(args))}"
    )
    print(_block(rows))
    return EXIT_OK


# --------------------------------------------------------------------------------------------------
# prefill
# --------------------------------------------------------------------------------------------------


def cmd_prefill(args) -> int:
    common = dict(num_gpus=args.gpus, weight_precision=args.weights, kv_precision=args.kv)
    try:
        # The prompt's KV has to sit beside the weights.
        rl.check_fits(args.model, args.gpu, 1, args.prompt, **common)
        p = rl.prefill(args.model, args.gpu, args.prompt, include_attention=not args.no_attention, **common)
    except rl.DoesNotFitError:
        return _does_not_fit(args, "prefill", args.model, args.gpu, 1, args.prompt, why=": no prompt pass")
    try:
        decode = rl.decode_step(args.model, args.gpu, 1, args.decode_context, **common)
    except rl.DoesNotFitError:
        why = ": no decode step to count the stall in"
        return _does_not_fit(args, "prefill", args.model, args.gpu, 1, args.decode_context, why=why)
    stalls = rl.stalled_decode_steps(p.time_s, decode.step_time_s)
    threshold = rl.compute_bound_prompt_tokens(args.model, args.gpu, args.weights)

    d = {
        "command": "prefill",
        **_fields(p, PREFILL_FIELDS),
        "weight_precision": args.weights,
        "kv_precision": args.kv,
        "include_attention": not args.no_attention,
        "decode_context_tokens": args.decode_context,
        "decode_step_time_s": decode.step_time_s,
        "stalled_decode_steps": stalls,
        "compute_bound_prompt_tokens": threshold,
        "achievable": _achievable_prefill(args, args.weights, args.kv),
    }
    d["prompt_tokens"], d["num_gpus"] = int(d["prompt_tokens"]), int(d["num_gpus"])
    if args.json:
        print_json(d)
        return EXIT_OK

    flops = _fmt_flop(p.flops)
    flops += (
        f" (of which attention {_fmt_flop(p.attention_flops)})"
        if not args.no_attention
        else " (2 × N × P; attention left out)"
    )
    rows = [
        ("FLOPs", flops),
        ("bytes moved", f"{fmt_bytes(p.bytes_moved)} (weights read once + the prompt's KV written)"),
        ("compute time", _fmt_time(p.compute_time_s)),
        ("memory time", _fmt_time(p.memory_time_s)),
        ("prefill time", _fmt_time(p.time_s) + " (the ideal: a floor no engine beats)"),
        *_achievable_rows(d["achievable"], "time_s"),
        ("binding", f"{p.binding}-bound"),
        (
            "stalls",
            f"{_fmt_count(stalls)} decode steps of {_fmt_time(decode.step_time_s)} "
            f"(batch-1 decode at context {args.decode_context:,}) if the prompt runs unchunked",
        ),
        (
            "compute-bound",
            f"above about {threshold:,.0f} prompt tokens at {args.weights} (attention and KV writes ignored)",
        ),
    ]
    print(
        f"prefill: {_setup(p.model_id, p.gpu_id, args.gpus)}, prompt {args.prompt:,} tokens, "
        f"{_precisions(args.weights, args.kv, weights_defaulted(args))}"
    )
    print(_block(rows))
    return EXIT_OK


# --------------------------------------------------------------------------------------------------
# fit
# --------------------------------------------------------------------------------------------------


def cmd_fit(args) -> int:
    prec = dict(weight_precision=args.weights, kv_precision=args.kv)
    m, g = rl.get_model(args.model), rl.get_gpu(args.gpu)
    rl.peak_flops_per_s(g, args.weights)  # same precision rule as step: no tensor-core math, no answer
    check_window(m, args.context, "a user holding this context")  # as step: no answer beyond the window
    largest = int(rl.max_batch(m, g, args.context, num_gpus=args.gpus, memory=args.memory, **prec))
    w = rl.weight_bytes(m, args.weights)
    per_token = rl.kv_bytes_per_token(m, args.kv)
    per_user = rl.kv_cache_bytes(1, args.context, per_token)
    have = rl.memory_available_bytes(g, args.gpus, args.memory)
    need_at_max = rl.memory_needed_bytes(m, largest, args.context, args.weights, args.kv)

    d = {
        "command": "fit",
        "model_id": m.id,
        "gpu_id": g.id,
        "num_gpus": args.gpus,
        "weight_precision": args.weights,
        "kv_precision": args.kv,
        "context_tokens": args.context,
        "weight_bytes": w,
        "kv_bytes_per_token": per_token,
        "kv_bytes_per_user": per_user,
        "memory_capacity_bytes": have,
        "gpu_memory_bytes": rl.memory_capacity_bytes(g, args.gpus),
        "memory_model": args.memory,
        "max_batch": largest,
        "memory_needed_at_max_batch_bytes": need_at_max,
        "batch": None,
        "memory_needed_bytes": None,
        "fits": None,
        "margin_bytes": None,
        "margin_users": None,
        # vLLM's memory budget assumes vLLM can run this split: say so when it would refuse it
        "tensor_parallel_problem": (tensor_parallel_problem(m, args.gpus, "vllm") or None)
        if args.memory == "engine"
        else None,
    }
    if args.batch is not None:
        need = rl.memory_needed_bytes(m, args.batch, args.context, args.weights, args.kv)
        ok = bool(rl.fits(m, g, args.batch, args.context, num_gpus=args.gpus, memory=args.memory, **prec))
        d.update(
            batch=args.batch,
            memory_needed_bytes=need,
            fits=ok,
            margin_bytes=have - need,
            margin_users=largest - args.batch,
        )
    code = EXIT_DOES_NOT_FIT if d["fits"] is False else EXIT_OK
    if args.json:
        print_json(d)
        return code

    rows = [
        ("weights", fmt_bytes(w)),
        (
            "KV cache per user",
            f"{fmt_bytes(per_user)} ({fmt_bytes(per_token)} per token × {args.context:,} tokens)",
        ),
        ("memory available", _available_text(have, g, args.gpus, args.memory, "; --memory ideal counts all")),
    ]
    if largest > 0:
        rows.append(("largest batch", f"{largest} users (needing {fmt_bytes(need_at_max)})"))
    else:
        rows.append(("largest batch", f"0: the weights alone need more than {fmt_bytes(have)}"))
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
    print(
        f"fit: {_setup(m.id, g.id, args.gpus)}, context {args.context:,} tokens, "
        f"{_precisions(args.weights, args.kv, weights_defaulted(args))}"
    )
    print(_block(rows))
    return code


def _register(sub, module_name: str) -> None:
    """Add the subcommands of one ``cli_<name>`` module; its ``run(args)`` handles them."""
    module = importlib.import_module(module_name)
    before = set(sub.choices)
    module.add_parser(sub)
    for name in set(sub.choices) - before:
        if sub.choices[name].get_default("handler") is None:
            sub.choices[name].set_defaults(handler=module.run)


def build_parser(command_modules: Iterable[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    """The argument parser: the built-in subcommands, then those of ``command_modules``."""
    parser = _Parser(
        prog="roofline",
        description="Roofline estimates of LLM inference speed, memory and cost (SI units inside; "
        "--json for scripts).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("step", help="one decode step: bytes, FLOPs, times, tokens/s, memory")
    add_common_arguments(p)
    p.add_argument("--batch", type=BATCH, default=1, help="users decoding together (default 1)")
    p.add_argument("--context", type=CONTEXT, default=0, help="tokens of KV each user holds (default 0)")
    p.add_argument(
        "--launch-overhead-ms",
        type=real_number(0, 1e6, "ms"),
        default=0.0,
        metavar="MS",
        help="CPU kernel-launch time added to every step, in ms (default 0)",
    )
    p.add_argument("--comm", action="store_true", help="add tensor-parallel all-reduce time")
    add_engine_argument(p)
    p.set_defaults(handler=cmd_step)

    p = sub.add_parser("prefill", help="one prompt pass, and how many decode steps it stalls")
    add_common_arguments(p)
    p.add_argument("--prompt", type=TOKENS, required=True, help="prompt length in tokens")
    p.add_argument(
        "--no-attention", action="store_true", help="leave out attention's P² FLOPs (2 × N × P only)"
    )
    p.add_argument(
        "--decode-context",
        type=CONTEXT,
        default=0,
        metavar="TOKENS",
        help="context of the batch-1 decode step the stall is counted in (default 0)",
    )
    add_engine_argument(p)
    p.set_defaults(handler=cmd_prefill)

    p = sub.add_parser("fit", help="memory needed vs available; the largest batch at a context")
    add_common_arguments(p)
    p.add_argument("--context", type=TOKENS, required=True, help="tokens of KV each user holds")
    p.add_argument(
        "--batch", type=BATCH, default=None, help="check this many users (exit 1 if they do not fit)"
    )
    p.add_argument(
        "--memory",
        choices=["engine", "ideal"],
        default="engine",
        help="engine: what an engine leaves weights and KV under vLLM's defaults (default); ideal: all of it",
    )
    p.set_defaults(handler=cmd_fit)

    for module_name in command_modules:
        _register(sub, module_name)
    return parser


def _default_weights(args) -> None:
    """``--weights`` left out: the model's release format (``default_weight_precision``), said in output."""
    args.weights_defaulted = ""
    if getattr(args, "weights", "") is None and getattr(args, "model", None):
        from roofline.physics.precision import default_weight_precision

        args.weights_defaulted = default_weight_precision(args.model)  # the release format
        args.weights = default_weight_precision(args.model, getattr(args, "gpu", None))  # what runs here


def main(argv: list[str] | None = None, command_modules: Iterable[str] | None = None) -> int:
    """Run the command line; return the exit code (never raises SystemExit itself).

    Every failure is reported the same way, whichever subcommand (built-in or from ``COMMAND_MODULES``)
    raised it: ``error: ...`` on stderr and, with ``--json``, ``{"command": ..., "error": {"type": ...,
    "message": ...}}`` on stdout. numpy floating-point trouble is an error too, never a stray warning.
    """
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    json_mode = "--json" in argv  # known before parsing, so argument errors can be JSON too
    command = None

    def fail(kind: str, message: str, extra=None) -> int:
        return _report_error(kind, message, json_mode=json_mode, command=command, extra=extra)

    try:
        parser = build_parser(COMMAND_MODULES if command_modules is None else command_modules)
        args, extra = parser.parse_known_args(argv)
        if extra:  # reported by the subcommand's parser, so the error names the command and its usage
            parser._subparsers._group_actions[0].choices[args.command].error(
                f"unrecognized arguments: {' '.join(extra)}"
            )
        command, json_mode = args.command, bool(getattr(args, "json", json_mode))
        _default_weights(args)
        with np.errstate(divide="raise", over="raise", invalid="raise", under="ignore"):
            return args.handler(args)
    except SystemExit as exc:  # argparse's --help (0)
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    except _UsageError as exc:  # argparse's own format on stderr: usage, then "prog: error: message"
        print(f"{exc.usage}{exc.prog}: error: {exc.message}", file=sys.stderr)
        command = exc.prog.split()[1] if " " in exc.prog else None  # "roofline step" -> "step"
        if json_mode:
            print_json({"command": command, "error": {"type": "UsageError", "message": exc.message}})
        return EXIT_ERROR
    except rl.UnknownNameError as exc:  # a misspelt id: the closest ones, for scripts too
        return fail(type(exc).__name__, str(exc), {"suggestions": exc.suggestions})
    except rl.RooflineError as exc:  # bad number, unsupported precision, does not fit, tables
        return fail(type(exc).__name__, str(exc))
    except (FloatingPointError, OverflowError) as exc:  # the numbers left float64's range
        return fail("InvalidConfigurationError", f"the numbers are too large to compute with ({exc})")
    except BrokenPipeError:  # `roofline list gpus | head`: the reader left; stop quietly
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return EXIT_OK
    except OSError as exc:
        return fail(type(exc).__name__, str(exc))
    except Exception as exc:  # a bug: say so, keep the traceback for the report, keep the JSON contract
        traceback.print_exc()
        message = f"internal error, please report it: {type(exc).__name__}: {exc}"
        _report_error("InternalError", message, json_mode=json_mode, command=command)
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
