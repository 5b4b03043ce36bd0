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
up to a 128-row tile in the FLOPs (``gemm_work(tile_m=...)``) adds 0.2 points, within the scatter, and is
not. A prefill's per-token work (Q, K, V in, O out, the softmax epilogue) does not overlap its quadratic
math: the sum fits held-out shapes to 4.8 % median where a max misses by 11 % (24 % with e_tok = 1).
F_att = 4 H d × s(s − 1)/2 × batch counts Q·Kᵀ and scores·V over the causal pairs of s prompt tokens, the
convention of ``roofline.physics.architecture.attention_flops_per_pair`` (a token attends to the tokens
before it); F_dec = 4 H d × c × batch and KV bytes = batch × c × 2 H_kv d × b_kv for a KV length c.

A GPU without timings uses its family's nearest timed GPU with the same memory class (HBM, GDDR, LPDDR);
where there is none, or for a GeForce board, ``sourced_parameters`` builds the numbers from its data sheet,
a published bandwidth measurement (``data/measured/achievable_bandwidth.csv``) and sourced GEMM, attention
and launch figures (``data/assumptions.toml``), never from another family's fit.

Each model is fitted per GPU × engine × precision by robust least squares on log time (Huber, δ = 10 %),
fractions in (0, 1) and t₀ > 0, deterministically (a grid start, then Levenberg–Marquardt). Rows faster
than the roofline floor are dropped (a working set served from L2, or a benchmark sharing one KV cache).

>>> p = kernel_parameters("h100-sxm", "vllm")
>>> 0.6 < p["gemm_compute_fraction"] < 0.9, p["source"]
(True, 'fitted')
"""

from __future__ import annotations

import csv
import datetime
import functools
import io
import math
from pathlib import Path

import numpy as np

from roofline.assumptions import ASSUMPTIONS
from roofline.calibration.fit import spd_solve
from roofline.data import MEASURED_DIR, DataTableError, get_gpu, table_path
from roofline.engines.params import gpu_families
from roofline.engines.registry import get_engine
from roofline.errors import InvalidConfigurationError, RooflineError
from roofline.physics.precision import bytes_per_element, peak_flops_per_s

KERNEL_DIR = "kernels"
SHAPES = {
    "gemm.csv": ("m", "n", "k"),
    "context_attention.csv": ("batch", "isl", "heads", "kv_heads", "head_dim"),
    "generation_attention.csv": ("batch", "context", "heads", "kv_heads", "head_dim"),
    "allreduce.csv": ("num_gpus", "message_bytes"),
}
TEXT = ("gpu", "framework", "version", "op", "dtype")
OUTPUT_BYTES = 2.0  # GEMMs write BF16 activations, whatever their input format
HUBER_DELTA = 0.1  # log-time residuals beyond 10 % count linearly: timing outliers do not steer the fit
# kind -> (table, fractions fitted, smooth: p of the smooth max, 1 = a sum, None = the hard max)
FORMS = {
    "gemm": ("gemm.csv", ("compute", "bandwidth"), 4),
    "prefill": ("context_attention.csv", ("compute", "bandwidth"), 1),
    "decode": ("generation_attention.csv", ("bandwidth",), None),
}
PREFIX = {"gemm": "gemm", "prefill": "prefill_attention", "decode": "decode_attention"}
GEMM_FORMATS = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "fp8-block128": "fp8-block128"}
KV_FORMATS = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8"}  # FP16 runs at the BF16 rate
# A fixed cost above this is host time (an eager call: dispatch, quantisation), not a kernel's launch and
# prologue: such a group is reported but not used (vLLM's fp8-block128 GEMMs take 60–330 µs at any size).
MAX_KERNEL_OVERHEAD_S = 50e-6
ACHIEVABLE_FILE = "achievable_bandwidth.csv"
ACHIEVABLE_COLUMNS = ("gpu", "measured_bandwidth_tb_per_s", "sibling", "method", "source", "date", "note")
SOURCED_FAMILIES = ("amd", "apple", "nvidia-gddr")


@functools.cache
def load_kernel_table(name: str, directory: str | None = None) -> dict:
    """The CSV ``name`` of ``data/measured/kernels/`` (or of ``directory``) as {column: array}, checked:
    every column present, no missing value, numbers finite and positive, ``latency_s`` in seconds (a
    kernel takes 0.1 µs to 1 s), GPUs known. ``engine`` maps ``framework`` to this library's engine ids
    (``trtllm`` → ``tensorrt-llm``; ``nccl`` stays). Bad data: ``DataTableError`` naming the file.

    >>> g = load_kernel_table("gemm.csv")
    >>> sorted(set(g["dtype"].tolist())), bool(g["latency_s"].max() < 1)
    (['bf16', 'fp8', 'fp8-block128'], True)
    """
    path = (Path(directory) if directory else table_path(MEASURED_DIR) / KERNEL_DIR) / name
    if name not in SHAPES:
        raise DataTableError(f"{path}: not a kernel table (known: {', '.join(SHAPES)})")
    numeric = SHAPES[name] + ("latency_s",)
    text = TEXT + (("kv_dtype",) if "attention" in name else ())
    return read_timings(path, text, numeric, _engine_id)


def read_timings(path: Path, text: tuple, numeric: tuple, engine_of) -> dict:
    """The columns of the kernel-timing CSV at ``path`` as arrays: ``text`` columns as strings, ``numeric``
    ones as positive finite floats (``latency_s`` in seconds, 0.1 µs to 1 s), every GPU known, and
    ``engine`` = ``engine_of(framework)``. Bad data: ``DataTableError`` naming the file, line or column."""
    try:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    except OSError as exc:
        raise DataTableError(f"{path}: cannot read the table: {exc.strerror or exc}") from None
    for i, row in enumerate(rows, start=2):
        if bad := [c for c in text + numeric if not (row.get(c) or "").strip()]:
            raise DataTableError(f"{path}, line {i}: missing {', '.join(bad)}")
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
        raise DataTableError(
            f"{path}: latency_s spans {lo:.3g}–{hi:.3g}, but kernels take 0.1 µs–1 s "
            "(milliseconds written as seconds?)"
        )
    for gid in sorted(set(out["gpu"].tolist())):
        try:
            get_gpu(gid)
        except RooflineError as exc:
            raise DataTableError(f"{path}: {exc}") from None
    out["engine"] = np.array([engine_of(f) for f in out["framework"]])
    return out


def _engine_id(framework: str) -> str:
    try:
        return get_engine(framework).id
    except RooflineError:
        return framework  # a collective library (nccl), not an engine


# --------------------------------------------------------------------------------------------------
# The work of each kernel (FLOP, bytes) and its time
# --------------------------------------------------------------------------------------------------


def gemm_work(m, n, k, dtype: str = "bf16", tile_m=None):
    """(FLOP, bytes) of an (m × k) · (k × n) GEMM: 2mnk; A and B read in ``dtype``, C written in BF16.
    ``tile_m`` rounds m up to a tile in the FLOPs (a partly filled tile costs in full).

    >>> gemm_work(1, 4096, 4096)       # a decode GEMV: 33.5 MFLOP, ~33.6 MB of BF16 weights
    (33554432.0, 33570816.0)
    >>> gemm_work(1, 4096, 4096, tile_m=64)[0] / 1e9
    2.147483648
    """
    m, n, k = (np.asarray(x, float) for x in (m, n, k))
    m_math = m if tile_m is None else np.ceil(m / tile_m) * tile_m
    return _out(2.0 * m_math * n * k), _out((m * k + k * n) * bytes_per_element(dtype) + m * n * OUTPUT_BYTES)


def prefill_attention_work(batch, isl, heads, kv_heads, head_dim):
    """(FLOP, bytes) of one layer's causal prefill attention over ``batch`` prompts of ``isl`` tokens:
    4 H d per (token, earlier token) pair, isl(isl − 1)/2 pairs; Q, K, V read and O written in BF16.

    >>> f, b = prefill_attention_work(1, 1024, 32, 8, 128)
    >>> round(f / 1e9, 2), round(b / 1e6, 2)
    (8.58, 20.97)
    """
    b, s, h, hkv, d = (np.asarray(x, float) for x in (batch, isl, heads, kv_heads, head_dim))
    return _out(4.0 * h * d * s * (s - 1) / 2 * b), _out(b * s * d * 2.0 * (2 * h + 2 * hkv))


def decode_attention_work(batch, context, heads, kv_heads, head_dim, kv_dtype: str = "bf16"):
    """(FLOP, bytes) of one layer's decode attention: ``batch`` new tokens, each over ``context`` cached
    tokens, 4 H d FLOP per pair; the bytes are the KV cache read, batch × c × 2 H_kv d × b_kv.

    >>> decode_attention_work(1, 1000, 32, 8, 128)       # 4 MB of BF16 KV for 16 MFLOP
    (16384000.0, 4096000.0)
    """
    b, c, h, hkv, d = (np.asarray(x, float) for x in (batch, context, heads, kv_heads, head_dim))
    return _out(4.0 * h * d * c * b), _out(b * c * 2.0 * hkv * d * bytes_per_element(kv_dtype))


def roofline_time_s(flops, bytes_moved, peak_flops_per_s, bandwidth_bytes_per_s, compute_fraction=1.0,
                    bandwidth_fraction=1.0, overhead_s=0.0, smooth=None):  # fmt: skip
    """max(a, b) + t₀ (s) with a = FLOP ÷ (e_c P), b = bytes ÷ (e_b W); ``smooth`` = p replaces the max
    by (aᵖ + bᵖ)^(1/p) (p = 1: the sum). Arrays broadcast.

    >>> roofline_time_s(1e12, 1e9, 1e15, 1e12, 0.5, 1.0, 1e-6)   # 2 ms of math beat 1 ms of memory
    0.002001
    """
    a = np.asarray(flops, float) / (compute_fraction * peak_flops_per_s)
    b = np.asarray(bytes_moved, float) / (bandwidth_fraction * bandwidth_bytes_per_s)
    hi, lo = np.maximum(a, b), np.minimum(a, b)
    return _out((hi if smooth is None else hi * (1 + (lo / hi) ** smooth) ** (1 / smooth)) + overhead_s)


def _out(x):
    x = np.asarray(x, float)
    return float(x) if x.ndim == 0 else x


def fit_roofline(flops, bytes_moved, peak, bandwidth, measured_s, free=("compute", "bandwidth"),
                 smooth=None, iters: int = 60) -> dict:  # fmt: skip
    """e_c, e_b (those in ``free``; the others stay 1) and t₀ (s) of ``roofline_time_s`` fitted to
    ``measured_s`` (s): Huber loss on log time, a grid start, then Levenberg–Marquardt (IRLS weights).

    >>> f, b = np.array([1e9, 1e10, 1e11, 1e12]), np.full(4, 1e8)
    >>> t = roofline_time_s(f, b, 1e15, 1e12, 0.7, 0.8, 5e-6)
    >>> {k: round(v, 6) for k, v in fit_roofline(f, b, 1e15, 1e12, t).items()}
    {'compute_fraction': 0.7, 'bandwidth_fraction': 0.8, 'overhead_s': 5e-06}
    """
    a0, b0 = np.asarray(flops, float) / peak, np.asarray(bytes_moved, float) / bandwidth
    logy, use = np.log(np.asarray(measured_s, float)), [x in free for x in ("compute", "bandwidth")] + [True]
    idx = [i for i, u in enumerate(use) if u]

    def unpack(th):
        return *(1 / (1 + math.exp(-th[i])) if use[i] else 1.0 for i in range(2)), math.exp(th[2])

    def residual_and_jacobian(th):
        ec, eb, t0 = unpack(th)
        a, b = a0 / ec, b0 / eb
        hi, q = np.maximum(a, b), (np.minimum(a, b) / np.maximum(a, b)) ** (smooth or np.inf)
        core = hi * (1 + q) ** (1 / smooth) if smooth else hi
        share_a = np.where(a >= b, 1 / (1 + q), q / (1 + q))  # d log core / d log a
        total = core + t0
        cols = [-(core / total) * share_a * (1 - ec), -(core / total) * (1 - share_a) * (1 - eb), t0 / total]
        return np.log(total) - logy, np.stack([cols[i] for i in idx])

    def cost(r):
        z = np.abs(r)
        return float(np.sum(np.where(z <= HUBER_DELTA, z**2 / 2, HUBER_DELTA * (z - HUBER_DELTA / 2))))

    logit = lambda e: math.log(e / (1 - e))  # noqa: E731
    fracs, costs = (0.3, 0.5, 0.7, 0.9), (1e-6, 4e-6, 16e-6)
    grid = [np.array([logit(c), logit(b), math.log(t)]) for c in fracs for b in fracs for t in costs]
    th = min(grid, key=lambda t: cost(residual_and_jacobian(t)[0]))
    r, jac = residual_and_jacobian(th)
    c, lam = cost(r), 1e-3
    for _ in range(iters):
        w = np.minimum(1.0, HUBER_DELTA / np.maximum(np.abs(r), 1e-12))  # the Huber loss as weights
        a = np.einsum("in,jn,n->ij", jac, jac, w)  # einsum, not BLAS: see roofline.calibration.fit
        cand = th.copy()
        cand[idx] += spd_solve(a + lam * np.diag(np.diag(a) + 1e-12), -np.einsum("in,n,n->i", jac, r, w))
        r2, jac2 = residual_and_jacobian(cand)
        if (c2 := cost(r2)) < c:
            done = c - c2 < 1e-12 * c
            th, r, jac, c, lam = cand, r2, jac2, c2, max(lam / 3, 1e-9)
            if done:
                break
        elif (lam := lam * 4) > 1e8:
            break
    ec, eb, t0 = unpack(th)
    return {"compute_fraction": ec, "bandwidth_fraction": eb, "overhead_s": t0}


def kernel_samples(kind: str, gpu: str, engine: str, dtype: str = "bf16", tile_m=None) -> dict:
    """One group's timings as arrays: "flops", "bytes", "measured_s", "m" (GEMMs; else 0); the GPU's "peak"
    (FLOP/s) and "bandwidth" (bytes/s); "held_out", a checkerboard over the two main shape axes (the half
    a held-out check scores); "version". ``kind``: "gemm", "prefill" or "decode"; ``dtype``: the GEMM's
    input format or the decode's KV format (prefill: BF16)."""
    t = load_kernel_table(FORMS[kind][0])
    fmt = t["kv_dtype" if kind == "decode" else "dtype"]
    sel = (t["gpu"] == gpu) & (t["engine"] == engine) & (fmt == dtype)
    s, g = {c: v[sel] for c, v in t.items()}, get_gpu(gpu)
    shape = [s[c] for c in SHAPES[FORMS[kind][0]]]
    if kind == "gemm":
        work, axes = gemm_work(*shape, dtype, tile_m), ("n", "k")
    elif kind == "prefill":
        work, axes = prefill_attention_work(*shape), ("batch", "isl")
    else:
        work, axes = decode_attention_work(*shape, dtype), ("batch", "context")
    rank = sum(np.searchsorted(np.unique(s[a]), s[a]) for a in axes)
    peak = peak_flops_per_s(g, dtype if kind == "gemm" else "bf16")
    return {"flops": np.atleast_1d(work[0]), "bytes": np.atleast_1d(work[1]), "measured_s": s["latency_s"],
            "m": s.get("m", np.zeros(sel.sum())), "peak": peak, "bandwidth": g.memory_bandwidth_bytes_per_s,
            "held_out": rank % 2 == 1, "version": ", ".join(sorted(set(s["version"].tolist())))}  # fmt: skip


def fit_group(kind: str, gpu: str, engine: str, dtype: str = "bf16", *, free=None, smooth="form", tile_m=None,
              held_out: bool = True) -> dict:  # fmt: skip
    """Fit one group (``kernel_samples``) in the form of ``FORMS`` (or the ``free`` fractions and ``smooth``
    given) and score it: the fractions and t₀ (s); rows used and dropped (faster than the floor); the median
    and p90 of |log(predicted ÷ measured)|; the median on the held-out half of a fit on the other half; for
    GEMMs the median signed log error per m bucket.

    >>> r = fit_group("decode", "h100-sxm", "vllm", "bf16")
    >>> 0.5 < r["bandwidth_fraction"] <= 1, r["rows"], r["dropped"]
    (True, 74, 0)
    """
    free = FORMS[kind][1] if free is None else free
    smooth = FORMS[kind][2] if smooth == "form" else smooth
    s = kernel_samples(kind, gpu, engine, dtype, tile_m)
    ok = s["measured_s"] >= np.maximum(s["flops"] / s["peak"], s["bytes"] / s["bandwidth"])
    if not ok.any():
        raise InvalidConfigurationError(f"no usable {kind} kernel timings for {engine} on {gpu} at {dtype}")
    args = (s["peak"], s["bandwidth"])

    def fit_on(rows):
        return fit_roofline(s["flops"][rows], s["bytes"][rows], *args, s["measured_s"][rows], free, smooth)

    def log_error(p, rows):
        return np.log(roofline_time_s(s["flops"][rows], s["bytes"][rows], *args, **p, smooth=smooth)
                      / s["measured_s"][rows])  # fmt: skip

    err = log_error(p := fit_on(ok), ok)
    out = {**p, "rows": int(ok.sum()), "dropped": int((~ok).sum()), "version": s["version"],
           "median_abs_log_error": float(np.median(np.abs(err))),
           "p90_abs_log_error": float(np.quantile(np.abs(err), 0.9))}  # fmt: skip
    if held_out:
        test = ok & s["held_out"]
        out["held_out_median_abs_log_error"] = float(np.median(np.abs(log_error(fit_on(ok & ~test), test))))
    if kind == "gemm":
        m, edges = s["m"][ok], (0, 16, 64, 256, 1024, math.inf)
        out["median_log_error_by_m"] = {f"{lo}<m<={hi}": float(np.median(err[(m > lo) & (m <= hi)]))
                                        for lo, hi in zip(edges[:-1], edges[1:], strict=True)
                                        if np.any((m > lo) & (m <= hi))}  # fmt: skip
    return out


@functools.cache
def fitted_groups(kind: str) -> tuple[tuple[str, str, str], ...]:
    """The (GPU, engine, dtype) groups the tables hold for ``kind`` ("gemm", "prefill", "decode").

    >>> ("h100-sxm", "tensorrt-llm", "fp8") in fitted_groups("gemm")
    True
    """
    t = load_kernel_table(FORMS[kind][0])
    col = t["kv_dtype"] if kind == "decode" else t["dtype"]
    return tuple(sorted(set(zip(t["gpu"].tolist(), t["engine"].tolist(), col.tolist(), strict=True))))


# --------------------------------------------------------------------------------------------------
# The numbers the step model reads
# --------------------------------------------------------------------------------------------------


@functools.cache
def _usable_fit(kind: str, gpu: str, engine: str, dtype: str) -> tuple[dict | None, str]:
    """(the group's fit, "") or (None, why it cannot be used)."""
    if (gpu, engine, dtype) not in fitted_groups(kind):
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


def _nearest_gpu(gpu) -> tuple[str | None, str]:
    """The timed GPU whose fits ``gpu`` uses: itself, else the nearest in peak and bandwidth of its family
    with the same memory class; None if there is none (then the figures are sourced); and why. GeForce
    boards never borrow: their data sheets rate FP32-accumulate tensor math at half the professional rate
    and they boost above it, so a professional card's fraction of its data sheet does not carry over."""
    have = sorted({g for g, _, _ in fitted_groups("gemm")})
    if gpu.id in have:
        return gpu.id, ""
    fam = gpu_families().get(gpu.id, "unknown")
    peers = [
        p
        for p in map(get_gpu, have)
        if gpu_families().get(p.id) == fam and _memory_class(p) == _memory_class(gpu)
    ]
    if "geforce" in gpu.name.lower():
        return (
            None,
            f"{gpu.id} has no kernel timings, and a GeForce board borrows no professional card's fits",
        )
    if not peers:
        mem = _memory_class(gpu).upper()
        return None, (f"{gpu.id} has no kernel timings, nor has any {fam} GPU with {mem} memory; fractions "
                      "are not carried across families")  # fmt: skip
    rates = lambda g: np.log([g.dense_flops_per_s["bf16"], g.memory_bandwidth_bytes_per_s])  # noqa: E731
    best = min(peers, key=lambda p: float(np.abs(rates(p) - rates(gpu)).sum()))
    return best.id, f"{gpu.id} has no kernel timings: {best.id}'s (same {fam} family, nearest rates)"


def _check_formats(dtype: str, kv_dtype: str) -> None:
    if dtype not in GEMM_FORMATS or kv_dtype not in KV_FORMATS:
        raise InvalidConfigurationError(
            f"kernel timings cover GEMMs in {', '.join(GEMM_FORMATS)} and KV caches in "
            f"{', '.join(KV_FORMATS)}; got {dtype!r}, {kv_dtype!r}"
        )


def kernel_parameters(gpu_id, framework=None, dtype: str = "bf16", kv_dtype: str = "bf16") -> dict:
    """The fitted kernel numbers of ``framework`` (an engine id or alias; None: the median over the timed
    engines) on ``gpu_id``: GEMMs at ``dtype`` (bf16, fp16, fp8, fp8-block128), prefill attention (BF16),
    decode attention over a ``kv_dtype`` cache. Keys ``<kernel>_<compute|bandwidth>_fraction`` (0–1] and
    ``<kernel>_overhead_s`` (s). Unusable timings fall back to the median of the other engines on the GPU,
    a GPU without timings to its family's nearest timed GPU with the same memory class, and a GPU whose
    family has none to ``sourced_parameters``; ``source`` says so ("fitted" if none of these).

    >>> p = kernel_parameters("h100-pcie", "trt-llm")
    >>> p["fitted_on"], p["source"]
    ('h100-sxm', "h100-pcie has no kernel timings: h100-sxm's (same hopper family, nearest rates)")
    >>> kernel_parameters("b200", "vllm", dtype="fp8-block128")["source"]
    "vllm's fp8-block128 gemm timings on b200 carry ... µs of host time: median over sglang, tensorrt-llm"
    >>> kernel_parameters("mi300x", "vllm")["source"]
    'mi300x has no kernel timings, nor has any cdna3 GPU with HBM memory; ...: sourced: e_b = ...'
    """
    gpu = get_gpu(gpu_id)
    _check_formats(dtype, kv_dtype)
    timed, why = _nearest_gpu(gpu)
    if timed is None:
        p = sourced_parameters(gpu.id, framework, dtype, kv_dtype)
        return {**p, "source": f"{why}: {p['source']}"}
    engines = sorted({e for g, e, _ in fitted_groups("gemm") if g == timed})
    wanted = engines if framework is None else [get_engine(framework).id]
    out, reasons = {"gpu": gpu.id, "engine": framework and wanted[0], "dtype": dtype, "kv_dtype": kv_dtype,
                    "fitted_on": timed}, [why] if why else []  # fmt: skip
    for kind, dt in (("gemm", GEMM_FORMATS[dtype]), ("prefill", "bf16"), ("decode", KV_FORMATS[kv_dtype])):
        tried = {e: _usable_fit(kind, timed, e, dt) for e in {*engines, *wanted}}
        if not (used := [e for e in wanted if tried[e][0]] or [e for e in engines if tried[e][0]]):
            raise InvalidConfigurationError(f"no usable {dt} {kind} kernel timings on {timed}")
        if used != wanted:
            why_not = "; ".join(tried[e][1] for e in wanted if not tried[e][0])
            reasons.append(f"{why_not}: median over {', '.join(used)}")
        for name in [f"{x}_fraction" for x in FORMS[kind][1]] + ["overhead_s"]:
            out[f"{PREFIX[kind]}_{name}"] = float(np.median([tried[e][0][name] for e in used]))
    out["source"] = "; ".join(reasons) or ("fitted" if framework else f"median over {', '.join(engines)}")
    return out


# --------------------------------------------------------------------------------------------------
# GPUs without kernel timings: the data sheet plus sourced achievable figures
# --------------------------------------------------------------------------------------------------


def load_achievable_bandwidth(directory: str | None = None) -> dict:
    """``data/measured/achievable_bandwidth.csv`` (or the one in ``directory``) as GPU id → {"fraction": the
    measured bandwidth ÷ the data sheet's (a sibling row's measured fraction where the GPU has none),
    "via": the row whose measurement that is, "method", "line"}. Checked: every column, known GPU ids
    without repeats, exactly one of a measurement (TB/s, at most the data sheet's) or a measured sibling, a
    source URL and an ISO date; bad data is a ``DataTableError`` naming the file and line.

    >>> t = load_achievable_bandwidth()
    >>> round(t["mi300x"]["fraction"], 3), t["m4-pro"]["via"]
    (0.804, 'm4-max')
    """
    return _achievable_table(str(Path(directory) / ACHIEVABLE_FILE) if directory else None)


@functools.cache
def _achievable_table(path: str | None) -> dict:
    path = path or str(table_path(MEASURED_DIR) / ACHIEVABLE_FILE)
    try:
        rows = list(csv.DictReader(io.StringIO(Path(path).read_text(encoding="utf-8"))))
    except OSError as exc:
        raise DataTableError(f"{path}: cannot read the table: {exc.strerror or exc}") from None
    out, measured = {}, {}
    for line, row in enumerate(rows, start=2):
        where = f"{path}, line {line}"
        if missing := [c for c in ACHIEVABLE_COLUMNS if row.get(c) is None]:
            raise DataTableError(f"{path}: missing column {', '.join(missing)}")
        row = {c: (row[c] or "").strip() for c in ACHIEVABLE_COLUMNS}
        if empty := [c for c in ("gpu", "method", "source", "date", "note") if not row[c]]:
            raise DataTableError(f"{where}: missing {', '.join(empty)}")
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


def sourced_family(gpu_id) -> str:
    """The family whose sourced figures (``data/assumptions.toml``) a GPU without timed siblings uses:
    "amd" (Instinct, HIP graphs), "apple" (M-series, Metal) or "nvidia-gddr" (GeForce, RTX PRO, A10G).

    >>> sourced_family("rtx-4090"), sourced_family("m2-ultra")
    ('nvidia-gddr', 'apple')
    """
    gpu = get_gpu(gpu_id)
    if gpu.vendor in ("amd", "apple"):
        return gpu.vendor
    if gpu.vendor == "nvidia" and _memory_class(gpu) == "gddr":
        return "nvidia-gddr"
    raise InvalidConfigurationError(
        f"no sourced kernel figures for {gpu.id} ({gpu.vendor}, {gpu.memory_type}); sourced families: "
        f"{', '.join(SOURCED_FAMILIES)}. A GPU with a timed sibling uses its fits: kernel_parameters"
    )


def _sourced_figure(figure: str, gpu_id: str, family: str) -> tuple[float, str]:
    """The assumption ``<figure>_<gpu>``, else ``<figure>_<family>``: (value, its id)."""
    for name in (f"{figure}_{gpu_id}", f"{figure}_{family}"):
        if name in ASSUMPTIONS:
            return float(ASSUMPTIONS[name].value), name
    raise InvalidConfigurationError(
        f"no assumption {figure}_{gpu_id} nor {figure}_{family} in data/assumptions.toml for {gpu_id}"
    )


def sourced_parameters(gpu_id, framework=None, dtype: str = "bf16", kv_dtype: str = "bf16") -> dict:
    """Kernel numbers from the data sheet plus sourced achievable figures, for a GPU whose family has no
    kernel timings: the keys of ``kernel_parameters``. Every bandwidth fraction (GEMM e_b, decode e_kv and
    prefill e_tok) is the measured ÷ data-sheet bandwidth of ``data/measured/achievable_bandwidth.csv``
    (a sibling's where the GPU has no measurement); e_c (GEMMs), e_att (prefill attention) and t₀ (s, every
    kernel) are the assumptions ``gemm_compute_fraction``, ``attention_compute_fraction`` and
    ``kernel_launch_s`` of the GPU, else of its ``sourced_family``. The figures do not depend on the
    engine or the formats (the sources measure BF16/FP16 GEMMs; AMD's FP8 GEMMs reach 0.49 against BF16's
    0.54); ``framework``, ``dtype`` and ``kv_dtype`` are recorded for parity with ``kernel_parameters``.
    ``source`` names the CSV row and each assumption.

    >>> p = sourced_parameters("mi300x")
    >>> round(p["decode_attention_bandwidth_fraction"], 3), p["gemm_compute_fraction"], p["gemm_overhead_s"]
    (0.804, 0.54, 2e-06)
    >>> p["source"]
    'sourced: e_b = e_kv = e_tok from achievable_bandwidth.csv row mi300x (BabelStream ...); ...'
    """
    gpu, family = get_gpu(gpu_id), sourced_family(gpu_id)
    _check_formats(dtype, kv_dtype)
    row = load_achievable_bandwidth().get(gpu.id)
    if row is None:
        raise InvalidConfigurationError(f"{gpu.id} has no row in data/measured/{ACHIEVABLE_FILE}")
    e_c, c_id = _sourced_figure("gemm_compute_fraction", gpu.id, family)
    e_att, att_id = _sourced_figure("attention_compute_fraction", gpu.id, family)
    t0, t0_id = _sourced_figure("kernel_launch_s", gpu.id, family)
    e_b, measured = row["fraction"], row["via"]
    via = f"row {gpu.id} ({row['method']})" if measured == gpu.id else f"rows {gpu.id} -> {measured}"
    return {
        "gpu": gpu.id, "engine": framework and get_engine(framework).id, "dtype": dtype, "kv_dtype": kv_dtype,
        "fitted_on": None,
        "gemm_compute_fraction": e_c, "gemm_bandwidth_fraction": e_b, "gemm_overhead_s": t0,
        "prefill_attention_compute_fraction": e_att, "prefill_attention_bandwidth_fraction": e_b,
        "prefill_attention_overhead_s": t0,
        "decode_attention_bandwidth_fraction": e_b, "decode_attention_overhead_s": t0,
        "source": f"sourced: e_b = e_kv = e_tok from {ACHIEVABLE_FILE} {via}; e_c from assumption {c_id}; "
                  f"e_att from {att_id}; t0 from {t0_id}",
    }  # fmt: skip


def _time(kind, work, gpu_id, framework, dtype, kv_dtype="bf16"):
    p, g = kernel_parameters(gpu_id, framework, dtype, kv_dtype), get_gpu(gpu_id)
    names = ("compute_fraction", "bandwidth_fraction", "overhead_s")
    fr = {n: p.get(f"{PREFIX[kind]}_{n}", 1.0) for n in names}
    peak = peak_flops_per_s(g, dtype if kind == "gemm" else "bf16")
    return roofline_time_s(*work, peak, g.memory_bandwidth_bytes_per_s, **fr, smooth=FORMS[kind][2])


def gemm_time_s(m, n, k, gpu_id, framework=None, dtype: str = "bf16"):
    """An (m × k) · (k × n) GEMM's time (s) on ``gpu_id`` with ``framework``'s kernels (arrays broadcast).

    >>> t = gemm_time_s([1, 8192], 4096, 4096, "h100-sxm", "vllm")    # measured 15.0 µs and 347 µs
    >>> [round(x * 1e6) for x in t]
    [15, 351]
    """
    return _time("gemm", gemm_work(m, n, k, dtype), gpu_id, framework, dtype)


def prefill_attention_time_s(batch, isl, heads, kv_heads, head_dim, gpu_id, framework=None):
    """One layer's causal prefill attention (s) over ``batch`` prompts of ``isl`` tokens, BF16.

    >>> round(prefill_attention_time_s(1, 8192, 32, 8, 128, "h100-sxm", "vllm") * 1e6)    # measured 912 µs
    926
    """
    work = prefill_attention_work(batch, isl, heads, kv_heads, head_dim)
    return _time("prefill", work, gpu_id, framework, "bf16")


def decode_attention_time_s(batch, context, heads, kv_heads, head_dim, gpu_id, framework=None,
                            kv_dtype: str = "bf16"):  # fmt: skip
    """One layer's decode attention (s): ``batch`` new tokens, each over ``context`` cached tokens.

    >>> round(decode_attention_time_s(8, 8192, 32, 8, 128, "h100-sxm", "vllm") * 1e6)   # measured 100 µs
    108
    """
    work = decode_attention_work(batch, context, heads, kv_heads, head_dim, kv_dtype)
    return _time("decode", work, gpu_id, framework, "bf16", kv_dtype)
