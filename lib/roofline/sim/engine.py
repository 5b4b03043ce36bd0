"""A discrete-event serving simulator: arrivals, continuous batching, chunked prefill, KV limits, percentiles.

Taught in notebooks/slos_and_capacity.ipynb (and validated in notebooks/serving_validation.ipynb).

The closed forms of lessons 25, 44, 59 and 61 assume everyone arrives at t = 0 or a steady state. Real
servers see requests arrive at random, queue, share a batch, and wait for KV-cache room. This module
simulates that per ITERATION, not per token: one event per batched step of a worker, in which every
scheduled sequence advances together (one decode token each, or a chunk of its prompt). The step's time
comes from a ``StepCostModel`` (ideal roofline by default). Events (arrivals, step ends, KV transfers) sit
in a ``heapq``.

Token bookkeeping for one request with P prompt tokens and O output tokens:

    prefill   the P prompt tokens are computed (in chunks of at most ``chunk_tokens``); the step that
              computes the last one emits output token 1 (the time to first token, TTFT)
    decode    each later step computes the previous output token and emits the next: O − 1 steps,
              attending to P, P+1, …, P+O−2 cached tokens
    P = 0     a single start token is computed instead of a prompt (no prefill): O steps attending to
              0, 1, …, O−1 tokens, the setting of lesson 25's closed forms

TPOT = (e2e − TTFT) ÷ (O − 1); e2e = finish − arrival.

The scheduler (one per worker) each iteration:

1. admits waiting requests first-come-first-served while fewer than ``max_batch`` run and the KV cache
   has room for the request's prompt (KV for the prompt is reserved on admission; it grows by one token
   per emitted token);
2. builds the batch: ``decode-first`` gives every decoding sequence one token, then fills the rest of the
   ``token_budget`` with prompt chunks (Sarathi / vLLM v1 style); ``prefill-first`` runs waiting prompt
   chunks alone, stalling decodes, and decodes only when no prompt work is left (vLLM v0 style);
3. if the emitted tokens would overflow the KV cache, preempts the most recently admitted sequence: its
   KV is dropped and it waits at the head of the queue to recompute everything it had (recompute
   preemption);
4. prices the step with the cost model and advances time.

Why it is fast: a worker's decoders all advance together, so each is stored as an offset from a shared
step counter (its context is offset + counter) and a heap says when the next one finishes. A step then
costs O(1) for all the decoders plus a little per prompt chunk, and a stretch of pure decode steps with no
arrival and no finish in between is priced in one vectorized call to the cost model.

Deployments: tensor parallel (``num_gpus`` per worker, into the cost model); pipeline parallel
(``pipeline_stages`` P: the batch is split into min(P, sequences) microbatches; an iteration takes
P × stage time, with stage time = step time of one microbatch ÷ P, so with fewer sequences than stages the
pipeline has a bubble and each stage is busy only microbatches ÷ P of the time); ``replicas`` identical
workers behind a least-loaded router; disaggregated prefill and decode (``prefill_workers`` and
``decode_workers``): a prefill worker computes the prompt and the first token, the KV moves over the link
(P × KV bytes per token ÷ link bandwidth + ``kv_transfer_latency_s``), and a decode worker continues.

>>> r = simulate("llama-3-8b", "h100-sxm", rate_per_s=5, requests=200, input_tokens=512, output_tokens=64)
>>> r.requests_completed, r.unstable
(200, False)
>>> bool(r.ttft_s_percentiles["p50"] <= r.ttft_s_percentiles["p99"])
True
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field, fields

import numpy as np

import roofline as rl
from roofline.assumptions import assumption

from .cost import StepCostModel, engine_cost_model
from .workload import LengthSpec, poisson_arrivals_s, sample_lengths

PRIORITIES = ("decode-first", "prefill-first")
# Defaults that are assumptions, not data-sheet figures: each lives in data/assumptions.toml with its reason.
DEFAULT_MAX_BATCH = int(assumption("engine_max_batch"))
DEFAULT_TOKEN_BUDGET = int(assumption("engine_token_budget"))
DEFAULT_KV_TRANSFER_LATENCY_S = assumption("kv_transfer_latency_s")
DEFAULT_SLO_TTFT_S = assumption("ttft_target_s")
DEFAULT_SLO_TPOT_S = assumption("tpot_target_s")
DEFAULT_PRICE_ID = "h100-example-3usd"
PERCENTILES = (50, 90, 99)
SHORT_RUN = 8  # pure decode runs up to this many steps are priced step by step in plain Python


def _lengths(x, name) -> LengthSpec:
    if isinstance(x, LengthSpec):
        return x
    if isinstance(x, (int, float, np.integer, np.floating)):
        if x < 0 or int(x) != x:
            raise rl.InvalidConfigurationError(f"{name} must be a whole number of tokens >= 0, got {x!r}")
        return LengthSpec("fixed", int(x))
    raise rl.InvalidConfigurationError(f"{name} must be a token count or a LengthSpec, got {x!r}")


def kv_capacity_tokens(model, gpu, num_gpus=1, weight_precision="bf16", kv_precision="bf16") -> int:
    """KV-cache tokens that fit beside the weights on ``num_gpus`` GPUs (tokens): (the memory an engine
    gives weights and KV − weights) ÷ KV bytes per token, rounded down (``rl.memory_available_bytes``,
    vLLM's defaults). Raises ``DoesNotFitError`` if the weights alone do not fit.

    >>> kv_capacity_tokens("llama-3-8b", "h100-sxm") > 400_000   # (66.3 GiB − 16.06 GB) ÷ 131,072
    True
    """
    free = float(rl.memory_available_bytes(gpu, num_gpus)) - float(rl.weight_bytes(model, weight_precision))
    if free <= 0:
        raise rl.DoesNotFitError(
            f"{rl.get_model(model).id} weights ({rl.weight_bytes(model, weight_precision) / 1e9:.1f} GB at "
            f"{weight_precision}) do not fit in {num_gpus}x {rl.get_gpu(gpu).id}"
        )
    return int(free // rl.kv_bytes_per_token(model, kv_precision))


def sustainable_rate_per_s(
    cost: StepCostModel,
    input_tokens: float,
    output_tokens: float,
    max_batch: int,
    kv_tokens: int,
    workers: int = 1,
    *,
    pipeline_stages: int = 1,
    decode_workers: int = 0,
) -> float:
    """About the largest request rate (requests/s) a deployment can keep up with (a closed form).

    In a saturated steady state the batch holds B = min(max_batch, KV tokens ÷ (P + O)) sequences. Each
    request stays about O iterations (one prefill, O − 1 decodes), so each iteration finishes B ÷ O
    requests and must take in as many new prompts. One such average iteration carries

        B (O − 1) ÷ O decode tokens at mean context P + O/2, and B ÷ O prompts of P tokens,

    and costs t = ``cost.time_s`` of that work (the weights are read once for both). Then
    rate ≈ workers × B ÷ (O × t). With S pipeline stages the iteration costs ``time_s`` of 1/S of the work
    (one microbatch through the pipeline). Disaggregated (``decode_workers`` > 0, ``workers`` = prefill
    workers): the smaller of workers ÷ prefill(P) and decode_workers × B ÷ ((O − 1) × step(B, P + O/2)).

    >>> c = StepCostModel("llama-3-8b", "h100-sxm")
    >>> round(sustainable_rate_per_s(c, 512, 128, 256, 420859), 1)   # compute-bound: 1,278 tokens a step
    108.0
    """
    p, o = float(input_tokens), max(float(output_tokens), 1.0)
    b = max(1, min(int(max_batch), int(kv_tokens // max(p + o, 1))))
    p1 = max(p, 1.0)  # an empty prompt still computes one start token
    prompt_pairs = max(p * (p - 1) / 2, 0.0)
    if decode_workers > 0:
        prefill_s = cost.time_s(p1, 1, 0, prompt_pairs, p)
        decode_s = (o - 1) * cost.decode_time_s(b, p + o / 2) / b if o > 1 else 0.0
        return min(workers / prefill_s, decode_workers / decode_s if decode_s > 0 else np.inf)
    dec = b * (o - 1) / o
    kv_read = dec * (p + o / 2)
    s = max(1, min(int(pipeline_stages), b))
    work = (b + b * (p1 - 1) / o, b, kv_read, kv_read + b / o * prompt_pairs, b * p / o)
    t = cost.time_s(*(x / s for x in work))
    return workers * b / (o * t)


@dataclass(frozen=True)
class SimResult:
    """What a serving simulation produced. Per-request arrays are in request-id order (issue order); times
    in seconds; NaN where a request did not complete within the bounds (``truncated``)."""

    model_id: str
    gpu_id: str
    engine: str
    load: str  # "poisson", "closed" or "trace"
    rate_per_s: float  # requested arrival rate (NaN for a closed loop)
    concurrency: int  # clients in the closed loop (0 for open loads)
    num_gpus_total: int
    requests: int
    requests_completed: int
    # per request
    arrival_s: np.ndarray = field(repr=False)
    admitted_s: np.ndarray = field(repr=False)  # first admission to a batch
    first_token_s: np.ndarray = field(repr=False)
    finish_s: np.ndarray = field(repr=False)
    input_tokens: np.ndarray = field(repr=False)
    output_tokens: np.ndarray = field(repr=False)
    ttft_s: np.ndarray = field(repr=False)
    tpot_s: np.ndarray = field(repr=False)  # NaN for one-token answers
    e2e_s: np.ndarray = field(repr=False)
    # summaries
    ttft_s_percentiles: dict
    tpot_s_percentiles: dict
    e2e_s_percentiles: dict
    duration_s: float  # first arrival to last finish
    throughput_output_tokens_per_s: float
    throughput_tokens_per_s: float  # prompt + output tokens
    requests_per_s: float
    slo_ttft_s: float
    slo_tpot_s: float
    goodput_requests_per_s: float  # completed requests meeting both SLOs, per second
    goodput_output_tokens_per_s: float
    busy_fraction: float  # share of GPU-time some step runs (all workers, pipeline bubbles excluded)
    preemptions: int
    steps: int
    kv_capacity_tokens: int  # per worker
    usd_per_gpu_hour: float
    usd_per_million_output_tokens_at_slo: float  # inf if no request meets the SLO
    sustainable_rate_per_s: float  # the closed-form estimate
    unstable: bool
    truncated: bool  # stopped at max_sim_time_s with requests unfinished
    message: str
    # time series, one entry per step of worker 0 (start time, and state during the step)
    timeline_t_s: np.ndarray = field(repr=False)
    timeline_kv_used_tokens: np.ndarray = field(repr=False)
    timeline_prefilling: np.ndarray = field(repr=False)
    timeline_decoding: np.ndarray = field(repr=False)
    timeline_waiting: np.ndarray = field(repr=False)
    timeline_step_s: np.ndarray = field(repr=False)

    def to_dict(self, per_request: bool = False) -> dict:
        """Plain-Python summary, ready for ``json.dumps``; ``per_request`` adds the arrays as lists.

        >>> d = simulate("llama-3-8b", "h100-sxm", concurrency=2, requests=4, input_tokens=8,
        ...              output_tokens=4).to_dict()
        >>> sorted(d["ttft_s"]), d["requests_completed"]
        (['p50', 'p90', 'p99'], 4)
        """

        def py(v):
            if isinstance(v, float) and not np.isfinite(v):
                return None
            return v

        d = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                if per_request:
                    d[f.name] = [py(float(x)) for x in v]
                continue
            if isinstance(v, dict):
                v = {k: py(x) for k, x in v.items()}
            d[f.name] = py(v)
        d["ttft_s"] = d["ttft_s_percentiles"]
        d["tpot_s"] = d["tpot_s_percentiles"]
        d["e2e_s"] = d["e2e_s_percentiles"]
        return d

    @property
    def mean_in_system(self) -> float:
        """Time-average number of requests in the system (waiting or running) over the run, from the
        per-request intervals (requests); Little's law says it equals rate × mean e2e time.

        >>> r = simulate("llama-3-8b", "h100-sxm", concurrency=4, requests=40, input_tokens=64,
        ...              output_tokens=16)
        >>> round(r.mean_in_system, 2)      # a closed loop of 4 clients keeps 4 requests inside
        4.0
        """
        done = np.isfinite(self.e2e_s)
        return float(np.sum(self.e2e_s[done]) / self.duration_s)


def percentiles(x) -> dict:
    """p50, p90 and p99 of the finite values of ``x`` (NaN if none), as a dict.

    >>> percentiles([1.0, 2.0, 3.0, np.nan])["p50"]
    2.0
    """
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {f"p{q}": float("nan") for q in PERCENTILES}
    return {f"p{q}": float(v) for q, v in zip(PERCENTILES, np.percentile(x, PERCENTILES), strict=True)}


class _Worker:
    """One serving engine instance (one replica, or one prefill/decode worker)."""

    __slots__ = (
        "index", "role", "waiting", "order", "admissions", "pf", "dec", "fin", "ticks", "sum_base",
        "kv_used", "busy", "busy_s", "log",
    )  # fmt: skip

    def __init__(self, index: int, role: str, log: bool):
        self.index = index
        self.role = role  # "both", "prefill" or "decode"
        self.waiting: deque = deque()
        self.order: dict = {}  # running request ids → admission counter, in admission order
        self.admissions = 0
        self.pf: list = []  # running ids with prompt work left (prefill, or recompute after preemption)
        self.dec: dict = {}  # running ids that decode one token per step
        self.fin: list = []  # heap of (tick at which a decoder finishes, admission, version, id)
        self.ticks = 0  # steps in which the decoders ran
        self.sum_base = 0  # Σ over decoders of (cached tokens − ticks)
        self.kv_used = 0  # tokens reserved by running sequences
        self.busy = False
        self.busy_s = 0.0
        self.log = [] if log else None

    def load(self) -> int:
        return len(self.order) + len(self.waiting)


def simulate(
    model,
    gpu,
    *,
    rate_per_s: float | None = None,
    concurrency: int | None = None,
    trace: dict | None = None,
    requests: int = 1000,
    input_tokens=512,
    output_tokens=128,
    seed: int = 0,
    think_time_s: float = 0.0,
    ramp_s: float = 0.0,
    num_gpus: int = 1,
    weight_precision: str = "bf16",
    kv_precision: str = "bf16",
    engine: str = "ideal",
    cost: StepCostModel | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    chunk_tokens: int | None = None,
    priority: str = "decode-first",
    kv_capacity: int | None = None,
    prefix_hit_rate: float = 0.0,
    pipeline_stages: int = 1,
    replicas: int = 1,
    prefill_workers: int = 0,
    decode_workers: int = 0,
    kv_transfer_latency_s: float = DEFAULT_KV_TRANSFER_LATENCY_S,
    slo_ttft_s: float = DEFAULT_SLO_TTFT_S,
    slo_tpot_s: float = DEFAULT_SLO_TPOT_S,
    usd_per_gpu_hour: float | None = None,
    max_sim_time_s: float = 3600.0,
    record_timeline: bool = True,
) -> SimResult:
    """Simulate a serving deployment under a load and return latencies, throughput and cost.

    Parameters
    ----------
    model, gpu : ids or dataclasses from ``roofline.data``.
    rate_per_s | concurrency | trace : the load, exactly one of: Poisson arrivals at ``rate_per_s``
        requests/s; a closed loop of ``concurrency`` clients, each sending its next request
        ``think_time_s`` after its previous one finished; or ``trace``, a dict of equal-length arrays
        ``arrival_s``, ``input_tokens``, ``output_tokens``.
    ramp_s : closed loop only: client i sends its first request at i × ramp_s ÷ C (s); 0 starts everyone
        together at t = 0 (then, with fixed lengths, the clients stay in step).
    requests : requests issued in all (bounded, ≥ 1).
    input_tokens, output_tokens : tokens per request: a whole number (fixed) or a ``LengthSpec``
        (uniform, lognormal). Output ≥ 1.
    seed : seeds ``numpy.random.default_rng``; the same seed gives identical results.
    num_gpus, weight_precision, kv_precision, engine : the cost model (tensor parallel G per worker).
        ``cost`` overrides them with your own ``StepCostModel``.
    max_batch : sequences per step at most. token_budget : tokens per step at most, ≥ ``max_batch`` (the
        first prompt of a step runs even if longer, when unchunked). chunk_tokens : prompt tokens per
        sequence per step (None: whole prompts). priority : ``"decode-first"`` or ``"prefill-first"``.
    kv_capacity : KV-cache tokens per worker (default: memory minus weights, ``kv_capacity_tokens``).
    prefix_hit_rate : fraction of each prompt found in a prefix cache, not recomputed, in [0, 1).
    pipeline_stages : P, pipeline-parallel stages per worker (GPUs per worker = num_gpus × P).
    replicas : identical workers behind a least-loaded router.
    prefill_workers, decode_workers : both > 0 for disaggregated serving (``replicas`` is then ignored).
    kv_transfer_latency_s : fixed cost of one KV transfer between workers (s).
    slo_ttft_s, slo_tpot_s : the SLO for goodput and cost (s).
    usd_per_gpu_hour : price; default the course's example price ``h100-example-3usd`` from the table.
    max_sim_time_s : simulated time after which the run stops (s); unfinished requests are NaN.
    record_timeline : keep worker 0's per-step time series (KV use, batch composition).

    A rate the deployment cannot sustain is reported (``unstable`` True and ``message``), never hangs.

    >>> r = simulate("llama-3-8b", "h100-sxm", rate_per_s=1000, requests=2000, input_tokens=512,
    ...              output_tokens=128)
    >>> r.unstable, "largest sustainable rate is about 108 req/s" in r.message
    (True, True)
    """
    loads = [x is not None for x in (rate_per_s, concurrency, trace)]
    if sum(loads) != 1:
        raise rl.InvalidConfigurationError("give exactly one load: rate_per_s, concurrency or trace")
    if priority not in PRIORITIES:
        raise rl.UnknownNameError("priority", priority, list(PRIORITIES))
    for name, v, lo in (
        ("requests", requests, 1),
        ("max_batch", max_batch, 1),
        ("token_budget", token_budget, 1),
        ("pipeline_stages", pipeline_stages, 1),
        ("replicas", replicas, 1),
        ("prefill_workers", prefill_workers, 0),
        ("decode_workers", decode_workers, 0),
    ):
        if int(v) != v or v < lo:
            raise rl.InvalidConfigurationError(f"{name} must be a whole number >= {lo}, got {v!r}")
    if token_budget < max_batch:
        raise rl.InvalidConfigurationError(
            f"token_budget ({token_budget}) must be >= max_batch ({max_batch}): every running sequence "
            "must be able to decode in every step"
        )
    if chunk_tokens is not None and (int(chunk_tokens) != chunk_tokens or chunk_tokens < 1):
        raise rl.InvalidConfigurationError(f"chunk_tokens must be a whole number >= 1, got {chunk_tokens!r}")
    if not 0 <= prefix_hit_rate < 1:
        raise rl.InvalidConfigurationError(f"prefix_hit_rate must be in [0, 1), got {prefix_hit_rate!r}")
    if not ramp_s >= 0 or not think_time_s >= 0:
        raise rl.InvalidConfigurationError("ramp_s and think_time_s must be >= 0 s")
    if not max_sim_time_s > 0 or not np.isfinite(max_sim_time_s):
        raise rl.InvalidConfigurationError(
            f"max_sim_time_s must be a finite time > 0, got {max_sim_time_s!r}"
        )
    if (prefill_workers > 0) != (decode_workers > 0):
        raise rl.InvalidConfigurationError(
            "disaggregated serving needs both prefill_workers and decode_workers"
        )

    if cost is None:
        cost = engine_cost_model(
            engine,
            model,
            gpu,
            num_gpus=num_gpus,
            weight_precision=weight_precision,
            kv_precision=kv_precision,
        )
    m, g = cost.model, cost.gpu
    gpus_per_worker = cost.num_gpus * int(pipeline_stages)
    cap = (
        int(kv_capacity)
        if kv_capacity is not None
        else kv_capacity_tokens(m, g, gpus_per_worker, cost.weight_precision, cost.kv_precision)
    )
    if cap < 1:
        raise rl.InvalidConfigurationError(f"kv_capacity must be >= 1 token, got {kv_capacity!r}")
    rng = np.random.default_rng(seed)

    # ---- the workload
    n = int(requests)
    if trace is not None:
        arr = np.asarray(trace["arrival_s"], dtype=float)
        inp = np.asarray(trace["input_tokens"], dtype=np.int64)
        outp = np.asarray(trace["output_tokens"], dtype=np.int64)
        if not (arr.shape == inp.shape == outp.shape) or arr.ndim != 1:
            raise rl.InvalidConfigurationError("trace arrays must be 1-D and of equal length")
        order = np.argsort(arr, kind="stable")
        arr, inp, outp = arr[order][:n], inp[order][:n], outp[order][:n]
        n = arr.size
        load = "trace"
    else:
        inp = sample_lengths(_lengths(input_tokens, "input_tokens"), n, rng)
        outp = sample_lengths(_lengths(output_tokens, "output_tokens"), n, rng)
        if rate_per_s is not None:
            arr = poisson_arrivals_s(float(rate_per_s), n, rng)
            load = "poisson"
        else:
            if int(concurrency) != concurrency or concurrency < 1:
                raise rl.InvalidConfigurationError(
                    f"concurrency must be a whole number >= 1, got {concurrency!r}"
                )
            arr = np.full(n, np.nan)
            arr[: min(n, int(concurrency))] = 0.0
            load = "closed"
    if np.any(outp < 1) or np.any(inp < 0):
        raise rl.InvalidConfigurationError("every request needs output_tokens >= 1 and input_tokens >= 0")
    longest = int(np.max(np.maximum(inp, 1) + outp))
    if longest > cap:
        raise rl.DoesNotFitError(
            f"a request of {longest:,} tokens (prompt + answer) cannot fit in the KV cache of {cap:,} tokens"
        )

    # ---- per-request state (Python lists: the loop touches single elements, where lists beat numpy)
    known = np.maximum(inp, 1).tolist()  # K: tokens whose identity is known (prompt, or one start token)
    cached = [0] * n  # c: tokens with K/V in the cache (sequences in prefill; decoders keep it implicitly)
    if prefix_hit_rate > 0:
        cached = np.minimum(np.floor(prefix_hit_rate * inp), np.maximum(inp, 1) - 1).astype(np.int64).tolist()
    gen = [0] * n  # output tokens emitted (sequences in prefill; decoders keep it implicitly)
    out_n = outp.tolist()
    has_prompt = (inp > 0).tolist()
    admitted = np.full(n, np.nan)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    version = [0] * n  # bumped on preemption: stale entries in a worker's finish heap are skipped

    disagg = prefill_workers > 0
    if disagg:
        roles = ["prefill"] * prefill_workers + ["decode"] * decode_workers
    else:
        roles = ["both"] * replicas
    workers = [_Worker(i, role, False) for i, role in enumerate(roles)]
    if record_timeline:
        workers[0].log = []
    entry = [w for w in workers if w.role != "decode"]
    decoders = [w for w in workers if w.role == "decode"]
    num_gpus_total = gpus_per_worker * len(workers)
    stages = int(pipeline_stages)
    chunk = int(chunk_tokens) if chunk_tokens is not None else None
    decode_first = priority == "decode-first"
    budget_all = int(token_budget)
    kv_link_s_per_token = cost.kv_bytes_per_token / g.interconnect_bytes_per_s

    # Two heaps of (time, seq, kind, a, payload): outside events that bring work (0 arrival of request a,
    # 2 KV of request a reaching a decode worker) and the workers' own (1 step of worker a ends, 3 worker a
    # starts a step). At equal times outside events go first, so simultaneous arrivals share a step.
    if load == "closed":
        c_ = int(concurrency)
        ext = [(ramp_s * r / c_, r, 0, r, 0) for r in range(min(n, c_))]
        next_request = min(n, int(concurrency))
    else:
        ext = [(float(arr[r]), r, 0, r, 0) for r in range(n)]
        next_request = n
    seq = n
    heapq.heapify(ext)
    events: list = []
    preemptions = 0
    steps = 0
    t_now = 0.0
    truncated = False

    def route(pool):
        best = pool[0]
        for w in pool[1:]:
            if w.load() < best.load():
                best = w
        return best

    # A worker's decoders all advance together: decoder i holds c = base[i] + w.ticks cached tokens and has
    # emitted gen = gbase[i] + w.ticks tokens, where w.ticks counts the steps in which the decoders ran. So
    # one step costs O(1) for all of them: Σc = w.sum_base + w.n_dec × w.ticks.
    base = [0] * n
    gbase = [0] * n

    def add_decoder(w, r):
        base[r] = cached[r] - w.ticks
        gbase[r] = gen[r] - w.ticks
        w.dec[r] = None
        w.sum_base += base[r]
        heapq.heappush(w.fin, (out_n[r] - gbase[r], w.order[r], version[r], r))

    def drop(w, r):
        """Take request r out of w (finished, preempted or leaving); return its KV tokens."""
        del w.order[r]
        if r in w.dec:
            del w.dec[r]
            w.sum_base -= base[r]
            version[r] += 1
            c = base[r] + w.ticks
            cached[r], gen[r], known[r] = c, gbase[r] + w.ticks, c + 1
            return c + 1
        w.pf.remove(r)
        return known[r]

    def admit(w):
        while w.waiting and len(w.order) < max_batch and w.kv_used + known[w.waiting[0]] <= cap:
            r = w.waiting.popleft()
            w.kv_used += known[r]
            w.order[r] = w.admissions
            w.admissions += 1
            if admitted[r] != admitted[r]:  # NaN: first admission
                admitted[r] = t_now
            if known[r] - cached[r] == 1 and gen[r] >= 1:
                add_decoder(w, r)
            else:
                w.pf.append(r)

    def plan(w):
        """This step's work: (decoders run?, [(r, tokens)] prompt chunks, finishing decoders)."""
        nonlocal preemptions
        admit(w)
        while True:
            if not w.order:
                return None
            n_dec = len(w.dec)
            chunks = []
            budget = budget_all - n_dec if decode_first else budget_all
            if w.pf and budget > 0:
                for r in w.pf:
                    want = known[r] - cached[r]
                    if chunk is not None:
                        want = min(want, chunk, budget)
                        if want <= 0:
                            break
                    elif want > budget and chunks:
                        break
                    chunks.append((r, want))
                    budget -= want
                    if budget <= 0:
                        break
            run_dec = n_dec > 0 and (decode_first or not chunks)
            # finishing decoders this step (valid heap entries due at ticks + 1)
            fin = []
            if run_dec:
                due = w.ticks + 1
                while w.fin and w.fin[0][0] <= due:
                    e = heapq.heappop(w.fin)
                    if e[2] == version[e[3]] and e[3] in w.dec:
                        fin.append(e)
            grow = 0
            if w.role != "prefill":
                grow = (n_dec - len(fin)) if run_dec else 0
                for r, k_ in chunks:
                    if k_ == known[r] - cached[r] and gen[r] + 1 < out_n[r]:
                        grow += 1
            for e in fin:  # only counted here; they finish when the step ends
                heapq.heappush(w.fin, e)
            if w.kv_used + grow <= cap:
                return run_dec, chunks, len(fin)
            v = next(reversed(w.order))
            w.kv_used -= drop(w, v)
            cached[v] = 0
            w.waiting.appendleft(v)
            preemptions += 1

    def start_step(w: _Worker, t: float):
        nonlocal seq, steps
        p = plan(w)
        if p is None:
            w.busy = False
            return
        run_dec, chunks, n_fin = p
        n_dec = len(w.dec) if run_dec else 0
        c_dec = w.sum_base + n_dec * w.ticks if run_dec else 0
        nt = float(n_dec)
        kv_read = float(c_dec)
        pairs = float(c_dec)
        written = 0.0
        n_pf = 0
        n_logits = n_dec  # sequences that get a row of logits: decoders, and prompts this step finishes
        for r, k_ in chunks:
            c0 = cached[r]
            nt += k_
            kv_read += c0
            pairs += k_ * c0 + k_ * (k_ - 1) / 2
            if known[r] - c0 > 1 or (gen[r] == 0 and has_prompt[r]):
                written += k_
                n_pf += 1
            if c0 + k_ >= known[r]:
                n_logits += 1
        nseq = float(n_logits)
        if run_dec and not w.pf and w.role != "prefill":
            # A pure decode batch: nothing changes until the first decoder finishes, the KV cache fills or
            # outside work arrives, so price that many steps at once (vectorized).
            due = w.fin[0][0] if w.fin else np.inf  # a stale top only shortens the run
            k_max = 1 if n_fin else int(min(due - w.ticks, (cap - w.kv_used) // n_dec))
            mb = min(stages, n_dec)
            horizon = ext[0][0] if ext else np.inf
            if k_max > 1 and horizon < np.inf:
                # steps only get longer as contexts grow: no more than (horizon − t) ÷ first step start first
                dt0 = cost.time_s(nt / mb, nseq / mb, kv_read / mb, kv_read / mb, 0.0)
                k_max = min(k_max, int((horizon - t) / dt0) + 2)
            if 1 < k_max <= SHORT_RUN:  # a short run: plain Python beats numpy's per-call overhead
                dts, ends, e = [], [], t
                for j in range(k_max):
                    if j and e >= horizon:  # outside work is due: the run stops before this step
                        break
                    kv = kv_read + n_dec * j
                    d = cost.time_s(nt / mb, nseq / mb, kv / mb, kv / mb, 0.0)
                    e = e + d
                    dts.append(d)
                    ends.append(e)
                k = len(dts)
            elif k_max > 1:
                kv_j = kv_read + n_dec * np.arange(k_max, dtype=float)
                dts = np.broadcast_to(cost.time_s(nt / mb, nseq / mb, kv_j / mb, kv_j / mb, 0.0), (k_max,))
                ends = np.cumsum(np.concatenate(([t], dts)))[1:]
                k = max(1, int(np.count_nonzero(ends[:-1] < horizon)) + 1)
                dts, ends = dts[:k].tolist(), ends[:k].tolist()
            if k_max > 1:
                w.busy_s += sum(dts) * mb / stages
                if w.log is not None:
                    starts = [t, *ends[:-1]]
                    used = [w.kv_used + n_dec * j for j in range(k)]
                    w.log.extend(
                        zip(starts, dts, used, [0] * k, [n_dec] * k, [len(w.waiting)] * k, strict=True)
                    )
                steps += k
                w.busy = True
                heapq.heappush(events, (ends[-1], seq, 1, w.index, (run_dec, chunks, k)))
                seq += 1
                return
        if stages > 1:
            mb = min(stages, n_dec + len(chunks))
            dt = cost.time_s(nt / mb, nseq / mb, kv_read / mb, pairs / mb, written / mb)
            w.busy_s += dt * mb / stages
        else:
            dt = cost.time_s(nt, nseq, kv_read, pairs, written)
            w.busy_s += dt
        if w.log is not None:
            w.log.append((t, dt, w.kv_used, n_pf, n_dec + len(chunks) - n_pf, len(w.waiting)))
        steps += 1
        w.busy = True
        heapq.heappush(events, (t + dt, seq, 1, w.index, (run_dec, chunks, 1)))
        seq += 1

    def kick(w: _Worker, t: float):
        """Start w's next step at t, after every other event at t (so simultaneous arrivals batch): at once
        if no other event is due at t, else through the event queue."""
        nonlocal seq
        if w.busy:
            return
        if (ext and ext[0][0] <= t) or (events and events[0][0] <= t):
            w.busy = True
            heapq.heappush(events, (t, seq, 3, w.index, 0))
            seq += 1
        else:
            start_step(w, t)

    def issue_next(t):
        nonlocal seq, next_request
        if load == "closed" and next_request < n:
            heapq.heappush(ext, (t + think_time_s, seq, 0, next_request, 0))
            seq += 1
            next_request += 1

    while events or ext:
        if events and (not ext or events[0][0] < ext[0][0]):
            t, _, kind, a, b = heapq.heappop(events)
        else:
            t, _, kind, a, b = heapq.heappop(ext)
        if t > max_sim_time_s:
            truncated = True
            break
        t_now = t
        if kind == 0:  # arrival of request a
            if load == "closed":
                arr[a] = t
            w = route(entry)
            w.waiting.append(a)
            kick(w, t)
        elif kind == 1:  # step (or run of k pure decode steps) of worker a ends
            w = workers[a]
            run_dec, chunks, k = b
            if run_dec:
                w.ticks += k
                w.kv_used += (k - 1) * len(w.dec)  # every decoder grew in the first k − 1 steps
                due = w.ticks
                while w.fin and w.fin[0][0] <= due:
                    _, _, ver, r = heapq.heappop(w.fin)
                    if ver != version[r] or r not in w.dec:
                        continue
                    finish[r] = t
                    w.kv_used -= drop(w, r) - 1  # its last token is emitted, never cached
                    issue_next(t)
                w.kv_used += len(w.dec)  # the last step's emitted tokens, for those that continue
            for r, k_ in chunks:
                cached[r] += k_
                if cached[r] != known[r]:
                    continue
                gen[r] += 1
                if first[r] != first[r]:
                    first[r] = t
                if gen[r] >= out_n[r]:
                    finish[r] = t
                    w.kv_used -= drop(w, r)
                    issue_next(t)
                elif w.role == "prefill":  # the first token is out: the KV moves to a decode worker
                    w.kv_used -= drop(w, r)
                    known[r] += 1
                    delay = cached[r] * kv_link_s_per_token + kv_transfer_latency_s
                    heapq.heappush(ext, (t + delay, seq, 2, r, 0))
                    seq += 1
                else:
                    w.pf.remove(r)
                    known[r] += 1
                    w.kv_used += 1
                    add_decoder(w, r)
            w.busy = False
            kick(w, t)
        elif kind == 3:  # worker a starts a step
            start_step(workers[a], t)
        else:  # kind 2: KV of request a arrives at a decode worker
            w = route(decoders)
            w.waiting.append(a)
            kick(w, t)

    return _summarise(
        locals_=dict(
            m=m,
            g=g,
            cost=cost,
            load=load,
            rate_per_s=rate_per_s,
            concurrency=concurrency,
            n=n,
            arr=arr,
            admitted=admitted,
            first=first,
            finish=finish,
            inp=inp,
            outp=outp,
            workers=workers,
            num_gpus_total=num_gpus_total,
            slo_ttft_s=slo_ttft_s,
            slo_tpot_s=slo_tpot_s,
            usd_per_gpu_hour=usd_per_gpu_hour,
            preemptions=preemptions,
            steps=steps,
            cap=cap,
            truncated=truncated,
            max_batch=max_batch,
            entry=len(entry),
            t_end=t_now,
            stages=stages,
            decode_workers=len(decoders),
            max_sim_time_s=max_sim_time_s,
        )
    )


def _summarise(locals_: dict) -> SimResult:
    v = locals_
    arr, first, finish, inp, outp = v["arr"], v["first"], v["finish"], v["inp"], v["outp"]
    ttft = first - arr
    e2e = finish - arr
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(outp > 1, (e2e - ttft) / (outp - 1), np.nan)
    done = np.isfinite(finish)
    n_done = int(done.sum())
    t0 = float(np.nanmin(arr)) if np.any(np.isfinite(arr)) else 0.0
    t_last = float(np.nanmax(finish)) if n_done else float(v["t_end"])
    duration = max(t_last - t0, 1e-12)
    out_tok = float(outp[done].sum())
    all_tok = float((outp[done] + inp[done]).sum())
    ok = done & (ttft <= v["slo_ttft_s"]) & ((outp == 1) | (tpot <= v["slo_tpot_s"]))
    good_tok_s = float(outp[ok].sum()) / duration
    price = v["usd_per_gpu_hour"]
    if price is None:
        price = rl.get_price(DEFAULT_PRICE_ID).usd_per_gpu_hour
    usd = (
        float(rl.cost_per_million_tokens_usd(price, good_tok_s, v["num_gpus_total"]))
        if good_tok_s > 0
        else float("inf")
    )
    workers = v["workers"]
    busy = sum(w.busy_s for w in workers) / (len(workers) * duration)
    sustainable = sustainable_rate_per_s(
        v["cost"],
        float(np.mean(inp)),
        float(np.mean(outp)),
        v["max_batch"],
        v["cap"],
        workers=v["entry"],
        pipeline_stages=v["stages"],
        decode_workers=v["decode_workers"],
    )
    unstable, message = False, ""
    if v["load"] in ("poisson", "trace"):
        # Growth of the queue: requests issued in the last quarter wait far longer than the first quarter's.
        q = max(1, v["n"] // 4)
        early = np.nanmean(np.where(np.isfinite(ttft[:q]), ttft[:q], np.nan)) if n_done else np.nan
        late_ttft = np.where(np.isfinite(ttft[-q:]), ttft[-q:], v["t_end"] - arr[-q:])
        growing = np.nanmean(late_ttft) > 3 * early + 0.1 if np.isfinite(early) else True
        over = v["rate_per_s"] is not None and v["rate_per_s"] > sustainable
        if (over and growing) or (v["truncated"] and (growing or over)):
            unstable = True
            message = (
                "the queue grows without bound; the largest sustainable rate is about "
                f"{sustainable:.3g} req/s"
            )
    if v["truncated"] and not message:
        left = v["n"] - n_done
        message = f"stopped at max_sim_time_s = {v['max_sim_time_s']:g} s with {left} requests unfinished"
    log = np.asarray(workers[0].log if workers[0].log else np.zeros((0, 6)), dtype=float).reshape(-1, 6)
    return SimResult(
        model_id=v["m"].id,
        gpu_id=v["g"].id,
        engine=getattr(v["cost"], "engine", "ideal"),
        load=v["load"],
        rate_per_s=float(v["rate_per_s"]) if v["rate_per_s"] is not None else float("nan"),
        concurrency=int(v["concurrency"] or 0),
        num_gpus_total=int(v["num_gpus_total"]),
        requests=int(v["n"]),
        requests_completed=n_done,
        arrival_s=arr,
        admitted_s=v["admitted"],
        first_token_s=first,
        finish_s=finish,
        input_tokens=inp,
        output_tokens=outp,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        ttft_s_percentiles=percentiles(ttft[done]),
        tpot_s_percentiles=percentiles(tpot[done]),
        e2e_s_percentiles=percentiles(e2e[done]),
        duration_s=duration,
        throughput_output_tokens_per_s=out_tok / duration,
        throughput_tokens_per_s=all_tok / duration,
        requests_per_s=n_done / duration,
        slo_ttft_s=float(v["slo_ttft_s"]),
        slo_tpot_s=float(v["slo_tpot_s"]),
        goodput_requests_per_s=float(ok.sum()) / duration,
        goodput_output_tokens_per_s=good_tok_s,
        busy_fraction=float(busy),
        preemptions=int(v["preemptions"]),
        steps=int(v["steps"]),
        kv_capacity_tokens=int(v["cap"]),
        usd_per_gpu_hour=float(price),
        usd_per_million_output_tokens_at_slo=usd,
        sustainable_rate_per_s=float(sustainable),
        unstable=unstable,
        truncated=bool(v["truncated"]),
        message=message,
        timeline_t_s=log[:, 0],
        timeline_step_s=log[:, 1],
        timeline_kv_used_tokens=log[:, 2],
        timeline_prefilling=log[:, 3],
        timeline_decoding=log[:, 4],
        timeline_waiting=log[:, 5],
    )
