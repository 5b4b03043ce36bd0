"""Fitting engines' own costs to measured runs: least squares on log(predicted ÷ measured), weak priors.

Taught in notebooks/calibration_validation.ipynb; ``tools/fit_calibration.py`` runs it and writes
``data/calibration.toml``. A row's prediction is ``roofline.engines.model.assemble`` over its steps
(``roofline.calibration.terms``), with the parameters as arrays: the fit times steps exactly as every figure
of the course does. Levenberg–Marquardt with a forward-difference Jacobian, deterministic.

What is fitted, and what is not:

- the kernels' efficiencies and fixed costs are **not** fitted here: they come from kernel timings
  (``roofline.calibration.kernels``), so a GEMM fraction is what GEMMs reach and nothing else;
- per engine, its own costs (log space): CPU time per step, per sequence in a step, small kernels per
  layer, and what it adds to each all-reduce beyond the link's NCCL latency;
- per GPU family, for an engine whose kernels were never timed (an older vintage), the bandwidth
  fractions its weight-streaming GEMMs and its decode attention reach (logit space), starting from the
  family's timed kernels. Compute fractions are never fitted end to end: the end-to-end rows cannot tell a
  slow GEMM from a preemption or a scheduling stall, and the fitted number absorbed those (issue 19).

A weak prior (a pseudo-observation (θ − μ) / sd × ``PRIOR_WEIGHT``) holds each parameter the data cannot
see; ``provenance["prior_dominated"]`` lists them.

>>> sglang = load_measurements().engine == "sglang"        # one engine's rows: its own costs only
>>> p = fit(sglang)
>>> sorted(p.overheads), round(p.overheads["sglang"]["step_overhead_s"] * 1e3, 1)    # ms per step
(['sglang'], 0.9)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from roofline.calibration.measurements import load_measurements
from roofline.calibration.terms import Terms, measured_terms
from roofline.engines.model import assemble
from roofline.engines.params import FITTED_FRACTIONS, OVERHEADS, Calibration, gpu_families
from roofline.engines.registry import get_engine

# Centres (seconds) and spreads (in log units) of the engine costs' priors: ~1 ms of CPU per step, four
# small kernels of ~4 µs per layer, ~20 µs per sequence in a step, little beyond NCCL per all-reduce.
PRIOR = {
    "step_overhead_s": (1e-3, 2.5),
    "layer_overhead_s": (16e-6, 1.5),
    "sequence_overhead_s": (20e-6, 2.5),
    "allreduce_overhead_s": (2e-6, 2.0),
}
FRACTION_PRIOR_SD = 1.0  # logit units around the family's timed kernels
F = len(FITTED_FRACTIONS)
PRIOR_WEIGHT = 0.3


@dataclass
class Layout:
    """Which parameter sits where in θ: the fitted fractions per (family, engine) pair, then the costs per
    engine."""

    pairs: list
    engines: list
    fraction_prior: np.ndarray  # (pairs, fractions): the timed kernels' fractions the pairs start from
    cost_prior: dict = None  # engine -> {cost name: centre (s)} where not ``PRIOR``'s (a base engine's fit)

    @property
    def names(self) -> list[str]:
        """One name per entry of θ (as in ``calibration.toml``)."""
        return [f"fraction.{f}.{e}.{k}" for k in FITTED_FRACTIONS for f, e in self.pairs] + [
            f"engine.{e}.{k}" for k in OVERHEADS for e in self.engines
        ]

    def prior(self) -> tuple[np.ndarray, np.ndarray]:
        """(μ, sd) of every entry of θ."""
        p = np.clip(self.fraction_prior.T.ravel(), 1e-3, 1 - 1e-3)
        mu = list(np.log(p / (1 - p)))
        sd = [FRACTION_PRIOR_SD] * p.size
        for name in OVERHEADS:
            mu += [
                math.log((self.cost_prior or {}).get(e, {}).get(name, PRIOR[name][0])) for e in self.engines
            ]
            sd += [PRIOR[name][1]] * len(self.engines)
        return np.array(mu), np.array(sd)


@dataclass
class ArrayParams:
    """Engine numbers as arrays, one value per step: what ``assemble`` reads while the fit runs."""

    gemm_compute_fraction: np.ndarray
    gemm_bandwidth_fraction: np.ndarray
    gemm_kernel_s: np.ndarray
    attention_compute_fraction: np.ndarray
    attention_token_fraction: np.ndarray
    kv_bandwidth_fraction: np.ndarray
    prefill_attention_kernel_s: np.ndarray
    decode_attention_kernel_s: np.ndarray
    moe_compute_fraction: np.ndarray
    moe_bandwidth_fraction: np.ndarray
    moe_kernel_s: np.ndarray
    step_overhead_s: np.ndarray
    layer_overhead_s: np.ndarray
    sequence_overhead_s: np.ndarray
    hop_latency_s: np.ndarray
    collective_latency_s: np.ndarray
    roofline: bool = False


class _Model:
    """The training steps and how θ maps onto their parameters."""

    def __init__(self, terms: Terms, train_rows: np.ndarray, lay: Layout):
        use = train_rows[terms.row]
        self.rows = np.flatnonzero(train_rows)
        self.row = np.searchsorted(self.rows, terms.row[use])
        self.weight = terms.weight[use]
        self.work = type(terms.work)(
            **{
                k: np.broadcast_to(getattr(terms.work, k), use.shape)[use]
                for k in terms.work.__dataclass_fields__
            }
        )
        self.kernels = {k: v[use] for k, v in terms.kernels.items()}
        pair_idx = {p: j for j, p in enumerate(lay.pairs)}
        self.pair = np.array(
            [pair_idx.get((f, e), -1) for f, e in zip(terms.family[use], terms.engine[use], strict=True)]
        )
        eng_idx = {x: j for j, x in enumerate(lay.engines)}
        self.eng = np.array([eng_idx[x] for x in terms.engine[use]])
        self.lay = lay

    def params(self, theta) -> ArrayParams:
        k, e = len(self.lay.pairs), len(self.lay.engines)
        frac = 1 / (1 + np.exp(-theta[: F * k])).reshape(F, k) if k else np.zeros((F, 0))
        kern = dict(self.kernels)
        fitted = self.pair >= 0
        for i, name in enumerate(FITTED_FRACTIONS):
            kern[name] = np.where(fitted, frac[i][np.maximum(self.pair, 0)] if k else 0.0, kern[name])
        costs = dict(
            zip(OVERHEADS, np.exp(theta[F * k :]).reshape(len(OVERHEADS), e)[:, self.eng], strict=True)
        )
        return _with_costs(kern, costs)

    def predict(self, theta) -> np.ndarray:
        per_step = assemble(self.work, self.params(theta)).total_s
        return np.bincount(self.row, weights=self.weight * per_step, minlength=self.rows.size)


def predict_rows(terms: Terms, cal: Calibration) -> np.ndarray:
    """Predicted time (s) of every measured row under the calibration ``cal``."""
    kern = {k: v.copy() for k, v in terms.kernels.items()}
    costs = {k: np.empty(terms.row.size) for k in OVERHEADS}
    keys = np.char.add(np.char.add(terms.family.astype(str), "|"), terms.engine.astype(str))
    for key in np.unique(keys):
        fam, eng = key.split("|")
        sel = keys == key
        fitted, _ = cal.fractions_for(fam, eng)
        if fitted and not get_engine(eng).kernels:
            for name in FITTED_FRACTIONS:
                kern[name][sel] = fitted[name]
        oh, _ = cal.overheads_for(eng)
        for name in OVERHEADS:
            costs[name][sel] = oh[name]
    return terms.total_s(assemble(terms.work, _with_costs(kern, costs)).total_s)


def _with_costs(kernels: dict, costs: dict) -> ArrayParams:
    """Per-step parameters from the kernels' and link's numbers and the engine's costs (arrays)."""
    costs = dict(costs)
    collective = kernels["collective_latency_s"] + costs.pop("allreduce_overhead_s")
    return ArrayParams(**{**kernels, "collective_latency_s": collective}, **costs)


def _layout(terms: Terms, train_rows: np.ndarray, fitted_fractions: bool = True) -> Layout:
    use = train_rows[terms.row]
    pairs = sorted(
        {
            (f, e)
            for f, e in zip(terms.family[use], terms.engine[use], strict=True)
            if fitted_fractions and not get_engine(e).kernels
        }
    )
    prior = np.array(
        [
            [
                np.median(terms.kernels[n][use & (terms.family == f) & (terms.engine == e)])
                for n in FITTED_FRACTIONS
            ]
            for f, e in pairs
        ]
    ).reshape(len(pairs), F)
    return Layout(pairs, sorted(set(terms.engine[use].tolist())), prior)


def spd_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve a x = b for a small symmetric positive-definite ``a`` by Gaussian elimination (no pivoting
    needed), in plain numpy.

    >>> spd_solve(np.array([[4.0, 2.0], [2.0, 3.0]]), np.array([2.0, 1.0])).tolist()
    [0.5, 0.0]
    """
    m, x = np.array(a, dtype=float), np.array(b, dtype=float)
    n = len(x)
    for k in range(n):
        f = m[k + 1 :, k] / m[k, k]
        m[k + 1 :, k:] -= f[:, None] * m[k, k:]
        x[k + 1 :] -= f * x[k]
    for k in range(n - 1, -1, -1):
        x[k] = (x[k] - m[k, k + 1 :] @ x[k + 1 :]) / m[k, k]
    return x


def _fit_theta(model: _Model, logy: np.ndarray, iters: int = 60, prior_weight: float = PRIOR_WEIGHT):
    """Levenberg–Marquardt on the residuals log(pred ÷ measured) plus the priors. Returns θ and, per
    parameter, whether its prior outweighs the data (curvature at the optimum)."""
    mu, sd = model.lay.prior()
    w_prior = prior_weight / sd

    def residuals(th):
        return np.log(model.predict(th)) - logy

    def jacobian(th, r):  # forward differences: the model is assemble() itself, no derivative to keep
        cols = []
        for i in range(th.size):
            step = th.copy()
            step[i] += 1e-6
            cols.append((residuals(step) - r) / 1e-6)
        return np.stack(cols) if cols else np.zeros((0, r.size))

    theta, lam = mu.copy(), 1e-2
    r = residuals(theta)
    cost = float(r @ r + np.sum((w_prior * (theta - mu)) ** 2))
    jac = jacobian(theta, r)
    for _ in range(iters):
        # einsum's own loops, not BLAS/LAPACK: threaded BLAS stalls on a busy machine at these small sizes
        a = np.einsum("ij,kj->ik", jac, jac) + np.diag(w_prior**2)
        g = np.einsum("ij,j->i", jac, r) + w_prior**2 * (theta - mu)
        cand = theta + spd_solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
        r2 = residuals(cand)
        c2 = float(r2 @ r2 + np.sum((w_prior * (cand - mu)) ** 2))
        if c2 < cost:
            improved, theta, r, cost = cost - c2, cand, r2, c2
            jac = jacobian(theta, r)
            lam = max(lam / 3, 1e-6)
            if improved < 1e-10 * max(cost, 1e-12):
                break
        else:
            lam *= 4
            if lam > 1e8:
                break
    return theta, (jac**2).sum(axis=1) < w_prior**2


def ideal_times() -> np.ndarray:
    """The floor of every measured row (s): each step at max(math time, memory time), nothing else."""
    t = measured_terms()
    return t.total_s(np.maximum(t.work.compute_s, t.work.memory_s))


def usable_rows() -> np.ndarray:
    """Rows the fit and the validation use: all but those measured faster than the ideal floor, which no
    real run can be (a data error, e.g. Splitwise's batch-64 prefills at TP 2)."""
    return load_measurements().measured_s >= ideal_times()


def measured_ranges(train_rows: np.ndarray, ms=None) -> dict:
    """(family, engine) → the measured range of the training rows of ``ms`` (default: the project's
    measurements): sizes, models, GPUs, precisions."""
    ms, fams = (load_measurements() if ms is None else ms), gpu_families()
    rows = np.flatnonzero(train_rows)
    fam = np.array([fams.get(g, "unknown") for g in ms.gpu])
    ranges = {}
    for f, e in sorted({(fam[r], ms.engine[r]) for r in rows}):
        sel = rows[(fam[rows] == f) & (ms.engine[rows] == e)]
        ranges[(f, e)] = {
            **{
                k: [int(getattr(ms, k)[sel].min()), int(getattr(ms, k)[sel].max())]
                for k in ("batch", "input_tokens", "output_tokens", "num_gpus")
            },
            "models": sorted(set(ms.model[sel].tolist())),
            "gpus": sorted(set(ms.gpu[sel].tolist())),
            "weight_precisions": sorted(set(ms.weight_precision[sel].tolist())),
            "rows": int(sel.size),
        }
    return ranges


def fit(train_rows=None) -> Calibration:
    """Fit the engines' costs (and an untimed engine's bandwidth fractions) to the measured rows
    ``train_rows`` (bool mask; default all usable rows)."""
    ms, terms = load_measurements(), measured_terms()
    train = usable_rows() if train_rows is None else np.asarray(train_rows, bool) & usable_rows()
    return fit_terms(ms, terms, train)


def fit_terms(
    ms,
    terms: Terms,
    train: np.ndarray,
    *,
    cost_prior: dict | None = None,
    fitted_fractions: bool = True,
    prior_weight: float = PRIOR_WEIGHT,
) -> Calibration:
    """The fit of ``fit`` on any measured rows ``ms`` and their ``terms``; ``cost_prior`` centres some
    engines' cost priors (a learner's engine starts from its base engine's fitted costs),
    ``fitted_fractions`` False fits the costs only, and ``prior_weight`` sets how hard the priors pull
    (a few points of one learner's need a lighter pull than the project's thousands of rows)."""
    lay = _layout(terms, train, fitted_fractions)
    lay.cost_prior = cost_prior
    model = _Model(terms, train, lay)
    theta, weak = _fit_theta(model, np.log(ms.measured_s[train]), prior_weight=prior_weight)
    k = len(lay.pairs)
    frac = 1 / (1 + np.exp(-theta[: F * k])).reshape(F, k) if k else np.zeros((F, 0))
    costs = np.exp(theta[F * k :]).reshape(len(OVERHEADS), len(lay.engines))
    return Calibration(
        overheads={
            e: {n: float(costs[i, j]) for i, n in enumerate(OVERHEADS)} for j, e in enumerate(lay.engines)
        },
        fractions={
            p: {n: float(frac[i, j]) for i, n in enumerate(FITTED_FRACTIONS)} for j, p in enumerate(lay.pairs)
        },
        gpu_family=gpu_families(),
        ranges=measured_ranges(train, ms),
        provenance={"prior_dominated": [n for n, w in zip(lay.names, weak, strict=True) if w]},
    )
