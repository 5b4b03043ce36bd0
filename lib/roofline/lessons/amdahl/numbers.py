"""Amdahl's law in time accounting: where a step's time goes, and what speeding up one part can buy.

Taught in lesson 60 (notebooks/60_amdahl.ipynb). The formulas are ``roofline.physics.overheads``'s
(``amdahl_speedup``, ``amdahl_ceiling``); this module adds the before/after breakdown, the figure, an
explorer and a roofline "profile" of a decode step to practise on.

    new time = untouched + Σ pᵢ ÷ sᵢ        (fractions of the old time; the parts must not overlap)
    speedup  = 1 ÷ new time                 ceiling = 1 ÷ untouched

>>> b = amdahl_breakdown([0.3, 0.5], [3, 2], names=["attention", "MLP"])
>>> [round(x, 2) for x in b.new_parts], round(b.speedup, 2), round(b.ceiling, 1)
([0.2, 0.1, 0.25], 1.82, 5.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.checks import checked, out
from roofline.data import get_gpu, get_model
from roofline.errors import InvalidConfigurationError
from roofline.lessons.launch_overhead.numbers import CARD_CPU_S_PER_LAUNCH
from roofline.physics.architecture import attention_flops_per_token, kv_bytes_per_token, parameter_breakdown
from roofline.physics.overheads import amdahl_ceiling, amdahl_speedup, launch_overhead_s
from roofline.physics.precision import bytes_per_element, peak_flops_per_s
from roofline.scenario import Scenario


@dataclass(frozen=True)
class AmdahlBreakdown:
    """Old and new times of each part (fractions of the old step); part 0 is the untouched rest."""

    names: list
    old_parts: list
    new_parts: list
    new_time_fraction: float
    speedup: float  # old ÷ new (×)
    ceiling: float  # speedup if every optimized part became free (×)


def amdahl_breakdown(fractions, speedups, names=None) -> AmdahlBreakdown:
    """Before/after times of non-overlapping optimized parts, plus the untouched rest (fractions).

    ``fractions`` : share of the old step each optimization covers (0–1, sum ≤ 1);
    ``speedups`` : how much faster each part got (×, > 0; ``np.inf`` = free); ``names`` : labels.

    >>> b = amdahl_breakdown(0.3, 3)
    >>> b.names, [round(x, 2) for x in b.new_parts], round(b.speedup, 2), round(b.ceiling, 2)
    (['untouched', 'part 1'], [0.7, 0.1], 1.25, 1.43)
    """
    p = np.atleast_1d(checked(fractions, "fractions", minimum=0, maximum=1))
    s = np.atleast_1d(checked(speedups, "speedups", above=0, allow_inf=True))
    if p.ndim != 1 or s.shape != p.shape:
        raise InvalidConfigurationError(
            f"give one speedup per fraction: {p.size} fractions, {s.size} speedups"
        )
    speedup = float(amdahl_speedup(p, s))  # also checks that the fractions sum to ≤ 1
    names = list(names) if names is not None else [f"part {i + 1}" for i in range(p.size)]
    if len(names) != p.size:
        raise InvalidConfigurationError(f"{len(names)} names for {p.size} parts")
    rest = max(1.0 - float(p.sum()), 0.0)
    new = [rest] + [float(x) for x in p / s]
    return AmdahlBreakdown(
        names=["untouched", *names],
        old_parts=[rest, *p.tolist()],
        new_parts=new,
        new_time_fraction=float(sum(new)),
        speedup=speedup,
        ceiling=float(amdahl_ceiling(p)),
    )


def naive_combined_speedups(speedups):
    """The two WRONG ways to combine speedups, for the lesson's common-mistakes section: (sum, product).

    Neither is a speedup of anything: speedups of parts never add or multiply; add the new times instead
    (``amdahl_speedup``).

    >>> naive_combined_speedups([3, 2])
    (5.0, 6.0)
    """
    s = np.atleast_1d(checked(speedups, "speedups", above=0))
    return float(s.sum()), float(np.prod(s))


def speedup_of_each_part(fractions, speedup):
    """Overall speedup if only part i is made ``speedup`` × faster, for each i in turn (×). Broadcasts.

    Shows "speed up what dominates": the same 2× on a bigger part buys more.

    >>> speedup_of_each_part([0.1, 0.3, 0.6], 2).round(2).tolist()
    [1.05, 1.18, 1.43]
    """
    p = np.atleast_1d(checked(fractions, "fractions", minimum=0, maximum=1))
    return out(amdahl_speedup(p[:, None], speedup))


def decode_profile(
    s: Scenario, *, kernels_per_step=0, cpu_s_per_launch=CARD_CPU_S_PER_LAUNCH
) -> dict[str, float]:
    """A roofline "profile" of one decode step of the scenario (a dense model; B users at T tokens each):
    seconds per part, as a profiler would group them. Each part takes max(its FLOPs ÷ peak, its bytes ÷
    bandwidth) on the G GPUs; parts run one after another.

    Parts: ``MLP`` (gated MLP weights), ``attention projections`` (Q, K, V, O weights), ``attention over
    KV`` (reading B × T tokens of KV cache), ``embeddings + LM head``, ``kernel launches``
    (``kernels_per_step`` × ``cpu_s_per_launch``, s).

    >>> p = decode_profile(Scenario(batch=32, context_tokens=4096))
    >>> [(k, round(v * 1e3, 2)) for k, v in p.items()]     # ms
    [('MLP', 3.37), ('attention projections', 0.8), ('attention over KV', 5.13),
     ('embeddings + LM head', 0.63), ('kernel launches', 0.0)]
    """
    m, g = get_model(s.model), get_gpu(s.gpu)
    if m.is_moe:
        raise InvalidConfigurationError(
            f"decode_profile models dense transformers; {m.id} is a mixture of experts"
        )
    b = float(checked(s.batch, "batch", minimum=1))
    t = float(checked(s.context_tokens, "context_tokens", minimum=0))
    bw = s.num_gpus * g.memory_bandwidth_bytes_per_s
    peak = s.num_gpus * peak_flops_per_s(g, s.weight_precision)
    params = parameter_breakdown(m)
    wb = bytes_per_element(s.weight_precision)

    def part(n_params):
        return max(2.0 * b * n_params / peak, n_params * wb / bw)

    kv_time = max(
        b * float(attention_flops_per_token(m, t)) / peak, b * t * kv_bytes_per_token(m, s.kv_precision) / bw
    )
    return {
        "MLP": part(params["expert_mlp"]),
        "attention projections": part(params["attention"]),
        "attention over KV": kv_time,
        "embeddings + LM head": part(params["embedding"] + params["lm_head"] + params["norms"]),
        "kernel launches": float(launch_overhead_s(kernels_per_step, cpu_s_per_launch)),
    }


def profile_fractions(profile: dict[str, float]) -> dict[str, float]:
    """Each part's share of the total (fractions summing to 1).

    >>> profile_fractions({"a": 3.0, "b": 1.0})
    {'a': 0.75, 'b': 0.25}
    """
    total = sum(profile.values())
    if total <= 0:
        raise InvalidConfigurationError("the profile's total time must be positive")
    return {k: v / total for k, v in profile.items()}


def fmt_ceiling(ceiling: float) -> str:
    """A ceiling for display: ``"5x"``, or ``"none"`` when nothing is left untouched.

    >>> fmt_ceiling(1 / 0.7), fmt_ceiling(float("inf"))
    ('1.43x', 'none (nothing left untouched)')
    """
    return f"{ceiling:.3g}x" if np.isfinite(ceiling) else "none (nothing left untouched)"
