"""The serving simulator's event loop: requests arrive, workers step, steps are priced, tokens come out.

One event per step of a worker (``roofline.sim.worker`` admits and plans), in which every scheduled
sequence advances together; a stretch of pure decode steps with no arrival and no finish in between is
priced in one vectorized call to the cost model (a "run" of k steps). Deployments: tensor parallel (inside
the cost model); pipeline parallel (S stages: the batch is split into min(S, sequences) microbatches, an
iteration costs the step time of one, and each stage is busy microbatches ÷ S of it); a policy's physical
passes (a step of T tokens runs as ⌈T ÷ pass⌉ equal passes, each reading the weights); replicas behind a
least-loaded router; disaggregated prefill and decode workers, the KV moving over the link (P × KV bytes
per token ÷ link bandwidth + a fixed latency).

The clock (``EventQueue``) keeps two heaps of ``(time s, sequence number, kind, subject, payload)``:
*outside* events bring work (a request arrives; its KV cache reaches the decode workers), the workers'
*own* are a step ending or starting. Open-loop arrivals are already sorted, so they are read from their
array by an index instead of sitting in a heap: memory stays bounded by the workers, not the requests. At
equal times outside events go first, so simultaneous arrivals share a step; among them the earlier-issued
goes first.

>>> from roofline.sim.config import SimConfig
>>> from roofline.sim.cost import StepCostModel
>>> from roofline.sim.policies import assumed_policy
>>> from roofline.sim.worker import RequestState
>>> rq, config = RequestState([0], [3]), SimConfig("llama-3-8b", "h100-sxm", rate_per_s=1, requests=1)
>>> s = Simulation(config, StepCostModel("llama-3-8b", "h100-sxm"), assumed_policy(), rq, 10_000, [0.0])
>>> s.run()
>>> s.steps, round(float(rq.finish_s[0]) * 1e3, 2)      # three decode steps of a 4.48 ms floor
(3, 13.44)
"""

from __future__ import annotations

import heapq
import math
from enum import IntEnum

import numpy as np

from roofline.assumptions import assumption
from roofline.errors import InvalidConfigurationError

from .policies import SchedulerPolicy
from .worker import RequestState, StepWork, Worker

SHORT_RUN = 8  # pure decode runs up to this many steps are priced step by step in plain Python
TIMELINE_LIMIT = 250_000  # steps of worker 0 a timeline keeps (bounded memory on huge runs)
INF = math.inf
PROGRESS_EVENTS = 16384  # events between two calls of a run's progress report


class EventKind(IntEnum):
    """What happens at an event; the subject is a request id or a worker index."""

    ARRIVAL = 0  # request (subject) arrives and joins a worker's queue
    STEP_END = 1  # worker (subject) finishes a step, or a run of k pure decode steps (payload: the work)
    KV_ARRIVAL = 2  # the KV cache of request (subject) reaches the decode workers
    STEP_START = 3  # worker (subject) starts a step (deferred until every other event at that time is in)


ARRIVAL, STEP_END, KV_ARRIVAL, STEP_START = (EventKind.ARRIVAL, EventKind.STEP_END, EventKind.KV_ARRIVAL,
                                             EventKind.STEP_START)  # fmt: skip


class EventQueue:
    """Outside and own events in time order (the module docstring). ``arrival_s``: the sorted arrival times
    (s) of requests 0, 1, 2, … of an open load, or None (a closed loop pushes each arrival when its client
    is ready). ``first_sequence``: the sequence number of the first pushed event.

    >>> q = EventQueue(arrival_s=[0.0, 0.5], first_sequence=2)
    >>> q.push_own(0.5, STEP_END, 0, None)
    >>> [q.pop()[1:3] for _ in range(3)]
    [(<EventKind.ARRIVAL: 0>, 0), (<EventKind.ARRIVAL: 0>, 1), (<EventKind.STEP_END: 1>, 0)]
    """

    __slots__ = ("_arrival_s", "_next", "_outside", "_own", "_seq")

    def __init__(self, arrival_s=None, first_sequence: int = 0):
        self._arrival_s = list(arrival_s) if arrival_s is not None else []
        self._next = 0  # index of the next array arrival
        self._outside: list = []
        self._own: list = []
        self._seq = int(first_sequence)

    def push_outside(self, time_s: float, kind: EventKind, subject: int, sequence: int | None = None):
        """Queue an outside event (``sequence`` to place it among simultaneous ones; default: next)."""
        if sequence is None:
            sequence = self._seq
            self._seq += 1
        heapq.heappush(self._outside, (time_s, sequence, kind, subject, None))

    def push_own(self, time_s: float, kind: EventKind, subject: int, payload):
        """Queue a worker's own event."""
        heapq.heappush(self._own, (time_s, self._seq, kind, subject, payload))
        self._seq += 1

    def next_outside_s(self) -> float:
        """Time (s) of the next outside event, inf if none."""
        t = self._arrival_s[self._next] if self._next < len(self._arrival_s) else INF
        return min(t, self._outside[0][0]) if self._outside else t

    def due_by(self, time_s: float) -> bool:
        """Whether any event is due at or before ``time_s``."""
        return self.next_outside_s() <= time_s or (bool(self._own) and self._own[0][0] <= time_s)

    def pop(self):
        """The next event as ``(time s, kind, subject, payload)``, or None when nothing is left."""
        i, arrivals, outside, own = self._next, self._arrival_s, self._outside, self._own
        arrival_s = arrivals[i] if i < len(arrivals) else INF
        outside_s = outside[0][0] if outside else INF
        if own and own[0][0] < arrival_s and own[0][0] < outside_s:
            t, _, kind, subject, payload = heapq.heappop(own)
            return t, kind, subject, payload
        if arrival_s <= outside_s:
            if arrival_s == INF:
                return None
            self._next = i + 1  # array arrivals were issued first: they win ties
            return arrival_s, ARRIVAL, i, None
        t, _, kind, subject, payload = heapq.heappop(outside)
        return t, kind, subject, payload


class Simulation:
    """The deployment of ``config`` under a load; ``run()`` plays it out. ``cost`` prices the steps,
    ``policy`` schedules them, ``rq`` holds the requests' state; ``kv_capacity_tokens`` per worker;
    ``arrival_s``: the open load's sorted arrival times (s), None for a closed loop."""

    def __init__(
        self, config, cost, policy: SchedulerPolicy, rq: RequestState, kv_capacity_tokens: int, arrival_s=None
    ):
        self.config, self.cost, self.policy, self.rq = config, cost, policy, rq
        self.stages, self.kv_capacity_tokens = int(config.pipeline_stages), int(kv_capacity_tokens)
        self.workers = [
            Worker(i, role, rq, policy, kv_capacity_tokens) for i, role in enumerate(config.workers)
        ]
        if config.record_timeline:
            self.workers[0].log = []
        self.entry = [w for w in self.workers if w.role != "decode"]
        self.decoders = [w for w in self.workers if w.role == "decode"]
        self.kv_link_s_per_token = 0.0  # only disaggregated serving moves KV between workers
        if self.decoders:
            link = cost.gpu.interconnect_bytes_per_s
            if not link > 0:
                raise InvalidConfigurationError(
                    f"disaggregated serving moves each request's KV cache over the interconnect, and "
                    f"{cost.gpu.id} has none (interconnect_bytes_per_s = {link:g})"
                )
            self.kv_link_s_per_token = cost.kv_bytes_per_token / link
        latency_s = config.kv_transfer_latency_s
        self.kv_transfer_latency_s = float(
            assumption("kv_transfer_latency_s") if latency_s is None else latency_s
        )
        self.max_sim_time_s = float(config.max_sim_time_s)
        self.think_time_s = float(config.think_time_s)
        n = len(rq.out_n)
        self.closed = arrival_s is None
        self.arrival_s = np.full(n, np.nan) if self.closed else np.asarray(arrival_s, dtype=float)
        self.queue = EventQueue(None if self.closed else self.arrival_s, first_sequence=n)
        self.next_request = n
        if self.closed:
            c = int(config.concurrency)
            for r in range(min(n, c)):
                self.queue.push_outside(config.ramp_s * r / c, ARRIVAL, r, sequence=r)
            self.next_request = min(n, c)
        self.steps = 0
        self.t_end_s = 0.0
        self.truncated = False

    # ---------------------------------------------------------------- the loop and its events

    def run(self, progress=None):
        """Play every event until none is left or the clock passes ``max_sim_time_s``; every
        ``PROGRESS_EVENTS`` events call ``progress(clock_s, steps)`` if given (a long run's report)."""
        queue, workers, limit = self.queue, self.workers, self.max_sim_time_s
        countdown = PROGRESS_EVENTS
        while (event := queue.pop()) is not None:
            t, kind, subject, payload = event
            countdown -= 1
            if not countdown:
                countdown = PROGRESS_EVENTS
                if progress is not None:
                    progress(t, self.steps)
            if t > limit:
                self.truncated = True
                return
            self.t_end_s = t
            if kind is STEP_END:
                self._step_ends(workers[subject], t, payload)
            elif kind is ARRIVAL:
                if self.closed:
                    self.arrival_s[subject] = t
                self._join(min(self.entry, key=Worker.load), subject, t)  # least loaded
            elif kind is STEP_START:
                self._start_step(workers[subject], t)
            else:  # KV_ARRIVAL
                self._join(min(self.decoders, key=Worker.load), subject, t)

    def _join(self, w: Worker, r: int, t: float):
        w.waiting.append(r)
        self._kick(w, t)

    def _kick(self, w: Worker, t: float):
        """Start w's next step at t, after every other event at t (so simultaneous arrivals batch): at once
        if no other event is due at t, else through the queue."""
        if w.busy:
            return
        if self.queue.due_by(t):
            w.busy = True
            self.queue.push_own(t, STEP_START, w.index, None)
        else:
            self._start_step(w, t)

    def _issue_next(self, t: float):
        """A closed-loop client whose request finished at t sends its next one."""
        if self.closed and self.next_request < len(self.arrival_s):
            self.queue.push_outside(t + self.think_time_s, ARRIVAL, self.next_request)
            self.next_request += 1

    def _step_ends(self, w: Worker, t: float, work: StepWork):
        """Advance the decoders (k steps) and the prompt chunks; emit tokens; finish or hand over."""
        rq = self.rq
        run_decoders, chunks, _, k = work
        if run_decoders:
            w.ticks += k
            w.kv_used += (k - 1) * len(w.dec)  # every decoder grew in the first k − 1 steps
            while w.fin and w.fin[0][0] <= w.ticks:
                _, _, ver, r = heapq.heappop(w.fin)
                if ver != rq.version[r] or r not in w.dec:
                    continue
                rq.finish_s[r] = t
                w.kv_used -= w.drop(r) - 1  # its last token is emitted, never cached
                self._issue_next(t)
            w.kv_used += len(w.dec)  # the last step's emitted tokens, for those that continue
        for r, k in chunks:
            rq.cached[r] += k
            if rq.cached[r] == rq.known[r]:
                self._prompt_done(w, r, t)
        w.busy = False
        self._kick(w, t)

    def _prompt_done(self, w: Worker, r: int, t: float):
        """Request r's last prompt chunk ran: it emits a token, then finishes, moves or decodes."""
        rq = self.rq
        rq.gen[r] += 1
        if rq.first_token_s[r] != rq.first_token_s[r]:
            rq.first_token_s[r] = t
        if rq.gen[r] >= rq.out_n[r]:
            rq.finish_s[r] = t
            w.kv_used -= w.drop(r)
            self._issue_next(t)
        elif w.role == "prefill":  # the first token is out: the KV moves to a decode worker
            w.kv_used -= w.drop(r)
            rq.known[r] += 1
            delay = rq.cached[r] * self.kv_link_s_per_token + self.kv_transfer_latency_s
            self.queue.push_outside(t + delay, KV_ARRIVAL, r)
        else:
            w.pf.remove(r)
            rq.known[r] += 1
            w.kv_used += 1
            w.add_decoder(r)

    # ---------------------------------------------------------------- steps and their price

    def _start_step(self, w: Worker, t: float):
        work = w.plan(t)
        if work is None:
            w.busy = False
            return
        agg = self._aggregates(w, work)
        if work.run_decoders and not w.pf and w.role != "prefill" and self._decode_run(w, t, work, agg):
            return
        dt = self._price(w, *agg)
        if w.log is not None and len(w.log) < TIMELINE_LIMIT:
            w.log.append((t, dt, w.kv_used, len(w.pf), len(w.dec), len(w.waiting)))
        self.steps += 1
        w.busy = True
        self.queue.push_own(t + dt, STEP_END, w.index, work)

    def _aggregates(self, w: Worker, work: StepWork) -> tuple:
        """The step's sums: new tokens, sequences that get logits, KV tokens read, attention pairs, KV
        tokens written (prompt work only), sequences in the step, and the attention pairs of its prompts."""
        rq = self.rq
        run_decoders, chunks = work[0], work[1]
        n_dec = len(w.dec) if run_decoders else 0
        c_dec = w.sum_base + n_dec * w.ticks if run_decoders else 0
        c_dec = self.cost.windowed(float(c_dec), n_dec)  # what the sliding layers keep of each context
        nt, kv_read, pairs, written = float(n_dec), c_dec, c_dec, 0.0
        n_logits = n_dec  # decoders, and prompts whose last chunk runs now, get a row of logits
        for r, k in chunks:
            c0 = rq.cached[r]
            nt += k
            kv_c, pairs_c = self.cost.chunk_load(c0, k)
            kv_read += kv_c
            pairs += pairs_c
            if rq.known[r] - c0 > 1 or (rq.gen[r] == 0 and rq.has_prompt[r]):
                written += k
            if c0 + k >= rq.known[r]:
                n_logits += 1
        return nt, float(n_logits), kv_read, pairs, written, n_dec + len(chunks), pairs - c_dec

    def _price(self, w: Worker, nt, nseq, kv_read, pairs, written, n_seq: int, prompt_pairs=0.0) -> float:
        """Time (s) of one step of this work; adds the GPU-busy time to the worker."""
        if self.stages == 1 and self.policy.pass_tokens is None:
            dt = self.cost.time_s(nt, nseq, kv_read, pairs, written, prompt_pairs)
            w.busy_s += dt
            return dt
        mb = min(self.stages, n_seq)
        passes = self.policy.passes(nt)
        parts = mb * passes
        dt = passes * self.cost.time_s(
            nt / parts, nseq / parts, kv_read / parts, pairs / parts, written / parts, prompt_pairs / parts
        )
        w.busy_s += dt * mb / self.stages
        return dt

    def _decode_run(self, w: Worker, t: float, work: StepWork, agg: tuple) -> bool:
        """A pure decode batch: nothing changes until the first decoder finishes, the KV cache fills or
        outside work arrives, so price that many steps at once. Returns False for a single step."""
        nt, nseq, kv_read = agg[0], agg[1], agg[2]
        n_dec = len(w.dec)
        cached = w.sum_base + n_dec * w.ticks  # Σ contexts, before any window
        due = w.fin[0][0] if w.fin else INF  # a stale top only shortens the run
        k_max = 1 if work.finishing else int(min(due - w.ticks, (w.cap - w.kv_used) // n_dec))
        if k_max <= 1:
            return False
        mb = min(self.stages, n_dec)
        parts = mb * self.policy.passes(nt)
        horizon = self.queue.next_outside_s()
        if horizon < INF:
            # steps only get longer as contexts grow: no more than (horizon − t) ÷ first step start first
            dt0 = (parts // mb) * self.cost.time_s(
                nt / parts, nseq / parts, kv_read / parts, kv_read / parts, 0.0
            )
            k_max = min(k_max, int((horizon - t) / dt0) + 2)
            if k_max <= 1:
                return False
        dts, ends = self._run_times(t, k_max, horizon, nt, nseq, cached, n_dec, parts, mb)
        k = len(dts)
        w.busy_s += sum(dts) * mb / self.stages
        if w.log is not None and len(w.log) < TIMELINE_LIMIT:
            starts = [t, *ends[:-1]]
            keep = min(k, TIMELINE_LIMIT - len(w.log))
            w.log.extend(
                (starts[j], dts[j], w.kv_used + n_dec * j, 0, n_dec, len(w.waiting)) for j in range(keep)
            )
        self.steps += k
        w.busy = True
        self.queue.push_own(ends[-1], STEP_END, w.index, work._replace(steps=k))
        return True

    def _run_times(self, t, k_max, horizon, nt, nseq, cached, n_dec, parts, mb):
        """Step times and end times (s) of up to k_max pure decode steps from t, the decoders holding
        ``cached`` tokens in all at the first, stopping after the step that crosses ``horizon``."""
        passes = parts // mb
        time_s, windowed = self.cost.time_s, self.cost.windowed
        if k_max <= SHORT_RUN:  # a short run: plain Python beats numpy's per-call overhead
            dts, ends, e = [], [], t
            for j in range(k_max):
                if j and e >= horizon:  # outside work is due: the run stops before this step
                    break
                kv = windowed(float(cached + n_dec * j), n_dec)
                d = passes * time_s(nt / parts, nseq / parts, kv / parts, kv / parts, 0.0)
                e = e + d
                dts.append(d)
                ends.append(e)
            return dts, ends
        kv_j = windowed(cached + n_dec * np.arange(k_max, dtype=float), n_dec)
        dts = passes * np.broadcast_to(
            time_s(nt / parts, nseq / parts, kv_j / parts, kv_j / parts, 0.0), (k_max,)
        )
        ends = np.cumsum(np.concatenate(([t], dts)))[1:]
        k = max(1, int(np.count_nonzero(ends[:-1] < horizon)) + 1)
        return dts[:k].tolist(), ends[:k].tolist()
