"""Splitting a model over GPUs: tensor parallelism (every matrix split, all-reduces), pipeline/layer split
(layers one GPU after another), expert parallelism (experts spread, all-to-alls).

Taught in lesson 24 (notebooks/24_tensor_parallel.ipynb) and the mixture-of-experts lesson.

Tensor parallel: the GPUs' bandwidths and FLOP/s add up and each layer pays two all-reduces of the
activations. The ideal (``decode_step(..., include_communication=False)``) is the decode floor ÷ N.

A collective's time is a start-up, one latency per hop, and its bytes over one direction of the link:

    ring all-reduce  = base + 2(N−1) × hop + 2(N−1)/N × message ÷ (link ÷ 2)
    tree all-reduce  = base + 2⌈log₂ N⌉ × hop + 2 × message ÷ (link ÷ 2)

with the base and the NVLink hop latency from NCCL's own tuning model, the PCIe hop from measured
nccl-tests runs (``data/assumptions.toml``), and the link bandwidth from the GPU's data row.

>>> round(allreduce_time_s(message_bytes=32 * 8192 * 2, num_gpus=2, link_bytes_per_s=900e9) * 1e6, 2)
8.97
"""

from __future__ import annotations

import numpy as np

from roofline.assumptions import assumption
from roofline.checks import checked, one_of, out
from roofline.errors import InvalidConfigurationError
from roofline.physics.architecture import get_model

# None: the per-hop latency model (base + hops x link latency). A number: a fixed start-up per all-reduce.
DEFAULT_ALLREDUCE_LATENCY_S = None


def __getattr__(name: str):  # ACTIVATION_BYTES: read from the assumptions table when asked, not at import
    if name == "ACTIVATION_BYTES":  # bytes per activation value sent in the all-reduce (BF16 activations)
        return assumption("activation_bytes")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ALGORITHMS = ("ring", "tree")


def link_bytes_per_s(gpu, num_gpus) -> float:
    """The GPU-to-GPU link bandwidth (bytes/s) of ``gpu`` (a ``roofline.data.GPU``) for a split over
    ``num_gpus`` (a count or an array of counts). A row with no link (``interconnect_gb_per_s = 0``, a
    measured CPU) works on one GPU only: more raises ``InvalidConfigurationError``, never a time over a
    link that does not exist.

    >>> from roofline.data import get_gpu
    >>> link_bytes_per_s(get_gpu("h100-sxm"), 2) / 1e9
    900.0
    """
    link = float(gpu.interconnect_bytes_per_s)
    if not link > 0 and np.any(np.asarray(num_gpus) > 1):
        raise InvalidConfigurationError(
            f"{gpu.id} has no GPU-to-GPU link (interconnect_gb_per_s = 0 in its table): it runs on one GPU "
            f"only, got {np.max(num_gpus):g} GPUs"
        )
    return link if link > 0 else 1.0  # one GPU sends nothing: any positive bandwidth gives 0 s


def link_kind(link: str) -> str:
    """``"nvlink"`` for NVLink and AMD Infinity Fabric links, else ``"pcie"`` (PCIe, Thunderbolt, …).

    >>> link_kind("NVLink 4"), link_kind("PCIe Gen5 x16"), link_kind("Infinity Fabric")
    ('nvlink', 'pcie', 'nvlink')
    """
    name = str(link).lower()
    return "nvlink" if ("nvlink" in name or "infinity" in name) else "pcie"


def hop_latency_s(link: str = "NVLink") -> float:
    """Latency of one collective step over ``link`` (s), from the assumptions table.

    >>> hop_latency_s("NVLink 4"), hop_latency_s("PCIe Gen5 x16")
    (6e-07, 3e-06)
    """
    return assumption(f"{link_kind(link)}_hop_latency_s")


def collective_latency_s(num_gpus, link: str = "NVLink", algorithm: str = "ring"):
    """Start-up of one all-reduce over ``num_gpus`` GPUs (s): base + hops × hop latency; 0 for one GPU.

    >>> [round(float(x) * 1e6, 1) for x in collective_latency_s([2, 8], "NVLink")]     # 6.6 + 2(N-1) x 0.6 µs
    [7.8, 15.0]
    >>> round(float(collective_latency_s(8, "NVLink", "tree")) * 1e6, 1)       # 6.6 + 2 x 3 x 0.6 µs
    10.2
    """
    checked(num_gpus, "num_gpus", minimum=1)
    one_of(algorithm, "algorithm", ALGORITHMS)
    n = np.asarray(num_gpus, dtype=float)
    hops = 2 * (n - 1) if algorithm == "ring" else 2 * np.ceil(np.log2(np.maximum(n, 1)))
    t = assumption("collective_base_latency_s") + hops * hop_latency_s(link)
    return out(np.where(n > 1, t, 0.0))


def allreduce_time_s(
    message_bytes,
    num_gpus,
    link_bytes_per_s,
    latency_s=DEFAULT_ALLREDUCE_LATENCY_S,
    *,
    link: str = "NVLink",
    algorithm: str = "ring",
):
    """Time of one all-reduce of ``message_bytes`` (bytes) over ``num_gpus`` GPUs (s).

    ``link_bytes_per_s`` is the per-GPU link bandwidth as vendors quote it (both directions together,
    bytes/s); a collective uses one direction, so half of it. ``latency_s`` None: the per-hop start-up of
    ``link`` (``collective_latency_s``); a number: that fixed start-up. One GPU needs no all-reduce: 0 s.

    >>> allreduce_time_s(1e6, 1, 900e9)
    0.0
    >>> round(allreduce_time_s(8192, 2, 900e9, link="NVLink") * 1e6, 2), round(
    ...     allreduce_time_s(8192, 2, 128e9, link="PCIe") * 1e6, 2)   # batch 1 of an 8B model
    (7.82, 12.73)
    """
    checked(message_bytes, "message_bytes", minimum=0)
    checked(num_gpus, "num_gpus", minimum=1)
    checked(link_bytes_per_s, "link_bytes_per_s", above=0)
    checked(latency_s, "latency_s", minimum=0, allow_none=True)
    one_of(algorithm, "algorithm", ALGORITHMS)
    msg, n, bw = (np.asarray(x, dtype=float) for x in (message_bytes, num_gpus, link_bytes_per_s))
    if latency_s is None:
        lat = np.asarray(collective_latency_s(n, link, algorithm))
    else:
        lat = np.asarray(latency_s, dtype=float)
    share = 2 * (n - 1) / n if algorithm == "ring" else 2.0
    t = lat + share * msg / (bw / 2)
    return out(np.where(n > 1, t, 0.0))


def allreduce_message_bytes(model, batch):
    """Bytes in one tensor-parallel all-reduce of a step: tokens × d activations × 2 bytes.

    >>> allreduce_message_bytes("llama-3-70b", 1)   # 8192 activations of 2 bytes
    16384.0
    """
    b = checked(batch, "batch", minimum=1)
    return out(b * get_model(model).hidden_size * assumption("activation_bytes"))


def tensor_parallel_comm_time_s(
    model,
    batch,
    num_gpus,
    link_bytes_per_s,
    latency_s=DEFAULT_ALLREDUCE_LATENCY_S,
    *,
    link: str = "NVLink",
    algorithm: str = "ring",
):
    """Communication time of one step under tensor parallelism (s): 2 all-reduces per layer (after
    attention and after the MLP), each of ``batch`` tokens × d activations (decode: B; prefill: the prompt
    tokens).

    >>> t = tensor_parallel_comm_time_s("llama-3-70b", batch=1, num_gpus=2, link_bytes_per_s=900e9)
    >>> round(t * 1e3, 2)   # 160 all-reduces of 7.8 µs start-up + 16 KB over 450 GB/s
    1.25
    """
    msg = allreduce_message_bytes(model, batch)
    t = np.asarray(
        allreduce_time_s(msg, num_gpus, link_bytes_per_s, latency_s, link=link, algorithm=algorithm)
    )
    return out(2 * get_model(model).layers * t)


def kv_replicas(model, num_gpus):
    """Copies of each KV byte that ``num_gpus`` GPUs in tensor parallel hold and read (copies).

    Tensor parallelism splits the KV cache by KV head: with G ≤ H_kv GPUs each holds H_kv ÷ G heads, one
    copy in all. With more GPUs than KV heads the heads are replicated, G ÷ H_kv copies; multi-head latent
    attention caches one latent shared by every head, so each GPU holds all of it: G copies.

    >>> kv_replicas("llama-3-70b", [1, 8, 16]).tolist()     # 8 KV heads
    [1.0, 1.0, 2.0]
    >>> kv_replicas("deepseek-v3", 8)                       # MLA: every GPU holds the whole latent
    8.0
    """
    m = get_model(model)
    n = checked(num_gpus, "num_gpus", minimum=1)
    shards = 1 if m.is_mla else m.kv_heads
    return out(n / np.minimum(n, shards))


def pipeline_comm_time_s(model, tokens, num_gpus, link_bytes_per_s, *, link: str = "PCIe"):
    """Hand-offs of a pipeline (layer) split per step (s): the activations of ``tokens`` tokens cross
    G − 1 stage boundaries, each a point-to-point send (base + one hop + bytes over one direction).

    >>> round(float(pipeline_comm_time_s("llama-3-70b", 1, 2, 64e9, link="PCIe")) * 1e6, 2)
    10.11

    (6.6 + 3.0 µs + 16 KB over 32 GB/s.)
    """
    n = checked(num_gpus, "num_gpus", minimum=1)
    t = checked(tokens, "tokens", minimum=0)
    bw = checked(link_bytes_per_s, "link_bytes_per_s", above=0)
    msg = t * get_model(model).hidden_size * assumption("activation_bytes")
    one = assumption("collective_base_latency_s") + hop_latency_s(link) + msg / (bw / 2)
    return out((n - 1) * one)


def all_to_all_time_s(model, tokens, num_gpus, link_bytes_per_s, *, link: str = "NVLink"):
    """Expert-parallel communication per step (s): each MoE layer dispatches every token's activation to
    the GPUs holding its k routed experts and combines the results back, two all-to-alls. Tokens are
    spread evenly over the G GPUs and experts uniformly, so a GPU sends (G−1)/G of its tokens' k copies:

        per MoE layer = 2 × [base + (G−1) × hop + tokens/G × k × d × 2 bytes × (G−1)/G ÷ (link ÷ 2)]

    Routing limits (DeepSeek: at most 4 nodes per token) and FP8 dispatch would shrink it.

    >>> round(float(all_to_all_time_s("deepseek-v3", 256, 8, 900e9)) * 1e3, 2)   # 58 MoE layers x 2 x 17.9 µs
    2.08
    """
    m = get_model(model)
    n = checked(num_gpus, "num_gpus", minimum=1)
    t = checked(tokens, "tokens", minimum=0)
    bw = checked(link_bytes_per_s, "link_bytes_per_s", above=0)
    if not m.is_moe:
        return out(0.0 * n * t)
    sent = t / n * m.experts_per_token * m.hidden_size * assumption("activation_bytes") * (n - 1) / n
    one = assumption("collective_base_latency_s") + (n - 1) * hop_latency_s(link) + sent / (bw / 2)
    moe_layers = m.layers - m.first_dense_layers
    return out(np.where(n > 1, 2 * moe_layers * one, 0.0))


__all__ = [
    "ACTIVATION_BYTES",  # noqa: F822 - provided by the module __getattr__ (read when asked)
    "ALGORITHMS",
    "DEFAULT_ALLREDUCE_LATENCY_S",
    "all_to_all_time_s",
    "allreduce_message_bytes",
    "allreduce_time_s",
    "collective_latency_s",
    "hop_latency_s",
    "kv_replicas",
    "link_kind",
    "pipeline_comm_time_s",
    "tensor_parallel_comm_time_s",
]
