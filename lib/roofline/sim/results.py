"""What a serving simulation produced: per-request times, percentiles, throughput, goodput, cost, stability.

Taught in notebooks/slos_and_capacity.ipynb. TTFT = first token − arrival; e2e = finish − arrival;
TPOT = (e2e − TTFT) ÷ (O − 1) for O > 1 output tokens.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from roofline.assumptions import assumption
from roofline.physics.cost import cost_per_million_tokens_usd
from roofline.pricing import get_price

from .cost import sustainable_rate_per_s
from .policies import SchedulerPolicy

PERCENTILES = (50, 90, 99)
DEFAULT_PRICE_ID = "h100-example-3usd"


@dataclass(frozen=True)
class SimResult:
    """What a serving simulation produced. Per-request arrays are in request-id order (issue order); times
    in seconds; NaN where a request did not complete within the bounds (``truncated``)."""

    model_id: str
    gpu_id: str
    engine: str
    load: str  # "poisson", "bursty", "closed" or "trace"
    rate_per_s: float  # requested arrival rate (NaN for a closed loop and a trace)
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
    # time series, one entry per step of worker 0 (its first TIMELINE_LIMIT steps): start time, and the
    # state during the step; prefilling + decoding = every admitted sequence, whether or not it got work
    timeline_t_s: np.ndarray = field(repr=False)
    timeline_kv_used_tokens: np.ndarray = field(repr=False)
    timeline_prefilling: np.ndarray = field(repr=False)
    timeline_decoding: np.ndarray = field(repr=False)
    timeline_waiting: np.ndarray = field(repr=False)
    timeline_step_s: np.ndarray = field(repr=False)
    policy: SchedulerPolicy | None = field(default=None, repr=False)  # the scheduler that ran

    def to_dict(self) -> dict:
        """Plain-Python summary (the per-request arrays left out), ready for ``json.dumps``.

        >>> from roofline.sim import SimConfig, simulate
        >>> d = simulate(SimConfig("llama-3-8b", "h100-sxm", concurrency=2, requests=4, input_tokens=8,
        ...                        output_tokens=4)).to_dict()
        >>> sorted(d["ttft_s"]), d["requests_completed"], d["policy"]["max_sequences"]
        (['p50', 'p90', 'p99'], 4, 256)
        """

        def py(v):
            if isinstance(v, float) and not np.isfinite(v):
                return None
            return v

        d = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                continue
            if isinstance(v, SchedulerPolicy):
                v = asdict(v)
            if isinstance(v, dict):
                v = {k: py(x) for k, x in v.items()}
            d[f.name] = py(v)
        d["ttft_s"] = d["ttft_s_percentiles"]
        d["tpot_s"] = d["tpot_s_percentiles"]
        d["e2e_s"] = d["e2e_s_percentiles"]
        return d

    def summary(self) -> dict:
        """The headline figures a lesson tabulates: TTFT and TPOT p50/p99 (s), end-to-end p99 (s), output
        tokens/s, and whether the load was unstable."""
        return {
            "ttft_p50_s": self.ttft_s_percentiles["p50"],
            "ttft_p99_s": self.ttft_s_percentiles["p99"],
            "tpot_p50_s": self.tpot_s_percentiles["p50"],
            "tpot_p99_s": self.tpot_s_percentiles["p99"],
            "e2e_p99_s": self.e2e_s_percentiles["p99"],
            "output_tokens_per_s": self.throughput_output_tokens_per_s,
            "unstable": self.unstable,
        }

    @property
    def ttft_mean_s(self) -> float:
        """Mean TTFT (s) over the completed requests: the figure a serving benchmark prints first (vllm bench
        serve's ``mean_ttft_ms``, over every request it sent, none dropped).

        >>> from roofline.sim import SimConfig, simulate
        >>> r = simulate(SimConfig("llama-3-8b", "h100-sxm", concurrency=1, requests=3, input_tokens=8,
        ...                        output_tokens=4))
        >>> r.ttft_mean_s == float(r.ttft_s.mean())
        True
        """
        return _finite_mean(self.ttft_s)

    @property
    def tpot_mean_s(self) -> float:
        """Mean TPOT (s) over the completed requests of more than one output token, each request's TPOT
        being (end-to-end − TTFT) ÷ (output tokens − 1), as vllm bench serve computes ``mean_tpot_ms``."""
        return _finite_mean(self.tpot_s)

    @property
    def mean_in_system(self) -> float:
        """Time-average number of requests in the system (waiting or running) over the run, from the
        per-request intervals (requests); Little's law says it equals rate × mean e2e time.

        >>> from roofline.sim import SimConfig, simulate
        >>> r = simulate(SimConfig("llama-3-8b", "h100-sxm", concurrency=4, requests=40, input_tokens=64,
        ...                        output_tokens=16))
        >>> round(r.mean_in_system, 2)      # a closed loop of 4 clients keeps 4 requests inside
        4.0
        """
        done = np.isfinite(self.e2e_s)
        return float(np.sum(self.e2e_s[done]) / self.duration_s)


def _finite_mean(x) -> float:
    """The mean of the finite values of ``x`` (NaN if none)."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else float("nan")


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


def _load(config) -> str:
    if config.trace is not None:
        return "trace"
    if config.rate_per_s is None:
        return "closed"
    return "poisson" if config.interarrival_cv == 1 else "bursty"


def stability(sim, ttft: np.ndarray, sustainable: float) -> tuple[bool, str]:
    """(unstable, message) of a finished ``Simulation``. Unstable: an open load whose queue grows (requests
    issued in the last quarter wait far longer than the first quarter's) while the rate exceeds the
    closed-form sustainable rate, or a run stopped at ``max_sim_time_s`` with requests that had arrived
    still unfinished. Requests that had not arrived by the end of the run never count: a run too short to
    see any arrival is not unstable."""
    rq, arr, rate = sim.rq, sim.arrival_s, sim.config.rate_per_s
    horizon = sim.max_sim_time_s if sim.truncated else sim.t_end_s
    arrived = np.isfinite(arr) & (arr <= horizon)
    backlog = bool(np.any(arrived & ~np.isfinite(rq.finish_s)))
    unstable, message = False, ""
    if not sim.closed and np.any(arrived):
        seen = np.flatnonzero(arrived)  # in issue order, which is arrival order for open loads
        q = max(1, seen.size // 4)
        early_ttft = ttft[seen[:q]]
        early = np.nanmean(early_ttft) if np.any(np.isfinite(early_ttft)) else np.nan
        late = seen[-q:]
        late_ttft = np.where(np.isfinite(ttft[late]), ttft[late], sim.t_end_s - arr[late])
        growing = np.nanmean(late_ttft) > 3 * early + 0.1 if np.isfinite(early) else backlog
        over = rate is not None and rate > sustainable
        if (over and growing) or (sim.truncated and backlog and (growing or over)):
            unstable = True
            message = (
                "the queue grows without bound; the largest sustainable rate is about "
                f"{sustainable:.3g} req/s"
            )
    if sim.truncated and not message:
        left = int(np.sum(~np.isfinite(rq.finish_s)))
        not_yet = 0 if sim.closed else int(np.sum(~arrived))
        message = f"stopped at max_sim_time_s = {sim.max_sim_time_s:g} s with {left} requests unfinished"
        if not_yet:
            message += f" ({not_yet} of them had not arrived yet)"
    return unstable, message


def summarise(sim, input_tokens: np.ndarray, output_tokens: np.ndarray) -> SimResult:
    """The ``SimResult`` of a finished ``roofline.sim.loop.Simulation``."""
    c, rq, arr, inp, outp = sim.config, sim.rq, sim.arrival_s, input_tokens, output_tokens
    slo_ttft_s = assumption("ttft_target_s") if c.slo_ttft_s is None else c.slo_ttft_s
    slo_tpot_s = assumption("tpot_target_s") if c.slo_tpot_s is None else c.slo_tpot_s
    first, finish = rq.first_token_s, rq.finish_s
    ttft, e2e = first - arr, finish - arr
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(outp > 1, (e2e - ttft) / (outp - 1), np.nan)
    done = np.isfinite(finish)
    n_done = int(done.sum())
    # The window measured: first arrival to last finish; with nothing finished, up to where the run stopped
    # (a run that stopped before any arrival measured its whole span, from 0).
    end = sim.max_sim_time_s if sim.truncated else sim.t_end_s
    arrived = np.isfinite(arr) & (arr <= end)
    t0 = float(np.min(arr[arrived])) if np.any(arrived) else 0.0
    t_last = float(np.nanmax(finish)) if n_done else float(end)
    duration = max(t_last - t0, 1e-12)
    ok = done & (ttft <= slo_ttft_s) & ((outp == 1) | (tpot <= slo_tpot_s))
    good_tok_s = float(outp[ok].sum()) / duration
    price = c.usd_per_gpu_hour
    if price is None:
        price = get_price(DEFAULT_PRICE_ID).usd_per_gpu_hour
    workers, cost = sim.workers, sim.cost
    num_gpus_total = cost.num_gpus * sim.stages * len(workers)
    usd = float(cost_per_million_tokens_usd(price, good_tok_s, num_gpus_total)) if good_tok_s else math.inf
    sustainable = sustainable_rate_per_s(
        cost, float(np.mean(inp)), float(np.mean(outp)), sim.policy.max_sequences, sim.kv_capacity_tokens,
        workers=len(sim.entry), pipeline_stages=sim.stages, decode_workers=len(sim.decoders),
    )  # fmt: skip
    unstable, message = stability(sim, ttft, sustainable)
    return SimResult(
        model_id=cost.model.id,
        gpu_id=cost.gpu.id,
        engine=cost.engine,
        load=_load(c),
        rate_per_s=float(c.rate_per_s) if c.rate_per_s is not None else float("nan"),
        concurrency=int(c.concurrency or 0),
        num_gpus_total=int(num_gpus_total),
        requests=int(arr.size),
        requests_completed=n_done,
        arrival_s=arr,
        admitted_s=rq.admitted_s,
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
        throughput_output_tokens_per_s=float(outp[done].sum()) / duration,
        throughput_tokens_per_s=float((outp[done] + inp[done]).sum()) / duration,
        requests_per_s=n_done / duration,
        slo_ttft_s=float(slo_ttft_s),
        slo_tpot_s=float(slo_tpot_s),
        goodput_requests_per_s=float(ok.sum()) / duration,
        goodput_output_tokens_per_s=good_tok_s,
        busy_fraction=float(sum(w.busy_s for w in workers) / (len(workers) * duration)),
        preemptions=int(sum(w.preemptions for w in workers)),
        steps=int(sim.steps),
        kv_capacity_tokens=int(sim.kv_capacity_tokens),
        usd_per_gpu_hour=float(price),
        usd_per_million_output_tokens_at_slo=usd,
        sustainable_rate_per_s=float(sustainable),
        unstable=unstable,
        truncated=bool(sim.truncated),
        message=message,
        **_timeline(workers[0].log),
        policy=sim.policy,
    )


def _timeline(log) -> dict:
    rows = np.asarray(log if log else np.zeros((0, 6)), dtype=float).reshape(-1, 6)
    names = ("t_s", "step_s", "kv_used_tokens", "prefilling", "decoding", "waiting")
    return {f"timeline_{name}": rows[:, i] for i, name in enumerate(names)}
