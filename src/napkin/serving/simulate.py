"""The event loop: arrivals routed to engine replicas, engines stepping, clients reacting.

Events are ordered by (time, kind, sequence): at equal times an arrival is routed before an
engine finishes its step, so a request arriving exactly at a step boundary joins the next step.
A request reaches the engines ``request_s + request_token_s × prompt tokens`` after it arrives
(the timer's latency outside the engine: HTTP, tokenization; 0 for the roofline), so it counts
in its TTFT; a per-token part can make a short prompt that arrived later reach them first.
A router picks the replica for each arrival: ``round_robin``, ``least_outstanding`` (running +
waiting) or ``least_kv`` (KV blocks in use after the steps completed by then).

Every engine runs the one scheduler (:mod:`napkin.serving.scheduler`): one engine on
open-loop arrivals without an event heap, anything else (replicas, client feeds, a
disaggregated pool) on one heap of arrivals, KV transfers and engine units.
"""

import copy
import gc
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import numpy as np

from napkin.errors import NapkinError, require
from napkin.serving import compiled
from napkin.serving.arrivals import ClosedLoop, OpenLoop, Sessions
from napkin.serving.engine import Engine
from napkin.serving.events import ARRIVAL, TRANSFER, Events, run_events, run_one
from napkin.serving.request import Request
from napkin.serving.rows import LOGGED, ROW, ROW_DTYPE, merged_by_finish

Router = Literal["round_robin", "least_outstanding", "least_kv"]


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


class Log:
    """Finished requests' rows packed into one growing buffer (:data:`ROW`, 96 bytes a
    request), counted; ``stop`` (called with each) may end the run."""

    __slots__ = ("count", "rows", "stop", "tpot_basis", "ttft_basis")

    def __init__(self, stop: Callable[[Request], bool] | None = None) -> None:
        self.rows = bytearray()
        self.count = 0
        self.stop = stop
        self.ttft_basis: list[np.ndarray] = []
        self.tpot_basis: list[np.ndarray] = []

    def add(self, r: Request, engine: int) -> bool:
        """Log ``r``, finished by ``engine``; True when ``stop`` ends the run there."""
        self.rows += ROW.pack(r.rid, r.label, engine, r.arrival_s, r.first_scheduled_s,
                              r.first_token_s, r.finish_s, r.prompt, r.max_out, r.preemptions,
                              r.queue_wait_s, r.hit_tokens)
        if r.basis_finish is not None:
            self.ttft_basis.append(r.basis_first - r.basis_arrival)
            self.tpot_basis.append((r.basis_finish - r.basis_first) / max(r.max_out - 1, 1))
        self.count += 1
        return self.stop is not None and self.stop(r)

    def extend(self, rows: np.ndarray) -> None:
        """Log finished requests given as :data:`ROW_DTYPE` records in finishing order, as
        :meth:`add` logs each (an empty log keeps the array itself: no copy)."""
        if self.count:
            self.rows += memoryview(rows).cast("B")
        else:
            self.rows = rows  # type: ignore[assignment]  # (read back by np.frombuffer)
        self.count += len(rows)

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


class OpenFeed:
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


class ClientFeed:
    """Closed-loop clients or sessions: a finish may send the client's next request."""

    def __init__(self, src: ClosedLoop | Sessions, delay_s: float, token_delay_s: float) -> None:
        self.src = src
        self.labels = tuple(src.names)
        self.next_rid = 0
        self.delay_s, self.token_delay_s = delay_s, token_delay_s
        """The latency outside the engines: a request sent at t reaches them at t + delay_s +
        token_delay_s × its prompt tokens."""

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
    feed = (OpenFeed(source, timer.request_s, timer.request_token_s)
            if isinstance(source, OpenLoop)
            else ClientFeed(source, timer.request_s, timer.request_token_s))
    with _collection_paused():
        if isinstance(feed, OpenFeed) and len(engines) == 1:
            log = Log(stop)
            if compiled.takes(engines[0], feed, stop):
                rows, stopped = compiled.run(engines[0], feed, stop, progress)  # type: ignore
                log.extend(rows)
                return SimRun(log.records(), tuple(engines), feed.labels, stopped=stopped)
            stopped = run_one(engines[0], feed, log, progress)
            return SimRun(log.records(), tuple(engines), feed.labels, stopped=stopped)
        if (isinstance(feed, OpenFeed) and router == "round_robin" and disagg is None
                and stop is None and compiled.takes_replicas(engines, feed)):
            rows = compiled.run_replicas(engines, feed, progress)
            if rows is not None:
                log = Log()
                log.extend(rows)
                return SimRun(log.records(), tuple(engines), feed.labels)
        if (isinstance(feed, OpenFeed) and router == "round_robin" and disagg is None
                and stop is None and len(engines) > 1
                and all(e.frontend is None for e in engines)):
            run = _replicas_alone(engines, feed, progress)
            if run is not None:
                return run
        if (isinstance(feed, OpenFeed) and router in ("least_outstanding", "least_kv")
                and disagg is None and compiled.takes_routed(engines, feed, stop)):
            rows, stopped = compiled.run_routed(engines, feed, stop,  # type: ignore[arg-type]
                                                router == "least_kv", progress)
            log = Log(stop)
            log.extend(rows)
            return SimRun(log.records(), tuple(engines), feed.labels, stopped=stopped)
        return _on_events(engines, feed, router, progress, stop, disagg)


class _Share:
    """Replica ``e``'s share of ``k`` round-robin replicas' open-loop arrivals (arrival i goes
    to replica i mod k): its arrivals' times, and ``take`` of the whole feed's."""

    __slots__ = ("e", "feed", "k", "n", "times")

    def __init__(self, feed: OpenFeed, e: int, k: int) -> None:
        self.feed, self.e, self.k = feed, e, k
        self.times = feed.times[e::k]
        self.n = len(self.times)

    def take(self, j: int) -> Request:
        return self.feed.take(self.e + self.k * j)


def _replicas_alone(engines: list[Engine], feed: OpenFeed,
                    progress: Callable[[float, int], None] | None) -> SimRun | None:
    """Round-robin replicas each run alone on its share of the arrivals (which replica an
    arrival reaches does not depend on their state): one engine's loop each, no event heap,
    the logs merged by finishing time (:func:`~napkin.serving.rows.merged_by_finish`);
    ``progress`` as each runs, the earlier replicas' requests added. None, with every engine
    as it was, where two replicas finish a request at the same instant, a replica refuses a
    request or their logs disagree on recording (the caller runs the heap)."""
    k = len(engines)
    saved = [copy.deepcopy(e, {id(x): x for x in (e.model, e.acc, e.precision, e.eff, e.spec,
                                                  e.timer, e.cost, e.policy, e.basis)})
             for e in engines]  # (their immutable parts shared)
    logs: list[Log] = []
    try:
        for e, engine in enumerate(engines):
            base = sum(log.count for log in logs)
            logs.append(Log())
            run_one(engine, _Share(feed, e, k), logs[-1], None if progress is None else (
                lambda t, finished, base=base: progress(t, base + finished)))
    except NapkinError:  # a request refused: the heap refuses the first to arrive, with its id
        merged = None
    else:
        parts = []
        for e, log in enumerate(logs):
            rows = np.frombuffer(log.rows, dtype=ROW_DTYPE).copy()
            rows["engine"] = e
            parts.append(rows)
        merged = merged_by_finish(parts)
    recorded = [len(log.ttft_basis) for log in logs]
    every_or_none = not any(recorded) or recorded == [log.count for log in logs]
    if merged is None or not every_or_none:
        for engine, fresh in zip(engines, saved, strict=True):
            vars(engine).clear()
            vars(engine).update(vars(fresh))
        return None
    rows, order = merged
    log = Log()
    log.extend(rows)
    if any(recorded):
        ttft = [b for one in logs for b in one.ttft_basis]
        tpot = [b for one in logs for b in one.tpot_basis]
        log.ttft_basis = [ttft[i] for i in order.tolist()]
        log.tpot_basis = [tpot[i] for i in order.tolist()]
    return SimRun(log.records(), tuple(engines), feed.labels)


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


class _Relay(Log):
    """The log of a run on the event heap: a finished request that a client follows up sends
    its next one, and a prefilled request of a disaggregated pool sends its KV to the decode
    pool instead of finishing (one transfer at a time per prefill engine, in finishing order)."""

    __slots__ = ("disagg", "events", "feed", "link_free", "outputs")

    def __init__(self, stop: Callable[[Request], bool] | None, feed: "OpenFeed | ClientFeed",
                 events: Events, disagg: Disaggregation | None) -> None:
        super().__init__(stop)
        self.feed, self.events, self.disagg = feed, events, disagg
        self.link_free = [0.0] * (disagg.prefill_engines if disagg else 0)
        self.outputs: dict[int, int] = {}  # disaggregated: a request's max_out while it prefills

    def add(self, r: Request, engine: int) -> bool:
        if engine < len(self.link_free) and r.rid in self.outputs:  # prefilled: send its KV
            disagg = self.disagg
            assert disagg is not None
            begin = max(r.finish_s, self.link_free[engine])
            self.link_free[engine] = begin + r.prompt * disagg.kv_bytes_per_token / \
                disagg.link_bytes_per_s
            self.events.push(self.link_free[engine] + disagg.link_latency_s, TRANSFER, r)
            return False
        if super().add(r, engine):
            return True
        for t_next, p in self.feed.finished(r, r.finish_s):
            self.events.push(_reach(t_next, p, self.feed), ARRIVAL, p)
        return False


def _reach(t: float, req: Request, feed: "OpenFeed | ClientFeed") -> float:
    """When a client's request sent at ``t`` reaches the engines (the latency outside them)."""
    return t + feed.delay_s + feed.token_delay_s * req.prompt


def _on_events(engines: list[Engine], feed: "OpenFeed | ClientFeed", router: Router,
               progress: Callable[[float, int], None] | None,
               stop: Callable[[Request], bool] | None,
               disagg: Disaggregation | None) -> SimRun:
    """:func:`simulate` on the event heap (:func:`napkin.serving.events.run_events`): the
    front pool (every engine, or the prefill engines) takes arrivals through ``router``, the
    decode pool KV transfers by least outstanding requests."""
    n_pre = disagg.prefill_engines if disagg else 0
    front = engines[:n_pre] if disagg else engines
    back = engines[n_pre:]
    events = Events()
    relay = _Relay(stop, feed, events, disagg) if disagg or isinstance(feed, ClientFeed) \
        else None
    log = relay or Log(stop)
    routed = 0

    def route(t: float, counter: int) -> int:
        return _route(front, router, t, counter)

    def admit(t: float, kind: int, payload: object) -> tuple[int, Request]:
        nonlocal routed
        if kind == ARRIVAL:
            req = feed.take(payload)
            i = _route(front, router, t, routed)
            routed += 1
            if relay is not None and disagg and req.max_out > 1:
                relay.outputs[req.rid] = req.max_out
                req.max_out = 1
            return i, req
        req = payload  # type: ignore[assignment]  # a prefilled request's KV reached the pool
        assert relay is not None
        req.max_out = relay.outputs.pop(req.rid)
        req.computed, req.transferred, req.hashed, req.reserved = 0, req.prompt, [], 0
        return n_pre + _route(back, "least_outstanding", t, 0), req

    if isinstance(feed, ClientFeed):
        for t, payload in feed.first():
            events.push(_reach(t, payload, feed), ARRIVAL, payload)
    stopped = run_events(
        engines, feed if isinstance(feed, OpenFeed) else None, events, route, admit, log,
        progress, sync=router == "least_kv", direct=disagg is None)
    return SimRun(log.records(), tuple(engines), feed.labels, stopped=stopped)
