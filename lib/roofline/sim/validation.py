"""The simulator against measured serving benchmarks: TTFT and TPOT at a concurrency, and the error band.

Taught in notebooks/serving_validation.ipynb; the band is quoted next to a capacity plan
(notebooks/slos_and_capacity.ipynb, ``roofline plan``).

Each measured row (``roofline.sim.serving_rows``: which rows, which the library can express, and why the
others stay out) is simulated as it was measured:

    the load        C closed-loop clients that all start at t = 0 and send their next request the moment
                    the last one finishes; the harness's request count, warm-up and lengths (``HARNESSES``);
                    a warm-up that drains (aiperf's) ends before the measured requests start, together
    the deployment  the engine's scheduler with the limits the benchmark's launch scripts set
                    (``deployment_policy``)
    the steps       the engine's step times (``roofline.engines``), or the ideal roofline's for the floor
    the figures     mean TTFT and mean TPOT over the measured requests, as the rows report them

The error of a row is (simulated − measured) ÷ measured: negative when the simulation is faster. The
ideal's TTFT must never be above the measured one (it would mean the queueing, not the step times, is
wrong). Beside TTFT and TPOT each row has the error of its request latency (``request_latency_s``): in a
closed loop that is each client's cycle, so it settles the server's throughput, and TTFT is only the part
of it before the first token (``ttft_share``). ``tools/serving_validation.py`` writes the errors of every
expressible row to ``data/serving_validation.toml``; ``error_band(engine)`` reads their median and p90 per
engine.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

import roofline.sim.serving_rows as serving_rows
from roofline.data import DataTableError, read_toml
from roofline.engines.registry import get_engine

from .config import SimConfig
from .cost import engine_cost_model, kv_capacity_tokens
from .engine import simulate
from .policies import SchedulerPolicy, engine_policy
from .workload import LengthSpec

BANDS_FILE = "serving_validation.toml"
AICONFIGURATOR_RULES = (
    "https://github.com/ai-dynamo/aiconfigurator/tree/main/src/aiconfigurator/generator/rule_plugin/benchmark"
)
INFERENCEMAX_SCRIPTS = (
    "https://github.com/jyothisambolu/InferenceMAX/tree/1b563c85858422089749ae1411a3301c2f86c862/benchmarks"
)
# aiperf runs its credit phases one after the other and waits for every credit (request) of a phase to
# return before the next phase starts (CreditIssuingStrategy._execute_phases); in concurrency mode a
# semaphore of C then releases the profiling phase's first C credits at once
AIPERF_PHASES = "https://github.com/ai-dynamo/aiperf/blob/main/aiperf/timing/credit_issuing_strategy.py"


@dataclass(frozen=True)
class Harness:
    """A benchmark client: ``rounds`` × C requests measured after ``warmup_rounds`` × C, every length uniform
    in [``low_fraction`` × L, L] (1: fixed at L), and where it is documented. ``warmup_drains``: the client
    waits until every warm-up request has finished before it sends the first measured one, so the measured
    phase starts like a fresh run, C requests at once on an idle server (aiperf's phases,
    ``AIPERF_PHASES``); False: the measured requests follow the warm-up without a pause."""

    name: str
    rounds: int
    warmup_rounds: int
    low_fraction: float
    source: str
    warmup_drains: bool = False


HARNESSES = {
    # benchmark_serving.py --num-prompts 10C --max-concurrency C --request-rate inf --random-range-ratio 0.8
    # (lengths drawn with randint(int(L x 0.8), L + 1)); means over all requests
    "inferencemax": Harness("InferenceMAX benchmark_serving.py", 10, 0, 0.8, INFERENCEMAX_SCRIPTS),
    # aiperf --concurrency C --num-requests 20C --warmup-request-count 2C, fixed lengths; the warm-up phase
    # drains before the profiling phase sends its first C requests together (AIPERF_PHASES)
    "aiperf": Harness(
        "aiconfigurator bench_run.sh (aiperf)", 20, 2, 1.0,
        "https://github.com/ai-dynamo/aiconfigurator/blob/main/src/aiconfigurator/generator/config/"
        "backend_templates/benchmark/bench_run.sh.j2",
        warmup_drains=True,
    ),
}  # fmt: skip

# Goals of the median absolute error per engine × GPU on measured serving rows (fractions).
GOALS = {"tpot": 0.15, "ttft": 0.30}


def deployment_policy(row: dict, kv_capacity: int | None = None) -> SchedulerPolicy:
    """The scheduler a row's server ran: the engine's documented defaults (``engine_policy``) with the limits
    its launch script set.

    aiconfigurator's generated deployments (``AICONFIGURATOR_RULES``): at most C sequences and a token budget
    of C + prompt + 1500 (TensorRT-LLM rounds it up to 32); SGLang with ``enable_mixed_chunk`` (prompt
    chunks ride in decode steps). InferenceMAX's launch scripts (``INFERENCEMAX_SCRIPTS``): vLLM
    ``--max-num-seqs C --max-num-batched-tokens 8192``; TensorRT-LLM ``--max_num_tokens 16384`` for Llama
    and ⌈(C + prompt + 64) ÷ 64⌉ × 64 for DeepSeek, without chunked prefill.

    >>> row = {"engine": "tensorrt-llm", "gpu": "h100-sxm", "model": "llama-3.1-8b", "harness": "aiperf",
    ...        "concurrency": 8, "input_tokens": 1024}
    >>> p = deployment_policy(row)
    >>> p.max_sequences, p.token_budget, p.chunk_tokens
    (8, 2560, None)
    """
    from roofline.data import get_model

    base = engine_policy(row["engine"], row["gpu"], kv_capacity_tokens=kv_capacity,
                         context_tokens=get_model(row["model"]).max_context_tokens)  # fmt: skip
    c, isl, engine = row["concurrency"], row["input_tokens"], row["engine"]
    if row["harness"] == "aiperf":
        budget = c + isl + 1500
        changes = {
            "max_sequences": c,
            "token_budget": -(-budget // 32) * 32 if engine == "tensorrt-llm" else budget,
        }
        if engine == "sglang":
            changes["priority"] = "decode-first"
        source = AICONFIGURATOR_RULES
    elif engine == "tensorrt-llm":
        budget = -(-(c + isl + 64) // 64) * 64 if row["model"].startswith("deepseek") else 16384
        changes = {"max_sequences": max(c, 1), "token_budget": max(budget, c)}
        source = INFERENCEMAX_SCRIPTS
    else:
        changes = {"max_sequences": c, "token_budget": max(8192, c)}
        source = INFERENCEMAX_SCRIPTS
    if base.chunk_tokens is not None:
        changes["chunk_tokens"] = min(base.chunk_tokens, changes["token_budget"])
    return dataclasses.replace(base, name=f"{base.name} as deployed", source=source, **changes)


def ranged_lengths(tokens: int, low_fraction: float):
    """The lengths a benchmark client draws for a nominal ``tokens`` (tokens): whole numbers uniform in
    [``low_fraction`` × L, L] (at least 1), as ``benchmark_serving.py``'s ``--random-range-ratio`` reads
    them; ``low_fraction`` 1: exactly L.

    >>> ranged_lengths(1000, 0.8), ranged_lengths(1000, 1.0)
    (LengthSpec(kind='uniform', mean=0.0, sigma=0.5, low=800, high=1000, minimum=0, maximum=10000000), 1000)
    """
    if low_fraction >= 1:
        return int(tokens)
    return LengthSpec("uniform", low=max(1, int(tokens * low_fraction)), high=int(tokens))


def mean_length(tokens: int, low_fraction: float) -> float:
    """The mean of the lengths ``ranged_lengths`` draws for a nominal ``tokens`` (tokens).

    >>> mean_length(1000, 0.8), mean_length(1000, 1.0)
    (900.0, 1000.0)
    """
    if low_fraction >= 1:
        return float(tokens)
    return (max(1, int(tokens * low_fraction)) + int(tokens)) / 2


def request_latency_s(ttft_s, tpot_s, output_tokens):
    """A request's mean latency, send to last token (s), from the two means a benchmark reports: TTFT +
    (n − 1) × TPOT, with TPOT the time per token after the first (as the harnesses define it) and n =
    ``output_tokens`` the mean answer length (tokens). Exact for fixed lengths; for ranged ones it leaves
    out how length and TPOT co-vary, alike on both sides of a comparison. Broadcasts over numpy arrays.

    In a closed loop without pauses a client's cycle is its request's latency, so C clients complete C ÷
    latency requests per second (Little's law): the latency settles the throughput, and TTFT is the part
    of it before the first token.

    >>> request_latency_s(0.2, 0.01, 101)
    1.2
    """
    return ttft_s + (output_tokens - 1) * tpot_s


def request_rate_error(request_error):
    """The relative error of the request rate a closed loop of C clients gets through, given the relative
    error of its request latency: the rate is C ÷ latency (``request_latency_s``), so 1 ÷ (1 + e) − 1. A
    request a quarter too long is a rate a fifth too low. Broadcasts over numpy arrays.

    >>> round(request_rate_error(0.25), 6)
    -0.2
    """
    return 1 / (1 + request_error) - 1


def request_fields(row: dict, sim_ttft_s: float, sim_tpot_s: float) -> dict:
    """For a measured ``row`` and its simulated mean TTFT and TPOT (s): ``request_error``, the relative error
    of the simulated request latency (``request_latency_s``), and ``ttft_share``, the measured TTFT's share
    of the measured request latency.

    A TTFT half the measured one with the request latency exact (the time moved from the first token to
    the others):

    >>> row = {"harness": "aiperf", "output_tokens": 101, "ttft_s": 0.2, "tpot_s": 0.01}
    >>> f = request_fields(row, 0.1, 0.011)
    >>> round(f["request_error"], 9), round(f["ttft_share"], 3)
    (0.0, 0.167)
    """
    n = mean_length(row["output_tokens"], HARNESSES[row["harness"]].low_fraction)
    measured = request_latency_s(row["ttft_s"], row["tpot_s"], n)
    simulated = request_latency_s(sim_ttft_s, sim_tpot_s, n)
    return {"request_error": float(simulated / measured - 1), "ttft_share": float(row["ttft_s"] / measured)}


def whole_cohort(policy: SchedulerPolicy) -> SchedulerPolicy:
    """``policy`` without its token budget: every waiting prompt joins the next step whole, so the prompts
    that arrive together are prefilled together and their answers decode together. The most bunched a
    closed loop can stay; a real engine's budget spreads the prompts over several steps.

    >>> p = whole_cohort(SchedulerPolicy("toy", max_sequences=4, token_budget=12, chunk_tokens=8))
    >>> p.token_budget >= 10**9, p.chunk_tokens
    (True, None)
    """
    unlimited = 10**9
    return dataclasses.replace(policy, name=f"{policy.name}, whole cohort", token_budget=unlimited,
                               chunk_tokens=None)  # fmt: skip


def simulate_row(
    row: dict, engine: str = "measured", rounds: int | None = None, seed: int = 0, cohort: bool = False
) -> dict:
    """One row simulated as it was measured: the row with ``sim_ttft_s`` and ``sim_tpot_s`` (means over the
    measured requests, s), the relative errors ``ttft_error`` and ``tpot_error`` and the
    ``request_fields``. ``engine``:
    ``"measured"`` (the row's own engine) or an engine id whose step times price the row's deployment
    (``"ideal"``: the floor). ``rounds``: requests per client after the warm-up (default: the harness's).
    ``cohort``: the deployment without its token budget (``whole_cohort``).

    >>> row = serving_rows.load_rows()[0]
    >>> r = simulate_row(row, rounds=1)
    >>> r["sim_ttft_s"] > 0 and r["sim_tpot_s"] > 0
    True
    """
    h = HARNESSES[row["harness"]]
    c = row["concurrency"]
    cost = engine_cost_model(row["engine"] if engine == "measured" else engine, row["model"], row["gpu"],
                             num_gpus=row["tp"], weight_precision=row["weight_precision"],
                             kv_precision=row["kv_precision"])  # fmt: skip
    cap = kv_capacity_tokens(
        row["model"], row["gpu"], row["tp"], row["weight_precision"], row["kv_precision"]
    )
    measured = h.rounds if rounds is None else rounds
    # a warm-up that drains leaves an idle server (the simulator keeps no cache from one request to the
    # next): the measured phase is then a fresh run of its own, starting with a burst of C requests
    warmup = 0 if h.warmup_drains else h.warmup_rounds
    workers = {}
    if row["mode"] == "disagg":
        workers = {"prefill_workers": row["prefill_workers"], "decode_workers": row["decode_workers"]}
    r = simulate(
        SimConfig(
            row["model"],
            row["gpu"],
            concurrency=c,
            requests=(warmup + measured) * c,
            cost=cost,
            policy=whole_cohort(deployment_policy(row, cap)) if cohort else deployment_policy(row, cap),
            input_tokens=ranged_lengths(row["input_tokens"], h.low_fraction),
            output_tokens=ranged_lengths(row["output_tokens"], h.low_fraction),
            seed=seed,
            max_sim_time_s=1e7,
            record_timeline=False,
            **workers,
        )
    )
    first = warmup * c
    ttft, tpot = float(np.nanmean(r.ttft_s[first:])), float(np.nanmean(r.tpot_s[first:]))
    return {
        **row,
        "simulated_with": cost.engine,
        "sim_ttft_s": ttft,
        "sim_tpot_s": tpot,
        "ttft_error": ttft / row["ttft_s"] - 1,
        "tpot_error": tpot / row["tpot_s"] - 1,
        **request_fields(row, ttft, tpot),
    }


def validate(rows: list[dict], rounds: int | None = None, bunched: bool = False) -> list[dict]:
    """Every row simulated twice: with its own engine (``sim_*``, ``ttft_error``, ``tpot_error``) and with
    the ideal's step times under the same deployment (``ideal_ttft_s``, ``ideal_tpot_s`` and their errors);
    with ``bunched``, a third time with its own engine and the whole cohort admitted at once
    (``whole_cohort``: ``bunched_ttft_s``, ``bunched_ttft_error``).

    >>> r = validate(serving_rows.load_rows()[:1], rounds=1)[0]
    >>> r["ideal_ttft_s"] <= r["sim_ttft_s"]
    True
    """
    out = []
    for row in rows:
        real, ideal = simulate_row(row, rounds=rounds), simulate_row(row, engine="ideal", rounds=rounds)
        out.append({**real, "ideal_ttft_s": ideal["sim_ttft_s"], "ideal_tpot_s": ideal["sim_tpot_s"],
                    "ideal_ttft_error": ideal["ttft_error"],
                    "ideal_tpot_error": ideal["tpot_error"]})  # fmt: skip
        if bunched:
            cohort = simulate_row(row, rounds=rounds, cohort=True)
            out[-1].update(bunched_ttft_s=cohort["sim_ttft_s"], bunched_ttft_error=cohort["ttft_error"])
    return out


def bands(results: list[dict]) -> list[dict]:
    """Per engine: ``engine``, ``rows`` and the error band (``BAND_KEYS``, fractions) of ``results``.

    >>> r = {"engine": "vllm", "ttft_error": 0.1, "tpot_error": -0.2, "request_error": 0.0, "ttft_share": 0.1}
    >>> bands([r])[0]["tpot_median_abs_error"]
    0.2
    """
    return [{k: g[k] for k in ("engine", "rows", *BAND_KEYS)} for g in error_table(results, by=("engine",))]


def sample_rows(rows: list[dict], per_group: int = 2, by=("engine", "gpu", "model")) -> list[dict]:
    """A deterministic sample: ``per_group`` rows of each group, spread evenly over the group's rows in
    file order (the first and the last when 2), for a quick check in CI and in the notebook.

    >>> [r["i"] for r in sample_rows([{"g": 1, "i": i} for i in range(9)], per_group=3, by=("g",))]
    [0, 4, 8]
    """
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in by), []).append(r)
    out = []
    for members in groups.values():
        n = len(members)
        picks = sorted({round(i * (n - 1) / max(per_group - 1, 1)) for i in range(min(per_group, n))})
        out += [members[i] for i in picks]
    return out


def error_table(results: list[dict], by=("engine", "gpu", "model")) -> list[dict]:
    """Per group: ``rows``, median and p90 |error| of TTFT, TPOT and the request latency (fractions), the
    median signed errors (negative: the simulation is faster), ``ttft_share``, the median share of TTFT in
    the measured request latency, and ``ttft_above``, the rows whose simulated TTFT is above the measured one.

    >>> t = error_table([{"engine": "e", "ttft_error": -0.5, "tpot_error": 0.1, "request_error": 0.01,
    ...                   "ttft_share": 0.1},
    ...                  {"engine": "e", "ttft_error": 0.3, "tpot_error": -0.3, "request_error": -0.03,
    ...                   "ttft_share": 0.3}], by=("engine",))[0]
    >>> t["ttft_median_abs_error"], t["request_median_abs_error"], t["ttft_share"], t["ttft_above"]
    (0.4, 0.02, 0.2, 1)
    """
    groups: dict = {}
    for r in results:
        groups.setdefault(tuple(r[k] for k in by), []).append(r)
    table = []
    for key, rs in sorted(groups.items()):
        row = {**dict(zip(by, key, strict=True)), "rows": len(rs)}
        for name in ("ttft", "tpot", "request"):
            e = np.array([r[f"{name}_error"] for r in rs])
            row[f"{name}_median_abs_error"] = float(np.median(np.abs(e)))
            row[f"{name}_p90_abs_error"] = float(np.percentile(np.abs(e), 90))
            row[f"{name}_median_error"] = float(np.median(e))
        row["ttft_share"] = float(np.median([r["ttft_share"] for r in rs]))
        row["ttft_above"] = sum(r["ttft_error"] > 0 for r in rs)
        table.append(row)
    return table


# ------------------------------------------------------------ the stored run (tools/serving_validation.py)

BAND_KEYS = ("ttft_median_abs_error", "ttft_p90_abs_error", "tpot_median_abs_error", "tpot_p90_abs_error",
             "request_median_abs_error", "request_p90_abs_error")  # fmt: skip


@functools.lru_cache(maxsize=2)
def stored_validation() -> dict:
    """The stored run (``data/serving_validation.toml``): ``provenance``, ``band`` (one table per engine),
    ``group`` (engine × GPU × model) and ``simulated.rows`` ([id, engine TTFT, engine TPOT, ideal TTFT,
    ideal TPOT, engine TTFT with the whole cohort admitted at once] in seconds); a ``DataTableError`` names
    the file if a table is missing.

    >>> stored_validation()["provenance"]["tool"]
    'tools/serving_validation.py'
    """
    path, raw = read_toml(BANDS_FILE)
    for key in ("provenance", "band", "group", "simulated"):
        if key not in raw:
            raise DataTableError(
                f"{path}: missing [{key}] (regenerate it: uv run python tools/serving_validation.py)"
            )
    return raw


def error_band(engine: str) -> dict:
    """The validated error of the simulator with ``engine`` (an id or alias): median and p90 |error| of TTFT,
    TPOT and the request latency as fractions (``BAND_KEYS``), over ``rows`` measured rows, as stored by the
    last validation run; for an engine without measured serving rows, ``{"validated": False, "note": ...}``.

    >>> error_band("vllm")["validated"], error_band("llama.cpp")["validated"]
    (True, False)
    """
    e = get_engine(engine).id
    for band in stored_validation()["band"]:
        if band["engine"] == e:
            return {"validated": True, "engine": e, "rows": band["rows"], **{k: band[k] for k in BAND_KEYS}}
    known = ", ".join(b["engine"] for b in stored_validation()["band"])
    return {"validated": False, "engine": e, "note": f"no measured serving rows for {e} (validated: {known})"}


def _concurrency_band(concurrency: int) -> str:
    for top, name in ((8, "1-8"), (32, "9-32"), (128, "33-128")):
        if concurrency <= top:
            return name
    return "129+"


def stored_results() -> list[dict]:
    """The stored run's rows joined with the measured rows: each expressible row with ``concurrency_band``,
    ``sim_ttft_s``, ``sim_tpot_s`` (the row's engine), ``ideal_ttft_s``, ``ideal_tpot_s``,
    ``bunched_ttft_s`` (the row's engine, the whole cohort admitted at once), the errors ``ttft_error``,
    ``tpot_error`` (engine), ``ideal_ttft_error``, ``ideal_tpot_error`` and ``bunched_ttft_error``, and the
    ``request_fields`` (engine).

    >>> r = stored_results()[0]
    >>> r["ideal_ttft_s"] <= r["sim_ttft_s"]
    True
    """
    stored = {x[0]: x[1:] for x in stored_validation()["simulated"]["rows"]}
    out = []
    for row in serving_rows.load_rows():
        if row["id"] not in stored:
            continue
        t, p, it, ip, bt = stored[row["id"]]
        out.append({**row, "concurrency_band": _concurrency_band(row["concurrency"]),
                    "sim_ttft_s": t, "sim_tpot_s": p, "ideal_ttft_s": it, "ideal_tpot_s": ip,
                    "bunched_ttft_s": bt,
                    "ttft_error": t / row["ttft_s"] - 1, "tpot_error": p / row["tpot_s"] - 1,
                    "ideal_ttft_error": it / row["ttft_s"] - 1,
                    "ideal_tpot_error": ip / row["tpot_s"] - 1,
                    "bunched_ttft_error": bt / row["ttft_s"] - 1, **request_fields(row, t, p)})  # fmt: skip
    return out


def band_value(fraction: float) -> str:
    """A band for display: ``"± 12 %"``.

    >>> band_value(0.123)
    '± 12 %'
    """
    return f"± {100 * fraction:.0f} %" if math.isfinite(fraction) else "± ?"
