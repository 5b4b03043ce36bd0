"""Benchmarks that lie: an asynchronous "device" to time wrongly on purpose, and a plausibility check.

Taught in lesson 06 (notebooks/06_benchmarks_that_lie.ipynb).

Three classic bugs inflate a tokens/s figure: stopping the clock before asynchronous GPU work has
finished (no synchronize), counting prompt tokens as output, and timing cold calls or reporting a mean
where percentiles belong. The cure for all three starts with physics: a decode step cannot be shorter
than its roofline time, so B users cannot get more than B ÷ step tokens/s from plain decoding.

>>> p = plausibility(Scenario(context_tokens=0), 2000)     # Llama 3 8B, one user, one H100
>>> round(p.ceiling_tokens_per_s), round(p.ratio, 1), p.plausible
(223, 9.0, False)
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

import numpy as np

from roofline import sim
from roofline.assumptions import assumption
from roofline.checks import checked, out
from roofline.errors import InvalidConfigurationError
from roofline.results import Flag, Label, Number, Result
from roofline.scenario import Scenario
from roofline.sim.validation import HARNESSES, ranged_lengths

# A plain-decoding claim above this share of the roofline ceiling is suspicious even when possible:
# well-tuned decode kernels reach roughly 70-90 % of peak bandwidth (the card's 150-180 of about 200 tok/s).
EDGE_OF_POSSIBLE = assumption("suspicious_share_of_ceiling")


# -- bug 1: asynchronous work ---------------------------------------------------------------------------
class AsyncStream:
    """A CPU stand-in for a CUDA stream: ``launch`` queues work and returns at once; a worker thread runs
    the queue in order; ``synchronize`` blocks until everything queued has finished.

    A "kernel" here is a sleep of ``work_s`` seconds on the worker thread. Like a GPU, the worker keeps
    running after the caller has moved on, which is exactly what fools a timer read without a sync.

    >>> with AsyncStream() as stream:
    ...     stream.launch(0.01)          # returns immediately
    ...     stream.pending() >= 0
    ...     stream.synchronize()         # now the work is done
    ...     stream.pending()
    True
    0
    """

    def __init__(self):
        self._queue: queue.Queue = queue.Queue()
        self._worker = threading.Thread(target=self._run, daemon=True)
        self._worker.start()

    def _run(self):
        while True:
            work_s = self._queue.get()
            if work_s is None:
                self._queue.task_done()
                return
            time.sleep(work_s)
            self._queue.task_done()

    def launch(self, work_s: float) -> None:
        """Queue ``work_s`` seconds of work (s, ≥ 0) and return immediately, like a kernel launch."""
        if not (work_s >= 0):
            raise InvalidConfigurationError(f"work_s must be >= 0, got {work_s!r}")
        self._queue.put(float(work_s))

    def synchronize(self) -> None:
        """Block until all queued work has run (``torch.cuda.synchronize()`` in the real thing)."""
        self._queue.join()

    def pending(self) -> int:
        """Work items not yet finished (approximate while the worker runs)."""
        return self._queue.unfinished_tasks

    def close(self) -> None:
        """Finish queued work and stop the worker thread."""
        self._queue.put(None)
        self._worker.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass(frozen=True)
class Timing:
    """What a timer reported for ``tokens`` generated tokens."""

    tokens: int
    elapsed_s: float  # what the timer read

    @property
    def tokens_per_s(self) -> float:
        """tokens ÷ elapsed time (tokens/s), the figure a benchmark would publish."""
        return self.tokens / self.elapsed_s


def time_decode(n_tokens: int, step_s: float, *, synchronize: bool) -> Timing:
    """Time ``n_tokens`` decode steps of ``step_s`` seconds each on a new ``AsyncStream``, with or without a
    synchronize before the timer stops. The stream is drained afterwards (outside the timed region).

    >>> real = time_decode(5, 2e-3, synchronize=True)
    >>> fake = time_decode(5, 2e-3, synchronize=False)
    >>> real.elapsed_s >= 5 * 2e-3, fake.tokens_per_s > 10 * real.tokens_per_s
    (True, True)
    """
    n = int(n_tokens)
    if n < 1:
        raise InvalidConfigurationError(f"n_tokens must be >= 1, got {n_tokens!r}")
    with AsyncStream() as stream:
        start = time.perf_counter()
        for _ in range(n):
            stream.launch(step_s)  # one step's kernels, queued
        if synchronize:
            stream.synchronize()
        elapsed = time.perf_counter() - start
    return Timing(tokens=n, elapsed_s=max(elapsed, 1e-9))


# -- bug 2: prompt tokens counted as output -------------------------------------------------------------
def request_time_s(s: Scenario, output_tokens) -> float:
    """Roofline time of one request of the scenario's P prompt tokens at batch 1: its prefill + n =
    ``output_tokens`` decode steps (s).

    Decode step i reads the weights and P + i tokens of KV. A lower bound: real kernels are slower.

    >>> round(request_time_s(Scenario(prompt_tokens=2000), 100), 3)
    0.485
    """
    checked(s.prompt_tokens, "prompt_tokens", minimum=1, whole=True)
    checked(output_tokens, "output_tokens", minimum=1, whole=True)
    p, n = int(s.prompt_tokens), int(output_tokens)
    pre = s.prefill(on_overflow="raise").step_time_s
    steps = s.decode(batch=1, context_tokens=np.arange(p, p + n), on_overflow="raise").step_time_s
    return float(pre + np.sum(steps))


def reported_tokens_per_s(output_tokens, elapsed_s, prompt_tokens=0, *, count_prompt_tokens=False):
    """Tokens/s as a benchmark reports it: output tokens (plus prompt tokens, if the bug is present) ÷ time.

    ``output_tokens``, ``prompt_tokens`` : counts; ``elapsed_s`` : wall time of the request (s). Broadcasts.

    >>> reported_tokens_per_s(100, 0.5), reported_tokens_per_s(100, 0.5, 2000, count_prompt_tokens=True)
    (200.0, 4200.0)
    """
    o = checked(output_tokens, "output_tokens", minimum=0)
    t = checked(elapsed_s, "elapsed_s", above=0)
    p = checked(prompt_tokens, "prompt_tokens", minimum=0)
    return out((o + (p if count_prompt_tokens else 0)) / t)


# -- bug 3: warm-up and means ----------------------------------------------------------------------------
def simulated_latencies_s(
    n_calls: int, typical_s: float, *, first_call_s: float = 0.0, seed: int = 0
) -> np.ndarray:
    """A seeded synthetic sample of ``n_calls`` per-call latencies (s): log-normal jitter (log-spread 0.05)
    around ``typical_s``, a few slow calls (2 % of them 3 × slower: a neighbour's prefill, a
    garbage-collection pause), and a cold first call of ``first_call_s`` (compilation, allocator, caches).

    >>> x = simulated_latencies_s(200, 6e-3, first_call_s=2.0)
    >>> x.shape, float(x[0]), bool(np.median(x) < 7e-3)
    ((200,), 2.0, True)
    """
    n = int(n_calls)
    if n < 1:
        raise InvalidConfigurationError(f"n_calls must be >= 1, got {n_calls!r}")
    typical = float(checked(typical_s, "typical_s", above=0))
    rng = np.random.default_rng(seed)
    x = typical * rng.lognormal(0.0, 0.05, n)
    x = np.where(rng.random(n) < 0.02, x * 3.0, x)
    if first_call_s > 0:
        x[0] = first_call_s
    return x


@dataclass(frozen=True)
class LatencySummary:
    """Mean and percentiles of a latency sample (s)."""

    calls: int
    mean_s: float
    p50_s: float
    p99_s: float


def latency_summary(latencies_s, warmup_calls: int = 0) -> LatencySummary:
    """Mean, p50 and p99 of ``latencies_s`` (s) after dropping the first ``warmup_calls`` calls.

    >>> s = latency_summary([1.0, 0.01, 0.01, 0.01, 0.01], warmup_calls=1)
    >>> s.calls, s.mean_s, s.p50_s
    (4, 0.01, 0.01)
    """
    x = checked(latencies_s, "latencies_s", minimum=0).ravel()
    w = int(warmup_calls)
    if w < 0 or w >= x.size:
        raise InvalidConfigurationError(f"warmup_calls must be in [0, {x.size - 1}], got {warmup_calls!r}")
    x = x[w:]
    p50, p99 = np.percentile(x, [50, 99])
    return LatencySummary(calls=int(x.size), mean_s=float(x.mean()), p50_s=float(p50), p99_s=float(p99))


# -- bug 4: a TTFT that measures the benchmark's own burst ------------------------------------------------
BURST_HARNESS = HARNESSES["inferencemax"]  # the protocol the public InferenceMAX serving rows ran


@dataclass(frozen=True)
class BurstTTFT:
    """One server's TTFT measured two ways (s): one request on an idle server, and every request of a
    serving benchmark's closed loop (``ttft_s``, in the order the requests were sent), summarised as the
    harness reports it (mean, median) and for its first wave, the C requests sent at once."""

    concurrency: int
    alone_s: float
    ttft_s: np.ndarray
    first_wave_s: float
    mean_s: float
    median_s: float


def benchmark_ttft(s: Scenario, concurrency: int, input_tokens: int, output_tokens: int,
                   engine: str = "vllm", seed: int = 0) -> BurstTTFT:  # fmt: skip
    """TTFT (s) of ``s``'s server with ``engine``'s step times and scheduler, as the public InferenceMAX
    serving rows measured it (``BURST_HARNESS``: ``benchmark_serving.py --max-concurrency C --num-prompts 10C
    --request-rate inf --random-range-ratio 0.8``, a ratio that script reads as lengths in [0.8 L, L]): all
    C clients send at t = 0, each sends its next prompt when its last answer ends, prompt and answer lengths
    (tokens) uniform in [0.8 L, L]; beside it, one ``input_tokens`` prompt alone.

    >>> b = benchmark_ttft(Scenario(), 32, 1000, 200)
    >>> round(b.alone_s * 1e3), b.mean_s > 2 * b.alone_s, b.first_wave_s > 10 * b.alone_s
    (20, True, True)
    """
    c = int(concurrency)
    if c < 1 or c != concurrency:
        raise InvalidConfigurationError(f"concurrency must be a whole number >= 1, got {concurrency!r}")
    base = sim.SimConfig(s.model, s.gpu, concurrency=1, requests=1, input_tokens=int(input_tokens),
                         output_tokens=int(output_tokens), engine=engine, seed=seed, record_timeline=False,
                         **s.deployment)  # fmt: skip
    alone = float(sim.simulate(base).ttft_s[0])
    low = BURST_HARNESS.low_fraction
    burst = base.with_(concurrency=c, requests=BURST_HARNESS.rounds * c,
                       input_tokens=ranged_lengths(input_tokens, low),
                       output_tokens=ranged_lengths(output_tokens, low))  # fmt: skip
    run = sim.simulate(burst)
    ttft = np.asarray(run.ttft_s, dtype=float)
    return BurstTTFT(c, alone, ttft, float(ttft[:c].mean()), float(ttft.mean()), float(np.median(ttft)))


# -- the physics check ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plausibility(Result):
    """A claimed tokens/s against the roofline ceiling of plain decoding (arrays broadcast)."""

    claimed_tokens_per_s: Number  # total over the batch
    ceiling_tokens_per_s: Number  # B ÷ roofline step time; NaN where the setup does not fit in memory
    ratio: Number  # claimed ÷ ceiling
    plausible: Flag  # bool: claimed ≤ EDGE_OF_POSSIBLE × ceiling
    verdict: Label  # str (or array of str)


def plausibility(s: Scenario, claimed_tokens_per_s) -> Plausibility:
    """Is a claimed decode rate (tokens/s over all the scenario's B users at T tokens each) possible?

    The ceiling is B ÷ the roofline step time (weights + KV over bandwidth, or FLOPs over peak): no launch
    overhead, perfect kernels. A claim above it is impossible for plain decoding; a claim above
    ``EDGE_OF_POSSIBLE`` × ceiling is suspicious (real kernels stay below ~90 % of it). Speculative
    decoding can beat the ceiling (several tokens per weight read), so such a claim needs that stated.
    ``claimed_tokens_per_s`` (tokens/s, > 0) may be an array.

    >>> one = Scenario(context_tokens=0)
    >>> plausibility(one, 2000).verdict
    'impossible: 9.0x above the ceiling of 223 tokens/s'
    >>> plausibility(one, 170).verdict
    'plausible: 76% of the ceiling of 223 tokens/s'
    """
    claimed = checked(claimed_tokens_per_s, "claimed_tokens_per_s", above=0)
    ceiling = np.asarray(s.decode().tokens_per_s_total)
    claimed, ceiling = np.broadcast_arrays(claimed, ceiling)
    ratio = claimed / ceiling
    fits = np.isfinite(ceiling)
    verdict = np.empty(claimed.shape, dtype=object)
    for idx in np.ndindex(claimed.shape):
        c, r = ceiling[idx], ratio[idx]
        if not fits[idx]:
            verdict[idx] = "does not fit in memory: no decode rate at all"
        elif r > 1:
            verdict[idx] = f"impossible: {r:.1f}x above the ceiling of {c:,.0f} tokens/s"
        elif r > EDGE_OF_POSSIBLE:
            verdict[idx] = (
                f"suspicious: {r * 100:.0f}% of the ceiling of {c:,.0f} tokens/s (real kernels reach less)"
            )
        else:
            verdict[idx] = f"plausible: {r * 100:.0f}% of the ceiling of {c:,.0f} tokens/s"
    return Plausibility(
        claimed_tokens_per_s=out(claimed),
        ceiling_tokens_per_s=out(ceiling),
        ratio=out(ratio),
        plausible=out(fits & (ratio <= EDGE_OF_POSSIBLE)),
        verdict=verdict.item() if verdict.ndim == 0 else verdict,
    )
