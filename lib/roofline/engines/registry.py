"""Which engines exist: the rows of ``data/engines.toml``, looked up by id or alias.

Taught in notebooks/floor_to_real_server.ipynb. Every caller that names an engine (the readouts, the CLI,
``generate``, the serving simulator) asks :func:`get_engine`; ``"ideal"`` (the roofline floor) is an
engine too, so there is one question, never a special case.

>>> get_engine("TRT-LLM").id, get_engine("ideal").kind
('tensorrt-llm', 'ideal')
>>> get_engine("vllmm")
Traceback (most recent call last):
...
roofline.errors.UnknownNameError: Unknown engine 'vllmm'. Did you mean 'vllm', ...? Known: ...
"""

from __future__ import annotations

from roofline.data import Engine, engines
from roofline.errors import UnknownNameError

DEFAULT_ENGINE = "vllm"  # what "a good engine" means in the lessons' readouts


def get_engine(name: str | Engine) -> Engine:
    """The engine ``name`` names: an id or an alias, case and spaces forgiven; an ``Engine`` passes
    through. An unknown name raises ``UnknownNameError`` with the closest ids.

    >>> get_engine(" vLLM ").name
    'vLLM'
    """
    if isinstance(name, Engine):
        return name
    key = str(name).strip().lower()
    for engine in engines().values():  # an alias never names another engine's id (roofline.data checks)
        if key == engine.id or key in (a.lower() for a in engine.aliases):
            return engine
    raise UnknownNameError("engine", name, list(engines()))


def default_engine(gpu) -> str:
    """The id of the engine people run on ``gpu`` (an id or a ``GPU`` row): the first engine whose
    ``default_on`` (``data/engines.toml``) lists the GPU, else ``DEFAULT_ENGINE``. The one home of that
    rule: every explorer's engine menu and every readout start from it.

    >>> default_engine("h100-sxm"), default_engine("m4-max"), default_engine("rtx-4090")
    ('vllm', 'llama.cpp', 'llama.cpp-2025')
    """
    gpu_id = getattr(gpu, "id", gpu)
    for engine in engines().values():
        if gpu_id in engine.default_on:
            return engine.id
    return get_engine(DEFAULT_ENGINE).id


def engine_ids(kind: str | None = None) -> list[str]:
    """Engine ids in table order; ``kind="calibrated"`` leaves out the ideal.

    >>> engine_ids("calibrated")[:2]
    ['vllm', 'tensorrt-llm']
    """
    return [e.id for e in engines().values() if kind is None or e.kind == kind]
