"""The engine lab: make the models, run llama.cpp on them, keep the record.

Taught in notebooks/measure_your_machine.ipynb ("A real engine"); run by ``roofline measure --engine
llama.cpp``. ``run_lab`` returns a *run record*, a JSON-ready dict of only what was measured: ``schema``,
``date``, ``machine`` (``bench.Measurement.to_dict()``), ``engine`` (``llamacpp.engine_info()``),
``load_average_1min`` (``before`` and ``after``), ``repeats``, ``points`` (``engine_roofline.point``) and
``numpy_decoder`` (``model``, ``context_tokens``, ``times_s``). ``engine_roofline.place`` turns a record
into MBU/MFU and predictions, so a stored record is recomputed with the current library. Records are saved
in ``user_data_dir()/engine_runs/``; the course ships one measured on its own machine (``reference_run``).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from pathlib import Path

from roofline.data import user_data_dir
from roofline.errors import InvalidConfigurationError

from . import bench, gguf_model, llamacpp
from .engine_roofline import point
from .transformer import Transformer, time_steps

SCHEMA = 1
FILE_TYPES = ("F16", "Q8_0", "Q4_0")
PROMPT_TOKENS = (128, 512)  # two prompt lengths, each one pass (llama.cpp's default micro-batch is 512)
DECODE_CONTEXT_TOKENS = 128  # tokens cached before the timed decode steps
DECODE_STEPS = 8  # timed single-token steps per repeat
REFERENCE_FILE = Path(__file__).with_name("llamacpp_reference.json")


def prepare_model(name: str, file_type: str, say: Callable[[str], None] = print) -> Path:
    """The cached GGUF of engine model ``name`` in ``file_type``, made if missing (F16 from random weights,
    Q8_0/Q4_0 quantized from it by llama.cpp; ``say`` reports it), its bytes checked against the library's.

    >>> prepare_model("random-llama-100m", "Q4_0").name      # doctest: +SKIP
    'random-llama-100m-8fda6f11da-q4_0.gguf'
    """
    cfg = gguf_model.engine_model(name)
    path = gguf_model.model_path(cfg, file_type, name)
    if not path.is_file():
        if file_type.upper() == "F16":
            say(f"writing {path.name} ({cfg.parameter_count / 1e6:.0f}M random weights)")
            gguf_model.write_gguf(cfg, path, name=name)
        else:
            src = prepare_model(name, "F16", say)
            say(f"quantizing {path.name} with llama.cpp")
            llamacpp.quantize(src, path, file_type)
    gguf_model.check_file_matches_library(path, cfg, file_type)
    return path


def _points(path: Path, model: str, file_type: str, threads, prompt_tokens, repeats: int) -> list[dict]:
    points = []
    ctx = max(max(prompt_tokens), DECODE_CONTEXT_TOKENS + DECODE_STEPS) + 1
    batch = max(*prompt_tokens, DECODE_CONTEXT_TOKENS)  # the decode context goes in as one pass too
    with llamacpp.Engine(path, context_tokens=ctx, batch_tokens=batch) as engine:
        for n in threads:
            engine.set_threads(n)
            times = llamacpp.time_decode(engine, DECODE_CONTEXT_TOKENS, DECODE_STEPS, repeats)
            mean_context = DECODE_CONTEXT_TOKENS + (DECODE_STEPS - 1) / 2  # step k sees T + k cached
            points.append(point(model, file_type, "decode", n, 1, mean_context, times))
            for p in prompt_tokens:
                times = llamacpp.time_prompt(engine, p, repeats)
                points.append(point(model, file_type, "prompt", n, p, 0, times))
    return points


def _numpy_point(model: str, repeats: int) -> dict:
    """The numpy decoder on the same shapes (fp32 weights and KV): batch-1 decode steps after
    ``DECODE_CONTEXT_TOKENS`` cached tokens, each step timed alone (s)."""
    decoder = Transformer(gguf_model.engine_model(model))
    cache = decoder.new_cache(batch=1, max_tokens=DECODE_CONTEXT_TOKENS + 1)
    times = time_steps(decoder, [1], cache.fill_random(DECODE_CONTEXT_TOKENS), repeats * DECODE_STEPS)
    return {"model": model, "context_tokens": DECODE_CONTEXT_TOKENS, "times_s": list(times)}


def run_lab(
    machine: bench.Measurement, models=gguf_model.LAB_MODELS, file_types=FILE_TYPES, threads=None,
    prompt_tokens=PROMPT_TOKENS, repeats: int = 3, say: Callable[[str], None] = print,
) -> dict:  # fmt: skip
    """Run llama.cpp on each model × file type × thread count (default 1 and all): batch-1 decode steps
    and one prompt pass at each of ``prompt_tokens``, ``repeats`` times after a warm-up; then the numpy
    decoder on the same shapes (``say`` reports progress). Return the run record (module docstring).

    >>> record = run_lab(bench.measure(quick=True), models=("random-llama-100m",))   # doctest: +SKIP
    """
    repeats = bench.whole_number(repeats, "repeats")
    threads = sorted({1, bench.available_cpus()}) if threads is None else list(threads)
    record = {
        "schema": SCHEMA, "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine.to_dict(), "engine": llamacpp.engine_info(),
        "load_average_1min": {"before": bench.load_average()}, "repeats": repeats, "points": [],
        "numpy_decoder": [],
    }  # fmt: skip
    for model in models:
        for file_type in file_types:
            path = prepare_model(model, file_type, say)
            say(f"timing llama.cpp: {model} {file_type}, threads {threads}")
            record["points"] += _points(path, model, file_type, threads, prompt_tokens, repeats)
        say(f"timing the numpy decoder on {model}'s shapes (fp32)")
        record["numpy_decoder"].append(_numpy_point(model, repeats))
    record["load_average_1min"]["after"] = bench.load_average()
    return record


def runs_dir() -> Path:
    """Where run records are saved: ``user_data_dir()/engine_runs``.

    >>> runs_dir().name
    'engine_runs'
    """
    return user_data_dir() / "engine_runs"


def save_run(record: dict, path=None) -> Path:
    """Write a run record as JSON (default ``runs_dir()/llama.cpp-<date>.json``); return its path.

    >>> import tempfile
    >>> path = save_run(reference_run(), Path(tempfile.mkdtemp()) / "run.json")
    >>> load_run(path) == reference_run()
    True
    """
    if path is None:
        path = runs_dir() / f"llama.cpp-{record['date'].replace(':', '')}.json"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def load_run(path) -> dict:
    """A run record from a JSON file, checked for the fields ``place`` needs."""
    record = json.loads(Path(path).read_text(encoding="utf-8"))
    missing = [k for k in ("machine", "points") if k not in record]
    if missing or record.get("schema") != SCHEMA:
        raise InvalidConfigurationError(f"{path} is not an engine run record (schema {SCHEMA}): {missing}")
    return record


def latest_run() -> dict | None:
    """The newest record in ``runs_dir()``, or None if the lab was never run on this machine."""
    files = sorted(runs_dir().glob("llama.cpp-*.json"))
    return load_run(files[-1]) if files else None


def reference_run() -> dict:
    """The run the course ships, measured on the course's own machine (a shared 2-core cloud VM).

    >>> reference_run()["engine"]["package"]
    'llama-cpp-python'
    """
    return load_run(REFERENCE_FILE)
