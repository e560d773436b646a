"""Which runs take the compiled core (:mod:`napkin.serving.compiled_core`), and running one.

A run takes it when numba is installed, ``NAPKIN_COMPILED`` is not ``0``, the process has
simulated :data:`COMPILED_AFTER` requests counting this run (numba's import and the cached
machine code's load take about half a second, which a run of fewer requests would not win back)
and the run is one the core covers (:func:`covered`): one fresh engine on open-loop arrivals
that no per-token delay reorders, none of the scheduler's features on, a policy that mixes
prefill chunks into decode steps, a cost without sliding windows, 16-bit parts or
linear-attention state (MoE experts are in: their weight bytes and routed time are tables), the
roofline or a fitted profile as the timer, no stop or progress callback (a progress
callback may stop a run: the web server's budget and idle jobs), and no request the engine
would refuse (the reference raises that error where it meets it). Anything else runs
:func:`napkin.serving.scheduler.process` itself, as every run did before.

The core's outputs are written where the reference leaves its own: the log's packed rows in
finishing order, the engine's series and its scalars (:func:`~napkin.serving.scheduler_state.
store`), so metrics and reports read either run alike.
"""

import os
from importlib.util import find_spec
from typing import TYPE_CHECKING

import numpy as np

from napkin.accounting.linear import LinearCost
from napkin.calibration.basis import FittedTimer
from napkin.serving.engine import SERIES_DTYPE, Engine
from napkin.serving.scheduler import FEATURES, features
from napkin.serving.scheduler_state import store
from napkin.timing.steps import RooflineTimer

if TYPE_CHECKING:
    from napkin.serving.simulate import OpenFeed

COMPILED_AFTER = 200_000
"""Requests a process simulates with the reference before runs take the compiled core."""
_simulated = [0]  # requests this process has simulated so far
OFF = ("caching", "recording", "windows", "static", "batch_wait", "recv", "host_tier",
       "frontend", "lagging")
"""The scheduler's features (:data:`~napkin.serving.scheduler.FEATURES`) the core has not."""


def takes(engine: Engine, feed: "OpenFeed", stop: object, progress: object) -> bool:
    """Whether this run of one engine on the open-loop ``feed`` goes through the compiled core
    (see the module docstring); counts its requests as simulated either way."""
    _simulated[0] += feed.n
    if _simulated[0] < COMPILED_AFTER or os.environ.get("NAPKIN_COMPILED") == "0":
        return False
    return covered(engine, feed, stop, progress) and find_spec("numba") is not None


def covered(engine: Engine, feed: "OpenFeed", stop: object, progress: object) -> bool:
    """Whether the compiled core runs exactly what the reference would for one engine on the
    open-loop ``feed`` (the module docstring's list)."""
    if not (feed.rid is None and not feed.named and stop is None and progress is None):
        return False
    on = dict(zip(FEATURES, features(engine), strict=True))
    if not (on["fast"] and on["plain"]) or any(on[name] for name in OFF):
        return False
    cost, timer = engine.cost, engine.timer
    if not (type(cost) is LinearCost and cost._full is not None and not cost.state_bytes
            and not any(cost.sixteen_bit)):
        return False
    if type(timer) is not RooflineTimer and type(timer) is not FittedTimer:
        return False
    fresh = (engine.plan is None and not engine.running and not engine.waiting
             and not engine.inbox and engine.num_steps == 0 and engine.pool.used == 0
             and engine.clock == 0.0)
    if not (fresh and engine.dp == 1 and engine.policy.mixed_batches and not engine.ratio):
        return False
    prompt, out = _column(feed.inputs), _column(feed.outputs)
    return bool(np.all(prompt + out <= engine.max_request_tokens)
                and np.all(prompt <= engine.max_prompt_tokens))


def run(engine: Engine, feed: "OpenFeed") -> dict[str, np.ndarray]:
    """Every request of ``feed`` through ``engine`` in the compiled core: the finished
    requests' log columns (:data:`napkin.serving.simulate.LOGGED`) in finishing order; the
    engine's series and scalars as the reference leaves them."""
    from napkin.serving.compiled_core import run_core

    spec, cost = engine.spec, engine.cost
    assert isinstance(cost, LinearCost) and cost._full is not None
    size = max(spec.max_num_batched_tokens, spec.max_num_seqs) + 1
    dec_tokens = np.array([(0.0,) * 5] + [cost._token_parts(m, m, 0, 2 * m)
                                          for m in range(1, spec.max_num_seqs + 1)])
    w = cost._full
    window = np.array([w.flops_per_pair, w.flops_per_decode_pair, w.kv_read_per_cached])
    rates = np.array([cost.flops_per_token, cost.flops_per_readout,
                      cost.flops_per_prefill_cached, cost.attention_per_token,
                      cost.kv_write_per_token])
    w_readout = np.array([cost.weight_bytes(t, 1) for t in range(size)])
    w_none = np.array([cost.weight_bytes(t, 0) for t in range(size)])
    timer_row, routed, fitted = _timer(engine.timer, size)
    policy = engine.policy
    limits = np.array([spec.num_blocks, spec.max_num_seqs, spec.max_num_batched_tokens,
                       engine.bs, spec.long_prefill_token_threshold, spec.chunked_prefill,
                       engine.full_prompt, engine.reserve_all, policy.preempt_self,
                       engine.clip], dtype=np.int64)
    prompt, out = _column(feed.inputs), _column(feed.outputs)
    (first_sched, first_token, finish, queue_wait, preempts, order, s_t, s_blocks, s_running,
     s_waiting, scalars) = run_core(
        np.frombuffer(feed.times, dtype=np.float64), prompt, out, limits, dec_tokens, window,
        rates, w_readout, w_none, fitted, timer_row, routed)
    series = np.empty(len(s_t), dtype=SERIES_DTYPE)
    series["t_s"], series["blocks"] = s_t, s_blocks
    series["running"], series["waiting"] = s_running, s_waiting
    engine.series += series.tobytes()
    (clock, steps, num_steps, used, busy_s, kvts, peak, dec_base, dec_left, dec_over,
     preemptions, slot_steps) = scalars.tolist()
    store(engine, clock, int(steps), int(num_steps), int(used), busy_s, kvts, int(peak),
          (int(dec_base), int(dec_left), int(dec_over)), int(preemptions))
    engine.slot_steps = int(slot_steps)
    return {"rid": order, "label": _column(feed.label)[order], "engine": np.zeros_like(order),
            "arrival_s": np.frombuffer(feed.arrival_s, dtype=np.float64)[order],
            "first_scheduled_s": first_sched[order], "first_token_s": first_token[order],
            "finish_s": finish[order], "input_tokens": prompt[order],
            "output_tokens": out[order], "preemptions": preempts[order],
            "queue_wait_s": queue_wait[order], "cached_tokens": np.zeros_like(order)}


def _column(values: object) -> np.ndarray:
    """A feed's typed-array column as int64."""
    return np.frombuffer(values, dtype=np.int32).astype(np.int64)  # type: ignore[arg-type]


def _timer(timer: RooflineTimer | FittedTimer, size: int
           ) -> tuple[np.ndarray, np.ndarray, bool]:
    """The timer's constants as the core reads them, its routed-expert time by tokens (a
    fitted profile's) and whether it is fitted."""
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
