"""The price of one batched iteration (the only place the simulator asks for a time), and the closed-form
limits of a deployment built on it: how many KV tokens fit, and the largest rate it keeps up with.

Taught in notebooks/slos_and_capacity.ipynb. A serving engine runs one forward pass per iteration over every
token scheduled in it (one per decoding sequence, plus the prompt chunks being prefilled). The simulator
sums the iteration's work:

    FLOPs = new tokens × 2 × N_mm + sequences × 2 × V·d + attention pairs × (FLOPs per pair)
    bytes = weight bytes read (once, shared) + (KV tokens read + KV tokens written) × KV bytes per token

and the engine turns them into time as every figure of the course does (``roofline.engines.model.StepTimer``:
the roofline for the ideal engine, fitted efficiencies and overheads for a calibrated one). An MoE's routed
experts (their FLOPs and the expert weights the step touches) go to the engine's MoE kernels, split off the
dense GEMMs as ``generate`` splits them (``routed_expert_load``). "Attention
pairs" is Σ over sequences of new tokens × tokens each attends to (a chunk of C tokens after S cached ones:
C·S + C(C−1)/2). As in ``roofline.decode_step``, a decoding token's own KV write is left out, so a pure
decode batch costs exactly ``decode_step``'s time and one unchunked prompt exactly ``prefill``'s. A sliding
layer keeps at most its window of each context (``windowed``, ``chunk_load``): exact for a prompt chunk,
and for the decoders whenever all are past the window or all within it (for a mix, an upper bound). MLA's
prompt chunks attend in its expanded form and its decoders in the absorbed one, as in ``forward_step``.
"""

from __future__ import annotations

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.engines.model import StepLoad, StepTimer, routed_expert_load
from roofline.engines.registry import get_engine
from roofline.errors import DoesNotFitError
from roofline.physics.architecture import (
    attention_flops_per_pair,
    attention_pairs,
    effective_kv_tokens,
    kv_bytes_per_token,
    lm_head_parameters,
    matmul_parameters_per_token,
    weight_bytes,
    weight_bytes_read,
)
from roofline.physics.memory import memory_available_bytes
from roofline.physics.parallel import kv_replicas

from .config import whole


class StepCostModel:
    """Step time (s) of one batched iteration from its aggregates, with one engine (ideal by default).

    Parameters
    ----------
    model, gpu : ids (``"llama-3-8b"``, ``"h100-sxm"``) or dataclasses from ``roofline.data``.
    num_gpus : GPUs sharing each step in tensor parallel, G ≥ 1: bandwidth and FLOP/s add up.
    weight_precision, kv_precision : precision ids (``"bf16"``, ``"fp8"``, …).
    engine : an engine id or alias of ``data/engines.toml`` (``"ideal"``, ``"vllm"``, …).
    include_communication : count the tensor-parallel all-reduces (default: yes for a real engine, no for
        the ideal, as everywhere in the course).
    params : the engine's numbers (``roofline.engines.engine_params(...).replace(...)``) to override the
        calibration.

    >>> from roofline.engines import engine_params
    >>> c = StepCostModel("llama-3-8b", "h100-sxm", params=engine_params("ideal", "h100-sxm").replace(
    ...     step_overhead_s=1e-3))
    >>> round(c.time_s(1, 1, 0, 0, 0) * 1e3, 2)   # batch-1 floor 4.48 ms + 1 ms overhead
    5.48
    """

    def __init__(
        self,
        model,
        gpu,
        *,
        num_gpus: int = 1,
        weight_precision: str = "bf16",
        kv_precision: str = "bf16",
        engine: str = "ideal",
        include_communication: bool | None = None,
        params=None,
    ):
        m, g, num_gpus = get_model(model), get_gpu(gpu), whole("num_gpus", num_gpus, 1)
        self.timer = StepTimer(engine, m, g, num_gpus=num_gpus, parallel="tensor",
                               weight_precision=weight_precision, kv_precision=kv_precision,
                               communication=include_communication, params=params)  # fmt: skip
        self.model, self.gpu, self.num_gpus = m, g, num_gpus
        self.engine = get_engine(engine).id
        self.weight_precision, self.kv_precision = weight_precision, kv_precision
        copies = float(np.asarray(kv_replicas(m, self.num_gpus)))  # TP past H_kv GPUs copies the KV
        self.kv_bytes_per_token = float(kv_bytes_per_token(m, kv_precision)) * copies
        self.flops_per_new_token = 2.0 * matmul_parameters_per_token(m)
        self.flops_per_logit = 2.0 * lm_head_parameters(m)
        self.flops_per_attention_pair = float(attention_flops_per_pair(m, absorbed=True))
        # MLA prices a prompt's pairs in its expanded form (fewer FLOPs than the absorbed); others: 0
        self.extra_flops_per_prompt_pair = float(attention_flops_per_pair(m, absorbed=False)) - float(
            attention_flops_per_pair(m, absorbed=True)
        )
        self._moe = m.experts > 1
        # (window W, share of the layers that slide), or None: a sliding layer keeps W tokens of each
        self.window = (m.sliding_window, m.sliding_window_layers / m.layers) if m.sliding_window else None
        # A dense model reads its matmul weights once plus one embedding row per token: linear in tokens.
        one, two = (float(weight_bytes_read(m, weight_precision, n)) for n in (1, 2))
        self._dense_weight_bytes, self._row_bytes = one, two - one

    def __repr__(self) -> str:
        return (
            f"StepCostModel({self.model.id!r}, {self.gpu.id!r}, engine={self.engine!r}, "
            f"num_gpus={self.num_gpus}, weights={self.weight_precision}, kv={self.kv_precision})"
        )

    def weight_bytes_read(self, new_tokens):
        """Weight bytes a step with ``new_tokens`` tokens reads (bytes); constant for a dense model, growing
        with the experts touched for an MoE (``roofline.weight_bytes_read``).

        >>> moe = StepCostModel("mixtral-8x7b", "h100-sxm")
        >>> (moe.weight_bytes_read(np.array([1, 64])) / 1e9).round(1).tolist()
        [25.5, 93.1]
        """
        if not self._moe:
            if isinstance(new_tokens, float):  # the simulator's scalar steps: skip numpy
                return (
                    self._dense_weight_bytes
                    + (new_tokens - 1.0 if new_tokens > 1.0 else 0.0) * self._row_bytes
                )
            return self._dense_weight_bytes + (np.maximum(new_tokens, 1) - 1) * self._row_bytes
        return np.asarray(weight_bytes_read(self.model, self.weight_precision, np.maximum(new_tokens, 1)))

    def time_s(
        self,
        new_tokens,
        sequences,
        kv_tokens_read,
        attention_token_pairs,
        kv_tokens_written,
        prompt_pairs=0.0,
    ):
        """Time of one iteration (s) from its counts (scalars or broadcasting arrays): ``new_tokens``
        computed (decode tokens + prompt chunk tokens), ``sequences`` that get a row of logits (decoders,
        and prompts the step finishes), ``kv_tokens_read`` (Σ of the cached tokens each sequence attends
        to), ``attention_token_pairs`` (Σ new tokens × tokens attended), ``kv_tokens_written`` (prompt
        tokens whose K and V the step writes), and ``prompt_pairs``, the pairs of prompt chunks among them
        (MLA prices them in its expanded prefill form, decode pairs in the absorbed one).

        >>> from roofline.physics.step import prefill
        >>> c = StepCostModel("llama-3-8b", "h100-sxm")
        >>> t = c.time_s(500, 1, 0, 500 * 499 / 2, 500)     # one 500-token prompt, unchunked
        >>> abs(t - prefill("llama-3-8b", "h100-sxm", 500).step_time_s) < 1e-15
        True
        """
        # Each sequence gets one row of logits: a decoder's new token, or a prompt's last token.
        gemm_flops = new_tokens * self.flops_per_new_token + sequences * self.flops_per_logit
        weights, moe_flops, moe_bytes = self.weight_bytes_read(new_tokens), 0.0, 0.0
        if self._moe:  # the routed experts run on the engine's MoE kernels, priced as the engine model does
            moe_flops, moe_bytes = routed_expert_load(self.model, self.weight_precision, new_tokens)
            gemm_flops, weights = gemm_flops - moe_flops, weights - moe_bytes
        t = self.timer.time_s(
            StepLoad(
                gemm_flops,
                weights,
                attention_token_pairs * self.flops_per_attention_pair
                + prompt_pairs * self.extra_flops_per_prompt_pair,  # attention FLOPs
                kv_tokens_read * self.kv_bytes_per_token,
                kv_tokens_written * self.kv_bytes_per_token,
                kv_tokens_written,  # prompt tokens: the only tokens whose KV a step writes
                new_tokens,
                sequences,
                moe_flops,
                moe_bytes,
            )
        )
        return t if type(t) is float or np.ndim(t) else float(t)

    def windowed(self, tokens, sequences):
        """Tokens ``sequences`` sequences holding ``tokens`` cached tokens in all attend to and read,
        averaged over the layers (a sliding layer keeps at most its window W of each): tokens − share ×
        max(tokens − sequences × W, 0). Exact when every sequence is past the window, or every one within
        it; for a mix, an upper bound. ``tokens`` itself without a window. Arrays broadcast.

        >>> c = StepCostModel("mistral-7b", "h100-sxm")     # every layer slides, W = 4096
        >>> float(c.windowed(32 * 10_000, 32)), float(c.windowed(32 * 1_000, 32))
        (131072.0, 32000.0)
        """
        if self.window is None:
            return tokens
        w, share = self.window
        if isinstance(tokens, float):  # the simulator's scalar steps: skip numpy
            return tokens - share * max(tokens - sequences * w, 0.0)
        return tokens - share * np.maximum(tokens - sequences * w, 0.0)

    def chunk_load(self, cached, new):
        """(KV tokens read, attention pairs) of a prompt chunk of ``new`` tokens after ``cached`` ones,
        averaged over the layers as ``forward_step`` counts them (sliding windows included).

        >>> StepCostModel("gpt-oss-120b", "h100-sxm").chunk_load(0, 1000)   # half the layers slide, W = 128
        (0.0, 309622.0)
        """
        if self.window is None:
            return cached, new * cached + new * (new - 1) / 2
        return float(effective_kv_tokens(self.model, cached)), float(attention_pairs(self.model, cached, new))

    def decode_time_s(self, batch, context_tokens):
        """Step time of ``batch`` sequences each decoding one token over ``context_tokens`` (s).

        >>> c = StepCostModel("llama-3-8b", "h100-sxm")
        >>> c.decode_time_s(32, 1000) == c.time_s(32, 32, 32000, 32000, 0)
        True
        """
        b = np.asarray(batch, dtype=float)
        kv = self.windowed(b * np.asarray(context_tokens, dtype=float), b)
        return self.time_s(b, b, kv, kv, 0.0)


def engine_cost_model(engine: str, model, gpu, **kwargs) -> StepCostModel:
    """A ``StepCostModel`` for a named engine (``"ideal"``, ``"vllm"``, …); ``kwargs`` as its keywords.

    >>> real, ideal = (engine_cost_model(e, "llama-3-8b", "h100-sxm") for e in ("vllm", "ideal"))
    >>> real.engine, real.time_s(1, 1, 0, 0, 0) > ideal.time_s(1, 1, 0, 0, 0)
    ('vllm', True)
    """
    return StepCostModel(model, gpu, engine=engine, **kwargs)


def kv_capacity_tokens(
    model, gpu, num_gpus=1, weight_precision="bf16", kv_precision="bf16", memory="engine"
) -> int:
    """KV-cache tokens that fit beside the weights on ``num_gpus`` GPUs: (the memory an engine gives weights
    and KV, ``memory_available_bytes`` under its ``memory`` model − weights) ÷ KV bytes per token, rounded
    down. Raises ``DoesNotFitError`` if the weights alone do not fit.

    >>> kv_capacity_tokens("llama-3-8b", "h100-sxm")     # (66.3 GiB − 16.06 GB) ÷ 131,072 bytes
    420859
    """
    weights = float(weight_bytes(model, weight_precision))
    free = float(memory_available_bytes(gpu, num_gpus, memory)) - weights
    if free <= 0:
        raise DoesNotFitError(
            f"{get_model(model).id} weights ({weights / 1e9:.1f} GB at {weight_precision}) do not fit in "
            f"{num_gpus}x {get_gpu(gpu).id}"
        )
    return int(free // kv_bytes_per_token(model, kv_precision))


def sustainable_rate_per_s(
    cost,
    input_tokens: float,
    output_tokens: float,
    max_batch: int,
    kv_tokens: int,
    workers: int = 1,
    *,
    pipeline_stages: int = 1,
    decode_workers: int = 0,
) -> float:
    """About the largest request rate (requests/s) a deployment can keep up with (a closed form).

    In a saturated steady state the batch holds B = min(max_batch, KV tokens ÷ (P + O)) sequences. Each
    request stays about O iterations (one prefill, O − 1 decodes), so each iteration finishes B ÷ O
    requests and must take in as many new prompts. One such average iteration carries

        B (O − 1) ÷ O decode tokens at mean context P + O/2, and B ÷ O prompts of P tokens,

    and costs t = ``cost.time_s`` of that work (the weights are read once for both). Then
    rate ≈ workers × B ÷ (O × t). With S pipeline stages the iteration costs ``time_s`` of 1/S of the work
    (one microbatch through the pipeline). Disaggregated (``decode_workers`` > 0, ``workers`` = prefill
    workers): the smaller of workers ÷ prefill(P) and decode_workers × B ÷ ((O − 1) × step(B, P + O/2)).

    >>> c = StepCostModel("llama-3-8b", "h100-sxm")
    >>> round(sustainable_rate_per_s(c, 512, 128, 256, 420859), 1)   # compute-bound: 1,278 tokens a step
    108.0
    """
    p, o = float(input_tokens), max(float(output_tokens), 1.0)
    b = max(1, min(int(max_batch), int(kv_tokens // max(p + o, 1))))
    p1 = max(p, 1.0)  # an empty prompt still computes one start token
    prompt_pairs = cost.chunk_load(0, p)[1]
    if decode_workers > 0:
        prefill_s = cost.time_s(p1, 1, 0, prompt_pairs, p, prompt_pairs)
        decode_s = (o - 1) * cost.decode_time_s(b, p + o / 2) / b if o > 1 else 0.0
        return min(workers / prefill_s, decode_workers / decode_s if decode_s > 0 else np.inf)
    dec = b * (o - 1) / o
    kv_read = cost.windowed(dec * (p + o / 2), dec)
    s = max(1, min(int(pipeline_stages), b))
    work = (b + b * (p1 - 1) / o, b, kv_read, kv_read + b / o * prompt_pairs, b * p / o, b / o * prompt_pairs)
    t = cost.time_s(*(x / s for x in work))
    return workers * b / (o * t)
