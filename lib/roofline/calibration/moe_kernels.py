"""MoE layers and MLA attention as engines run them, fitted on measured timings.

Feeds the engine model taught in notebooks/floor_to_real_server.ipynb, for large MoE and MLA models.

The timings are NVIDIA aiconfigurator's per-operation database (Apache-2.0; ``data/measured/kernels/``
``moe.csv`` and ``mla.csv``, provenance in ``data/measured/README.md``), the source of
``roofline.calibration.kernels`` too. With P the GPU's dense peak in the format's math and W its memory
bandwidth, in SI units:

    MoE layer      t = smax₂(F ÷ (e_c P), B ÷ (e_b W)) + t₀,  smax₂(a, b) = √(a² + b²)
                   F = 2 × pairs × 3 h I/tp;  B = touched × 3 h I/tp × b_w + pairs × 2 h × 2 bytes
    MLA decode     t = max(F ÷ (e_c P), KV ÷ (e_b W)) + t₀;  F = batch c H f;  KV = batch c (r + d_r) b_kv
    MLA prefill    t = F ÷ (e_c P) + (Q, K, V, O bytes) ÷ (e_b W) + t₀;  F = batch × s(s − 1)/2 × H × f
    MLA module     decode: the hard max, prefill: smax₄, of the same work plus the projections' (vLLM and
                   TensorRT-LLM time the module whole: down-projections, q up-projection, attention, output)

One MoE layer on one GPU (rank 0 of ``moe_tp × moe_ep``) runs the router and the experts its tokens touch:
``pairs`` (token, local expert) products through each expert's three h × I/tp matrices (gate, up, down),
whose weights are read once if any token touched the expert. ``benchmark_routing`` counts them under the
benchmark's own assignments, "balanced" and "grouped-8-4" (a trained router's expectation is the engine
model's: ``roofline.physics.architecture.expected_experts_touched``). f is
``roofline.physics.architecture.attention_flops_per_pair`` per layer and head: absorbed 2(2r + d_r) = 2176
FLOP (decode; SGLang's prefill on Hopper and Ada), expanded 2(d_nope + d_r + d_v) = 640.

**The forms were chosen on held-out shapes** (a fit on half the shapes scoring the other half; median over
the groups): an MoE layer's two GEMMs and activation run one after another, so loads and math overlap less
than in one GEMM: smax₂ 10.7 % beats the hard max 12.1 % and smax₄ 12.2 %; the sum (10.2 %) would say
weights and math never overlap, even at 8192 tokens (e_c 0.44 where smax₂ gives 0.31). MLA decode: the hard
max 14.3 % (smax₄ 14.5 %, the sum 16.0 % with e_c = 1 in 18 of 25 groups); prefill: the sum 5.6 % (hard
max 13.2 %), as for ``kernels``' prefill attention; modules: every form within 1.5 points. Decode is fitted
per KV format: SGLang's FP8-KV MLA on Hopper casts the cache at ~6 % of HBM bandwidth.

Each group (GPU × engine × format) is fitted and scored with ``roofline.calibration.kernels.score_fit`` (Huber
on log time, deterministic); rows faster than the roofline floor are dropped. A group is used if its t₀ is a
kernel's (1–200 µs) and the form describes it (median error ≤ 35 %); else ``moe_parameters`` and
``mla_parameters`` fall back and say so.

>>> p = moe_parameters("h200", "sglang", "fp8-block128")
>>> 0.5 < p["moe_bandwidth_fraction"] <= 1, p["source"]
(True, 'fitted')
"""

from __future__ import annotations

import functools
import math

import numpy as np

from roofline.calibration.kernels import (
    TABLES,
    load_kernel_table,
    nearest_in_rates,
    scalar_or_array,
    score_fit,
)
from roofline.data import DataTableError, get_gpu, get_model
from roofline.engines.params import gpu_families
from roofline.engines.registry import get_engine
from roofline.errors import InvalidConfigurationError
from roofline.physics.architecture import attention_flops_per_pair
from roofline.physics.precision import bytes_per_element, peak_flops_per_s

# MoE format -> (weight element format, the format of the math): W4A16 formats multiply in BF16.
MOE_FORMATS = {"bf16": ("bf16", "bf16"), "fp8": ("fp8", "fp8"), "fp8-block128": ("fp8-block128", "fp8"),
               "w4a16-mxfp4": ("mxfp4", "bf16"), "int4": ("int4", "bf16")}  # fmt: skip
# A format a GPU was not timed in borrows the timed format whose kernel does the same work: aiconfigurator
# times no MXFP4 MoE on the A100, where engines run MXFP4 experts with Marlin's W4A16 kernel, as INT4.
FORMAT_PROXY = {"w4a16-mxfp4": "int4"}
ROUTING_GROUPS = {"balanced": (1, 1), "grouped-8-4": (8, 4)}  # routing -> (expert groups, groups kept)
ACTIVATION_BYTES = 2.0  # token rows enter and leave the experts in BF16
MOE_SMOOTH = 2  # a rounder max than a GEMM's: two GEMMs and the activation run one after another
# kind -> (op in mla.csv, fractions fitted, smooth: 1 the sum, None the hard max)
MLA_FORMS = {
    "decode": ("mla_generation", ("compute", "bandwidth"), None),
    "prefill": ("mla_context", ("compute", "bandwidth"), 1),
    "decode_module": ("mla_generation_module", ("compute", "bandwidth"), None),
    "prefill_module": ("mla_context_module", ("compute", "bandwidth"), 4),
}
MLA_MODEL = "deepseek-v3"  # the MLA shape aiconfigurator times (DeepSeek-V3/R1: r = 512, d_rope = 64)
# A group is used if its fixed cost is a kernel's (or, for a module, a dozen kernels': vLLM's MLA module
# costs ~110 µs inside a CUDA graph), not host time, and the roofline form describes it (TensorRT-LLM 1.0's
# MLA decode on the A100 and L40S runs one thread block per sequence: 8 ms at any batch up to 16).
# A fit with no fixed cost at all (under 1 µs: less than one launch) has traded t₀ for its fractions.
MAX_OVERHEAD_S, MIN_OVERHEAD_S = 200e-6, 1e-6
MAX_MEDIAN_LOG_ERROR = math.log(1.35)


# --------------------------------------------------------------------------------------------------
# Which experts a step touches
# --------------------------------------------------------------------------------------------------


@functools.cache
def benchmark_routing(tokens: int, experts: int, topk: int, moe_ep: int = 1, routing: str = "balanced"):
    """(experts touched, token-expert pairs, tokens) on rank 0 of ``moe_ep`` expert-parallel GPUs (it holds
    experts 0 … E/ep − 1) under aiconfigurator's "balanced" router logits. Its collector
    (``collector/helper.py``, ``balanced_logits``) gives token i the experts (i + j s) mod E, j < k, with
    stride s = ⌈E/k⌉ (⌊i s/T + j s⌋ mod E when T < s): the fewest repeats, min(E, T k) experts touched,
    each as evenly loaded as T k ÷ E allows. DeepSeek-V3's own router ("grouped-8-4", which SGLang's and
    vLLM's collectors run) first keeps 4 of 8 groups of 32 experts: every group holds one of a token's
    experts, so the tie goes to groups 0–3, and the 4 picks left go to the tied lowest-numbered experts
    (0–3). It touches at most 128 + 4 experts and loads experts 0–3 with every token; timings at
    1, 2, 4 … 256-way EP confirm it (the step time follows the pairs rank 0 gets).

    >>> benchmark_routing(1, 256, 8), benchmark_routing(64, 256, 8), benchmark_routing(64, 256, 8, 8)
    ((8, 8, 1), (256, 512, 64), (32, 64, 64))
    >>> benchmark_routing(64, 256, 8, 1, "grouped-8-4"), benchmark_routing(64, 256, 8, 8, "grouped-8-4")
    ((128, 512, 64), (32, 320, 64))
    """
    n_group, topk_group = ROUTING_GROUPS[routing]
    s, j = math.ceil(experts / topk), np.arange(topk)[None, :]
    if tokens >= s:  # token i routes like token i mod E: simulate each residue once, weighted by its count
        t = np.arange(min(tokens, experts))[:, None]
        weight, hot = (tokens - 1 - t[:, 0]) // experts + 1, (t + j * s) % experts
    else:
        t = np.arange(tokens)[:, None]
        weight, hot = np.ones(tokens, int), np.floor(t * s / tokens + j * s).astype(int) % experts
    chosen, rows = hot, len(t)
    if n_group > 1:
        size = experts // n_group
        is_hot = np.zeros((rows, experts), bool)
        np.put_along_axis(is_hot, hot, True, axis=1)
        in_group = is_hot.reshape(rows, n_group, size).sum(2)
        # a group scores its two best experts: two hot beat one, one beats none; ties to the lower group
        group_key = np.minimum(in_group, 2) * n_group + (n_group - 1 - np.arange(n_group))
        keep = np.argsort(-group_key, axis=1, kind="stable")[:, :topk_group]
        allowed = np.zeros((rows, n_group), bool)
        np.put_along_axis(allowed, keep, True, axis=1)
        key = np.where(
            np.repeat(allowed, size, axis=1), is_hot * experts + (experts - 1 - np.arange(experts)), -1
        )
        chosen = np.argpartition(-key, topk - 1, axis=1)[:, :topk]  # the k largest keys; all keys differ
    local = chosen < experts // moe_ep
    pairs, any_local = int((local.sum(1) * weight).sum()), int(weight[local.any(axis=1)].sum())
    return int(np.unique(chosen[local]).size), pairs, any_local


# --------------------------------------------------------------------------------------------------
# The work of an MoE layer and of MLA
# --------------------------------------------------------------------------------------------------


def moe_work(
    tokens, hidden, inter, topk, experts, moe_tp=1, moe_ep=1, dtype="fp8-block128", routing="balanced"
):
    """(FLOP, bytes) of one MoE layer's experts on rank 0 of ``moe_tp × moe_ep`` GPUs for ``tokens`` tokens,
    ``experts`` experts of ``hidden`` × ``inter`` (the top ``topk`` per token, as ``benchmark_routing``'s
    ``routing`` assigns them): each (token, local expert) pair multiplies a token row by three h × I/tp
    matrices (2 FLOP per weight); each touched expert's weights are read once in ``dtype``; each pair's
    input and output rows move in BF16. Arrays broadcast.

    >>> f, b = moe_work(1, 7168, 2048, 8, 256, dtype="fp8-block128")   # DeepSeek-V3, one token
    >>> round(f / 1e9, 3), round(b / 1e6, 1)                             # 8 experts x 44 MB
    (0.705, 352.6)
    """
    if routing not in ROUTING_GROUPS:
        raise InvalidConfigurationError(
            f"routing must be one of {', '.join(ROUTING_GROUPS)}; got {routing!r}"
        )
    args = (tokens, hidden, inter, topk, experts, moe_tp, moe_ep)
    t, h, i, k, e, tp, ep = (a.astype(float) for a in np.broadcast_arrays(*map(np.asarray, args)))
    rows = zip(*(a.ravel() for a in (t, e, k, ep)), strict=True)
    counts = [benchmark_routing(*map(int, row), routing) for row in rows]
    touched, pairs = (np.reshape([c[n] for c in counts], t.shape) for n in (0, 1))
    per_expert = 3 * h * i / tp
    nbytes = touched * per_expert * _weight_bytes(dtype) + pairs * 2 * h * ACTIVATION_BYTES
    return scalar_or_array(2 * pairs * per_expert), scalar_or_array(nbytes)


def _weight_bytes(dtype: str) -> float:
    if dtype not in MOE_FORMATS:
        raise InvalidConfigurationError(f"MoE formats timed: {', '.join(MOE_FORMATS)}; got {dtype!r}")
    return bytes_per_element(MOE_FORMATS[dtype][0])


def mla_pair_flops(form: str = "absorbed") -> float:
    """FLOP per (query token, cached token) pair of one MLA head in one layer (FLOP): DeepSeek-V3's
    ``attention_flops_per_pair`` ÷ (layers × heads). "absorbed": 2 (2 r + d_rope) = 2176; "expanded":
    2 (d_nope + d_rope + d_v) = 640.

    >>> mla_pair_flops("absorbed"), mla_pair_flops("expanded")
    (2176.0, 640.0)
    """
    if form not in ("absorbed", "expanded"):
        raise InvalidConfigurationError(f"MLA form must be 'absorbed' or 'expanded'; got {form!r}")
    m = get_model(MLA_MODEL)
    return attention_flops_per_pair(m, absorbed=form == "absorbed") / (m.layers * m.attention_heads)


def _mla_dims():
    m = get_model(MLA_MODEL)
    return m, m.kv_lora_rank + m.qk_rope_head_dim


def mla_decode_work(batch, context, heads, kv_dtype="bf16"):
    """(FLOP, bytes) of one layer's absorbed MLA decode over ``heads`` local heads: ``batch`` new tokens,
    each over ``context`` cached tokens; the bytes are the latent cache read, batch × c × (r + d_rope) × b_kv
    (every head shares it).

    >>> mla_decode_work(1, 1000, 16)    # 35 MFLOP over 1.15 MB of BF16 latent: 30 FLOP per byte
    (34816000.0, 1152000.0)
    """
    b, c, h = (np.asarray(x, float) for x in (batch, context, heads))
    _, row = _mla_dims()
    flops, latent_bytes = b * c * h * mla_pair_flops("absorbed"), b * c * row * bytes_per_element(kv_dtype)
    return scalar_or_array(flops), scalar_or_array(latent_bytes)


def mla_prefill_work(batch, prompt, heads, form="expanded"):
    """(FLOP, bytes) of one layer's causal MLA prefill over ``batch`` prompts of ``prompt`` tokens:
    s(s − 1)/2 pairs (``roofline.calibration.kernels`` convention) × ``mla_pair_flops(form)`` per head;
    per token the BF16 queries, keys, values and outputs (expanded: H (2·192 + 2·128) values; absorbed:
    H (576 + 512) plus the shared 576-wide latent).

    >>> f, b = mla_prefill_work(1, 1024, 128)
    >>> round(f / 1e9, 1), round(b / 1e6, 1)
    (42.9, 167.8)
    """
    b, s, h = (np.asarray(x, float) for x in (batch, prompt, heads))
    m, row = _mla_dims()
    if form == "expanded":
        per_token = h * 2 * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
    else:
        per_token = h * (row + m.kv_lora_rank) + row
    flops, nbytes = b * s * (s - 1) / 2 * h * mla_pair_flops(form), b * s * per_token * 2.0
    return scalar_or_array(flops), scalar_or_array(nbytes)


def mla_projection_parameters(heads) -> np.ndarray:
    """Weights of one MLA layer's projections with ``heads`` local heads (parameters): the down-projections
    h × (q_lora + r + d_rope), replicated on every GPU, and per head q_lora (d_nope + d_rope) up, r (d_nope
    + d_v) for keys and values (absorbed at decode), d_v × h out.

    >>> int(mla_projection_parameters(128)) / 1e6       # DeepSeek-V3 on one GPU
    187.10528
    """
    m = get_model(MLA_MODEL)
    per_head = (m.q_lora_rank * (m.qk_nope_head_dim + m.qk_rope_head_dim)
                + m.kv_lora_rank * (m.qk_nope_head_dim + m.v_head_dim)
                + m.v_head_dim * m.hidden_size)  # fmt: skip
    down = m.hidden_size * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim)
    return scalar_or_array(down + np.asarray(heads, float) * per_head)


def mla_module_work(phase, batch, context, heads, kv_dtype="bf16", dtype="fp8-block128"):
    """(FLOP, bytes) of one whole MLA module: the attention of ``mla_decode_work`` (phase "decode") or
    ``mla_prefill_work`` (phase "prefill", expanded), plus every token through the projections (2 FLOP per
    weight) and the weights read once in ``dtype``; ``context`` is the KV length (decode) or prompt (prefill).

    >>> f, b = mla_module_work("decode", 1, 1024, 16)     # TP 8: 36.6 MB of FP8 weights dominate
    >>> round(f / 1e6, 1), round(b / 1e6, 1)
    (108.9, 37.8)
    """
    w = np.asarray(mla_projection_parameters(heads))
    tokens = np.asarray(batch, float) * (1 if phase == "decode" else np.asarray(context, float))
    if phase == "decode":
        f, b = mla_decode_work(batch, context, heads, kv_dtype)
    elif phase == "prefill":
        f, b = mla_prefill_work(batch, context, heads, "expanded")
    else:
        raise InvalidConfigurationError(f"phase must be 'decode' or 'prefill'; got {phase!r}")
    return scalar_or_array(f + 2 * tokens * w), scalar_or_array(b + w * bytes_per_element(dtype))


# --------------------------------------------------------------------------------------------------
# Fitting the groups
# --------------------------------------------------------------------------------------------------


def moe_samples(gpu: str, engine: str, dtype: str) -> dict:
    """One MoE group's timings as arrays: "flops" (FLOP), "bytes" (``moe_work`` under the benchmark's
    routing), "measured_s" (s), "tokens", the GPU's "peak" (FLOP/s, in the format's math) and "bandwidth"
    (bytes/s), "held_out" (a checkerboard over expert shape × split) and "form" ("").

    >>> s = moe_samples("h200", "sglang", "fp8-block128")
    >>> len(s["flops"]) == len(s["tokens"]) > 60, s["peak"]      # FP8 dense FLOP/s
    (True, 1979000000000000.0)
    """
    t = load_kernel_table("moe.csv")
    sel = (t["gpu"] == gpu) & (t["engine"] == engine) & (t["dtype"] == dtype)
    s, g = {c: v[sel] for c, v in t.items()}, get_gpu(gpu)
    flops, nbytes = np.zeros(sel.sum()), np.zeros(sel.sum())
    for routing in set(s["routing"].tolist()):
        r = s["routing"] == routing
        shape = (s[c][r] for c in TABLES["moe.csv"][1])
        flops[r], nbytes[r] = moe_work(*shape, dtype=dtype, routing=routing)
    cells = [
        np.stack([s[c] for c in cols])
        for cols in (("hidden", "inter", "topk", "experts"), ("moe_tp", "moe_ep"))
    ]
    shape, split = (np.unique(c, axis=1, return_inverse=True)[1].ravel() for c in cells)
    return {"flops": flops, "bytes": nbytes, "measured_s": s["latency_s"], "tokens": s["num_tokens"],
            "peak": peak_flops_per_s(g, MOE_FORMATS[dtype][1]), "bandwidth": g.memory_bandwidth_bytes_per_s,
            "held_out": (shape + split) % 2 == 1, "form": ""}  # fmt: skip


def mla_samples(kind: str, gpu: str, engine: str, kv_dtype: str = "bf16") -> dict:
    """One MLA group's timings (``MLA_FORMS`` kind: "decode", "prefill", "decode_module", "prefill_module";
    decode kinds per KV format) as arrays like ``moe_samples``: "tokens" is the batch, "held_out" a
    checkerboard over heads × batch, "form" the attention form the collector timed. Peaks: BF16 for the
    attention kernels, FP8 for the modules (their block-FP8 projections).

    >>> s = mla_samples("decode", "h200", "sglang")
    >>> s["form"], s["peak"]          # BF16 dense FLOP/s
    ('absorbed', 989000000000000.0)
    """
    t = load_kernel_table("mla.csv")
    sel = (
        (t["gpu"] == gpu)
        & (t["engine"] == engine)
        & (t["op"] == MLA_FORMS[kind][0])
        & (t["kv_dtype"] == kv_dtype)
    )
    s, g = {c: v[sel] for c, v in t.items()}, get_gpu(gpu)
    forms = sorted(set(s["form"].tolist()))
    if len(forms) != 1:
        raise DataTableError(f"mla.csv: {kind} rows of {engine} on {gpu} mix attention forms {forms}")
    b, c, h = s["batch"], s["context"], s["heads"]
    if kind == "decode":
        flops, nbytes = mla_decode_work(b, c, h, kv_dtype)
    elif kind == "prefill":
        flops, nbytes = mla_prefill_work(b, c, h, forms[0])
    else:
        flops, nbytes = mla_module_work(kind.split("_")[0], b, c, h, kv_dtype)
    rank = sum(np.searchsorted(np.unique(s[a]), s[a]) for a in ("heads", "batch"))
    peak = peak_flops_per_s(g, "bf16" if kind in ("decode", "prefill") else "fp8")
    return {"flops": np.atleast_1d(flops), "bytes": np.atleast_1d(nbytes), "measured_s": s["latency_s"],
            "tokens": b, "peak": peak, "bandwidth": g.memory_bandwidth_bytes_per_s, "held_out": rank % 2 == 1,
            "form": forms[0]}  # fmt: skip


@functools.cache
def fit_moe_group(gpu: str, engine: str, dtype: str, held_out: bool = True) -> dict:
    """``score_fit`` of one MoE group (GPU × engine × format) in the smooth max of ``MOE_SMOOTH``.

    >>> r = fit_moe_group("h200", "sglang", "fp8-block128")
    >>> r["rows"] > 60, r["median_abs_log_error"] < 0.15
    (True, True)
    """
    return score_fit(moe_samples(gpu, engine, dtype), smooth=MOE_SMOOTH, held_out=held_out)


@functools.cache
def fit_mla_group(kind: str, gpu: str, engine: str, kv_dtype: str = "bf16", held_out: bool = True) -> dict:
    """``score_fit`` of one MLA group (``MLA_FORMS`` kind × GPU × engine × KV format) in the kind's form.

    >>> r = fit_mla_group("decode", "h200", "sglang")
    >>> 0.7 < r["bandwidth_fraction"] <= 1, r["form"]
    (True, 'absorbed')
    """
    _, free, smooth = MLA_FORMS[kind]
    return score_fit(mla_samples(kind, gpu, engine, kv_dtype), free=free, smooth=smooth, held_out=held_out)


@functools.cache
def moe_groups() -> tuple[tuple[str, str, str], ...]:
    """The (GPU, engine, format) groups of ``moe.csv``.

    >>> ("a100-80gb-sxm", "sglang", "int4") in moe_groups()
    True
    """
    t = load_kernel_table("moe.csv")
    return tuple(sorted(set(zip(t["gpu"].tolist(), t["engine"].tolist(), t["dtype"].tolist(), strict=True))))


@functools.cache
def mla_groups(kind: str) -> tuple[tuple[str, str, str], ...]:
    """The (GPU, engine, KV format) groups of ``mla.csv`` for ``kind``.

    >>> ("h200", "vllm", "bf16") in mla_groups("decode_module")     # vLLM times the module whole
    True
    >>> ("h200", "vllm", "bf16") in mla_groups("decode")
    False
    """
    t = load_kernel_table("mla.csv")
    sel = t["op"] == MLA_FORMS[kind][0]
    keys = zip(t["gpu"][sel].tolist(), t["engine"][sel].tolist(), t["kv_dtype"][sel].tolist(), strict=True)
    return tuple(sorted(set(keys)))


# --------------------------------------------------------------------------------------------------
# The numbers a step model reads
# --------------------------------------------------------------------------------------------------

PREFIX = {"decode": "mla_decode", "prefill": "mla_prefill", "decode_module": "mla_decode_module",
          "prefill_module": "mla_prefill_module"}  # fmt: skip


def _why_unusable(fit: dict) -> str:
    if fit["overhead_s"] > MAX_OVERHEAD_S:
        return f"a fixed cost of {fit['overhead_s'] * 1e6:.0f} µs (host time, not kernels)"
    if fit["overhead_s"] < MIN_OVERHEAD_S:
        return (
            f"no fixed cost ({fit['overhead_s'] * 1e6:.2f} µs): the form does not describe its small batches"
        )
    if fit["median_abs_log_error"] > MAX_MEDIAN_LOG_ERROR:
        return f"the roofline form misses it by a median {math.expm1(fit['median_abs_log_error']):.0%}"
    return ""


@functools.cache
def _usable(kind: str, gpu: str, engine: str, fmt: str) -> tuple[dict | None, str]:
    """(the group's fit, "") or (None, why it cannot be used). ``kind`` "moe" or an ``MLA_FORMS`` kind."""
    groups = moe_groups() if kind == "moe" else mla_groups(kind)
    if (gpu, engine, fmt) not in groups:
        return None, f"no {fmt} {kind} timings for {engine} on {gpu}"
    try:
        fit = (
            fit_moe_group(gpu, engine, fmt, False)
            if kind == "moe"
            else fit_mla_group(kind, gpu, engine, fmt, False)
        )
    except InvalidConfigurationError as exc:
        return None, f"{engine}'s {fmt} {kind} timings on {gpu}: {exc}"
    why = _why_unusable(fit)
    return (None, f"{engine}'s {fmt} {kind} timings on {gpu} show {why}") if why else (fit, "")


def _timed_gpu(gpu, timed: set[str], what: str) -> tuple[str, str]:
    """``gpu`` itself if timed, else its family's nearest timed GPU in peak and bandwidth; and why."""
    if gpu.id in timed:
        return gpu.id, ""
    fam = gpu_families().get(gpu.id, "unknown")
    if not (peers := [get_gpu(g) for g in sorted(timed) if gpu_families().get(g) == fam]):
        raise InvalidConfigurationError(
            f"no {what} timings for {gpu.id} nor for its family ({fam}); fractions are not carried across "
            f"families (timed: {', '.join(sorted(timed))})"
        )
    best = nearest_in_rates(gpu, peers)
    return best.id, f"{gpu.id} has no {what} timings: {best.id}'s (same {fam} family, nearest rates)"


def _combine(kind: str, gpu: str, fmt: str, framework, prefix: str, out: dict, reasons: list) -> list[str]:
    """Write ``prefix``_(compute_fraction, bandwidth_fraction, overhead_s, form) of the asked engine's fit, or
    the median over the GPU's usable engines, into ``out``; append why a fallback was taken to ``reasons``;
    return the engines used."""
    groups = moe_groups() if kind == "moe" else mla_groups(kind)
    engines = sorted({e for g, e, f in groups if g == gpu and f == fmt})
    wanted = engines if framework is None else [get_engine(framework).id]
    tried = {e: _usable(kind, gpu, e, fmt) for e in {*engines, *wanted}}
    used = [e for e in wanted if tried[e][0]] or [e for e in engines if tried[e][0]]
    if not used:
        raise InvalidConfigurationError(f"no usable {fmt} {kind} timings on {gpu}: "
                                        + "; ".join(tried[e][1] for e in sorted(tried)))  # fmt: skip
    why = [tried[e][1] for e in wanted if not tried[e][0]]
    if len({tried[e][0]["form"] for e in used}) > 1:  # a median only of fits that count the same FLOPs,
        why += [f"{e}'s {kind} counts absorbed FLOPs" for e in used if tried[e][0]["form"] == "absorbed"]
        used = [e for e in used if tried[e][0]["form"] == "expanded"]  # the form engines run long prompts in
    if used != wanted:
        reasons.append("; ".join(why) + f": median over {', '.join(used)}")
    for name in ("compute_fraction", "bandwidth_fraction", "overhead_s"):
        out[f"{prefix}_{name}"] = float(np.median([tried[e][0][name] for e in used]))
    if form := tried[used[0]][0]["form"]:
        out[f"{prefix}_form"] = form
    return used


def moe_parameters(gpu_id, framework=None, dtype: str = "fp8-block128") -> dict:
    """The fitted MoE-layer numbers of ``framework`` (an engine id or alias; None: the median over the timed
    engines) on ``gpu_id`` for experts in ``dtype`` (``MOE_FORMATS``): ``moe_compute_fraction``,
    ``moe_bandwidth_fraction`` (0–1] and ``moe_overhead_s`` (s, the router and the launches). A GPU without
    timings borrows its family's nearest timed GPU; a format the GPU was not timed in its ``FORMAT_PROXY``;
    an engine without usable timings the median of the others. ``source`` says which ("fitted" if none).

    >>> p = moe_parameters("h100-sxm", "vllm", "w4a16-mxfp4")
    >>> 0.5 < p["moe_bandwidth_fraction"] < 1, 10e-6 < p["moe_overhead_s"] < 60e-6, p["source"]
    (True, True, 'fitted')
    >>> moe_parameters("a100-40gb", "vllm", "w4a16-mxfp4")["source"]
    "a100-40gb has no MoE timings: a100-80gb-sxm's (...); no w4a16-mxfp4 MoE timings on ...: int4's ..."
    """
    gpu = get_gpu(gpu_id)
    _weight_bytes(dtype)  # checks the format
    timed, why = _timed_gpu(gpu, {g for g, _, _ in moe_groups()}, "MoE")
    reasons, fmt = [why] if why else [], dtype
    if not any(g == timed and f == dtype for g, _, f in moe_groups()):
        have = sorted({f for g, _, f in moe_groups() if g == timed})
        if FORMAT_PROXY.get(dtype) not in have:
            raise InvalidConfigurationError(f"no {dtype} MoE timings on {timed} (timed: {', '.join(have)})")
        fmt = FORMAT_PROXY[dtype]
        reasons.append(f"no {dtype} MoE timings on {timed}: {fmt}'s (the same W4A16 Marlin-type kernel)")
    out = {"gpu": gpu.id, "engine": framework and get_engine(framework).id, "dtype": dtype,
           "fitted_on": timed, "fitted_format": fmt}  # fmt: skip
    used = _combine("moe", timed, fmt, framework, "moe", out, reasons)
    out["source"] = "; ".join(reasons) or ("fitted" if framework else f"median over {', '.join(used)}")
    return out


def mla_parameters(gpu_id, framework=None, kv_dtype: str = "bf16") -> dict:
    """The fitted MLA numbers of ``framework`` (None: the median over the timed engines) on ``gpu_id``,
    DeepSeek-V3's shape: ``mla_<kind>_compute_fraction``, ``_bandwidth_fraction`` (0–1], ``_overhead_s`` (s)
    and ``_form`` (the attention FLOP count the fit used) for the kinds "decode" and "prefill" (the attention
    kernel: SGLang, TensorRT-LLM) and "decode_module", "prefill_module" (the whole module: vLLM,
    TensorRT-LLM). An engine without a kind borrows the median of the others (``source`` says so); a kind
    no engine has usable timings for on the GPU is left out and named in ``missing``.

    >>> p = mla_parameters("h200", "sglang")
    >>> p["mla_decode_form"], p["mla_prefill_form"], 0.7 < p["mla_decode_bandwidth_fraction"] <= 1
    ('absorbed', 'absorbed', True)
    >>> "median over tensorrt-llm, vllm" in p["source"]      # SGLang's modules were not timed
    True
    """
    gpu = get_gpu(gpu_id)
    if kv_dtype not in ("bf16", "fp8"):
        raise InvalidConfigurationError(f"MLA KV caches timed: bf16, fp8; got {kv_dtype!r}")
    timed, why = _timed_gpu(gpu, {g for k in MLA_FORMS for g, _, _ in mla_groups(k)}, "MLA")
    out = {"gpu": gpu.id, "engine": framework and get_engine(framework).id, "kv_dtype": kv_dtype,
           "fitted_on": timed}  # fmt: skip
    reasons, missing = [why] if why else [], []
    for kind in MLA_FORMS:
        fmt = kv_dtype if kind.startswith("decode") else "bf16"
        try:
            _combine(kind, timed, fmt, framework, PREFIX[kind], out, reasons)
        except InvalidConfigurationError as exc:
            missing.append(f"{kind} ({exc})")
    if len(missing) == len(MLA_FORMS):
        raise InvalidConfigurationError(f"no usable MLA timings on {timed}: " + "; ".join(missing))
    out["missing"] = missing
    out["source"] = "; ".join(reasons) or ("fitted" if framework else "median over the timed engines")
    return out
