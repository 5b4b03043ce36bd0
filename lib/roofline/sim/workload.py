"""Who asks for what, and when: request lengths, arrival times and traces for the serving simulator.

Taught in notebooks/slos_and_capacity.ipynb.

Lengths (tokens, whole numbers):

    fixed       every request has exactly ``mean`` tokens
    uniform     whole numbers drawn evenly from [low, high] (``low``, ``high`` inclusive)
    lognormal   exp(N(μ, σ²)) rounded, with μ = ln(mean) − σ²/2 so the distribution's mean is ``mean``;
                σ (``sigma``, dimensionless) sets the spread: 0.5 gives a p90/p50 ratio of about 1.9.
                A draw is never below 1 token (a lognormal length is never zero)

Arrivals (open loop): Poisson at ``rate`` requests/s (exponential gaps of mean 1 ÷ rate, coefficient of
variation 1), or bursty: a Gamma renewal process of the same mean rate whose gaps have coefficient of
variation ``cv`` > 1 (shape 1 ÷ cv², scale cv² ÷ rate), so requests come in clumps separated by lulls.
A closed loop (each of C clients sends its next request when its previous one finishes) is handled by the
simulator. A trace gives every request's arrival time and lengths: ``load_trace`` reads one from a file
(JSON list of objects, or CSV with the header ``arrival_s,input_tokens,output_tokens``), and
``check_trace`` checks one given as arrays; both name every malformed row and field.

Everything random draws from a seeded ``numpy.random.Generator``: the same seed gives the same workload.

>>> rng = np.random.default_rng(0)
>>> sample_lengths(LengthSpec("fixed", 128), 3, rng).tolist()
[128, 128, 128]
>>> x = sample_lengths(LengthSpec("lognormal", 1000, sigma=0.5), 100_000, np.random.default_rng(1))
>>> bool(abs(x.mean() / 1000 - 1) < 0.01)
True
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

LENGTH_KINDS = ("fixed", "uniform", "lognormal")
TRACE_FIELDS = ("arrival_s", "input_tokens", "output_tokens")
MAX_TRACE_TOKENS = 10**7  # tokens of one request's prompt or answer (far beyond any context window)
MAX_TRACE_ARRIVAL_S = 10**9  # seconds (about 32 years)
MAX_TRACE_REQUESTS = 10**7
MAX_TRACE_FILE_BYTES = 2 * 10**9
_SHOWN = 5  # malformed rows named in one error message


@dataclass(frozen=True)
class LengthSpec:
    """How long prompts or answers are (tokens). ``kind`` is fixed, uniform or lognormal.

    fixed: ``mean`` tokens. uniform: whole numbers in [``low``, ``high``]. lognormal: mean ``mean``,
    log-spread ``sigma``; draws are rounded and clipped to [``minimum``, ``maximum``] (and never below 1).

    >>> LengthSpec("uniform", low=10, high=20).mean_tokens
    15.0
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

    @property
    def mean_tokens(self) -> float:
        """The distribution's mean (tokens), before rounding."""
        return (self.low + self.high) / 2 if self.kind == "uniform" else float(self.mean)


def sample_lengths(spec: LengthSpec, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` whole-number lengths (tokens) drawn from ``spec`` with ``rng``.

    >>> sample_lengths(LengthSpec("uniform", low=1, high=3), 5, np.random.default_rng(0)).tolist()
    [3, 2, 2, 1, 1]
    >>> int(sample_lengths(LengthSpec("lognormal", 1, sigma=2.0), 10_000, np.random.default_rng(0)).min())
    1
    """
    if spec.kind == "fixed":
        x = np.full(n, round(spec.mean))
    elif spec.kind == "uniform":
        x = rng.integers(spec.low, spec.high + 1, size=n)
    else:
        mu = np.log(max(spec.mean, 1e-9)) - spec.sigma**2 / 2
        x = np.maximum(np.rint(rng.lognormal(mu, spec.sigma, size=n)), 1)  # a positive draw: ≥ 1 token
    return np.clip(x, spec.minimum, spec.maximum).astype(np.int64)


def poisson_arrivals_s(rate_per_s: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Arrival times (s) of ``n`` requests of a Poisson process at ``rate_per_s`` requests/s.

    >>> t = poisson_arrivals_s(10.0, 100_000, np.random.default_rng(0))
    >>> bool(abs(100_000 / t[-1] / 10 - 1) < 0.01)
    True
    """
    _check_rate(rate_per_s)
    return np.cumsum(rng.exponential(1.0 / rate_per_s, size=n))


def bursty_arrivals_s(rate_per_s: float, n: int, rng: np.random.Generator, cv: float = 3.0) -> np.ndarray:
    """Arrival times (s) of ``n`` requests of a Gamma renewal process at ``rate_per_s`` requests/s whose
    gaps have coefficient of variation ``cv`` (std ÷ mean, dimensionless; 1 is Poisson, above 1 bursty).

    >>> t = bursty_arrivals_s(10.0, 200_000, np.random.default_rng(0), cv=3.0)
    >>> gaps = np.diff(t)
    >>> round(float(gaps.mean()), 2), round(float(gaps.std() / gaps.mean()), 1)
    (0.1, 3.0)
    """
    _check_rate(rate_per_s)
    if not (isinstance(cv, int | float | np.integer | np.floating) and 0 < cv <= 100):
        raise InvalidConfigurationError(f"interarrival_cv must be a number in (0, 100], got {cv!r}")
    shape = 1.0 / cv**2
    return np.cumsum(rng.gamma(shape, 1.0 / (rate_per_s * shape), size=n))


def arrivals_s(rate_per_s: float, n: int, rng: np.random.Generator, cv: float = 1.0) -> np.ndarray:
    """Open-loop arrival times (s): Poisson if ``cv`` is 1 (the same draws as ``poisson_arrivals_s``),
    else ``bursty_arrivals_s``.

    >>> a = arrivals_s(2.0, 3, np.random.default_rng(0))
    >>> bool(np.array_equal(a, poisson_arrivals_s(2.0, 3, np.random.default_rng(0))))
    True
    """
    if cv == 1:
        return poisson_arrivals_s(rate_per_s, n, rng)
    return bursty_arrivals_s(rate_per_s, n, rng, cv)


def _check_rate(rate_per_s):
    ok = isinstance(rate_per_s, int | float | np.integer | np.floating) and not isinstance(rate_per_s, bool)
    if not ok or not 0 < rate_per_s < math.inf:
        raise InvalidConfigurationError(f"rate must be a finite number > 0 requests/s, got {rate_per_s!r}")


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
        return raw.astype(float).reshape(-1) if raw.ndim == 1 else _not_1d(field, where)
    numbers = int | float | np.integer | np.floating
    ok = np.array([isinstance(v, numbers) and not isinstance(v, bool | np.bool_) for v in raw], dtype=bool)
    if not ok.all():
        raise _bad_rows(where, field, np.flatnonzero(~ok), raw, "must be a number")
    huge = np.array([isinstance(v, int) and abs(v) > 1e300 for v in raw], dtype=bool)  # ints beyond any float
    if huge.any():
        raise _bad_rows(where, field, np.flatnonzero(huge), raw, "is absurdly large")
    return np.asarray(raw, dtype=float).reshape(-1)


def _not_1d(field: str, where: str):
    raise InvalidConfigurationError(f"{where}: field {field!r} must be one-dimensional")


def check_trace(trace, where: str = "trace") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrival times (s, float) and input and output tokens (int64) of a trace given as a mapping of
    three equal-length sequences ``arrival_s``, ``input_tokens``, ``output_tokens``. Raises
    ``InvalidConfigurationError`` naming the field and the rows of any problem: a missing field, a
    non-number, NaN or infinite values, negative arrivals or input tokens, output tokens below 1, a
    fraction of a token, more than ``MAX_TRACE_TOKENS`` tokens, an arrival after ``MAX_TRACE_ARRIVAL_S``,
    unequal lengths, or no request at all. Arrivals need not be sorted (the simulator sorts them).

    >>> a, i, o = check_trace({"arrival_s": [0, 0.5], "input_tokens": [100, 20], "output_tokens": [8, 1]})
    >>> i.tolist(), o.dtype
    ([100, 20], dtype('int64'))
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
    for bad, problem in (
        (~np.isfinite(arr) | (arr < 0), "must be finite and >= 0 s"),
        (arr > MAX_TRACE_ARRIVAL_S, f"must be at most {MAX_TRACE_ARRIVAL_S:.0e} s"),
    ):
        if bad.any():
            raise _bad_rows(where, "arrival_s", np.flatnonzero(bad), arr.tolist(), problem)
    tokens = [_tokens(cols[f], f, least, where) for f, least in (("input_tokens", 0), ("output_tokens", 1))]
    return arr, tokens[0], tokens[1]


def _tokens(x: np.ndarray, field: str, least: int, where: str) -> np.ndarray:
    values = x.tolist()
    for bad, problem in (
        (~np.isfinite(x), "must be finite"),
        (np.isfinite(x) & (x != np.floor(x)), "must be a whole number of tokens"),
        (x < least, f"must be >= {least} tokens"),
        (x > MAX_TRACE_TOKENS, f"must be at most {MAX_TRACE_TOKENS:,} tokens"),
    ):
        if bad.any():
            raise _bad_rows(where, field, np.flatnonzero(bad), values, problem)
    return x.astype(np.int64)


def load_trace(path) -> dict[str, np.ndarray]:
    """Read a request trace from ``path``: a JSON list of objects with ``arrival_s`` (s), ``input_tokens``
    and ``output_tokens``, or a CSV file whose header names those three columns (other columns are
    ignored). Returns the dict ``simulate(trace=...)`` takes, rows in file order (row 0 is the first
    request). A missing or unreadable file, an empty one, a row that is not an object, a missing key, a
    value that is not a number, NaN, negative or absurd values (see ``check_trace``) raise
    ``InvalidConfigurationError`` naming the file, the row and the field.

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = os.path.join(d, "t.csv")
    ...     _ = open(p, "w").write("arrival_s,input_tokens,output_tokens\\n0.0,512,64\\n0.25,128,16\\n")
    ...     load_trace(p)["input_tokens"].tolist()
    [512, 128]
    """
    p = Path(path)
    try:
        if p.stat().st_size > MAX_TRACE_FILE_BYTES:
            raise InvalidConfigurationError(f"{p}: larger than {MAX_TRACE_FILE_BYTES / 1e9:g} GB")
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise InvalidConfigurationError(f"{p}: cannot read the trace: {reason}") from None
    if not text.strip():
        raise InvalidConfigurationError(f"{p}: the trace file is empty")
    rows = _json_rows(text, p) if text.lstrip()[:1] in "[{" else _csv_rows(text, p)
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
