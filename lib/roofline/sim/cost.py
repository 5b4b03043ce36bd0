"""The price of one batched iteration: the only place the simulator asks physics for a time.

Taught in notebooks/slos_and_capacity.ipynb (and used by every simulator run).

A serving engine runs one forward pass per iteration over every token scheduled in it: one token for each
decoding sequence plus the prompt chunks being prefilled. The pass is a roofline of the combined work:

    FLOPs = new tokens × 2 × N_active + attention pairs × (attention FLOPs per token per context token)
    bytes = weight bytes read (once, shared) + (KV tokens read + KV tokens written) × KV bytes per token
    time  = max(FLOPs ÷ (G × peak × compute fraction), bytes ÷ (G × bandwidth × bandwidth fraction))
            [+ tensor-parallel all-reduces] + fixed overhead per step

"Attention pairs" is Σ over sequences of new tokens × tokens each attends to (a chunk of C tokens after S
cached ones: C·S + C(C−1)/2). As in ``roofline.decode_step``, a decoding token's own one-token KV write is
left out (the simulator passes only prompt tokens as written); for a pure decode batch this adapter gives
exactly ``decode_step``'s time, and for one unchunked prompt exactly ``prefill``'s.

``StepCostModel`` prices an iteration with the step engine's own per-token constants
(``roofline.physics``: matmul weights per token, one row of logits per sequence, FLOPs per attention pair,
weight bytes read, KV bytes per token), so a step of the simulator equals ``rl.forward_step`` of the same
work; the tests check it to 1e-12. It works on sums over the batch, so it is one formula per iteration
instead of one call per sequence. Sliding windows are not modelled here (the KV read is linear in context):
for a windowed model the simulator's steps are an upper bound.

>>> c = StepCostModel("llama-3-8b", "h100-sxm")
>>> round(c.time_s(new_tokens=32, sequences=32, kv_tokens_read=32 * 1000,
...                attention_token_pairs=32 * 1000, kv_tokens_written=0) * 1e3, 2)   # = decode_step
5.73
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import roofline as rl

# Engines the simulator prices: "ideal" is the roofline; the others take the achievable layer's calibration
# (``engine_cost_model``).
ENGINES = ("ideal", "vllm", "tensorrt-llm", "sglang", "llama.cpp")


class StepCostModel:
    """Step time (s) of one batched iteration from its aggregates; ideal roofline by default.

    Parameters
    ----------
    model, gpu : ids (``"llama-3-8b"``, ``"h100-sxm"``) or dataclasses from ``roofline.data``.
    num_gpus : GPUs sharing each step in tensor parallel, G ≥ 1: bandwidth and FLOP/s add up.
    weight_precision, kv_precision : precision ids (``"bf16"``, ``"fp8"``, …).
    include_communication : add the tensor-parallel all-reduces of the step's tokens (lesson 24).
    bandwidth_fraction, compute_fraction : achieved fractions of peak bandwidth and FLOP/s, in (0, 1];
        1 is the ideal roofline.
    step_overhead_s : fixed time added to every step (s): kernel launches, scheduler, sampling.
    achievable : optional callable ``f(time_s, **aggregates) -> time_s`` applied last (the hook for the
        achievable layer). engine : a label carried into results (``"ideal"`` by default).

    >>> c = StepCostModel("llama-3-8b", "h100-sxm", step_overhead_s=1e-3)
    >>> round(c.time_s(1, 1, 0, 0, 0) * 1e3, 2)   # batch-1 floor 4.48 ms + 1 ms overhead
    5.48
    >>> c.time_s(np.array([1, 2]), np.array([1, 2]), 0, 0, 0).shape
    (2,)
    """

    def __init__(
        self,
        model,
        gpu,
        *,
        num_gpus: int = 1,
        weight_precision: str = "bf16",
        kv_precision: str = "bf16",
        include_communication: bool = False,
        bandwidth_fraction: float = 1.0,
        compute_fraction: float = 1.0,
        step_overhead_s: float = 0.0,
        achievable: Callable | None = None,
        engine: str = "ideal",
    ):
        self.model = rl.get_model(model)
        self.gpu = rl.get_gpu(gpu)
        if int(num_gpus) != num_gpus or num_gpus < 1:
            raise rl.InvalidConfigurationError(f"num_gpus must be a whole number >= 1, got {num_gpus!r}")
        for name, value in (
            ("bandwidth_fraction", bandwidth_fraction),
            ("compute_fraction", compute_fraction),
        ):
            if not 0 < value <= 1:
                raise rl.InvalidConfigurationError(f"{name} must be in (0, 1], got {value!r}")
        if step_overhead_s < 0:
            raise rl.InvalidConfigurationError(f"step_overhead_s must be >= 0, got {step_overhead_s!r}")
        self.num_gpus = int(num_gpus)
        self.weight_precision = weight_precision
        self.kv_precision = kv_precision
        self.include_communication = include_communication
        self.bandwidth_fraction = float(bandwidth_fraction)
        self.compute_fraction = float(compute_fraction)
        self.step_overhead_s = float(step_overhead_s)
        self.achievable = achievable
        self.engine = engine
        m, g = self.model, self.gpu
        # The step engine's own per-token constants (roofline.physics): the simulator prices an iteration
        # from sums over its sequences with exactly the engine's formula, see ``time_s``.
        from roofline.physics.architecture import (
            attention_flops_per_pair,
            lm_head_parameters,
            matmul_parameters_per_token,
        )
        from roofline.physics.parallel import kv_replicas

        copies = float(np.asarray(kv_replicas(m, self.num_gpus)))  # TP past H_kv GPUs copies the KV
        self.kv_bytes_per_token = float(rl.kv_bytes_per_token(m, kv_precision)) * copies
        self.flops_per_new_token = 2.0 * matmul_parameters_per_token(m)
        self.flops_per_logit = 2.0 * lm_head_parameters(m)
        self.flops_per_attention_pair = float(attention_flops_per_pair(m, absorbed=True))
        self.peak_flops_per_s = rl.peak_flops_per_s(g, weight_precision) * self.num_gpus
        self.bandwidth_bytes_per_s = g.memory_bandwidth_bytes_per_s * self.num_gpus
        self._moe = m.experts > 1
        # A dense model reads its matmul weights once plus one embedding row per token: linear in tokens.
        one, two = (float(rl.weight_bytes_read(m, weight_precision, n)) for n in (1, 2))
        self._dense_weight_bytes, self._row_bytes = one, two - one

    def __repr__(self) -> str:
        return (
            f"StepCostModel({self.model.id!r}, {self.gpu.id!r}, num_gpus={self.num_gpus}, "
            f"weights={self.weight_precision}, kv={self.kv_precision}, "
            f"bandwidth_fraction={self.bandwidth_fraction}, compute_fraction={self.compute_fraction}, "
            f"step_overhead_s={self.step_overhead_s})"
        )

    def weight_bytes_read(self, new_tokens):
        """Weight bytes a step with ``new_tokens`` tokens reads (bytes); constant for a dense model, growing
        with the experts touched for an MoE (``roofline.weight_bytes_read``).

        >>> moe = StepCostModel("mixtral-8x7b", "h100-sxm")
        >>> (moe.weight_bytes_read(np.array([1, 64])) / 1e9).round(1).tolist()
        [25.5, 93.1]
        """
        if not self._moe:
            return self._dense_weight_bytes + (np.maximum(new_tokens, 1) - 1) * self._row_bytes
        return np.asarray(rl.weight_bytes_read(self.model, self.weight_precision, np.maximum(new_tokens, 1)))

    def time_s(self, new_tokens, sequences, kv_tokens_read, attention_token_pairs, kv_tokens_written):
        """Time of one iteration (s). Every argument is a count (scalar or numpy array, broadcasting).

        new_tokens : tokens computed this step (decode tokens + prefill chunk tokens).
        sequences : sequences that get a row of logits this step (decoders, and prompts it finishes).
        kv_tokens_read : Σ over sequences of the cached tokens each attends to.
        attention_token_pairs : Σ over sequences of new tokens × tokens attended.
        kv_tokens_written : prompt tokens whose K and V this step writes.

        >>> c = StepCostModel("llama-3-8b", "h100-sxm")
        >>> t = c.time_s(500, 1, 0, 500 * 499 / 2, 500)     # one 500-token prompt, unchunked
        >>> abs(t - rl.prefill("llama-3-8b", "h100-sxm", 500).time_s) < 1e-15
        True
        """
        # Each sequence gets one row of logits: a decoder's new token, or a prompt's last token.
        flops = (
            new_tokens * self.flops_per_new_token
            + sequences * self.flops_per_logit
            + attention_token_pairs * self.flops_per_attention_pair
        )
        kv_bytes = (kv_tokens_read + kv_tokens_written) * self.kv_bytes_per_token
        bytes_ = self.weight_bytes_read(new_tokens) + kv_bytes
        compute_s = flops / (self.peak_flops_per_s * self.compute_fraction)
        memory_s = bytes_ / (self.bandwidth_bytes_per_s * self.bandwidth_fraction)
        if isinstance(compute_s, float) and isinstance(memory_s, float):  # scalars: skip numpy's overhead
            t = compute_s if compute_s > memory_s else memory_s
        else:
            t = np.maximum(compute_s, memory_s)
        if self.include_communication and self.num_gpus > 1:
            t = t + np.asarray(
                rl.tensor_parallel_comm_time_s(
                    self.model, np.maximum(new_tokens, 1), self.num_gpus, self.gpu.interconnect_bytes_per_s
                )
            )
        t = t + self.step_overhead_s
        if self.achievable is not None:
            t = self.achievable(
                t,
                new_tokens=new_tokens,
                sequences=sequences,
                kv_tokens_read=kv_tokens_read,
                attention_token_pairs=attention_token_pairs,
                kv_tokens_written=kv_tokens_written,
            )
        return t if np.ndim(t) else float(t)

    def decode_time_s(self, batch, context_tokens):
        """Step time of ``batch`` sequences each decoding one token over ``context_tokens`` (s).

        >>> c = StepCostModel("llama-3-8b", "h100-sxm")
        >>> c.decode_time_s(32, 1000) == c.time_s(32, 32, 32000, 32000, 0)
        True
        """
        b = np.asarray(batch, dtype=float)
        kv = b * np.asarray(context_tokens, dtype=float)
        return self.time_s(b, b, kv, kv, 0.0)


def engine_cost_model(engine: str, model, gpu, **kwargs) -> StepCostModel:
    """A ``StepCostModel`` for a named engine: ``"ideal"`` is the roofline; ``vllm``, ``tensorrt-llm``,
    ``sglang`` and ``llama.cpp`` take the achievable layer's calibrated fractions of bandwidth and math and
    its per-step, per-layer and per-sequence costs (``roofline.achievable.engine_parameters``, fitted on
    published runs), so a simulated server runs at what that engine reaches.

    >>> engine_cost_model("ideal", "llama-3-8b", "h100-sxm").bandwidth_fraction
    1.0
    >>> real, ideal = (engine_cost_model(e, "llama-3-8b", "h100-sxm") for e in ("vllm", "ideal"))
    >>> real.engine, real.time_s(1, 1, 0, 0, 0) > ideal.time_s(1, 1, 0, 0, 0)
    ('vllm', True)
    """
    key = str(engine).strip().lower()
    if key not in ENGINES:
        raise rl.UnknownNameError("engine", engine, list(ENGINES))
    if key == "ideal":
        return StepCostModel(model, gpu, engine=key, **kwargs)
    from roofline.achievable import engine_parameters

    p = engine_parameters(gpu, key)
    layers = rl.get_model(model).layers
    per_sequence = p["sequence_overhead_s"]

    def with_sequence_cost(t, *, sequences, **_):  # each sequence in the step costs the engine a little
        return t + per_sequence * sequences

    return StepCostModel(
        model, gpu, engine=key, bandwidth_fraction=min(p["bandwidth_fraction"], 1.0),
        compute_fraction=min(p["compute_fraction"], 1.0),
        step_overhead_s=p["step_overhead_s"] + layers * p["layer_overhead_s"],
        achievable=with_sequence_cost, **kwargs,
    )  # fmt: skip
