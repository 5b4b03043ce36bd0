"""The same measurements on an accelerator through PyTorch (CUDA or Apple MPS), when it is installed.

For a learner with a GPU and PyTorch, beyond the lesson's CPU. PyTorch is NOT a dependency of the course:
every function imports it inside, ``available()`` says whether it can run, and the others raise
``RooflineError`` with a clear message when it cannot. On a GPU the clock must wait for the device:
kernels are launched asynchronously, so each timing synchronizes before reading ``perf_counter``
(timing only the launch is lesson 06's wrong-timer bug).

>>> isinstance(available(), bool)
True
"""

from __future__ import annotations

from roofline.errors import RooflineError
from roofline.physics.core import ridge_point_flop_per_byte

from .bench import Timing, time_calls
from .transformer import Transformer, TransformerConfig


def _torch():
    try:
        import torch  # noqa: PLC0415 - optional, never a dependency
    except ImportError:
        return None
    return torch


def device_name() -> str | None:
    """``"cuda"`` or ``"mps"`` if PyTorch sees one, else None (also None without PyTorch)."""
    torch = _torch()
    if torch is None:
        return None
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return None


def available() -> bool:
    """True if PyTorch is installed and sees a CUDA or MPS device."""
    return device_name() is not None


def _require():
    device = device_name()
    if device is None:
        reason = "PyTorch is not installed" if _torch() is None else "PyTorch sees no CUDA or MPS device"
        raise RooflineError(
            f"the accelerator path needs PyTorch with CUDA or MPS ({reason}); it is optional: "
            "`uv pip install torch` in your own environment to try it"
        )
    return _torch(), device


def _sync(torch, device):
    if device == "cuda":
        torch.cuda.synchronize()
    elif device == "mps":
        torch.mps.synchronize()


def _time(torch, device, fn, repeats: int) -> tuple[float, ...]:
    """``time_calls`` that waits for the device inside each timing: otherwise it times the launch only."""
    _sync(torch, device)
    return time_calls(lambda: (fn(), _sync(torch, device)), repeats, warmup=2)


def measure_accelerator(n_elements: int = 64_000_000, matmul_size: int = 4096, repeats: int = 5) -> dict:
    """Copy bandwidth (2 arrays counted, fp32) and fp32/fp16 matmul FLOP/s on the device (SI units)."""
    torch, device = _require()
    a = torch.ones(n_elements, device=device)
    c = torch.empty_like(a)
    bandwidth = Timing("copy", _time(torch, device, lambda: c.copy_(a), repeats), 2 * 4 * n_elements)
    flops = {}
    for dtype in (torch.float32, torch.float16):
        x = torch.randn(matmul_size, matmul_size, device=device, dtype=dtype)
        matmul = Timing("matmul", _time(torch, device, lambda x=x: x @ x, repeats), 0.0, 2.0 * matmul_size**3)
        flops[str(dtype).removeprefix("torch.")] = matmul.best_flops_per_s
    bw = bandwidth.best_bytes_per_s
    return {"device": device, "copy_bytes_per_s": bw, "matmul_flops_per_s": flops,
            "memory_bandwidth_bytes_per_s": bw,
            "ridge_flop_per_byte": ridge_point_flop_per_byte(flops["float32"], bw)}  # fmt: skip


def time_decode_accelerator(
    cfg: TransformerConfig, batch: int = 1, context_tokens: int = 0, repeats: int = 5
):
    """Decode step time (s, min over ``repeats``) of the same numpy-defined model, its weights on the device.

    The numpy model's weights are copied to the device and the same forward pass runs in PyTorch.
    """
    torch, device = _require()
    model = Transformer(cfg)
    dev = lambda a: torch.as_tensor(a, device=device)  # noqa: E731
    layers = [{k: dev(v) for k, v in layer.items()} for layer in model.layers]
    emb, final_norm = dev(model.embedding), dev(model.final_norm)
    head = emb.T if cfg.tied_embeddings else dev(model.lm_head)
    inv_freq = dev(model.inv_freq.astype("float32"))
    h, hkv, hd = cfg.attention_heads, cfg.kv_heads, cfg.head_dim
    k_cache = [torch.randn(batch, hkv, context_tokens + 1, hd, device=device) for _ in layers]
    v_cache = [torch.randn(batch, hkv, context_tokens + 1, hd, device=device) for _ in layers]
    tokens = torch.zeros(batch, dtype=torch.long, device=device)

    def norm(x, w):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + cfg.norm_eps) * w

    def rope(x, pos):
        ang = pos * inv_freq
        cos, sin = ang.cos(), ang.sin()
        x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def step():
        x = emb[tokens]
        t = context_tokens
        for layer, kc, vc in zip(layers, k_cache, v_cache, strict=True):
            a = norm(x, layer["attn_norm"])
            q = rope((a @ layer["wq"]).view(batch, h, hd), t)
            kc[:, :, t] = rope((a @ layer["wk"]).view(batch, hkv, hd), t)
            vc[:, :, t] = (a @ layer["wv"]).view(batch, hkv, hd)
            qg = q.view(batch, hkv, h // hkv, hd)
            p = torch.softmax(qg @ kc.transpose(-1, -2) / hd**0.5, -1)
            x = x + (p @ vc).reshape(batch, h * hd) @ layer["wo"]
            m = norm(x, layer["mlp_norm"])
            x = x + (torch.nn.functional.silu(m @ layer["w_gate"]) * (m @ layer["w_up"])) @ layer["w_down"]
        return norm(x, final_norm) @ head

    with torch.no_grad():
        return min(_time(torch, device, step, repeats))
