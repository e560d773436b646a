"""The loops that drive engines' schedulers (:func:`napkin.serving.scheduler.process`).

:func:`run_one` runs one engine on open-loop arrivals without an event heap: its coroutine reads
the arrivals itself. :func:`run_events` runs several (and client arrivals, the KV transfers of
a disaggregated pool) on one heap of ``(time, kind, push order, engine, payload)`` entries:
at equal times arrivals precede KV transfers precede engine units, each kind in its push order, and
an open-loop arrival, read by a cursor, precedes every event of its instant.
"""

import heapq
from collections.abc import Callable, Sequence

from napkin.serving.engine import Engine
from napkin.serving.request import Request
from napkin.serving.scheduler import ARRIVED, DUE, Feed, Sink
from napkin.serving.specialise import specialised

ARRIVAL, TRANSFER, ENGINE = 0, 1, 2
"""Event kinds of :func:`run_events`, in their order at equal times."""


def run_one(engine: Engine, feed: Feed, sink: Sink,
            progress: Callable[[float, int], None] | None) -> bool:
    """Every request of ``feed`` through one ``engine``; True when the sink ended the run
    early."""
    gen = specialised(engine, False, feed.n)(engine, feed, True, 0, sink, progress)
    try:
        next(gen)
    except StopIteration as end:
        return end.value
    raise AssertionError("a coroutine given its feed does not yield")


class Events:
    """The event heap of :func:`run_events` (see the module docstring); ``seq`` counts the
    arrivals and transfers pushed (engine units keep their own count)."""

    __slots__ = ("heap", "seq")

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, int, int, object]] = []
        self.seq = 0

    def push(self, t: float, kind: int, payload: object) -> None:
        """A request arriving (``ARRIVAL``) or its KV reaching the decode pool (``TRANSFER``)."""
        heapq.heappush(self.heap, (t, kind, self.seq, -1, payload))
        self.seq += 1


def run_events(engines: Sequence[Engine], feed: Feed | None, events: Events,
               route: Callable[[float, int], int],
               admit: Callable[[float, int, object], tuple[int, Request]], sink: Sink,
               progress: Callable[[float, int], None] | None, sync: bool = False,
               direct: bool = True) -> bool:
    """Every request through ``engines`` on one event heap: open-loop arrivals of ``feed`` read
    by a cursor (each before any event of its instant) and, ``direct``, routed by ``route(t,
    arrivals routed so far)`` and taken from the feed by the engine's coroutine; the other
    arrivals (the feed's when not ``direct``, and the events ``events`` holds and the sink
    pushes: client requests, KV transfers) placed by ``admit(t, kind, payload)`` → (engine,
    request); the engines' due instants. True when the sink ended the run early."""
    requests = feed.n if feed is not None else 0
    gens = [specialised(e, sync, requests if i == 0 else 0)(e, feed, False, i, sink, progress,
                                                             sync)
            for i, e in enumerate(engines)]
    times, n, cursor = (feed.times, feed.n, 0) if feed is not None else ((), 0, 0)
    heap = events.heap
    heappush, heappop = heapq.heappush, heapq.heappop
    version = [0] * len(engines)  # an entry is stale once its engine's version moved on
    seq = 0  # engine units' push order (their own: an entry of another kind never ties one)
    inf, unit = float("inf"), ENGINE
    try:
        dues = [next(g) for g in gens]
        while True:
            if cursor < n and (not heap or times[cursor] <= heap[0][0]):
                t = times[cursor]
                if direct:  # the coroutine takes the request from the feed itself
                    i = route(t, cursor)
                    due = gens[i].send(cursor)
                else:
                    i, req = admit(t, ARRIVAL, cursor)
                    engines[i].arriving = (t, req)
                    due = gens[i].send(ARRIVED)
                cursor += 1
            elif not heap:
                return False
            else:
                t, kind, _, i, payload = heappop(heap)
                if kind == unit:
                    if payload != version[i]:
                        continue
                    due = dues[i] = gens[i].send(DUE)
                    if due < 0:
                        return True
                    if due != inf:
                        version[i] += 1
                        heappush(heap, (due, unit, seq, i, version[i]))
                        seq += 1
                    continue
                i, req = admit(t, kind, payload)
                engines[i].arriving = (t, req)
                due = gens[i].send(ARRIVED)
            if due != dues[i]:  # woken, or its decode run cut short
                dues[i] = due
                version[i] += 1
                heappush(heap, (due, unit, seq, i, version[i]))
                seq += 1
    finally:
        for g in gens:
            g.close()
