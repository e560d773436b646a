"""The event loop: arrivals routed to engine replicas, engines stepping, clients reacting.

Events are ordered by (time, kind, sequence): at equal times an arrival is routed before an
engine finishes its step, so a request arriving exactly at a step boundary joins the next step.
A router picks the replica for each arrival: ``round_robin``, ``least_outstanding`` (running +
waiting) or ``least_kv`` (KV blocks in use after the steps completed by then).
"""

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from napkin.errors import require
from napkin.serving.engine import Engine
from napkin.serving.request import Request
from napkin.serving.workload import ClosedLoop, OpenLoop, Sessions

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


@dataclass(frozen=True)
class SimRun:
    """What a simulation produced: per-request records, the engines, the class names."""

    records: SimRecords
    engines: tuple[Engine, ...]
    labels: tuple[str, ...]


class _Log:
    __slots__ = ("cols",)

    def __init__(self) -> None:
        self.cols: list[list] = [[] for _ in range(12)]

    def add(self, r: Request, engine: int) -> None:
        for col, value in zip(self.cols, (
                r.rid, r.label, engine, r.arrival_s, r.first_scheduled_s, r.first_token_s,
                r.finish_s, r.prompt, r.max_out, r.preemptions, r.queue_wait_s, r.hit_tokens),
                strict=True):
            col.append(value)

    def records(self) -> SimRecords:
        ints = {0, 1, 2, 7, 8, 9, 11}
        arrays = [np.asarray(c, dtype=np.int64 if i in ints else np.float64)
                  for i, c in enumerate(self.cols)]
        return SimRecords(*arrays)


def _open_request(src: OpenLoop, i: int) -> Request:
    reqs = src.requests
    label = int(reqs.label[i])
    key = None
    if reqs.prefix_hashes is not None and reqs.prefix_hashes[i]:
        key = ("src", reqs.prefix_hashes[i], reqs.hash_block_tokens)
    elif src.shared_prefix[label]:
        key = ("shared", reqs.labels[label], src.shared_prefix[label])
    return Request(i, float(reqs.arrival_s[i]), int(reqs.input_tokens[i]),
                   int(reqs.output_tokens[i]), label, key)


def simulate(engines: list[Engine], source: OpenLoop | ClosedLoop | Sessions,
             router: Router = "round_robin",
             progress: Callable[[float, int], None] | None = None) -> SimRun:
    """Run every request of ``source`` through ``engines`` to completion."""
    require(len(engines) >= 1, "replicas: need at least one engine")
    require(router in ("round_robin", "least_outstanding", "least_kv"),
            f"router: must be round_robin, least_outstanding or least_kv, got {router!r}")
    heap: list[tuple[float, int, int, object]] = []
    seq = 0
    version = [0] * len(engines)
    waking = [False] * len(engines)
    where: dict[int, int] = {}
    log = _Log()
    rr = 0
    next_rid = 0

    def push(t: float, kind: int, payload: object) -> None:
        nonlocal seq
        heapq.heappush(heap, (t, kind, seq, payload))
        seq += 1

    def schedule(i: int) -> None:
        version[i] += 1
        plan = engines[i].plan_next()
        if plan is not None:
            push(plan.end_s, ENGINE, (i, version[i]))

    open_loop = isinstance(source, OpenLoop)
    n_open = len(source.requests) if isinstance(source, OpenLoop) else 0
    if isinstance(source, OpenLoop):
        if n_open:
            push(float(source.requests.arrival_s[0]), ARRIVAL, 0)
        next_rid = n_open
    else:
        for req in source.start(0):
            push(req.arrival_s, ARRIVAL, req)
            next_rid = max(next_rid, req.rid + 1)

    finished = 0
    while heap:
        t, kind, _, payload = heapq.heappop(heap)
        if kind == ARRIVAL:
            if open_loop:
                i = payload  # type: ignore[assignment]
                req = _open_request(source, i)  # type: ignore[arg-type]
                if i + 1 < n_open:
                    push(float(source.requests.arrival_s[i + 1]),  # type: ignore[union-attr]
                         ARRIVAL, i + 1)
            else:
                req = payload  # type: ignore[assignment]
            if router == "round_robin":
                target = rr % len(engines)
                rr += 1
            elif router == "least_outstanding":
                target = min(range(len(engines)), key=lambda k: engines[k].outstanding)
            else:
                target = min(range(len(engines)), key=lambda k: (
                    engines[k].blocks_in_use_at(t) / engines[k].spec.num_blocks))
            engine = engines[target]
            where[req.rid] = target
            idle = engine.plan is None
            before = engine.plan.steps if engine.plan is not None else 0
            engine.add(req, t)
            if idle and not waking[target]:
                # start at t, after every arrival of the same instant has been routed
                engine.clock = max(engine.clock, t)
                waking[target] = True
                version[target] += 1
                push(t, ENGINE, (target, version[target]))
            elif engine.plan is not None and engine.plan.steps != before:
                version[target] += 1
                push(engine.plan.end_s, ENGINE, (target, version[target]))
            continue
        i, v = payload  # type: ignore[misc]
        if v != version[i]:
            continue
        engine = engines[i]
        waking[i] = False
        for req in engine.commit():
            log.add(req, i)
            finished += 1
            if not open_loop:
                new = source.on_finish(req, engine.clock, next_rid)  # type: ignore[union-attr]
                if new is not None:
                    next_rid += 1
                    push(new.arrival_s, ARRIVAL, new)
        if progress is not None:
            progress(engine.clock, finished)
        if engine.has_work():
            schedule(i)
    labels = tuple(source.requests.labels) if isinstance(source, OpenLoop) else tuple(
        source.names)
    return SimRun(log.records(), tuple(engines), labels)
