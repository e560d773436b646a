"""The event loop: arrivals routed to engine replicas, engines stepping, clients reacting.

Events are ordered by (time, kind, sequence): at equal times an arrival is routed before an
engine finishes its step, so a request arriving exactly at a step boundary joins the next step.
A request reaches the engines ``request_s`` after it arrives (the timer's per-request latency
outside the engine: HTTP, tokenization; 0 for the roofline), so it counts in its TTFT.
A router picks the replica for each arrival: ``round_robin``, ``least_outstanding`` (running +
waiting) or ``least_kv`` (KV blocks in use after the steps completed by then).
"""

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from napkin.errors import require
from napkin.serving.arrivals import ClosedLoop, OpenLoop, Sessions
from napkin.serving.engine import Engine
from napkin.serving.request import Request

Router = Literal["round_robin", "least_outstanding", "least_kv"]
ARRIVAL, ENGINE = 0, 1


@dataclass(frozen=True)
class SimRecords:
    """One row per finished request (arrays), in finishing order."""

    rid: np.ndarray
    label: np.ndarray
    engine: np.ndarray
    arrival_s: np.ndarray
    first_scheduled_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    preemptions: np.ndarray
    queue_wait_s: np.ndarray
    cached_tokens: np.ndarray
    ttft_basis: np.ndarray | None = None
    """Recording engines: per request, the step-time basis summed from arrival to first token
    (rows × terms of :data:`napkin.calibration.basis.TERMS`); TTFT = request_s + this · c."""
    tpot_basis: np.ndarray | None = None
    """Recording engines: the basis summed from first token to finish over (output − 1)."""


@dataclass(frozen=True)
class SimRun:
    """What a simulation produced: per-request records, the engines, the class names."""

    records: SimRecords
    engines: tuple[Engine, ...]
    labels: tuple[str, ...]
    stopped: bool = False
    """True when ``stop`` ended the run early (the records hold the requests finished so far)."""


class _Log:
    __slots__ = ("cols", "tpot_basis", "ttft_basis")

    def __init__(self) -> None:
        self.cols: list[list] = [[] for _ in range(12)]
        self.ttft_basis: list[np.ndarray] = []
        self.tpot_basis: list[np.ndarray] = []

    def add(self, r: Request, engine: int) -> None:
        for col, value in zip(self.cols, (
                r.rid, r.label, engine, r.arrival_s, r.first_scheduled_s, r.first_token_s,
                r.finish_s, r.prompt, r.max_out, r.preemptions, r.queue_wait_s, r.hit_tokens),
                strict=True):
            col.append(value)
        if r.basis_finish is not None:
            self.ttft_basis.append(r.basis_first - r.basis_arrival)
            self.tpot_basis.append((r.basis_finish - r.basis_first) / max(r.max_out - 1, 1))

    def records(self) -> SimRecords:
        ints = {0, 1, 2, 7, 8, 9, 11}
        arrays = [np.asarray(c, dtype=np.int64 if i in ints else np.float64)
                  for i, c in enumerate(self.cols)]
        if self.ttft_basis:
            return SimRecords(*arrays, np.array(self.ttft_basis), np.array(self.tpot_basis))
        return SimRecords(*arrays)


class _OpenFeed:
    """Open-loop arrivals, materialized one at a time in arrival order."""

    def __init__(self, src: OpenLoop) -> None:
        self.src, self.n = src, len(src.requests)
        self.labels = tuple(src.requests.labels)

    def first(self) -> list[tuple[float, object]]:
        return [(float(self.src.requests.arrival_s[0]), 0)] if self.n else []

    def take(self, payload: object) -> tuple[Request, list[tuple[float, object]]]:
        """The request behind an arrival event, and the next arrival to queue."""
        i = int(payload)  # type: ignore[call-overload]
        reqs = self.src.requests
        label = int(reqs.label[i])
        key = None
        if reqs.prefix_hashes is not None and reqs.prefix_hashes[i]:
            key = ("src", reqs.prefix_hashes[i], reqs.hash_block_tokens)
        elif self.src.shared_prefix[label]:
            key = ("shared", reqs.labels[label], self.src.shared_prefix[label])
        req = Request(i, float(reqs.arrival_s[i]), int(reqs.input_tokens[i]),
                      int(reqs.output_tokens[i]), label, key)
        nxt = [(float(reqs.arrival_s[i + 1]), i + 1)] if i + 1 < self.n else []
        return req, nxt

    def finished(self, req: Request, t: float) -> list[tuple[float, object]]:
        return []


class _ClientFeed:
    """Closed-loop clients or sessions: a finish may send the client's next request."""

    def __init__(self, src: ClosedLoop | Sessions) -> None:
        self.src = src
        self.labels = tuple(src.names)
        self.next_rid = 0

    def first(self) -> list[tuple[float, object]]:
        reqs = self.src.start(0)
        self.next_rid = max((r.rid for r in reqs), default=-1) + 1
        return [(r.arrival_s, r) for r in reqs]

    def take(self, payload: object) -> tuple[Request, list[tuple[float, object]]]:
        assert isinstance(payload, Request)  # events of this feed carry requests
        return payload, []

    def finished(self, req: Request, t: float) -> list[tuple[float, object]]:
        new = self.src.on_finish(req, t, self.next_rid)
        if new is None:
            return []
        self.next_rid += 1
        return [(new.arrival_s, new)]


def _route(engines: list[Engine], router: Router, t: float, counter: int) -> int:
    if router == "round_robin":
        return counter % len(engines)
    if router == "least_outstanding":
        return min(range(len(engines)), key=lambda k: engines[k].outstanding)
    return min(range(len(engines)),
               key=lambda k: engines[k].blocks_in_use_at(t) / engines[k].spec.num_blocks)


def simulate(engines: list[Engine], source: OpenLoop | ClosedLoop | Sessions,
             router: Router = "round_robin",
             progress: Callable[[float, int], None] | None = None,
             stop: Callable[[Request], bool] | None = None) -> SimRun:
    """Run every request of ``source`` through ``engines`` to completion, or until ``stop``
    (called with each finished request) returns True."""
    require(len(engines) >= 1, "replicas: need at least one engine")
    require(router in ("round_robin", "least_outstanding", "least_kv"),
            f"router: must be round_robin, least_outstanding or least_kv, got {router!r}")
    feed = _OpenFeed(source) if isinstance(source, OpenLoop) else _ClientFeed(source)
    heap: list[tuple[float, int, int, object]] = []
    seq = 0
    version = [0] * len(engines)  # an engine event is stale once its version moved on
    waking = [False] * len(engines)
    log = _Log()
    routed = finished = 0
    delay = engines[0].timer.request_s

    def push(t: float, kind: int, payload: object) -> None:
        nonlocal seq
        heapq.heappush(heap, (t, kind, seq, payload))
        seq += 1

    for t, payload in feed.first():
        push(t + delay, ARRIVAL, payload)
    while heap:
        t, kind, _, payload = heapq.heappop(heap)
        if kind == ARRIVAL:
            req, more = feed.take(payload)
            for t_next, p in more:
                push(t_next + delay, ARRIVAL, p)
            i = _route(engines, router, t, routed)
            routed += 1
            engine = engines[i]
            idle = engine.plan is None
            steps_before = engine.plan.steps if engine.plan is not None else 0
            engine.add(req, t)
            if idle and not waking[i]:
                # start at t, after every arrival of the same instant has been routed
                engine.clock = max(engine.clock, t)
                waking[i] = True
                version[i] += 1
                push(t, ENGINE, (i, version[i]))
            elif engine.plan is not None and engine.plan.steps != steps_before:
                version[i] += 1  # the decode run was cut short at the next boundary
                push(engine.plan.end_s, ENGINE, (i, version[i]))
            continue
        i, v = payload  # type: ignore[misc]
        if v != version[i]:
            continue
        engine = engines[i]
        waking[i] = False
        for req in engine.commit():
            log.add(req, i)
            finished += 1
            if stop is not None and stop(req):
                return SimRun(log.records(), tuple(engines), feed.labels, stopped=True)
            for t_next, p in feed.finished(req, engine.clock):
                push(t_next + delay, ARRIVAL, p)
        if progress is not None:
            progress(engine.clock, finished)
        if engine.has_work():
            version[i] += 1
            plan = engine.plan_next()
            if plan is not None:
                push(plan.end_s, ENGINE, (i, version[i]))
    return SimRun(log.records(), tuple(engines), feed.labels)
