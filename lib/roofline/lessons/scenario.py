"""A scenario: the handful of choices every lesson's sliders set, with the study card's defaults.

Controls, figures and readouts all pass one ``Scenario`` around, so a lesson's explorer is a few lines.

>>> s = Scenario(batch=32)
>>> s.model, s.gpu, s.batch, s.context_tokens
('llama-3-8b', 'h100-sxm', 32, 1000)
>>> round(s.decode().step_time_s * 1e3, 2)
6.05
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from roofline.physics.step import Step, decode_step, prefill


@dataclass(frozen=True)
class Scenario:
    """Model, hardware and load. Defaults: the card's Llama 3 8B in BF16 on one H100 at $3/GPU-hour."""

    model: str = "llama-3-8b"
    gpu: str = "h100-sxm"
    num_gpus: int = 1  # G, GPUs in tensor parallel
    weight_precision: str = "bf16"
    kv_precision: str = "bf16"
    batch: int = 1  # B, users decoding together
    context_tokens: int = 1000  # T, KV tokens per user
    prompt_tokens: int = 500  # P, tokens in a prompt to prefill
    usd_per_gpu_hour: float = 3.0

    def with_(self, **changes) -> Scenario:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def decode(self, batch=None, context_tokens=None, on_overflow="mask", **kwargs) -> Step:
        """``decode_step`` for this scenario; ``batch``/``context_tokens`` may be arrays for a sweep."""
        return decode_step(
            self.model,
            self.gpu,
            self.batch if batch is None else batch,
            self.context_tokens if context_tokens is None else context_tokens,
            num_gpus=self.num_gpus,
            weight_precision=self.weight_precision,
            kv_precision=self.kv_precision,
            on_overflow=on_overflow,
            **kwargs,
        )

    def prefill(self, prompt_tokens=None, on_overflow="mask", **kwargs) -> Step:
        """``prefill`` for this scenario; ``prompt_tokens`` may be an array."""
        return prefill(
            self.model,
            self.gpu,
            self.prompt_tokens if prompt_tokens is None else prompt_tokens,
            num_gpus=self.num_gpus,
            weight_precision=self.weight_precision,
            kv_precision=self.kv_precision,
            on_overflow=on_overflow,
            **kwargs,
        )
