"""What a Mac or a home GPU does with a local model: llama.cpp's speed on your own hardware, and its cost.

Taught in notebooks/your_own_hardware.ipynb. One user, one request at a time, as a laptop or a workstation
runs a model: the decode floor (the weights a token reads ÷ the memory bandwidth), what llama.cpp reaches
on that hardware (``roofline.engines``: the kernels' sourced or timed efficiencies and llama.cpp's fitted
costs per step and per layer), the prompt speed, whether the model fits, and what a million tokens cost
when you own the machine (purchase spread over its life, plus power: ``data/prices.toml``).

>>> r = local_speeds(["llama-3-8b"], ["m4-max"], ["gguf-q4_k_m"])[0]
>>> r["fits"], r["engine_tokens_per_s"] < r["floor_tokens_per_s"]
(True, True)
"""

from __future__ import annotations

import itertools

import numpy as np

from roofline.data import get_gpu, get_model
from roofline.engines.achievable import decode_step_times, prefill_times
from roofline.engines.model import StepTimer
from roofline.engines.registry import default_engine
from roofline.errors import DoesNotFitError, UnsupportedPrecisionError
from roofline.physics.architecture import weight_bytes
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.physics.memory import memory_available_bytes
from roofline.pricing import default_price

LOCAL_MEMORY = (
    "local"  # what llama.cpp can use there: Metal's share of a Mac's memory, a GPU's less its context
)
CONTEXT_TOKENS = 1000  # a conversation's worth of KV while decoding
PROMPT_TOKENS = 512  # the prompt whose speed is reported


def local_speeds(
    models, gpus, formats, *, context_tokens=CONTEXT_TOKENS, batch=1, num_gpus=1, engine=None
) -> list[dict]:
    """One row per model × GPU × weight format: ``weights_bytes`` (stored), ``fits`` (the weights and the
    ``batch`` conversations' KV caches, in the memory the ``num_gpus`` machines' GPUs give an engine:
    Metal's share of unified memory on a Mac, ``roofline.physics.memory`` ``"local"``), ``engine`` (the
    one given, else the one people run on that GPU: ``roofline.engines.default_engine``),
    ``floor_tokens_per_s`` and ``engine_tokens_per_s`` (what each of the ``batch`` users decoding at
    ``context_tokens`` tokens gets), ``engine_tokens_per_s_total`` (all of them), ``prompt_tokens_per_s``
    (``PROMPT_TOKENS`` in one pass), ``usd_per_hour`` (per GPU) and ``usd_per_million_tokens`` (the GPU's
    price row: owning it, for a home GPU, times ``num_gpus``). NaN where it does not fit; a format the GPU
    cannot compute is left out.
    """
    nan, rows = float("nan"), []
    for m, g, fmt in itertools.product(map(get_model, models), map(get_gpu, gpus), formats):
        stored = float(weight_bytes(m, fmt))
        fits = stored < float(memory_available_bytes(g, num_gpus, memory=LOCAL_MEMORY))
        name = engine or default_engine(g)
        try:
            timer = StepTimer(name, m, g, num_gpus=num_gpus, weight_precision=fmt)
            t = decode_step_times(timer, batch, context_tokens, memory=LOCAL_MEMORY)
            p = prefill_times(timer, PROMPT_TOKENS)
        except UnsupportedPrecisionError:
            continue  # a format this GPU cannot compute
        except DoesNotFitError:
            t, p = {"floor": nan, "total": nan}, {"total": nan}
        step = float(t["total"])
        ok = fits and np.isfinite(step)  # the weights, and the conversation's KV cache beside them
        price = default_price(g)
        usd_per_hour = price.usd_per_gpu_hour if price else nan
        rows.append(
            {
                "model": m.id,
                "gpu": g.id,
                "engine": name,
                "batch": batch,
                "num_gpus": num_gpus,
                "format": fmt,
                "weights_bytes": stored,
                "fits": bool(ok),
                "usd_per_hour": usd_per_hour,
                "floor_tokens_per_s": 1 / float(t["floor"]) if ok else nan,
                "engine_tokens_per_s": 1 / step if ok else nan,
                "engine_tokens_per_s_total": batch / step if ok else nan,
                "prompt_tokens_per_s": PROMPT_TOKENS / float(p["total"]) if ok else nan,
                "usd_per_million_tokens": float(
                    cost_per_million_tokens_usd(usd_per_hour, batch / step, num_gpus)
                )
                if ok and price
                else nan,
            }
        )
    return rows
