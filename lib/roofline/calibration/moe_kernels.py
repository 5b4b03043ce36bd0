"""MoE layers and MLA attention as engines run them, fitted on measured timings.

Feeds the engine model taught in notebooks/floor_to_real_server.ipynb, for large MoE and MLA models. The
timings (``moe.csv``, ``mla.csv``) and their fit are those of ``roofline.calibration.kernels``. With P the
GPU's dense peak in the format's math and W its memory bandwidth, in SI units:

    MoE layer      t = smax₂(F ÷ (e_c P), B ÷ (e_b W)) + t₀,  smax₂(a, b) = √(a² + b²)   (``moe_work``)
    MLA decode     t = max(F ÷ (e_c P), KV ÷ (e_b W)) + t₀                           (``mla_decode_work``)
    MLA prefill    t = F ÷ (e_c P) + (Q, K, V, O bytes) ÷ (e_b W) + t₀              (``mla_prefill_work``)
    MLA module     decode: the hard max, prefill: smax₄, of the same work plus the projections' (vLLM and
                   TensorRT-LLM time the module whole: down-projections, q up-projection, attention, output)

**The forms were chosen on held-out shapes** (a fit on half the shapes scoring the other half; median over
the groups): an MoE layer's two GEMMs and activation run one after another, so loads and math overlap less
than in one GEMM: smax₂ 10.7 % beats the hard max 12.1 % and smax₄ 12.2 %; the sum (10.2 %) would say
weights and math never overlap, even at 8192 tokens (e_c 0.44 where smax₂ gives 0.31). MLA decode: the hard
max 14.3 % (smax₄ 14.5 %, the sum 16.0 % with e_c = 1 in 18 of 25 groups); prefill: the sum 5.6 % (hard
max 13.2 %), as for ``kernels``' prefill attention; modules: every form within 1.5 points. Decode is fitted
per KV format: SGLang's FP8-KV MLA on Hopper casts the cache at ~6 % of HBM bandwidth.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from roofline.calibration.kernels import (
    BOTH,
    TABLES,
    group_timings,
    nearest_timed_gpu,
    samples,
    scalar_or_array,
    score_fit,
    timed_groups,
)
from roofline.data import DataTableError, get_gpu, get_model
from roofline.engines.registry import get_engine
from roofline.errors import InvalidConfigurationError
from roofline.physics.architecture import attention_flops_per_pair
from roofline.physics.precision import bytes_per_element

# MoE format -> (weight element format, the format of the math): W4A16 formats multiply in BF16.
MOE_FORMATS = {"bf16": ("bf16", "bf16"), "fp8": ("fp8", "fp8"), "fp8-block128": ("fp8-block128", "fp8"),
               "w4a16-mxfp4": ("mxfp4", "bf16"), "int4": ("int4", "bf16")}  # fmt: skip
# A format a GPU was not timed in borrows the timed format whose kernel does the same work: aiconfigurator
# times no MXFP4 MoE on the A100, where engines run MXFP4 experts with Marlin's W4A16 kernel, as INT4.
FORMAT_PROXY = {"w4a16-mxfp4": "int4"}
ROUTING_GROUPS = {"balanced": (1, 1), "grouped-8-4": (8, 4)}  # routing -> (expert groups, groups kept)
ACTIVATION_BYTES = 2.0  # token rows enter and leave the experts in BF16
MOE_SMOOTH = 2  # a rounder max than a GEMM's: two GEMMs and the activation run one after another
# kind -> (table, format column, op, fractions fitted, smooth: 1 the sum, None the hard max), as
# ``kernels.FORMS``: the MoE layer, then MLA's kinds
FORMS = {
    "moe": ("moe.csv", "dtype", "", BOTH, MOE_SMOOTH),
    "decode": ("mla.csv", "kv_dtype", "mla_generation", BOTH, None),
    "prefill": ("mla.csv", "kv_dtype", "mla_context", BOTH, 1),
    "decode_module": ("mla.csv", "kv_dtype", "mla_generation_module", BOTH, None),
    "prefill_module": ("mla.csv", "kv_dtype", "mla_context_module", BOTH, 4),
}
MLA_KINDS = ("decode", "prefill", "decode_module", "prefill_module")
MLA_MODEL = "deepseek-v3"  # the MLA shape aiconfigurator times (DeepSeek-V3/R1: r = 512, d_rope = 64)
# A group is used if its fixed cost is a kernel's (or, for a module, a dozen kernels': vLLM's MLA module
# costs ~110 µs inside a CUDA graph), not host time, and the roofline form describes it (TensorRT-LLM 1.0's
# MLA decode on the A100 and L40S runs one thread block per sequence: 8 ms at any batch up to 16).
# A fit with no fixed cost at all (under 1 µs: less than one launch) has traded t₀ for its fractions.
MAX_OVERHEAD_S, MIN_OVERHEAD_S = 200e-6, 1e-6
MAX_MEDIAN_LOG_ERROR = math.log(1.35)


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


# -- The work of an MoE layer and of MLA --


def moe_work(
    tokens, hidden, inter, topk, experts, moe_tp=1, moe_ep=1, dtype="fp8-block128", routing="balanced"
):
    """(FLOP, bytes) of one MoE layer's experts on rank 0 of ``moe_tp × moe_ep`` GPUs for ``tokens`` tokens,
    ``experts`` experts of ``hidden`` × ``inter`` (the top ``topk`` per token, as ``benchmark_routing``'s
    ``routing`` assigns them): each (token, local expert) pair multiplies a token row by three h × I/tp
    matrices (gate, up, down: 2 FLOP per weight) and moves its row in and out in BF16; each touched
    expert's weights are read once in ``dtype``. Arrays broadcast.

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


def mla_decode_work(batch, context, heads, kv_dtype="bf16"):
    """(FLOP, bytes) of one layer's absorbed MLA decode over ``heads`` local heads: ``batch`` new tokens,
    each over ``context`` cached tokens; the bytes are the latent cache read, batch × c × (r + d_rope) × b_kv
    (every head shares it).

    >>> mla_decode_work(1, 1000, 16)    # 35 MFLOP over 1.15 MB of BF16 latent: 30 FLOP per byte
    (34816000.0, 1152000.0)
    """
    b, c, h = (np.asarray(x, float) for x in (batch, context, heads))
    m = get_model(MLA_MODEL)
    row = m.kv_lora_rank + m.qk_rope_head_dim  # the latent and the rotary key: one cached row
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
    m = get_model(MLA_MODEL)
    row = m.kv_lora_rank + m.qk_rope_head_dim
    if form == "expanded":
        per_token = h * 2 * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
    else:
        per_token = h * (row + m.kv_lora_rank) + row
    flops, nbytes = b * s * (s - 1) / 2 * h * mla_pair_flops(form), b * s * per_token * 2.0
    return scalar_or_array(flops), scalar_or_array(nbytes)


def mla_module_work(phase, batch, context, heads, kv_dtype="bf16", dtype="fp8-block128"):
    """(FLOP, bytes) of one whole MLA module: the attention of ``mla_decode_work`` (phase "decode") or
    ``mla_prefill_work`` (phase "prefill", expanded), plus every token through the projections (2 FLOP per
    weight) and their weights read once in ``dtype``; ``context`` is the KV length (decode) or prompt
    (prefill). The projections: the down-projections h × (q_lora + r + d_rope), replicated on every GPU,
    and per local head q_lora (d_nope + d_rope) up, r (d_nope + d_v) for keys and values, d_v × h out.

    >>> f, b = mla_module_work("decode", 1, 1024, 16)     # TP 8: 36.6 MB of FP8 weights dominate
    >>> round(f / 1e6, 1), round(b / 1e6, 1)
    (108.9, 37.8)
    """
    m = get_model(MLA_MODEL)
    per_head = (m.q_lora_rank * (m.qk_nope_head_dim + m.qk_rope_head_dim)
                + m.kv_lora_rank * (m.qk_nope_head_dim + m.v_head_dim)
                + m.v_head_dim * m.hidden_size)  # fmt: skip
    down = m.hidden_size * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim)
    w = down + np.asarray(heads, float) * per_head
    tokens = np.asarray(batch, float) * (1 if phase == "decode" else np.asarray(context, float))
    if phase == "decode":
        f, b = mla_decode_work(batch, context, heads, kv_dtype)
    elif phase == "prefill":
        f, b = mla_prefill_work(batch, context, heads, "expanded")
    else:
        raise InvalidConfigurationError(f"phase must be 'decode' or 'prefill'; got {phase!r}")
    return scalar_or_array(f + 2 * tokens * w), scalar_or_array(b + w * bytes_per_element(dtype))


# -- Fitting the groups --


def group_samples(kind: str, gpu: str, engine: str, fmt: str) -> dict:
    """One group's timings as ``kernels.samples``: kind "moe" (experts in ``fmt``; the work of ``moe_work``
    under the benchmark's routing, the math in the format's, held out: a checkerboard over expert shape ×
    split) or an MLA kind (KV in ``fmt``; held out over heads × batch; the math in BF16 for the attention
    kernels, in FP8 for the modules' block-FP8 projections; "form": the attention form the collector timed).

    >>> s = group_samples("decode", "h200", "sglang", "bf16")
    >>> s["form"], s["peak"]          # BF16 dense FLOP/s
    ('absorbed', 989000000000000.0)
    """
    s = group_timings(FORMS[kind], gpu, engine, fmt)
    if kind == "moe":
        flops, nbytes = np.zeros(s["latency_s"].size), np.zeros(s["latency_s"].size)
        for routing in set(s["routing"].tolist()):
            r = s["routing"] == routing
            shape = (s[c][r] for c in TABLES["moe.csv"][1])
            flops[r], nbytes[r] = moe_work(*shape, dtype=fmt, routing=routing)
        axes = (("hidden", "inter", "topk", "experts"), ("moe_tp", "moe_ep"))
        return samples(s, gpu, (flops, nbytes), MOE_FORMATS[fmt][1], *axes)
    forms = sorted(set(s["form"].tolist()))
    if len(forms) != 1:
        raise DataTableError(f"mla.csv: {kind} rows of {engine} on {gpu} mix attention forms {forms}")
    b, c, h = s["batch"], s["context"], s["heads"]
    if kind == "decode":
        work = mla_decode_work(b, c, h, fmt)
    elif kind == "prefill":
        work = mla_prefill_work(b, c, h, forms[0])
    else:
        work = mla_module_work(kind.split("_")[0], b, c, h, fmt)
    math_format = "bf16" if kind in ("decode", "prefill") else "fp8"
    return samples(s, gpu, work, math_format, ("heads",), ("batch",), form=forms[0])


@functools.cache
def fit_group(kind: str, gpu: str, engine: str, fmt: str, held_out: bool = True) -> dict:
    """``score_fit`` of one group (``group_samples``) in its kind's form (``FORMS``).

    >>> r = fit_group("decode", "h200", "sglang", "bf16")
    >>> 0.7 < r["bandwidth_fraction"] <= 1, r["form"]
    (True, 'absorbed')
    """
    *_, free, smooth = FORMS[kind]
    return score_fit(group_samples(kind, gpu, engine, fmt), free, smooth, held_out)


# -- The numbers a step model reads --


@functools.cache
def _usable(kind: str, gpu: str, engine: str, fmt: str) -> tuple[dict | None, str]:
    """(the group's fit, "") or (None, why it cannot be used)."""
    if (gpu, engine, fmt) not in timed_groups(FORMS[kind]):
        return None, f"no {fmt} {kind} timings for {engine} on {gpu}"
    where = f"{engine}'s {fmt} {kind} timings on {gpu}"
    try:
        fit = fit_group(kind, gpu, engine, fmt, False)
    except InvalidConfigurationError as exc:
        return None, f"{where}: {exc}"
    t0_us, error = fit["overhead_s"] * 1e6, fit["median_abs_log_error"]
    if fit["overhead_s"] > MAX_OVERHEAD_S:
        return None, f"{where} show a fixed cost of {t0_us:.0f} µs (host time, not kernels)"
    if fit["overhead_s"] < MIN_OVERHEAD_S:
        why = f"no fixed cost ({t0_us:.2f} µs): the form does not describe its small batches"
        return None, f"{where} show {why}"
    if error > MAX_MEDIAN_LOG_ERROR:
        return None, f"{where} show the roofline form misses it by a median {math.expm1(error):.0%}"
    return fit, ""


def _timed_gpu(gpu, timed: set[str], what: str) -> tuple[str, str]:
    """``kernels.nearest_timed_gpu`` of ``gpu``, refused where its family has no timed GPU."""
    best, why = nearest_timed_gpu(gpu, timed, what)
    if best is None:
        raise InvalidConfigurationError(
            f"no {what} timings for {gpu.id} nor for its family ({why}); fractions are not carried across "
            f"families (timed: {', '.join(sorted(timed))})"
        )
    return best, why


def _combine(kind: str, gpu: str, fmt: str, framework, out: dict, reasons: list) -> list[str]:
    """Write <prefix>_(compute_fraction, bandwidth_fraction, overhead_s, form) of the asked engine's fit, or
    the median over the GPU's usable engines, into ``out`` (prefix "moe", or "mla_<kind>"); append why a
    fallback was taken to ``reasons``; return the engines used."""
    engines = sorted({e for g, e, f in timed_groups(FORMS[kind]) if g == gpu and f == fmt})
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
    prefix = kind if kind == "moe" else f"mla_{kind}"
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
    """
    gpu = get_gpu(gpu_id)
    _weight_bytes(dtype)  # checks the format
    groups = timed_groups(FORMS["moe"])
    timed, why = _timed_gpu(gpu, {g for g, _, _ in groups}, "MoE")
    reasons, fmt = [why] if why else [], dtype
    if not any(g == timed and f == dtype for g, _, f in groups):
        have = sorted({f for g, _, f in groups if g == timed})
        if FORMAT_PROXY.get(dtype) not in have:
            raise InvalidConfigurationError(f"no {dtype} MoE timings on {timed} (timed: {', '.join(have)})")
        fmt = FORMAT_PROXY[dtype]
        reasons.append(f"no {dtype} MoE timings on {timed}: {fmt}'s (the same W4A16 Marlin-type kernel)")
    out = {"fitted_on": timed, "fitted_format": fmt}
    used = _combine("moe", timed, fmt, framework, out, reasons)
    out["source"] = "; ".join(reasons) or ("fitted" if framework else f"median over {', '.join(used)}")
    return out


def mla_parameters(gpu_id, framework=None, kv_dtype: str = "bf16") -> dict:
    """The fitted MLA numbers of ``framework`` (None: the median over the timed engines) on ``gpu_id``,
    DeepSeek-V3's shape: ``mla_<kind>_compute_fraction``, ``_bandwidth_fraction`` (0–1], ``_overhead_s`` (s)
    and ``_form`` (the attention FLOP count the fit used) for each of ``MLA_KINDS`` (the attention kernel
    or, as vLLM and TensorRT-LLM time it, the whole module). An engine without a kind borrows the median of
    the others (``source`` says so); a kind no engine has usable timings for is named in ``missing``.

    >>> p = mla_parameters("h200", "sglang")
    >>> p["mla_decode_form"], p["mla_prefill_form"], 0.7 < p["mla_decode_bandwidth_fraction"] <= 1
    ('absorbed', 'absorbed', True)
    >>> "median over tensorrt-llm, vllm" in p["source"]      # SGLang's modules were not timed
    True
    """
    gpu = get_gpu(gpu_id)
    if kv_dtype not in ("bf16", "fp8"):
        raise InvalidConfigurationError(f"MLA KV caches timed: bf16, fp8; got {kv_dtype!r}")
    timed, why = _timed_gpu(gpu, {g for k in MLA_KINDS for g, _, _ in timed_groups(FORMS[k])}, "MLA")
    out, reasons, missing = {"fitted_on": timed}, [why] if why else [], []
    for kind in MLA_KINDS:
        fmt = kv_dtype if kind.startswith("decode") else "bf16"
        try:
            _combine(kind, timed, fmt, framework, out, reasons)
        except InvalidConfigurationError as exc:
            missing.append(f"{kind} ({exc})")
    if len(missing) == len(MLA_KINDS):
        raise InvalidConfigurationError(f"no usable MLA timings on {timed}: " + "; ".join(missing))
    out["missing"] = missing
    out["source"] = "; ".join(reasons) or ("fitted" if framework else "median over the timed engines")
    return out
