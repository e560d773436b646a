"""Two simulation runs compared whole: records bit for bit and every engine's state (the
drivers that must agree: one engine without the event heap, the event heap)."""

import dataclasses

import numpy as np

from napkin.serving.engine import Engine
from napkin.serving.request import Request
from napkin.serving.simulate import SimRun
from napkin.serving.step import Plan


def _req(r: Request) -> tuple:
    return tuple(getattr(r, name) for name in Request.__slots__)


def _plan(plan: Plan | None) -> tuple | None:
    """A unit in flight by what it does: its steps, their time, batch and weights."""
    if plan is None:
        return None
    return (plan.start_s, plan.steps, plan.end_s, plan.series.time(plan.steps),
            plan.series.weighted(plan.steps, plan.kv_tokens0, plan.n_dec), plan.n_dec,
            plan.kv_tokens0, plan.decode_run, [(r.rid, new) for r, new in plan.chunks])


def _state(engine: Engine) -> tuple:
    """Everything the engine keeps, with requests as their fields (NaN-safe via repr)."""
    rids = lambda d: [r.rid for r in d]  # noqa: E731
    return repr((
        engine.clock, engine.steps, engine.num_steps, engine.busy_s, engine.kv_token_seconds,
        engine.peak_blocks, engine.preemptions, engine.slot_steps, engine.dec_base,
        engine.dec_left,
        engine.dec_over_clip, engine.ratio_reset_step, engine.residues, _plan(engine.plan),
        engine.pool.used, engine.pool.private_used, list(engine.series_t),
        list(engine.series_blocks), list(engine.series_running), list(engine.series_waiting),
        rids(engine.waiting), rids(engine.running.values()), rids(engine.prefilling.values()),
        rids(engine.decoding.values()), sorted((e[0], e[1], e[2]) for e in engine.finish_heap),
        [_req(r) for r in engine.running.values()], [_req(r) for r in engine.waiting],
        rids(engine.inbox), engine.since_poll, engine.held_steps, list(engine.pool.refs.items()),
        list(engine.pool.evictable)))


def assert_same_run(a: SimRun, b: SimRun) -> None:
    """The same stop, records bit for bit and every engine's whole state."""
    assert a.stopped == b.stopped
    for field in dataclasses.fields(a.records):
        x, y = getattr(a.records, field.name), getattr(b.records, field.name)
        if x is None:
            assert y is None
            continue
        np.testing.assert_array_equal(x, y, err_msg=field.name)
    assert [_state(e) for e in a.engines] == [_state(e) for e in b.engines]
