"""How an engine fills one step: the scheduler policies of the serving simulator, one object per engine.

Taught in notebooks/slos_and_capacity.ipynb. Every serving engine runs one forward pass per iteration over
the tokens it scheduled; engines differ in how they choose them. A ``SchedulerPolicy`` says:

    max_sequences   sequences admitted (running) at most: vLLM's max_num_seqs, TensorRT-LLM's max_batch_size
    token_budget    tokens one step carries at most: max_num_batched_tokens, max_num_tokens, n_batch, …
                    (prefill-first: prompt tokens of one prefill step; a decode step takes every decoder)
    chunk_tokens    prompt tokens one sequence gets in one step (None: whole prompts only)
    priority        how prefill and decode share a step:
                    "decode-first"   every running sequence decodes one token, the rest of the budget takes
                                     prompt chunks in admission order (vLLM V1, TensorRT-LLM in-flight
                                     batching, llama.cpp's server, DeepSpeed FastGen's Dynamic SplitFuse)
                    "prefill-first"  a step of waiting prompts runs alone, stalling the decoders, and they
                                     decode only when no prompt work is left (SGLang without mixed chunks)
    whole_prompt_must_fit   unchunked only: False, the step's first prompt runs whole even past the budget;
                    True (TensorRT-LLM), a whole prompt waits until the budget the decoders leave holds it
    kv_reservation  "prompt": KV is reserved for the prompt on admission and grows token by token, and a full
                    cache preempts the newest sequence (vLLM, SGLang); "prompt+output": admission reserves the
                    prompt and every token the answer will add, so nothing is ever preempted (TensorRT-LLM's
                    default capacity scheduler, GUARANTEED_NO_EVICT)
    pass_tokens     a step's tokens run in physical passes of at most this many, each reading the weights
                    again (llama.cpp's n_ubatch); None: one pass

``engine_policy(engine, gpu)`` builds an engine's policy from its row of ``data/engines.toml`` (each
field cited in the row's ``scheduler_source``) and the defaults it picks from the GPU
(``gpu_dependent_defaults``); the ideal engine keeps the course's assumed scheduler (``assumed_policy``),
the setting of the lessons' closed forms.

>>> p = engine_policy("vllm", "h100-sxm")
>>> p.priority, p.token_budget, p.max_sequences, p.chunk_tokens
('decode-first', 8192, 1024, 8192)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from roofline.assumptions import ASSUMPTIONS, assumption
from roofline.data import GPU, get_gpu
from roofline.engines.registry import get_engine
from roofline.errors import InvalidConfigurationError, UnknownNameError

from .config import ENGINE_DEFAULT, whole

PRIORITIES = ("decode-first", "prefill-first")
KV_RESERVATIONS = ("prompt", "prompt+output")
GiB = 2**30


@dataclass(frozen=True)
class SchedulerPolicy:
    """How one engine's scheduler fills a step (see the module docstring for each field).

    >>> SchedulerPolicy("toy", max_sequences=4, token_budget=12, chunk_tokens=None).describe()
    'toy: every decoder first, then whole prompts; at most 4 sequences and 12 tokens a step'
    """

    name: str
    max_sequences: int
    token_budget: int
    chunk_tokens: int | None
    priority: str = "decode-first"
    whole_prompt_must_fit: bool = False
    kv_reservation: str = "prompt"
    pass_tokens: int | None = None
    source: str = ""

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "max_sequences", whole("max_batch (max_sequences)", self.max_sequences, 1))
        set_(self, "token_budget", whole("token_budget", self.token_budget, 1))
        if self.chunk_tokens is not None:
            set_(self, "chunk_tokens", whole("chunk_tokens", self.chunk_tokens, 1))
        if self.pass_tokens is not None:
            set_(self, "pass_tokens", whole("pass_tokens", self.pass_tokens, 1))
        if self.priority not in PRIORITIES:
            raise UnknownNameError("priority", self.priority, list(PRIORITIES))
        if self.kv_reservation not in KV_RESERVATIONS:
            raise UnknownNameError("KV reservation", self.kv_reservation, list(KV_RESERVATIONS))
        if self.priority == "decode-first" and self.token_budget < self.max_sequences:
            raise InvalidConfigurationError(
                f"token_budget ({self.token_budget}) must be >= max_batch ({self.max_sequences}) in "
                f"{self.name}'s decode-first scheduler: every running sequence must decode in every step"
            )

    def with_overrides(
        self, *, max_batch=ENGINE_DEFAULT, token_budget=ENGINE_DEFAULT, chunk_tokens=ENGINE_DEFAULT,
        priority=ENGINE_DEFAULT,
    ) -> SchedulerPolicy:  # fmt: skip
        """This policy with the values a caller gave explicitly. ``ENGINE_DEFAULT`` keeps the policy's value;
        so does None for ``max_batch``, ``token_budget`` and ``priority``; ``chunk_tokens=None`` means whole
        prompts.

        >>> p = engine_policy("vllm", "h100-sxm").with_overrides(chunk_tokens=None, max_batch=None)
        >>> p.chunk_tokens, p.max_sequences, p.name
        (None, 1024, 'vLLM (changed)')
        """
        named = {"max_sequences": max_batch, "token_budget": token_budget, "priority": priority}
        given = {k: v for k, v in named.items() if v is not ENGINE_DEFAULT and v is not None}
        if chunk_tokens is not ENGINE_DEFAULT:
            given["chunk_tokens"] = chunk_tokens
        if all(getattr(self, k) == v for k, v in given.items()):
            return self
        return replace(self, name=f"{self.name} (changed)", **given)

    def describe(self) -> str:
        """One line in words."""
        chunks = (
            "whole prompts" if self.chunk_tokens is None else f"prompt chunks of <= {self.chunk_tokens:,}"
        )
        if self.priority == "decode-first":
            steps = f"every decoder first, then {chunks}"
        else:
            steps = f"{chunks} in steps of their own, decoders when no prompt work is left"
        extras = [f"at most {self.max_sequences:,} sequences and {self.token_budget:,} tokens a step"]
        if self.chunk_tokens is None and self.whole_prompt_must_fit:
            extras.append("a prompt waits until the step has room for all of it")
        if self.kv_reservation == "prompt+output":
            extras.append("KV reserved for prompt and answer on admission (no preemption)")
        if self.pass_tokens is not None:
            extras.append(f"run in passes of <= {self.pass_tokens:,} tokens")
        return f"{self.name}: {steps}; " + "; ".join(extras)

    def passes(self, tokens: float) -> int:
        """Physical passes a step of ``tokens`` tokens runs as (1 unless ``pass_tokens`` caps a pass).

        >>> engine_policy("llama.cpp").passes(2048)
        4
        """
        p = self.pass_tokens
        return 1 if p is None or tokens <= p else math.ceil(tokens / p)


def assumed_policy() -> SchedulerPolicy:
    """The course's assumed scheduler (the ideal engine's): ``engine_max_batch`` sequences and
    ``engine_token_budget`` tokens a step (``data/assumptions.toml``), whole prompts, decodes first.

    >>> p = assumed_policy()
    >>> p.max_sequences, p.token_budget, p.chunk_tokens
    (256, 8192, None)
    """
    return SchedulerPolicy(
        "the course's assumed scheduler",
        max_sequences=int(assumption("engine_max_batch")),
        token_budget=int(assumption("engine_token_budget")),
        chunk_tokens=None,
        source=ASSUMPTIONS["engine_max_batch"].reason,
    )


def gpu_dependent_defaults(engine_id: str, gpu: GPU, kv_capacity_tokens=None, context_tokens=None) -> dict:
    """The scheduler defaults an engine picks from the GPU it runs on (per GPU; empty if none apply).

    vLLM V1 (``EngineArgs.get_batch_defaults``): max_num_batched_tokens 8192 and max_num_seqs 1024 for its
    OpenAI server on GPUs of 70 GiB or more that are not A100s, else 2048 and 256. SGLang
    (``ServerArgs``): chunked_prefill_size 2048 below 35 GiB, 4096 below 60 GiB, 8192 below 160 GiB, else
    16384 (a prefill batch carries at most that many prompt tokens); max_running_requests =
    min(clamp(KV tokens ÷ context × 512, 2048, 4096), KV tokens ÷ 2) when the KV capacity (tokens) and the
    model's context window (tokens) are given.

    >>> gpu_dependent_defaults("sglang", get_gpu("b200"))
    {'token_budget': 16384, 'chunk_tokens': 16384}
    """
    memory_gib = gpu.memory_bytes / GiB
    if engine_id == "vllm" and (memory_gib < 70 or "a100" in gpu.id):
        return {"token_budget": 2048, "chunk_tokens": 2048, "max_sequences": 256}
    if engine_id != "sglang":
        return {}
    tiers = ((35, 2048), (60, 4096), (160, 8192))
    chunk = next((size for below, size in tiers if memory_gib < below), 16384)
    out = {"token_budget": chunk, "chunk_tokens": chunk}
    if kv_capacity_tokens and context_tokens:
        pool = min(max(int(kv_capacity_tokens / context_tokens * 512), 2048), 4096)
        out["max_sequences"] = max(1, min(pool, int(kv_capacity_tokens) // 2))
    return out


def engine_policy(engine: str, gpu=None, *, kv_capacity_tokens=None, context_tokens=None) -> SchedulerPolicy:
    """The scheduler of ``engine`` (an id or alias of ``data/engines.toml``) with its documented defaults;
    on ``gpu`` (an id or ``GPU``), the defaults that depend on the GPU (``gpu_dependent_defaults``, which
    may use the KV capacity and the model's context, tokens). The ideal engine gets ``assumed_policy()``.

    >>> engine_policy("vllm", "a100-80gb-sxm").token_budget   # vLLM keeps its small defaults on an A100
    2048
    """
    row = get_engine(engine)  # the row of data/engines.toml, by id or alias
    if row.kind == "ideal":
        return assumed_policy()
    kw = dict(
        max_sequences=row.max_sequences,
        token_budget=row.token_budget,
        chunk_tokens=row.chunk_tokens,
        priority=row.scheduler,
        whole_prompt_must_fit=row.whole_prompt_must_fit,
        kv_reservation=row.kv_reservation,
        pass_tokens=row.pass_tokens or None,
    )
    if gpu is not None:
        kw.update(gpu_dependent_defaults(row.id, get_gpu(gpu), kv_capacity_tokens, context_tokens))
    # without chunked prefill: whole prompts, on every GPU
    kw["chunk_tokens"] = min(kw["chunk_tokens"], kw["token_budget"]) if row.chunked_prefill else None
    return SchedulerPolicy(row.name, source=row.scheduler_source, **kw)
