"""The scheduler's (:func:`napkin.serving.scheduler.process`) small pieces around its local
state: writing it back to the engine (:func:`store`, :func:`unit`), taking and freeing blocks
(:func:`taken`, :func:`retired`), preempting (:func:`preempt`), and the frontend's jobs at a
unit's end (:func:`detokenized`)."""

from napkin.serving.engine import Engine
from napkin.serving.kvpool import KVPool
from napkin.serving.request import Request
from napkin.serving.step import Plan
from napkin.timing.frontend import served
from napkin.timing.series import StepSeries


def store(engine: Engine, clock: float, steps: int, num_steps: int, used: int, busy_s: float,
          kv_token_seconds: float, peak: int, dec: tuple[int, int, int], preemptions: int) -> None:
    """Write the coroutine's local scalars back to the engine (without prefix caching all the
    pool's used blocks are private; with it the pool keeps that count itself)."""
    engine.clock, engine.steps, engine.num_steps, engine.busy_s = clock, steps, num_steps, busy_s
    engine.pool.used = used
    if not engine.caching:
        engine.pool.private_used = used
    engine.kv_token_seconds = kv_token_seconds
    engine.peak_blocks, engine.preemptions = peak, preemptions
    engine.dec_base, engine.dec_left, engine.dec_over_clip = dec


def taken(pool: KVPool, used: int, n: int) -> int:
    """Blocks in use after a prefix-caching pool takes ``n`` more (evicting cached ones as it
    must), from the coroutine's count of them."""
    pool.used = used
    pool.allocate(n)
    return pool.used


def preempt(engine: Engine, victim: Request, clock: float, steps: int, num_steps: int,
            used: int, busy_s: float, kv_token_seconds: float, peak: int,
            dec: tuple[int, int, int], preemptions: int) -> tuple[int, int, int, int, int]:
    """The engine's ``_preempt`` of ``victim`` from the coroutine's state (stored first); the
    scalars it changes: (used blocks, preemptions, dec_base, dec_left, dec_over_clip)."""
    store(engine, clock, steps, num_steps, used, busy_s, kv_token_seconds, peak, dec, preemptions)
    engine._preempt(victim)
    return (engine.pool.used, engine.preemptions, engine.dec_base, engine.dec_left,
            engine.dec_over_clip)


def detokenized(engine: Engine, clock: float, decoded: int,
                chunks: list[tuple[Request, int]], prefilling: dict[int, Request],
                finished: list[Request]) -> None:
    """The frontend's jobs for a unit that ended at ``clock``: it detokenizes the unit's
    tokens (``decoded`` decode tokens and a first token per chunk that completed its prompt,
    i.e. left ``prefilling``), then the first tokens and finishes it made are the client's
    at the job's end; then it finishes the ``finished`` responses (a job that delays only the
    jobs behind it)."""
    fe = engine.frontend
    assert fe is not None
    stamp = clock
    if fe.output_token_s:
        emitted = decoded + sum(1 for req, _ in chunks if req.rid not in prefilling)
        work = fe.output_token_s * emitted
        engine.frontend_busy_s += work
        stamp = engine.frontend_free_s = served(engine.frontend_free_s, clock, work)
        for req, _ in chunks:
            if req.first_token_s == clock:
                req.first_token_s = stamp
        for req in finished:
            if req.first_token_s == clock:
                req.first_token_s = stamp
            req.finish_s = stamp
    if fe.response_s and finished:
        work = fe.response_s * len(finished)
        engine.frontend_busy_s += work
        engine.frontend_free_s = served(engine.frontend_free_s, stamp, work)


def retired(engine: Engine, used: int) -> int:
    """Blocks in use once ``engine.retiring``'s requests free theirs (async scheduling: a
    finished request's blocks and slot, once the scheduler handles its last output); empties
    it. The engine's own release (a finish without async scheduling does the same inline: the
    hot path)."""
    pool = engine.pool
    pool.used = used
    for req in engine.retiring:
        engine._register_outputs(req)  # (prefix caching only)
        engine._release(req)
    engine.retiring.clear()
    return pool.used


def unit(busy: bool, start_s: float, k: int, series: StepSeries | None, step_s: float,
         chunks: list[tuple[Request, int]], n_dec: int, kv0: int, run: bool,
         basis: tuple | None) -> Plan | None:
    """The coroutine's unit in flight as a :class:`Plan` (None when idle; a plain single step
    as a series of one step of ``step_s``)."""
    if not busy:
        return None
    return Plan(start_s, k, series or StepSeries(step_s, 0.0, 0.0, 0.0, 0.0), chunks, n_dec,
                kv0, run, basis)
