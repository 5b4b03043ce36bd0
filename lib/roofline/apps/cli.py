"""``roofline``: the library's models from the shell, one subcommand per question; docs/cli.md describes
each command, every JSON field and the exit codes.

A command module (``cli_<command>``, registered in ``COMMAND_MODULES``) has ``add_parser(subparsers)`` and
``run(args) -> int``; it parses, calls the library and formats (SI units until printed, and in JSON). This
module keeps one error contract for all of them: exit code 0 on success, 1 for a valid answer that is
"no", 2 for bad input, 3 for a bug; every failure prints one ``error: ...`` line on stderr and, with
``--json``, ``{"command": ..., "error": {"type": ..., "message": ...}}`` on stdout.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Iterable

import numpy as np

import roofline as rl
from roofline.apps.cli_options import Parser, UsageError
from roofline.apps.cli_output import EXIT_ERROR, EXIT_INTERNAL, EXIT_OK, print_json, report_error
from roofline.engines import DEFAULT_ENGINE, default_engine
from roofline.physics.precision import default_weight_precision

# The command modules, in the order `roofline --help` lists them (each has add_parser and run).
COMMAND_MODULES: tuple[str, ...] = tuple(
    f"roofline.apps.cli_{name}"
    for name in ("step", "prefill", "fit", "cost", "list", "measure", "serve", "plan", "generate",
                 "speculate", "diagnose", "calibrate")
)  # fmt: skip


def build_parser(command_modules: Iterable[str] = COMMAND_MODULES) -> Parser:
    """The argument parser with the subcommands of ``command_modules``; ``parser.commands`` holds each
    subcommand's parser by name."""
    parser = Parser(
        prog="roofline",
        description="Roofline estimates of LLM inference speed, memory and cost (SI units inside; "
        "--json for scripts).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in command_modules:
        module = importlib.import_module(module_name)
        module.add_parser(sub)
        list(sub.choices.values())[-1].set_defaults(handler=module.run)  # the one it added
    parser.commands = sub.choices
    return parser


def _resolve_model(args) -> None:
    """``--model`` as an alias or a config.json path: the model it names, by its id (a config's model is
    added to the tables for this run, so every later lookup finds it)."""
    if getattr(args, "model", None):
        args.model = rl.get_model(args.model).id


def _default_engine(args) -> None:
    """``--engine`` left out: the engine people run on ``--gpu`` (``roofline.engines.default_engine``).
    A result file's runs keep their own tool's engine (``diagnose --from``)."""
    if not getattr(args, "engine_follows_gpu", False) or args.engine is not None:
        return
    if not getattr(args, "from_file", None):
        gpu = getattr(args, "gpu", None)
        args.engine = default_engine(rl.get_gpu(gpu)) if gpu else DEFAULT_ENGINE


def _default_weights(args) -> None:
    """``--weights`` left out: the model's release format (``default_weight_precision``), said in output."""
    args.weights_defaulted = ""
    if getattr(args, "weights", "") is None and getattr(args, "model", None):
        args.weights_defaulted = default_weight_precision(args.model)  # the release format
        args.weights = default_weight_precision(args.model, getattr(args, "gpu", None))  # what runs here


def main(argv: list[str] | None = None, command_modules: Iterable[str] | None = None) -> int:
    """Run the command line; return the exit code (never raises SystemExit itself). numpy floating-point
    trouble is an error too, never a stray warning."""
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    json_mode = "--json" in argv  # known before parsing, so argument errors can be JSON too
    command = None

    def fail(kind: str, message: str, extra=None) -> int:
        return report_error(kind, message, json_mode=json_mode, command=command, extra=extra)

    try:
        parser = build_parser(COMMAND_MODULES if command_modules is None else command_modules)
        args, extra = parser.parse_known_args(argv)
        if extra:  # reported by the subcommand's parser, so the error names the command and its usage
            parser.commands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
        command, json_mode = args.command, bool(getattr(args, "json", json_mode))
        _resolve_model(args)
        _default_weights(args)
        _default_engine(args)
        with np.errstate(divide="raise", over="raise", invalid="raise", under="ignore"):
            return args.handler(args)
    except SystemExit as exc:  # argparse's --help (0)
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    except UsageError as exc:  # argparse's own format on stderr: usage, then "prog: error: message"
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
        fail("InternalError", f"internal error, please report it: {type(exc).__name__}: {exc}")
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
