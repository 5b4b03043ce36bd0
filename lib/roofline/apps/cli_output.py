"""How every ``roofline`` command prints: its exit codes, numbers as text, aligned rows and tables, one JSON
object (SI units; NaN and infinities as null) and errors (``report_error``).

>>> print(rows_text([("step time", "4.48 ms"), ("binding", "memory-bound")]))
  step time  4.48 ms
  binding    memory-bound
"""

from __future__ import annotations

import json
import math
import sys
import time

import roofline as rl
from roofline.results import plain
from roofline.units import GB, GiB, fmt_bytes, fmt_time

EXIT_OK = 0
EXIT_NO = 1  # a valid answer that is "no": `fit --batch` does not fit, `serve`'s queue grows without bound
EXIT_ERROR = 2  # bad input of any kind, including a configuration that does not fit
EXIT_INTERNAL = 3  # a bug: the traceback goes to stderr


def fmt_flop(flop: float) -> str:
    """A FLOP count with a decimal prefix, three significant figures.

    >>> fmt_flop(1.5534e10), fmt_flop(1.284e14)
    ('15.5 GFLOP', '128 TFLOP')
    """
    for unit, size in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if abs(flop) >= size:
            value = flop / size
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{flop:.0f} FLOP"


def fmt_count(x: float) -> str:
    """A count or a rate: thousands separators, one decimal below 10, three significant figures below 1.

    >>> fmt_count(5582.05), fmt_count(9.81), fmt_count(0.123456), fmt_count(float("nan"))
    ('5,582', '9.8', '0.123', 'n/a')
    """
    if x != x:  # NaN
        return "n/a"
    if abs(x) < 1:
        return f"{x:.3g}"
    if abs(x) < 10:
        return f"{x:.1f}"
    return f"{x:,.0f}"


def fmt_seconds(seconds: float) -> str:
    """``roofline.units.fmt_time``, but in ns below a microsecond, so a tiny step never reads "0.00 µs".

    >>> fmt_seconds(4.48e-3), fmt_seconds(1.2e-9)
    ('4.48 ms', '1.2 ns')
    """
    if 0 < abs(seconds) < 1e-6:
        return f"{seconds * 1e9:.3g} ns"
    return fmt_time(seconds)


def fmt_usd(usd: float) -> str:
    """US dollars: cents from $1 up, three significant figures below.

    >>> fmt_usd(1234.5), fmt_usd(0.1912)
    ('$1,234.50', '$0.191')
    """
    return f"${usd:,.2f}" if abs(usd) >= 1 else f"${usd:.3g}"


def rows_text(rows, indent: str = "  ", right: frozenset[int] = frozenset()) -> str:
    """Rows of text cells, aligned: each cell but a row's last is padded to its column's width (taken over
    the rows where it is not the last), the columns in ``right`` to the right."""
    widths: dict[int, int] = {}
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths.get(i, 0), len(cell))

    def line(row) -> str:
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(row[:-1])]
        return indent + "  ".join([*cells, row[-1]])

    return "\n".join(line(row) for row in rows)


def table(headers: list[str], rows: list[list[str]], right: set[int]) -> str:
    """A table with a header and a rule below it; the columns in ``right`` aligned to the right.

    >>> print(table(["id", "GB"], [["a", "1"], ["bb", "10"]], right={1}))
    id  GB
    --  --
    a    1
    bb  10
    """
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(
            (c.rjust(w) if i in right else c.ljust(w))
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def jsonable(value):
    """numpy scalars and arrays to plain Python; NaN and infinities to None (JSON has neither).

    >>> import numpy as np
    >>> jsonable({"t": np.float64(0.5), "n": [np.int64(2), float("inf")]})
    {'t': 0.5, 'n': [2, None]}
    """
    value = plain(value)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return None if isinstance(value, float) and not math.isfinite(value) else value


def print_json(obj: dict) -> None:
    """One JSON object on stdout: SI units, NaN and infinities as null."""
    print(json.dumps(jsonable(obj), indent=2, allow_nan=False, ensure_ascii=False))


def picked(result, names: tuple[str, ...], counts: tuple[str, ...] = (), renamed=None) -> dict:
    """The named fields of a library result, in order (``to_dict``'s, else attributes; ``renamed`` maps a
    JSON name to the result's own), the ``counts`` among them as integers: a field the library adds leaves
    the output as it is, one it renames fails the tests."""
    d, own = result.to_dict(), renamed or {}
    out = {name: d[key] if (key := own.get(name, name)) in d else getattr(result, key) for name in names}
    return {**out, **{name: int(out[name]) for name in counts}}


def report_error(
    kind: str, message: str, *, json_mode: bool, command, detail="", fields=None, extra=None
) -> int:
    """``error: message`` (and ``detail``) on stderr and, with --json, the JSON error object on stdout
    (``fields`` beside ``error``, ``extra`` inside it); exit code 2."""
    print(f"error: {message}" + (f"\n{detail}" if detail else ""), file=sys.stderr)
    if json_mode:
        error = {"type": kind, "message": message, **(extra or {})}
        print_json({"command": command, **(fields or {}), "error": error})
    return EXIT_ERROR


def weights_text(weights: str, defaulted: str) -> str:
    """The weight precision as output says it, ``defaulted`` the release format when ``--weights`` was left
    out (``default_weight_precision``: an Apple GPU runs BF16 weights as FP16).

    >>> weights_text("bf16", "bf16"), weights_text("fp16", "bf16"), weights_text("fp8", "")
    ('bf16 as released', 'fp16 (released as bf16, run as fp16: this GPU has no bf16 math)', 'fp8')
    """
    if not defaulted:
        return weights
    if defaulted == weights:
        return f"{weights} as released"
    return f"{weights} (released as {defaulted}, run as {weights}: this GPU has no {defaulted} math)"


def precisions_text(weights: str, kv: str, defaulted: str) -> str:
    """ "weights bf16 as released, KV bf16" (``weights_text``)."""
    return f"weights {weights_text(weights, defaulted)}, KV {kv}"


def fmt_capacity(gpu, num_gpus: int = 1) -> str:
    """A GPU's memory as its data sheet says it and in decimal bytes; rows sized in decimal GB print once.

    >>> fmt_capacity("h100-sxm"), fmt_capacity("h100-sxm", 2)
    ('80 GiB (85.9 GB)', '2 × 80 GiB (172 GB)')
    """
    g = rl.get_gpu(gpu)
    each = g.memory_bytes / (GiB if g.memory_binary else GB)
    sheet = f"{each:g} GiB" if g.memory_binary else f"{each:g} GB"
    times = f"{num_gpus:,} × " if num_gpus != 1 else ""
    decimal = f" ({fmt_bytes(num_gpus * g.memory_bytes)})" if g.memory_binary else ""
    return f"{times}{sheet}{decimal}"


def price_text(usd_per_gpu_hour: float, row, num_gpus: int) -> str:
    """ "$3.00 per GPU-hour × 1 GPU (h100-example-3usd: course example, <its date>)", ``row`` the price
    row or None; an owned GPU's hourly figure is its purchase and power spread over its life."""
    text = f"{fmt_usd(usd_per_gpu_hour)} per GPU-hour × {num_gpus:,} GPU{'s' if num_gpus != 1 else ''}"
    if row is not None:
        how = "owned: purchase and power spread over its life, " if row.kind == "own" else ""
        text += f" ({row.id}: {how}{row.provider}, {row.date})"
    return text


def achievable_rows(a: dict, time_key: str = "step_time_s") -> list[tuple[str, str]]:
    """The text rows of an engine's figure (the ``achievable`` JSON object) beside the ideal one."""
    text = fmt_seconds(a[time_key])
    if "tokens_per_s_per_user" in a:
        text += f", {fmt_count(a['tokens_per_s_per_user'])} tokens/s per user"
    rows = [(f"achievable ({a['engine']})", text + " (a calibrated engine; the ideal is the floor)")]
    return rows + extrapolation_rows(a)


def extrapolation_rows(a: dict) -> list[tuple[str, str]]:
    """The text row saying an engine's figure leaves its calibrated range, and why (none if it does not)."""
    return [("  extrapolated", "; ".join(a["extrapolation_reasons"]))] if a.get("extrapolated") else []


PROGRESS_INTERVAL_S = 0.5  # wall time between two progress lines on a terminal


class Progress:
    r"""A long run's one-line report on ``stream`` (a terminal), rewritten in place at most every
    ``interval_s`` seconds of wall time and wiped by ``done()``; what the command prints is unchanged.

    >>> import io
    >>> buf = io.StringIO()
    >>> p = Progress("serve", buf, interval_s=0.0)
    >>> p.simulated(12.5, 3000, "vllm"); p.done(); buf.getvalue().split("\r")[1]
    'serve: simulating vllm: 12.5 s of serving, 3,000 steps so far, 0 s elapsed\x1b[K'
    """

    def __init__(self, command: str, stream, interval_s: float = 0.5):
        self.command, self.stream, self.interval_s = command, stream, interval_s
        self.start = self.last = time.monotonic()
        self.shown = False

    def __call__(self, text: str) -> None:
        """Show ``text`` if ``interval_s`` has passed since the last line."""
        now = time.monotonic()
        if now - self.last >= self.interval_s:
            self.last, self.shown = now, True
            elapsed = f"{now - self.start:.0f} s elapsed"
            self.stream.write(f"\r{self.command}: {text}, {elapsed}\x1b[K")
            self.stream.flush()

    def simulated(self, clock_s: float, steps: int, what: str) -> None:
        """A serving run's report: ``what`` is simulated, at ``clock_s`` (s) after ``steps`` steps."""
        self(f"simulating {what}: {clock_s:.3g} s of serving, {steps:,} steps so far")

    def done(self) -> None:
        """Wipe the line, if one was shown."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def progress_for(command: str, args, stream=None) -> Progress | None:
    """A ``Progress`` on ``stream`` (default stderr) when it is a terminal and ``args`` has no ``--json``,
    else None: a script or a pipe sees only the result.

    >>> import argparse, io
    >>> progress_for("serve", argparse.Namespace(json=False), io.StringIO()) is None   # not a terminal
    True
    """
    stream = sys.stderr if stream is None else stream
    if getattr(args, "json", False) or not stream.isatty():
        return None
    return Progress(command, stream, PROGRESS_INTERVAL_S)
