"""The engine as a coroutine over local variables, and the loops that drive it.

:func:`napkin.serving.simulate.simulate` spent most of its time in the scaffolding around the
scheduler's decisions — a method call, a ``Plan`` and a dozen attribute lookups for each of the
engine's helpers, some fifty Python calls a unit. :func:`process` runs the same algorithm with
the engine's state in local variables: :class:`napkin.serving.engine.Engine`'s ``add``,
``plan_next`` (decodes first, then partial prefills, then admissions, preempting the most
recently admitted when blocks run short; SGLang: a prefill-only batch whenever one can be
admitted under its ratio reserve, else a decode step), ``_finish_plan`` (a decode run up to the
first completion, block shortage or SGLang re-check), ``_series`` and ``commit`` inlined,
step for step and float operation for float operation. The step costs still come from the
engine's ``LinearCost`` and timer, and the chunk, block, reserve, refusal and preemption rules
from the engine's own methods, so each has one source.

It applies (:func:`applies`) to every scheduler policy (vLLM; TensorRT-LLM with either
capacity scheduler; SGLang) in fast mode without prefix caching, sliding windows, basis
recording, SGLang's receive interval, TensorRT-LLM's batch waiting or static batching, before
the engine has taken any request; :func:`run_one` drives one engine, :func:`run_many` several
behind a round-robin or least-outstanding router, on open-loop arrivals. Every other case runs the
engine's methods. ``tests/serving/test_flatloop.py`` checks both give the same records and
engine state bit for bit on random workloads, preemptions and early stops included.
"""

import heapq
from collections.abc import Callable, Generator, Sequence
from typing import Protocol

from napkin.serving.engine import RATIO_RECHECK_STEPS, SERIES, Engine
from napkin.serving.request import Request
from napkin.serving.step import Plan
from napkin.timing import StepSeries


class Feed(Protocol):
    """Open-loop arrivals as typed columns (:class:`napkin.serving.simulate._OpenFeed`)."""

    n: int
    times: Sequence[float]

    def take(self, payload: object) -> Request: ...


class Log(Protocol):
    """Where finished requests go (:class:`napkin.serving.simulate._Log`)."""

    def add(self, r: Request, engine: int) -> None: ...


DECODES, PREFILLS = 0, 1
"""The two phases of a step's scheduling (their order is the policy's)."""


def applies(engine: Engine) -> bool:
    """Whether :func:`process` can run ``engine`` (see the module docstring)."""
    return (engine.fast and not engine.caching and not engine.windows and engine.basis is None
            and engine.recv_interval == 1 and not engine.batch_wait and not engine.static
            and engine.plan is None and not engine.has_work() and not engine.finish_heap)


def _store(engine: Engine, clock: float, steps: int, num_steps: int, used: int, busy_s: float,
           kv_token_seconds: float, peak: int, dec: tuple[int, int, int], preemptions: int) -> None:
    """Write the loop's local scalars back to the engine (its pool holds no prefix-cache
    entries, so all its used blocks are private)."""
    engine.clock, engine.steps, engine.num_steps, engine.busy_s = clock, steps, num_steps, busy_s
    engine.pool.used = engine.pool.private_used = used
    engine.kv_token_seconds = kv_token_seconds
    engine.peak_blocks, engine.preemptions = peak, preemptions
    engine.dec_base, engine.dec_left, engine.dec_over_clip = dec


def _preempt(engine: Engine, victim: Request, clock: float, steps: int, num_steps: int,
             used: int, busy_s: float, kv_token_seconds: float, peak: int,
             dec: tuple[int, int, int], preemptions: int) -> tuple[int, int, int, int, int]:
    """The engine's own ``_preempt`` of ``victim`` from the loop's state (stored first); the
    scalars it changes after: (used blocks, preemptions, dec_base, dec_left, dec_over_clip)."""
    _store(engine, clock, steps, num_steps, used, busy_s, kv_token_seconds, peak, dec, preemptions)
    engine._preempt(victim)
    return (engine.pool.used, engine.preemptions, engine.dec_base, engine.dec_left,
            engine.dec_over_clip)


def process(engine: Engine, feed: Feed, own: bool, index: int, log: Log,
            stop: Callable[[Request], bool] | None,
            progress: Callable[[float, int], None] | None, finished_count: list[int]
            ) -> Generator[float, int, bool]:
    """``engine`` (which :func:`applies`) as a coroutine over its state in local variables.

    It yields when the engine next needs the loop: the end of its unit in flight, the instant
    an arrival woke it, or infinity when idle. Send it the index of an arrival of ``feed``
    routed to it (it reaches the engine at ``feed.times[i]``; a decode run in flight stops at
    its next step boundary), or −1 when its due instant comes: it commits the unit, logs the
    finished requests (engine ``index``; ``finished_count[0]`` counts them over all engines),
    calls ``progress`` and plans the next unit. It yields −1 once ``stop`` returned True for
    a finished request. Closing it writes its state back to the engine, which is then as its
    own methods would leave it.

    With ``own`` (one engine alone) it takes every arrival of ``feed`` itself — the next event
    is the earlier of the next arrival and its due instant, an arrival first at equal times, as
    the event heap orders them — and returns, without yielding, whether ``stop`` ended the
    run."""
    spec, pool, bs = engine.spec, engine.pool, engine.bs
    series_of, step_s = engine.timer.series, engine.timer.step_s
    decode_parts, step_parts = engine.cost.decode_parts, engine.cost.step_parts
    dp, busiest_group = engine.dp, engine.busiest_group
    max_seqs, max_tokens = spec.max_num_seqs, spec.max_num_batched_tokens
    chunk = engine._chunk  # a request's tokens this step (threshold, budget, whole prompts)
    max_request, max_prompt = engine.max_request_tokens, engine.max_prompt_tokens
    clip, ratio, reserve_all = engine.clip, engine.ratio, engine.reserve_all
    preempt_self, full_prompt = engine.policy.preempt_self, engine.full_prompt
    new_token_ratio = engine.policy.new_token_ratio
    phases = (DECODES, PREFILLS) if engine.policy.mixed_batches else (PREFILLS, DECODES)
    num_blocks = pool.num_blocks
    running, prefilling, decoding = engine.running, engine.prefilling, engine.decoding
    waiting, residues, heap = engine.waiting, engine.residues, engine.finish_heap
    series, series_row = engine.series, SERIES.pack
    clock, steps, num_steps, used = engine.clock, engine.steps, engine.num_steps, pool.used
    busy_s, kv_token_seconds, peak = engine.busy_s, engine.kv_token_seconds, engine.peak_blocks
    dec_base, dec_left, dec_over = engine.dec_base, engine.dec_left, engine.dec_over_clip
    preemptions, slot_steps = engine.preemptions, engine.slot_steps
    heappush, heappop = heapq.heappush, heapq.heappop
    inf = float("inf")
    wake_s = -1.0  # an idle engine's start, once an arrival woke it (< 0: not woken)
    # the unit in flight (a Plan's fields; busy is False when idle); a single step has no
    # series: its time p_step_s is all there is to know (StepSeries.weighted of one step is w0
    # times it)
    busy, p_start_s, p_k, p_end_s, p_n_dec, p_kv0, p_run = False, 0.0, 0, 0.0, 0, 0, False
    p_step_s = 0.0
    p_series: StepSeries | None = None
    p_chunks: list[tuple[Request, int]] = []
    times, n, cursor, take = feed.times, feed.n, 0, feed.take

    try:
        while True:
            due = p_end_s if busy else (wake_s if wake_s >= 0 else inf)
            if not own:
                i = yield due
            elif cursor < n and times[cursor] <= due:
                i = cursor
                cursor += 1
            elif due == inf:
                return False
            else:
                i = -1
            if i >= 0:  # ------------------------------------------------------------ an arrival
                req = take(i)
                t = req.enqueue_s = times[i]
                if req.prompt + req.max_out > max_request or req.prompt > max_prompt:
                    engine._refuse(req)  # (raises: the run is abandoned)
                waiting.append(req)
                if not busy:
                    if wake_s < 0:
                        if t > clock:
                            clock = t
                        wake_s = t
                elif p_run and p_k > 1:  # the run stops at the next step boundary
                    p_k = p_series.steps_until(t - p_start_s, p_k)
                    if p_k < 1:
                        p_k = 1
                    p_end_s = p_start_s + p_series.time(p_k)
                continue
            wake_s = -1.0
            # ------------------------------------------------------------------------ commit
            if busy:
                k = p_k
                clock = p_end_s
                n_dec = p_n_dec
                kv_token_seconds += (p_kv0 * p_step_s if p_series is None
                                     else p_series.weighted(k, p_kv0, n_dec))
                if k > 1 and not reserve_all:  # the run's new blocks (from the residues)
                    need = engine._blocks_needed(steps + 1, k - 1)
                    if need <= num_blocks - used:
                        used += need
                busy_s += clock - p_start_s
                if n_dec:
                    steps += k
                num_steps += k
                slot_steps += (n_dec + len(p_chunks)) * k
                finished: list[Request] = []
                for req, new in p_chunks:
                    req.computed += new
                    if req.computed < req.prompt + req.outputs:
                        continue
                    del prefilling[req.rid]
                    req.outputs += 1
                    if req.outputs == 1:
                        req.first_token_s = clock
                    if req.outputs >= req.max_out:
                        finished.append(req)
                    else:  # engine._dec_add
                        req.c0, req.s0, req.o0 = req.computed, steps, req.outputs
                        decoding[req.rid] = req
                        dec_base += req.c0 - steps
                        dec_left += req.max_out - req.o0 + steps
                        dec_over += req.max_out - req.o0 > clip
                        residues[(steps - req.c0) % bs] += 1
                        req.version += 1
                        heappush(heap, (steps + req.max_out - req.o0, req.rid, req.version, req))
                busy = False
                if used > peak:  # before finishers free
                    peak = used
                while heap and heap[0][0] <= steps:
                    _, _, version, req = heappop(heap)
                    if version != req.version or req.rid not in decoding:
                        continue
                    s0, c0, o0 = req.s0, req.c0, req.o0  # (engine._dec_remove)
                    req.computed, req.outputs = c0 + steps - s0, o0 + steps - s0
                    del decoding[req.rid]
                    dec_base -= c0 - s0
                    dec_left -= req.max_out - o0 + s0
                    dec_over -= req.max_out - o0 > clip
                    residues[(s0 - c0) % bs] -= 1
                    req.version += 1
                    finished.append(req)
                for req in finished:
                    req.finish_s = clock
                    if req.first_token_s != req.first_token_s:
                        req.first_token_s = clock
                    del running[req.rid]
                    used -= req.reserved if reserve_all else -(-req.computed // bs)
                series += series_row(clock, used, len(running), len(waiting))
                for req in finished:
                    log.add(req, index)
                    finished_count[0] += 1
                    if stop is not None and stop(req):
                        if own:
                            return True
                        yield -1.0  # (the loop closes the coroutine)
                        return True
            if progress is not None:
                engine.clock = clock
                progress(clock, finished_count[0])
            if not (running or waiting):
                continue
            # -------------------------------------------------------------------------- plan
            budget = max_tokens
            preempted = False
            n_dec = 0
            chunks: list[tuple[Request, int]] = []
            for phase in phases:
                if phase == DECODES:  # 1. decodes first (blocks reserved at admission under
                    if chunks:        # max-length reservation); SGLang: no prefill batch
                        break
                    preempted = False  # (SGLang: its prefill attempt's preemptions don't count)
                    need = residues[steps % bs] if decoding and not reserve_all else 0
                    if need > num_blocks - used:
                        engine.ratio_reset_step = steps  # retraction: SGLang resets its ratio
                    while need > num_blocks - used and running:
                        victim = next(reversed(running.values()))
                        was_due = (victim.rid in decoding
                                   and (victim.s0 - victim.c0) % bs == steps % bs)
                        used, preemptions, dec_base, dec_left, dec_over = _preempt(
                            engine, victim, clock, steps, num_steps, used, busy_s,
                            kv_token_seconds, peak, (dec_base, dec_left, dec_over), preemptions)
                        need -= was_due
                        preempted = True
                    n_dec = len(decoding)
                    if need and need <= num_blocks - used:
                        used += need
                    budget -= n_dec
                    continue
                if not (prefilling or waiting):
                    continue
                if prefilling and budget > 0:  # 2. partial prefills in admission order
                    scheduled = set()
                    for req in list(prefilling.values()):
                        if budget <= 0:
                            break
                        if req.rid not in prefilling:
                            continue  # preempted while scheduling an earlier chunk
                        new = chunk(req, req.computed, budget)
                        if new == 0:
                            break
                        blocks = 0 if reserve_all else (
                            (-req.computed // bs) - (-(req.computed + new) // bs))
                        while blocks > num_blocks - used:
                            victim = next((r for r in reversed(running.values())
                                           if r.rid not in decoding and r.rid not in scheduled),
                                          None)
                            if victim is req and preempt_self:  # vLLM: running[-1], itself
                                used, preemptions, dec_base, dec_left, dec_over = _preempt(
                                    engine, req, clock, steps, num_steps, used, busy_s,
                                    kv_token_seconds, peak, (dec_base, dec_left, dec_over),
                                    preemptions)
                                preempted = True
                            if victim is None or victim is req:
                                break
                            used, preemptions, dec_base, dec_left, dec_over = _preempt(
                                engine, victim, clock, steps, num_steps, used, busy_s,
                                kv_token_seconds, peak, (dec_base, dec_left, dec_over),
                                preemptions)
                            preempted = True
                        if blocks > num_blocks - used or req.rid not in running:
                            break
                        used += blocks
                        chunks.append((req, new))
                        scheduled.add(req.rid)
                        budget -= new
                if preempted:
                    continue
                reserve = 0.0  # 3. admissions, first come first served
                if ratio:  # (the engine's running sums, as the loop holds them now)
                    engine.steps, engine.dec_left, engine.dec_over_clip = steps, dec_left, dec_over
                    reserve = engine._ratio_reserve_tokens()
                while waiting and budget > 0 and len(running) < max_seqs:
                    req = waiting[0]
                    known = req.transferred
                    new = chunk(req, known, budget)
                    if new == 0:
                        break
                    blocks = -(-(known + new) // bs)
                    if reserve_all:
                        blocks = -(-(req.prompt + req.max_out) // bs)
                        req.reserved = blocks
                    if blocks > num_blocks - used:
                        break
                    if full_prompt and -(-req.num_tokens // bs) > num_blocks - used:
                        break
                    if ratio:
                        future = new_token_ratio(steps - engine.ratio_reset_step) * min(
                            req.max_out - req.outputs, clip)
                        if req.prompt + req.outputs + future + reserve > (num_blocks - used) * bs:
                            break
                        reserve += future
                    waiting.popleft()
                    used += blocks
                    req.computed = known
                    req.transferred = 0
                    if req.first_scheduled_s != req.first_scheduled_s:  # NaN: first time
                        req.first_scheduled_s = clock
                    req.queue_wait_s += clock - req.enqueue_s
                    running[req.rid] = req
                    prefilling[req.rid] = req
                    chunks.append((req, new))
                    budget -= new
            if not n_dec and not chunks:
                continue
            # 4. the unit's length and cost (engine._finish_plan, engine._series)
            k = 1
            ctx = dec_base + n_dec * steps
            if not chunks:
                if not preempted:
                    while heap and (heap[0][2] != heap[0][3].version
                                    or heap[0][3].rid not in decoding):
                        heappop(heap)  # stale: preempted or re-added since
                    k = heap[0][0] - steps if heap else 1
                    free = num_blocks - used
                    if not reserve_all and k > 1 + free // n_dec * bs:  # blocks may run out
                        fitting = 1 + engine._max_steps_fitting(steps + 1, free)
                        if fitting < k:
                            k = fitting
                    if ratio and waiting and k > RATIO_RECHECK_STEPS:
                        k = RATIO_RECHECK_STEPS  # the decaying ratio may admit soon
                    if k < 1:
                        k = 1
                if k > 1:
                    p_series = series_of(decode_parts(n_dec, ctx), decode_parts(n_dec, ctx + n_dec),
                                         n_dec, False)
                    p_end_s = clock + p_series.time(k)
                else:
                    p_series = None
                    p_step_s = step_s(decode_parts(n_dec, ctx), n_dec, False)
                    p_end_s = clock + p_step_s
                p_chunks, p_n_dec, p_kv0, p_run = chunks, n_dec, ctx, not preempted
                busy, p_start_s, p_k = True, clock, k
                continue
            kv0 = dec_base + len(decoding) * steps  # (an SGLang prefill: decodes paused)
            shape = []
            tokens = n_dec
            for r, new in chunks:
                readout = 1 if r.computed + new == r.prompt + r.outputs else 0  # (not int(): a
                shape.append((r.computed, new, readout))  # type call parses its arguments)
                kv0 += r.computed
                tokens += new
            if dp > 1:  # data-parallel groups in lock-step: the busiest one's own prefill
                p_step_s = step_s(step_parts(n_dec, ctx if n_dec else 0, shape), tokens, True,
                                  busiest_group(n_dec, ctx if n_dec else 0, shape))
            else:
                p_step_s = step_s(step_parts(n_dec, ctx if n_dec else 0, shape), tokens, True)
            p_end_s = clock + p_step_s
            p_series, p_chunks, p_n_dec, p_kv0, p_run = None, chunks, n_dec, kv0, False
            busy, p_start_s, p_k = True, clock, 1
    finally:
        _store(engine, clock, steps, num_steps, used, busy_s, kv_token_seconds, peak,
               (dec_base, dec_left, dec_over), preemptions)
        engine.slot_steps = slot_steps
        if busy:  # (a run stopped early: the other engines' units in flight)
            engine.plan = Plan(p_start_s, p_k, p_series or StepSeries(p_step_s, 0.0, 0.0, 0.0, 0.0),
                               p_chunks, p_n_dec, p_kv0, p_run)


def run_one(engine: Engine, feed: Feed, log: Log,
            progress: Callable[[float, int], None] | None,
            stop: Callable[[Request], bool] | None) -> bool:
    """Every request of ``feed`` through one ``engine`` (which :func:`applies`); True when
    ``stop`` ended the run early."""
    gen = process(engine, feed, True, 0, log, stop, progress, [0])
    try:
        next(gen)
    except StopIteration as end:
        return end.value
    raise AssertionError("a coroutine given its feed does not yield")


def run_many(engines: Sequence[Engine], feed: Feed,
             route: Callable[[Sequence[Engine], int], int], log: Log,
             progress: Callable[[float, int], None] | None,
             stop: Callable[[Request], bool] | None) -> bool:
    """Every request of ``feed`` through ``engines`` (each :func:`applies`) behind a router
    (``route(engines, arrivals routed so far)``: the replica of the next arrival, reading the
    engines' queues): the engines' due instants on a heap in ``(time, push order)`` order, an
    arrival before any engine at equal times. True when ``stop`` ended the run early."""
    finished = [0]
    gens = [process(e, feed, False, i, log, stop, progress, finished)
            for i, e in enumerate(engines)]
    times, n, cursor = feed.times, feed.n, 0
    heappush, heappop = heapq.heappush, heapq.heappop
    heap: list[tuple[float, int, int, int]] = []  # (due, push order, engine, version)
    version = [0] * len(engines)  # an entry is stale once its engine's version moved on
    seq = 0
    inf = float("inf")
    try:
        dues = [next(g) for g in gens]
        while True:
            if cursor < n and (not heap or times[cursor] <= heap[0][0]):
                i = route(engines, cursor)
                due = gens[i].send(cursor)
                cursor += 1
                if due != dues[i]:  # woken, or its decode run cut short
                    dues[i] = due
                    version[i] += 1
                    heappush(heap, (due, seq, i, version[i]))
                    seq += 1
                continue
            if not heap:
                return False
            _, _, i, v = heappop(heap)
            if v != version[i]:
                continue
            due = dues[i] = gens[i].send(-1)
            if due < 0:
                return True
            if due != inf:
                version[i] += 1
                heappush(heap, (due, seq, i, version[i]))
                seq += 1
    finally:
        for g in gens:
            g.close()
