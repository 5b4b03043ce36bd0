"""When decode turns compute-bound, and the saturation wall that follows.

Taught in lesson 61 (notebooks/61_compute_bound.ipynb).

A decode step of B users reads the weights once (shared) and each user's KV (not shared), and does
B × (2 × N_active + attention over T) FLOPs. Its intensity is therefore about B FLOP/byte for BF16
weights and short contexts, and it turns compute-bound where the intensity passes the ridge:

    B × (2N + a·T) ÷ (W + B × T × k) > ridge  ⇔  B × (2N + a·T − ridge × T × k) > ridge × W

(W weight bytes, k KV bytes per token, a = 4·L·H·d_h attention FLOPs per context token). When
2N + a·T ≤ ridge × T × k, every extra user brings more unshared KV bytes than FLOPs can cover, and no
batch ever flips. Past the flip, total throughput stops growing (the compute ceiling, G × peak ÷ FLOPs per
token) while each user's step keeps getting longer: the saturation wall.

>>> import roofline as rl
>>> rl.compute_bound_batch("llama-3-8b", "h100-sxm", context_tokens=0)      # ridge 295.2 FLOP/byte
296
>>> rl.compute_bound_batch("llama-3-8b", "h100-sxm", context_tokens=[0, 128, 1000]).tolist()
[296.0, 425.0, inf]
"""

from __future__ import annotations

import numpy as np

from roofline._arrays import checked, out
from roofline.data import get_gpu, get_model
from roofline.physics.architecture import (
    active_parameter_count,
    attention_flops_per_token,
    kv_bytes_per_token,
)
from roofline.physics.core import ridge_point_flop_per_byte
from roofline.physics.precision import peak_flops_per_s

# Batches the throughput–latency curve sweeps, and the ones it labels.
LABELLED_BATCHES = (1, 8, 32, 128, 512, 2048, 8192)


SATURATION_BATCHES = np.union1d(np.round(np.geomspace(1, 8192, 200)).astype(int), LABELLED_BATCHES)


CONTEXT_SWEEP = np.unique(np.round(np.geomspace(1, 65536, 200)).astype(int))


def context_limit_tokens(model, gpu, *, weight_precision="bf16", kv_precision="bf16") -> float:
    """Context per user (tokens) at and beyond which no batch makes decode compute-bound:
    T* = 2·N_active ÷ (ridge × k − a), or ``inf`` if the attention FLOPs alone keep up with the KV bytes.

    Taught in lesson 61.

    >>> round(context_limit_tokens("llama-3-8b", "h100-sxm"))
    421
    """
    m, g = get_model(model), get_gpu(gpu)
    ridge = ridge_point_flop_per_byte(peak_flops_per_s(g, weight_precision), g.memory_bandwidth_bytes_per_s)
    per_token_bytes = ridge * kv_bytes_per_token(m, kv_precision)
    attention_per_token = attention_flops_per_token(m, 1)
    if per_token_bytes <= attention_per_token:
        return float("inf")
    return 2.0 * active_parameter_count(m) / (per_token_bytes - attention_per_token)


def throughput_ceiling_tokens_per_s(model, gpu, context_tokens=0, *, num_gpus=1, weight_precision="bf16"):
    """The compute ceiling on total decode throughput: G × peak FLOP/s ÷ FLOPs per token (tokens/s).
    No batch size gets past it. Broadcasts over context and GPU count.

    Taught in lesson 61.

    >>> round(throughput_ceiling_tokens_per_s("llama-3-8b", "h100-sxm"))   # 989e12 / 16.06e9
    61580
    """
    m, g = get_model(model), get_gpu(gpu)
    n = checked(num_gpus, "num_gpus", minimum=1)
    per_token = 2.0 * active_parameter_count(m) + np.asarray(attention_flops_per_token(m, context_tokens))
    return out(n * peak_flops_per_s(g, weight_precision) / per_token)
