"""What a Mac or a home GPU does with a local model: llama.cpp's speed on your own hardware, and its cost.

Taught in notebooks/your_own_hardware.ipynb. One user, one request at a time, as a laptop or a workstation
runs a model: the decode floor (the weights a token reads ÷ the memory bandwidth), what llama.cpp reaches
on that hardware (``roofline.engines``: the kernels' sourced or timed efficiencies and llama.cpp's fitted
costs per step and per layer), the prompt speed, whether the model fits, and what a million tokens cost
when you own the machine (purchase spread over its life, plus power: ``data/prices.toml``).

>>> rows = local_speeds(["llama-3-8b"], ["m4-max"], ["gguf-q4_k_m"])
>>> r = rows[0]
>>> r["fits"], r["engine_tokens_per_s"] < r["floor_tokens_per_s"]
(True, True)
"""

from __future__ import annotations

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.engines.achievable import decode_step_times, prefill_times
from roofline.engines.model import StepTimer
from roofline.errors import DoesNotFitError, UnsupportedPrecisionError
from roofline.physics.architecture import weight_bytes
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.physics.memory import memory_available_bytes
from roofline.pricing import default_price

LOCAL_ENGINE = "llama.cpp"  # what people run on a Mac or a home GPU


LOCAL_MEMORY = (
    "local"  # what llama.cpp can use there: Metal's share of a Mac's memory, a GPU's less its context
)


CONTEXT_TOKENS = 1000  # a conversation's worth of KV while decoding


PROMPT_TOKENS = 512  # the prompt whose speed is reported


def local_speeds(models, gpus, formats, *, context_tokens=CONTEXT_TOKENS, prompt_tokens=PROMPT_TOKENS,
                 engine=LOCAL_ENGINE) -> list[dict]:  # fmt: skip
    """One row per model × GPU × weight format: ``weights_bytes`` (stored), ``fits`` (the weights and the
    conversation's KV cache, in the memory llama.cpp can use: Metal's share of unified memory on a Mac,
    ``roofline.physics.memory`` ``"local"``), ``floor_tokens_per_s`` and ``engine_tokens_per_s`` (one
    user decoding at ``context_tokens``), ``prompt_tokens_per_s`` (``prompt_tokens`` in one pass),
    ``usd_per_hour`` and ``usd_per_million_tokens`` (the GPU's price row: owning it, for a home GPU). NaN
    where it does not fit; a format the GPU cannot compute is left out.

    Taught in notebooks/your_own_hardware.ipynb.
    """
    rows = []
    for model in models:
        m = get_model(model)
        for gpu in gpus:
            g = get_gpu(gpu)
            price = default_price(g)
            for fmt in formats:
                rows.append(_row(m, g, fmt, price, context_tokens, prompt_tokens, engine))
    return [r for r in rows if r is not None]


def _row(m, g, fmt, price, context_tokens, prompt_tokens, engine) -> dict | None:
    stored = float(weight_bytes(m, fmt))
    fits = stored < float(memory_available_bytes(g, memory=LOCAL_MEMORY))
    row = {"model": m.id, "gpu": g.id, "format": fmt, "weights_bytes": stored, "fits": fits,
           "usd_per_hour": price.usd_per_gpu_hour if price else float("nan")}  # fmt: skip
    nan = float("nan")
    try:
        timer = StepTimer(engine, m, g, weight_precision=fmt)
        t = decode_step_times(timer, 1, context_tokens, memory=LOCAL_MEMORY)
        p = prefill_times(timer, prompt_tokens)
    except UnsupportedPrecisionError:
        return None
    except DoesNotFitError:
        t, p = {"floor": nan, "total": nan}, {"total": nan}
    floor, step = float(t["floor"]), float(t["total"])
    ok = fits and np.isfinite(step)  # the weights, and the conversation's KV cache beside them
    row.update(
        fits=bool(ok),
        floor_tokens_per_s=1 / floor if ok else nan,
        engine_tokens_per_s=1 / step if ok else nan,
        prompt_tokens_per_s=prompt_tokens / float(p["total"]) if ok else nan,
    )
    rate = row["engine_tokens_per_s"]
    row["usd_per_million_tokens"] = (
        float(cost_per_million_tokens_usd(row["usd_per_hour"], rate)) if ok and price else nan
    )
    return row
