"""A scenario: the handful of choices every lesson's sliders set, with the study card's defaults.

Controls, figures and readouts all pass one ``Scenario`` around, so a lesson's explorer is a few lines.
Taught throughout; the price rule is taught in notebooks/01_token_cost.ipynb.

>>> s = Scenario(batch=32)
>>> s.model, s.gpu, s.batch, s.context_tokens
('llama-3-8b', 'h100-sxm', 32, 1000)
>>> s.decode().step_time_s > Scenario(batch=1).decode().step_time_s
True

The price per GPU-hour follows the GPU: unless you give one, it is the GPU's default price
(``roofline.pricing.default_price``: the first row of ``data/prices.toml`` for that GPU, a rental list
price, or for a GPU people buy the cost of owning it), and it follows a change of GPU. Every
GPU in the tables has one. A price you give stays until the GPU changes. A GPU the tables do not price (a
machine you measured and saved) has no price (``None``): there is then no cost until you type one.

>>> s.usd_per_gpu_hour, s.price_id
(3.0, 'h100-example-3usd')
>>> l4 = s.with_(gpu="l4"); round(l4.usd_per_gpu_hour, 2), l4.price_id
(0.8, 'aws-g6-l4')
>>> mine = s.with_(usd_per_gpu_hour=2.0); mine.usd_per_gpu_hour, mine.price_id
(2.0, None)
>>> s.with_(gpu="h200").price_id
'runpod-h200-secure'
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from roofline.data import get_gpu, get_model
from roofline.errors import UnsupportedPrecisionError
from roofline.model_config import is_config_path
from roofline.physics.memory import max_batch
from roofline.physics.precision import peak_flops_per_s
from roofline.physics.step import Step, decode_step, prefill
from roofline.pricing import default_price, prices

GPU_COUNTS = (1, 2, 4, 8)  # G a menu offers: GPUs in tensor parallel on one server

# For a precision a GPU lacks, the nearest ones to try, in order: same bytes first (bf16 ↔ fp16), then wider.
_NEAREST = {
    "bf16": ("fp16", "fp32"),
    "fp16": ("bf16", "fp32"),
    "fp8": ("int8", "bf16", "fp16"),
    "int8": ("fp8", "bf16", "fp16"),
    "fp4": ("int4", "fp8", "bf16", "fp16"),
    "int4": ("bf16", "fp16"),
    "fp32": ("bf16", "fp16"),
}


def nearest_supported_precision(gpu_id: str, precision: str) -> str | None:
    """The weight precision nearest to ``precision`` that ``gpu_id`` has math for (``precision`` itself if
    it has), or None: what an explorer switches to when a new GPU lacks the chosen one (Apple GPUs compute
    FP16, not BF16), and what lesson 01 prices every GPU in.

    >>> nearest_supported_precision("m4-max", "bf16"), nearest_supported_precision("a100-80gb-sxm", "fp8")
    ('fp16', 'int8')
    """
    g = get_gpu(gpu_id)
    for p in (precision, *_NEAREST.get(precision, ("bf16", "fp16", "fp32"))):
        try:
            peak_flops_per_s(g, p)
        except UnsupportedPrecisionError:
            continue
        return p
    return None


@dataclass(frozen=True)
class Scenario:
    """Model, hardware and load. Defaults: the card's Llama 3 8B in BF16 on one H100 at its listed
    $3/GPU-hour (the course's round example); the price follows the GPU (see the module docstring)."""

    model: str = "llama-3-8b"  # an id, an alias, or a config.json path (read once: the id is kept)
    gpu: str = "h100-sxm"
    num_gpus: int = 1  # G, GPUs in tensor parallel
    weight_precision: str = "bf16"
    kv_precision: str = "bf16"
    batch: int = 1  # B, users decoding together
    context_tokens: int = 1000  # T, KV tokens per user
    prompt_tokens: int = 500  # P, tokens in a prompt to prefill
    usd_per_gpu_hour: float | None = None  # $ per GPU-hour; None: the GPU's listed price
    price_id: str | None = None  # the price row used, when the price is the listed one
    # the memory the weights and KV may use (roofline.physics.memory): "engine", a serving engine's (vLLM's
    # defaults); "local", llama.cpp's on a home machine; "ideal", all of it
    memory: str = "engine"

    def __post_init__(self):
        if is_config_path(self.model):  # a user's model: read it once, then name it by its id everywhere
            object.__setattr__(self, "model", get_model(self.model).id)
        if self.usd_per_gpu_hour is None:
            row = default_price(self.gpu)
            object.__setattr__(self, "usd_per_gpu_hour", None if row is None else row.usd_per_gpu_hour)
            object.__setattr__(self, "price_id", None if row is None else row.id)

    def with_(self, **changes) -> Scenario:
        """A copy with some fields changed. A new GPU brings its own listed price, unless ``changes``
        sets a price too; a new price is yours (``price_id`` None)."""
        if "usd_per_gpu_hour" in changes:
            changes.setdefault("price_id", None)
        elif "gpu" in changes and get_gpu(changes["gpu"]).id != get_gpu(self.gpu).id:
            changes.update(usd_per_gpu_hour=None, price_id=None)
        return replace(self, **changes)

    @property
    def price_note(self) -> str:
        """Where the price comes from, in words (for readouts).

        >>> Scenario(gpu="l4").price_note.startswith("AWS list price (aws-g6-l4, ")
        True
        """
        if self.usd_per_gpu_hour is None:
            return f"no listed price for {self.gpu}: type one"
        if self.price_id is None:
            return "your figure"
        p = prices()[self.price_id]
        if p.kind == "own":
            kind = f"cost to own, bought for ${p.purchase_usd:,.0f}"
        else:
            kind = "course example" if p.provider == "course example" else f"{p.provider} list price"
        return f"{kind} ({p.id}, {p.date})"

    def gpus_needed(self, users: int = 1) -> int | None:
        """The fewest GPUs (of ``GPU_COUNTS``) on which this model's weights and ``users`` users' KV cache
        at this context fit, at these precisions; None if not even the largest choice is enough. Menus
        use it so a model never leads to a dead end.

        >>> Scenario(model="llama-3-70b").gpus_needed()      # 141 GB of BF16 weights, 80 GB per H100
        2
        >>> print(Scenario(model="llama-3.1-405b", gpu="l4").gpus_needed())
        None
        >>> q4 = Scenario(model="qwen3-30b-a3b", gpu="rtx-4090", weight_precision="gguf-q4_k_m")
        >>> q4.gpus_needed(), q4.with_(memory="local").gpus_needed()   # 18.7 GB: vLLM's reserve, llama.cpp's
        (2, 1)
        """
        for n in GPU_COUNTS:
            if self.users_that_fit(num_gpus=n) >= users:
                return n
        return None

    def users_that_fit(self, num_gpus=None) -> int:
        """Most users at this context that fit beside the weights (0 when the weights alone do not fit)."""
        deployment = self.deployment if num_gpus is None else {**self.deployment, "num_gpus": num_gpus}
        users = max_batch(self.model, self.gpu, max(self.context_tokens, 1), memory=self.memory, **deployment)
        return int(max(users, 0))

    def decode(self, batch=None, context_tokens=None, on_overflow="mask", **kwargs) -> Step:
        """``decode_step`` for this scenario; ``batch``/``context_tokens`` may be arrays for a sweep."""
        b = self.batch if batch is None else batch
        t = self.context_tokens if context_tokens is None else context_tokens
        return decode_step(self.model, self.gpu, b, t, on_overflow=on_overflow, **self.deployment, **kwargs)

    def prefill(self, prompt_tokens=None, on_overflow="mask", **kwargs) -> Step:
        """``prefill`` for this scenario; ``prompt_tokens`` may be an array."""
        p = self.prompt_tokens if prompt_tokens is None else prompt_tokens
        return prefill(self.model, self.gpu, p, on_overflow=on_overflow, **self.deployment, **kwargs)

    @property
    def deployment(self) -> dict:
        """The GPU count and the precisions, as the keywords the physics and engine functions take.

        >>> Scenario(num_gpus=2).deployment
        {'num_gpus': 2, 'weight_precision': 'bf16', 'kv_precision': 'bf16'}
        """
        return dict(
            num_gpus=self.num_gpus, weight_precision=self.weight_precision, kv_precision=self.kv_precision
        )
