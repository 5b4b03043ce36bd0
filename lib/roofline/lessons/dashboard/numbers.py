"""The serving dashboard: the handful of numbers that say whether a GPU is well used, and by whom.

Taught in lesson 59 (notebooks/59_dashboard.ipynb).

Panels and where each comes from (every number on them is computed here, for a chosen model, GPU and load):

    MBU        = bytes read ÷ (time × G × peak bandwidth)        is memory busy?
    MFU        = FLOPs done ÷ (time × G × peak FLOP/s)            are the tensor cores busy?
    tokens/s   = output tokens ÷ time                             what the GPU delivers
    KV use     = running × T × KV bytes ÷ (memory − weights)      how close to the batch limit
    running / waiting = min(users, max batch) / the rest          is anyone queued?
    TTFT, TPOT percentiles                                        what users feel

GPU-util is not among them: it is the share of time some kernel runs (a duty cycle), 100% for a server
that decodes one user as well as for one that decodes two hundred.

Everything takes a ``Scenario``: its model, GPU, GPU count, precisions and price, and a closed-loop load:
its ``batch`` U users each hold ``context_tokens`` (T) of KV, send a ``prompt_tokens`` (P) turn, receive
about O tokens and send the next turn at once. The server batches continuously, admits users while their KV
fits (``max_batch``) and prefills new turns in chunks riding with the decode steps (lesson 44). Every step
is timed by a real engine (``engine``, default vLLM; ``roofline.engines``), as every readout of the course
times a step; ``engine="ideal"`` gives the roofline itself (with the all-reduces). ``steady_state`` is
analytic (broadcasts, no percentiles); ``dashboard`` a seeded simulation of one configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from roofline.assumptions import assumption
from roofline.checks import checked, out
from roofline.data import get_gpu, get_model
from roofline.engines.model import StepTimer
from roofline.engines.registry import DEFAULT_ENGINE, get_engine
from roofline.physics.architecture import (
    active_parameter_count,
    kv_bytes_per_token,
    sequence_kv_bytes,
    weight_bytes,
)
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.physics.memory import max_batch, memory_available_bytes
from roofline.physics.precision import peak_flops_per_s
from roofline.physics.step import mixed_step
from roofline.results import Number, Result
from roofline.scenario import Scenario
from roofline.sim import LengthSpec, SimConfig, StepCostModel, percentiles, simulate

# Targets of the latency gauges: a common chat SLO, not a law; 20 tokens/s is faster than people read.
DEFAULT_TTFT_TARGET_S = assumption("ttft_target_s")
DEFAULT_TPOT_TARGET_S = assumption("tpot_target_s")
ANSWER_TOKENS = 250  # O, the mean answer of the dashboard's load (tokens)
CHUNK_TOKENS = 512  # C, prompt tokens the server prefills per step beside the decoders


def _free_bytes(s: Scenario) -> float:
    """Memory left beside the weights on the scenario's GPUs (bytes)."""
    n = checked(s.num_gpus, "num_gpus", minimum=1)
    weights = weight_bytes(get_model(s.model), s.weight_precision)
    return np.asarray(memory_available_bytes(get_gpu(s.gpu), n)) - weights


def _batch_limit(s: Scenario, context_tokens) -> np.ndarray:
    """Users whose KV at ``context_tokens`` fits beside the weights (``roofline.max_batch``)."""
    limit = max_batch(s.model, s.gpu, context_tokens, **s.deployment)
    return np.asarray(limit)


def _timer(s: Scenario, engine, params) -> StepTimer:
    """``engine`` (``params`` override its numbers) on the scenario's GPUs, all-reduces included even for
    the ideal: a server on G GPUs pays them."""
    return StepTimer.of(s, engine, parallel="tensor", communication=True, params=params)


@dataclass(frozen=True)
class SteadyState(Result):
    """Analytic dashboard values (no percentiles). Array fields broadcast over users and context."""

    max_batch: Number  # users whose KV fits beside the weights
    running: Number  # min(users, max batch)
    waiting: Number  # users queued for a KV slot
    step_time_s: Number  # the engine's step
    tokens_per_s: Number  # output tokens/s, all users
    mbu: Number
    mfu: Number
    kv_use_fraction: Number  # of the memory left after the weights
    fits: Number  # False where the weights alone do not fit


def steady_state(
    s: Scenario, users=None, context_tokens=None, *, engine=DEFAULT_ENGINE, params=None
) -> SteadyState:
    """Average dashboard values for ``users`` (U, default the scenario's ``batch``) at ``context_tokens``
    (T, default the scenario's) each, analytically; both may be arrays and broadcast.

    R = min(U, max batch) users run; each step gives each a token and prefills R × P ÷ O prompt tokens (each
    answer of O = ``ANSWER_TOKENS`` brings one P-token prompt). Each step is ``mixed_step``'s work timed by
    ``engine`` (``params`` override its numbers). Units: users, tokens, seconds; fractions 0–1. Where the
    weights alone do not fit, values are NaN.

    >>> s = steady_state(Scenario(context_tokens=4096), users=[1, 64, 300])
    >>> s.running.tolist(), s.waiting.tolist(), np.round(s.kv_use_fraction, 2).tolist()
    ([1, 64, 102], [0, 0, 198], [0.01, 0.62, 0.99])
    """
    m, g, free = get_model(s.model), get_gpu(s.gpu), _free_bytes(s)
    u = np.round(checked(s.batch if users is None else users, "users", minimum=1)).astype(int)
    t = checked(s.context_tokens if context_tokens is None else context_tokens, "context_tokens", above=0)
    p = checked(s.prompt_tokens, "prompt_tokens", minimum=0)
    limit = _batch_limit(s, t)
    ok = limit >= 1
    running = np.minimum(u, limit)
    step = mixed_step(m, g, running, t, running * p / ANSWER_TOKENS, t, **s.deployment)
    time = np.asarray(_timer(s, engine, params).of_step(step).total_s)
    safe = np.where(ok & (time > 0), time, np.nan)
    per_user_kv = np.asarray(sequence_kv_bytes(m, t, s.kv_precision))  # T tokens, sliding windows included
    bw = s.num_gpus * g.memory_bandwidth_bytes_per_s
    peak = s.num_gpus * peak_flops_per_s(g, s.weight_precision)
    values = dict(
        max_batch=limit,
        running=running,
        waiting=u - running,
        step_time_s=safe,
        tokens_per_s=running / safe,
        mbu=np.asarray(step.bytes_moved) / (safe * bw),
        mfu=np.asarray(step.flops) / (safe * peak),
        kv_use_fraction=np.where(ok, running * per_user_kv / np.maximum(free, 1), np.nan),
        fits=ok,
    )
    return SteadyState(
        **{k: out(v) for k, v in zip(values, np.broadcast_arrays(*values.values()), strict=True)}
    )


@dataclass(frozen=True)
class Dashboard(Result):
    """One configuration's dashboard, from a seeded simulation (``source`` says how it was made)."""

    engine: str
    concurrent_users: int
    fits: bool  # False: the weights alone do not fit; every value is NaN
    max_batch: int
    running: float  # mean over the measured steps
    waiting: float
    mbu: float
    mfu: float  # all FLOPs done (decode tokens and the prompt chunks riding along)
    mfu_decode: float  # the output tokens' 2·N FLOPs only: the card's and lesson 02's MFU (0.27% for 1 user)
    tokens_per_s: float
    kv_use_fraction: float  # of the memory left after the weights
    kv_bytes: float  # bytes in use (running × T × KV per token)
    kv_free_bytes: float  # memory left after the weights, bytes
    step_time_s: float  # mean step
    ttft_p50_s: float  # the latency percentiles come from roofline.sim (see latency_source)
    ttft_p90_s: float
    ttft_p99_s: float
    tpot_p50_s: float  # per request: (e2e − TTFT) ÷ (answer tokens − 1)
    tpot_p90_s: float
    tpot_p99_s: float
    cost_per_million_usd: float
    best_tokens_per_s: float  # most tokens/s at this context: analytic, over batch sizes that fit
    best_cost_per_million_usd: float
    source: str
    latency_source: str = ""


def dashboard(s: Scenario, *, engine=DEFAULT_ENGINE, params=None, steps=1200, seed=0) -> Dashboard:
    """Simulate a continuous-batching server for ``steps`` steps (at least) and read its dashboard.

    The scenario's ``batch`` (U ≥ 1) users each hold its ``context_tokens`` (T, tokens) of KV, send a
    ``prompt_tokens`` (P) turn, get a geometric number of output tokens with mean O (seeded by ``seed``),
    and send the next turn at once. The server runs at most ``max_batch`` users (the rest wait, first come
    first served), prefills up to C prompt tokens per step alongside the decoders, and every step is
    ``mixed_step``'s work timed by ``engine`` (``params`` override its numbers). The run starts in steady
    state and measures after its first quarter; it lengthens itself so queued requests are served in the
    window. Costs at the scenario's price (NaN, "no price", for a GPU without one). Times in s, fractions 0–1.

    >>> d = dashboard(Scenario(batch=300, context_tokens=4096))
    >>> d.max_batch, round(d.running), round(d.waiting), round(d.kv_use_fraction, 2)
    (102, 102, 198, 0.99)
    """
    m, g, free, eng = get_model(s.model), get_gpu(s.gpu), float(_free_bytes(s)), get_engine(engine)
    u = int(checked(s.batch, "users", minimum=1))
    t = int(checked(s.context_tokens, "context_tokens", above=0))
    p = int(checked(s.prompt_tokens, "prompt_tokens", minimum=1))
    o, c = float(ANSWER_TOKENS), CHUNK_TOKENS
    steps = int(checked(steps, "steps", minimum=100))
    # no listed price (None): the cost panels show NaN ("no price") instead of failing
    usd = s.usd_per_gpu_hour
    price = float("nan") if usd is None else float(checked(usd, "usd_per_gpu_hour", minimum=0))
    n, limit = int(s.num_gpus), int(_batch_limit(s, t))
    common = dict(engine=eng.id, concurrent_users=u, max_batch=limit)
    if limit < 1:
        return _does_not_fit(common, free)
    # A queued user waits about (users ahead ÷ max batch) × O steps: run long enough to see them served.
    warmup = steps // 4
    expected_wait = max(u - limit, 0) / limit * o + p / c
    # ...and long enough that about 20 turns per running user finish in the window (few users: few turns).
    turns = 20 * o / min(u, limit)
    steps = int(min(max(steps, warmup + 3 * expected_wait + 200, warmup + turns), 20_000))
    trace = _closed_loop_steps(u, limit, p, o, c, steps, seed)
    run = mixed_step(m, g, trace.decoders, t, trace.prompt_tokens, t, **s.deployment)
    step_s = np.asarray(_timer(s, eng, params).of_step(run).total_s, float)
    end = np.cumsum(step_s)
    window = slice(warmup, steps)
    elapsed = end[-1] - end[warmup - 1]
    emitted = trace.decoders[window].sum() + sum(1 for _, f in trace.first_token if f >= warmup)
    tokens_per_s = emitted / elapsed
    bw = n * g.memory_bandwidth_bytes_per_s
    peak = n * peak_flops_per_s(g, s.weight_precision)
    running = float(trace.running[window].mean())
    best_rate = max(_best_tokens_per_s(s, limit, eng, params), float(tokens_per_s))
    decode_flops = 2.0 * active_parameter_count(m) * emitted  # the card's MFU: output tokens × 2N
    lat = simulated_latency(s, batch_limit=limit, engine=eng, params=params, seed=seed)
    kv_in_use = running * float(sequence_kv_bytes(m, t, s.kv_precision))
    return Dashboard(
        **common,
        fits=True,
        running=running,
        waiting=u - running,
        mbu=float(np.asarray(run.bytes_moved)[window].sum() / (elapsed * bw)),
        mfu=float(np.asarray(run.flops)[window].sum() / (elapsed * peak)),
        mfu_decode=float(decode_flops / (elapsed * peak)),
        tokens_per_s=float(tokens_per_s),
        kv_use_fraction=kv_in_use / free,
        kv_bytes=kv_in_use,
        kv_free_bytes=free,
        step_time_s=float(step_s[window].mean()),
        **{f"{kind}_{q}_s": lat[f"{kind}_s"][q] for kind in ("ttft", "tpot") for q in ("p50", "p90", "p99")},
        cost_per_million_usd=_usd_per_million(price, tokens_per_s, n),
        best_tokens_per_s=best_rate,
        best_cost_per_million_usd=_usd_per_million(price, best_rate, n),
        source=f"seeded simulation: {steps - warmup:,} measured steps, seed {seed}; each step timed by "
        f"{eng.name} ({eng.id}, roofline.engines): its kernels' efficiency, per-step, per-layer and "
        "per-sequence costs and all-reduces",
        latency_source=lat["source"],
    )


def _does_not_fit(common: dict, free: float) -> Dashboard:
    """The dashboard of a configuration whose weights do not fit: every panel NaN."""
    nan = float("nan")
    panels = {
        name: nan
        for name in Dashboard.__dataclass_fields__
        if name not in common and name not in ("fits", "kv_free_bytes", "source", "latency_source")
    }
    return Dashboard(
        **common, **panels, fits=False, kv_free_bytes=max(free, 0.0), source="weights do not fit in memory"
    )


@dataclass(frozen=True)
class _StepTrace:
    """What each simulated step carried: decoders, prompt tokens, sequences running; and, per finished
    prompt, (step it arrived after, step of its first token)."""

    decoders: np.ndarray
    prompt_tokens: np.ndarray
    running: np.ndarray
    first_token: list


def _closed_loop_steps(users, limit, prompt, output_mean, chunk, steps, seed) -> _StepTrace:
    """Step ``steps`` times through the closed loop: admit first come first served up to ``limit``,
    prefill ``chunk`` prompt tokens per step beside the decoders, geometric answers of mean
    ``output_mean``; the first ``limit`` users start mid-answer (steady state)."""
    rng = np.random.default_rng(seed)
    phase = np.zeros(users, dtype=np.int8)  # 0 waiting, 1 prefilling, 2 decoding
    remaining_out = rng.geometric(1 / output_mean, size=users)  # memoryless: a request in flight too
    remaining_prompt = np.zeros(users, dtype=np.int64)
    arrived = np.full(users, -1, dtype=np.int64)  # step at whose end the request arrived (-1: at time 0)
    phase[: min(users, limit)] = 2
    decoders = np.zeros(steps, dtype=np.int64)
    prompt_in_step = np.zeros(steps, dtype=np.int64)
    running_log = np.zeros(steps, dtype=np.int64)
    first_token = []
    for k in range(steps):
        free_slots = limit - np.count_nonzero(phase)
        if free_slots > 0:
            queued = np.flatnonzero(phase == 0)
            if queued.size:
                admit = queued[np.argsort(arrived[queued], kind="stable")[:free_slots]]
                phase[admit] = 1
                remaining_prompt[admit] = prompt
        running_log[k] = np.count_nonzero(phase)
        dec = np.flatnonzero(phase == 2)
        pre = np.flatnonzero(phase == 1)
        done = pre[:0]
        if pre.size:
            pre = pre[np.argsort(arrived[pre], kind="stable")]
            need = remaining_prompt[pre]
            take = np.clip(chunk - (np.cumsum(need) - need), 0, need)
            remaining_prompt[pre] -= take
            prompt_in_step[k] = take.sum()
            done = pre[remaining_prompt[pre] == 0]
        decoders[k] = dec.size
        remaining_out[dec] -= 1
        if done.size:  # the last chunk's pass makes the first token
            first_token.extend(zip(arrived[done].tolist(), [k] * done.size, strict=True))
            phase[done] = 2
            remaining_out[done] -= 1
        finished = np.flatnonzero((phase == 2) & (remaining_out <= 0))
        if finished.size:  # the user reads the answer and sends the next turn at once
            phase[finished] = 0
            arrived[finished] = k
            remaining_out[finished] = rng.geometric(1 / output_mean, size=finished.size)
    return _StepTrace(decoders, prompt_in_step, running_log, first_token)


def _best_tokens_per_s(s: Scenario, limit: int, engine, params) -> float:
    """The most tokens/s this context allows: the analytic steady state over batch sizes that fit."""
    sizes = np.unique(np.round(np.geomspace(1, limit, 200)).astype(int))
    rates = steady_state(s, sizes, engine=engine, params=params).tokens_per_s
    return float(np.nanmax(rates))


def _usd_per_million(price: float, tokens_per_s: float, num_gpus: int) -> float:
    """$ per 1M tokens, or NaN ("no price") when the GPU has none."""
    return float(cost_per_million_tokens_usd(price, tokens_per_s, num_gpus)) if price == price else price


def simulated_latency(
    s: Scenario,
    *,
    output_tokens=ANSWER_TOKENS,
    batch_limit=None,
    engine=DEFAULT_ENGINE,
    params=None,
    seed=0,
    requests=None,
) -> dict:
    """TTFT and TPOT percentiles (p50, p90, p99; seconds) of the dashboard's load, from ``roofline.sim``.

    A closed loop of the scenario's ``batch`` (U) clients: each request carries the user's
    ``context_tokens`` (T, of which T − P are found in the prefix cache, not recomputed) with a
    ``prompt_tokens`` (P) turn, prefilled in chunks of C, and an answer of lognormal length with mean
    ``output_tokens`` (O; log-spread 1, so users fall out of step as on a real server). At most
    ``batch_limit`` users run (default: those whose KV fits), KV capacity never binds, and each step is
    priced like ``dashboard``'s. The first U requests arrive at t = 0 (a start-up burst) and are left out of
    the percentiles. ``requests`` defaults to max(300, 4U), at most 2,000 (fast enough to redraw).

    >>> lat = simulated_latency(Scenario(batch=1, context_tokens=1000), engine="ideal")   # alone: no queue
    >>> round(lat["tpot_s"]["p50"] * 1e3, 2), lat["tpot_s"]["p50"] <= lat["tpot_s"]["p99"]
    (4.52, True)
    """
    m, g = get_model(s.model), get_gpu(s.gpu)
    u = int(checked(s.batch, "users", minimum=1))
    t = int(checked(s.context_tokens, "context_tokens", above=0))
    p = int(checked(s.prompt_tokens, "prompt_tokens", minimum=1))
    o = int(checked(output_tokens, "output_tokens", minimum=2))
    n = int(checked(s.num_gpus, "num_gpus", minimum=1))
    limit = int(_batch_limit(s, t)) if batch_limit is None else int(batch_limit)
    if limit < 1:
        nan = {"p50": float("nan"), "p90": float("nan"), "p99": float("nan")}
        return {"ttft_s": nan, "tpot_s": nan, "source": "weights do not fit in memory", "result": None}
    k = int(requests) if requests is not None else int(min(max(300, 4 * u), 2000))
    cost = StepCostModel(m, g, num_gpus=n, weight_precision=s.weight_precision, kv_precision=s.kv_precision,
                         engine=engine, include_communication=True, params=params)  # fmt: skip
    answers = LengthSpec("lognormal", mean=float(o), sigma=1.0, minimum=2)  # spread: no lock-step waves
    held = max(t, p)  # the user's context after sending the turn: T tokens, of which P are new
    r = simulate(
        SimConfig(
            m,
            g,
            concurrency=u,
            requests=k,
            input_tokens=held,
            output_tokens=answers,
            seed=seed,
            cost=cost,
            max_batch=limit,
            chunk_tokens=CHUNK_TOKENS,
            kv_capacity=limit * (held + 10 * o),
            prefix_hit_rate=(held - p) / held,
            record_timeline=False,
        )
    )
    keep = np.arange(k) >= u  # after the start-up burst
    return {
        "ttft_s": percentiles(r.ttft_s[keep]),
        "tpot_s": percentiles(r.tpot_s[keep]),
        "source": f"roofline.sim: closed loop of {u} users, {k - min(u, k):,} requests after the start-up "
        f"burst, answers of {o} tokens on average, chunks of {CHUNK_TOKENS}, seed {seed}",
        "result": r,
    }


@dataclass(frozen=True)
class CardToDashboard(Result):
    """From the study card's batched figure to the dashboard's, one assumption at a time (tokens/s, $/1M)."""

    labels: tuple
    tokens_per_s: tuple
    usd_per_million: tuple

    def rows(self) -> list[tuple[str, float, float]]:
        return list(zip(self.labels, self.tokens_per_s, self.usd_per_million, strict=True))


def card_to_dashboard(s: Scenario) -> CardToDashboard:
    """Why the dashboard shows fewer tokens/s (and a higher price) than card Q6 for its B users at T tokens.

    1. the card: weights + B × T × KV over the bandwidth, decode only, the ideal roofline;
    2. the library's exact bytes (``decode_step``: only the embedding rows the batch looks up are read);
    3. the same step on the default engine (``roofline.engines``): the dashboard's step;
    4. new turns: each answer of O tokens brings a P-token prompt, prefilled in chunks in the same steps
       (``steady_state``);
    5. the dashboard's seeded simulation (answers of random length, users admitted as slots free up).

    Costs are $ per million output tokens at the scenario's price.

    >>> c = card_to_dashboard(Scenario(batch=64, context_tokens=4096))   # 64 ÷ ((16.06e9 + 64 × 4,096 ×
    >>> round(c.tokens_per_s[0]), round(c.usd_per_million[0], 3)         # 131,072) ÷ 3.35e12); card: ~4,300
    (4252, 0.196)
    """
    m, g = get_model(s.model), get_gpu(s.gpu)
    u, t = int(s.batch), int(s.context_tokens)
    eng = get_engine(DEFAULT_ENGINE)
    card_step = (weight_bytes(m) + u * t * kv_bytes_per_token(m)) / g.memory_bandwidth_bytes_per_s
    exact = s.decode()
    achieved = float(_timer(s, eng, None).of_step(exact).total_s)
    steady = steady_state(s, engine=eng)
    sim_d = dashboard(s, engine=eng)
    rates = (
        u / card_step,
        u / float(exact.step_time_s),
        u / achieved,
        float(steady.tokens_per_s),
        float(sim_d.tokens_per_s),
    )
    labels = (
        "card Q6: weights + everyone's KV ÷ bandwidth (ideal, decode only; the card rounds it to 4,300)",
        "exact bytes read (decode_step)",
        f"the same step on {eng.name} (roofline.engines: kernel efficiency, per-step and per-layer costs)",
        f"plus each turn's {s.prompt_tokens}-token prompt, chunked into the steps",
        "the dashboard's simulation (random answer lengths)",
    )
    price = tuple(float(cost_per_million_tokens_usd(s.usd_per_gpu_hour, r)) for r in rates)
    return CardToDashboard(labels=labels, tokens_per_s=tuple(float(r) for r in rates), usd_per_million=price)


def diagnose(d: Dashboard) -> str:
    """A one-line reading of a dashboard: what limits this server and what would help.

    The rules: weights that do not fit → more GPUs or fewer bytes; users waiting (KV full) → more KV room;
    few users per weight read (tokens/s far below the full-batch figure with nobody waiting) → more users;
    otherwise healthy.

    >>> diagnose(dashboard(Scenario(batch=1, context_tokens=1000)))[:13]
    'under-batched'
    """
    if not d.fits:
        return "does not fit: the weights alone exceed memory; add GPUs or use fewer bytes per weight"
    if d.waiting >= 1:
        return (
            f"memory-full: KV at {d.kv_use_fraction:.0%}, {d.waiting:.0f} users waiting, TTFT p99 "
            f"{d.ttft_p99_s:.1f} s; fit more KV (FP8 KV, more GPUs, shorter context), not more compute"
        )
    if d.tokens_per_s < 0.5 * d.best_tokens_per_s:
        return (
            f"under-batched: MBU {d.mbu:.0%} but MFU {d.mfu:.1%}; {d.tokens_per_s:,.0f} tokens/s of a "
            "possible "
            f"{d.best_tokens_per_s:,.0f}; send it more users, not more GPUs"
        )
    late = d.ttft_p99_s > DEFAULT_TTFT_TARGET_S
    return f"healthy: {d.tokens_per_s:,.0f} tokens/s, KV at {d.kv_use_fraction:.0%}, nobody waiting" + (
        "; but TTFT p99 is over target" if late else ""
    )
