"""The figures several ``roofline`` commands show, each asked of the library in one place from the parsed
options (``args``): the ideal decode step, the engine's times (``roofline.engines``) and where they leave
the calibrated range, prices, and the memory numbers of a configuration that does not fit.
"""

from __future__ import annotations

import roofline as rl
from roofline import engines
from roofline.apps.cli_options import tensor_parallel_problem
from roofline.apps.cli_output import fmt_capacity, precisions_text, report_error, rows_text
from roofline.data import table_dir
from roofline.pricing import default_price
from roofline.units import MS, fmt_bytes


def setup_fields(args, *, engine: bool = True) -> dict:
    """The JSON fields naming what a command ran: model, GPU, (engine,) GPU count and precisions."""
    names = {"model_id": rl.get_model(args.model).id, "gpu_id": rl.get_gpu(args.gpu).id}
    if engine:  # default_engine: the one --engine falls back to on this GPU
        names.update(
            engine=engines.get_engine(args.engine).id, default_engine=engines.default_engine(args.gpu)
        )
    return {**names, "num_gpus": args.gpus, "weight_precision": args.weights, "kv_precision": args.kv}


def price_of(gpu, usd_per_hour: float | None = None, price_id: str | None = None):
    """(USD per GPU-hour, the price row or None): ``usd_per_hour`` if given, else the row ``price_id``,
    else the GPU's default price (``roofline.pricing.default_price``); (None, None) for a GPU with no price.

    >>> price_of("l4")[0], price_of("l4", 2.0)
    (0.8048, (2.0, None))
    """
    if usd_per_hour is not None:
        return usd_per_hour, None
    row = rl.get_price(price_id) if price_id else default_price(gpu)
    return (row.usd_per_gpu_hour, row) if row is not None else (None, None)


def price_fields(row) -> dict:
    """The JSON fields naming a price row (``price_of``'s), null when the price was given."""
    return {"price_id": row.id if row else None, "price_kind": row.kind if row else None}


def coverage_fields(args, batch, *, gpu=None, input_tokens=None, output_tokens=None, context_tokens=None):
    """``extrapolated`` and ``extrapolation_reasons`` of the engine's figure (``roofline.engines.coverage``),
    plus a tensor-parallel size the engine would refuse (the figure then splits the work evenly)."""
    m, g = rl.get_model(args.model), rl.get_gpu(gpu or args.gpu)
    extrapolated, reasons = engines.coverage(
        engines.get_engine(args.engine).id, g.id, m.id, batch, input_tokens, output_tokens, args.gpus,
        args.weights, context_tokens=context_tokens,
    )  # fmt: skip
    problem = tensor_parallel_problem(m, args.gpus, args.engine)
    if problem:
        reasons = [*reasons, problem + "; the figure splits the work evenly"]
    return {"extrapolated": bool(extrapolated or problem), "extrapolation_reasons": reasons}


def ideal_step(args, batch: int, context: int, *, gpu=None, **options) -> rl.Step:
    """``roofline.decode_step`` of ``batch`` users holding ``context`` tokens each (``options``: its own)."""
    return rl.decode_step(args.model, gpu or args.gpu, batch, context, num_gpus=args.gpus,
                          weight_precision=args.weights, kv_precision=args.kv, **options)  # fmt: skip


def step_timer(args, *, model=None, gpu=None, weights=None, engine=None) -> engines.StepTimer:
    """The command's deployment as a ``roofline.engines.StepTimer``, or with the model, GPU, weights or
    engine given instead."""
    return engines.StepTimer(
        engine or args.engine,
        model or args.model,
        gpu or args.gpu,
        num_gpus=args.gpus,
        parallel=getattr(args, "parallel", None),
        weight_precision=weights or args.weights,
        kv_precision=args.kv,
    )


def _calibration_file() -> str:
    """The calibration file the figure came from, as "<folder>/calibration.toml" (``roofline.data.table_dir``:
    the shipped one unless ``$ROOFLINE_DATA_DIR`` holds its own)."""
    return f"{table_dir('calibration.toml').name}/calibration.toml"


def achievable_decode(args, batch: int, context: int, *, gpu=None) -> dict:
    """The engine's decode step next to the ideal one: the ``achievable`` JSON object (SI units)."""
    gpu = gpu or args.gpu
    # A CPU that cannot hide its kernel launches slows any engine.
    launch_s = getattr(args, "launch_overhead_ms", 0.0) * MS
    times = engines.decode_step_times(step_timer(args, gpu=gpu), batch, context, launch_overhead_s=launch_s)
    step = float(times["total"])
    return {
        "engine": engines.get_engine(args.engine).id,
        "step_time_s": step,
        "tokens_per_s_per_user": 1.0 / step,
        "tokens_per_s_total": batch / step,
        "calibration": _calibration_file(),
        **coverage_fields(args, batch, gpu=gpu, context_tokens=context),
    }


def achievable_prefill(args) -> dict:
    """The engine's pass of ``args.prompt`` tokens next to the ideal one: the ``achievable`` JSON object."""
    return {
        "engine": engines.get_engine(args.engine).id,
        "time_s": float(engines.prefill_times(step_timer(args), args.prompt)["total"]),
        "calibration": _calibration_file(),
        **coverage_fields(args, 1, input_tokens=args.prompt),
    }


def available_text(have: float, gpu, num_gpus: int, memory: str, hint: str = "") -> str:
    """What "memory available" (``have``, bytes) means: the engine's budget for weights and KV, or all."""
    total = fmt_capacity(gpu, num_gpus)
    if memory == "ideal":
        return f"{fmt_bytes(have)} (all of {total})"
    return (
        f"{fmt_bytes(have)} for weights and KV (of {total}: vLLM's defaults leave the rest to activations "
        f"and the runtime{hint})"
    )


def does_not_fit(args, command: str, batch: int, context: int, *, gpu=None, why="", json_extra=None) -> int:
    """Report weights plus KV cache beyond the GPUs' memory (``report_error``) with the memory numbers
    (``json_extra`` first in JSON: the masked step of ``step``)."""
    gpu, model, weights, kv, num_gpus = gpu or args.gpu, args.model, args.weights, args.kv, args.gpus
    need = rl.memory_needed_bytes(model, batch, context, weights, kv)
    have = rl.memory_available_bytes(gpu, num_gpus)
    w = rl.weight_bytes(model, weights)
    kv_total = rl.kv_cache_bytes(batch, context, rl.kv_bytes_per_token(model, kv))
    largest = rl.max_batch(model, gpu, max(context, 1), num_gpus=num_gpus, weight_precision=weights,
                           kv_precision=kv)  # fmt: skip
    rows = [
        ("memory needed", f"{fmt_bytes(need)} (weights {fmt_bytes(w)} + KV {fmt_bytes(kv_total)})"),
        ("memory available", available_text(have, gpu, num_gpus, "engine")),
        ("short by", fmt_bytes(need - have)),
        ("largest batch", f"{largest} users at {max(context, 1):,} tokens of context" if largest > 0
         else "0: the weights alone do not fit"),
    ]  # fmt: skip
    text = rows_text(rows) + "\nFewer users, a shorter context, a smaller precision or more GPUs would help."
    fields = {"memory_needed_bytes": need, "memory_capacity_bytes": have, "weight_bytes": w,
              "kv_cache_bytes": kv_total, "max_batch": largest, "fits": False}  # fmt: skip
    head = (
        f"{rl.get_model(model).id} on {num_gpus} × {rl.get_gpu(gpu).id} does not fit at batch {batch}, "
        f"context {context:,} tokens ({precisions_text(weights, kv, args.weights_defaulted)}){why}."
    )
    json_fields = {k: v for k, v in {**(json_extra or {}), **fields}.items() if k not in ("command", "error")}
    return report_error("DoesNotFitError", head, json_mode=args.json, command=command, detail=text,
                        fields=json_fields)  # fmt: skip
