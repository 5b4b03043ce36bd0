"""An engine's numbers on one GPU, and where each comes from: kernel timings, sourced figures or the fit.

Taught in notebooks/floor_to_real_server.ipynb; fitted by ``roofline.calibration.fit``.

:class:`EngineParams` is what the step model (``roofline.engines.model``) needs, each number meaning what
its name says:

- **kernels** (per GPU and engine, from kernel timings: ``roofline.calibration.kernels``): the fractions of
  peak math and bandwidth the GEMMs, prefill attention and decode attention reach, and each one's fixed cost;
- **the engine** (per engine, fitted on measured runs: ``data/calibration.toml``): its CPU time per step
  and per sequence in a step, and its small kernels per layer (norms, rotary, activations, cache writes);
- **the link** (per GPU, from NCCL's tuning model and measured hops: ``roofline.physics.parallel``): an
  all-reduce's start-up and each ring hop's latency, plus the engine's own fitted costs per all-reduce and
  per hop (a ring all-reduce over N GPUs has 2(N − 1) hops, so the second grows with the GPU count).

An engine whose kernels were not timed (an older vintage: ``kernels = ""`` in ``data/engines.toml``) has
the bandwidth fractions of its GEMMs and decode attention fitted per GPU family (``FITTED_FRACTIONS``). The
ideal engine is the roofline: fractions 1, no costs (``roofline`` True). The calibration file is checked
on reading: a fraction outside (0, 1], a negative cost, a missing key or a syntax error is a
``DataTableError`` naming the file and the entry.

>>> p = engine_params("vllm", "h100-sxm")
>>> 0.6 < p.gemm_compute_fraction < 0.9, p.kernels_from
(True, 'fitted')
>>> engine_params("ideal", "h100-sxm").roofline
True
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import math
import tomllib
from dataclasses import dataclass, field

import numpy as np

from roofline.assumptions import assumption
from roofline.data import (
    get_gpu,
    get_model,
    gpus,
    load_gpus,
    read_toml,
    table_path,
    user_data_dir,
)
from roofline.engines.registry import get_engine
from roofline.errors import DataTableError, InvalidConfigurationError
from roofline.physics.parallel import hop_latency_s as link_hop_latency_s
from roofline.tables import read_text_file

CALIBRATION_FILE = "calibration.toml"
# Per-engine costs in the file (seconds), with their meanings.
OVERHEADS = {
    "step_overhead_s": "per step: scheduling, sampling, launches the engine cannot hide",
    "layer_overhead_s": "per layer per step: the small kernels (norms, rotary, activations, cache writes)",
    "sequence_overhead_s": "per sequence per step: sampling and bookkeeping",
    "allreduce_overhead_s": "per all-reduce, beyond the link's NCCL latency: launches, synchronization",
    "hop_overhead_s": "per ring hop of an all-reduce, beyond the link's: ranks waiting on one another",
}
# Costs a calibration file written before they existed may leave out, and the value they then take (s).
OPTIONAL_OVERHEADS = {"hop_overhead_s": 0.0}
# The most each cost may be (s) for an engine that is still an engine: the fitted ones are 0.3 ms per step,
# 0.1 ms per layer and 0.15 ms per sequence at most; a table (or a learner's fit) past these describes a
# unit slip or a stalled machine, and would price a step in seconds.
OVERHEAD_LIMITS_S = {
    "step_overhead_s": 0.1,
    "layer_overhead_s": 0.01,
    "sequence_overhead_s": 0.01,
    "allreduce_overhead_s": 0.01,
    "hop_overhead_s": 0.001,
}
# Fitted per GPU family for engines without kernel timings (fractions of peak bandwidth): how well their own
# weight-streaming GEMMs and paged-attention kernels of the time read memory. Their compute fractions are the
# family's timed kernels' (a GEMM's math has not changed since; fitting it end to end let it absorb
# preemptions and scheduling instead).
FITTED_FRACTIONS = ("gemm_bandwidth_fraction", "kv_bandwidth_fraction")
# The kernel timings' names (roofline.calibration.kernels) -> EngineParams' names.
KERNEL_NAMES = {
    "gemm_compute_fraction": "gemm_compute_fraction",
    "gemm_bandwidth_fraction": "gemm_bandwidth_fraction",
    "gemm_overhead_s": "gemm_kernel_s",
    "prefill_attention_compute_fraction": "attention_compute_fraction",
    "prefill_attention_bandwidth_fraction": "attention_token_fraction",
    "prefill_attention_overhead_s": "prefill_attention_kernel_s",
    "decode_attention_bandwidth_fraction": "kv_bandwidth_fraction",
    "decode_attention_overhead_s": "decode_attention_kernel_s",
}
MOE_NAMES = ("moe_compute_fraction", "moe_bandwidth_fraction", "moe_kernel_s")
# The GEMM format a weight precision runs in: weight-only formats dequantize into 16-bit GEMMs.
GEMM_DTYPES = {"fp8": "fp8", "fp8-block128": "fp8-block128"}
# Without MoE timings for a GPU's family, an MoE layer costs like this many GEMM kernels (router, gate-up,
# down): its grouped GEMMs stream their experts at the GEMMs' fractions.
MOE_KERNELS_PER_LAYER = 3


# The fractions ``EngineParams.replace`` sets at once under one name.
FRACTION_GROUPS = {
    "bandwidth_fraction": (
        "gemm_bandwidth_fraction",
        "kv_bandwidth_fraction",
        "attention_token_fraction",
        "moe_bandwidth_fraction",
    ),
    "compute_fraction": ("gemm_compute_fraction", "attention_compute_fraction", "moe_compute_fraction"),
}


@dataclass(frozen=True)
class EngineParams:
    """One engine's numbers on one GPU: fractions in (0, 1] and seconds. ``*_from`` say where from.

    ``roofline`` True means the engine is the roofline itself (the ideal, or a what-if such as "kernels
    at 80 % of bandwidth"): a step takes max(math ÷ compute fraction, memory ÷ bandwidth fraction) of
    the whole step, plus the costs, instead of a sum over its kernels.
    """

    engine: str
    gpu_family: str
    gemm_compute_fraction: float
    gemm_bandwidth_fraction: float
    gemm_kernel_s: float
    attention_compute_fraction: float
    attention_token_fraction: float
    kv_bandwidth_fraction: float
    prefill_attention_kernel_s: float
    decode_attention_kernel_s: float
    moe_compute_fraction: float
    moe_bandwidth_fraction: float
    moe_kernel_s: float
    step_overhead_s: float
    layer_overhead_s: float
    sequence_overhead_s: float
    hop_latency_s: float
    collective_latency_s: float
    kernels_from: str
    overheads_from: str
    roofline: bool = False

    @property
    def bandwidth_fraction(self) -> float:
        """The weights' share of peak bandwidth (a GEMM streaming its weights), the headline fraction."""
        return self.gemm_bandwidth_fraction

    @property
    def compute_fraction(self) -> float:
        """The share of dense peak a large GEMM reaches, the headline fraction."""
        return self.gemm_compute_fraction

    def replace(self, **changes) -> EngineParams:
        """A copy with some numbers changed (a "what if"), checked. ``bandwidth_fraction`` and
        ``compute_fraction`` set every bandwidth or compute fraction at once.

        >>> engine_params("ideal", "h100-sxm").replace(bandwidth_fraction=0.8).kv_bandwidth_fraction
        0.8
        """
        for short, names in FRACTION_GROUPS.items():
            if short in changes:
                value = changes.pop(short)
                changes.update({n: value for n in names})
        new = dataclasses.replace(self, **changes)
        _check_params(new)
        return new


def _check_params(p: EngineParams) -> None:
    for f in dataclasses.fields(p):
        v = getattr(p, f.name)
        number = isinstance(v, int | float) and not isinstance(v, bool)
        if f.name.endswith("_fraction") and not (number and 0 < v <= 1):
            raise InvalidConfigurationError(f"{f.name} must be in (0, 1], got {v!r}")
        if f.name.endswith("_s") and not (number and math.isfinite(v) and v >= 0):
            raise InvalidConfigurationError(f"{f.name} must be a time >= 0 s, got {v!r}")


@dataclass(frozen=True)
class Calibration:
    """The stored fit. ``overheads`` maps engine → {name in ``OVERHEADS``: seconds}; ``fractions`` maps
    (family, engine) → {name in ``FITTED_FRACTIONS``: fraction} for engines without kernel timings;
    ``ranges`` maps (family, engine) → the measured range it was fitted on."""

    overheads: dict
    fractions: dict = field(default_factory=dict)
    gpu_family: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    source: str = ""

    def family(self, gpu_id: str) -> str:
        """GPU family of ``gpu_id`` ("ampere", "hopper", …); "unknown" if neither file nor name says."""
        return self.gpu_family.get(gpu_id) or gpu_families().get(gpu_id, "unknown")

    def overheads_for(self, engine: str) -> tuple[dict, str]:
        """({name: seconds}, where from): the engine's fitted costs, else the median over fitted engines."""
        if engine in self.overheads:
            return dict(self.overheads[engine]), "fitted"
        med = {k: float(np.median([o[k] for o in self.overheads.values()])) for k in OVERHEADS}
        return med, "median over fitted engines (no rows of this engine)"

    def fractions_for(self, family: str, engine: str) -> tuple[dict | None, str]:
        """The fractions fitted for an engine without kernel timings on a family, and where from;
        (None, why) where it has none on this family (then its family's kernel timings are used)."""
        if (family, engine) in self.fractions:
            return dict(self.fractions[(family, engine)]), "fitted end to end"
        return None, f"no {engine} rows on {family} GPUs: the family's kernel timings"


# How an MoE checkpoint's experts run: the MoE kernel format of each weight precision (else BF16).
CHECKPOINT_TO_MOE = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "fp8-block128": "fp8-block128",
                     "mxfp4-experts": "w4a16-mxfp4", "int4": "int4"}  # fmt: skip
MOE_DTYPES = tuple(sorted(set(CHECKPOINT_TO_MOE.values())))
MLA_NAMES = {
    "mla_prefill_compute_fraction": "attention_compute_fraction",
    "mla_decode_bandwidth_fraction": "kv_bandwidth_fraction",
    "mla_prefill_overhead_s": "prefill_attention_kernel_s",
    "mla_decode_overhead_s": "decode_attention_kernel_s",
}
MOE_TIMING_NAMES = {
    "moe_compute_fraction": "moe_compute_fraction",
    "moe_bandwidth_fraction": "moe_bandwidth_fraction",
    "moe_overhead_s": "moe_kernel_s",
}
# The frozen kernel numbers (data/calibration_kernels.csv, written by roofline.calibration.kernel_table).
KERNEL_TABLE_FILE = "calibration_kernels.csv"
FROZEN_COLUMNS = (*KERNEL_NAMES, *MOE_TIMING_NAMES, *MLA_NAMES)


@functools.cache
def _frozen_kernels() -> dict:
    """{(kind, kernels, gpu, format, kv): (numbers, source, error)} from the frozen table."""
    path = table_path(KERNEL_TABLE_FILE)
    try:
        rows = list(csv.DictReader(io.StringIO(read_text_file(path))))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataTableError(f"{path}: cannot read the table: {exc}") from None
    table = {}
    for line, row in enumerate(rows, start=2):
        try:
            numbers = {k: float(row[k]) for k in FROZEN_COLUMNS if row.get(k)}
            key = tuple(row[c] for c in ("kind", "kernels", "gpu", "format", "kv"))
        except (KeyError, TypeError, ValueError) as exc:
            raise DataTableError(f"{path}, line {line}: {exc}") from None
        table[key] = (numbers, row.get("source") or "", row.get("error") or "")
    return table


def frozen_kernel_numbers(kind: str, kernels: str, gpu_id: str, fmt: str = "", kv: str = "") -> dict:
    """One row of the frozen kernel numbers as {name: value, "source": where from}: ``kind`` "dense"
    (GEMMs in ``fmt``, attention over a ``kv`` cache), "moe" (experts in ``fmt``) or "mla" (a ``kv``
    cache), for the timings of engine ``kernels`` ("" for the median over the timed engines). What the
    timings cannot give raises ``InvalidConfigurationError`` with the reason.

    >>> frozen_kernel_numbers("dense", "vllm", "h100-sxm", "bf16", "bf16")["source"]
    'fitted'
    """
    entry = _frozen_kernels().get((kind, kernels, gpu_id, fmt, kv))
    if entry is None:
        raise DataTableError(
            f"{table_path(KERNEL_TABLE_FILE)}: no {kind} kernel numbers for {gpu_id} ({kernels or 'median'}, "
            f"{fmt or kv}); rebuild the table: uv run python tools/fit_calibration.py"
        )
    numbers, source, error = entry
    if error:
        raise InvalidConfigurationError(error)
    return {**numbers, "source": source}


@functools.lru_cache(maxsize=512)
def kernel_numbers(
    kernels: str, gpu_id: str, weight_precision: str, kv_precision: str, architecture: str = "dense"
) -> tuple[dict, str]:
    """({EngineParams name: value}, where from): the kernel numbers of ``gpu_id`` from the timings of the
    engine ``kernels`` ("" for the median over the timed engines), GEMMs in the format ``weight_precision``
    runs in, a ``kv_precision`` cache, and for an ``architecture`` "moe" or "mla-moe" its MoE layers' and
    MLA attention's own kernels (``frozen_kernel_numbers``).

    >>> numbers, source = kernel_numbers("vllm", "gh200", "bf16", "bf16")
    >>> source
    "gh200 has no kernel timings: h100-sxm's (same hopper family, nearest rates)"
    """
    dtype = GEMM_DTYPES.get(weight_precision, "bf16")
    kv = "fp8" if kv_precision == "fp8" else "bf16"
    try:
        raw = frozen_kernel_numbers("dense", kernels, gpu_id, dtype, kv)
    except InvalidConfigurationError:  # an FP8 cache on a GPU without FP8 math is converted to 16 bits
        if kv == "bf16":
            raise
        raw = frozen_kernel_numbers("dense", kernels, gpu_id, dtype, "bf16")
        raw["source"] += "; FP8 KV read at the 16-bit cache's rate (no FP8 attention timings here)"
    numbers = {ours: float(raw[theirs]) for theirs, ours in KERNEL_NAMES.items()}
    sources = [raw["source"]]
    numbers.update(
        moe_compute_fraction=numbers["gemm_compute_fraction"],
        moe_bandwidth_fraction=numbers["gemm_bandwidth_fraction"],
        moe_kernel_s=MOE_KERNELS_PER_LAYER * numbers["gemm_kernel_s"],
    )
    if architecture != "dense":
        sources.append(_moe_mla_numbers(numbers, kernels, gpu_id, weight_precision, kv, architecture))
    return numbers, "; ".join(x for x in sources if x and x != "fitted") or "fitted"


def _moe_mla_numbers(
    numbers: dict, kernels: str, gpu_id: str, weight_precision: str, kv: str, architecture: str
) -> str:
    """Set an MoE model's MoE-layer numbers and an MLA model's attention numbers from their own kernel
    timings, where the GPU's family has them; say where they came from."""
    notes = []
    try:
        moe = frozen_kernel_numbers("moe", kernels, gpu_id, CHECKPOINT_TO_MOE.get(weight_precision, "bf16"))
        numbers.update({ours: moe[theirs] for theirs, ours in MOE_TIMING_NAMES.items()})
        notes.append("" if moe["source"] == "fitted" else f"MoE: {moe['source']}")
    except InvalidConfigurationError as exc:
        notes.append(f"MoE layers as grouped GEMMs ({exc})")
    if architecture == "mla-moe":
        try:
            mla = frozen_kernel_numbers("mla", kernels, gpu_id, kv=kv)
            numbers.update({ours: mla[theirs] for theirs, ours in MLA_NAMES.items()})
            notes.append("" if mla["source"] == "fitted" else f"MLA: {mla['source']}")
        except (InvalidConfigurationError, KeyError) as exc:
            notes.append(f"MLA attention as other attention ({exc})")
    return "; ".join(n for n in notes if n)


MEASURED_MACHINE = (
    "a machine you measured (roofline measure): its row holds the bandwidth and matmul rate it reached, "
    "so kernels run at those rates (fractions 1) and only the engine's own costs are added"
)


@functools.cache
def project_gpu_ids() -> frozenset:
    """The ids of the project's GPU rows (``data/gpus.toml``), without a learner's measured machines."""
    return frozenset(load_gpus())


def roofline_numbers() -> dict:
    """Every fraction of ``EngineParams`` 1 and every cost 0 s: the roofline's numbers, and the kernels of
    a machine ``roofline measure`` measured (its row holds the rates it reached, costs included).

    >>> roofline_numbers()["kv_bandwidth_fraction"], roofline_numbers()["gemm_kernel_s"]
    (1.0, 0.0)
    """
    names = [f.name for f in dataclasses.fields(EngineParams)]
    return {n: 1.0 if n.endswith("_fraction") else 0.0 for n in names if n.endswith(("_fraction", "_s"))}


def architecture_of(model) -> str:
    """ "dense", "moe" or "mla-moe": which kernel timings a model's layers need.

    >>> architecture_of("llama-3-8b"), architecture_of("mixtral-8x7b"), architecture_of("deepseek-v3")
    ('dense', 'moe', 'mla-moe')
    """
    m = get_model(model)
    return "mla-moe" if m.is_mla else ("moe" if m.is_moe else "dense")


def engine_params(
    engine, gpu, *, weight_precision: str = "bf16", kv_precision: str = "bf16", model=None
) -> EngineParams:
    """The numbers ``engine`` (an id, alias or ``Engine``) runs at on ``gpu`` with weights in
    ``weight_precision`` (FP8 GEMMs reach less of their peak than BF16 ones) and a ``kv_precision`` cache;
    with ``model``, an MoE model's expert layers and an MLA model's attention take their own kernel timings.

    >>> p = engine_params("TRT-LLM", "a100-40gb")
    >>> p.engine, p.gpu_family
    ('tensorrt-llm', 'ampere')
    >>> p.kernels_from
    "a100-40gb has no kernel timings: a100-80gb-sxm's (same ampere family, nearest rates)"
    """
    e, g = get_engine(engine), get_gpu(gpu)
    if e.kind == "ideal":
        return EngineParams(
            engine=e.id,
            gpu_family=gpu_families().get(g.id, "unknown"),
            **{**roofline_numbers(), **link_latencies(g)},
            kernels_from="the roofline (no fit)",
            overheads_from="the roofline (no fit)",
            roofline=True,
        )
    cal = load_calibration()
    arch = architecture_of(model) if model is not None else "dense"
    if g.id not in project_gpu_ids():  # a machine the learner measured: its row holds measured rates
        kernels, kernels_from = roofline_numbers(), MEASURED_MACHINE
    else:
        kernels, kernels_from = kernel_numbers(e.kernels, g.id, weight_precision, kv_precision, arch)
        kernels = dict(kernels)  # the cached dict stays as computed
    fam = cal.family(g.id)
    if not e.kernels:
        fitted, how = cal.fractions_for(fam, e.id)
        kernels.update(fitted or {})
        kernels_from = f"bandwidth fractions {how}; the rest: {kernels_from}"
    oh, how_oh = cal.overheads_for(e.id)
    link = link_latencies(g)
    link["collective_latency_s"] += oh.pop("allreduce_overhead_s")
    link["hop_latency_s"] += oh.pop("hop_overhead_s")
    return EngineParams(
        engine=e.id,
        gpu_family=fam,
        **{**kernels, **oh, **link},
        kernels_from=kernels_from,
        overheads_from=how_oh,
    )


def card_server_params(gpu) -> EngineParams:
    """The study card's "real server" (lessons 09 and 59): the roofline with every byte read at the stated
    ``achieved_bandwidth_fraction`` of peak (80 %, ``data/assumptions.toml``) and no other cost. A named
    assumption beside the calibrated engines, to time a step with ``engine="ideal", params=...``.

    >>> p = card_server_params("h100-sxm")
    >>> p.kv_bandwidth_fraction, p.gemm_compute_fraction, p.step_overhead_s
    (0.8, 1.0, 0.0)
    """
    return engine_params("ideal", gpu).replace(bandwidth_fraction=assumption("achieved_bandwidth_fraction"))


def link_latencies(gpu) -> dict:
    """The start-up of one all-reduce and the latency of one ring hop over ``gpu``'s link (s), from NCCL's
    tuning model and measured PCIe hops (``data/assumptions.toml``): what every engine's collectives pay.

    >>> {k: round(v * 1e6, 1) for k, v in link_latencies("h100-sxm").items()}
    {'hop_latency_s': 0.6, 'collective_latency_s': 6.6}
    """
    g = get_gpu(gpu)
    return {
        "hop_latency_s": link_hop_latency_s(g.interconnect),
        "collective_latency_s": assumption("collective_base_latency_s"),
    }


# --------------------------------------------------------------------------------------------------
# Reading the calibration file
# --------------------------------------------------------------------------------------------------


@functools.cache
def load_calibration() -> Calibration:
    """The stored fit (``data/calibration.toml``), checked (see the module docstring), with a learner's own
    calibrated engines (``user_data_dir()/calibration.toml``, written by ``roofline calibrate``).

    >>> load_calibration().overheads_for("vllm")[1]
    'fitted'
    """
    path, raw = read_toml(CALIBRATION_FILE)
    cal = parse_calibration(raw, path)
    user = user_data_dir() / CALIBRATION_FILE
    if not user.is_file():
        return cal
    try:
        mine = tomllib.loads(read_text_file(user))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise DataTableError(f"{user}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise DataTableError(f"{user}: cannot read the table: {exc.strerror or exc}") from None
    yours = parse_calibration(mine, str(user), fitted=False)
    clash = sorted(set(yours.overheads) & set(cal.overheads))
    if clash:
        raise DataTableError(f"{user}: {', '.join(clash)} is a project engine; calibrate under another name")
    return dataclasses.replace(cal, overheads={**cal.overheads, **yours.overheads})


def forget_frozen_tables() -> None:
    """Re-read the calibration and the kernel numbers on next use (after a fit or a save)."""
    for cached in (load_calibration, _frozen_kernels, kernel_numbers):
        cached.cache_clear()


def _number(raw, path: str, where: str, *, fraction: bool, most_s: float = math.inf) -> float:
    ok = isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw)
    if ok and (0 < raw <= 1 if fraction else 0 <= raw <= most_s):
        return float(raw)
    rule = "a fraction in (0, 1]" if fraction else f"a time from 0 to {most_s:g} s"
    raise DataTableError(f"{path}, {where}: must be {rule}, got {raw!r}")


def _table(raw: dict, key: str, path: str) -> dict:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise DataTableError(f"{path}, [{key}]: expected a table, got {type(value).__name__}")
    return value


def parse_calibration(raw: dict, path: str = CALIBRATION_FILE, fitted: bool = True) -> Calibration:
    """A :class:`Calibration` from the parsed TOML ``raw``; ``DataTableError`` (naming ``path`` and the
    entry) for anything out of range or missing.

    >>> parse_calibration({"engine": {"x": {"step_overhead_s": -1}}}, "c.toml")
    Traceback (most recent call last):
    ...
    roofline.errors.DataTableError: c.toml, [engine."x"]: missing layer_overhead_s...
    """
    overheads = {}
    for eng, v in _table(raw, "engine", path).items():
        where = f'[engine."{eng}"]'
        missing = [
            k for k in OVERHEADS if k not in OPTIONAL_OVERHEADS and (not isinstance(v, dict) or k not in v)
        ]
        if missing:
            raise DataTableError(f"{path}, {where}: missing {', '.join(missing)} (seconds)")
        overheads[eng] = {
            k: _number(
                v.get(k, OPTIONAL_OVERHEADS.get(k)),
                path,
                f"{where} {k}",
                fraction=False,
                most_s=OVERHEAD_LIMITS_S[k],
            )
            for k in OVERHEADS
        }
    if not overheads and fitted:
        raise DataTableError(f"{path}: needs [engine.*] tables (a fitted calibration)")
    fractions = {}
    for fam, per_engine in _table(raw, "fraction", path).items():
        for eng, v in per_engine.items():
            where = f'[fraction.{fam}."{eng}"]'
            if not isinstance(v, dict) or not set(FITTED_FRACTIONS) <= set(v):
                raise DataTableError(
                    f"{path}, {where}: needs {', '.join(FITTED_FRACTIONS)} (fractions of peak)"
                )
            fractions[(fam, eng)] = {
                k: _number(v[k], path, f"{where} {k}", fraction=True) for k in FITTED_FRACTIONS
            }
    ranges = {(f, e): dict(v) for f, per in _table(raw, "range", path).items() for e, v in per.items()}
    return Calibration(
        overheads=overheads,
        fractions=fractions,
        gpu_family=dict(_table(raw, "gpu_family", path)),
        ranges=ranges,
        provenance=dict(_table(raw, "provenance", path)),
        source=path,
    )


def gpu_families() -> dict:
    """GPU id → architecture family for every GPU in the tables, from the product names. Data-centre and
    client dies of one generation are different chips (an RTX 3090's GA102 is not an A100's GA100), so
    they are different families: one never borrows the other's kernel timings.

    >>> f = gpu_families()
    >>> f["h100-sxm"], f["a100-40gb"], f["rtx-3090"], f["rtx-4090"], f["mi355x"]
    ('hopper', 'ampere', 'ampere-client', 'ada', 'cdna4')
    """
    rules = (  # (family, name fragments), first match wins
        ("apple", ("apple", " m2 ", " m3 ", " m4 ")),
        ("cdna4", ("mi355", "mi350")),
        ("cdna3", ("mi300", "mi325")),
        ("ampere-client", ("a10g", "3090", " a10 ")),
        ("ampere", ("a100",)),
        ("hopper", ("h100", "h200", "gh200", "h20")),
        ("blackwell-client", ("5090", "pro 6000", "rtx-pro-6000")),
        ("blackwell", ("b200", "b300", "gb200", "b100")),
        ("ada", ("l40", "l4", "4090")),
    )
    table = {}
    for gid, g in gpus().items():
        name = f" {g.id} {g.name} {g.vendor} ".lower()
        table[gid] = next((fam for fam, keys in rules if any(k in name for k in keys)), "unknown")
    return table
