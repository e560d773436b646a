"""Which runs take the compiled core (:mod:`napkin.serving.compiled_core`), and running one.

A run takes it when numba is installed, ``NAPKIN_COMPILED`` is not ``0``, the process has
simulated :data:`COMPILED_AFTER` requests counting this run (numba's import and the cached
machine code's load take about half a second, which a run of fewer requests would not win back)
and the run is one the core covers (:func:`covered`): one fresh engine on open-loop arrivals
that no per-token delay reorders; none of the scheduler's features on (any of the three
policies: vLLM's, TensorRT-LLM's reservation, SGLang's prefill batches and admission by its
decaying ratio, but not its receive interval); a cost without sliding windows, 16-bit parts or
linear-attention state (MoE experts are in: their weight bytes and routed time are tables);
the roofline or a fitted profile as the timer; no stop callback but a fresh
:class:`~napkin.serving.slo_stop.SLOMissStop` (the planner's and the sweeps'), which the core
applies itself; a progress callback is called after every :data:`UNITS_A_CALL` units (the
core runs in calls of that many, so a callback that raises, as the web server's budget does,
stops it there); and no request the engine would
refuse (the reference raises that error where it meets it). Anything else runs
:func:`napkin.serving.scheduler.process` itself, as every run did before.

Replicas behind round-robin routing on open-loop arrivals (no stop) take it too,
one replica at a time (:func:`run_replicas`): which replica an arrival reaches does not depend
on their state, so each runs alone on its share and the logs merge by finishing time. Replicas
of one configuration behind least-outstanding or least-KV routing (the planner's stop
allowed) run side by side (:func:`run_routed`, :mod:`napkin.serving.compiled_routing`). A
caller about to run many simulations may count them up front (:func:`expect`: the planner
does).

The core's outputs are written where the reference leaves its own: the log's packed rows in
finishing order, the engine's series and its scalars (:func:`~napkin.serving.scheduler_state.
store`), so metrics and reports read either run alike.
"""

import os
from collections.abc import Callable
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from napkin.accounting.linear import LinearCost
from napkin.calibration.basis import FittedTimer
from napkin.serving.engine import RATIO_RECHECK_STEPS, SERIES_DTYPE, Engine
from napkin.serving.rows import ROW_DTYPE, merged_by_finish
from napkin.serving.scheduler import FEATURES, features
from napkin.serving.scheduler_state import store
from napkin.serving.slo_stop import SLOMissStop
from napkin.timing.steps import RooflineTimer

if TYPE_CHECKING:
    from napkin.serving.simulate import OpenFeed

T = TypeVar("T")

COMPILED_AFTER = 200_000
"""Requests a process simulates with the reference before runs take the compiled core."""
UNITS_A_CALL = 250_000
"""Units the core runs between two progress reports (about 0.1 s on the 2-core machine)."""
ROUTED_CELLS = 4_000_000
"""The most replicas × requests :func:`run_routed` takes (each replica holds every request's
state, about 140 bytes a request: 0.6 GB at this size)."""
_simulated = [0]  # requests this process has simulated so far
OFF = ("caching", "recording", "windows", "static", "batch_wait", "recv", "host_tier",
       "frontend", "lagging")
"""The scheduler's features (:data:`~napkin.serving.scheduler.FEATURES`) the core has not."""


def expect(requests: float) -> None:
    """Count ``requests`` a caller is about to simulate in this process (a plan's candidates
    × seeds × requests a run) as simulated: its runs take the compiled core from the first
    once the count reaches :data:`COMPILED_AFTER` (a count past it, or not finite, is
    capped there)."""
    if requests > 0:
        _simulated[0] += int(min(requests, COMPILED_AFTER))


def takes(engine: Engine, feed: "OpenFeed", stop: object) -> bool:
    """Whether this run of one engine on the open-loop ``feed`` goes through the compiled core
    (see the module docstring); counts its requests as simulated either way."""
    return _past_threshold(feed) and covered(engine, feed, stop)


def _past_threshold(feed: "OpenFeed") -> bool:
    """Counts ``feed``'s requests as simulated; whether the process is past
    :data:`COMPILED_AFTER`, the core not turned off and numba installed."""
    _simulated[0] += feed.n
    return (_simulated[0] >= COMPILED_AFTER and os.environ.get("NAPKIN_COMPILED") != "0"
            and find_spec("numba") is not None)


def covered(engine: Engine, feed: "OpenFeed", stop: object) -> bool:
    """Whether the compiled core runs exactly what the reference would for one engine on the
    open-loop ``feed`` (the module docstring's list)."""
    fresh_stop = stop is None or (type(stop) is SLOMissStop and stop.missed == 0)
    if not (feed.rid is None and not feed.named and fresh_stop):
        return False
    on = dict(zip(FEATURES, features(engine), strict=True))
    if not (on["fast"] and on["plain"]) or any(on[name] for name in OFF):
        return False
    cost, timer = engine.cost, engine.timer
    if not (type(cost) is LinearCost and len(cost.windows) == 1 and not cost.state_bytes
            and not any(cost.sixteen_bit)):
        return False
    if type(timer) is not RooflineTimer and type(timer) is not FittedTimer:
        return False
    fresh = (engine.plan is None and not engine.running and not engine.waiting
             and not engine.inbox and engine.num_steps == 0 and engine.pool.used == 0
             and engine.clock == 0.0)
    if not (fresh and engine.dp == 1):
        return False
    prompt, out = _column(feed.inputs), _column(feed.outputs)
    return bool(np.all(prompt + out <= engine.max_request_tokens)
                and np.all(prompt <= engine.max_prompt_tokens))


def run(engine: Engine, feed: "OpenFeed", stop: SLOMissStop | None = None,
        progress: Callable[[float, int], None] | None = None) -> tuple[np.ndarray, bool]:
    """Every request of ``feed`` through ``engine`` in the compiled core, or until ``stop``
    ends the run: the finished requests' log rows (:data:`napkin.serving.rows.ROW_DTYPE`) in
    finishing order and whether ``stop`` ended it; the engine's series and scalars as the
    reference leaves them. ``progress(t_s, finished)`` after every :data:`UNITS_A_CALL` units
    and at the end."""
    rows, stopped, write_back = _run_arrays(engine, *_arrays(feed), stop, progress)
    write_back()
    return rows, stopped


def takes_replicas(engines: list[Engine], feed: "OpenFeed") -> bool:
    """Whether replicas behind round-robin routing (no stop) go through the compiled core, one
    replica at a time (:func:`run_replicas`); counts the requests as simulated either way."""
    return (_past_threshold(feed) and all(covered(e, feed, None) for e in engines)
            and len({id(e) for e in engines}) == len(engines))


def run_replicas(engines: list[Engine], feed: "OpenFeed",
                 progress: Callable[[float, int], None] | None = None) -> np.ndarray | None:
    """Open-loop arrivals through replicas behind round-robin routing in the compiled core:
    arrival i goes to replica i mod R whatever the replicas' state, so each replica runs alone
    on its share, and the log is their rows merged by finishing time (engine column set, request
    ids the arrival positions), each engine's state written as the reference leaves it. None,
    with no engine touched, where two replicas finish a request at the same instant: the event
    heap orders such ties by when their units were queued, which this merge does not
    reproduce (the caller runs the reference instead). ``progress(t_s, finished)`` as each
    replica runs (:func:`run`; finished: the requests of the replicas run so far)."""
    times, prompt, out, arrival, label = _arrays(feed)
    k = len(engines)
    parts, backs = [], []
    for e, engine in enumerate(engines):
        share = slice(e, None, k)
        base = sum(len(p) for p in parts)
        rows, _, back = _run_arrays(engine, *(np.ascontiguousarray(a[share]) for a in (
            times, prompt, out, arrival, label)), None, None if progress is None else (
            lambda t, finished, base=base: progress(t, base + finished)))
        rows["rid"] = e + k * rows["rid"]
        rows["engine"] = e
        parts.append(rows)
        backs.append(back)
    merged = merged_by_finish(parts)
    if merged is None:
        return None
    for back in backs:
        back()
    return merged[0]


def takes_routed(engines: list[Engine], feed: "OpenFeed", stop: object) -> bool:
    """Whether replicas behind least-outstanding or least-KV routing go through the compiled
    core side by side (:func:`run_routed`): each a covered engine of one configuration, at most
    :data:`ROUTED_CELLS` replicas × requests (each replica holds every request's state);
    counts the requests as simulated either way."""
    if not _past_threshold(feed):
        return False
    first = engines[0]
    same = all((e.spec, e.cost, e.timer, e.policy, e.bs, e.clip, e.full_prompt,
                e.reserve_all, e.ratio) == (first.spec, first.cost, first.timer, first.policy,
                                            first.bs, first.clip, first.full_prompt,
                                            first.reserve_all, first.ratio) for e in engines)
    return (same and len(engines) * feed.n <= ROUTED_CELLS
            and len({id(e) for e in engines}) == len(engines)
            and all(covered(e, feed, stop) for e in engines))


def run_routed(engines: list[Engine], feed: "OpenFeed", stop: SLOMissStop | None = None,
               by_kv: bool = False, progress: Callable[[float, int], None] | None = None
               ) -> tuple[np.ndarray, bool]:
    """Open-loop arrivals through replicas behind least-outstanding routing (``by_kv``:
    least-KV) in the compiled core (:mod:`napkin.serving.compiled_routing`), or until ``stop``
    ends the run: the log rows in the reference's order (engine column set, request ids the
    arrival positions) and whether ``stop`` ended it; each engine's series and scalars as the
    reference leaves them. ``progress(t_s, finished)`` after every :data:`UNITS_A_CALL` units
    the engines run and at the end (``t_s``: the clock of the engine that ran last)."""
    from napkin.serving.compiled_cache import check
    from napkin.serving.compiled_routing import advance, begin, gather

    check()

    times, prompt, out, arrival, label = _arrays(feed)
    engine_args = _engine_args(engines[0])
    run = begin(len(times), engine_args[0], len(engines))  # (limits: the first)
    states, feeds, owner, order, _, _, counters, now = run
    budget = UNITS_A_CALL if progress is not None else 1 << 62
    while True:
        status = advance(times, prompt, out, *engine_args, arrival, _rule(stop), *run, by_kv,
                         budget)
        if progress is not None:
            progress(float(now[0]), int(counters[2]))
        if status != 1:
            break
    order, owner, instants, preemptions, scalars_i, scalars_f, series_t, series_i, starts = \
        gather(states, feeds, owner, order, counters[2])
    per = dict(zip(("first_scheduled_s", "first_token_s", "finish_s", "queue_wait_s"),
                   instants, strict=True)) | {"preemptions": preemptions}
    rows = _rows(order, owner, per, label, arrival, prompt, out)
    for e, engine in enumerate(engines):
        units = slice(starts[e], starts[e + 1])
        _write_back(engine, scalars_i[e], scalars_f[e],
                    (series_t[units], *series_i[units].T))()
    return rows, bool(status == 2)


def _run_arrays(engine: Engine, times: np.ndarray, prompt: np.ndarray, out: np.ndarray,
                arrival: np.ndarray, label: np.ndarray, stop: SLOMissStop | None,
                progress: Callable[[float, int], None] | None
                ) -> tuple[np.ndarray, bool, Callable[[], None]]:
    """The arrivals given as arrays through ``engine`` in the compiled core (:func:`run`):
    the log rows (engine 0, request ids the positions), whether ``stop`` ended the run, and
    the call that writes the engine's series and scalars (nothing is written before)."""
    from napkin.serving.compiled_cache import check
    from napkin.serving.compiled_core import FLOATS, INTS, SCALARS_F, SCALARS_I, fresh, run_core

    check()

    args, rule = _engine_args(engine), _rule(stop)
    state = fresh(len(times), engine.spec.max_num_seqs, engine.bs)
    units, stopped = SCALARS_I.index("units"), SCALARS_I.index("stopped")
    clock, done = SCALARS_F.index("clock"), SCALARS_I.index("done")
    feed = np.arange(len(times), dtype=np.int64)
    while True:
        call = (state[6][units] + UNITS_A_CALL) if progress is not None else 1 << 62
        state = run_core(times, prompt, out, *args, arrival, rule, feed, len(times), state,
                         call, np.inf)
        si, sf = state[6], state[7]
        if progress is not None:
            progress(float(sf[clock]), int(si[done]))
        if si[stopped]:
            break
    per = dict(zip(INTS, state[0], strict=True)) | dict(zip(FLOATS, state[1], strict=True))
    order = per["order"][:si[done]]
    rows = _rows(order, np.zeros(len(order), np.int64), per, label, arrival, prompt, out)
    return rows, bool(si[stopped] == 2), _write_back(engine, si, sf, state[4])


def _engine_args(engine: Engine) -> tuple:
    """The core's arguments that describe ``engine`` (after the arrivals' ``times``,
    ``prompt`` and ``max_out``): its limits, decode and chunk rates, weight bytes by tokens,
    timer, routed-expert times and the policy's ratio (see
    :func:`~napkin.serving.compiled_core.run_core`)."""
    spec, cost = engine.spec, engine.cost
    assert isinstance(cost, LinearCost)
    size = max(spec.max_num_batched_tokens, spec.max_num_seqs) + 1
    dec_tokens = _decode_table(cost, spec.max_num_seqs)
    w = cost.windows[0]
    window = np.array([w.flops_per_pair, w.flops_per_decode_pair, w.kv_read_per_cached])
    rates = np.array([cost.flops_per_token, cost.flops_per_readout,
                      cost.flops_per_prefill_cached, cost.attention_per_token,
                      cost.kv_write_per_token])
    w_readout, w_none = _weight_tables(cost, size)
    timer_row, routed, fitted = _timer(engine.timer, size)
    policy = engine.policy
    limits = np.array([spec.num_blocks, spec.max_num_seqs, spec.max_num_batched_tokens,
                       engine.bs, spec.long_prefill_token_threshold, spec.chunked_prefill,
                       engine.full_prompt, engine.reserve_all, policy.preempt_self,
                       engine.clip, RATIO_RECHECK_STEPS, policy.mixed_batches, engine.ratio],
                      dtype=np.int64)
    ratio = np.array([policy.init_new_token_ratio, policy.min_new_token_ratio,
                      policy.ratio_decay_steps], dtype=np.float64)
    return (limits, dec_tokens, window, rates, w_readout, w_none, fitted, timer_row, routed,
            ratio)


def _rule(stop: SLOMissStop | None) -> np.ndarray:
    """``stop`` as the core's ``stop_rule`` (all zeros: no stop)."""
    rule = np.zeros(7)
    if isinstance(stop, SLOMissStop):
        slo = stop.slo
        rule[:] = (1, stop.warmup, stop.counted, stop.share, slo.ttft_s, slo.tpot_s,
                   np.inf if slo.e2e_s is None else slo.e2e_s)
    return rule


def _rows(order: np.ndarray, owner: np.ndarray, per: dict[str, np.ndarray], label: np.ndarray,
          arrival: np.ndarray, prompt: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The log rows of the requests finished in ``order`` (positions in the arrays given), run
    by the engines ``owner`` names: ``per`` holds every arrival's first-scheduled, first-token
    and finish instants, queue wait and preemptions."""
    rows = np.zeros(len(order), dtype=ROW_DTYPE)  # (no cached tokens)
    rows["rid"] = order
    rows["engine"] = owner
    rows["label"] = label[order]
    rows["arrival_s"] = arrival[order]
    rows["input_tokens"], rows["output_tokens"] = prompt[order], out[order]
    for name in ("first_scheduled_s", "first_token_s", "finish_s", "preemptions",
                 "queue_wait_s"):
        rows[name] = per[name][order]
    return rows


def _write_back(engine: Engine, si: np.ndarray, sf: np.ndarray, columns: tuple
                ) -> Callable[[], None]:
    """The call that writes a run's scalars (``si``, ``sf``: the core's) and series
    (``columns``: time, blocks, running, waiting) to ``engine`` as the reference leaves them."""
    from napkin.serving.compiled_core import SCALARS_F, SCALARS_I

    i = dict(zip(SCALARS_I, si.tolist(), strict=True))
    f = dict(zip(SCALARS_F, sf.tolist(), strict=True))
    n_units = i["units"]
    series = np.empty(n_units, dtype=SERIES_DTYPE)
    for name, column in zip(SERIES_DTYPE.names, columns, strict=True):
        series[name] = column[:n_units]

    def write_back() -> None:
        engine.series += memoryview(series).cast("B")
        store(engine, f["clock"], i["steps"], i["num_steps"], i["used"], f["busy_s"],
              f["kv_token_seconds"], i["peak_blocks"],
              (i["dec_base"], i["dec_left"], i["dec_over_clip"]), i["preemptions"])
        engine.slot_steps, engine.ratio_reset_step = i["slot_steps"], i["ratio_reset_step"]
    return write_back


def _arrays(feed: "OpenFeed") -> tuple[np.ndarray, ...]:
    """The feed's columns as the core reads them: the instants its arrivals reach the engine,
    prompt and output tokens, arrival instants and class labels."""
    return (np.frombuffer(feed.times, dtype=np.float64),  # type: ignore[arg-type]
            _column(feed.inputs), _column(feed.outputs),
            np.frombuffer(feed.arrival_s, dtype=np.float64),  # type: ignore[arg-type]
            np.frombuffer(feed.label, dtype=np.int32))  # type: ignore[arg-type]


def _column(values: object) -> np.ndarray:
    """A feed's typed-array column as int64."""
    return np.frombuffer(values, dtype=np.int32).astype(np.int64)  # type: ignore[arg-type]


def _memo(of: object, what: tuple[str, int], make: Callable[[], T]) -> T:
    """``make()``, kept for the object ``of`` itself and ``what`` (a table's name and size:
    the planner's runs share a few costs and timers; some hold dicts, so they are not keys
    themselves)."""
    key = (id(of), *what)
    hit = _TABLES.get(key)
    if hit is not None and hit[0] is of:
        return hit[1]
    if len(_TABLES) >= 64:
        _TABLES.clear()
    value = make()
    _TABLES[key] = (of, value)
    return value


_TABLES: dict[tuple[int, str, int], tuple[object, Any]] = {}


def _decode_table(cost: LinearCost, max_seqs: int) -> np.ndarray:
    """The token parts of a decode step of 0 … ``max_seqs`` sequences (row m:
    :meth:`LinearCost._token_parts` of m tokens, m read-outs, 2m state moves), kept per cost
    (:func:`_memo`)."""
    return _memo(cost, ("decode", max_seqs), lambda: np.array(
        [(0.0,) * 5] + [cost._token_parts(m, m, 0, 2 * m) for m in range(1, max_seqs + 1)]))


def _weight_tables(cost: LinearCost, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The weight bytes a step of 0 … ``size`` − 1 new tokens reads, with and without a
    read-out (:meth:`LinearCost.weight_bytes`), kept per cost (:func:`_memo`): a dense
    model's are one value past 0 tokens."""
    return _memo(cost, ("weights", size), lambda: _weights(cost, size))


def _weights(cost: LinearCost, size: int) -> tuple[np.ndarray, np.ndarray]:
    if not cost.experts:
        tables = [np.full(size, cost.weight_bytes(1, r)) for r in (1, 0)]
        for table in tables:
            table[0] = cost.weight_bytes(0, 0)
        return tables[0], tables[1]
    return (np.array([cost.weight_bytes(t, 1) for t in range(size)]),
            np.array([cost.weight_bytes(t, 0) for t in range(size)]))


def _timer(timer: RooflineTimer | FittedTimer, size: int
           ) -> tuple[np.ndarray, np.ndarray, bool]:
    """The timer's constants as the core reads them, its routed-expert time by tokens (a
    fitted profile's) and whether it is fitted, kept per timer (:func:`_memo`)."""
    return _memo(timer, ("timer", size), lambda: _timer_tables(timer, size))


def _timer_tables(timer: RooflineTimer | FittedTimer, size: int
                  ) -> tuple[np.ndarray, np.ndarray, bool]:
    if isinstance(timer, FittedTimer):
        routed = np.zeros(size)
        if timer.times_routed:
            routed[1:] = [timer._routed_step_s(t) for t in range(1, size)]
        return (np.array([*timer.rates, timer.floor_s, float(timer.times_routed)]), routed,
                True)
    peak, bw, tp, d = timer._constants
    return (np.array([peak, bw, tp, d, timer.eff.overhead_s, timer.allreduce_fixed_s,
                      timer.allreduce_s_per_token, float(timer.tensor_parallel > 1)]),
            np.zeros(1), False)
