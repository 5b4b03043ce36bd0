"""What a step takes on a real engine: the one place an achievable step time is assembled.

Taught in notebooks/floor_to_real_server.ipynb ("From the floor to a real server"). Every figure of a
real engine in the course comes from :func:`assemble`: the explorer readouts, the CLI, ``generate``, the
gap budget, the dashboards of lessons 09 and 59, the serving simulator's per-iteration cost and the fit.

A step is described by its work (:class:`StepWork`) on the GPUs that run each layer at once (N under tensor
parallelism, one under a layer split): ideal times of its GEMMs, its attention and its collectives, and
how many kernels it launches. A real engine runs it kernel by kernel (:class:`EngineParams`):

    GEMMs      smax(GEMM FLOPs ÷ (e_c × peak), weight bytes ÷ (e_b × bandwidth))   smax(a, b) = (a⁴ + b⁴)^¼
    MoE        smax₂(routed experts' FLOPs ÷ (e_c,moe × peak), their bytes read ÷ (e_b,moe × bandwidth))
    attention  attention FLOPs ÷ (e_att × peak) + prompt tokens' Q, K, V, O ÷ (e_tok × bandwidth)
               + KV read ÷ (e_kv × bandwidth)
    per layer  GEMM kernels × t_gemm + layers × t_attention + MoE layers × t_moe + layers × t_layer
    per step   t_step + sequences × t_seq (+ what the caller adds: a CPU launching kernels, lesson 03)
    comm       all-reduce bytes ÷ link + all-reduces × start-up + ring hops × t_hop

The fractions e and the kernel costs t_gemm, t_attention are measured on the GPU's kernels; t_step, t_seq,
t_layer and t_hop are fitted per engine on measured runs (both by ``roofline.calibration``, frozen in
``data/``). The floor is max(all FLOPs ÷ peak, all bytes ÷ bandwidth), and every kernel term is at least
its share of it, so an engine is never faster than the floor. The ideal engine *is* the floor: a
``roofline`` engine times the whole step as max(FLOPs ÷ (f_c × peak), bytes ÷ (f_b × bandwidth)) plus its
costs (with f = 1 and no costs for the ideal).

>>> t = StepTimer("vllm", "llama-3-8b", "h100-sxm")
>>> b = assemble(t.work(gemm_flops=15.0e9, weight_bytes=15.0e9, tokens=1, sequences=1), t.params)
>>> round(b.floor_s * 1e3, 2), bool(b.total_s > b.floor_s)      # 15 GB ÷ 3.35 TB/s
(4.48, True)
>>> ideal = StepTimer("ideal", "llama-3-8b", "h100-sxm")
>>> bool(ideal.time_s(StepLoad(15.0e9, 15.0e9, tokens=1, sequences=1)) == b.floor_s)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from roofline.checks import checked, one_of
from roofline.data import get_gpu, get_model
from roofline.engines.params import EngineParams, engine_params
from roofline.engines.registry import DEFAULT_ENGINE, get_engine
from roofline.physics.architecture import routed_expert_bytes_read, routed_expert_parameters_per_token
from roofline.physics.parallel import link_bytes_per_s, tensor_parallel_comm_time_s
from roofline.physics.precision import peak_flops_per_s

# The gap budget's parts above the floor, in the order they stack (keys of ``TimeBudget.parts``).
BUDGET_PARTS = ("kernel efficiency", "per-step", "per-layer", "communication")
SMOOTH = 4  # the GEMM's smooth max: loads and math overlap imperfectly near the ridge (kernels.py)
MOE_SMOOTH = 2  # an MoE layer's: its two GEMMs and the activation run one after another (moe_kernels.py)
ACTIVATION_BYTES = 2.0  # prompt tokens' Q, K, V, O move as 16-bit activations


class StepWork(NamedTuple):
    """A step's work as ideal times (s) and counts, floats or arrays that broadcast: ``compute_s`` and
    ``memory_s`` are the whole step at peak math and bandwidth (the floor's terms), the rest its kernels'."""

    compute_s: object
    memory_s: object
    gemm_compute_s: object = 0.0
    gemm_memory_s: object = 0.0  # the weights
    attention_compute_s: object = 0.0
    attention_token_s: object = 0.0  # prompt tokens' Q, K, V, O
    kv_memory_s: object = 0.0  # the KV cache read
    moe_compute_s: object = 0.0  # an MoE's routed experts, run by its MoE kernels
    moe_memory_s: object = 0.0
    moe_layers: object = 0.0
    gemm_kernels: object = 0.0
    attention_kernels: object = 0.0
    prefill: object = 0.0  # 1 where the step carries prompt tokens (its attention kernels are prefill ones)
    layers: object = 0.0
    sequences: object = 0.0
    comm_bytes_s: object = 0.0
    collectives: object = 0.0
    hops: object = 0.0
    extra_s: object = 0.0  # time the caller adds to every engine alike


class StepLoad(NamedTuple):
    """A step's load (floats or arrays that broadcast): ``gemm_flops`` (FLOP) and ``weight_bytes`` (bytes)
    of its dense GEMMs, ``attention_flops`` (FLOP), ``kv_read_bytes`` and ``kv_write_bytes`` (bytes),
    counts of ``prompt_tokens``, ``tokens`` and ``sequences``, an MoE's routed experts' ``moe_flops`` and
    ``moe_bytes`` (not in the GEMM figures), and ``extra_s`` (s) the caller adds."""

    gemm_flops: object
    weight_bytes: object
    attention_flops: object = 0.0
    kv_read_bytes: object = 0.0
    kv_write_bytes: object = 0.0
    prompt_tokens: object = 0.0
    tokens: object = 1.0
    sequences: object = 1.0
    moe_flops: object = 0.0
    moe_bytes: object = 0.0
    extra_s: object = 0.0


@dataclass(frozen=True)
class TimeBudget:
    """One step's time from the floor up (s); the parts add up to ``total_s``."""

    floor_s: object
    kernel_efficiency_s: object
    per_step_s: object
    per_layer_s: object
    communication_s: object
    extra_s: object
    total_s: object

    @property
    def parts(self) -> dict:
        """{"floor", "kernel efficiency", "per-step", "per-layer", "communication", "total"} in seconds
        (the caller's added time, if any, is inside "per-step")."""
        return {
            "floor": self.floor_s,
            "kernel efficiency": self.kernel_efficiency_s,
            "per-step": self.per_step_s + self.extra_s,
            "per-layer": self.per_layer_s,
            "communication": self.communication_s,
            "total": self.total_s,
        }


def _maximum(a, b):
    if isinstance(a, float) and isinstance(b, float):  # the simulator's scalar steps: skip numpy
        return a if a > b else b
    return np.maximum(a, b)


def _smax(a, b, k=SMOOTH):
    """(aᵏ + bᵏ)^(1/k), written so that a or b may be 0 (and arrays)."""
    hi = _maximum(a, b)
    lo = a + b - hi
    if isinstance(hi, float):
        return hi * (1.0 + (lo / hi) ** k) ** (1.0 / k) if hi > 0 else 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(hi > 0, hi * (1.0 + (lo / np.where(hi > 0, hi, 1.0)) ** k) ** (1.0 / k), 0.0)


def step_parts(p: EngineParams, w: StepWork):
    """The formula of the module docstring, part by part (s): (the kernels' time, per-layer costs, per-step
    costs, communication) of the work ``w``."""
    if p.roofline:
        compute = w.compute_s / p.gemm_compute_fraction
        memory = w.memory_s / p.gemm_bandwidth_fraction
        kernels, per_layer = _maximum(compute, memory), w.layers * p.layer_overhead_s
    else:
        g_compute = w.gemm_compute_s / p.gemm_compute_fraction
        g_memory = w.gemm_memory_s / p.gemm_bandwidth_fraction
        a_compute = w.attention_compute_s / p.attention_compute_fraction
        a_memory = w.attention_token_s / p.attention_token_fraction + w.kv_memory_s / p.kv_bandwidth_fraction
        m_compute = w.moe_compute_s / p.moe_compute_fraction
        m_memory = w.moe_memory_s / p.moe_bandwidth_fraction
        kernels = _smax(g_compute, g_memory) + a_compute + a_memory + _smax(m_compute, m_memory, MOE_SMOOTH)
        attention_kernel_s = p.decode_attention_kernel_s + w.prefill * (
            p.prefill_attention_kernel_s - p.decode_attention_kernel_s
        )
        per_layer = (
            w.gemm_kernels * p.gemm_kernel_s
            + w.attention_kernels * attention_kernel_s
            + w.moe_layers * p.moe_kernel_s
            + w.layers * p.layer_overhead_s
        )
    per_step = p.step_overhead_s + w.sequences * p.sequence_overhead_s
    comm = w.comm_bytes_s + w.collectives * p.collective_latency_s + w.hops * p.hop_latency_s
    return kernels, per_layer, per_step, comm


def assemble(work: StepWork, p: EngineParams) -> TimeBudget:
    """The achievable time of ``work`` on an engine with numbers ``p`` (s): the formula of the module
    docstring, itemised. ``p``'s fields may be arrays (one value per step, as the fit uses).

    >>> card = engine_params("ideal", "h100-sxm").replace(bandwidth_fraction=0.8, step_overhead_s=1e-3)
    >>> b = assemble(StepWork(compute_s=1e-3, memory_s=4e-3), card)
    >>> round(b.total_s * 1e3, 3)     # 4 ms ÷ 0.8 + 1 ms
    6.0
    """
    kernels, per_layer, per_step, comm = step_parts(p, work)
    floor = _maximum(work.compute_s, work.memory_s)
    return TimeBudget(
        floor_s=floor,
        kernel_efficiency_s=kernels - floor,
        per_step_s=per_step,
        per_layer_s=per_layer,
        communication_s=comm,
        extra_s=work.extra_s,
        total_s=kernels + per_layer + per_step + comm + work.extra_s,
    )


def gemm_kernels_per_step(model) -> int:
    """GEMM kernels one forward pass launches: per layer the attention's projections (fused QKV and the
    output; MLA's compressed projections and its absorbed products) and the MLP's (fused gate-up and down;
    an MoE layer's router and any shared expert: its routed experts are the MoE kernel's), and the LM head.

    >>> # 32 × 4 + 1; 61 × 7 + 3 × 2 + 58 × 3 + 1
    >>> gemm_kernels_per_step("llama-3-8b"), gemm_kernels_per_step("deepseek-v3")
    (129, 608)
    """
    m = get_model(model)
    attention = (6 + (1 if m.q_lora_rank else 0)) if m.is_mla else 2
    moe_layers = (m.layers - m.first_dense_layers) if m.is_moe else 0
    moe = 1 + (2 if m.shared_experts else 0)  # the router and any shared expert; routed experts: t_moe
    return int(m.layers * attention + (m.layers - moe_layers) * 2 + moe_layers * moe + 1)


def attention_token_bytes(model) -> float:
    """Bytes of Q, K, V in and O out per prompt token, over all layers (bytes): the per-token traffic of
    prefill attention, L × (2H + 2H_kv) × d_h × 2 bytes.

    >>> attention_token_bytes("llama-3-8b")     # 32 × (64 + 16) × 128 × 2
    655360.0
    """
    m = get_model(model)
    return float(m.layers * (2 * m.attention_heads + 2 * m.kv_heads) * m.head_dim * ACTIVATION_BYTES)


class StepTimer:
    """Step times of one model on one deployment with one engine: the constants looked up once, then
    :meth:`work` / :meth:`time_s` per step from its load, or :meth:`of_step` for a physics ``Step``.

    Parameters
    ----------
    engine : an engine id or alias (``"vllm"``, ``"ideal"``, …), see ``roofline.engines.get_engine``.
    model, gpu : ids or rows of ``roofline.data``.
    num_gpus : N ≥ 1 GPUs per worker. parallel : ``"tensor"`` or ``"pipeline"`` (default: the engine's).
    weight_precision, kv_precision : set the GEMMs' peak and format, and the KV cache's format.
    communication : whether tensor-parallel all-reduces count; default: yes for a real engine, no for the
        ideal (the course's floor leaves them out unless asked, as ``forward_step`` does).
    params : the engine's numbers, to override the calibration (``engine_params(...).replace(...)``).

    >>> tp = StepTimer("vllm", "llama-3-70b", "h100-sxm", num_gpus=4)
    >>> tp.lanes, tp.collectives        # four GPUs on every layer, two all-reduces per layer
    (4, 160)
    """

    def __init__(
        self,
        engine,
        model,
        gpu,
        *,
        num_gpus: int = 1,
        parallel: str | None = None,
        weight_precision: str = "bf16",
        kv_precision: str = "bf16",
        communication: bool | None = None,
        params: EngineParams | None = None,
    ):
        self.engine = get_engine(engine)
        self.model, self.gpu = get_model(model), get_gpu(gpu)
        self.num_gpus = int(checked(num_gpus, "num_gpus", minimum=1, whole=True, scalar=True))
        parallel = self.engine.parallel if parallel is None else str(parallel).lower()
        self.parallel = one_of(parallel, "parallel", ("tensor", "pipeline"))
        self.weight_precision, self.kv_precision = weight_precision, kv_precision
        self._params = params
        # GPUs working on the same layer at once: all of them when every matrix is split, one in a pipeline
        self.lanes = self.num_gpus if self.parallel == "tensor" else 1
        self.peak_flops_per_s = self.lanes * peak_flops_per_s(self.gpu, weight_precision)
        # attention runs in 16-bit math whatever the weights: BF16, else FP16 (Apple), else FP32
        math = next((p for p in ("bf16", "fp16", "fp32") if p in self.gpu.dense_flops_per_s), None)
        self.attention_peak_flops_per_s = self.lanes * (
            self.gpu.dense_flops_per_s[math] if math else peak_flops_per_s(self.gpu, weight_precision)
        )
        self.bandwidth_bytes_per_s = self.lanes * self.gpu.memory_bandwidth_bytes_per_s
        talks = self.parallel == "tensor" and self.num_gpus > 1
        talks &= (self.engine.kind != "ideal") if communication is None else bool(communication)
        self.collectives = 2 * self.model.layers if talks else 0
        self.hops = self.collectives * 2 * (self.num_gpus - 1)
        link = link_bytes_per_s(self.gpu, self.num_gpus)  # all-reduce bytes grow with the step's tokens
        self.comm_s_per_token = (
            float(tensor_parallel_comm_time_s(self.model, 1, self.num_gpus, link, latency_s=0.0))
            if talks
            else 0.0
        )
        self.gemm_kernels = gemm_kernels_per_step(self.model)
        self.token_bytes = attention_token_bytes(self.model)
        m = self.model
        self.moe_layers = (m.layers - m.first_dense_layers) if m.is_moe else 0

    @classmethod
    def of(cls, scenario, engine=DEFAULT_ENGINE, **options) -> StepTimer:
        """The timer of a lesson's ``Scenario`` (its model, GPU, GPUs and precisions) on ``engine``;
        ``options``: the other keywords of the constructor.

        >>> from roofline.scenario import Scenario
        >>> StepTimer.of(Scenario(num_gpus=2), "ideal").lanes
        2
        """
        return cls(engine, scenario.model, scenario.gpu, **scenario.deployment, **options)

    def with_engine(self, engine) -> StepTimer:
        """The same deployment (model, GPU, GPUs, parallelism, precisions) on another engine."""
        return StepTimer(engine, self.model, self.gpu, num_gpus=self.num_gpus, parallel=self.parallel,
                         weight_precision=self.weight_precision, kv_precision=self.kv_precision)  # fmt: skip

    @property
    def params(self) -> EngineParams:
        """The engine's numbers on this GPU (from the calibration on first use, or as given)."""
        if self._params is None:
            self._params = engine_params(
                self.engine,
                self.gpu,
                weight_precision=self.weight_precision,
                kv_precision=self.kv_precision,
                model=self.model,
            )
        return self._params

    def work_of(self, load: StepLoad) -> StepWork:
        """The :class:`StepWork` of a step's load: its FLOPs and bytes as ideal times on these GPUs, its
        kernels and collectives counted."""
        peak, bw = self.peak_flops_per_s, self.bandwidth_bytes_per_s
        tokens, prompt_tokens = load.tokens, load.prompt_tokens
        if isinstance(tokens, float) and isinstance(prompt_tokens, float):  # the simulator's scalar steps
            any_tokens, prefill = (1.0 if tokens > 0.0 else 0.0), (1.0 if prompt_tokens > 0.0 else 0.0)
        else:
            any_tokens, prefill = np.minimum(tokens, 1.0), np.minimum(prompt_tokens, 1.0)
        return StepWork(  # positional, in field order: this runs once per simulated step
            (load.gemm_flops + load.moe_flops + load.attention_flops) / peak,  # compute_s
            (load.weight_bytes + load.moe_bytes + load.kv_read_bytes + load.kv_write_bytes) / bw,  # memory_s
            load.gemm_flops / peak,  # gemm_compute_s
            load.weight_bytes / bw,  # gemm_memory_s
            load.attention_flops / self.attention_peak_flops_per_s,  # attention_compute_s
            prompt_tokens * self.token_bytes / bw,  # attention_token_s
            load.kv_read_bytes / bw,  # kv_memory_s
            load.moe_flops / peak,  # moe_compute_s
            load.moe_bytes / bw,  # moe_memory_s
            self.moe_layers * any_tokens,  # moe_layers
            self.gemm_kernels * any_tokens,  # gemm_kernels
            self.model.layers * any_tokens,  # attention_kernels
            prefill,  # prefill
            self.model.layers * any_tokens,  # layers
            load.sequences,  # sequences
            tokens * self.comm_s_per_token,  # comm_bytes_s
            self.collectives * any_tokens,  # collectives
            self.hops * any_tokens,  # hops
            load.extra_s,  # extra_s
        )

    def work(self, gemm_flops, weight_bytes, **load) -> StepWork:
        """The :class:`StepWork` of a step: ``gemm_flops`` (FLOP), ``weight_bytes`` (bytes) and the other
        fields of :class:`StepLoad` by name."""
        return self.work_of(StepLoad(gemm_flops, weight_bytes, **load))

    def time_s(self, load: StepLoad):
        """The achievable time of one step (s): ``assemble(...).total_s`` without itemising (the
        simulator's hot path: floats stay floats)."""
        kernels, per_layer, per_step, comm = step_parts(self.params, self.work_of(load))
        return kernels + per_layer + per_step + comm + load.extra_s

    def of_step(self, step, extra_s=None, *, prompt: bool = False) -> TimeBudget:
        """The budget of a physics ``Step`` (``roofline.forward_step`` and its wrappers); ``extra_s``
        defaults to the step's own launch overhead; ``prompt``: the step's new tokens are prompts being
        prefilled (``step_load``).

        >>> from roofline.physics.step import decode_step
        >>> s = decode_step("llama-3-8b", "h100-sxm", batch=[1, 32], context_tokens=1000)
        >>> b = StepTimer("ideal", "llama-3-8b", "h100-sxm").of_step(s)
        >>> bool(np.allclose(b.total_s, s.step_time_s))
        True
        """
        return assemble(self.work_of(StepLoad(**step_load(step, extra_s, self.model, prompt))), self.params)


def routed_expert_load(model, weight_precision: str, tokens):
    """(FLOPs, bytes read) of an MoE's routed experts in a step of ``tokens`` tokens (0 for a dense model):
    the work its MoE kernels run (``roofline.physics.architecture``).

    >>> [round(float(x) / 1e9, 1) for x in routed_expert_load("mixtral-8x7b", "bf16", 1)]
    [22.5, 22.5]
    """
    m = get_model(model)
    if not m.is_moe:
        return 0.0 * np.asarray(tokens, float), 0.0 * np.asarray(tokens, float)
    n = np.maximum(tokens, 1.0)
    flops = 2.0 * routed_expert_parameters_per_token(m) * np.asarray(tokens, float)
    return flops, np.where(np.asarray(tokens) > 0, routed_expert_bytes_read(m, weight_precision, n), 0.0)


def step_load(step, extra_s=None, model=None, prompt: bool = False) -> dict:
    """The keywords of :meth:`StepTimer.work` for a physics ``Step``: its GEMM, routed-expert and attention
    FLOPs, weight, routed-expert and KV bytes, prompt tokens (sequences computing more than one token, or
    every new token with ``prompt``, and any prompt chunk), tokens and sequences (one more for a chunk).
    ``model`` is the step's model when it is not a row of the tables (a shape built in code, as the measure
    lab's). A one-token prompt is a prefill (``prompt=True``), timed by the prefill attention kernel like
    every longer one, so a prefill's time never falls as its prompt grows.

    >>> from roofline.physics.step import forward_step
    >>> one = forward_step("llama-3-8b", "h100-sxm", 1, 0, new_tokens=1)
    >>> float(step_load(one)["prompt_tokens"]), float(step_load(one, prompt=True)["prompt_tokens"])
    (0.0, 1.0)
    """
    f = lambda x: np.asarray(x, float)  # noqa: E731
    chunk, batch, new, tokens = f(step.chunk_tokens), f(step.batch), f(step.new_tokens), f(step.tokens)
    moe_flops, moe_bytes = routed_expert_load(model or step.model_id, step.weight_precision, tokens)
    return dict(
        gemm_flops=f(step.flops) - f(step.attention_flops) - moe_flops,
        weight_bytes=f(step.weight_bytes_read) - moe_bytes,
        moe_flops=moe_flops,
        moe_bytes=moe_bytes,
        attention_flops=f(step.attention_flops),
        kv_read_bytes=f(step.kv_bytes_read),
        kv_write_bytes=f(step.kv_bytes_written),
        prompt_tokens=np.where((new > 1) | prompt, batch * new, 0.0) + chunk,
        tokens=f(step.tokens),
        sequences=batch + (chunk > 0),
        extra_s=f(step.launch_overhead_s) if extra_s is None else extra_s,
    )
