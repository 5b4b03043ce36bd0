"""What the self-check cards' code shares: table look-ups, seeded random choices, the figures a scenario
quotes, and the library's exact decode step beside them.

Each lesson's ``cards.py`` draws its shuffled scenarios with these. Numbers only (numpy and the core).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from roofline.course.cards import sig
from roofline.data import get_gpu, get_model, gpus, models
from roofline.physics.architecture import kv_bytes_per_token, parameter_count, weight_bytes
from roofline.physics.precision import get_precision, peak_flops_per_s
from roofline.physics.step import Step, batched_step_time_s, decode_floor_s, decode_step

T = TypeVar("T")

WEIGHT_PRECISIONS = ("bf16", "fp8", "int4")  # what a shuffled scenario may store its weights in


def gpu_peak_flops_per_s(params: Mapping[str, Any]) -> float:
    """Dense peak FLOP/s of the scenario's GPU at its weight precision.

    >>> gpu_peak_flops_per_s({"gpu": "h100-sxm", "weight_precision": "bf16"}) / 1e12
    989.0
    """
    return peak_flops_per_s(get_gpu(params["gpu"]), params["weight_precision"])


def dense_models() -> list[str]:
    """The ids of the tables' plain dense models: the Pack 01 cards' formulas assume every weight is read
    per step and a KV cache of 2·L·H_kv·d_h per token, so MoE, sliding-window and MLA models are left out
    (the lever cards cover those)."""
    return [
        m.id
        for m in models().values()
        if not m.is_moe and not m.sliding_window and not getattr(m, "kv_lora_rank", None)
    ]


def gpu_ids() -> list[str]:
    """The ids of the tables' GPUs with BF16 tensor-core math (the cards' default precision); Apple GPUs,
    which publish only an FP32 rate, are left out."""
    return [g.id for g in gpus().values() if "bf16" in g.dense_flops_per_s]


def supports(gpu_id: str, precision: str) -> bool:
    """True if the GPU has tensor-core math at the precision's compute type.

    >>> supports("h100-sxm", "fp8"), supports("a100-80gb-sxm", "fp8")
    (True, False)
    """
    return get_precision(precision).compute in get_gpu(gpu_id).dense_flops_per_s


def weight_precisions(gpu_id: str) -> list[str]:
    """The weight precisions a shuffled scenario may use on this GPU."""
    return [p for p in WEIGHT_PRECISIONS if supports(gpu_id, p)]


def choice(rng: np.random.Generator, options: Sequence[T]) -> T:
    """One of ``options``, drawn with ``rng`` (one integer draw, so a seed reproduces the sequence)."""
    options = list(options)
    return options[int(rng.integers(len(options)))]


def fitting(options: Sequence[int], model_id: str) -> list[int]:
    """The context lengths (tokens) among ``options`` that the model's context window takes."""
    limit = get_model(model_id).max_context_tokens
    return [t for t in options if t <= limit]


def memory_floor_s(model_id: str, gpu_id: str, weight_precision: str) -> float:
    """The model's exact weight read on the GPU at batch 1 (s): a draw's anchor for plausible figures.

    >>> round(memory_floor_s("llama-3-8b", "h100-sxm", "bf16") * 1e3, 2)
    4.79
    """
    bandwidth = get_gpu(gpu_id).memory_bandwidth_bytes_per_s
    return decode_floor_s(weight_bytes(model_id, weight_precision), bandwidth)


def memory_bound_decode(params: Mapping[str, Any]) -> bool:
    """True if the scenario's batched decode step fits, is memory-bound and its context fits the model (a
    batched card's formula, weights + everyone's KV over the bandwidth, holds only then).

    >>> memory_bound_decode(dict(model="llama-3-8b", gpu="h100-sxm", weight_precision="bf16", batch=32,
    ...                          context_tokens=1000))
    True
    """
    step = exact_decode(params, params["batch"], params["context_tokens"])
    in_window = params["context_tokens"] <= get_model(params["model"]).max_context_tokens
    return bool(step.fits) and step.binding == "memory" and in_window


def draw_setup(rng: np.random.Generator) -> dict[str, str]:
    """A dense model, a GPU and a weight precision that GPU computes in, drawn in that order.

    >>> sorted(draw_setup(np.random.default_rng(0)))
    ['gpu', 'model', 'weight_precision']
    """
    model, gpu = draw_model_and_gpu(rng)
    return dict(model=model, gpu=gpu, weight_precision=choice(rng, weight_precisions(gpu)))


def draw_model_and_gpu(rng: np.random.Generator) -> tuple[str, str]:
    """A dense model, then a GPU, drawn in that order (a shuffle's first two draws)."""
    return choice(rng, dense_models()), choice(rng, gpu_ids())


def quoted(params: Mapping[str, Any], key: str, derive: Callable[[], float]) -> float:
    """``params[key]`` if the scenario gives it (not ``None``), else ``derive()`` rounded to 3 digits."""
    value = params.get(key)
    return sig(derive()) if value is None else value


def stated_or_worked(params: Mapping[str, Any], key: str, work: Callable[[], float]) -> float:
    """A result the worked answer quotes: ``params[key]`` where the scenario states it (the study card's own
    rounded figure, "≈ 4.8 ms"), else ``work()``, as worked from the scenario's figures.

    >>> stated_or_worked({"floor_s": 4.8e-3}, "floor_s", lambda: 16e9 / 3.35e12)
    0.0048
    >>> round(stated_or_worked({}, "floor_s", lambda: 16e9 / 3.35e12), 6)
    0.004776
    """
    value = params.get(key)
    return work() if value is None else value


def quoted_weight_bytes(params: Mapping[str, Any], key: str = "weight_bytes", model_key: str = "model",
                        precision_key: str = "weight_precision") -> float:  # fmt: skip
    """The weight bytes a scenario quotes: ``params[key]`` if given, else the tables' figure to 3 digits.

    >>> quoted_weight_bytes({"model": "llama-3-8b", "weight_precision": "bf16"})   # 8.03 B × 2 bytes
    16100000000.0
    """
    return quoted(params, key, lambda: weight_bytes(params[model_key], params[precision_key]))


def quoted_parameters(params: Mapping[str, Any]) -> float:
    """The parameter count a scenario quotes: given, or the tables' count to 3 digits."""
    return quoted(params, "parameters", lambda: parameter_count(params["model"]))


def quoted_kv_bytes_per_token(params: Mapping[str, Any], kv_precision: str) -> float:
    """The KV bytes per token a scenario quotes: given, or the tables' figure to 3 digits."""
    return quoted(params, "kv_bytes_per_token", lambda: kv_bytes_per_token(params["model"], kv_precision))


def exact_decode(params: Mapping[str, Any], batch: int, context_tokens: int) -> Step:
    """The library's exact decode step for a card's scenario (the bytes a step really reads, the embedding
    table looked up rather than read), beside the card's round figures.

    >>> s = exact_decode(dict(model="llama-3-8b", gpu="h100-sxm", weight_precision="bf16"), 1, 0)
    >>> round(s.step_time_s * 1e3, 2)                  # 15.01 GB / 3.35 TB/s; the card's 16 GB gives 4.78
    4.48
    """
    return decode_step(
        params["model"],
        params["gpu"],
        batch,
        context_tokens,
        weight_precision=params["weight_precision"],
        kv_precision=params.get("kv_precision", "bf16"),
        on_overflow="mask",
    )


def card_figures(
    weight_bytes_=16e9,
    bandwidth_bytes_per_s=3.35e12,
    batch=32,
    context_tokens=1000,
    kv_bytes_per_token_=128e3,
) -> dict[str, float]:
    """The study card's headline figures for one user and for a batch (Q1, Q3), by the card's arithmetic
    and rounded as the card rounds them, so a notebook prints the card's own figure wherever it names the
    card: each step to 2 significant digits (16 GB ÷ 3.35 TB/s ≈ 4.8 ms), then the tokens/s from the
    rounded step (1 ÷ 4.8 ms ≈ 200; 1 ÷ 6.0 ms = 167; 32 ÷ 6.0 ms ≈ 5,300). Inputs in bytes, bytes/s,
    users, tokens; outputs in s, tokens/s and bytes (``kv_bytes``: the batch's KV, 2 digits).

    >>> c = card_figures()
    >>> round(c["alone_step_s"] * 1e3, 1), c["alone_tokens_per_s"], round(c["batch_step_s"] * 1e3, 1)
    (4.8, 200.0, 6.0)
    >>> c["per_user_tokens_per_s"], c["total_tokens_per_s"], c["kv_bytes"] / 1e9, c["slowdown"]
    (167.0, 5300.0, 4.1, 1.25)
    """
    alone = sig(decode_floor_s(weight_bytes_, bandwidth_bytes_per_s), 2)
    step = sig(
        batched_step_time_s(weight_bytes_, batch, context_tokens, kv_bytes_per_token_, bandwidth_bytes_per_s),
        2,
    )
    return {
        "alone_step_s": alone,
        "alone_tokens_per_s": sig(1 / alone, 1),
        "kv_bytes": sig(batch * context_tokens * kv_bytes_per_token_, 2),
        "batch_step_s": step,
        "per_user_tokens_per_s": sig(1 / step, 3),
        "total_tokens_per_s": sig(batch / step, 2),
        "slowdown": sig(step / alone, 3),
        "gain": sig(batch / (step / alone), 3),  # the card's 32 ÷ 1.25 = 25.6
    }
