"""The options of the ``roofline`` commands, spelt the same way in each: bounded number types, the shared
options, argument errors (``UsageError``, raised rather than printed so --json can report them), and the
checks of options against the model and the engine (context window, tensor-parallel split, pipeline).

>>> whole_number(1, 10, "users")("3")
3
"""

from __future__ import annotations

import argparse
import math

import roofline as rl
from roofline.engines import DEFAULT_ENGINE, get_engine
from roofline.model_config import is_config_path
from roofline.physics.precision import PRECISIONS, WEIGHT_FORMATS

# Sane ranges for the number options: beyond them the roofline numbers mean nothing (a 10^38-GPU step
# of 10^-41 s) or float64 cannot hold them (a 400-digit batch).
MAX_BATCH = 10**7  # users
MAX_GPUS = 100_000
MAX_TOKENS = 10**8  # context or prompt length
MAX_MS = 1e9  # an SLO or a measured time, in ms (11.6 days)
MAX_USD_PER_HOUR = 1e6


class UsageError(Exception):
    """An argument error (``Parser.error``, ``usage_error``): ``main`` prints ``usage``, then "``prog``:
    error: ``message``"."""

    def __init__(self, message: str, prog: str, usage: str = ""):
        super().__init__(message)
        self.message, self.prog, self.usage = message, prog, usage


class Parser(argparse.ArgumentParser):
    """argparse's parser, raising ``UsageError`` rather than printing and exiting."""

    def error(self, message: str):  # argparse calls this for every usage error
        raise UsageError(message, self.prog, self.format_usage())


def usage_error(command: str, message: str) -> UsageError:
    """An argument error a command finds after parsing, reported like argparse's own (no usage line)."""
    return UsageError(message, f"roofline {command}")


def require_model_and_gpu(args, command: str) -> None:
    """``--model`` and ``--gpu``, which a command taking ``--from FILE`` leaves optional, are needed here."""
    missing = [f"--{name}" for name in ("model", "gpu") if not getattr(args, name)]
    if missing:
        raise usage_error(
            command, f"the following arguments are required: {', '.join(missing)} (or --from FILE)"
        )


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

    >>> whole_number(1, 10, "users")("9" * 400)
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a whole number from 1 to 10 users, got ... (400 characters)
    """
    return _Bounded(int, least, most, unit)


def real_number(least: float, most: float, unit: str = "", *, above=False, below=False) -> _Bounded:
    """An argparse type for a finite float option in [least, most] (``above``, ``below``: excluding them).

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


def lower(text: str) -> str:
    """An id as typed, in the tables' spelling: ``lower(" H100-SXM")`` is "h100-sxm"."""
    return text.strip().lower()


def model_name(text: str) -> str:
    """A ``--model`` value: an id or alias, lowercased; a config.json path is kept as typed."""
    text = text.strip()
    return text if is_config_path(text) else text.lower()


BATCH = whole_number(1, MAX_BATCH, "users")
GPUS = whole_number(1, MAX_GPUS, "GPUs")
CONTEXT = whole_number(0, MAX_TOKENS, "tokens")
TOKENS = whole_number(1, MAX_TOKENS, "tokens")  # a prompt, or a context that must hold something
MILLISECONDS = real_number(0, MAX_MS, "ms", above=True)  # an SLO or a measured time


def add_json_argument(p) -> None:
    """``--json``: one JSON object on stdout, errors included."""
    p.add_argument("--json", action="store_true", help="print a JSON object (SI units), errors included")


def add_common_arguments(p, *, required: bool = True, kv_default: str | None = "bf16") -> None:
    """--model, --gpu, --gpus, --weights, --kv and --json. ``--weights`` left out is the model's release
    format (``main`` fills it in and sets ``args.weights_defaulted``)."""
    p.add_argument(
        "--model", type=model_name, required=required, default=None,
        help="model id or alias (see `roofline list models`), or a model's config.json (or its folder)",
    )  # fmt: skip
    p.add_argument(
        "--gpu", type=lower, required=required, default=None, help="GPU id (see `roofline list gpus`)"
    )
    p.add_argument("--gpus", type=GPUS, default=1, metavar="N",
                   help=f"GPUs in tensor parallel (default 1, at most {MAX_GPUS:,})")  # fmt: skip
    p.add_argument(
        "--weights", type=lower, default=None, metavar="PRECISION",
        help="weight precision (default: the model's release format, its checkpoint_format in `roofline list "
        f"models --json`): {', '.join(PRECISIONS)}, or a per-tensor preset: {', '.join(WEIGHT_FORMATS)}",
    )  # fmt: skip
    p.add_argument("--kv", type=lower, default=kv_default, metavar="PRECISION",
                   help="KV-cache precision (default bf16)")  # fmt: skip
    add_json_argument(p)


def add_engine_argument(p, what: str = "the achievable figure") -> None:
    """``--engine``: a real engine; left out, the one people run on ``--gpu``
    (``roofline.engines.default_engine``, resolved by ``roofline.apps.cli.main``)."""
    # No choices: building the parser must not read the user's tables (a broken one is reported by the
    # command that uses it, as an unknown name is, with the closest engines).
    p.add_argument(
        "--engine", default=None, metavar="ENGINE",
        help=f"engine whose calibrated efficiency gives {what} (default: the one people run on the GPU, "
        f"llama.cpp on a Mac or a GeForce, {DEFAULT_ENGINE} elsewhere; `roofline list engines` lists them, "
        "yours included)",
    )  # fmt: skip
    p.set_defaults(engine_follows_gpu=True)


def add_price_arguments(p) -> None:
    """``--usd-per-hour`` or ``--price`` (at most one); neither: the GPU's default price."""
    price = p.add_mutually_exclusive_group()
    price.add_argument(
        "--usd-per-hour", type=real_number(0, MAX_USD_PER_HOUR, "USD"), metavar="USD",
        help="price of one GPU-hour in US dollars (default: the GPU's own price, see `roofline list gpus`)",
    )  # fmt: skip
    price.add_argument(
        "--price", type=lower, metavar="ID", help="a price row id instead (see `roofline list prices`)"
    )


def check_window(model, tokens: int, what: str) -> None:
    """Refuse ``tokens`` (a request's prompt + answer, or a user's context) beyond the model's context window,
    as ``decode_step`` does: ``ContextTooLongError``.

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
