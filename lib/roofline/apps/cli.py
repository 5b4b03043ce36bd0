"""``roofline``: the library's models from the shell.

Subcommands built in here: ``step`` (one decode step), ``prefill`` (one prompt pass), ``fit`` (memory and
the largest batch), ``cost`` (dollars per million output tokens) and ``list`` (the data tables); the others
(``serve``, ``plan``, ``generate``, ``speculate``, ``diagnose``, ``measure``) live in ``cli_<name>``
modules. Every one takes ``--json`` for scripts. docs/cli.md describes each command and every JSON field.

This module only parses arguments, calls the library and formats what comes back; the physics is in the
other modules. Values stay in SI units (bytes, FLOP, seconds) until they are printed, and the JSON output
keeps them in SI.

Exit codes (the contract, tested; docs/cli.md has the table): 0 success; 1 a valid answer that is "no"
(``fit --batch``: does not fit; ``serve``: the load is unsustainable); 2 bad input (unknown name, a number
out of range, unsupported precision, a configuration that does not fit in memory, a broken data table,
argument errors); 3 an internal error (a bug). Every failure prints one ``error: ...`` line on stderr
(argument errors keep argparse's usage line before it) and, with ``--json``, ``{"command": ..., "error":
{"type": ..., "message": ...}}`` on stdout (``suggestions`` too for an unknown name).

More subcommands live in their own modules (``roofline.apps.cli_<name>``), each with
``add_parser(subparsers)`` and ``run(args) -> int``; ``COMMAND_MODULES`` registers them, one line each,
and they get the same error handling, exit codes and JSON errors as the built-in ones. They reuse
``add_common_arguments``, ``add_engine_argument``, the bounded types (``whole_number``, ``real_number``,
``GPUS``, ``TOKENS``, ...), ``usage_error``, ``check_window``, ``check_tensor_parallel`` and
``print_json`` from here.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import traceback
from collections.abc import Iterable
from dataclasses import asdict

import numpy as np

import roofline as rl
from roofline.data import default_price
from roofline.units import GB, MS, SECONDS_PER_HOUR, TB, TFLOPS, GiB, KiB, fmt_bytes, fmt_time

EXIT_OK = 0
EXIT_DOES_NOT_FIT = 1  # only `fit --batch`: a valid answer, "no"
EXIT_ERROR = 2  # bad input of any kind, including a configuration that does not fit
EXIT_INTERNAL = 3  # a bug: the traceback goes to stderr

# Sane ranges for the integer options: beyond them the roofline numbers mean nothing (a 10^38-GPU step
# of 10^-41 s) or float64 cannot hold them (a 400-digit batch).
MAX_BATCH = 10**7  # users
MAX_GPUS = 100_000
MAX_TOKENS = 10**8  # context or prompt length
MAX_REQUESTS = 1_000_000  # simulated requests (and closed-loop clients): memory and time stay bounded
MAX_REPLICAS = 1_000  # simulated workers: each is an object with its own queues
MAX_RATE_PER_S = 1e6  # requests per second
MAX_MS = 1e9  # an SLO or a measured time, in ms (11.6 days)
MAX_USD_PER_HOUR = 1e6

# Subcommand modules, one line each: "roofline.apps.cli_generate", ... (each has add_parser and run).
COMMAND_MODULES: tuple[str, ...] = (
    "roofline.apps.cli_measure",
    "roofline.apps.cli_serve",
    "roofline.apps.cli_plan",
    "roofline.apps.cli_generate",
    "roofline.apps.cli_speculate",
    "roofline.apps.cli_diagnose",
    "roofline.apps.cli_calibrate",
)


# --------------------------------------------------------------------------------------------------
# Display helpers (formatting only)
# --------------------------------------------------------------------------------------------------


def _fmt_flop(flop: float) -> str:
    """A FLOP count with a decimal prefix, three significant figures."""
    for unit, size in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if abs(flop) >= size:
            value = flop / size
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{flop:.0f} FLOP"


def _fmt_count(x: float) -> str:
    """Thousands separators; one decimal below 10, three significant figures below 1."""
    if x != x:  # NaN
        return "n/a"
    if abs(x) < 1:
        return f"{x:.3g}"
    if abs(x) < 10:
        return f"{x:.1f}"
    return f"{x:,.0f}"


def _fmt_time(seconds: float) -> str:
    """``fmt_time``, but in ns below a microsecond, so a tiny step never reads as "0.00 µs"."""
    if 0 < abs(seconds) < 1e-6:
        return f"{seconds * 1e9:.3g} ns"
    return fmt_time(seconds)


def _fmt_usd(x: float) -> str:
    return f"${x:,.2f}" if abs(x) >= 1 else f"${x:.3g}"


def _setup(model_id: str, gpu_id: str, num_gpus: int) -> str:
    return f"{model_id} on {num_gpus} × {gpu_id}"


def _precisions(weights: str, kv: str, defaulted: bool = False) -> str:
    return f"weights {weights_text(weights, defaulted)}, KV {kv}"


def weights_defaulted(args) -> bool:
    """Whether ``--weights`` was left to the model's release format (set by ``main``)."""
    return bool(getattr(args, "weights_defaulted", False))


def _block(rows: list[tuple[str, str]]) -> str:
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"  {label:<{width}}  {value}" for label, value in rows)


def _table(headers: list[str], rows: list[list[str]], right: set[int]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(
            (c.rjust(w) if i in right else c.ljust(w))
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def jsonable(value):
    """numpy scalars and arrays to plain Python; NaN and infinities to None (JSON has neither)."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def print_json(obj: dict) -> None:
    """One JSON object on stdout: SI units, NaN and infinities as null."""
    print(json.dumps(jsonable(obj), indent=2, allow_nan=False, ensure_ascii=False))


def _report_error(
    kind: str,
    message: str,
    *,
    json_mode: bool,
    command: str | None,
    detail: str = "",
    fields=None,
    extra=None,
) -> int:
    """An error on stderr (``error: ...``) and, with --json, as a JSON object on stdout; exit code 2.
    ``fields`` go beside ``error`` (the memory numbers of a does-not-fit), ``extra`` inside it."""
    print(f"error: {message}" + (f"\n{detail}" if detail else ""), file=sys.stderr)
    if json_mode:
        error = {"type": kind, "message": message, **(extra or {})}
        print_json({"command": command, **(fields or {}), "error": error})
    return EXIT_ERROR


def _shown(text: str) -> str:
    """An argument as typed, shortened if it is very long (a 400-digit number)."""
    text = text.strip()
    return repr(text) if len(text) <= 24 else f"{text[:12]!r}... ({len(text)} characters)"


class _Bounded:
    """An argparse ``type``: a number in a range, or a message saying the range (never a traceback)."""

    def __init__(self, parse, least, most, unit: str, above: bool = False, below: bool = False):
        self.parse, self.least, self.most, self.unit = parse, least, most, unit
        self.above, self.below = above, below  # exclude the lower or the upper bound
        self.__name__ = "int" if parse is int else "number"  # argparse names the type in its messages

    def range_text(self) -> str:
        fmt = (lambda x: f"{x:,}") if self.parse is int else (lambda x: f"{x:g}")
        low = f"more than {fmt(self.least)}" if self.above else f"at least {fmt(self.least)}"
        high = f"less than {fmt(self.most)}" if self.below else f"at most {fmt(self.most)}"
        if not (self.above or self.below):
            return f"from {fmt(self.least)} to {fmt(self.most)} {self.unit}".rstrip()
        return f"{low} and {high} {self.unit}".rstrip()

    def __call__(self, text: str):
        kind = "a whole number" if self.parse is int else "a number"
        try:
            value = self.parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid {self.__name__} value: {_shown(text)} (expected {kind} {self.range_text()})"
            ) from None
        if self.parse is float and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not a finite number")
        low_ok = value > self.least if self.above else value >= self.least
        high_ok = value < self.most if self.below else value <= self.most
        if not (low_ok and high_ok):
            raise argparse.ArgumentTypeError(f"must be {kind} {self.range_text()}, got {_shown(text)}")
        return value


def whole_number(least: int, most: int, unit: str = "") -> _Bounded:
    """An argparse type for an integer option in [least, most], e.g. ``whole_number(1, MAX_BATCH, "users")``.

    >>> whole_number(1, 10, "users")("3")
    3
    >>> whole_number(1, 10, "users")("9" * 400)
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a whole number from 1 to 10 users, got ... (400 characters)
    """
    return _Bounded(int, least, most, unit)


def real_number(
    least: float, most: float, unit: str = "", *, above: bool = False, below: bool = False
) -> _Bounded:
    """An argparse type for a finite float option in [least, most] (``above``: strictly more than least;
    ``below``: strictly less than most).

    >>> real_number(0, 1e6, "USD")("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'nan' is not a finite number
    >>> real_number(0, 1, below=True)("1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a number at least 0 and less than 1, got '1'
    """
    return _Bounded(float, least, most, unit, above, below)


class _UsageError(Exception):
    """An argument error, raised instead of argparse's print-and-exit so --json can report it."""

    def __init__(self, message: str, prog: str, usage: str):
        super().__init__(message)
        self.message, self.prog, self.usage = message, prog, usage


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse calls this for every usage error
        raise _UsageError(message, self.prog, self.format_usage())


def usage_error(command: str, message: str) -> Exception:
    """An argument error a subcommand finds after parsing (options that do not go together): raise it, and
    ``main`` reports it like argparse's own (exit code 2, JSON type ``UsageError``)."""
    return _UsageError(message, f"roofline {command}", "")


# --------------------------------------------------------------------------------------------------
# Checks and texts every model command shares
# --------------------------------------------------------------------------------------------------


def check_window(model, tokens: int, what: str) -> None:
    """Refuse ``tokens`` (a request's prompt + answer, or the context a user holds) beyond the model's
    context window (``max_context_tokens``), as ``decode_step`` does: ``ContextTooLongError``.

    >>> check_window("llama-3-8b", 100_001, "a request of 100,000 prompt + 1 output tokens")
    Traceback (most recent call last):
    ...
    roofline.errors.ContextTooLongError: llama-3-8b reads at most 8,192 tokens of context; a request of ...
    """
    m = rl.get_model(model)
    if tokens > m.max_context_tokens:
        raise rl.ContextTooLongError(
            f"{m.id} reads at most {m.max_context_tokens:,} tokens of context; {what} needs {tokens:,}. "
            "Use a shorter context or a long-context model."
        )


# vLLM splits the attention heads evenly over the tensor-parallel GPUs and refuses a size that does not divide
# them ("Total number of attention heads (32) must be divisible by tensor parallel size (3)",
# https://github.com/vllm-project/vllm/blob/main/vllm/config/model.py); SGLang and TensorRT-LLM split
# heads the same way. The roofline (the ideal) splits the work evenly whatever the count.
def tensor_parallel_problem(model, num_gpus: int, engine, parallel: str | None = None) -> str:
    """Why a real engine cannot run ``model`` tensor-parallel over ``num_gpus`` GPUs, or "" if it can.

    >>> tensor_parallel_problem("llama-3-8b", 3, "vllm")[:60]
    'tensor parallel over 3 GPUs does not divide the 32 attention'
    >>> tensor_parallel_problem("llama-3-8b", 3, "ideal"), tensor_parallel_problem("llama-3-8b", 8, "vllm")
    ('', '')
    """
    from roofline.engines import get_engine

    m, e = rl.get_model(model), get_engine(engine)
    if e.kind == "ideal" or (parallel or e.parallel) != "tensor" or m.attention_heads % num_gpus == 0:
        return ""
    ok = [n for n in range(1, m.attention_heads + 1) if m.attention_heads % n == 0]
    return (
        f"tensor parallel over {num_gpus:,} GPUs does not divide the {m.attention_heads} attention heads of "
        f"{m.id}: {e.name} splits heads evenly and refuses this size (use {', '.join(map(str, ok))} GPUs)"
    )


def check_tensor_parallel(model, num_gpus: int, engine, parallel: str | None = None) -> None:
    """Refuse (``InvalidConfigurationError``) a tensor-parallel size the engine cannot run."""
    problem = tensor_parallel_problem(model, num_gpus, engine, parallel)
    if problem:
        raise rl.InvalidConfigurationError(problem[0].upper() + problem[1:] + ".")


def check_pipeline(model, stages: int, what: str = "--pipeline-stages") -> None:
    """Refuse more pipeline stages than the model has layers (a stage holds at least one layer)."""
    m = rl.get_model(model)
    if stages > m.layers:
        raise rl.InvalidConfigurationError(
            f"{what} {stages:,} is more than the {m.layers} layers of {m.id}: a pipeline stage holds at "
            "least one layer"
        )


def fmt_capacity(gpu, num_gpus: int = 1) -> str:
    """A GPU's memory as its data sheet says it and in decimal bytes: "80 GiB (85.9 GB)", "2 × 80 GiB
    (172 GB)"; rows sized in decimal GB print once: "24 GB".

    >>> fmt_capacity("h100-sxm"), fmt_capacity("h100-sxm", 2)
    ('80 GiB (85.9 GB)', '2 × 80 GiB (172 GB)')
    """
    g = rl.get_gpu(gpu)
    each = g.memory_bytes / (GiB if g.memory_binary else GB)
    sheet = f"{each:g} GiB" if g.memory_binary else f"{each:g} GB"
    times = f"{num_gpus:,} × " if num_gpus != 1 else ""
    decimal = f" ({fmt_bytes(num_gpus * g.memory_bytes)})" if g.memory_binary else ""
    return f"{times}{sheet}{decimal}"


def weights_text(weights: str, defaulted: bool) -> str:
    """The weight precision as output says it: "bf16 as released" when it was not given (the model's release
    format, ``default_weight_precision``)."""
    return f"{weights} as released" if defaulted else weights


def price_of(gpu, usd_per_hour: float | None = None, price_id: str | None = None):
    """(USD per GPU-hour, the price row or None): ``usd_per_hour`` if given, else the row ``price_id``,
    else the GPU's default price (``roofline.data.default_price``); (None, None) for a GPU with no price.

    >>> price_of("l4")[0], price_of("l4", 2.0)
    (0.8048, (2.0, None))
    """
    if usd_per_hour is not None:
        return usd_per_hour, None
    row = rl.get_price(price_id) if price_id else default_price(gpu)
    return (row.usd_per_gpu_hour, row) if row is not None else (None, None)


def price_text(usd_per_gpu_hour: float, row, num_gpus: int) -> str:
    """ "$3.00 per GPU-hour × 1 GPU (h100-example-3usd: course example, 2026-11-29)"; for a GPU people buy,
    "owned: ..." says the hourly figure is purchase and power spread over its life."""
    text = f"{_fmt_usd(usd_per_gpu_hour)} per GPU-hour × {num_gpus:,} GPU{'s' if num_gpus != 1 else ''}"
    if row is not None:
        how = "owned: purchase and power spread over its life, " if row.kind == "own" else ""
        text += f" ({row.id}: {how}{row.provider}, {row.date})"
    return text


# --------------------------------------------------------------------------------------------------
# step
# --------------------------------------------------------------------------------------------------


# The JSON fields each command promises (docs/cli.md), in order: picked by name from the library's result,
# so a field the library adds does not change the CLI's output and a field it renames fails the tests.
STEP_FIELDS = (
    "model_id", "gpu_id", "weight_precision", "kv_precision", "num_gpus", "batch", "context_tokens",
    "weight_bytes_read", "kv_bytes_read", "bytes_read", "flops", "memory_time_s", "compute_time_s",
    "communication_time_s", "launch_overhead_s", "step_time_s", "binding", "memory_needed_bytes",
    "memory_capacity_bytes", "fits", "tokens_per_s_per_user", "tokens_per_s_total",
)  # fmt: skip
PREFILL_FIELDS = (
    "model_id", "gpu_id", "prompt_tokens", "num_gpus", "flops", "attention_flops", "bytes_moved",
    "compute_time_s", "memory_time_s", "time_s", "binding",
)  # fmt: skip


def _fields(result, names: tuple[str, ...]) -> dict:
    """The named fields of a library result (``to_dict`` where it has one, else attributes)."""
    d = result.to_dict()
    return {name: d[name] if name in d else getattr(result, name) for name in names}


def _step_dict(s: rl.Step, peak_precision: str) -> dict:
    gpu = rl.get_gpu(s.gpu_id)
    d = {"command": "step", **_fields(s, STEP_FIELDS)}
    for key in ("num_gpus", "batch", "context_tokens"):  # counts: print them as integers
        d[key] = int(d[key])
    d["include_communication"] = None  # filled in by the caller
    d["arithmetic_intensity_flop_per_byte"] = s.arithmetic_intensity_flop_per_byte
    d["ridge_point_flop_per_byte"] = rl.ridge_point_flop_per_byte(
        rl.peak_flops_per_s(gpu, peak_precision), gpu.memory_bandwidth_bytes_per_s
    )
    return d


def _available_text(have: float, gpu, num_gpus: int, memory: str, hint: str = "") -> str:
    """What "memory available" means: the engine's budget for weights and KV, or all of it."""
    total = fmt_capacity(gpu, num_gpus)
    if memory == "ideal":
        return f"{fmt_bytes(have)} (all of {total})"
    return (
        f"{fmt_bytes(have)} for weights and KV (of {total}: vLLM's defaults leave the rest to activations "
        f"and the runtime{hint})"
    )


def _does_not_fit_lines(model, gpu, batch, context, num_gpus, weights, kv) -> tuple[str, dict]:
    """The numbers behind a does-not-fit error, as text and as fields."""
    need = rl.memory_needed_bytes(model, batch, context, weights, kv)
    have = rl.memory_available_bytes(gpu, num_gpus)
    w = rl.weight_bytes(model, weights)
    kv_total = rl.kv_cache_bytes(batch, context, rl.kv_bytes_per_token(model, kv))
    largest = rl.max_batch(
        model, gpu, max(context, 1), num_gpus=num_gpus, weight_precision=weights, kv_precision=kv
    )
    rows = [
        ("memory needed", f"{fmt_bytes(need)} (weights {fmt_bytes(w)} + KV {fmt_bytes(kv_total)})"),
        ("memory available", _available_text(have, gpu, num_gpus, "engine")),
        ("short by", fmt_bytes(need - have)),
    ]
    if largest > 0:
        rows.append(("largest batch", f"{largest} users at {max(context, 1):,} tokens of context"))
    else:
        rows.append(("largest batch", "0: the weights alone do not fit"))
    text = _block(rows) + "\nFewer users, a shorter context, a smaller precision or more GPUs would help."
    fields = {
        "memory_needed_bytes": need,
        "memory_capacity_bytes": have,
        "weight_bytes": w,
        "kv_cache_bytes": kv_total,
        "max_batch": largest,
        "fits": False,
    }
    return text, fields


def _does_not_fit(args, command, model, gpu, batch, context, *, why: str = "", json_extra=None) -> int:
    """Report a configuration whose weights plus KV cache exceed the GPUs' memory (exit code 2).

    stderr gets the human explanation; with --json, stdout gets the memory numbers and the error object
    (``json_extra``, e.g. the masked step of ``step``, goes first).
    """
    weights, kv, num_gpus = args.weights, args.kv, args.gpus
    text, fields = _does_not_fit_lines(model, gpu, batch, context, num_gpus, weights, kv)
    m, g = rl.get_model(model), rl.get_gpu(gpu)
    head = (
        f"{_setup(m.id, g.id, num_gpus)} does not fit at batch {batch}, context "
        f"{context:,} tokens ({_precisions(weights, kv, weights_defaulted(args))}){why}."
    )
    json_fields = {**(json_extra or {}), **fields}
    json_fields.pop("command", None)
    json_fields.pop("error", None)
    return _report_error(
        "DoesNotFitError", head, json_mode=args.json, command=command, detail=text, fields=json_fields
    )


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
        ("binding", f"{s.binding}-bound"),
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
# The achievable figure next to the ideal one (roofline.engines, calibrated on published runs)
# --------------------------------------------------------------------------------------------------


def add_engine_argument(p, what: str = "the achievable figure") -> None:
    """``--engine``: a real engine by default (``roofline.engines.DEFAULT_ENGINE``); a misspelt name is an
    ``UnknownNameError`` naming the closest engines."""
    from roofline.engines import DEFAULT_ENGINE

    # Not the engine list itself: building the parser must not read the user's tables (a broken one is
    # reported by the command that uses it, and `measure --save` checks its destination first).
    p.add_argument(
        "--engine",
        default=DEFAULT_ENGINE,
        metavar="ENGINE",
        help=f"engine whose calibrated efficiency gives {what} (default {DEFAULT_ENGINE}; "
        "`roofline list engines` lists them, yours included)",
    )


def coverage_fields(engine, model, gpu, batch, num_gpus, weights, *, parallel=None, **lengths) -> dict:
    """``extrapolated`` and ``extrapolation_reasons`` of an engine's figure (``roofline.engines.coverage``),
    plus a tensor-parallel size the engine would refuse (the figure then splits the work evenly)."""
    from roofline.engines import coverage, get_engine

    m, g = rl.get_model(model), rl.get_gpu(gpu)
    inp, outp = lengths.get("input_tokens"), lengths.get("output_tokens")
    extrapolated, reasons = coverage(get_engine(engine).id, g.id, m.id, batch, inp, outp, num_gpus, weights,
                                     context_tokens=lengths.get("context_tokens"))  # fmt: skip
    problem = tensor_parallel_problem(m, num_gpus, engine, parallel)
    if problem:
        reasons = [*reasons, problem + "; the figure splits the work evenly"]
    return {"extrapolated": bool(extrapolated or problem), "extrapolation_reasons": reasons}


def _coverage(args, model, gpu, batch, num_gpus, weights, **lengths) -> dict:
    return coverage_fields(args.engine, model, gpu, batch, num_gpus, weights, **lengths)


def _achievable_decode(args, batch, context, num_gpus, weights, kv, gpu=None) -> dict:
    """The calibrated decode step next to the ideal one: the ``achievable`` JSON object."""
    from roofline import engines

    launch_s = (
        getattr(args, "launch_overhead_ms", 0.0) * MS
    )  # a CPU that cannot hide launches slows any engine
    t = engines.decode_step_times(
        args.model, gpu or args.gpu, batch, context, num_gpus=num_gpus, weight_precision=weights,
        kv_precision=kv, engine=args.engine, launch_overhead_s=launch_s,
    )  # fmt: skip
    step = float(t["total"])
    return {
        "engine": engines.get_engine(args.engine).id,
        "step_time_s": step,
        "tokens_per_s_per_user": 1.0 / step,
        "tokens_per_s_total": batch / step,
        "calibration": _display_calibration(),
        **_coverage(args, args.model, gpu or args.gpu, batch, num_gpus, weights, context_tokens=context),
    }


def _achievable_prefill(args, weights, kv) -> dict:
    from roofline import engines

    t = engines.prefill_times(
        args.model, args.gpu, args.prompt, num_gpus=args.gpus, weight_precision=weights, kv_precision=kv,
        engine=args.engine,
    )  # fmt: skip
    return {
        "engine": engines.get_engine(args.engine).id,
        "time_s": float(t["total"]),
        "calibration": _display_calibration(),
        **_coverage(args, args.model, args.gpu, 1, args.gpus, weights, input_tokens=args.prompt),
    }


def _display_calibration() -> str:
    from roofline.data import data_dir

    return str(data_dir()).rsplit("/", 1)[-1] + "/calibration.toml"


def _achievable_rows(a: dict, time_key: str = "step_time_s") -> list[tuple[str, str]]:
    text = f"{_fmt_time(a[time_key])}"
    if "tokens_per_s_per_user" in a:
        text += f", {_fmt_count(a['tokens_per_s_per_user'])} tokens/s per user"
    rows = [(f"achievable ({a['engine']})", text + " (a calibrated engine; the ideal is the floor)")]
    return rows + extrapolation_rows(a)


def extrapolation_rows(a: dict) -> list[tuple[str, str]]:
    """The text row saying an engine's figure leaves its calibrated range, and why (none if it does not)."""
    return [("  extrapolated", "; ".join(a["extrapolation_reasons"]))] if a.get("extrapolated") else []


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
    print(
        f"fit: {_setup(m.id, g.id, args.gpus)}, context {args.context:,} tokens, "
        f"{_precisions(args.weights, args.kv, weights_defaulted(args))}"
    )
    print(_block(rows))
    return code


# --------------------------------------------------------------------------------------------------
# cost
# --------------------------------------------------------------------------------------------------


def cmd_cost(args, parser) -> int:
    model_args = [("--model", args.model), ("--gpu", args.gpu), ("--batch", args.batch),
                  ("--context", args.context), ("--weights", args.weights), ("--kv", args.kv)]  # fmt: skip
    given = [flag for flag, v in model_args if v is not None]
    if args.tokens_per_s is not None:
        if given:
            parser.error(
                f"--tokens-per-s does not go with {', '.join(given)}: give either a throughput "
                "or a model and GPU to model one"
            )
        if args.usd_per_hour is None and args.price is None:
            parser.error("a throughput has no GPU to take a price from: give --usd-per-hour or --price")
        usd_per_gpu_hour, price = price_of(None, args.usd_per_hour, args.price)
        d, step = {"command": "cost", "mode": "throughput"}, None
        tps = args.tokens_per_s
    else:
        gpu = args.gpu or (rl.get_price(args.price).gpu if args.price else None)
        if not args.model or not gpu:
            parser.error("give --tokens-per-s, or --model and --gpu (the GPU may come from --price)")
        args.kv = args.kv or "bf16"
        usd_per_gpu_hour, price = price_of(gpu, args.usd_per_hour, args.price)
        if usd_per_gpu_hour is None:
            parser.error(f"GPU {rl.get_gpu(gpu).id} has no price in data/prices.toml: give --usd-per-hour")
        if price and rl.get_gpu(gpu).id != price.gpu:
            print(
                f"warning: price {price.id!r} is for {price.gpu}, not {rl.get_gpu(gpu).id}", file=sys.stderr
            )
        try:
            d, step = _cost_of_model(args, gpu, usd_per_gpu_hour)
        except rl.DoesNotFitError:
            batch, context = args.batch or 1, args.context or 0
            why = ": no throughput to price"
            return _does_not_fit(args, "cost", args.model, gpu, batch, context, why=why)
        tps = step.tokens_per_s_total

    usd = rl.cost_per_million_tokens_usd(usd_per_gpu_hour, tps, args.gpus)
    d.update(
        {
            "num_gpus": args.gpus,
            "usd_per_gpu_hour": usd_per_gpu_hour,
            "price_id": price.id if price else None,
            "price_kind": price.kind if price else None,
            "tokens_per_s_total": tps,
            "tokens_per_hour": rl.tokens_per_hour(tps),
            "seconds_per_million_tokens": rl.seconds_per_million_tokens(tps),
            "usd_per_million_tokens": usd,
        }
    )
    if args.json:
        print_json(d)
    else:
        _print_cost(args, d, step, price)
    return EXIT_OK


def _cost_of_model(args, gpu, usd_per_gpu_hour) -> tuple[dict, rl.Step]:
    """Model mode of ``cost``: the ideal decode step and the engine's, priced (raises ``DoesNotFitError``)."""
    batch = 1 if args.batch is None else args.batch
    context = 0 if args.context is None else args.context
    weights, kv, num_gpus = args.weights, args.kv, args.gpus
    step = rl.decode_step(args.model, gpu, batch, context, num_gpus=num_gpus, weight_precision=weights,
                          kv_precision=kv)  # fmt: skip
    d = {
        "command": "cost",
        "mode": "model",
        "model_id": step.model_id,
        "gpu_id": step.gpu_id,
        "weight_precision": weights,
        "kv_precision": kv,
        "batch": batch,
        "context_tokens": context,
        "step_time_s": step.step_time_s,
        "binding": step.binding,
        "tokens_per_s_per_user": step.tokens_per_s_per_user,
    }
    real = _achievable_decode(args, batch, context, num_gpus, weights, kv, gpu=gpu)
    real["usd_per_million_tokens"] = rl.cost_per_million_tokens_usd(
        usd_per_gpu_hour, real["tokens_per_s_total"], num_gpus
    )
    d["achievable"] = real
    return d, step


def _print_cost(args, d: dict, step, price) -> None:
    tps, num_gpus, usd = d["tokens_per_s_total"], d["num_gpus"], d["usd_per_million_tokens"]
    if step is not None:
        real = d["achievable"]
        print(
            f"cost: {_setup(step.model_id, step.gpu_id, num_gpus)}, batch {d['batch']}, context "
            f"{d['context_tokens']:,} tokens, "
            f"{_precisions(d['weight_precision'], d['kv_precision'], weights_defaulted(args))}"
        )
        rows = [
            ("step time", f"{_fmt_time(step.step_time_s)} ({step.binding}-bound) ideal; "
                          f"{_fmt_time(real['step_time_s'])} {real['engine']}"),
            ("throughput", f"{_fmt_count(tps)} tokens/s total ({_fmt_count(step.tokens_per_s_per_user)} per "
                           f"user) ideal; {_fmt_count(real['tokens_per_s_total'])} {real['engine']}"),
        ]  # fmt: skip
    else:
        print(f"cost: {_fmt_count(tps)} tokens/s on {num_gpus} GPU{'s' if num_gpus > 1 else ''}")
        rows = [("throughput", f"{_fmt_count(tps)} tokens/s total")]
    spm = d["seconds_per_million_tokens"]
    rows += [
        ("price", price_text(d["usd_per_gpu_hour"], price, num_gpus)),
        ("tokens per hour", _fmt_count(d["tokens_per_hour"])),
        ("1M tokens take", f"{_fmt_count(spm)} s ({spm / SECONDS_PER_HOUR:.3g} h)"),
    ]
    if step is None:
        rows.append(("cost", f"{_fmt_usd(usd)} per million output tokens"))
    else:
        rows += [
            ("cost (ideal)", f"{_fmt_usd(usd)} per million output tokens (the floor: no engine is cheaper)"),
            (f"cost ({real['engine']})", f"{_fmt_usd(real['usd_per_million_tokens'])} per million output "
                                         "tokens (achievable, calibrated on published runs)"),
            *extrapolation_rows(real),
        ]  # fmt: skip
    print(_block(rows))


# --------------------------------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------------------------------


def _ridge(gpu, precision: str):
    try:
        peak = rl.peak_flops_per_s(gpu, precision)
    except rl.UnsupportedPrecisionError:
        return None, None
    return peak, rl.ridge_point_flop_per_byte(peak, gpu.memory_bandwidth_bytes_per_s)


def cmd_list(args) -> int:
    prec = args.precision
    rl.get_precision(prec)
    if args.what == "gpus":
        items = []
        for g in rl.gpus().values():
            item = asdict(g)
            item["ridge_point_flop_per_byte"] = {
                k: rl.ridge_point_flop_per_byte(v, g.memory_bandwidth_bytes_per_s)
                for k, v in g.dense_flops_per_s.items()
            }
            usd, row = price_of(g)
            item.update(
                usd_per_gpu_hour=usd, price_id=row.id if row else None, price_kind=row.kind if row else None
            )
            items.append(item)
        if args.json:
            print_json({"command": "list", "what": "gpus", "items": items})
            return EXIT_OK
        rows = []
        for g, item in zip(rl.gpus().values(), items, strict=True):
            peak, ridge = _ridge(g, prec)
            usd = item["usd_per_gpu_hour"]
            rows.append(
                [
                    g.id,
                    fmt_capacity(g),  # as the data sheet prints it (80 GiB of HBM), and in decimal bytes
                    f"{g.memory_bandwidth_bytes_per_s / TB:g}",
                    "-" if peak is None else f"{peak / TFLOPS:g}",
                    "-" if ridge is None else f"{ridge:.0f}",
                    f"{g.interconnect_bytes_per_s / GB:g}",
                    f"{g.power_w:g}",
                    "-" if usd is None else f"{usd:.2f}" + (" own" if item["price_kind"] == "own" else ""),
                    g.source,
                ]
            )
        headers = ["id", "memory", "bandwidth TB/s", f"{prec} TFLOPS", "ridge FLOP/byte", "link GB/s",
                   "power W", "$/GPU-hour", "source"]  # fmt: skip
        print(_table(headers, rows, right={1, 2, 3, 4, 5, 6, 7}))
        print(
            f"(dense peaks; ridge point = {prec} peak ÷ memory bandwidth, computed; memory as the data sheet "
            "prints it, binary-sized for HBM and GDDR (80 GB = 80 GiB), with decimal GB in brackets; "
            "$/GPU-hour: the GPU's default price, a listed rental or, marked own, purchase and power spread "
            "over its life: `roofline list prices`)"
        )
        return EXIT_OK

    if args.what == "models":
        items = []
        for m in rl.models().values():
            item = asdict(m)
            item.update(
                parameter_count=rl.parameter_count(m),
                active_parameter_count=rl.active_parameter_count(m),
                weight_bytes=rl.weight_bytes(m, prec),
                kv_bytes_per_token=rl.kv_bytes_per_token(m, prec),
            )
            items.append(item)
        if args.json:
            print_json({"command": "list", "what": "models", "precision": prec, "items": items})
            return EXIT_OK
        rows = [
            [
                i["id"],
                f"{i['parameter_count'] / 1e9:.2f}",
                f"{i['active_parameter_count'] / 1e9:.2f}",
                f"{i['published_parameters'] / 1e9:.2f}",
                str(i["layers"]),
                f"{i['attention_heads']}/{i['kv_heads']}",
                f"{i['kv_bytes_per_token'] / KiB:g}",
                f"{i['weight_bytes'] / GB:.1f}",
                f"{i['max_context_tokens']:,}",
                i["source"],
            ]
            for i in items
        ]
        headers = [
            "id",
            "params B",
            "active B",
            "published B",
            "layers",
            "heads/kv",
            f"KV KiB/token {prec}",
            f"weights GB {prec}",
            "max context",
            "source",
        ]
        print(_table(headers, rows, right={1, 2, 3, 4, 6, 7, 8}))
        print("(params and active params derived from the architecture; published = the publisher's count)")
        return EXIT_OK

    if args.what == "engines":
        return _list_engines(args)

    items = [asdict(p) for p in rl.prices().values()]
    if args.json:
        print_json({"command": "list", "what": "prices", "items": items})
        return EXIT_OK
    rows = [
        [p["id"], p["gpu"], f"{p['usd_per_gpu_hour']:.2f}", p["kind"], p["provider"], p["date"], p["source"]]
        for p in items
    ]
    print(_table(["id", "gpu", "$/GPU-hour", "kind", "provider", "date", "source"], rows, right={2}))
    print(
        "(dated examples, not quotes: check the source before relying on one; kind own: a GPU people buy, "
        "its purchase price and power spread over its life, data/assumptions.toml; a GPU's first row is its "
        "default)"
    )
    return EXIT_OK


def _list_engines(args) -> int:
    """`roofline list engines`: the engines of data/engines.toml (and yours), each with its release."""
    from roofline.engines import engine_ids, get_engine

    items = []
    for e in engine_ids():
        row = asdict(get_engine(e))
        row["kernels_timed"] = bool(row.get("kernels"))
        items.append(row)
    if args.json:
        print_json({"command": "list", "what": "engines", "items": items})
        return EXIT_OK
    rows = [[i["id"], i["kind"], i["parallel"], i["kernels"] or "-", i["version"]] for i in items]
    print(
        _table(
            ["id", "kind", "splits a model", "kernels timed", "release its numbers describe"],
            rows,
            right=set(),
        )
    )
    print(
        "(`--engine ID` in step, prefill, cost, generate, serve, speculate, diagnose; the ideal is the floor)"
    )
    return EXIT_OK


# --------------------------------------------------------------------------------------------------
# argument parsing
# --------------------------------------------------------------------------------------------------


def _lower(text: str) -> str:
    return text.strip().lower()


BATCH = whole_number(1, MAX_BATCH, "users")
GPUS = whole_number(1, MAX_GPUS, "GPUs")
CONTEXT = whole_number(0, MAX_TOKENS, "tokens")
TOKENS = whole_number(1, MAX_TOKENS, "tokens")  # a prompt, or a context that must hold something


def add_price_arguments(p) -> None:
    """``--usd-per-hour`` or ``--price`` (at most one); neither: the GPU's default price."""
    price = p.add_mutually_exclusive_group()
    price.add_argument(
        "--usd-per-hour",
        type=real_number(0, MAX_USD_PER_HOUR, "USD"),
        metavar="USD",
        help="price of one GPU-hour in US dollars (default: the GPU's own price, see `roofline list gpus`)",
    )
    price.add_argument(
        "--price", type=_lower, metavar="ID", help="a price row id instead (see `roofline list prices`)"
    )


def weights_help() -> str:
    """``--weights`` help: the default and every precision and preset that works."""
    from roofline.physics.precision import PRECISIONS, WEIGHT_FORMATS

    return (
        "weight precision (default: the model's release format, its checkpoint_format in `roofline list "
        f"models --json`): {', '.join(PRECISIONS)}, or a per-tensor preset: {', '.join(WEIGHT_FORMATS)}"
    )


def add_common_arguments(
    p, *, precisions: bool = True, json_: bool = True, required: bool = True, kv_default: str | None = "bf16"
) -> None:
    """--model, --gpu, --gpus, --weights, --kv and --json, as every model command spells them. ``--weights``
    left out is the model's release format (``main`` fills it in and sets ``args.weights_defaulted``)."""
    p.add_argument(
        "--model", type=_lower, required=required, default=None, help="model id (see `roofline list models`)"
    )
    p.add_argument(
        "--gpu", type=_lower, required=required, default=None, help="GPU id (see `roofline list gpus`)"
    )
    p.add_argument(
        "--gpus",
        type=GPUS,
        default=1,
        metavar="N",
        help=f"GPUs in tensor parallel (default 1, at most {MAX_GPUS:,})",
    )
    if precisions:
        p.add_argument("--weights", type=_lower, default=None, metavar="PRECISION", help=weights_help())
        p.add_argument(
            "--kv",
            type=_lower,
            default=kv_default,
            metavar="PRECISION",
            help="KV-cache precision (default bf16)",
        )
    if json_:
        p.add_argument("--json", action="store_true", help="print a JSON object (SI units), errors included")


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

    p = sub.add_parser("cost", help="dollars per million output tokens, ideal and achievable")
    add_common_arguments(p, required=False, kv_default=None)
    p.add_argument("--batch", type=BATCH, default=None, help="users decoding together (default 1)")
    p.add_argument("--context", type=CONTEXT, default=None, help="tokens of KV each user holds (default 0)")
    p.add_argument(
        "--tokens-per-s",
        type=real_number(0, 1e12, "tokens/s", above=True),
        default=None,
        metavar="RATE",
        help="a throughput to price directly (all GPUs together), instead of a model",
    )
    add_price_arguments(p)
    add_engine_argument(p)
    p.set_defaults(handler=lambda args, cost_parser=p: cmd_cost(args, cost_parser))

    p = sub.add_parser("list", help="the GPU, model and price tables")
    p.add_argument("what", choices=["gpus", "models", "prices", "engines"])
    p.add_argument(
        "--precision",
        type=_lower,
        default="bf16",
        help="precision for the peak/ridge (gpus) or bytes (models) columns (default bf16)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON object (SI units), errors included")
    p.set_defaults(handler=cmd_list)

    for module_name in command_modules:
        _register(sub, module_name)
    return parser


def _default_weights(args) -> None:
    """``--weights`` left out: the model's release format (``default_weight_precision``), said in output."""
    args.weights_defaulted = getattr(args, "weights", "") is None and bool(getattr(args, "model", None))
    if args.weights_defaulted:
        from roofline.physics.precision import default_weight_precision

        args.weights = default_weight_precision(args.model, getattr(args, "gpu", None))


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
