"""The scheduling algorithm of one engine replica, written once, and the loops that drive it.

:func:`process` is the engine's scheduler as a coroutine over its hot state in local variables
(a method call and a dozen attribute lookups per decision cost more than the decisions: the
coroutine keeps the clock, step counts, blocks in use and the decode set's running sums in
locals and writes them back to the :class:`~napkin.serving.engine.Engine` when it stops). Per
unit of work (one step, or a run of identical-composition decode steps in fast mode):

1. **commit** the unit in flight: tokens computed, first tokens and finishes stamped, blocks
   freed, one series row;
2. **plan** the next: decodes first (blocks reserved at admission under max-length
   reservation; the most recently admitted running request preempted while blocks run short),
   then partial prefills in admission order, then admissions first come first served while a
   sequence slot, the token budget and blocks last (SGLang: a prefill-only batch whenever one can
   be admitted under its ratio reserve, else a decode step);
3. **cost** it: a decode run up to the first completion, block shortage, window edge, SGLang
   re-check, scheduler look or end of batch waiting, timed in closed form from the running sums
   (:class:`~napkin.timing.series.StepSeries`), or a step with prefill chunks.

The policies' rules are the engine's small pieces (:meth:`Engine._chunk`, ``_blocks_needed``,
``_max_steps_fitting``, ``_preempt``, ``_ratio_reserve_tokens``, ``_holds_prompts``,
``_take_in``, ``_keys``, ``_series`` …); a feature that is off costs a test where it would act
(nothing once compiled for the engine's features: :mod:`napkin.serving.specialise`): prefix
caching and its host tier, sliding windows and exact mode (their steps are costed by
``_series``), basis recording, SGLang's receive interval, TensorRT-LLM's batch waiting, static
batching. ``tests/serving/test_pinned_runs.py`` pins 700 runs over all of them bit for bit to
the records of the two loops this module replaced.

Long runs of the plain path (one engine, open-loop arrivals, no feature on) take its compiled
twin, :mod:`napkin.serving.compiled_core`, which ``tests/serving/test_compiled.py`` pins to it
bit for bit. :mod:`napkin.serving.events` holds the loops that drive it;
:mod:`napkin.serving.scheduler_state` its small pieces around its locals (writing them back,
taking and freeing blocks, preempting, the frontend's jobs at a unit's end).
"""

import heapq
from collections.abc import Callable, Generator, Sequence
from typing import Protocol

from napkin.serving.engine import RATIO_RECHECK_STEPS, SERIES, Engine
from napkin.serving.recording import basis_at, basis_through
from napkin.serving.request import Request
from napkin.serving.scheduler_state import detokenized, preempt, retired, store, taken, unit
from napkin.timing.frontend import served
from napkin.timing.series import StepSeries

ARRIVED = -2
"""Sent to :func:`process`: the request in ``engine.arriving`` (``(t, request)``) reaches it."""
DUE = -1
"""Sent to :func:`process`: its due instant has come."""
RELEASED = -3
"""(Within :func:`process`: the frontend queue's head reaches the engine.)"""
STOPPED = -1.0
"""Yielded by :func:`process` once the sink asked to stop."""
DECODES, PREFILLS = 0, 1
"""The two phases of a step's scheduling (their order is the policy's)."""


class Feed(Protocol):
    """Open-loop arrivals as typed columns (:class:`napkin.serving.simulate.OpenFeed`)."""

    n: int
    times: Sequence[float]

    def take(self, payload: object) -> Request: ...


class Sink(Protocol):
    """Where finished requests go (:class:`napkin.serving.simulate.Log`)."""

    count: int
    """Requests finished so far (what progress reports)."""

    def add(self, r: Request, engine: int) -> bool:
        """Take a request ``engine`` finished; True ends the run."""
        ...


FEATURES = ("fast", "caching", "recording", "windows", "static", "batch_wait", "recv",
            "host_tier", "plain", "counting", "gating", "cutting", "frontend", "lagging")
"""The switches :func:`process` reads, in :func:`features`' order."""


def features(engine: Engine) -> tuple[bool, ...]:
    """``engine``'s switches (:data:`FEATURES`): fast mode, prefix caching, basis recording,
    sliding windows, static batching, TensorRT-LLM's batch waiting, SGLang's receive interval,
    a host KV tier; then the plain path (fast, no windows, no recording: units costed from the
    running sums) and the features that act at a unit's commit, gate a plan, cut a decode
    run; last, a frontend queue (:mod:`napkin.timing.frontend`) and async scheduling."""
    fast, caching, recording = engine.fast, engine.caching, engine.basis is not None
    windows, static, batch_wait = bool(engine.windows), engine.static, engine.batch_wait
    recv, host_tier = engine.recv_interval > 1, engine.pool.host_blocks > 0
    return (fast, caching, recording, windows, static, batch_wait, recv, host_tier,
            fast and not windows and not recording, recording or recv or batch_wait,
            recv or static, windows or recv or batch_wait, engine.frontend is not None,
            engine.lagging)


def process(engine: Engine, feed: Feed | None, own: bool, index: int, sink: Sink,
            progress: Callable[[float, int], None] | None, sync: bool = False
            ) -> Generator[float, int, bool]:
    """``engine``'s scheduler as a coroutine (see the module docstring).

    It yields when the engine next needs the loop: the end of its unit in flight, the instant
    an arrival woke it, or infinity when idle. Send it the index of an arrival of ``feed``
    routed to it (it reaches the engine at ``feed.times[i]``), :data:`ARRIVED` for the request
    in ``engine.arriving``, or :data:`DUE` when its due instant comes: it commits the unit,
    gives the finished requests to ``sink`` (as engine ``index``), calls ``progress`` and plans
    the next unit. A decode run in flight stops at the step boundary after an arrival. Once the
    sink asks to stop it yields :data:`STOPPED`. Closing it writes its state back to the
    engine (the unit in flight as ``engine.plan``); with ``sync`` it does so at every yield too
    (a router that reads the engines' blocks in use).

    With ``own`` (one engine alone) it takes every arrival of ``feed`` itself — the next event
    is the earlier of the next arrival and its due instant, an arrival first at equal times —
    and returns, without yielding, whether the sink ended the run."""
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
    # the features (each off in a plain run; :mod:`napkin.serving.specialise` compiles them in)
    fast, caching, recording, windows, static, batch_wait, recv, host_tier, plain, counting, \
        gating, cutting, frontend, lagging = features(engine)
    fe, tokenizing = engine.frontend, engine.tokenizing
    retiring = engine.retiring
    seats = max_seqs - len(retiring)  # async scheduling: the retiring keep their slots
    num_blocks = pool.num_blocks
    running, prefilling, decoding = engine.running, engine.prefilling, engine.decoding
    waiting, inbox = engine.waiting, engine.inbox
    residues, heap = engine.residues, engine.finish_heap
    series, series_row = engine.series, SERIES.pack
    clock, steps, num_steps, used = engine.clock, engine.steps, engine.num_steps, pool.used
    busy_s, kv_token_seconds, peak = engine.busy_s, engine.kv_token_seconds, engine.peak_blocks
    dec_base, dec_left, dec_over = engine.dec_base, engine.dec_left, engine.dec_over_clip
    preemptions, slot_steps = engine.preemptions, engine.slot_steps
    heappush, heappop = heapq.heappush, heapq.heappop
    inf, due_signal, decodes = float("inf"), DUE, DECODES  # (locals: read every event)
    wake_s = -1.0  # an idle engine's start, once an arrival woke it (< 0: not woken)
    # the unit in flight (a Plan's fields; busy is False when idle); a plain single step has
    # no series: its time p_step_s is all there is to know
    busy, p_start_s, p_k, p_end_s, p_n_dec, p_kv0, p_run = False, 0.0, 0, 0.0, 0, 0, False
    p_step_s = 0.0
    p_series: StepSeries | None = None
    p_chunks: list[tuple[Request, int]] = []
    p_basis = None
    if engine.plan is not None:  # an engine a stopped run left with a unit in flight
        plan = engine.plan
        busy, p_start_s, p_k, p_end_s, p_series = True, plan.start_s, plan.steps, plan.end_s, \
            plan.series
        p_n_dec, p_kv0, p_run, p_chunks, p_basis = plan.n_dec, plan.kv_tokens0, \
            plan.decode_run, plan.chunks, plan.basis
    times, n, cursor = (feed.times, feed.n, 0) if feed is not None else ((), 0, 0)
    take = feed.take if feed is not None else None

    try:
        while True:
            due = p_end_s if busy else (wake_s if wake_s >= 0 else inf)
            if frontend and tokenizing and tokenizing[0][0] <= due:
                due = tokenizing[0][0]  # a request the frontend has tokenized reaches it
            if not own:
                if sync:
                    store(engine, clock, steps, num_steps, used, busy_s, kv_token_seconds,
                          peak, (dec_base, dec_left, dec_over), preemptions)
                    engine.plan = unit(busy, p_start_s, p_k, p_series, p_step_s, p_chunks,
                                       p_n_dec, p_kv0, p_run, p_basis)
                i = yield due
            elif cursor < n and times[cursor] <= due:
                i = cursor
                cursor += 1
            elif due == inf:
                return False
            else:
                i = due_signal
            if frontend and i == due_signal and tokenizing and tokenizing[0][0] <= due:
                i = RELEASED
            if i != due_signal:  # --------------------------------------------------- an arrival
                if i >= 0:
                    req = take(i)  # type: ignore[misc]
                    t = req.enqueue_s = times[i]
                elif i == ARRIVED:
                    t, req = engine.arriving
                    req.enqueue_s = t
                else:  # RELEASED: out of the frontend queue
                    t, req = tokenizing.popleft()
                    req.enqueue_s = t
                if req.prompt + req.max_out > max_request or req.prompt > max_prompt:
                    engine._refuse(req)  # (raises: the run is abandoned)
                # into the frontend queue, tokenized in turn (not a request whose KV another
                # pool sent: that pool's frontend tokenized it)
                if frontend and i != RELEASED and not req.transferred:
                    work = fe.tokenize_s(req.prompt)  # type: ignore[union-attr]
                    engine.frontend_busy_s += work
                    ready = engine.frontend_free_s = served(engine.frontend_free_s, t, work)
                    tokenizing.append((ready, req))
                    continue
                if recording:
                    req.basis_arrival = basis_at(engine.basis_sum, unit(
                        busy, p_start_s, p_k, p_series, p_step_s, p_chunks, p_n_dec, p_kv0,
                        p_run, p_basis), t)
                if not recv or not (busy or running):
                    waiting.append(req)
                    if not busy:
                        if wake_s < 0:
                            if t > clock:
                                clock = t
                            wake_s = t
                    elif p_run and p_k > 1 and (not static or engine.batch_open):
                        p_k = p_series.steps_until(t - p_start_s, p_k)  # stop at the boundary
                        if p_k < 1:
                            p_k = 1
                        p_end_s = p_start_s + p_series.time(p_k)
                    continue
                inbox.append(req)  # taken in at the scheduler's next look
                if not busy:
                    if wake_s < 0:
                        if t > clock:
                            clock = t
                        wake_s = t
                elif p_run and p_k > 1:
                    p_k = engine._next_look(p_series.steps_until(t - p_start_s, p_k), p_k)
                    p_end_s = p_start_s + p_series.time(p_k)
                continue
            wake_s = -1.0
            # ------------------------------------------------------------------------ commit
            if busy:
                k = p_k
                clock = p_end_s
                n_dec = p_n_dec
                if lagging and retiring:  # the unit before last's output, handled in this one
                    used, seats = retired(engine, used), max_seqs
                kv_token_seconds += (p_kv0 * p_step_s if p_series is None
                                     else p_series.weighted(k, p_kv0, n_dec))
                if k > 1 and not reserve_all:  # the run's new blocks (from the residues)
                    need = engine._blocks_needed(steps + 1, k - 1)
                    if caching:
                        used = taken(pool, used, need)
                    elif need <= num_blocks - used:
                        used += need
                busy_s += clock - p_start_s
                if n_dec:  # the decode clock: a prefill-only step advances no decode
                    steps += k
                if counting:
                    if recording:
                        engine.basis_sum = engine.basis_sum + basis_through(p_basis, k)
                    if recv:  # SGLang's recv skipper: a decode step counts 1, a prefill looks
                        engine.since_poll = engine.recv_interval if p_chunks \
                            else engine.since_poll + k
                    if batch_wait and engine.holding:
                        engine.held(k)
                num_steps += k
                slot_steps += (n_dec + len(p_chunks)) * k
                finished: list[Request] = []
                for req, new in p_chunks:
                    req.computed += new
                    if req.computed < req.prompt + req.outputs:
                        continue
                    del prefilling[req.rid]
                    if caching:
                        engine._register_prompt(req)
                    req.outputs += 1
                    if req.outputs == 1:
                        req.first_token_s = clock
                        if recording:
                            req.basis_first = engine.basis_sum
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
                if recording:
                    for req in finished:
                        req.basis_finish = engine.basis_sum
                        if req.first_token_s != req.first_token_s:  # (its first token is now)
                            req.basis_first = engine.basis_sum
                for req in finished:
                    req.finish_s = clock
                    if req.first_token_s != req.first_token_s:
                        req.first_token_s = clock
                    del running[req.rid]
                    if lagging:  # freed once the next unit is planned
                        retiring.append(req)
                        seats -= 1
                        continue
                    if caching:
                        engine._register_outputs(req)
                        pool.used = used
                        engine._release(req)
                        used = pool.used
                    else:
                        used -= req.reserved if reserve_all else -(-req.computed // bs)
                if frontend:  # the client sees the unit's tokens once the frontend has them
                    detokenized(engine, clock, n_dec * k, p_chunks, prefilling, finished)
                series += series_row(clock, used, len(running), len(waiting))
                for req in finished:
                    if sink.add(req, index):
                        if own:
                            return True
                        yield STOPPED  # (the loop closes the coroutine)
                        return True
            if progress is not None:
                engine.clock = clock
                progress(clock, sink.count)
            if not (running or waiting) and not inbox:
                if lagging and retiring:  # an idle scheduler handles the output at once
                    used, seats = retired(engine, used), max_seqs
                continue
            # -------------------------------------------------------------------------- plan
            if gating:
                if recv:
                    engine._take_in()
                if static and not running:
                    engine.batch_open = True  # the previous batch has wholly finished
            budget = max_tokens
            preempted = False
            n_dec = 0
            chunks: list[tuple[Request, int]] = []
            for phase in phases:
                if phase == decodes:  # 1. decodes first (blocks reserved at admission under
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
                        used, preemptions, dec_base, dec_left, dec_over = preempt(
                            engine, victim, clock, steps, num_steps, used, busy_s,
                            kv_token_seconds, peak, (dec_base, dec_left, dec_over), preemptions)
                        need -= was_due
                        preempted = True
                    n_dec = len(decoding)
                    if need:
                        if caching:
                            used = taken(pool, used, need)
                        elif need <= num_blocks - used:
                            used += need
                    budget -= n_dec
                    if batch_wait:  # TensorRT-LLM may hold new prompts back this step
                        engine.holding = engine._holds_prompts(n_dec, budget, num_steps)
                    continue
                if batch_wait and engine.holding:
                    continue
                if not (prefilling or waiting):
                    if static:
                        engine.batch_open = False  # a static batch closes with the queue empty
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
                        blocks = 0 if reserve_all else (  # ⌈(c + new)/bs⌉ − ⌈c/bs⌉
                            (-req.computed // bs) - (-(req.computed + new) // bs))
                        while blocks > num_blocks - used:
                            victim = next((r for r in reversed(running.values())
                                           if r.rid not in decoding and r.rid not in scheduled),
                                          None)
                            if victim is req and preempt_self:  # vLLM: running[-1], itself
                                used, preemptions, dec_base, dec_left, dec_over = preempt(
                                    engine, req, clock, steps, num_steps, used, busy_s,
                                    kv_token_seconds, peak, (dec_base, dec_left, dec_over),
                                    preemptions)
                                preempted = True
                            if victim is None or victim is req:
                                break
                            used, preemptions, dec_base, dec_left, dec_over = preempt(
                                engine, victim, clock, steps, num_steps, used, busy_s,
                                kv_token_seconds, peak, (dec_base, dec_left, dec_over),
                                preemptions)
                            preempted = True
                        if blocks > num_blocks - used or req.rid not in running:
                            break
                        if caching:
                            used = taken(pool, used, blocks)
                        else:
                            used += blocks
                        chunks.append((req, new))
                        scheduled.add(req.rid)
                        budget -= new
                if preempted:
                    continue
                reserve = 0.0  # 3. admissions, first come first served
                if ratio:  # (the engine's running sums, as the coroutine holds them now)
                    engine.steps, engine.dec_left, engine.dec_over_clip = steps, dec_left, dec_over
                    reserve = engine._ratio_reserve_tokens()
                admitting = not static or engine.batch_open  # (a closed batch admits no one)
                while admitting and waiting and budget > 0 and len(running) < seats:
                    req = waiting[0]
                    known = req.transferred  # KV another engine sent counts as computed
                    if caching:  # prefix hits on the GPU, then in the host tier
                        pool.used = used
                        hits = engine._prefix_hits(req)
                        if hits.cached_tokens > known:
                            known = hits.cached_tokens
                        hit = hits.gpu_blocks
                        free = num_blocks - used - hits.evictable  # (cached ones count as free)
                    else:
                        hit, free = 0, num_blocks - used
                    new = chunk(req, known, budget)
                    if new == 0:
                        budget = 0  # (this step's budget cannot hold it)
                        break
                    if reserve_all:
                        blocks = -(-(req.prompt + req.max_out) // bs)
                        req.reserved = blocks
                    else:
                        blocks = -(-(known + new) // bs) - hit
                    if blocks > free:
                        break
                    if full_prompt and -(-(req.prompt + req.outputs) // bs) - hit > free:
                        break
                    if ratio:  # (SGLang: no prefix caching, nothing cached)
                        future = new_token_ratio(steps - engine.ratio_reset_step) * min(
                            req.max_out - req.outputs, clip)
                        if req.prompt + req.outputs + future + reserve > free * bs:
                            break
                        reserve += future
                    waiting.popleft()
                    if caching:
                        engine._take_prefix(req, hits, blocks)
                        used = pool.used
                    else:
                        used += blocks
                    req.computed = known
                    req.transferred = 0  # a preemption recomputes here
                    if req.first_scheduled_s != req.first_scheduled_s:  # NaN: first time
                        req.first_scheduled_s = clock
                    req.queue_wait_s += clock - req.enqueue_s
                    running[req.rid] = req
                    prefilling[req.rid] = req
                    chunks.append((req, new))
                    budget -= new
                if static and engine.batch_open:
                    # a static batch forms from the queue: it stays open only when this
                    # step's token budget stopped it
                    engine.batch_open = (budget <= 0 and bool(waiting)
                                         and len(running) < seats)
            if not n_dec and not chunks:
                if lagging and retiring:  # nothing runs: the output is handled, plan again
                    used, seats = retired(engine, used), max_seqs
                    wake_s = clock
                continue
            # ------------------------------------------------- 4. the unit's length and cost
            k = 1
            if not chunks and not preempted and fast:  # a decode run
                k = 1
                while heap:
                    top = heap[0]
                    if top[2] == top[3].version and top[3].rid in decoding:
                        k = top[0] - steps
                        break
                    heappop(heap)  # stale: preempted or re-added since
                free = num_blocks - used
                if not reserve_all and k > 1 + free // n_dec * bs:  # blocks may run out
                    fitting = 1 + engine._max_steps_fitting(steps + 1, free)
                    if fitting < k:
                        k = fitting
                if ratio and waiting and k > RATIO_RECHECK_STEPS:
                    k = RATIO_RECHECK_STEPS  # the decaying ratio may admit soon
                if lagging and retiring and (waiting or prefilling):
                    k = 1  # what the finished requests hold frees after one step
                if cutting:
                    if windows:  # costs bend where a context reaches a window
                        engine.steps = steps
                        k = min(k, engine._window_cut())
                    if recv and inbox:  # stop where the scheduler next looks
                        k = min(k, engine.recv_interval - engine.since_poll)
                    if batch_wait and engine.holding:  # … or where it stops holding prompts
                        k = min(k, engine.hold_left)
                if k < 1:
                    k = 1
            if plain and not chunks:
                ctx = dec_base + n_dec * steps
                if k > 1:
                    p_series = series_of(decode_parts(n_dec, ctx),
                                         decode_parts(n_dec, ctx + n_dec), n_dec, False)
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
            if plain and not (host_tier and engine.loading_s):  # a step with prefill chunks
                ctx = dec_base + n_dec * steps if n_dec else 0
                if dp > 1:  # data-parallel groups in lock-step: the busiest one's own prefill
                    p_step_s = step_s(step_parts(n_dec, ctx, shape), tokens, True,
                                      busiest_group(n_dec, ctx, shape))
                else:
                    p_step_s = step_s(step_parts(n_dec, ctx, shape), tokens, True)
                p_series, p_run = None, False
                p_end_s = clock + p_step_s
            else:  # windows, exact mode, recording, host loads: the engine's own costing
                engine.steps, engine.dec_base = steps, dec_base
                p_series, p_basis = engine._series(n_dec, shape, k)
                if engine.loading_s:  # host KV loads ahead of the step's forward
                    p_series = p_series.plus(engine.loading_s)
                    engine.host_load_s += engine.loading_s
                    engine.loading_s = 0.0
                p_end_s = clock + p_series.time(k)
                p_run = fast and not chunks and not preempted
            p_chunks, p_n_dec, p_kv0 = chunks, n_dec, kv0
            busy, p_start_s, p_k = True, clock, k
    finally:
        store(engine, clock, steps, num_steps, used, busy_s, kv_token_seconds, peak,
              (dec_base, dec_left, dec_over), preemptions)
        engine.slot_steps = slot_steps
        engine.plan = unit(busy, p_start_s, p_k, p_series, p_step_s, p_chunks, p_n_dec, p_kv0,
                           p_run, p_basis)
