"""The plain path of :func:`napkin.serving.scheduler.process`, compiled with numba.

One engine on open-loop arrivals with none of the scheduler's features on (fast mode, no prefix
caching, windows, recording, static batching, batch waiting, receive interval, host tier,
frontend or async scheduling), a policy that mixes prefill chunks into decode steps (vLLM, or
TensorRT-LLM's max-length reservation) and a timer that is the roofline or a fitted profile:
the same algorithm, unit for unit, over arrays instead of request objects. It is the compiled
twin of that path and :func:`~napkin.serving.scheduler.process` is its reference:
``tests/serving/test_compiled.py`` replays both on workloads that preempt, chunk, reserve and
cross compute and memory lines, and requires the same records bit for bit. Nothing here decides
a FLOP or a byte: the step's rates come from the engine's :class:`~napkin.accounting.linear.
LinearCost` and timer (:mod:`napkin.serving.compiled`), its weight bytes and routed-expert times
as tables those objects computed, and :mod:`napkin.serving.compiled_timing` times the steps.

Request state is a set of arrays indexed by arrival position; ``running`` and ``prefilling``
(ordered dicts in the reference) are doubly linked lists in admission order, ``waiting`` a ring
buffer, the finish heap the reference's ``(step, rid, version)`` triples as the rows of an array
(:mod:`napkin.serving.compiled_heap`).
"""

import numpy as np
from numba import njit

from napkin.serving.compiled_heap import pop, push
from napkin.serving.compiled_timing import (
    decode_parts,
    decode_series,
    series_time,
    series_weighted,
    step_parts,
    step_s,
    steps_until,
)


@njit(cache=True)
def _unlink(i: int, prev: np.ndarray, nxt: np.ndarray, ends: np.ndarray) -> None:
    """Take ``i`` out of a linked list (``ends``: head, tail, length)."""
    p, q = prev[i], nxt[i]
    if p >= 0:
        nxt[p] = q
    else:
        ends[0] = q
    if q >= 0:
        prev[q] = p
    else:
        ends[1] = p
    prev[i] = nxt[i] = -2
    ends[2] -= 1


@njit(cache=True)
def _append(i: int, prev: np.ndarray, nxt: np.ndarray, ends: np.ndarray) -> None:
    """Put ``i`` at a linked list's tail."""
    prev[i], nxt[i] = ends[1], -1
    if ends[1] >= 0:
        nxt[ends[1]] = i
    else:
        ends[0] = i
    ends[1] = i
    ends[2] += 1


INTS = ("computed", "outputs", "c0", "s0", "o0", "version", "reserved", "preemptions",
        "scheduled", "r_prev", "r_next", "f_prev", "f_next", "order", "queue")
"""The per-arrival integer arrays of a run's state (:func:`fresh`), in their tuple's order:
tokens computed and output, the decode bookkeeping (context, step and outputs at admission to
the decode set, version), blocks reserved, preemptions, the plan that last scheduled a chunk,
the running and prefilling lists' links, the finishing order and the waiting ring."""
FLOATS = ("first_scheduled_s", "first_token_s", "finish_s", "queue_wait_s", "enqueue_s")
"""The per-arrival float arrays, in their tuple's order."""
SCALARS_I = ("steps", "num_steps", "used", "peak_blocks", "dec_base", "dec_left",
             "dec_over_clip", "decoding", "preemptions", "slot_steps", "w_head", "w_len",
             "busy", "p_k", "p_n_dec", "p_kv0", "p_run", "has_series", "p_count", "cursor",
             "plan_id", "done", "units", "side", "line", "ratio_reset_step", "missed",
             "stopped", "heap_len")
"""The integer scalars of a run's state."""
SCALARS_F = ("clock", "busy_s", "kv_token_seconds", "wake_s", "p_start", "p_end", "p_step_s",
             "c0", "dc", "m0", "dm", "overhead_s")
"""The float scalars of a run's state (the last five: the decode run in flight's series)."""
_N_SI, _N_SF = len(SCALARS_I), len(SCALARS_F)


@njit(cache=True)
def fresh(n: int, max_seqs: int, bs: int) -> tuple:
    """A run's state before its first arrival: the per-arrival arrays (:data:`INTS`,
    :data:`FLOATS`, whether each decodes), the small ones (residues, the running and prefilling
    lists' head, tail and length, the chunk buffers of the unit being planned and in flight,
    scratch buffers), the series columns, the finish heap's rows (its length a scalar) and the
    scalars (:data:`SCALARS_I`,
    :data:`SCALARS_F`)."""
    i32 = np.int32  # (tokens, blocks, counts and positions: 32 bits hold them; steps not)
    ints = (np.zeros(n, i32), np.zeros(n, i32), np.zeros(n, i32), np.zeros(n, np.int64),
            np.zeros(n, i32), np.zeros(n, i32), np.zeros(n, i32), np.zeros(n, i32),
            np.full(n, -1, np.int64), np.full(n, -2, i32), np.full(n, -2, i32),
            np.full(n, -2, i32), np.full(n, -2, i32), np.empty(n, i32),
            np.empty(max(n, 1), i32))
    floats = (np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan), np.zeros(n),
              np.zeros(n))
    m = max_seqs + 1
    small = (np.zeros(bs, np.int64), np.array([-1, -1, 0], np.int64),
             np.array([-1, -1, 0], np.int64), np.empty(m, np.int64), np.empty(m, np.int64),
             np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64),
             np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64),
             np.empty(m, np.int64))
    cap = 2 * n + 16
    series = (np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64),
              np.empty(cap, np.int64))
    si = np.zeros(_N_SI, np.int64)
    si[23] = 1  # a series' side: one line
    si[24] = 1
    sf = np.zeros(_N_SF)
    sf[3] = -1.0  # not woken
    return (ints, floats, np.zeros(n, np.bool_), small, series, np.empty((m + 16, 3), np.int64),
            si, sf)


@njit(cache=True)
def run_core(times: np.ndarray, prompt: np.ndarray, max_out: np.ndarray, limits: np.ndarray,
             dec_tokens: np.ndarray, window: np.ndarray, rates: np.ndarray,
             w_readout: np.ndarray, w_none: np.ndarray, fitted: bool, timer: np.ndarray,
             routed: np.ndarray, ratio: np.ndarray, arrival: np.ndarray,
             stop_rule: np.ndarray, feed: np.ndarray, n_fed: int, state: tuple,
             max_units: int, until: float) -> tuple:
    """The arrivals of ``times`` (reaching the engine then; ``prompt`` and ``max_out`` per
    arrival, whose position is its request id) through one engine, as
    :func:`~napkin.serving.scheduler.process` runs its plain path, from ``state``
    (:func:`fresh`, or what an earlier call returned) until every request has finished or the
    series holds ``max_units`` units; returns the state (its ``stopped`` scalar 1 when every
    request has finished). ``limits``: blocks, max sequences, token budget, block size,
    long-prefill threshold, chunked prefill, full-prompt gate, max-length reservation, preempt
    itself, the policy's clip, SGLang's re-check steps, mixed batches, admission by ratio;
    ``ratio``: the ratio's start, floor and decay steps. ``stop_rule`` (an
    :class:`~napkin.serving.slo_stop.SLOMissStop`: on, warm-up, counted, share, TTFT, TPOT and
    end-to-end bounds; ``arrival``: each request's arrival) stops the run after the request
    that makes the SLO unreachable (``stopped`` 2), as the scheduler's sink does. The engine
    takes the arrivals ``feed[:n_fed]`` (positions in ``times``, in time order: every arrival
    for one engine alone; those routed to it so far for a replica,
    :mod:`napkin.serving.compiled_routing`), and after its first event a call returns before
    an event at ``until`` or later (infinity for one engine alone: another replica's event or
    the next arrival comes first)."""
    n = times.shape[0]
    num_blocks, max_seqs, max_tokens, bs = limits[0], limits[1], limits[2], limits[3]
    threshold, chunked, full_prompt = limits[4], limits[5] != 0, limits[6] != 0
    reserve_all, preempt_self, clip = limits[7] != 0, limits[8] != 0, limits[9]
    recheck, mixed, ratio_on = limits[10], limits[11] != 0, limits[12] != 0
    stop_on, warmup, counted = stop_rule[0] != 0, int(stop_rule[1]), int(stop_rule[2])
    inf = np.inf
    ints, floats, decoding, small, series, heap, si, sf = state
    (computed, outputs, c0s, s0s, o0s, version, reserved, preempts, scheduled, r_prev, r_next,
     f_prev, f_next, order, queue) = ints
    first_sched, first_token, finish, queue_wait, enqueue = floats
    (residues, running, prefilling, chunk_req, chunk_new, p_req, p_new, finished, snapshot, cs,
     ns, os_) = small
    s_t, s_blocks, s_running, s_waiting = series
    links = (r_prev, r_next, running, f_prev, f_next, prefilling)
    queues = (queue, enqueue, computed, reserved, preempts)
    (steps, num_steps, used, peak, dec_base, dec_left, dec_over, n_decoding, preemptions,
     slot_steps, w_head, w_len, busy_i, p_k, p_n_dec, p_kv0, p_run_i, has_series_i, p_count,
     cursor, plan_id, done, units, side, line_i, ratio_reset, missed, _, hn) = si
    busy, p_run, has_series = busy_i != 0, p_run_i != 0, has_series_i != 0
    clock, busy_s, kvts, wake_s, p_start, p_end, p_step_s, c0_, dc_, m0_, dm_, oh_ = sf
    p_series = (c0_, dc_, m0_, dm_, oh_, side, line_i != 0)
    stopped = 0

    events = 0
    while True:
        if units >= max_units:
            break
        events += 1
        due = p_end if busy else (wake_s if wake_s >= 0 else inf)
        if cursor < n_fed and times[feed[cursor]] <= due:  # ------------------------ an arrival
            i = feed[cursor]
            cursor += 1
            t = times[i]
            enqueue[i] = t
            queue[(w_head + w_len) % n] = i
            w_len += 1
            if not busy:
                if wake_s < 0:
                    if t > clock:
                        clock = t
                    wake_s = t
            elif p_run and p_k > 1:
                p_k = steps_until(p_series, t - p_start, p_k)
                if p_k < 1:
                    p_k = 1
                p_end = p_start + series_time(p_series, p_k)
            continue
        if events > 1 and until <= due < inf:
            break
        if due == inf:
            stopped = 1
            break
        wake_s = -1.0
        # ---------------------------------------------------------------------- commit
        if busy:
            k = p_k
            clock = p_end
            n_dec = p_n_dec
            kvts += (series_weighted(p_series, k, p_kv0, n_dec) if has_series
                     else p_kv0 * p_step_s)
            if k > 1 and not reserve_all:  # the run's new blocks (from the residues)
                need = blocks_needed(steps + 1, k - 1, residues, n_decoding, bs)
                if need <= num_blocks - used:
                    used += need
            busy_s += clock - p_start
            if n_dec:
                steps += k
            num_steps += k
            slot_steps += (n_dec + p_count) * k
            nf = 0
            for j in range(p_count):
                r, new = p_req[j], p_new[j]
                computed[r] += new
                if computed[r] < prompt[r] + outputs[r]:
                    continue
                _unlink(r, f_prev, f_next, prefilling)
                outputs[r] += 1
                if outputs[r] == 1:
                    first_token[r] = clock
                if outputs[r] >= max_out[r]:
                    finished[nf] = r
                    nf += 1
                else:
                    c0s[r], s0s[r], o0s[r] = computed[r], steps, outputs[r]
                    decoding[r] = True
                    n_decoding += 1
                    dec_base += c0s[r] - steps
                    dec_left += max_out[r] - o0s[r] + steps
                    dec_over += 1 if max_out[r] - o0s[r] > clip else 0
                    residues[(steps - c0s[r]) % bs] += 1
                    version[r] += 1
                    heap, hn = push(heap, hn, steps + max_out[r] - o0s[r], r, version[r])
            busy = False
            if used > peak:
                peak = used
            while hn > 0 and heap[0, 0] <= steps:
                hn, _, r, ver = pop(heap, hn)
                if ver != version[r] or not decoding[r]:
                    continue
                s0, c0, o0 = s0s[r], c0s[r], o0s[r]
                computed[r], outputs[r] = c0 + steps - s0, o0 + steps - s0
                decoding[r] = False
                n_decoding -= 1
                dec_base -= c0 - s0
                dec_left -= max_out[r] - o0 + s0
                dec_over -= 1 if max_out[r] - o0 > clip else 0
                residues[(s0 - c0) % bs] -= 1
                version[r] += 1
                finished[nf] = r
                nf += 1
            for j in range(nf):
                r = finished[j]
                finish[r] = clock
                if first_token[r] != first_token[r]:
                    first_token[r] = clock
                _unlink(r, r_prev, r_next, running)
                used -= reserved[r] if reserve_all else -(-computed[r] // bs)
            if units == s_t.shape[0]:
                s_t, s_blocks = _grow(s_t), _grow(s_blocks)
                s_running, s_waiting = _grow(s_running), _grow(s_waiting)
            s_t[units], s_blocks[units] = clock, used
            s_running[units], s_waiting[units] = running[2], w_len
            units += 1
            for j in range(nf):
                r = finished[j]
                order[done] = r
                done += 1
                if stop_on and r >= warmup:  # SLOMissStop
                    ttft = first_token[r] - arrival[r]
                    tpot = ((finish[r] - first_token[r]) / (max_out[r] - 1) if max_out[r] > 1
                            else 0.0)
                    if not (ttft <= stop_rule[4] and tpot <= stop_rule[5]
                            and finish[r] - arrival[r] <= stop_rule[6]):
                        missed += 1
                    if (counted - missed) / counted < stop_rule[3]:
                        stopped = 2
                        break
            if stopped:
                break
        if running[2] == 0 and w_len == 0:
            continue
        # ------------------------------------------------------------------------ plan
        plan_id += 1
        budget = max_tokens
        preempted = False
        count = 0
        n_dec = 0
        for phase in range(2):
            if (phase == 0) != mixed:  # the prefills' phase (SGLang's first)
                # 2. partial prefills in admission order, 3. admissions
                if not (prefilling[2] or w_len):
                    continue
                if prefilling[2] and budget > 0:
                    m = 0
                    j = prefilling[0]
                    while j >= 0:
                        snapshot[m] = j
                        m += 1
                        j = f_next[j]
                    for s in range(m):
                        r = snapshot[s]
                        if budget <= 0:
                            break
                        if f_prev[r] == -2:
                            continue  # preempted while scheduling an earlier chunk
                        new = _chunk(prompt[r] + outputs[r] - computed[r], budget, chunked,
                                     outputs[r], threshold)
                        if new == 0:
                            break
                        blocks = 0 if reserve_all else (
                            (-computed[r] // bs) - (-(computed[r] + new) // bs))
                        while blocks > num_blocks - used:
                            victim = running[1]
                            while victim >= 0 and (decoding[victim]
                                                   or scheduled[victim] == plan_id):
                                victim = r_prev[victim]
                            if victim == r and preempt_self:
                                used, w_head, w_len = _requeue(r, clock, used, w_head, w_len,
                                                               links, queues, bs, reserve_all)
                                preemptions += 1
                                preempted = True
                            if victim < 0 or victim == r:
                                break
                            used, w_head, w_len = _requeue(victim, clock, used, w_head,
                                                           w_len, links, queues, bs,
                                                           reserve_all)
                            preemptions += 1
                            preempted = True
                        if blocks > num_blocks - used or r_prev[r] == -2:
                            break
                        used += blocks
                        chunk_req[count], chunk_new[count] = r, new
                        count += 1
                        scheduled[r] = plan_id
                        budget -= new
                if not preempted:
                    reserve = 0.0
                    if ratio_on:
                        reserve = _ratio_reserve(steps - ratio_reset, ratio, clip, dec_over,
                                                 dec_left - n_decoding * steps, steps, running,
                                                 r_next, decoding, max_out, o0s, s0s,
                                                 prefilling, f_next, outputs)
                    while w_len and budget > 0 and running[2] < max_seqs:
                        r = queue[w_head]
                        free = num_blocks - used
                        new = _chunk(prompt[r] + outputs[r], budget, chunked, outputs[r],
                                     threshold)
                        if new == 0:
                            budget = 0
                            break
                        if reserve_all:
                            blocks = -(-(prompt[r] + max_out[r]) // bs)
                            reserved[r] = blocks
                        else:
                            blocks = -(-new // bs)
                        if blocks > free:
                            break
                        if full_prompt and -(-(prompt[r] + outputs[r]) // bs) > free:
                            break
                        if ratio_on:
                            future = _new_token_ratio(steps - ratio_reset, ratio) * min(
                                max_out[r] - outputs[r], clip)
                            if prompt[r] + outputs[r] + future + reserve > free * bs:
                                break
                            reserve += future
                        w_head = (w_head + 1) % n
                        w_len -= 1
                        used += blocks
                        computed[r] = 0
                        if first_sched[r] != first_sched[r]:
                            first_sched[r] = clock
                        queue_wait[r] += clock - enqueue[r]
                        _append(r, r_prev, r_next, running)
                        _append(r, f_prev, f_next, prefilling)
                        chunk_req[count], chunk_new[count] = r, new
                        count += 1
                        budget -= new
                continue
            # 1. decodes (first; SGLang: only when no prefill batch formed)
            if count:
                break
            preempted = False
            need = residues[steps % bs] if n_decoding and not reserve_all else 0
            if need > num_blocks - used:
                ratio_reset = steps  # a retraction: SGLang resets its ratio
            while need > num_blocks - used and running[2]:
                victim = running[1]
                due_now = decoding[victim] and (s0s[victim] - c0s[victim]) % bs == steps % bs
                was_due = 1 if due_now else 0
                if decoding[victim]:  # (engine._preempt: out of the decode set, then released)
                    done_steps = steps - s0s[victim]
                    computed[victim] = c0s[victim] + done_steps
                    outputs[victim] = o0s[victim] + done_steps
                    decoding[victim] = False
                    n_decoding -= 1
                    dec_base -= c0s[victim] - s0s[victim]
                    dec_left -= max_out[victim] - o0s[victim] + s0s[victim]
                    dec_over -= 1 if max_out[victim] - o0s[victim] > clip else 0
                    residues[(s0s[victim] - c0s[victim]) % bs] -= 1
                    version[victim] += 1
                used, w_head, w_len = _requeue(victim, clock, used, w_head, w_len, links,
                                               queues, bs, reserve_all)
                preemptions += 1
                need -= was_due
                preempted = True
            n_dec = n_decoding
            if need and need <= num_blocks - used:
                used += need
            budget -= n_dec
        if not n_dec and not count:
            continue
        # ------------------------------------------------- 4. the unit's length and cost
        k = 1
        if not count and not preempted:  # a decode run
            while hn > 0:
                r = heap[0, 1]
                if heap[0, 2] == version[r] and decoding[r]:
                    k = heap[0, 0] - steps
                    break
                hn, _, _, _ = pop(heap, hn)
            free = num_blocks - used
            if not reserve_all and k > 1 + free // n_dec * bs:
                fitting = 1 + _max_steps_fitting(steps + 1, free, n_decoding, residues, bs)
                if fitting < k:
                    k = fitting
            if ratio_on and w_len and k > recheck:
                k = recheck  # the decaying ratio may admit soon
            if k < 1:
                k = 1
        p_req[:count] = chunk_req[:count]  # (copied, not swapped: a state's arrays stay put)
        p_new[:count] = chunk_new[:count]
        p_count = count
        if not count:
            ctx = dec_base + n_dec * steps
            if k > 1:
                p_series = decode_series(decode_parts(n_dec, ctx, dec_tokens, window),
                                   decode_parts(n_dec, ctx + n_dec, dec_tokens, window), n_dec,
                                   fitted, timer, routed)
                has_series = True
                p_end = clock + series_time(p_series, k)
            else:
                has_series = False
                p_step_s = step_s(decode_parts(n_dec, ctx, dec_tokens, window), n_dec, False,
                                   fitted, timer, routed)
                p_end = clock + p_step_s
            p_n_dec, p_kv0, p_run = n_dec, ctx, not preempted
            busy, p_start, p_k = True, clock, k
            continue
        kv0 = dec_base + n_decoding * steps
        tokens = n_dec
        for j in range(count):
            r, new = p_req[j], p_new[j]
            cs[j], ns[j] = computed[r], new
            os_[j] = 1 if computed[r] + new == prompt[r] + outputs[r] else 0
            kv0 += computed[r]
            tokens += new
        ctx = dec_base + n_dec * steps if n_dec else 0
        p_step_s = step_s(step_parts(n_dec, ctx, cs, ns, os_, count, rates, window, w_readout,
                                       w_none), tokens, True, fitted, timer, routed)
        has_series, p_run = False, False
        p_end = clock + p_step_s
        p_n_dec, p_kv0 = n_dec, kv0
        busy, p_start, p_k = True, clock, k

    p_c0, p_dc, p_m0, p_dm, p_oh, p_side, p_line = p_series
    for j, v in enumerate((steps, num_steps, used, peak, dec_base, dec_left, dec_over,
                           n_decoding, preemptions, slot_steps, w_head, w_len, 1 if busy else 0,
                           p_k, p_n_dec, p_kv0, 1 if p_run else 0, 1 if has_series else 0,
                           p_count, cursor, plan_id, done, units, p_side,
                           1 if p_line else 0, ratio_reset, missed, stopped, hn)):
        si[j] = v
    for j, x in enumerate((clock, busy_s, kvts, wake_s, p_start, p_end, p_step_s, p_c0, p_dc,
                           p_m0, p_dm, p_oh)):
        sf[j] = x
    return (ints, floats, decoding, (residues, running, prefilling, chunk_req, chunk_new, p_req,
                                     p_new, finished, snapshot, cs, ns, os_),
            (s_t, s_blocks, s_running, s_waiting), heap, si, sf)



@njit(cache=True)
def _requeue(r: int, clock: float, used: int, w_head: int, w_len: int, links: tuple,
             queues: tuple, bs: int, reserve_all: bool) -> tuple[int, int, int]:
    """:meth:`Engine._preempt`'s release of ``r`` (out of the decode set already, if it was
    there): out of running and prefilling, its blocks freed, its KV forgotten, back at the
    head of the waiting ring (``links``: the two lists' links and ends; ``queues``: the ring,
    the enqueue instants, computed tokens, reserved blocks and preemptions by request; ``bs``:
    the block size). Returns blocks in use, the ring's head and length."""
    r_prev, r_next, running, f_prev, f_next, prefilling = links
    queue, enqueue, computed, reserved, preempts = queues
    _unlink(r, r_prev, r_next, running)
    if f_prev[r] != -2:
        _unlink(r, f_prev, f_next, prefilling)
    used -= reserved[r] if reserve_all else -(-computed[r] // bs)
    computed[r] = 0
    preempts[r] += 1
    enqueue[r] = clock
    w_head = (w_head - 1) % queue.shape[0]
    queue[w_head] = r
    return used, w_head, w_len + 1


@njit(cache=True)
def _chunk(remaining: int, budget: int, chunked: bool, outputs: int, threshold: int) -> int:
    """:meth:`Engine._chunk` of a request with ``remaining`` tokens to compute."""
    new = remaining
    if new > budget and not chunked and outputs == 0:
        return 0
    if 0 < threshold < new:
        new = threshold
    return new if new < budget else budget


@njit(cache=True)
def _new_token_ratio(steps_since_reset: int, ratio: np.ndarray) -> float:
    """:meth:`Policy.new_token_ratio` (``ratio``: its start, floor and decay steps)."""
    span = ratio[0] - ratio[1]
    x = ratio[0] - span * steps_since_reset / ratio[2]
    return x if x > ratio[1] else ratio[1]


@njit(cache=True)
def _ratio_reserve(since_reset: int, ratio: np.ndarray, clip: int, over_clip: int,
                   decoding_left: int, steps: int, running: np.ndarray, r_next: np.ndarray,
                   decoding: np.ndarray, max_out: np.ndarray, o0s: np.ndarray,
                   s0s: np.ndarray, prefilling: np.ndarray, f_next: np.ndarray,
                   outputs: np.ndarray) -> float:
    """:meth:`Engine._ratio_reserve_tokens`: the ratio × Σ min(remaining output, clip) over
    the decoding requests (``decoding_left`` while none started above the clip) and the
    prefilling ones."""
    left = decoding_left
    if over_clip:
        left = 0
        j = running[0]
        while j >= 0:
            if decoding[j]:
                left += min(max_out[j] - (o0s[j] + steps - s0s[j]), clip)
            j = r_next[j]
    j = prefilling[0]
    while j >= 0:
        left += min(max_out[j] - outputs[j], clip)
        j = f_next[j]
    return _new_token_ratio(since_reset, ratio) * left


@njit(cache=True)
def blocks_needed(first_step: int, k: int, residues: np.ndarray, n_decoding: int,
                  bs: int) -> int:
    """:meth:`Engine._blocks_needed`: new blocks ``n_decoding`` decoding sequences need over
    ``k`` steps from step count ``first_step`` (``residues``: how many sit at each context
    residue mod ``bs``)."""
    if k <= 0:
        return 0
    full, rest = k // bs, k % bs
    start = first_step % bs
    end = start + rest
    part = 0
    if end <= bs:
        for j in range(start, end):
            part += residues[j]
    else:
        for j in range(start, bs):
            part += residues[j]
        for j in range(0, end - bs):
            part += residues[j]
    return full * n_decoding + part


@njit(cache=True)
def _max_steps_fitting(first_step: int, free: int, n: int, residues: np.ndarray,
                       bs: int) -> int:
    """:meth:`Engine._max_steps_fitting`."""
    if n == 0:
        return 1 << 62
    cycles = free // n
    k = cycles * bs
    left = free - cycles * n
    start = first_step % bs
    for j in range(bs):
        c = residues[(start + j) % bs]
        if c > left:
            break
        left -= c
        k += 1
    return k


@njit(cache=True)
def _grow(a: np.ndarray) -> np.ndarray:
    """``a`` in an array twice as long (a full series column)."""
    out = np.empty(2 * a.shape[0], a.dtype)
    out[:a.shape[0]] = a
    return out
