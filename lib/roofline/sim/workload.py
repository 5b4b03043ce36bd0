"""Who asks for what, and when: request lengths, arrival times and traces for the serving simulator.

Lengths (tokens, whole numbers; a ``LengthSpec``):

    fixed       every request has exactly ``mean`` tokens
    uniform     whole numbers drawn evenly from [low, high] (``low``, ``high`` inclusive)
    lognormal   exp(N(μ, σ²)) rounded, with μ = ln(mean) − σ²/2 so the distribution's mean is ``mean``;
                σ (``sigma``, dimensionless) sets the spread: 0.5 gives a p90/p50 ratio of about 1.9.
                A draw is never below 1 token (a lognormal length is never zero)

Arrivals: Poisson or bursty (``arrivals_s``); the simulator runs closed loops itself. A trace gives every
request's arrival time and lengths: ``load_trace`` reads one from a JSON or CSV file, ``check_trace``
checks one given as arrays; both name every malformed row and field. Everything random draws from a
seeded ``numpy.random.Generator``: the same seed gives the same workload.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from roofline.errors import InvalidConfigurationError, UnknownNameError
from roofline.tables import read_text_file

LENGTH_KINDS = ("fixed", "uniform", "lognormal")
TRACE_FIELDS = ("arrival_s", "input_tokens", "output_tokens")
MAX_TRACE_TOKENS = 10**7  # tokens of one request's prompt or answer (far beyond any context window)
MAX_TRACE_ARRIVAL_S = 10**9  # seconds (about 32 years)
MAX_TRACE_REQUESTS = 10**7
MAX_TRACE_FILE_BYTES = 2 * 10**9
_SHOWN = 5  # malformed rows named in one error message


@dataclass(frozen=True)
class LengthSpec:
    """How long prompts or answers are (tokens): ``kind`` fixed, uniform or lognormal (the module docstring);
    draws are rounded and clipped to [``minimum``, ``maximum``].

    >>> LengthSpec("lognormal", 1000).sigma      # the default spread
    0.5
    """

    kind: str = "fixed"
    mean: float = 0.0
    sigma: float = 0.5
    low: int = 0
    high: int = 0
    minimum: int = 0
    maximum: int = 10**7

    def __post_init__(self):
        if self.kind not in LENGTH_KINDS:
            raise UnknownNameError("length distribution", self.kind, list(LENGTH_KINDS))
        if self.kind == "uniform" and not 0 <= self.low <= self.high:
            raise InvalidConfigurationError(f"uniform lengths need 0 <= low <= high, got {self}")
        if self.kind != "uniform" and not self.mean >= 0:
            raise InvalidConfigurationError(f"mean length must be >= 0, got {self.mean!r}")
        if not self.sigma >= 0:
            raise InvalidConfigurationError(f"sigma must be >= 0, got {self.sigma!r}")


def sample_lengths(spec: LengthSpec, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` whole-number lengths (tokens) drawn from ``spec`` with ``rng``.

    >>> x = sample_lengths(LengthSpec("lognormal", 1000, sigma=0.5), 100_000, np.random.default_rng(1))
    >>> bool(abs(x.mean() / 1000 - 1) < 0.01)
    True
    """
    if spec.kind == "fixed":
        x = np.full(n, round(spec.mean))
    elif spec.kind == "uniform":
        x = rng.integers(spec.low, spec.high + 1, size=n)
    else:
        mu = np.log(max(spec.mean, 1e-9)) - spec.sigma**2 / 2
        x = np.maximum(np.rint(rng.lognormal(mu, spec.sigma, size=n)), 1)  # a positive draw: ≥ 1 token
    return np.clip(x, spec.minimum, spec.maximum).astype(np.int64)


def arrivals_s(rate_per_s: float, n: int, rng: np.random.Generator, cv: float = 1.0) -> np.ndarray:
    """Arrival times (s) of ``n`` requests at ``rate_per_s`` requests/s whose gaps have coefficient of
    variation ``cv`` (std ÷ mean, dimensionless): a Poisson process for 1 (exponential gaps), else a Gamma
    renewal process (above 1: bursty).

    >>> gaps = np.diff(arrivals_s(10.0, 200_000, np.random.default_rng(0), cv=3.0))
    >>> round(float(gaps.mean()), 2), round(float(gaps.std() / gaps.mean()), 1)
    (0.1, 3.0)
    """
    ok = isinstance(rate_per_s, int | float | np.integer | np.floating) and not isinstance(rate_per_s, bool)
    if not ok or not 0 < rate_per_s < math.inf:
        raise InvalidConfigurationError(f"rate must be a finite number > 0 requests/s, got {rate_per_s!r}")
    if cv == 1:
        return np.cumsum(rng.exponential(1.0 / rate_per_s, size=n))
    if not (isinstance(cv, int | float | np.integer | np.floating) and 0 < cv <= 100):
        raise InvalidConfigurationError(f"interarrival_cv must be a number in (0, 100], got {cv!r}")
    shape = 1.0 / cv**2
    return np.cumsum(rng.gamma(shape, 1.0 / (rate_per_s * shape), size=n))


# ---------------------------------------------------------------------------------------------- traces


def _bad_rows(where: str, field: str, rows: np.ndarray, values, problem: str) -> InvalidConfigurationError:
    shown = ", ".join(f"row {int(i)} ({values[int(i)]!r})" for i in rows[:_SHOWN])
    more = f" and {rows.size - _SHOWN:,} more" if rows.size > _SHOWN else ""
    return InvalidConfigurationError(f"{where}: field {field!r} {problem}: {shown}{more}")


def _column(values, field: str, where: str) -> np.ndarray:
    """One trace column as float64, refusing strings, booleans and other non-numbers by row."""
    if isinstance(values, str | bytes) or not hasattr(values, "__len__"):
        raise InvalidConfigurationError(f"{where}: field {field!r} must be a list of numbers, got {values!r}")
    raw = list(values) if not isinstance(values, np.ndarray) else values
    if isinstance(raw, np.ndarray) and raw.dtype.kind in "iuf":
        if raw.ndim != 1:
            raise InvalidConfigurationError(f"{where}: field {field!r} must be one-dimensional")
        return raw.astype(float)
    numbers = int | float | np.integer | np.floating
    ok = np.array([isinstance(v, numbers) and not isinstance(v, bool | np.bool_) for v in raw], dtype=bool)
    if not ok.all():
        raise _bad_rows(where, field, np.flatnonzero(~ok), raw, "must be a number")
    huge = np.array([isinstance(v, int) and abs(v) > 1e300 for v in raw], dtype=bool)  # ints beyond any float
    if huge.any():
        raise _bad_rows(where, field, np.flatnonzero(huge), raw, "is absurdly large")
    return np.asarray(raw, dtype=float).reshape(-1)


def check_trace(trace, where: str = "trace") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrival times (s, float) and input and output tokens (int64) of a trace given as a mapping of
    three equal-length sequences ``arrival_s``, ``input_tokens``, ``output_tokens`` (arrivals need not be
    sorted). Raises ``InvalidConfigurationError`` naming the field and the rows of any problem: a missing
    field, a non-number, NaN, infinite, negative, fractional or absurd values, output tokens below 1,
    unequal lengths, or no request at all.

    >>> check_trace({"arrival_s": [0, -1.0], "input_tokens": [1, 2], "output_tokens": [1, 1]})
    Traceback (most recent call last):
    ...
    roofline.errors.InvalidConfigurationError: trace: field 'arrival_s' must be finite and >= 0 s: row 1...
    """
    if not hasattr(trace, "keys"):
        raise InvalidConfigurationError(f"{where} must be a mapping with fields {', '.join(TRACE_FIELDS)}")
    missing = [f for f in TRACE_FIELDS if f not in trace]
    if missing:
        raise InvalidConfigurationError(f"{where}: missing field(s) {', '.join(map(repr, missing))}")
    cols = {f: _column(trace[f], f, where) for f in TRACE_FIELDS}
    sizes = {f: c.size for f, c in cols.items()}
    if len(set(sizes.values())) != 1:
        raise InvalidConfigurationError(f"{where}: fields differ in length: {sizes}")
    if cols["arrival_s"].size == 0:
        raise InvalidConfigurationError(f"{where}: no requests (the fields are empty)")
    if cols["arrival_s"].size > MAX_TRACE_REQUESTS:
        raise InvalidConfigurationError(f"{where}: more than {MAX_TRACE_REQUESTS:,} requests")
    arr = cols["arrival_s"]
    _refuse(where, "arrival_s", arr, (~np.isfinite(arr) | (arr < 0), "must be finite and >= 0 s"),
            (arr > MAX_TRACE_ARRIVAL_S, f"must be at most {MAX_TRACE_ARRIVAL_S:.0e} s"))  # fmt: skip
    for f, least in (("input_tokens", 0), ("output_tokens", 1)):
        x = cols[f]
        _refuse(where, f, x, (~np.isfinite(x), "must be finite"),
                (np.isfinite(x) & (x != np.floor(x)), "must be a whole number of tokens"),
                (x < least, f"must be >= {least} tokens"),
                (x > MAX_TRACE_TOKENS, f"must be at most {MAX_TRACE_TOKENS:,} tokens"))  # fmt: skip
    return arr, cols["input_tokens"].astype(np.int64), cols["output_tokens"].astype(np.int64)


def _refuse(where: str, field: str, x: np.ndarray, *rules):
    """Raise for the first (bad rows mask, problem) rule that any row breaks."""
    for bad, problem in rules:
        if bad.any():
            raise _bad_rows(where, field, np.flatnonzero(bad), x.tolist(), problem)


def load_trace(path) -> dict[str, np.ndarray]:
    """Read a request trace from ``path``: a JSON list of objects with ``arrival_s`` (s), ``input_tokens``
    and ``output_tokens``, or a CSV file whose header names those three columns (others are ignored).
    Returns the dict ``SimConfig(trace=...)`` takes, rows in file order. A file that cannot be read or
    holds a malformed row raises ``InvalidConfigurationError`` naming the file, the row and the field.

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = os.path.join(d, "t.csv")
    ...     _ = open(p, "w").write("arrival_s,input_tokens,output_tokens\\n0.0,512,64\\n0.25,128,16\\n")
    ...     load_trace(p)["input_tokens"].tolist()
    [512, 128]
    """
    p = Path(path)
    try:
        text = read_text_file(p, MAX_TRACE_FILE_BYTES)
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise InvalidConfigurationError(f"{p}: cannot read the trace: {reason}") from None
    if not text.strip():
        raise InvalidConfigurationError(f"{p}: the trace file is empty")
    try:
        rows = _json_rows(text, p) if text.lstrip()[:1] in "[{" else _csv_rows(text, p)
    except csv.Error as exc:  # a field over csv's limit (131,072 characters), a NUL byte, …
        raise InvalidConfigurationError(f"{p}: not a valid CSV trace: {exc}") from None
    arr, inp, outp = check_trace(rows, where=str(p))
    return {"arrival_s": arr, "input_tokens": inp, "output_tokens": outp}


def _json_rows(text: str, p: Path) -> dict[str, list]:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InvalidConfigurationError(f"{p}: not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise InvalidConfigurationError(f"{p}: a JSON trace must be a list of objects, one per request")
    cols: dict[str, list] = {f: [] for f in TRACE_FIELDS}
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise InvalidConfigurationError(f"{p}: row {i} must be an object with {', '.join(TRACE_FIELDS)}")
        missing = [f for f in TRACE_FIELDS if f not in row]
        if missing:
            raise InvalidConfigurationError(f"{p}: row {i}: missing field(s) {', '.join(map(repr, missing))}")
        for f in TRACE_FIELDS:
            cols[f].append(row[f])
    return cols


def _csv_rows(text: str, p: Path) -> dict[str, list]:
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [f for f in TRACE_FIELDS if f not in header]
    if missing:
        named = ", ".join(map(repr, missing))
        raise InvalidConfigurationError(
            f"{p}: the CSV header must name {', '.join(TRACE_FIELDS)}; missing {named}"
        )
    reader.fieldnames = header
    cols: dict[str, list] = {f: [] for f in TRACE_FIELDS}
    for i, row in enumerate(reader):
        for f in TRACE_FIELDS:
            cell = row.get(f)
            if cell is None or not cell.strip():
                raise InvalidConfigurationError(f"{p}: row {i} (line {i + 2}): field {f!r} is missing")
            try:
                cols[f].append(float(cell))
            except ValueError:
                cols[f].append(cell.strip())  # a non-number: check_trace names it
    return cols
