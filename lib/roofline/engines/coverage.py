"""Whether a figure lies inside what its engine was calibrated on, and if not, why.

Taught in notebooks/calibration_validation.ipynb. Every command and readout that shows an engine's figure
says when it is extrapolated (a GPU family, model, size or precision the engine's fitted rows never had).

>>> coverage("vllm", "h100-sxm", "llama-3-8b", 1, 128, 128, 1, "bf16")
(False, [])
>>> coverage("vllm", "h100-sxm", "deepseek-v3", 1, 128, 128, 64, "fp8")[1]
['no MLA + MoE model measured with vllm', 'num_gpus 64 outside the measured 1–8']
>>> coverage("ideal", "m4-max", "deepseek-v3", 1, 1, 1, 1, "fp8")
(False, [])
>>> coverage("vllm-2024", "h100-sxm", "llama-3-8b", 64, None, None, 1, "bf16", context_tokens=100_000)[1]
['context_tokens 100000 outside the measured 128–4096']
"""

from __future__ import annotations

import re

from roofline.engines.params import architecture_of, kernel_numbers, load_calibration, project_gpu_ids
from roofline.engines.registry import get_engine

ARCHITECTURES = {"dense": "dense", "moe": "MoE", "mla-moe": "MLA + MoE"}  # architecture_of's, in words


def _precision_class(p: str) -> str:
    """bf16 and fp16 move the same bytes and run at the same peak: one class for range checks."""
    return "16-bit" if p in ("bf16", "fp16") else p


def coverage(
    engine, gpu_id, model_id, batch, input_tokens, output_tokens, num_gpus, weight_precision, *,
    context_tokens=None,
) -> tuple[bool, list[str]]:  # fmt: skip
    """(extrapolated, reasons): whether this configuration leaves what the engine's numbers were measured on.

    The ideal engine is physics, never extrapolated. An engine whose kernels were timed
    (``data/engines.toml`` ``kernels``) has measured kernels at every size, so it is extrapolated when its
    GPU's kernels were not timed (borrowed from a sibling, or sourced figures), when the model's
    architecture (dense, MoE, MLA) or its GPU count was never measured with it, or its batch is beyond the
    measured (its per-sequence cost is fitted up to there). An engine fitted end to end is also checked
    against the measured lengths, models, GPUs and precisions. For one step rather than a request, give
    ``input_tokens`` and ``output_tokens`` as None and ``context_tokens``."""
    e = get_engine(engine)
    if e.kind == "ideal":
        return False, []
    cal = load_calibration()
    fam = cal.family(gpu_id)
    ranges = {k: v for k, v in cal.ranges.items() if k[1] == e.id}
    if not ranges:
        return True, [f"no measurements of {e.id}: its costs are the median of the fitted engines"]
    rng = ranges.get((fam, e.id))
    reasons = []
    if e.kernels:
        if gpu_id not in project_gpu_ids():
            return True, [f"{gpu_id} is a machine you measured: the engine's costs were fitted on GPUs"]
        _, kernels_from = kernel_numbers(e.kernels, gpu_id, weight_precision, "bf16")
        if "no kernel timings" in kernels_from:
            borrowed = re.search(r"(\S+)'s \(same", kernels_from)
            how = f"{borrowed.group(1)}'s used (same family)" if borrowed else "sourced figures used"
            reasons.append(f"no kernel timings for {gpu_id}: {how}")
        seen = {architecture_of(m) for r in ranges.values() for m in r["models"]}
        if architecture_of(model_id) not in seen:
            reasons.append(f"no {ARCHITECTURES[architecture_of(model_id)]} model measured with {e.id}")
        most_batch = max(r["batch"][1] for r in ranges.values())
        gpus_seen = sorted(
            {n for r in ranges.values() for n in range(r["num_gpus"][0], r["num_gpus"][1] + 1)}
        )
        if batch is not None and batch > most_batch:
            reasons.append(f"batch {batch} above the measured {most_batch}")
        if num_gpus not in gpus_seen:
            reasons.append(f"num_gpus {num_gpus} outside the measured {gpus_seen[0]}–{gpus_seen[-1]}")
        return bool(reasons), reasons
    if rng is None:
        return True, [f"no measurements of {e.id} on {fam} GPUs"]
    sizes = [
        ("batch", batch, rng["batch"]),
        ("input_tokens", input_tokens, rng["input_tokens"]),
        ("output_tokens", output_tokens, rng["output_tokens"]),
        ("num_gpus", num_gpus, rng["num_gpus"]),
    ]
    if context_tokens is not None:
        longest = rng["input_tokens"][1] + rng["output_tokens"][1]
        sizes.append(("context_tokens", context_tokens, [rng["input_tokens"][0], longest]))
    reasons = [f"{name} {v} outside the measured {lo}–{hi}" for name, v, (lo, hi) in sizes
               if v is not None and not lo <= v <= hi]  # fmt: skip
    if gpu_id not in rng["gpus"]:
        reasons.append(f"GPU {gpu_id} not measured: its data sheet and the {fam} fractions are used")
    if model_id not in rng["models"]:
        reasons.append(f"model {model_id} not measured with {e.id} on {fam}")
    if _precision_class(weight_precision) not in {_precision_class(x) for x in rng["weight_precisions"]}:
        reasons.append(f"weights {weight_precision} not measured with {e.id} on {fam}")
    return bool(reasons), reasons
