"""One serving engine instance of the simulator: it admits waiting requests and plans each step.

The event loop (``roofline.sim.loop``) asks a ``Worker`` for its next step's work, prices it and tells the
worker when it ends; the worker follows its ``SchedulerPolicy``.

Token bookkeeping for one request with P prompt tokens and O output tokens:

    known  K   tokens whose identity is known: the prompt (or one start token if P = 0), then + 1 per token
    cached c   tokens whose K/V are in the cache; the step that makes c reach K emits a token
    gen        output tokens emitted so far

A worker's decoders all advance together, so decoder r is stored as offsets from the worker's step counter
``ticks``: it holds c = base[r] + ticks cached tokens and has emitted gbase[r] + ticks tokens. One step then
costs O(1) for all of them (Σc = sum_base + decoders × ticks), and a heap says when the next one finishes.

Each step (``plan``): admit waiting requests first come first served while fewer than ``max_sequences``
run and the KV cache has room (for the prompt, or with ``kv_reservation="prompt+output"`` for everything
the request will hold); choose the decoders and prompt chunks per the policy; if the tokens the step emits
would overflow the cache, preempt the most recently admitted sequence (its KV is dropped and it waits at the
head of the queue to recompute what it had) and plan again.

>>> rq = RequestState([4, 0], [3, 2])
>>> toy = SchedulerPolicy("toy", max_sequences=4, token_budget=64, chunk_tokens=None)
>>> w = Worker(0, "both", rq, toy, kv_capacity_tokens=100)
>>> w.waiting.extend([0, 1])
>>> step = w.plan(t_s=0.0)
>>> step.run_decoders, step.chunks       # nobody decodes yet; both prompts (one is a start token) go in
(False, [(0, 4), (1, 1)])
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import NamedTuple

import numpy as np

from .policies import SchedulerPolicy


class RequestState:
    """Per-request state shared by every worker (a request may move from a prefill to a decode worker).
    Python lists: the loop touches single elements, where lists beat numpy. Times are numpy arrays (s),
    NaN until they happen."""

    __slots__ = ("known", "cached", "gen", "out_n", "has_prompt", "version", "base", "gbase", "reserved",
                 "admitted_s", "first_token_s", "finish_s")  # fmt: skip

    def __init__(self, input_tokens, output_tokens, prefix_hit_rate: float = 0.0):
        inp = np.asarray(input_tokens, dtype=np.int64)
        n = inp.size
        self.known = np.maximum(inp, 1).tolist()
        if prefix_hit_rate > 0:  # prompt tokens found in a prefix cache are cached from the start
            self.cached = np.minimum(np.floor(prefix_hit_rate * inp), np.maximum(inp, 1) - 1)
            self.cached = self.cached.astype(np.int64).tolist()
        else:
            self.cached = [0] * n
        self.gen = [0] * n
        self.out_n = np.asarray(output_tokens, dtype=np.int64).tolist()
        self.has_prompt = (inp > 0).tolist()
        self.version = [0] * n  # bumped on preemption: stale entries of a finish heap are skipped
        self.base = [0] * n
        self.gbase = [0] * n
        self.reserved = [0] * n  # KV tokens reserved on admission
        self.admitted_s = np.full(n, np.nan)  # first admission to a batch
        self.first_token_s = np.full(n, np.nan)
        self.finish_s = np.full(n, np.nan)


class StepWork(NamedTuple):
    """What one step (or a run of ``steps`` pure decode steps) computes."""

    run_decoders: bool  # every decoder advances one token
    chunks: list  # [(request id, prompt tokens)] computed this step
    finishing: int  # decoders that emit their last token in this step
    steps: int = 1


class Worker:
    """One engine instance: ``role`` "both" (a replica), "prefill" or "decode" (disaggregated)."""

    __slots__ = ("index", "role", "rq", "cap", "waiting", "order", "admissions", "pf", "dec",
                 "fin", "ticks", "sum_base", "kv_used", "kv_reserved", "busy", "busy_s", "preemptions",
                 "log", "_most", "_budget", "_chunk", "_must_fit", "_lazy", "_decode_first")  # fmt: skip

    def __init__(self, index: int, role: str, rq: RequestState, policy: SchedulerPolicy, kv_capacity_tokens):
        self.index = index
        self.role = role
        self.rq = rq
        self.cap = int(kv_capacity_tokens)
        self.waiting: deque = deque()
        self.order: dict = {}  # running request ids → admission counter, in admission order
        self.admissions = 0
        self.pf: list = []  # running ids with prompt work left (prefill, or recompute after preemption)
        self.dec: dict = {}  # running ids that decode one token per step
        self.fin: list = []  # heap of (tick at which a decoder finishes, admission, version, id)
        self.ticks = 0  # steps in which the decoders ran
        self.sum_base = 0  # Σ over decoders of (cached tokens − ticks)
        self.kv_used = 0  # KV tokens held by running sequences
        self.kv_reserved = 0  # KV tokens reserved by running sequences (≥ kv_used)
        self.busy = False
        self.busy_s = 0.0  # GPU-seconds some step ran (pipeline bubbles excluded)
        self.preemptions = 0
        self.log = None  # per-step time series, when recorded
        # the policy's settings, read on every step (a frozen policy: copied once)
        self._most, self._budget, self._chunk = policy.max_sequences, policy.token_budget, policy.chunk_tokens
        self._must_fit, self._lazy = policy.whole_prompt_must_fit, policy.kv_reservation == "prompt"
        self._decode_first = policy.priority == "decode-first"

    def load(self) -> int:
        """Requests running or waiting here (what a least-loaded router compares)."""
        return len(self.order) + len(self.waiting)

    def add_decoder(self, r: int):
        rq = self.rq
        rq.base[r] = rq.cached[r] - self.ticks
        rq.gbase[r] = rq.gen[r] - self.ticks
        self.dec[r] = None
        self.sum_base += rq.base[r]
        heapq.heappush(self.fin, (rq.out_n[r] - rq.gbase[r], self.order[r], rq.version[r], r))

    def drop(self, r: int) -> int:
        """Take request r out (finished, preempted or leaving); return the KV tokens it held."""
        rq = self.rq
        del self.order[r]
        self.kv_reserved -= rq.reserved[r]
        if r in self.dec:
            del self.dec[r]
            self.sum_base -= rq.base[r]
            rq.version[r] += 1
            c = rq.base[r] + self.ticks
            rq.cached[r], rq.gen[r], rq.known[r] = c, rq.gbase[r] + self.ticks, c + 1
            return c + 1
        self.pf.remove(r)
        return rq.known[r]

    def admit(self, t_s: float):
        """Move waiting requests into the batch, first come first served, while they fit."""
        rq, waiting, order = self.rq, self.waiting, self.order
        most, cap, lazy = self._most, self.cap, self._lazy
        while waiting and len(order) < most:
            r = waiting[0]
            need = rq.known[r]
            if not lazy and self.role != "prefill":
                need += max(rq.out_n[r] - rq.gen[r] - 1, 0)  # the answer's tokens, but the last
            if (self.kv_used if lazy else self.kv_reserved) + need > cap:
                break
            waiting.popleft()
            self.kv_used += rq.known[r]
            rq.reserved[r] = need
            self.kv_reserved += need
            order[r] = self.admissions
            self.admissions += 1
            if rq.admitted_s[r] != rq.admitted_s[r]:  # NaN: first admission
                rq.admitted_s[r] = t_s
            if rq.known[r] - rq.cached[r] == 1 and rq.gen[r] >= 1:
                self.add_decoder(r)
            else:
                self.pf.append(r)

    def _chunks(self, budget: int) -> list:
        """Prompt chunks for this step within ``budget`` tokens, in admission order."""
        known, cached = self.rq.known, self.rq.cached
        chunk, must_fit = self._chunk, self._must_fit
        chunks = []
        for r in self.pf:
            want = known[r] - cached[r]
            if chunk is not None:
                want = min(want, chunk, budget)
                if want <= 0:
                    break
            elif want > budget and (chunks or (must_fit and want <= self._budget)):
                break  # a whole prompt waits for a step with room (one longer than any step runs alone)
            chunks.append((r, want))
            budget -= want
            if budget <= 0:
                break
        return chunks

    def _finishing(self) -> int:
        """Decoders that emit their last token in the next step (valid finish-heap entries due by then)."""
        rq, fin, due, found = self.rq, self.fin, self.ticks + 1, []
        while fin and fin[0][0] <= due:
            e = heapq.heappop(fin)
            if e[2] == rq.version[e[3]] and e[3] in self.dec:
                found.append(e)
        for e in found:  # only counted here; they finish when the step ends
            heapq.heappush(fin, e)
        return len(found)

    def plan(self, t_s: float) -> StepWork | None:
        """Admit, then choose the next step's work (preempting while the KV cache would overflow); None if
        nothing is running."""
        self.admit(t_s)
        rq, decode_first = self.rq, self._decode_first
        while self.order:
            n_dec = len(self.dec)
            budget = self._budget - (n_dec if decode_first else 0)
            chunks = self._chunks(budget) if self.pf and budget > 0 else []
            run_dec = n_dec > 0 and (decode_first or not chunks)
            n_fin = self._finishing() if run_dec else 0
            grow = 0
            if self.role != "prefill":
                grow = (n_dec - n_fin) if run_dec else 0
                for r, k in chunks:
                    if k == rq.known[r] - rq.cached[r] and rq.gen[r] + 1 < rq.out_n[r]:
                        grow += 1
            if self.kv_used + grow <= self.cap:
                return StepWork(run_dec, chunks, n_fin)
            self.preempt_newest()
        return None

    def preempt_newest(self):
        """Recompute preemption of the most recently admitted sequence: drop its KV, requeue it first."""
        v = next(reversed(self.order))
        self.kv_used -= self.drop(v)
        self.rq.cached[v] = 0
        self.waiting.appendleft(v)
        self.preemptions += 1
