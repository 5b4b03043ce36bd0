"""Fitting engines' own costs to measured runs: least squares on log(predicted ÷ measured), weak priors.

Taught in notebooks/calibration_validation.ipynb; ``tools/fit_calibration.py`` runs it and writes
``data/calibration.toml``. A row's prediction is ``roofline.engines.model.assemble`` over its steps
(``roofline.calibration.terms``), with the parameters as arrays: the fit times steps exactly as every figure
of the course does.

What is fitted, and what is not:

- the kernels' efficiencies and fixed costs are **not** fitted here: they come from kernel timings
  (``roofline.calibration.kernels``), so a GEMM fraction is what GEMMs reach and nothing else;
- per engine, its own costs (log space): CPU time per step, per sequence in a step, small kernels per
  layer, and what it adds to each all-reduce beyond the link's NCCL latency;
- per GPU family, for an engine whose kernels were never timed (an older vintage), the bandwidth
  fractions its weight-streaming GEMMs and its decode attention reach (logit space), starting from the
  family's timed kernels. Compute fractions are never fitted end to end: the end-to-end rows cannot tell a
  slow GEMM from a preemption or a scheduling stall, and a fitted compute fraction would absorb those.

A weak prior (``PRIOR``) holds each parameter the data cannot see (``fit_terms``).

>>> sorted(PRIOR) == sorted(OVERHEADS)      # every engine cost has a prior
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from scipy.optimize import least_squares

from roofline.calibration.measurements import Measurements, load_measurements
from roofline.calibration.terms import Terms, measured_terms
from roofline.engines.model import assemble
from roofline.engines.params import FITTED_FRACTIONS, OVERHEADS, Calibration, gpu_families
from roofline.engines.registry import get_engine

# Centres (seconds) and spreads (in log units) of the engine costs' priors: ~1 ms of CPU per step, four
# small kernels of ~4 µs per layer, ~20 µs per sequence in a step, little beyond NCCL per all-reduce and
# per ring hop.
PRIOR = {
    "step_overhead_s": (1e-3, 2.5),
    "layer_overhead_s": (16e-6, 1.5),
    "sequence_overhead_s": (20e-6, 2.5),
    "allreduce_overhead_s": (2e-6, 2.0),
    "hop_overhead_s": (0.5e-6, 2.0),
}
FRACTION_PRIOR_SD = 1.0  # logit units around the family's timed kernels
PRIOR_WEIGHT = 0.3
F = len(FITTED_FRACTIONS)


@dataclass
class Layout:
    """Which parameter sits where in θ: the fitted fractions (logit) per (family, engine) pair, then the
    costs (log s) per engine."""

    pairs: list
    engines: list
    fraction_prior: np.ndarray  # (pairs, fractions): the timed kernels' fractions the pairs start from
    cost_prior: dict = field(default_factory=dict)  # engine -> {cost: centre (s)} where not ``PRIOR``'s

    @property
    def names(self) -> list[str]:
        """One name per entry of θ (as in ``calibration.toml``)."""
        return [f"fraction.{f}.{e}.{k}" for k in FITTED_FRACTIONS for f, e in self.pairs] + [
            f"engine.{e}.{k}" for k in OVERHEADS for e in self.engines
        ]

    def prior(self) -> tuple[np.ndarray, np.ndarray]:
        """(μ, sd) of every entry of θ: logits of the timed fractions, logs of the cost centres (s).

        >>> mu, sd = Layout([], ["vllm"], np.zeros((0, F))).prior()
        >>> round(math.exp(mu[0]), 6), sd.tolist()          # 1 ms per step, give or take e^2.5
        (0.001, [2.5, 1.5, 2.5, 2.0, 2.0])
        """
        p = np.clip(self.fraction_prior.T.ravel(), 1e-3, 1 - 1e-3)
        centre = {
            e: {k: self.cost_prior.get(e, {}).get(k, PRIOR[k][0]) for k in OVERHEADS} for e in self.engines
        }
        mu = [*np.log(p / (1 - p)), *(math.log(centre[e][k]) for k in OVERHEADS for e in self.engines)]
        sd = [FRACTION_PRIOR_SD] * p.size + [PRIOR[k][1] for k in OVERHEADS for _ in self.engines]
        return np.array(mu), np.array(sd)

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(fractions: (fraction, pair), costs in s: (cost, engine)) of θ."""
        k = len(self.pairs)
        frac = 1 / (1 + np.exp(-theta[: F * k]))
        return frac.reshape(F, k), np.exp(theta[F * k :]).reshape(len(OVERHEADS), len(self.engines))


def _engine_numbers(kernels: dict, costs: dict) -> SimpleNamespace:
    """The numbers ``assemble`` reads (one value or array per name) from the kernels' and link's numbers
    (``Terms.kernels`` names) and the engine's costs (``OVERHEADS``, s): an all-reduce costs the link's
    latency plus the engine's own, per all-reduce and per ring hop."""
    costs = dict(costs)
    link = {"collective_latency_s": kernels["collective_latency_s"] + costs.pop("allreduce_overhead_s"),
            "hop_latency_s": kernels["hop_latency_s"] + costs.pop("hop_overhead_s")}  # fmt: skip
    return SimpleNamespace(**{**kernels, **link}, **costs, roofline=False)


def _predictor(terms: Terms, train_rows: np.ndarray, lay: Layout):
    """θ → predicted time (s) of each training row: the training steps, with θ's fractions for the
    (family, engine) pairs of ``lay`` and θ's costs for every step's engine."""
    use = train_rows[terms.row]
    rows = np.flatnonzero(train_rows)
    row, weight = np.searchsorted(rows, terms.row[use]), terms.weight[use]
    work = type(terms.work)(**{k: np.broadcast_to(getattr(terms.work, k), use.shape)[use]
                               for k in terms.work._fields})  # fmt: skip
    kernels = {k: v[use] for k, v in terms.kernels.items()}
    pair_of = {p: j for j, p in enumerate(lay.pairs)}
    pair = np.array([pair_of.get(p, -1) for p in zip(terms.family[use], terms.engine[use], strict=True)])
    eng = np.searchsorted(lay.engines, terms.engine[use])

    def predict(theta):
        frac, costs = lay.unpack(theta)
        kern = dict(kernels)
        if lay.pairs:
            for i, name in enumerate(FITTED_FRACTIONS):
                kern[name] = np.where(pair >= 0, frac[i][np.maximum(pair, 0)], kern[name])
        step_costs = dict(zip(OVERHEADS, costs[:, eng], strict=True))
        per_step = assemble(work, _engine_numbers(kern, step_costs)).total_s
        return np.bincount(row, weights=weight * per_step, minlength=rows.size)

    return predict


def predict_rows(terms: Terms, cal: Calibration) -> np.ndarray:
    """Predicted time (s) of every measured row of ``terms`` under the calibration ``cal``.

    >>> from roofline.engines.params import load_calibration
    >>> t = measured_terms()
    >>> p = predict_rows(t, load_calibration())
    >>> p.shape == (t.n_rows,), bool((p > 0).all())
    (True, True)
    """
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
    return terms.total_s(assemble(terms.work, _engine_numbers(kern, costs)).total_s)


def _layout(terms: Terms, train_rows: np.ndarray, fitted_fractions: bool, cost_prior: dict) -> Layout:
    use = train_rows[terms.row]
    pairs = sorted({(str(f), str(e)) for f, e in zip(terms.family[use], terms.engine[use], strict=True)
                    if fitted_fractions and not get_engine(e).kernels})  # fmt: skip
    prior = [[np.median(terms.kernels[n][use & (terms.family == f) & (terms.engine == e)])
              for n in FITTED_FRACTIONS] for f, e in pairs]  # fmt: skip
    engines = sorted(set(terms.engine[use].tolist()))
    return Layout(pairs, engines, np.array(prior).reshape(len(pairs), F), cost_prior)


def usable_rows() -> np.ndarray:
    """Rows the fit and the validation use: all but those measured faster than the ideal floor, which no
    real run can be (a data error, e.g. Splitwise's batch-64 prefills at TP 2).

    >>> ok = usable_rows()
    >>> bool(ok.sum() > 0.9 * ok.size)
    True
    """
    return load_measurements().measured_s >= measured_terms().floor_s()


def _measured_ranges(train_rows: np.ndarray, ms: Measurements) -> dict:
    """(family, engine) → the measured range of the training rows ``train_rows`` (bool mask) of ``ms``:
    sizes (sequences, tokens, GPUs), models, GPUs, precisions."""
    fams = gpu_families()
    rows = np.flatnonzero(train_rows)
    fam = np.array([fams.get(g, "unknown") for g in ms.gpu])
    ranges = {}
    for f, e in sorted({(str(fam[r]), str(ms.engine[r])) for r in rows}):
        sel = rows[(fam[rows] == f) & (ms.engine[rows] == e)]
        sizes = ("batch", "input_tokens", "output_tokens", "num_gpus")
        ranges[(f, e)] = {
            **{k: [int(getattr(ms, k)[sel].min()), int(getattr(ms, k)[sel].max())] for k in sizes},
            "models": sorted(set(ms.model[sel].tolist())),
            "gpus": sorted(set(ms.gpu[sel].tolist())),
            "weight_precisions": sorted(set(ms.weight_precision[sel].tolist())),
            "rows": int(sel.size),
        }
    return ranges


def fit(train_rows=None) -> Calibration:
    """Fit the engines' costs (and an untimed engine's bandwidth fractions) to the measured rows
    ``train_rows`` (bool mask; default all usable rows).

    >>> sglang = load_measurements().engine == "sglang"        # one engine's rows: its own costs only
    >>> p = fit(sglang)
    >>> sorted(p.overheads), round(p.overheads["sglang"]["step_overhead_s"] * 1e3, 1)    # ms per step
    (['sglang'], 0.9)
    """
    ms, terms = load_measurements(), measured_terms()
    train = usable_rows() if train_rows is None else np.asarray(train_rows, bool) & usable_rows()
    return fit_terms(ms, terms, train)


def fit_terms(ms: Measurements, terms: Terms, train: np.ndarray, *, cost_prior: dict | None = None,
              fitted_fractions: bool = True, prior_weight: float = PRIOR_WEIGHT) -> Calibration:  # fmt: skip
    """The fit of ``fit`` on any measured rows ``ms`` and their ``terms``, training on the rows ``train``
    (bool mask): θ minimises Σ log(predicted ÷ measured)² + Σ ((θ − μ) × ``prior_weight`` ÷ sd)², by
    MINPACK's Levenberg–Marquardt (deterministic). ``cost_prior`` centres some engines' cost priors (engine →
    {cost: s}; a learner's engine starts from its base engine's); ``fitted_fractions`` False fits the costs
    only. ``provenance["prior_dominated"]`` names each parameter whose prior outweighs the data's curvature.

    Every parameter belongs to one engine and moves only that engine's rows, so the sum splits into one
    problem per engine: each is solved on its own rows, which gives the same minimum far faster than one
    solve over all of them.

    >>> from roofline.calibration.terms import terms_for
    >>> mine = load_measurements().subset(np.flatnonzero(load_measurements().engine == "sglang")[:3])
    >>> cal = fit_terms(mine, terms_for(mine), np.ones(3, bool), fitted_fractions=False)
    >>> sorted(cal.overheads), 0 < cal.overheads["sglang"]["step_overhead_s"] < 0.01
    (['sglang'], True)
    """
    order = _layout(terms, train, fitted_fractions, cost_prior or {}).names
    overheads, fractions, weak = {}, {}, set()
    for engine in sorted(set(ms.engine[train].tolist())):
        rows = train & (ms.engine == engine)
        one = _fit_engine(ms, terms, rows, fitted_fractions, cost_prior, prior_weight)
        overheads.update(one.overheads)
        fractions.update(one.fractions)
        weak.update(one.provenance["prior_dominated"])
    return Calibration(
        overheads=overheads,
        fractions=fractions,
        gpu_family=gpu_families(),
        ranges=_measured_ranges(train, ms),
        provenance={"prior_dominated": [n for n in order if n in weak]},
    )


def _fit_engine(ms, terms, train, fitted_fractions, cost_prior, prior_weight) -> Calibration:
    """``fit_terms`` on the rows ``train`` of one engine (its costs and its fractions only)."""
    lay = _layout(terms, train, fitted_fractions, cost_prior or {})
    predict, logy = _predictor(terms, train, lay), np.log(ms.measured_s[train])
    mu, sd = lay.prior()
    w = prior_weight / sd
    # MINPACK's Levenberg–Marquardt: its own QR, not threaded BLAS (which stalls on a busy machine)
    residuals = lambda th: np.concatenate([np.log(predict(th)) - logy, w * (th - mu)])  # noqa: E731
    solved = least_squares(residuals, mu, method="lm")
    weak = (solved.jac[: logy.size] ** 2).sum(axis=0) < w**2  # the data's curvature below the prior's
    frac, costs = lay.unpack(solved.x)
    return Calibration(
        overheads={
            e: dict(zip(OVERHEADS, costs[:, j].tolist(), strict=True)) for j, e in enumerate(lay.engines)
        },
        fractions={
            p: dict(zip(FITTED_FRACTIONS, frac[:, j].tolist(), strict=True)) for j, p in enumerate(lay.pairs)
        },
        provenance={"prior_dominated": [n for n, x in zip(lay.names, weak, strict=True) if x]},
    )
