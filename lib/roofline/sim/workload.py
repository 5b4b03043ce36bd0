"""Who asks for what, and when: request lengths and arrival times for the serving simulator.

Taught in notebooks/slos_and_capacity.ipynb.

Lengths (tokens, whole numbers):

    fixed       every request has exactly ``mean`` tokens
    uniform     whole numbers drawn evenly from [low, high] (``low``, ``high`` inclusive)
    lognormal   exp(N(μ, σ²)) rounded, with μ = ln(mean) − σ²/2 so the distribution's mean is ``mean``;
                σ (``sigma``, dimensionless) sets the spread: 0.5 gives a p90/p50 ratio of about 1.9

Arrivals: Poisson at ``rate`` requests/s (exponential gaps of mean 1 ÷ rate), or a closed loop (handled by
the simulator: each of C clients sends its next request when its previous one finishes), or a trace.

Everything random draws from a seeded ``numpy.random.Generator``: the same seed gives the same workload.

>>> rng = np.random.default_rng(0)
>>> sample_lengths(LengthSpec("fixed", 128), 3, rng).tolist()
[128, 128, 128]
>>> x = sample_lengths(LengthSpec("lognormal", 1000, sigma=0.5), 100_000, np.random.default_rng(1))
>>> bool(abs(x.mean() / 1000 - 1) < 0.01)
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import roofline as rl

LENGTH_KINDS = ("fixed", "uniform", "lognormal")


@dataclass(frozen=True)
class LengthSpec:
    """How long prompts or answers are (tokens). ``kind`` is fixed, uniform or lognormal.

    fixed: ``mean`` tokens. uniform: whole numbers in [``low``, ``high``]. lognormal: mean ``mean``,
    log-spread ``sigma``; draws are rounded and clipped to [``minimum``, ``maximum``].

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
            raise rl.UnknownNameError("length distribution", self.kind, list(LENGTH_KINDS))
        if self.kind == "uniform" and not 0 <= self.low <= self.high:
            raise rl.InvalidConfigurationError(f"uniform lengths need 0 <= low <= high, got {self}")
        if self.kind != "uniform" and self.mean < 0:
            raise rl.InvalidConfigurationError(f"mean length must be >= 0, got {self.mean!r}")
        if self.sigma < 0:
            raise rl.InvalidConfigurationError(f"sigma must be >= 0, got {self.sigma!r}")

    @property
    def mean_tokens(self) -> float:
        """The distribution's mean (tokens), before rounding."""
        return (self.low + self.high) / 2 if self.kind == "uniform" else float(self.mean)


def sample_lengths(spec: LengthSpec, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` whole-number lengths (tokens) drawn from ``spec`` with ``rng``.

    >>> sample_lengths(LengthSpec("uniform", low=1, high=3), 5, np.random.default_rng(0)).tolist()
    [3, 2, 2, 1, 1]
    """
    if spec.kind == "fixed":
        x = np.full(n, round(spec.mean))
    elif spec.kind == "uniform":
        x = rng.integers(spec.low, spec.high + 1, size=n)
    else:
        mu = np.log(max(spec.mean, 1e-9)) - spec.sigma**2 / 2
        x = np.rint(rng.lognormal(mu, spec.sigma, size=n))
    return np.clip(x, spec.minimum, spec.maximum).astype(np.int64)


def poisson_arrivals_s(rate_per_s: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Arrival times (s) of ``n`` requests of a Poisson process at ``rate_per_s`` requests/s.

    >>> t = poisson_arrivals_s(10.0, 100_000, np.random.default_rng(0))
    >>> bool(abs(100_000 / t[-1] / 10 - 1) < 0.01)
    True
    """
    if not rate_per_s > 0:
        raise rl.InvalidConfigurationError(f"rate must be > 0 requests/s, got {rate_per_s!r}")
    return np.cumsum(rng.exponential(1.0 / rate_per_s, size=n))
