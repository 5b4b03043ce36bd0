"""A benchmark's result file placed on the roofline: each run's measured times against the ideal floor and
what a tuned engine reaches, with the checks lesson 06 teaches (faster than the floor; an output rate that
counts the prompt; a time per output token the run's own duration cannot hold).

Taught in notebooks/06_benchmarks_that_lie.ipynb; ``roofline diagnose --from FILE`` and ``roofline
calibrate --from FILE`` read files through it. The file gives the workload (concurrency, prompt and answer
lengths); the caller gives what the file does not say (the GPU, the GPU count, the engine, and the model
when the file's ``model_id`` is not a known name). Times in seconds.

>>> from roofline import engines
>>> from roofline.measure.benchmark_files import example_path, read_benchmark_file
>>> run = read_benchmark_file(example_path("vllm_bench_serve.json"))[0]
>>> timer = engines.StepTimer("vllm", "llama-3.1-8b", "h100-sxm")
>>> [p["metric"] for p in diagnose_run(run, timer)["placements"]]
['tpot', 'ttft']
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from roofline import engines
from roofline.data import Model, get_model, gpus, model_for_alias, models
from roofline.errors import RooflineError
from roofline.measure.benchmark_files import LlamaBenchRun, ServingRun, read_benchmark_file
from roofline.measure.benchmark_replay import replay, serving_concurrency
from roofline.physics.architecture import parameter_count, weight_bytes
from roofline.physics.precision import default_weight_precision
from roofline.sim.validation import request_latency_s

# The engine a tool's numbers come from, when the caller does not say; of its vintages, the one people run
# on the file's GPU (llama-bench on a GeForce card: llama.cpp's 2025 CUDA builds). aiperf and GenAI-Perf
# drive any OpenAI-compatible server, so their files name no engine: the GPU's usual one stands in.
TOOL_ENGINES = {"vllm-bench-serve": "vllm", "sglang-bench-serving": "sglang", "llama-bench": "llama.cpp"}
# llama-bench's quantization names (the last word of ``model_type``) -> the library's weight formats
GGUF_FORMATS = {
    "q4_0": "gguf-q4_0",
    "q4_k - medium": "gguf-q4_k_m",
    "q4_k_m": "gguf-q4_k_m",
    "q8_0": "gguf-q8_0",
    "f16": "gguf-f16",
    "bf16": "bf16",
}
DURATION_SLACK = 1.10  # a run's requests may overlap its clock by a few %: flag only a clear contradiction
SIZE_SLACK = 0.15  # the file's model and --model/--weights: same bytes and parameters within 15 %


@dataclass(frozen=True)
class Measurement:
    """One measured time of a run, with the workload it was measured at.

    ``kind`` is what it measures, as ``roofline calibrate`` takes it: ``"tpot"`` (the time between tokens of
    ``batch`` users each holding ``context_tokens`` of KV), ``"ttft"`` (the first token of ``prompt_tokens``)
    or ``"latency"`` (a whole request of ``prompt_tokens`` in, ``output_tokens`` out). ``alone`` says the
    request had the GPU to itself (no other request's work inside the time)."""

    metric: str
    kind: str
    measured_s: float
    batch: int
    context_tokens: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 1
    alone: bool = True


def serving_measurements(run: ServingRun) -> list[Measurement]:
    """The TPOT (decode steps at the run's concurrency, context at mid-answer) and the TTFT (the prompt's
    prefill, alone only at concurrency 1) of a serving run."""
    mean_in = run.total_input_tokens / run.completed
    mean_out = run.total_output_tokens / run.completed
    users = max(round(serving_concurrency(run)), 1)
    out = []
    if run.tpot_mean_s and mean_out > 1:
        context = round(mean_in + mean_out / 2)
        out.append(
            Measurement("tpot", "tpot", run.tpot_mean_s, users, context_tokens=context, alone=users == 1)
        )
    if run.ttft_mean_s:
        out.append(
            Measurement(
                "ttft", "ttft", run.ttft_mean_s, 1, prompt_tokens=max(round(mean_in), 1), alone=users == 1
            )
        )
    return out


def llama_bench_measurements(run: LlamaBenchRun) -> list[Measurement]:
    """A llama-bench test as one measurement: tg (generation: one step per token, batch 1, context at the
    middle of the answer), pp (one prompt's prefill) or pp+tg (the whole request)."""
    total_s = (run.n_prompt + run.n_gen) / run.tokens_per_s
    if run.n_prompt == 0:
        context = run.n_depth + run.n_gen // 2
        return [Measurement("tg", "tpot", 1 / run.tokens_per_s, 1, context_tokens=context)]
    if run.n_gen == 0:
        return [Measurement("pp", "ttft", total_s, 1, prompt_tokens=run.n_prompt)]
    return [Measurement("pp+tg", "latency", total_s, 1, prompt_tokens=run.n_prompt, output_tokens=run.n_gen)]


def measurements(run: ServingRun | LlamaBenchRun) -> list[Measurement]:
    """Every measured time of one run of a result file (``serving_measurements``,
    ``llama_bench_measurements``).

    >>> from roofline.measure.benchmark_files import example_path, read_benchmark_file
    >>> [m.metric for r in read_benchmark_file(example_path("llama_bench.json")) for m in measurements(r)]
    ['pp', 'tg']
    """
    return llama_bench_measurements(run) if isinstance(run, LlamaBenchRun) else serving_measurements(run)


def place(timer: engines.StepTimer, m: Measurement) -> dict:
    """One measurement against the floor and the engine: floor, achievable, MBU, MFU, the part of the gap
    it sits in (``roofline.engines.diagnose_measurement``); a whole request (``latency``) against the
    static-batch floor and engine only (s).

    >>> t = engines.StepTimer("vllm", "llama-3-8b", "h100-sxm")
    >>> round(place(t, Measurement("tg", "tpot", 6e-3, 1))["measured_over_floor"], 2)   # 6 ms / 4.48 ms
    1.34
    """
    if m.kind == "latency":
        r = engines.generate(timer, m.batch, m.prompt_tokens, m.output_tokens)
        floor, achievable = r.ideal.latency_s, r.achievable.latency_s
        placed = {
            "floor_s": floor,
            "achievable_s": achievable,
            "mbu": None,
            "mfu": None,
            "sits_in": engines.place_in_budget(
                m.measured_s,
                {
                    "floor": floor,
                    "kernel efficiency": achievable - floor,
                    "per-step": 0.0,
                    "per-layer": 0.0,
                    "communication": 0.0,
                },
            ),
        }
        placed |= {
            "measured_over_floor": m.measured_s / floor,
            "measured_over_achievable": m.measured_s / achievable,
        }
    else:
        prompt = m.prompt_tokens if m.kind == "ttft" else None
        placed = engines.diagnose_measurement(
            timer, m.measured_s, m.batch, m.context_tokens, prompt_tokens=prompt
        )
        placed.pop("measured_step_s")
        placed.pop("budget")
    below = placed["sits_in"].startswith("below the floor")
    return {
        "metric": m.metric,
        "kind": m.kind,
        "measured_s": m.measured_s,
        "batch": m.batch,
        "context_tokens": m.context_tokens,
        "prompt_tokens": m.prompt_tokens,
        "output_tokens": m.output_tokens,
        "alone": m.alone,
        **placed,
        "below_floor": below,
    }


def serving_flags(run: ServingRun) -> list[str]:
    """What lesson 06 teaches to catch in a serving run's own numbers: an output rate that counts the
    prompt's tokens, and a TTFT + TPOT that the run's duration cannot hold at its concurrency."""
    flags = []
    honest = run.total_output_tokens / run.duration_s
    with_prompt = (run.total_input_tokens + run.total_output_tokens) / run.duration_s
    reported = run.output_throughput_tokens_per_s
    if abs(reported - with_prompt) < abs(reported - honest) and with_prompt > 1.05 * honest:
        flags.append(
            f"the output rate {reported:,.0f} tokens/s counts the prompt's tokens: the answers' "
            f"tokens over the run's duration are {honest:,.0f} tokens/s"
        )
    if run.ttft_mean_s is not None and run.tpot_mean_s is not None:
        mean_out = run.total_output_tokens / run.completed
        busy_s = run.completed * request_latency_s(run.ttft_mean_s, run.tpot_mean_s, mean_out)
        room_s = serving_concurrency(run) * run.duration_s
        if busy_s > DURATION_SLACK * room_s:
            flags.append(
                f"TTFT + TPOT cannot be reconciled with the run: {run.completed:,} requests of "
                f"{mean_out:,.0f} tokens need {busy_s:,.1f} request-seconds, but "
                f"{serving_concurrency(run):,.0f} at a time for {run.duration_s:,.1f} s hold "
                f"{room_s:,.1f}"
            )
    return flags


def llama_bench_flags(run: LlamaBenchRun, timer: engines.StepTimer) -> list[str]:
    """The file's model against the one it is placed on: parameters and bytes within ``SIZE_SLACK``."""
    flags = []
    params = parameter_count(timer.model)
    if abs(run.model_n_params / params - 1) > SIZE_SLACK:
        flags.append(
            f"the file's model has {run.model_n_params / 1e9:.2f} B parameters, "
            f"{timer.model.id} has {params / 1e9:.2f} B: is it the model you named?"
        )
    stored = float(weight_bytes(timer.model, timer.weight_precision))
    if abs(run.model_size_bytes / stored - 1) > SIZE_SLACK:
        flags.append(
            f"the file's model is {run.model_size_bytes / 1e9:.2f} GB, {timer.weight_precision} "
            f"weights are {stored / 1e9:.2f} GB: give the precision it ran in (--weights)"
        )
    return flags


def diagnose_run(run: ServingRun | LlamaBenchRun, timer: engines.StepTimer) -> dict:
    """One run of a result file on ``timer``'s deployment: its workload, each measurement placed
    (``place``), and the flags (faster than the floor, plus ``serving_flags`` or ``llama_bench_flags``).
    """
    placements = [place(timer, m) for m in measurements(run)]
    flags = [
        f"{p['metric']} {p['measured_s'] * 1e3:,.2f} ms is faster than the floor "
        f"({p['floor_s'] * 1e3:,.2f} ms): check what was counted, the GPUs and the precision"
        for p in placements
        if p["below_floor"]
    ]
    flags += llama_bench_flags(run, timer) if isinstance(run, LlamaBenchRun) else serving_flags(run)
    return {
        "record": run.record,
        "tool": run.tool,
        "workload": workload(run),
        "placements": placements,
        "flags": flags,
    }


def workload(run: ServingRun | LlamaBenchRun) -> dict:
    """What the run asked of the server, in the words of its tool (tokens, requests, requests/s)."""
    if isinstance(run, LlamaBenchRun):
        return {
            "test": run.test_name,
            "n_prompt": run.n_prompt,
            "n_gen": run.n_gen,
            "n_depth": run.n_depth,
            "model_type": run.model_type,
            "gpu_info": run.gpu_info,
        }
    rate = run.request_rate_per_s
    return {
        "concurrency": serving_concurrency(run),
        "max_concurrency": run.max_concurrency,
        "request_rate_per_s": None if rate is None or math.isinf(rate) else rate,
        "completed": run.completed,
        "duration_s": run.duration_s,
        "mean_input_tokens": run.total_input_tokens / run.completed,
        "mean_output_tokens": run.total_output_tokens / run.completed,
    }


def model_of(run: ServingRun | LlamaBenchRun, model: str | Model | None) -> Model:
    """The model to place ``run`` on: ``model`` if given, else the one the file names when the tables know
    it (a serving file's ``model_id``, a llama-bench file's ``model_filename`` without its quantization
    suffix: an id or an alias), else an error asking for ``--model``."""
    if model is not None:
        return get_model(model)
    named = getattr(run, "model_id", None)
    if isinstance(run, LlamaBenchRun) and run.model_filename:
        stem = run.model_filename.replace("\\", "/").rsplit("/", 1)[-1].lower().removesuffix(".gguf")
        named = next((stem.removesuffix(f"-{q}") for q in GGUF_FORMATS if stem.endswith(f"-{q}")), stem)
    found = (models().get(named.strip().lower()) or model_for_alias(named)) if named else None
    if found is None:
        what = f"the model {named!r} is not one the tables know" if named else "the file names no model"
        raise RooflineError(
            f"{run.file}, record {run.record}: {what}; give --model (an id, an alias or the "
            "path of the model's config.json)"
        )
    return found


def weights_of(run: ServingRun | LlamaBenchRun, model: Model, weights: str | None) -> str:
    """The weight precision: ``weights`` if given, else a llama-bench file's quantization (the last word of
    its ``model_type``), else the model's release format."""
    if weights is not None:
        return weights
    if isinstance(run, LlamaBenchRun):
        quant = run.model_type.split(" ", 2)[-1].strip().lower() if " " in run.model_type else ""
        if quant in GGUF_FORMATS:
            return GGUF_FORMATS[quant]
        raise RooflineError(
            f"{run.file}, record {run.record}, field 'model_type': {run.model_type!r} names "
            f"no quantization the library knows ({', '.join(GGUF_FORMATS)}); give --weights"
        )
    return default_weight_precision(model)


def gpu_of(run: ServingRun | LlamaBenchRun, gpu: str | None) -> str:
    """The GPU: ``gpu`` if given, else a llama-bench file's ``gpu_info`` when it names exactly one GPU row
    (by the row's name), else an error asking for ``--gpu``."""
    if gpu is not None:
        return gpu
    info = getattr(run, "gpu_info", "") or ""
    names = [part.strip().lower() for part in info.split(",") if part.strip()]
    rows = {g.id for g in gpus().values() for n in names if g.name.lower().startswith(n) or n == g.id}
    if len(rows) == 1:
        return rows.pop()
    said = f"names {info!r}, not one GPU the tables know" if info else "does not say which GPU ran it"
    raise RooflineError(f"{run.file}, record {run.record}: the file {said}; give --gpu")


def tool_engine(run: ServingRun | LlamaBenchRun, gpu_id: str) -> str:
    """The engine a run's numbers come from when the caller does not say: its tool's (``TOOL_ENGINES``), in
    the vintage people run on ``gpu_id``; for a tool that drives any server (aiperf), the GPU's usual one.

    >>> from roofline.measure.benchmark_files import example_path, read_benchmark_file
    >>> tool_engine(read_benchmark_file(example_path("llama_bench.json"))[0], "rtx-4090")
    'llama.cpp-2025'
    """
    usual = engines.default_engine(gpu_id)
    engine = TOOL_ENGINES.get(run.tool, usual)
    same_software = engines.get_engine(usual).software == engines.get_engine(engine).software
    return usual if same_software else engine


def deployment(
    run: ServingRun | LlamaBenchRun,
    *,
    model=None,
    gpu=None,
    num_gpus: int = 1,
    engine=None,
    weights: str | None = None,
    kv_precision: str = "bf16",
) -> engines.StepTimer:
    """The deployment one run is placed on: what the caller gives, else what the file says (its model,
    GPU, quantization and tool: ``model_of``, ``gpu_of``, ``weights_of``, ``tool_engine``), else an error
    naming what to give."""
    m, g = model_of(run, model), gpu_of(run, gpu)
    return engines.StepTimer(
        engine or tool_engine(run, g),
        m,
        g,
        num_gpus=num_gpus,
        weight_precision=weights_of(run, m, weights),
        kv_precision=kv_precision,
    )


def diagnose_file(path, file_format: str | None = None, **options) -> dict:
    """Every run of a benchmark's result file on its deployment (``deployment``'s ``options``):
    ``diagnose_run`` plus the deployment's ids, and for a serving run its ``replay`` in the simulator under
    the file's own load (``roofline.measure.benchmark_replay``). ``roofline diagnose --from FILE --json``
    prints this.

    >>> from roofline.measure.benchmark_files import example_path
    >>> d = diagnose_file(example_path("llama_bench.json"))
    >>> [(r["gpu_id"], r["weight_precision"], r["engine"]) for r in d["runs"]][0]
    ('rtx-4090', 'gguf-q4_0', 'llama.cpp-2025')
    """
    runs = read_benchmark_file(path, file_format)
    placed = []
    for run in runs:
        t = deployment(run, **options)
        placed.append(
            {
                **diagnose_run(run, t),
                "model_id": t.model.id,
                "gpu_id": t.gpu.id,
                "num_gpus": t.num_gpus,
                "weight_precision": t.weight_precision,
                "kv_precision": t.kv_precision,
                "engine": t.engine.id,
            }
        )
        if isinstance(run, ServingRun):
            try:
                placed[-1]["replay"] = replay(run, t)
            except RooflineError as err:  # the simulator refuses the load: say why, place the rest
                placed[-1]["replay"] = {"error": str(err)}
    return {"command": "diagnose", "from": str(path), "tool": runs[0].tool, "runs": placed}
