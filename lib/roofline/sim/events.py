"""The serving simulator's clock: named event kinds and the queue that orders them.

Taught in notebooks/slos_and_capacity.ipynb (why simulate per iteration, not per token).

Events are ``(time s, sequence number, kind, subject, payload)`` tuples. Two heaps hold them: *outside*
events that bring work (a request arrives; a request's KV cache reaches the decode workers) and the
workers' *own* (a step ends; a worker starts a step). Open-loop arrivals (Poisson, bursty, a trace) are
already sorted, so they are read from their array by an index instead of sitting in the heap: memory stays
bounded by the workers, not by the requests. At equal times outside events go first, so simultaneous
arrivals share a step; among outside events the earlier-issued (smaller sequence number) goes first.

>>> q = EventQueue(arrival_s=[0.0, 0.5], first_sequence=2)
>>> q.push_own(0.5, EventKind.STEP_END, 0, None)
>>> [q.pop()[1:3] for _ in range(3)]
[(<EventKind.ARRIVAL: 0>, 0), (<EventKind.ARRIVAL: 0>, 1), (<EventKind.STEP_END: 1>, 0)]
>>> q.pop() is None
True
"""

from __future__ import annotations

import heapq
from enum import IntEnum

INF = float("inf")


class EventKind(IntEnum):
    """What happens at an event; the subject is a request id or a worker index."""

    ARRIVAL = 0  # request (subject) arrives and joins a worker's queue
    STEP_END = 1  # worker (subject) finishes a step, or a run of k pure decode steps (payload: the work)
    KV_ARRIVAL = 2  # the KV cache of request (subject) reaches the decode workers
    STEP_START = 3  # worker (subject) starts a step (deferred until every other event at that time is in)


ARRIVAL = EventKind.ARRIVAL


class EventQueue:
    """Outside and own events in time order (see the module docstring).

    ``arrival_s``: the sorted arrival times (s) of requests 0, 1, 2, … of an open load, or None (a closed
    loop pushes each arrival when its client is ready). ``first_sequence``: the sequence number of the
    first pushed event (after those of the array's arrivals).
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
