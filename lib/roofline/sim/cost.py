"""The price of one batched iteration: the only place the simulator asks for a time.

Taught in notebooks/slos_and_capacity.ipynb (and used by every simulator run).

A serving engine runs one forward pass per iteration over every token scheduled in it: one token for each
decoding sequence plus the prompt chunks being prefilled. The simulator sums the iteration's work:

    FLOPs = new tokens × 2 × N_mm + sequences × 2 × V·d + attention pairs × (FLOPs per pair)
    bytes = weight bytes read (once, shared) + (KV tokens read + KV tokens written) × KV bytes per token

and the engine turns them into time exactly as every other figure of the course does
(``roofline.engines.model.StepTimer``): the ideal engine gives the roofline, a calibrated engine its
fitted efficiencies, per-step, per-layer and per-sequence costs and all-reduces.

"Attention pairs" is Σ over sequences of new tokens × tokens each attends to (a chunk of C tokens after S
cached ones: C·S + C(C−1)/2). As in ``roofline.decode_step``, a decoding token's own one-token KV write is
left out (the simulator passes only prompt tokens as written); for a pure decode batch this gives exactly
``decode_step``'s time, and for one unchunked prompt exactly ``prefill``'s.

The per-token constants are the step engine's own (``roofline.physics``: matmul weights per token, one
row of logits per sequence, FLOPs per attention pair, weight bytes read, KV bytes per token), so a step of
the simulator equals ``forward_step`` of the same work; the tests check it to 1e-12. It works on sums over
the batch, one formula per iteration instead of one call per sequence. Sliding windows are not modelled
here (the KV read is linear in context): for a windowed model the simulator's steps are an upper bound.

>>> c = StepCostModel("llama-3-8b", "h100-sxm")
>>> round(c.time_s(new_tokens=32, sequences=32, kv_tokens_read=32 * 1000,
...                attention_token_pairs=32 * 1000, kv_tokens_written=0) * 1e3, 2)   # = decode_step
5.73
"""

from __future__ import annotations

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.engines.model import StepLoad, StepTimer
from roofline.engines.registry import engine_ids, get_engine
from roofline.errors import InvalidConfigurationError
from roofline.physics.architecture import (
    attention_flops_per_pair,
    kv_bytes_per_token,
    lm_head_parameters,
    matmul_parameters_per_token,
    weight_bytes_read,
)
from roofline.physics.parallel import kv_replicas


def __getattr__(name: str):
    if name == "ENGINES":  # the engines the simulator prices (every engine of data/engines.toml)
        return tuple(engine_ids())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        engine: str = "ideal",
        include_communication: bool | None = None,
        params=None,
    ):
        m, g = get_model(model), get_gpu(gpu)
        if isinstance(num_gpus, bool) or int(num_gpus) != num_gpus or num_gpus < 1:
            raise InvalidConfigurationError(f"num_gpus must be a whole number >= 1, got {num_gpus!r}")
        self.timer = StepTimer(engine, m, g, num_gpus=int(num_gpus), parallel="tensor",
                               weight_precision=weight_precision, kv_precision=kv_precision,
                               communication=include_communication, params=params)  # fmt: skip
        self.model, self.gpu, self.num_gpus = m, g, int(num_gpus)
        self.engine = get_engine(engine).id
        self.weight_precision, self.kv_precision = weight_precision, kv_precision
        copies = float(np.asarray(kv_replicas(m, self.num_gpus)))  # TP past H_kv GPUs copies the KV
        self.kv_bytes_per_token = float(kv_bytes_per_token(m, kv_precision)) * copies
        self.flops_per_new_token = 2.0 * matmul_parameters_per_token(m)
        self.flops_per_logit = 2.0 * lm_head_parameters(m)
        self.flops_per_attention_pair = float(attention_flops_per_pair(m, absorbed=True))
        self._moe = m.experts > 1
        # A dense model reads its matmul weights once plus one embedding row per token: linear in tokens.
        one, two = (float(weight_bytes_read(m, weight_precision, n)) for n in (1, 2))
        self._dense_weight_bytes, self._row_bytes = one, two - one

    @property
    def params(self):
        """The engine's numbers this model prices steps with (``roofline.engines.EngineParams``)."""
        return self.timer.params

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

    def time_s(self, new_tokens, sequences, kv_tokens_read, attention_token_pairs, kv_tokens_written):
        """Time of one iteration (s). Every argument is a count (scalar or numpy array, broadcasting).

        new_tokens : tokens computed this step (decode tokens + prefill chunk tokens).
        sequences : sequences that get a row of logits this step (decoders, and prompts it finishes).
        kv_tokens_read : Σ over sequences of the cached tokens each attends to.
        attention_token_pairs : Σ over sequences of new tokens × tokens attended.
        kv_tokens_written : prompt tokens whose K and V this step writes.

        >>> from roofline.physics.step import prefill
        >>> c = StepCostModel("llama-3-8b", "h100-sxm")
        >>> t = c.time_s(500, 1, 0, 500 * 499 / 2, 500)     # one 500-token prompt, unchunked
        >>> abs(t - prefill("llama-3-8b", "h100-sxm", 500).time_s) < 1e-15
        True
        """
        # Each sequence gets one row of logits: a decoder's new token, or a prompt's last token.
        t = self.timer.time_s(
            StepLoad(
                new_tokens * self.flops_per_new_token + sequences * self.flops_per_logit,  # GEMM FLOPs
                self.weight_bytes_read(new_tokens),
                attention_token_pairs * self.flops_per_attention_pair,  # attention FLOPs
                kv_tokens_read * self.kv_bytes_per_token,
                kv_tokens_written * self.kv_bytes_per_token,
                kv_tokens_written,  # prompt tokens: the only tokens whose KV a step writes
                new_tokens,
                sequences,
            )
        )
        return t if type(t) is float or np.ndim(t) else float(t)

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
    """A ``StepCostModel`` for a named engine: ``"ideal"`` is the roofline; a calibrated engine (``vllm``,
    ``tensorrt-llm``, ``sglang``, ``llama.cpp``, …) prices each step as ``roofline.engines`` does, so a
    simulated server runs at what that engine reaches.

    >>> engine_cost_model("ideal", "llama-3-8b", "h100-sxm").params.bandwidth_fraction
    1.0
    >>> real, ideal = (engine_cost_model(e, "llama-3-8b", "h100-sxm") for e in ("vllm", "ideal"))
    >>> real.engine, real.time_s(1, 1, 0, 0, 0) > ideal.time_s(1, 1, 0, 0, 0)
    ('vllm', True)
    """
    return StepCostModel(model, gpu, engine=engine, **kwargs)
