"""The event loop: arrivals routed to engine replicas, engines stepping, clients reacting.

Events are ordered by (time, kind, sequence): at equal times an arrival is routed before an
engine finishes its step, so a request arriving exactly at a step boundary joins the next step.
A request reaches the engines ``request_s + request_token_s × prompt tokens`` after it arrives
(the timer's latency outside the engine: HTTP, tokenization; 0 for the roofline), so it counts
in its TTFT; a per-token part can make a short prompt that arrived later reach them first.
A router picks the replica for each arrival: ``round_robin``, ``least_outstanding`` (running +
waiting) or ``least_kv`` (KV blocks in use after the steps completed by then).

Open-loop arrivals on engines :mod:`napkin.serving.flatloop` runs (every scheduler in fast mode
without prefix caching, sliding windows or basis recording; round-robin or least-outstanding
routing, no disaggregation) take its flat loops; everything else the engine's methods, under
the heap loop here (or, for one engine, a loop without the heap). Both give the same run.
"""

import gc
import heapq
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import numpy as np

from napkin.errors import require
from napkin.serving import flatloop
from napkin.serving.arrivals import ClosedLoop, OpenLoop, Sessions
from napkin.serving.engine import Engine
from napkin.serving.request import Request
from napkin.serving.rows import packed_layout

Router = Literal["round_robin", "least_outstanding", "least_kv"]
ARRIVAL, TRANSFER, ENGINE = 0, 1, 2


@dataclass(frozen=True)
class Disaggregation:
    """Prefill/decode disaggregation: the first ``prefill_engines`` engines prefill (each
    request's prompt and its first token), the rest decode. A prefilled request's KV (prompt
    × ``kv_bytes_per_token``) leaves its prefill engine over a link of ``link_bytes_per_s``,
    one transfer at a time in finishing order, arriving ``link_latency_s`` after it has been
    sent: ``start = max(first token, link free)``, ``link free = start + bytes/bandwidth``,
    ``arrival = link free + latency``. The decode engine (least outstanding) admits it with the
    prompt's KV computed, so the handoff shows in the first inter-token gap, not in TTFT."""

    prefill_engines: int
    link_bytes_per_s: float
    link_latency_s: float
    kv_bytes_per_token: float

    def __post_init__(self) -> None:
        require(self.prefill_engines >= 1, "prefill_replicas: must be >= 1")
        require(self.link_bytes_per_s > 0, "kv_link_gbs: must be > 0")
        require(self.link_latency_s >= 0, "kv_link_latency_us: must be >= 0")


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


LOGGED = (("rid", "q"), ("label", "q"), ("engine", "q"), ("arrival_s", "d"),
          ("first_scheduled_s", "d"), ("first_token_s", "d"), ("finish_s", "d"),
          ("input_tokens", "q"), ("output_tokens", "q"), ("preemptions", "q"),
          ("queue_wait_s", "d"), ("cached_tokens", "q"))
"""The :class:`SimRecords` columns a finished request's row holds, with their ``struct`` codes
(``q``: int64, ``d``: float64)."""
ROW, ROW_DTYPE = packed_layout(LOGGED)
"""One finished request's row, packed (96 bytes, :mod:`napkin.serving.rows`), and its numpy
record type."""


class _Log:
    """Finished requests' rows packed into one growing buffer (:data:`ROW`, 96 bytes a
    request)."""

    __slots__ = ("rows", "tpot_basis", "ttft_basis")

    def __init__(self) -> None:
        self.rows = bytearray()
        self.ttft_basis: list[np.ndarray] = []
        self.tpot_basis: list[np.ndarray] = []

    def add(self, r: Request, engine: int) -> None:
        self.rows += ROW.pack(r.rid, r.label, engine, r.arrival_s, r.first_scheduled_s,
                              r.first_token_s, r.finish_s, r.prompt, r.max_out, r.preemptions,
                              r.queue_wait_s, r.hit_tokens)
        if r.basis_finish is not None:
            self.ttft_basis.append(r.basis_first - r.basis_arrival)
            self.tpot_basis.append((r.basis_finish - r.basis_first) / max(r.max_out - 1, 1))

    def records(self) -> SimRecords:
        """The columns as numpy arrays, each a strided view of the packed rows (no copy: the
        log is done)."""
        rows = np.frombuffer(self.rows, dtype=ROW_DTYPE)
        columns = {name: rows[name] for name, _ in LOGGED}
        if self.ttft_basis:
            return SimRecords(**columns, ttft_basis=np.array(self.ttft_basis),
                              tpot_basis=np.array(self.tpot_basis))
        return SimRecords(**columns)


TYPED = {"d": np.float64, "i": np.int32, "q": np.int64}
"""Typed-array codes of the open-loop columns and their numpy types (token counts are at most
``MAX_REQUEST_TOKENS`` = 10⁸ < 2³¹, so 32 bits hold them)."""


def _typed(code: str, values: np.ndarray) -> array:
    """A numpy column as a typed array (``d``: float64, ``i``: int32, ``q``: int64)."""
    out = array(code)
    out.frombytes(np.ascontiguousarray(values, dtype=TYPED[code]).tobytes())
    return out


class _OpenFeed:
    """Open-loop arrivals in arrival order: the loop reads ``times`` (when each reaches the
    engines) with a cursor instead of queueing them as events, and ``take`` builds the request
    (columns copied to typed arrays, 20–28 bytes a request: indexing numpy arrays one element at
    a time is several times slower, and a list of Python numbers takes four times the
    memory)."""

    def __init__(self, src: OpenLoop, delay_s: float, token_delay_s: float = 0.0) -> None:
        reqs = src.requests
        self.n = len(reqs)
        self.labels = tuple(reqs.labels)
        reach = reqs.arrival_s + delay_s + token_delay_s * reqs.input_tokens
        # a per-prompt-token delay can reorder arrivals: the cursor reads them as they reach
        order = np.argsort(reach, kind="stable") if token_delay_s else None
        if order is not None and bool((order == np.arange(self.n)).all()):
            order = None
        pick = (lambda a: a) if order is None else (lambda a: a[order])
        self.rid = None if order is None else _typed("q", order)
        """The request id of each position, where the delays reordered them (else its index)."""
        self.arrival_s = _typed("d", pick(reqs.arrival_s))
        self.times = _typed("d", pick(reach)) if delay_s or token_delay_s else self.arrival_s
        self.inputs = _typed("i", pick(reqs.input_tokens))
        self.outputs = _typed("i", pick(reqs.output_tokens))
        self.label = _typed("i", pick(reqs.label))
        self.hashes, self.hash_block_tokens = reqs.prefix_hashes, reqs.hash_block_tokens
        if order is not None and self.hashes is not None:
            self.hashes = [self.hashes[k] for k in order]
        self.shared = src.shared_prefix
        self.named = self.hashes is not None or any(self.shared)
        """Some request names its blocks for the prefix cache (else :meth:`take` skips that)."""

    def first(self) -> list[tuple[float, object]]:
        return []

    def take(self, payload: object) -> Request:
        """The request of arrival ``payload`` (its index: both loops pass their cursor)."""
        i: int = payload  # type: ignore[assignment]  # (an int: no int() call a request)
        label = self.label[i]
        rid = i if self.rid is None else self.rid[i]
        if not self.named:
            return Request(rid, self.arrival_s[i], self.inputs[i], self.outputs[i], label)
        key = None
        if self.hashes is not None and self.hashes[i]:
            key = ("src", self.hashes[i], self.hash_block_tokens)
        elif self.shared[label]:
            key = ("shared", self.labels[label], self.shared[label])
        return Request(rid, self.arrival_s[i], self.inputs[i], self.outputs[i], label, key)

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

    def take(self, payload: object) -> Request:
        assert isinstance(payload, Request)  # events of this feed carry requests
        return payload

    def finished(self, req: Request, t: float) -> list[tuple[float, object]]:
        new = self.src.on_finish(req, t, self.next_rid)
        if new is None:
            return []
        self.next_rid += 1
        return [(new.arrival_s, new)]


def _route(engines: list[Engine], router: Router, t: float, counter: int) -> int:
    if router == "round_robin":
        return counter % len(engines)
    if router == "least_outstanding":  # the first of the least loaded, as min() picks
        best, least = 0, engines[0].outstanding
        for k in range(1, len(engines)):
            load = engines[k].outstanding
            if load < least:
                best, least = k, load
        return best
    return min(range(len(engines)),
               key=lambda k: engines[k].blocks_in_use_at(t) / engines[k].spec.num_blocks)


def simulate(engines: list[Engine], source: OpenLoop | ClosedLoop | Sessions,
             router: Router = "round_robin",
             progress: Callable[[float, int], None] | None = None,
             stop: Callable[[Request], bool] | None = None,
             disagg: Disaggregation | None = None) -> SimRun:
    """Run every request of ``source`` through ``engines`` to completion, or until ``stop``
    (called with each finished request) returns True; with ``disagg``, through a prefill and a
    decode pool."""
    require(len(engines) >= 1, "replicas: need at least one engine")
    n_pre = disagg.prefill_engines if disagg else 0
    require(n_pre < len(engines), "decode_replicas: must be >= 1")
    require(router in ("round_robin", "least_outstanding", "least_kv"),
            f"router: must be round_robin, least_outstanding or least_kv, got {router!r}")
    timer = engines[0].timer
    feed = (_OpenFeed(source, timer.request_s, timer.request_token_s)
            if isinstance(source, OpenLoop) else _ClientFeed(source))
    with _collection_paused():
        if (isinstance(feed, _OpenFeed) and not disagg and router != "least_kv"
                and all(flatloop.applies(e) for e in engines)):
            return _flat(engines, feed, router, progress, stop)
        if len(engines) == 1 and isinstance(feed, _OpenFeed):
            return _one_engine(engines[0], feed, progress, stop)
        return _event_loop(engines, feed, router, progress, stop, disagg)


def _flat(engines: list[Engine], feed: _OpenFeed, router: Router,
          progress: Callable[[float, int], None] | None,
          stop: Callable[[Request], bool] | None) -> SimRun:
    """:func:`simulate` of open-loop arrivals on engines :mod:`napkin.serving.flatloop` runs
    (round-robin or least-outstanding routing)."""
    log = _Log()
    if len(engines) == 1:
        stopped = flatloop.run_one(engines[0], feed, log, progress, stop)
    else:
        stopped = flatloop.run_many(engines, feed, lambda es, k: _route(es, router, 0.0, k),
                                    log, progress, stop)
    return SimRun(log.records(), tuple(engines), feed.labels, stopped=stopped)


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the run, as it was after. The loops make no
    reference cycles, but every request they hold is a tracked object, so each full collection
    walks the whole backlog of an overloaded engine: 8–20 % of a 300,000-request run under the
    vLLM profile (benchmarks/serve_speed.py's workload)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _event_loop(engines: list[Engine], feed: "_OpenFeed | _ClientFeed", router: Router,
                progress: Callable[[float, int], None] | None,
                stop: Callable[[Request], bool] | None,
                disagg: Disaggregation | None) -> SimRun:
    """:func:`simulate` in general: engine units and client arrivals as heap events
    (``(time, kind, sequence)`` order), open-loop arrivals read by a cursor."""
    n_pre = disagg.prefill_engines if disagg else 0
    front = engines[:n_pre] if disagg else engines
    back = engines[n_pre:]
    link_free = [0.0] * n_pre
    outputs: dict[int, int] = {}  # disaggregated: a request's max_out while it prefills
    delay, token_delay = engines[0].timer.request_s, engines[0].timer.request_token_s
    heap: list[tuple[float, int, int, object]] = []
    seq = 0
    version = [0] * len(engines)  # an engine event is stale once its version moved on
    waking = [False] * len(engines)
    log = _Log()
    routed = finished = 0
    # open-loop arrivals: a cursor into their times (an arrival precedes any event of its instant)
    times, n_open, cursor = ((feed.times, feed.n, 0) if isinstance(feed, _OpenFeed)
                             else (array("d"), 0, 0))

    def push(t: float, kind: int, payload: object) -> None:
        nonlocal seq
        heapq.heappush(heap, (t, kind, seq, payload))
        seq += 1

    def reach(t: float, req: object) -> float:  # when a client's request reaches the engines
        return t + delay + token_delay * req.prompt  # type: ignore[attr-defined]

    for t, payload in feed.first():
        push(reach(t, payload), ARRIVAL, payload)
    while True:
        if cursor < n_open and (not heap or times[cursor] <= heap[0][0]):
            t, kind, payload = times[cursor], ARRIVAL, cursor
            cursor += 1
        elif heap:
            t, kind, _, payload = heapq.heappop(heap)
        else:
            break
        if kind != ENGINE:
            if kind == ARRIVAL:
                req = feed.take(payload)
                i = _route(front, router, t, routed)
                routed += 1
                if disagg and req.max_out > 1:
                    outputs[req.rid] = req.max_out
                    req.max_out = 1
            else:  # a prefilled request's KV reached the decode pool
                req = payload  # type: ignore[assignment]
                req.max_out = outputs.pop(req.rid)
                req.computed, req.transferred, req.hashed, req.reserved = 0, req.prompt, [], 0
                i = n_pre + _route(back, "least_outstanding", t, 0)
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
            if i < n_pre and req.rid in outputs:  # prefilled: send its KV to decode
                assert disagg is not None
                begin = max(engine.clock, link_free[i])
                link_free[i] = begin + req.prompt * disagg.kv_bytes_per_token / \
                    disagg.link_bytes_per_s
                push(link_free[i] + disagg.link_latency_s, TRANSFER, req)
                continue
            log.add(req, i)
            finished += 1
            if stop is not None and stop(req):
                return SimRun(log.records(), tuple(engines), feed.labels, stopped=True)
            for t_next, p in feed.finished(req, engine.clock):
                push(reach(t_next, p), ARRIVAL, p)
        if progress is not None:
            progress(engine.clock, finished)
        if engine.has_work():
            version[i] += 1
            plan = engine.plan_next()
            if plan is not None:  # (push, inline: once a unit)
                heapq.heappush(heap, (plan.end_s, ENGINE, seq, (i, version[i])))
                seq += 1
    return SimRun(log.records(), tuple(engines), feed.labels)


def _one_engine(engine: Engine, feed: _OpenFeed,
                progress: Callable[[float, int], None] | None,
                stop: Callable[[Request], bool] | None) -> SimRun:
    """:func:`simulate` of open-loop arrivals on one engine, without an event heap: the next
    event is the earlier of the next arrival and the end of the engine's unit in flight (an
    arrival first at equal times, as the heap orders them; an idle engine woken by an arrival
    starts its unit at that instant, after the arrivals of the instant)."""
    log = _Log()
    finished = 0
    times, n, cursor = feed.times, feed.n, 0
    wake = -1.0  # an idle engine's start, once an arrival woke it (< 0: not woken)
    inf = float("inf")
    while True:
        plan = engine.plan
        due = plan.end_s if plan is not None else (wake if wake >= 0 else inf)
        if cursor < n and times[cursor] <= due:
            t = times[cursor]
            req = feed.take(cursor)
            cursor += 1
            engine.add(req, t)
            if plan is None and wake < 0:
                engine.clock = max(engine.clock, t)
                wake = t
            continue
        if due == inf:
            break
        wake = -1.0
        for req in engine.commit():
            log.add(req, 0)
            finished += 1
            if stop is not None and stop(req):
                return SimRun(log.records(), (engine,), feed.labels, stopped=True)
        if progress is not None:
            progress(engine.clock, finished)
        if engine.has_work():
            engine.plan_next()
    return SimRun(log.records(), (engine,), feed.labels)
