"""A real decoder-only transformer in numpy (Llama architecture), timed against this machine's roofline.

Taught in notebooks/measure_your_machine.ipynb.

The model: token embedding → L × [RMSNorm → attention with RoPE, grouped-query heads (GQA) and a KV cache
→ residual → RMSNorm → SwiGLU MLP → residual] → RMSNorm → LM head (tied to the embedding by default, as
in Llama 3.2 1B). Weights are random: a decode step's time depends only on the *shapes* (how many bytes
are read, how many FLOPs are done), never on the values, so random weights time exactly like trained ones.

The roofline floor of a decode step is the library's ``decode_step`` on this model's shapes and the
measured machine (``roofline_prediction``).

>>> cfg = TransformerConfig(layers=2, hidden_size=32, attention_heads=4, kv_heads=2, head_dim=8,
...                         intermediate_size=48, vocab_size=64)
>>> model = Transformer(cfg, seed=0)
>>> cache = model.new_cache(batch=2, max_tokens=8)
>>> model.decode_step([1, 2], cache).shape
(2, 64)
>>> cache.length
1
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from roofline.checks import checked
from roofline.data import GPU, Model
from roofline.errors import InvalidConfigurationError
from roofline.physics import architecture
from roofline.physics.metrics import mbu
from roofline.physics.step import decode_step

from .bench import Measurement, time_calls, whole_number


def _linear(x, weight):
    """(…, d_in) @ (d_in, d_out) as ONE 2-D product: numpy's matmul on a (B, S, d) stack runs B separate
    products and so reads the weights B times; flattening the tokens reads them once, as a GPU kernel does."""
    return (x.reshape(-1, x.shape[-1]) @ weight).reshape(*x.shape[:-1], weight.shape[1])


@dataclass(frozen=True)
class TransformerConfig:
    """Shapes of a Llama-architecture decoder (names as in the models table)."""

    layers: int = 12
    hidden_size: int = 1024
    attention_heads: int = 16
    kv_heads: int = 4
    head_dim: int = 64
    intermediate_size: int = 2816
    vocab_size: int = 32_000
    tied_embeddings: bool = True
    rope_theta: float = 10_000.0
    norm_eps: float = 1e-5

    def __post_init__(self):
        for name in ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim",
                     "intermediate_size", "vocab_size"):  # fmt: skip
            object.__setattr__(self, name, whole_number(getattr(self, name), name))  # 2.0 is stored as 2
        if self.attention_heads % self.kv_heads:
            raise InvalidConfigurationError(
                f"attention_heads ({self.attention_heads}) must be a multiple of kv_heads ({self.kv_heads})"
            )
        if self.head_dim % 2:
            raise InvalidConfigurationError(f"head_dim must be even for RoPE, got {self.head_dim}")

    def as_model(self, model_id: str = "numpy-llama") -> Model:
        """These shapes as a ``roofline.Model``, so the library's formulas (bytes, FLOPs) apply to it.

        >>> architecture.parameter_count(SMALL.as_model())  # 8 × 4,981,760 a layer + 32,000 × 512 tied + 512
        56238592
        """
        shapes = {k: v for k, v in asdict(self).items() if k not in ("rope_theta", "norm_eps")}
        name = f"numpy Llama-architecture decoder ({self.layers} layers, d={self.hidden_size})"
        return Model(
            id=model_id, name=name, **shapes, attention_bias=False, experts=1, experts_per_token=1,
            max_context_tokens=1 << 20, published_parameters=float("nan"), published_active_parameters=None,
            source="random weights (roofline.measure.transformer)", parameter_source="",
            note="random weights; timing depends only on shapes",
        )  # fmt: skip

    @property
    def matmul_calls_per_step(self) -> int:
        """numpy matmul calls one forward step makes: per layer Q, K, V, scores, probs·V, O, gate, up,
        down (9), plus the LM head. Each one pays the BLAS's per-call cost.

        >>> SMALL.matmul_calls_per_step   # 9 × 8 layers + 1
        73
        """
        return 9 * self.layers + 1

    @property
    def parameter_count(self) -> int:
        """Stored parameters N (the library's count on these shapes)."""
        return int(architecture.parameter_count(self.as_model()))


DEFAULT = TransformerConfig()  # ~168M parameters (0.67 GB in fp32): 12 × 1024, GQA 16/4, tied 32k vocab
SMALL = TransformerConfig(  # ~56M parameters (0.22 GB): quick enough for the notebook and tests
    layers=8, hidden_size=512, attention_heads=8, kv_heads=2, head_dim=64, intermediate_size=1408 * 2,
    vocab_size=32_000,
)  # fmt: skip


class KVCache:
    """Preallocated K and V for every layer: arrays (B, H_kv, max_tokens, d_h), ``length`` tokens filled."""

    def __init__(self, cfg: TransformerConfig, batch: int, max_tokens: int, dtype=np.float32):
        batch, max_tokens = whole_number(batch, "batch"), whole_number(max_tokens, "max_tokens")
        shape = (batch, cfg.kv_heads, max_tokens, cfg.head_dim)
        self.k = [np.zeros(shape, dtype=dtype) for _ in range(cfg.layers)]
        self.v = [np.zeros(shape, dtype=dtype) for _ in range(cfg.layers)]
        self.batch, self.max_tokens, self.length = batch, max_tokens, 0

    def fill_random(self, context_tokens: int, seed: int = 0) -> KVCache:
        """Pretend ``context_tokens`` tokens were already processed: random K/V (timing needs only shapes)."""
        context_tokens = int(checked(context_tokens, "context_tokens", minimum=0, maximum=self.max_tokens,
                                     whole=True, scalar=True))  # fmt: skip
        rng = np.random.default_rng(seed)
        for arr in (*self.k, *self.v):
            arr[:, :, :context_tokens] = rng.standard_normal(
                arr[:, :, :context_tokens].shape, dtype=arr.dtype
            )
        self.length = context_tokens
        return self


class Transformer:
    """The numpy decoder. Weights are stored (in, out) so a layer is ``x @ W``; fp32 by default."""

    def __init__(self, cfg: TransformerConfig = DEFAULT, seed: int = 0, dtype=np.float32):
        self.cfg, self.dtype = cfg, np.dtype(dtype)
        rng = np.random.default_rng(seed)
        d, i = cfg.hidden_size, cfg.intermediate_size
        q, kv = cfg.attention_heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim

        def w(fan_in, fan_out):  # scaled so activations keep unit size through the layers
            return (rng.standard_normal((fan_in, fan_out), dtype=np.float32) / np.sqrt(fan_in)).astype(dtype)

        def norm():
            return (1 + 0.1 * rng.standard_normal(d)).astype(dtype)

        self.embedding = (rng.standard_normal((cfg.vocab_size, d), dtype=np.float32)).astype(dtype)
        self.layers = [
            {"attn_norm": norm(), "wq": w(d, q), "wk": w(d, kv), "wv": w(d, kv), "wo": w(q, d),
             "mlp_norm": norm(), "w_gate": w(d, i), "w_up": w(d, i), "w_down": w(i, d)}
            for _ in range(cfg.layers)
        ]  # fmt: skip
        self.final_norm = norm()
        # The LM head multiplies by the embedding's transpose when tied: (d, V) view, no copy.
        self.lm_head = self.embedding.T if cfg.tied_embeddings else w(d, cfg.vocab_size)
        half = cfg.head_dim // 2
        self.inv_freq = cfg.rope_theta ** (-np.arange(half, dtype=np.float64) / half)

    @property
    def weight_bytes(self) -> int:
        """Bytes of all stored weights (a tied head counted once) (bytes)."""
        arrays = [self.embedding, self.final_norm, *(a for layer in self.layers for a in layer.values())]
        if not self.cfg.tied_embeddings:
            arrays.append(self.lm_head)
        return sum(a.nbytes for a in arrays)

    def new_cache(self, batch: int, max_tokens: int) -> KVCache:
        """An empty KV cache for ``batch`` users and up to ``max_tokens`` tokens each."""
        return KVCache(self.cfg, batch, max_tokens, self.dtype)

    def _rms_norm(self, x, weight):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.cfg.norm_eps) * weight

    def _rope(self, x, positions):
        """Rotate (…, S, d_h) by position, Llama's "rotate half" layout: pairs (j, j + d_h/2)."""
        angles = np.outer(positions, self.inv_freq)  # (S, d_h/2)
        cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)

    def forward(self, tokens, cache: KVCache) -> np.ndarray:
        """Process ``tokens`` (B, S) after the ``cache.length`` tokens already cached; append their K/V.

        Returns logits (B, S, V). S = 1 is a decode step; S > 1 is a prefill (causal within the chunk).
        """
        cfg = self.cfg
        tokens = np.asarray(tokens)
        if tokens.ndim != 2 or tokens.shape[0] != cache.batch:
            raise InvalidConfigurationError(
                f"tokens must have shape (batch={cache.batch}, S), got {tokens.shape}"
            )
        if tokens.size and (tokens.min() < 0 or tokens.max() >= cfg.vocab_size):
            raise InvalidConfigurationError(f"token ids must be in [0, {cfg.vocab_size}), got {tokens}")
        b, s = tokens.shape
        start, stop = cache.length, cache.length + s
        if stop > cache.max_tokens:
            raise InvalidConfigurationError(
                f"the KV cache holds {cache.max_tokens} tokens; {start} cached + {s} new do not fit"
            )
        h, hkv, hd = cfg.attention_heads, cfg.kv_heads, cfg.head_dim
        group = h // hkv
        positions = np.arange(start, stop)
        # Causal mask over (new query, all keys so far): query i sees keys ≤ start + i.
        mask = np.arange(stop)[None, :] > positions[:, None]  # (S, T)
        x = self.embedding[tokens]  # (B, S, d): a gather, not a matmul
        for layer, k_cache, v_cache in zip(self.layers, cache.k, cache.v, strict=True):
            a = self._rms_norm(x, layer["attn_norm"])
            q = _linear(a, layer["wq"]).reshape(b, s, h, hd).transpose(0, 2, 1, 3)  # (B, H, S, d_h)
            k = _linear(a, layer["wk"]).reshape(b, s, hkv, hd).transpose(0, 2, 1, 3)  # (B, H_kv, S, d_h)
            v = _linear(a, layer["wv"]).reshape(b, s, hkv, hd).transpose(0, 2, 1, 3)
            k_cache[:, :, start:stop] = self._rope(k, positions)
            v_cache[:, :, start:stop] = v
            q = self._rope(q, positions)
            # GQA: the `group` query heads sharing one KV head become rows of one matrix product.
            qg = q.reshape(b, hkv, group * s, hd)
            # a Python float scale: numpy 2 would promote float32 scores to float64 on a numpy scalar,
            # and every later product would then convert the weights (20x slower)
            scores = qg @ k_cache[:, :, :stop].transpose(0, 1, 3, 2) / math.sqrt(hd)  # (B, H_kv, G·S, T)
            scores = scores.reshape(b, hkv, group, s, stop)
            scores = np.where(mask, -np.inf, scores)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = (scores / scores.sum(axis=-1, keepdims=True)).reshape(b, hkv, group * s, stop)
            attn = (probs @ v_cache[:, :, :stop]).reshape(b, h, s, hd).transpose(0, 2, 1, 3)
            x = x + _linear(attn.reshape(b, s, h * hd), layer["wo"])
            m = self._rms_norm(x, layer["mlp_norm"])
            gate = _linear(m, layer["w_gate"])
            x = x + _linear(gate / (1 + np.exp(-gate)) * _linear(m, layer["w_up"]), layer["w_down"])  # SwiGLU
        cache.length = stop
        return _linear(self._rms_norm(x, self.final_norm), self.lm_head)

    def decode_step(self, tokens, cache: KVCache) -> np.ndarray:
        """One decode step: one new token per user, ``tokens`` shape (B,); returns logits (B, V)."""
        tokens = np.asarray(tokens)
        if tokens.ndim != 1:
            raise InvalidConfigurationError(
                f"decode_step takes one token per user, shape (B,), got {tokens.shape}"
            )
        return self.forward(tokens[:, None], cache)[:, 0]


@dataclass(frozen=True)
class DecodeTiming:
    """Measured decode step times over a grid of batch (rows) × context (columns), seconds."""

    batch: np.ndarray  # users, shape (nB,)
    context_tokens: np.ndarray  # tokens, shape (nT,)
    min_s: np.ndarray  # shape (nB, nT)
    median_s: np.ndarray  # shape (nB, nT)
    repeats: int
    warmup: int


def _check_sizes(values, name: str, minimum: int) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(values))
    if arr.size == 0 or not np.issubdtype(arr.dtype, np.integer) or np.any(arr < minimum):
        raise InvalidConfigurationError(f"{name} must be whole numbers >= {minimum}, got {values!r}")
    return arr.astype(int)


def time_steps(
    model: Transformer, tokens, cache: KVCache, repeats: int, warmup: int = 1
) -> tuple[float, ...]:
    """Seconds of ``repeats`` decode steps of ``tokens`` (one per user) after ``warmup`` untimed ones, every
    step at the context ``cache`` holds now: the cache is cut back to it before each step (s).

    >>> m = Transformer(TransformerConfig(layers=1, hidden_size=32, attention_heads=2, kv_heads=1,
    ...                 head_dim=16, intermediate_size=64, vocab_size=100))
    >>> cache = m.new_cache(batch=1, max_tokens=9).fill_random(8)
    >>> len(time_steps(m, [1], cache, repeats=3)), cache.length
    (3, 9)
    """
    context = cache.length

    def step():
        cache.length = context
        model.decode_step(tokens, cache)

    return time_calls(step, repeats, warmup)


def time_decode(model: Transformer, batch=(1,), context_tokens=(0,), repeats: int = 5, warmup: int = 1):
    """Time ``repeats`` decode steps at each (batch, context) after ``warmup`` untimed ones (s), each on a
    KV cache of ``context_tokens`` random tokens (``time_steps``: the KV append included).

    >>> m = Transformer(TransformerConfig(layers=1, hidden_size=32, attention_heads=2, kv_heads=1,
    ...                 head_dim=16, intermediate_size=64, vocab_size=100))
    >>> t = time_decode(m, batch=[1, 2], context_tokens=[0, 8], repeats=2)
    >>> t.min_s.shape, bool((t.min_s <= t.median_s).all())
    ((2, 2), True)
    """
    batches = _check_sizes(batch, "batch", 1)
    contexts = _check_sizes(context_tokens, "context_tokens", 0)
    repeats, warmup = whole_number(repeats, "repeats"), whole_number(warmup, "warmup", minimum=0)
    mins = np.empty((batches.size, contexts.size))
    meds = np.empty_like(mins)
    rng = np.random.default_rng(1)
    for i, b in enumerate(batches):
        cache = model.new_cache(int(b), int(contexts.max()) + 1)
        for j, t in enumerate(contexts):
            tokens = rng.integers(0, model.cfg.vocab_size, size=int(b))
            times = time_steps(model, tokens, cache.fill_random(int(t)), repeats, warmup)
            mins[i, j], meds[i, j] = min(times), float(np.median(times))
    return DecodeTiming(batches, contexts, mins, meds, repeats, warmup)


def roofline_prediction(cfg: TransformerConfig, machine: Measurement | GPU, batch=1, context_tokens=0):
    """The roofline floor for one decode step of ``batch`` users at ``context_tokens`` on the measured
    machine: the library's ``decode_step`` on ``cfg``'s shapes with fp32 weights and KV, so bytes = all
    weight bytes + B × T × KV bytes per token, FLOPs = B × (2N + attention over T); arrays broadcast.

    >>> machine = Measurement(20e9, 100e9, 5.0, 1e-6, 50e9)   # 20 GB/s, 100 GFLOP/s
    >>> s = roofline_prediction(SMALL, machine, batch=1, context_tokens=0)
    >>> round(s.step_time_s * 1e3, 2), s.binding     # 56,238,592 params × 4 bytes ÷ 20 GB/s
    (11.25, 'memory')
    """
    gpu = machine.as_gpu() if isinstance(machine, Measurement) else machine
    return decode_step(
        cfg.as_model(), gpu, batch, context_tokens, weight_precision="fp32", kv_precision="fp32",
        on_overflow="mask",
    )  # fmt: skip


def achieved_mbu(cfg: TransformerConfig, machine: Measurement, step_time_s, batch=1, context_tokens=0):
    """Memory-bandwidth utilization of measured decode steps: bytes the step must read ÷ (time × bandwidth).

    >>> machine = Measurement(20e9, 100e9, 5.0, 1e-6, 50e9)
    >>> round(achieved_mbu(SMALL, machine, 22.5e-3), 2)   # twice the 11.25 ms floor
    0.5
    """
    s = roofline_prediction(cfg, machine, batch, context_tokens)
    return mbu(s.bytes_read, step_time_s, machine.memory_bandwidth_bytes_per_s)


@dataclass(frozen=True)
class BenchmarkBugs:
    """Each bug's wrong figure next to the right one (seconds or tokens/s)."""

    cold_first_step_s: float  # no warm-up: the first step after building the cache
    warm_median_step_s: float  # the right figure: median of steps after warm-up
    process_time_step_s: float  # wrong clock: CPU time of all threads (time.process_time)
    perf_counter_step_s: float  # right clock: wall time (time.perf_counter), same steps
    prompt_tokens: int
    generated_tokens: int
    batch: int
    tokens_per_s_wrong: float  # (prompt + generated) tokens ÷ total time: prompt counted as output
    tokens_per_s_right: float  # generated tokens ÷ decode time


def reproduce_benchmark_bugs(
    model: Transformer, batch: int = 1, prompt_tokens: int = 64, generated_tokens: int = 8, steps: int = 5
) -> BenchmarkBugs:
    """Run the three mistakes of lesson 06 on the real model and measure each next to the right way.

    1. No warm-up: the first decode step on a fresh cache (first touch of its memory pages, BLAS threads
       waking up) is timed as if it were typical.
    2. Wrong clock: ``time.process_time`` adds up the CPU time of *every* thread of the process, so a
       step run by 2 BLAS threads reads up to twice its wall time (or less, if a thread slept).
    3. Prompt tokens counted as output: a generation of P prompt + G new tokens, timed end to end, with
       (P + G) ÷ time reported as "tokens/s"; the prefill does P tokens in one matrix-matrix pass, far
       cheaper per token than decode.
    """
    batch, prompt_tokens = whole_number(batch, "batch"), whole_number(prompt_tokens, "prompt_tokens")
    generated_tokens, steps = whole_number(generated_tokens, "generated_tokens"), whole_number(steps, "steps")
    rng = np.random.default_rng(2)
    tokens = rng.integers(0, model.cfg.vocab_size, size=batch)

    # 1. cold vs warm: a brand-new cache, timed from its first step.
    cache = model.new_cache(batch, prompt_tokens + generated_tokens + steps + 2)
    t0 = time.perf_counter()
    model.decode_step(tokens, cache)
    cold = time.perf_counter() - t0
    warm, cpu = [], []
    for _ in range(steps):
        c0, t0 = time.process_time(), time.perf_counter()
        model.decode_step(tokens, cache)
        warm.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)

    # 3. prompt tokens counted as output: prefill P tokens, then decode G, timed end to end.
    cache = model.new_cache(batch, prompt_tokens + generated_tokens + 1)
    prompt = rng.integers(0, model.cfg.vocab_size, size=(batch, prompt_tokens))
    model.forward(prompt[:, :1], model.new_cache(batch, 1))  # warm the code path (not the cache)
    t0 = time.perf_counter()
    logits = model.forward(prompt, cache)[:, -1]
    t_prefill = time.perf_counter() - t0
    for _ in range(generated_tokens):
        logits = model.decode_step(np.argmax(logits, axis=-1), cache)
    t_total = time.perf_counter() - t0
    return BenchmarkBugs(
        cold_first_step_s=cold,
        warm_median_step_s=float(np.median(warm)),
        process_time_step_s=float(np.median(cpu)),
        perf_counter_step_s=float(np.median(warm)),
        prompt_tokens=prompt_tokens,
        generated_tokens=generated_tokens,
        batch=batch,
        tokens_per_s_wrong=batch * (prompt_tokens + generated_tokens) / t_total,
        tokens_per_s_right=batch * generated_tokens / (t_total - t_prefill),
    )
