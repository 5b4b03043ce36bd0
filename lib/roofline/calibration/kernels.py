"""What single kernels reach of the roofline, fitted on measured kernel timings (``data/measured/kernels/``).

Feeds the engine model taught in notebooks/floor_to_real_server.ipynb. The timings are NVIDIA
aiconfigurator's per-operation database (Apache-2.0; provenance in ``data/measured/README.md``). With P the
GPU's dense peak at the precision and W its memory bandwidth (``data/gpus.toml``), in SI units:

    GEMM          t = smax(2mnk ÷ (e_c P), [(mk + kn) b_in + mn b_out] ÷ (e_b W)) + t₀
    prefill attn  t = F_att ÷ (e_att P) + (Q + K + V + O bytes) ÷ (e_tok W) + t₀
    decode attn   t = max(F_dec ÷ P, KV bytes ÷ (e_kv W)) + t₀

smax(a, b) = (a⁴ + b⁴)^(1/4) rounds the ridge, where loads and math overlap imperfectly. Fitted on half
the (n, k) shapes and scored on the other half, it beats the hard max in 86 % of the 50 GEMM groups (median
error 11.4 → 10.8 %) and shrinks the ridge bias (64 < m ≤ 256: −4.0 → −1.9 %), so it is adopted; rounding m
up to a 128-row tile in the FLOPs adds 0.2 points, within the scatter, and is not. A prefill's per-token
work (Q, K, V in, O out, the softmax epilogue) does not overlap its quadratic math: the sum fits held-out
shapes to 4.8 % median where a max misses by 11 % (24 % with e_tok = 1). The work F and bytes are those of
``gemm_work``, ``prefill_attention_work`` and ``decode_attention_work``. Each model is fitted per GPU ×
engine × precision (``fit_group``); a GPU without timings borrows its family's fits or is sourced from its
data sheet, never from another family's fit (``kernel_parameters``).
"""

from __future__ import annotations

import datetime
import functools
import math
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from roofline.assumptions import ASSUMPTIONS
from roofline.calibration.measurements import read_csv
from roofline.data import MEASURED_DIR, DataTableError, get_gpu, table_path
from roofline.engines.params import gpu_families
from roofline.engines.registry import get_engine
from roofline.errors import InvalidConfigurationError, RooflineError
from roofline.physics.precision import bytes_per_element, peak_flops_per_s

KERNEL_DIR = "kernels"
TEXT = ("gpu", "framework", "version", "op", "dtype")
TABLES = {  # file -> (text columns besides TEXT, shape columns); every table also has latency_s (s)
    "gemm.csv": ((), ("m", "n", "k")),
    "context_attention.csv": (("kv_dtype",), ("batch", "isl", "heads", "kv_heads", "head_dim")),
    "generation_attention.csv": (("kv_dtype",), ("batch", "context", "heads", "kv_heads", "head_dim")),
    "allreduce.csv": ((), ("num_gpus", "message_bytes")),
    "moe.csv": (("routing",), ("num_tokens", "hidden", "inter", "topk", "experts", "moe_tp", "moe_ep")),
    "mla.csv": (("kv_dtype", "form"), ("batch", "context", "heads")),
}
COLLECTIVE_LIBRARIES = ("nccl",)  # frameworks in the tables that are not engines
OUTPUT_BYTES = 2.0  # GEMMs write BF16 activations, whatever their input format
HUBER_DELTA = 0.1  # log-time residuals beyond 10 % count linearly: timing outliers do not steer the fit
BOTH = ("compute", "bandwidth")
# kind -> (table, format column, op ("": every row), fractions fitted, smooth: p of the smooth max, 1 = a
# sum, None = the hard max)
FORMS = {
    "gemm": ("gemm.csv", "dtype", "", BOTH, 4),
    "prefill": ("context_attention.csv", "dtype", "", BOTH, 1),
    "decode": ("generation_attention.csv", "kv_dtype", "", ("bandwidth",), None),
}
PREFIX = {"gemm": "gemm", "prefill": "prefill_attention", "decode": "decode_attention"}
GEMM_FORMATS = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "fp8-block128": "fp8-block128"}
KV_FORMATS = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8"}  # FP16 runs at the BF16 rate
# A fixed cost above this is host time (an eager call: dispatch, quantisation), not a kernel's launch and
# prologue: such a group is reported but not used (vLLM's fp8-block128 GEMMs take 60–330 µs at any size).
MAX_KERNEL_OVERHEAD_S = 50e-6
ACHIEVABLE_FILE = "achievable_bandwidth.csv"
ACHIEVABLE_COLUMNS = ("gpu", "measured_bandwidth_tb_per_s", "sibling", "method", "source", "date", "note")


@functools.cache
def load_kernel_table(name: str, directory: str | None = None) -> dict:
    """The kernel-timing CSV ``name`` (a ``TABLES`` file) of ``data/measured/kernels/`` (or of
    ``directory``) as {column: array}, plus ``engine``: ``framework`` as an engine id (``nccl`` stays).
    Checked (every value present, numbers finite and > 0, ``latency_s`` in seconds, GPUs and engines
    known); bad data is a ``DataTableError`` naming the file, the line or the column.

    >>> g = load_kernel_table("gemm.csv")
    >>> sorted(set(g["dtype"].tolist())), bool(g["latency_s"].max() < 1)
    (['bf16', 'fp8', 'fp8-block128'], True)
    """
    path = (Path(directory) if directory else table_path(MEASURED_DIR) / KERNEL_DIR) / name
    if name not in TABLES:
        raise DataTableError(f"{path}: not a kernel table (known: {', '.join(TABLES)})")
    text, numeric = TEXT + TABLES[name][0], TABLES[name][1] + ("latency_s",)
    rows = read_csv(path, required=text + numeric)
    if not rows:
        raise DataTableError(f"{path}: no rows")
    out = {c: np.array([r[c].strip() for r in rows]) for c in text}
    for c in numeric:
        try:
            out[c] = np.array([float(r[c]) for r in rows])
        except ValueError as exc:
            raise DataTableError(f"{path}, column {c}: not a number ({exc})") from None
        if not np.all(np.isfinite(out[c]) & (out[c] > 0)):
            raise DataTableError(f"{path}, column {c}: values must be finite and > 0")
    lo, hi = out["latency_s"].min(), out["latency_s"].max()
    if lo < 1e-7 or hi > 1.0:
        raise DataTableError(f"{path}: latency_s spans {lo:.3g}–{hi:.3g}, but kernels take 0.1 µs–1 s "
                             "(milliseconds written as seconds?)")  # fmt: skip
    try:
        for gid in sorted(set(out["gpu"].tolist())):
            get_gpu(gid)
        out["engine"] = np.array(
            [f if f in COLLECTIVE_LIBRARIES else get_engine(f).id for f in out["framework"]]
        )
    except RooflineError as exc:
        raise DataTableError(f"{path}: {exc}") from None
    return out


# -- The work of each kernel (FLOP, bytes) and its time --


def scalar_or_array(x):
    """``x`` as a float if it has one element and no axes, else as a float array.

    >>> scalar_or_array(np.float32(2)), scalar_or_array([1, 2])
    (2.0, array([1., 2.]))
    """
    x = np.asarray(x, float)
    return float(x) if x.ndim == 0 else x


def gemm_work(m, n, k, dtype: str = "bf16"):
    """(FLOP, bytes) of an (m × k) · (k × n) GEMM: 2mnk; A and B read in ``dtype``, C written in BF16.

    >>> gemm_work(1, 4096, 4096)       # a decode GEMV: 33.5 MFLOP, ~33.6 MB of BF16 weights
    (33554432.0, 33570816.0)
    """
    m, n, k = (np.asarray(x, float) for x in (m, n, k))
    flops, nbytes = 2.0 * m * n * k, (m * k + k * n) * bytes_per_element(dtype) + m * n * OUTPUT_BYTES
    return scalar_or_array(flops), scalar_or_array(nbytes)


def prefill_attention_work(batch, isl, heads, kv_heads, head_dim):
    """(FLOP, bytes) of one layer's causal prefill attention over ``batch`` prompts of ``isl`` tokens:
    4 H d per (token, earlier token) pair, isl(isl − 1)/2 pairs (Q·Kᵀ and scores·V, the convention of
    ``roofline.physics.architecture.attention_flops_per_pair``); Q, K, V read and O written in BF16.

    >>> f, b = prefill_attention_work(1, 1024, 32, 8, 128)
    >>> round(f / 1e9, 2), round(b / 1e6, 2)
    (8.58, 20.97)
    """
    b, s, h, hkv, d = (np.asarray(x, float) for x in (batch, isl, heads, kv_heads, head_dim))
    flops, nbytes = 4.0 * h * d * s * (s - 1) / 2 * b, b * s * d * 2.0 * (2 * h + 2 * hkv)
    return scalar_or_array(flops), scalar_or_array(nbytes)


def decode_attention_work(batch, context, heads, kv_heads, head_dim, kv_dtype: str = "bf16"):
    """(FLOP, bytes) of one layer's decode attention: ``batch`` new tokens, each over ``context`` cached
    tokens, 4 H d FLOP per pair; the bytes are the KV cache read, batch × c × 2 H_kv d × b_kv.

    >>> decode_attention_work(1, 1000, 32, 8, 128)       # 4 MB of BF16 KV for 16 MFLOP
    (16384000.0, 4096000.0)
    """
    b, c, h, hkv, d = (np.asarray(x, float) for x in (batch, context, heads, kv_heads, head_dim))
    kv_bytes = b * c * 2.0 * hkv * d * bytes_per_element(kv_dtype)
    return scalar_or_array(4.0 * h * d * c * b), scalar_or_array(kv_bytes)


def roofline_time_s(flops, bytes_moved, peak_flops_per_s, bandwidth_bytes_per_s, compute_fraction=1.0,
                    bandwidth_fraction=1.0, overhead_s=0.0, smooth=None):  # fmt: skip
    """max(a, b) + t₀ (s) with a = FLOP ÷ (e_c P) and b = bytes ÷ (e_b W) for P in FLOP/s, W in bytes/s
    and t₀ = ``overhead_s`` in s; ``smooth`` = p replaces the max by (aᵖ + bᵖ)^(1/p) (p = 1: the sum).
    Arrays broadcast.

    >>> roofline_time_s(1e12, 1e9, 1e15, 1e12, 0.5, 1.0, 1e-6)   # 2 ms of math beat 1 ms of memory
    0.002001
    """
    a = np.asarray(flops, float) / (compute_fraction * peak_flops_per_s)
    b = np.asarray(bytes_moved, float) / (bandwidth_fraction * bandwidth_bytes_per_s)
    hi, lo = np.maximum(a, b), np.minimum(a, b)
    core = hi if smooth is None else hi * (1 + (lo / hi) ** smooth) ** (1 / smooth)
    return scalar_or_array(core + overhead_s)


def fit_roofline(flops, bytes_moved, peak_flops_per_s, bandwidth_bytes_per_s, measured_s, free=BOTH,
                 smooth=None) -> dict:  # fmt: skip
    """e_c, e_b (those in ``free``; the others stay 1) and t₀ (s) of ``roofline_time_s`` fitted to the
    times ``measured_s`` (s) of kernels doing ``flops`` (FLOP) and moving ``bytes_moved`` (bytes): Huber
    loss (δ = ``HUBER_DELTA``) on log time over θ = (logit e_c, logit e_b, log t₀), from the best point of
    a grid, by ``scipy.optimize.least_squares`` with Marquardt's scaling. A fraction driven to 0 (the form
    cannot describe the timings) is an ``InvalidConfigurationError``.

    >>> f, b = np.array([1e9, 1e10, 1e11, 1e12]), np.full(4, 1e8)
    >>> t = roofline_time_s(f, b, 1e15, 1e12, 0.7, 0.8, 5e-6)
    >>> {k: round(v, 6) for k, v in fit_roofline(f, b, 1e15, 1e12, t).items()}
    {'compute_fraction': 0.7, 'bandwidth_fraction': 0.8, 'overhead_s': 5e-06}
    """
    a0 = np.asarray(flops, float) / peak_flops_per_s
    b0 = np.asarray(bytes_moved, float) / bandwidth_bytes_per_s
    logy = np.log(np.asarray(measured_s, float))
    use = np.array([x in free for x in BOTH] + [True])

    def model(th):  # (e_c, e_b, t₀, the roofline part, d log part / d log a); a fixed fraction: logit ∞
        full = np.full(3, np.inf)
        full[use] = th
        ec, eb = 1 / (1 + np.exp(-full[:2]))
        a, b = a0 / ec, b0 / eb
        hi, q = np.maximum(a, b), (np.minimum(a, b) / np.maximum(a, b)) ** (smooth or np.inf)
        core = hi * (1 + q) ** (1 / smooth) if smooth else hi
        return ec, eb, np.exp(full[2]), core, np.where(a >= b, 1 / (1 + q), q / (1 + q))

    def residuals(th):
        _, _, t0, core, _ = model(th)
        return np.log(core + t0) - logy

    def jacobian(th):
        ec, eb, t0, core, share_a = model(th)
        c = core / (core + t0)
        return np.stack([-c * share_a * (1 - ec), -c * (1 - share_a) * (1 - eb), 1 - c], axis=1)[:, use]

    def huber(th):
        z = np.abs(residuals(th))
        return float(np.sum(np.where(z <= HUBER_DELTA, z**2 / 2, HUBER_DELTA * (z - HUBER_DELTA / 2))))

    fractions, costs_s = (0.3, 0.5, 0.7, 0.9), (1e-6, 4e-6, 16e-6)
    grid = [np.array([math.log(c / (1 - c)), math.log(b / (1 - b)), math.log(t)])[use]
            for c in fractions for b in fractions for t in costs_s]  # fmt: skip
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # a trial step may overflow: refused
        fit = least_squares(residuals, min(grid, key=huber), jac=jacobian, loss="huber", f_scale=HUBER_DELTA,
                            x_scale="jac", ftol=1e-12, xtol=1e-12, gtol=1e-12)  # fmt: skip
        ec, eb, t0, _, _ = model(fit.x)
    if not (ec > 0 and eb > 0 and np.isfinite(t0)):
        raise InvalidConfigurationError("the fit diverged: the roofline form does not describe these timings")
    return {"compute_fraction": float(ec), "bandwidth_fraction": float(eb), "overhead_s": float(t0)}


def kernel_samples(kind: str, gpu: str, engine: str, dtype: str = "bf16") -> dict:
    """One group's timings as ``samples``, plus "m" for GEMMs. ``kind``: "gemm", "prefill" or "decode";
    ``dtype``: the GEMM's input format or the decode's KV format (prefill: BF16).

    >>> s = kernel_samples("gemm", "h100-sxm", "vllm")
    >>> len(s["flops"]) == len(s["measured_s"]) > 100, s["peak"]     # BF16 dense FLOP/s
    (True, 989000000000000.0)
    """
    s = group_timings(FORMS[kind], gpu, engine, dtype)
    shape = [s[c] for c in TABLES[FORMS[kind][0]][1]]
    if kind == "gemm":
        return {**samples(s, gpu, gemm_work(*shape, dtype), dtype, ("n",), ("k",)), "m": s["m"]}
    if kind == "prefill":
        return samples(s, gpu, prefill_attention_work(*shape), "bf16", ("batch",), ("isl",))
    return samples(s, gpu, decode_attention_work(*shape, dtype), "bf16", ("batch",), ("context",))


def samples(s: dict, gpu: str, work: tuple, math_format: str, *axes: tuple, form: str = "") -> dict:
    """What ``score_fit`` reads of one group's rows ``s`` (``group_timings``) doing ``work`` (FLOP, bytes):
    "flops", "bytes", "measured_s" (s), the GPU's "peak" (FLOP/s in ``math_format``) and "bandwidth"
    (bytes/s), "held_out" (the half a held-out check scores: a checkerboard over the cells of the column
    tuples ``axes``) and the attention "form" the timings count.

    >>> s = samples({"latency_s": np.ones(2), "n": np.array([1, 2])}, "h100-sxm", (1e9, 1e6), "bf16", ("n",))
    >>> s["held_out"].tolist(), s["bandwidth"]
    ([False, True], 3350000000000.0)
    """
    g = get_gpu(gpu)
    rank = sum(np.unique(np.stack([s[c] for c in cols], axis=1), axis=0, return_inverse=True)[1].ravel()
               for cols in axes)  # fmt: skip
    return {"flops": np.atleast_1d(work[0]), "bytes": np.atleast_1d(work[1]), "measured_s": s["latency_s"],
            "peak": peak_flops_per_s(g, math_format), "bandwidth": g.memory_bandwidth_bytes_per_s,
            "held_out": rank % 2 == 1, "form": form}  # fmt: skip


@functools.cache
def timed_groups(form: tuple) -> tuple[tuple[str, str, str], ...]:
    """The (GPU, engine, format) groups a kernel table holds for ``form`` (a ``FORMS`` entry, or
    ``moe_kernels.FORMS``): its table, the column of its format and its op.

    >>> ("h100-sxm", "tensorrt-llm", "fp8") in timed_groups(FORMS["gemm"])
    True
    """
    table, fmt_column, op = form[:3]
    t = load_kernel_table(table)
    sel = t["op"] == op if op else np.ones(t["op"].size, bool)
    keys = zip(t["gpu"][sel].tolist(), t["engine"][sel].tolist(), t[fmt_column][sel].tolist(), strict=True)
    return tuple(sorted(set(keys)))


def group_timings(form: tuple, gpu: str, engine: str, fmt: str) -> dict:
    """The rows of one group of ``timed_groups(form)`` as {column: array}.

    >>> group_timings(FORMS["decode"], "h100-sxm", "vllm", "bf16")["latency_s"].size
    74
    """
    table, fmt_column, op = form[:3]
    t = load_kernel_table(table)
    sel = (t["gpu"] == gpu) & (t["engine"] == engine) & (t[fmt_column] == fmt)
    if op:
        sel &= t["op"] == op
    return {c: v[sel] for c, v in t.items()}


def score_fit(s: dict, free=BOTH, smooth=None, held_out: bool = True) -> dict:
    """Fit samples ``s`` (``samples``) in the form ``free``, ``smooth`` of ``fit_roofline`` and score them:
    the fractions and t₀ (s); the rows used and those dropped (faster than the roofline floor); the median
    |log(predicted ÷ measured)|; with ``held_out``, the median on the held-out half of a fit on the other
    half; the samples' "form".

    >>> r = score_fit(kernel_samples("decode", "h100-sxm", "vllm"), free=("bandwidth",))
    >>> 0.5 < r["bandwidth_fraction"] <= 1, r["compute_fraction"], r["rows"], r["dropped"]
    (True, 1.0, 74, 0)
    """
    # faster than the floor: a working set served from L2, or a benchmark sharing one KV cache
    ok = s["measured_s"] >= np.maximum(s["flops"] / s["peak"], s["bytes"] / s["bandwidth"])
    if not ok.any():
        raise InvalidConfigurationError("every timing of the group is faster than the roofline floor")

    def fit_on(rows):
        work = (s["flops"][rows], s["bytes"][rows], s["peak"], s["bandwidth"])
        return fit_roofline(*work, s["measured_s"][rows], free, smooth)

    def abs_log_error(p, rows):
        t = roofline_time_s(s["flops"][rows], s["bytes"][rows], s["peak"], s["bandwidth"], **p, smooth=smooth)
        return np.abs(np.log(t / s["measured_s"][rows]))

    out = {**(p := fit_on(ok)), "rows": int(ok.sum()), "dropped": int((~ok).sum()), "form": s["form"],
           "median_abs_log_error": float(np.median(abs_log_error(p, ok)))}  # fmt: skip
    test = ok & s["held_out"]
    if held_out and test.any() and (ok & ~test).any():
        out["held_out_median_abs_log_error"] = float(np.median(abs_log_error(fit_on(ok & ~test), test)))
    return out


@functools.cache
def fit_group(kind: str, gpu: str, engine: str, dtype: str = "bf16", held_out: bool = True) -> dict:
    """``score_fit`` of one group (``kernel_samples``) in the form of ``FORMS``.

    >>> r = fit_group("decode", "h100-sxm", "vllm", "bf16")
    >>> 0.5 < r["bandwidth_fraction"] <= 1, r["rows"], r["dropped"]
    (True, 74, 0)
    """
    *_, free, smooth = FORMS[kind]
    return score_fit(kernel_samples(kind, gpu, engine, dtype), free, smooth, held_out)


# -- The numbers the step model reads --


@functools.cache
def _usable_fit(kind: str, gpu: str, engine: str, dtype: str) -> tuple[dict | None, str]:
    """(the group's fit, "") or (None, why it cannot be used)."""
    if (gpu, engine, dtype) not in timed_groups(FORMS[kind]):
        return None, f"no {dtype} {kind} timings for {engine} on {gpu}"
    fit = fit_group(kind, gpu, engine, dtype, held_out=False)
    if fit["overhead_s"] > MAX_KERNEL_OVERHEAD_S:
        host_us = fit["overhead_s"] * 1e6
        return None, f"{engine}'s {dtype} {kind} timings on {gpu} carry {host_us:.0f} µs of host time"
    return fit, ""


def _memory_class(gpu) -> str:
    """ "hbm", "gddr" or "lpddr" (else the memory type, lowercased): what bounds a streaming kernel."""
    kind = gpu.memory_type.lower()
    return next((c for c in ("hbm", "gddr", "lpddr") if kind.startswith(c)), kind)


def nearest_timed_gpu(gpu, timed, what: str, same_memory: bool = False) -> tuple[str | None, str]:
    """The GPU of the ids ``timed`` whose ``what`` fits ``gpu`` uses, and why: itself, else the one of its
    family (with its memory class if ``same_memory``) nearest in dense BF16 FLOP/s and memory bytes/s (sum
    of |log ratio|); (None, the family) if the family has none.

    >>> nearest_timed_gpu(get_gpu("h100-pcie"), {"h100-sxm", "b200"}, "kernel")
    ('h100-sxm', "h100-pcie has no kernel timings: h100-sxm's (same hopper family, nearest rates)")
    """
    if gpu.id in timed:
        return gpu.id, ""
    fam = gpu_families().get(gpu.id, "unknown")
    peers = [p for p in map(get_gpu, sorted(timed)) if gpu_families().get(p.id) == fam
             and (not same_memory or _memory_class(p) == _memory_class(gpu))]  # fmt: skip
    if not peers:
        return None, fam
    rates = lambda g: np.log([g.dense_flops_per_s["bf16"], g.memory_bandwidth_bytes_per_s])  # noqa: E731
    best = min(peers, key=lambda p: float(np.abs(rates(p) - rates(gpu)).sum()))
    return best.id, f"{gpu.id} has no {what} timings: {best.id}'s (same {fam} family, nearest rates)"


def kernel_parameters(gpu_id, framework=None, dtype: str = "bf16", kv_dtype: str = "bf16") -> dict:
    """The fitted kernel numbers of ``framework`` (an engine id or alias; None: the median over the timed
    engines) on ``gpu_id``: GEMMs at ``dtype`` (bf16, fp16, fp8, fp8-block128), prefill attention (BF16),
    decode attention over a ``kv_dtype`` cache. Keys ``<kernel>_<compute|bandwidth>_fraction`` (0–1] and
    ``<kernel>_overhead_s`` (s). Unusable timings fall back to the median of the other engines on the GPU,
    a GPU without timings to its family's nearest timed GPU with the same memory class (``fitted_on``), and
    a GPU whose family has none, or a GeForce board, to ``sourced_parameters``; ``source`` says so
    ("fitted" if none of these).

    >>> p = kernel_parameters("h100-pcie", "trt-llm")
    >>> p["fitted_on"], p["source"]
    ('h100-sxm', "h100-pcie has no kernel timings: h100-sxm's (same hopper family, nearest rates)")
    """
    gpu = get_gpu(gpu_id)
    if dtype not in GEMM_FORMATS or kv_dtype not in KV_FORMATS:
        raise InvalidConfigurationError(
            f"kernel timings cover GEMMs in {', '.join(GEMM_FORMATS)} and KV caches in "
            f"{', '.join(KV_FORMATS)}; got {dtype!r}, {kv_dtype!r}"
        )
    wanted = [get_engine(framework).id] if framework else []
    timed, why = nearest_timed_gpu(gpu, {g for g, _, _ in timed_groups(FORMS["gemm"])}, "kernel", True)
    # A GeForce board never borrows: its data sheet rates FP32-accumulate tensor math at half the
    # professional rate and it boosts above it, so a professional card's fraction does not carry over.
    if timed != gpu.id and "geforce" in gpu.name.lower():
        timed, why = None, "and a GeForce board borrows no professional card's fits"
    elif timed is None:
        mem = _memory_class(gpu).upper()
        why = f"nor has any {why} GPU with {mem} memory; fractions are not carried across families"
    if timed is None:
        p = sourced_parameters(gpu.id)
        return {**p, "source": f"{gpu.id} has no kernel timings, {why}: {p['source']}"}
    engines = sorted({e for g, e, _ in timed_groups(FORMS["gemm"]) if g == timed})
    wanted = wanted or engines
    out, reasons = {"fitted_on": timed}, [why] if why else []
    for kind, dt in (("gemm", GEMM_FORMATS[dtype]), ("prefill", "bf16"), ("decode", KV_FORMATS[kv_dtype])):
        tried = {e: _usable_fit(kind, timed, e, dt) for e in {*engines, *wanted}}
        if not (used := [e for e in wanted if tried[e][0]] or [e for e in engines if tried[e][0]]):
            raise InvalidConfigurationError(f"no usable {dt} {kind} kernel timings on {timed}")
        if used != wanted:
            why_not = "; ".join(tried[e][1] for e in wanted if not tried[e][0])
            reasons.append(f"{why_not}: median over {', '.join(used)}")
        for name in [f"{x}_fraction" for x in FORMS[kind][3]] + ["overhead_s"]:
            out[f"{PREFIX[kind]}_{name}"] = float(np.median([tried[e][0][name] for e in used]))
    out["source"] = "; ".join(reasons) or ("fitted" if framework else f"median over {', '.join(engines)}")
    return out


# -- GPUs without kernel timings: the data sheet plus sourced achievable figures --


@functools.cache
def load_achievable_bandwidth(directory: str | None = None) -> dict:
    """``data/measured/achievable_bandwidth.csv`` (or the one in ``directory``) as GPU id → {"fraction": the
    measured ÷ the data sheet's bandwidth (a measured sibling row's where the GPU has none), "via": that
    row, "method", "line"}. Checked (known GPUs once each, a measurement in TB/s up to the data sheet's or a
    sibling, an https source, an ISO date); bad data is a ``DataTableError`` naming the file and line.

    >>> t = load_achievable_bandwidth()
    >>> round(t["mi300x"]["fraction"], 3), t["m4-pro"]["via"]
    (0.804, 'm4-max')
    """
    path = (Path(directory) if directory else table_path(MEASURED_DIR)) / ACHIEVABLE_FILE
    out, measured = {}, {}
    for line, raw in enumerate(read_csv(path, required=("gpu", "method", "source", "date", "note")), start=2):
        where = f"{path}, line {line}"
        if missing := [c for c in ACHIEVABLE_COLUMNS if raw.get(c) is None]:
            raise DataTableError(f"{path}: missing column {', '.join(missing)}")
        row = {c: (raw[c] or "").strip() for c in ACHIEVABLE_COLUMNS}
        try:
            gpu = get_gpu(row["gpu"])
            datetime.date.fromisoformat(row["date"])
        except (RooflineError, ValueError) as exc:
            raise DataTableError(f"{where}: {exc}") from None
        if gpu.id in out:
            raise DataTableError(f"{where}: a second row for {gpu.id}")
        if not row["source"].startswith("https://"):
            raise DataTableError(f"{where}: source must be an https:// URL, got {row['source']!r}")
        if bool(row["measured_bandwidth_tb_per_s"]) == bool(row["sibling"]):
            raise DataTableError(f"{where}: give measured_bandwidth_tb_per_s or a measured sibling, not both")
        out[gpu.id] = {"via": row["sibling"] or gpu.id, "method": row["method"], "line": line}
        if row["measured_bandwidth_tb_per_s"]:
            measured[gpu.id] = _measured_fraction(row["measured_bandwidth_tb_per_s"], gpu, where)
    for entry in out.values():
        if entry["via"] not in measured:
            raise DataTableError(
                f"{path}, line {entry['line']}: sibling {entry['via']!r} has no measured row"
            )
        entry["fraction"] = measured[entry["via"]]
    return out


def _measured_fraction(text: str, gpu, where: str) -> float:
    try:
        tb_per_s = float(text)
    except ValueError:
        raise DataTableError(f"{where}: measured_bandwidth_tb_per_s is not a number: {text!r}") from None
    peak = gpu.memory_bandwidth_bytes_per_s / 1e12
    if not (math.isfinite(tb_per_s) and 0 < tb_per_s <= peak):
        raise DataTableError(
            f"{where}: {tb_per_s:g} TB/s measured on {gpu.id}, but its data sheet gives {peak:g} TB/s; "
            "a measurement lies above 0 and at most at the peak (a cache-resident test, or GB/s as TB/s?)"
        )
    return tb_per_s / peak


def _sourced_family(gpu) -> str:
    """The family whose sourced figures (``data/assumptions.toml``) a GPU without timed siblings uses:
    "amd" (Instinct, HIP graphs), "apple" (M-series, Metal) or "nvidia-gddr" (GeForce, RTX PRO, A10G)."""
    if gpu.vendor in ("amd", "apple"):
        return gpu.vendor
    if gpu.vendor == "nvidia" and _memory_class(gpu) == "gddr":
        return "nvidia-gddr"
    raise InvalidConfigurationError(
        f"no sourced kernel figures for {gpu.id} ({gpu.vendor}, {gpu.memory_type}); sourced families: "
        "amd, apple, nvidia-gddr. A GPU with a timed sibling uses its fits: kernel_parameters"
    )


def _sourced_figure(figure: str, gpu_id: str, family: str) -> tuple[float, str]:
    """The assumption ``<figure>_<gpu>``, else ``<figure>_<family>``: (value, its id)."""
    for name in (f"{figure}_{gpu_id}", f"{figure}_{family}"):
        if name in ASSUMPTIONS:
            return float(ASSUMPTIONS[name].value), name
    raise InvalidConfigurationError(
        f"no assumption {figure}_{gpu_id} nor {figure}_{family} in data/assumptions.toml for {gpu_id}"
    )


def sourced_parameters(gpu_id) -> dict:
    """Kernel numbers from the data sheet plus sourced achievable figures, for a GPU whose family has no
    kernel timings: the keys of ``kernel_parameters``. Every bandwidth fraction (e_b, e_kv, e_tok) is the
    GPU's ``load_achievable_bandwidth`` fraction; e_c (GEMMs), e_att (prefill attention) and t₀ (s) are the
    assumptions ``gemm_compute_fraction``, ``attention_compute_fraction`` and ``kernel_launch_s`` of the GPU,
    else of its family ("amd", "apple" or "nvidia-gddr"), whatever the engine or formats (the sources
    measure BF16/FP16 GEMMs; AMD's FP8 GEMMs reach 0.49 against BF16's 0.54). ``source`` names them.

    >>> p = sourced_parameters("mi300x")
    >>> round(p["decode_attention_bandwidth_fraction"], 3), p["gemm_compute_fraction"], p["gemm_overhead_s"]
    (0.804, 0.54, 2e-06)
    """
    gpu = get_gpu(gpu_id)
    family = _sourced_family(gpu)
    row = load_achievable_bandwidth().get(gpu.id)
    if row is None:
        raise InvalidConfigurationError(f"{gpu.id} has no row in data/measured/{ACHIEVABLE_FILE}")
    e_c, c_id = _sourced_figure("gemm_compute_fraction", gpu.id, family)
    e_att, att_id = _sourced_figure("attention_compute_fraction", gpu.id, family)
    t0, t0_id = _sourced_figure("kernel_launch_s", gpu.id, family)
    e_b, measured = row["fraction"], row["via"]
    via = f"row {gpu.id} ({row['method']})" if measured == gpu.id else f"rows {gpu.id} -> {measured}"
    return {
        "fitted_on": None,
        "gemm_compute_fraction": e_c, "gemm_bandwidth_fraction": e_b, "gemm_overhead_s": t0,
        "prefill_attention_compute_fraction": e_att, "prefill_attention_bandwidth_fraction": e_b,
        "prefill_attention_overhead_s": t0,
        "decode_attention_bandwidth_fraction": e_b, "decode_attention_overhead_s": t0,
        "source": f"sourced: e_b = e_kv = e_tok from {ACHIEVABLE_FILE} {via}; e_c from assumption {c_id}; "
                  f"e_att from {att_id}; t0 from {t0_id}",
    }  # fmt: skip


def gemm_time_s(m, n, k, gpu_id, framework=None, dtype: str = "bf16"):
    """An (m × k) · (k × n) GEMM's time (s) on ``gpu_id`` with ``framework``'s kernels (arrays broadcast).

    >>> t = gemm_time_s([1, 8192], 4096, 4096, "h100-sxm", "vllm")    # measured 15.0 µs and 347 µs
    >>> [round(x * 1e6) for x in t]
    [15, 351]
    """
    p, g = kernel_parameters(gpu_id, framework, dtype), get_gpu(gpu_id)
    fractions = [p[f"gemm_{n}"] for n in ("compute_fraction", "bandwidth_fraction", "overhead_s")]
    peak = peak_flops_per_s(g, dtype)
    return roofline_time_s(
        *gemm_work(m, n, k, dtype), peak, g.memory_bandwidth_bytes_per_s, *fractions, FORMS["gemm"][4]
    )
