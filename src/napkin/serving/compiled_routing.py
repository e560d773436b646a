"""Replicas behind least-outstanding or least-KV routing in the compiled core: the event heap
of :func:`napkin.serving.events.run_events`, compiled with numba, over engines that each run
:func:`~napkin.serving.compiled_core.run_core` until another's event comes first.

Which replica an arrival reaches depends on every replica's state at that instant (the fewest
requests running or waiting, or the smallest share of KV blocks in use once the steps of its
decode run in flight completed by then counted, the first of them at a tie), so the replicas
run side by side, in
the order the reference's heap takes their events: at equal instants an arrival first, then the
engines' units in the order they were queued (each engine's unit is queued again whenever its
due instant moves: after an arrival that changed it, after every unit that leaves work). An
engine whose event is next runs on while its own next event comes strictly before every other
engine's and the next arrival (``run_core``'s ``until``): nothing another engine does can
reach it in between, and only the relative order of queued units matters at a tie. The
planner's stop (:class:`~napkin.serving.slo_stop.SLOMissStop`) counts misses over all engines
in finishing order, as the reference's one log does: the count is handed to the engine whose
unit ends, and the run stops at the request that makes the SLO unreachable.
"""

import numpy as np
from numba import njit
from numba.typed import List

from napkin.serving.compiled_core import (
    INTS,
    SCALARS_F,
    SCALARS_I,
    blocks_needed,
    fresh,
    run_core,
)
from napkin.serving.compiled_timing import steps_until

_BUSY, _W_LEN, _DONE = (SCALARS_I.index(k) for k in ("busy", "w_len", "done"))
_CURSOR, _UNITS = SCALARS_I.index("cursor"), SCALARS_I.index("units")
_PREEMPTS = INTS.index("preemptions")
_MISSED, _STOPPED = SCALARS_I.index("missed"), SCALARS_I.index("stopped")
_WAKE, _P_END = SCALARS_F.index("wake_s"), SCALARS_F.index("p_end")
_ORDER = INTS.index("order")
_STEPS, _USED, _DECODING = (SCALARS_I.index(k) for k in ("steps", "used", "decoding"))
_P_K, _P_RUN, _HAS_SERIES = (SCALARS_I.index(k) for k in ("p_k", "p_run", "has_series"))
_SIDE, _LINE = SCALARS_I.index("side"), SCALARS_I.index("line")
_P_START, _C0 = SCALARS_F.index("p_start"), SCALARS_F.index("c0")
_FOREVER = 1 << 62


@njit(cache=True)
def _due(state: tuple) -> float:
    """When the engine next needs the loop: its unit's end, the instant an arrival woke it,
    or infinity when idle."""
    si, sf = state[6], state[7]
    if si[_BUSY]:
        return sf[_P_END]
    return sf[_WAKE] if sf[_WAKE] >= 0 else np.inf


@njit(cache=True)
def _blocks_at(state: tuple, t: float, reserve_all: bool, bs: int) -> int:
    """:meth:`Engine.blocks_in_use_at`: the engine's KV blocks in use after the steps of its
    decode run in flight completed by ``t`` (least-KV routing)."""
    si, sf = state[6], state[7]
    used = si[_USED]
    if not si[_BUSY] or not si[_P_RUN] or reserve_all or not si[_HAS_SERIES]:
        return used  # (a single step: none of its steps has completed before its end)
    series = (sf[_C0], sf[_C0 + 1], sf[_C0 + 2], sf[_C0 + 3], sf[_C0 + 4], si[_SIDE],
              si[_LINE] != 0)
    started = steps_until(series, t - sf[_P_START], si[_P_K])  # steps begun before t
    return used + blocks_needed(si[_STEPS] + 1, max(started - 1, 0), state[3][0],
                                si[_DECODING], bs)


@njit(cache=True)
def begin(n: int, limits: np.ndarray, replicas: int) -> tuple:
    """A routed run before its first arrival: ``replicas`` fresh engine states
    (:func:`~napkin.serving.compiled_core.fresh`) in a typed list, each engine's arrivals
    (``feeds``' rows), each arrival's engine (``owner``), the finishing order (``order``) and
    the router's own state: each engine's due instant, when its unit was queued, its
    outstanding requests and arrivals taken (rows of ``per``), the counters (units queued,
    arrivals routed, requests finished, SLO misses, units run) and the clock of the engine
    that ran last (``now``), each as :func:`advance` leaves it."""
    states = List()
    for _ in range(replicas):
        states.append(fresh(n, limits[1], limits[3]))
    return (states, np.empty((replicas, n), np.int64), np.empty(n, np.int64),
            np.empty(n, np.int64), np.full(replicas, np.inf),
            np.zeros((3, replicas), np.int64), np.zeros(5, np.int64), np.zeros(1))


@njit(cache=True)
def gather(states: List, feeds: np.ndarray, owner: np.ndarray, order: np.ndarray,
           done: int) -> tuple:
    """What a routed run leaves: the finished requests in the order the reference's log holds
    them and the engine of each; every arrival's first-scheduled, first-token and finish
    instants, queue wait (rows of one array) and preemptions; each engine's integer and float
    scalars (rows) and its series (time, then blocks, running and waiting; engine e's units at
    ``starts[e]:starts[e + 1]``)."""
    n, k = order.shape[0], len(states)
    instants = np.full((4, n), np.nan)
    preemptions = np.zeros(n, np.int64)
    for e in range(k):
        floats = states[e][1]
        mine = feeds[e]
        for j in range(states[e][6][_CURSOR]):
            r = mine[j]
            for c in range(4):
                instants[c, r] = floats[c][r]
            preemptions[r] = states[e][0][_PREEMPTS][r]
    scalars_i = np.empty((k, states[0][6].shape[0]), np.int64)
    scalars_f = np.empty((k, states[0][7].shape[0]))
    starts = np.zeros(k + 1, np.int64)
    for e in range(k):
        scalars_i[e, :] = states[e][6]
        scalars_f[e, :] = states[e][7]
        starts[e + 1] = starts[e] + states[e][6][_UNITS]
    series_t = np.empty(starts[k])
    series_i = np.empty((starts[k], 3), np.int64)
    for e in range(k):
        columns = states[e][4]
        for u in range(starts[e + 1] - starts[e]):
            series_t[starts[e] + u] = columns[0][u]
            series_i[starts[e] + u, 0] = columns[1][u]
            series_i[starts[e] + u, 1] = columns[2][u]
            series_i[starts[e] + u, 2] = columns[3][u]
    return (order[:done], owner[order[:done]], instants, preemptions, scalars_i, scalars_f,
            series_t, series_i, starts)


@njit(cache=True)
def advance(times: np.ndarray, prompt: np.ndarray, max_out: np.ndarray, limits: np.ndarray,
            dec_tokens: np.ndarray, window: np.ndarray, rates: np.ndarray,
            w_readout: np.ndarray, w_none: np.ndarray, fitted: bool, timer: np.ndarray,
            routed: np.ndarray, ratio: np.ndarray, arrival: np.ndarray, stop_rule: np.ndarray,
            states: List, feeds: np.ndarray, owner: np.ndarray, order: np.ndarray,
            dues: np.ndarray, per: np.ndarray, counters: np.ndarray, now: np.ndarray,
            by_kv: bool, budget: int) -> int:
    """The arrivals of ``times`` through the engines of ``states`` (:func:`begin`'s, or as an
    earlier call left them), routed to the one with the fewest outstanding requests
    (``by_kv``: the smallest share of KV blocks in use at the arrival, :func:`_blocks_at`), the
    other arguments as :func:`~napkin.serving.compiled_core.run_core` takes them, until every
    request has finished (returns 0), ``stop_rule`` ends the run (2) or the engines have run
    ``budget`` more units (1: call again to go on). Writes which engine took each arrival
    (``owner``), the arrivals each took in their order (``feeds``' rows), the finished
    requests in the reference's log order (``order``) and the router's state (:func:`begin`);
    an engine's state is replaced in ``states`` where the core outgrew its arrays."""
    n, k = times.shape[0], len(states)
    queued, outstanding, fed = per[0], per[1], per[2]  # (queued: ties go to the earlier)
    seq, cursor, done, missed, ran = (counters[0], counters[1], counters[2], counters[3],
                                      counters[4])
    stop_at = ran + budget
    status = 1
    while ran < stop_at:
        e = -1
        for j in range(k):
            if dues[j] < np.inf and (e < 0 or dues[j] < dues[e]
                                     or (dues[j] == dues[e] and queued[j] < queued[e])):
                e = j
        arriving = cursor < n and (e < 0 or times[cursor] <= dues[e])
        if not arriving and e < 0:
            status = 0
            break
        if arriving and by_kv:  # ------------------------- routed to the least KV in use
            t, blocks, reserve_all, bs = times[cursor], limits[0], limits[7] != 0, limits[3]
            e, least = 0, _blocks_at(states[0], t, reserve_all, bs) / blocks
            for j in range(1, k):
                share = _blocks_at(states[j], t, reserve_all, bs) / blocks
                if share < least:  # (the first of the least, as min() picks)
                    e, least = j, share
        elif arriving:  # ---------------------------------- routed to the least outstanding
            e = 0
            for j in range(1, k):
                if outstanding[j] < outstanding[e]:
                    e = j
        if arriving:
            feeds[e, fed[e]] = cursor
            fed[e] += 1
            owner[cursor] = e
            cursor += 1
        # the engine runs until another's unit or the next arrival comes first
        until = times[cursor] if cursor < n else np.inf
        for j in range(k):
            if j != e and dues[j] < until:
                until = dues[j]
        state = states[e]
        si = state[6]
        si[_MISSED] = missed
        before, units = si[_DONE], si[_UNITS]
        columns, rows = state[4][0].shape[0], state[5].shape[0]
        state = run_core(times, prompt, max_out, limits, dec_tokens, window, rates, w_readout,
                         w_none, fitted, timer, routed, ratio, arrival, stop_rule, feeds[e],
                         fed[e], state, _FOREVER, until)
        # the core writes its scalars and arrays in place; only a series column or the finish
        # heap it outgrew is a new array (storing the whole state back: ~0.5 us a call)
        if state[4][0].shape[0] != columns or state[5].shape[0] != rows:
            states[e] = state
        si = state[6]
        ran += si[_UNITS] - units
        now[0] = state[7][0]  # (the engine's clock)
        finished = state[0][_ORDER]
        for j in range(before, si[_DONE]):
            order[done] = finished[j]
            done += 1
        missed = si[_MISSED]
        if si[_STOPPED] == 2:
            status = 2
            break
        outstanding[e] = state[3][1][2] + si[_W_LEN]
        due = _due(state)
        if si[_UNITS] != units or due != dues[e]:  # queued again (a unit ended, or woken)
            queued[e] = seq
            seq += 1
        dues[e] = due
    counters[0], counters[1], counters[2], counters[3], counters[4] = (seq, cursor, done,
                                                                       missed, ran)
    return status
