"""What every ``roofline`` subcommand shares: exit codes, bounded option types, the error contract,
formatting, the checks every model command makes, and the engine's figure beside the ideal one.

``roofline.apps.cli`` (the entry point and the ``step``, ``prefill`` and ``fit`` commands) and every
``cli_<name>`` module build on this one; none of it knows a subcommand.

>>> whole_number(1, 10, "users")("3")
3
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

import roofline as rl
from roofline.data import default_price
from roofline.units import GB, MS, GiB, fmt_bytes, fmt_time

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


def _precisions(weights: str, kv: str, defaulted: str = "") -> str:
    return f"weights {weights_text(weights, defaulted)}, KV {kv}"


def weights_defaulted(args) -> str:
    """The model's release format when ``--weights`` was left out (set by ``main``), else "" (false)."""
    return getattr(args, "weights_defaulted", "") or ""


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


def weights_text(weights: str, defaulted: str) -> str:
    """The weight precision as output says it: "bf16 as released" when it was not given and ``defaulted``
    (the release format, ``weights_defaulted``) is what runs; "fp16 (released as bf16, ...)" when the GPU
    runs the release in another format (``default_weight_precision``: BF16 on an Apple GPU).

    >>> weights_text("bf16", "bf16"), weights_text("fp16", "bf16"), weights_text("fp8", "")
    ('bf16 as released', 'fp16 (released as bf16, run as fp16: this GPU has no bf16 math)', 'fp8')
    """
    if not defaulted:
        return weights
    if defaulted is True or defaulted == weights:
        return f"{weights} as released"
    return f"{weights} (released as {defaulted}, run as {weights}: this GPU has no {defaulted} math)"


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
    """The calibration file the figure came from, as "<folder>/calibration.toml": the shipped one unless
    ``$ROOFLINE_DATA_DIR`` holds its own (``roofline.data.table_dir``)."""
    from roofline.data import table_dir

    return str(table_dir("calibration.toml")).rstrip("/").rsplit("/", 1)[-1] + "/calibration.toml"


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
