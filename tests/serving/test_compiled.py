"""The compiled core (:mod:`napkin.serving.compiled_core`) against its reference, the scheduler
(:func:`napkin.serving.scheduler.process`): the same records and engine state bit for bit on
random runs it covers and on the pinned runs it covers; the runs it does not cover go to the
reference; its series sums equal :class:`~napkin.timing.series.StepSeries`' own."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pinned import FILE, run

from napkin.errors import NapkinError
from napkin.serving import compiled
from napkin.serving import simulate as sim
from napkin.serving.compiled_timing import series_time, series_weighted, steps_until
from napkin.serving.scenario import Scenario, build
from napkin.serving.simulate import OpenFeed, SimRun, simulate
from napkin.serving.sweep import slo_miss_stop
from napkin.timing.series import LineSeries, StepSeries

OBSERVED = ("clock", "steps", "num_steps", "busy_s", "kv_token_seconds", "peak_blocks",
            "preemptions", "slot_steps", "dec_base", "dec_left", "dec_over_clip",
            "ratio_reset_step")
"""The engine's scalars a run leaves (what metrics and the pinned digests read)."""


def _scenario(model: str = "qwen3-8b", engine: dict | None = None, n: int = 300,
              rate: float = 30.0, calibration: str = "roofline", **extra: object) -> dict:
    return {"name": "compiled", "model": model, "gpu": "h100-sxm", "calibration": calibration,
            "engine": {"max_num_seqs": 64, "max_num_batched_tokens": 2048, **(engine or {})},
            "workload": {"seed": 7, "classes": {"chat": {
                "input_tokens": {"dist": "lognormal", "median": 900, "sigma": 1.0,
                                 "max": 5000},
                "output_tokens": {"dist": "lognormal", "median": 200, "sigma": 1.0,
                                  "max": 2000}}},
                "arrivals": {"kind": "poisson", "rate_per_s": rate, "num_requests": n}},
            **extra}


def _run(doc: dict, core: bool, monkeypatch: pytest.MonkeyPatch,
         share: float | None = None) -> SimRun:
    """``doc`` simulated by the core or the scheduler; with ``share``, stopped once its SLO
    can no longer be met at that share (the planner's stop)."""
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 0 if core else 10**18)
    built = build(Scenario.model_validate(doc), Path("."))
    return built.simulate(stop=None if share is None else slo_miss_stop(built, share))


def _covered(doc: dict) -> bool:
    built = build(Scenario.model_validate(doc), Path("."))
    engine = built.engines()[0]
    feed = OpenFeed(built.source, engine.timer.request_s, engine.timer.request_token_s)
    return len(built.engines()) == 1 and compiled.covered(engine, feed, None)


def _assert_same(a: SimRun, b: SimRun) -> None:
    """Records bit for bit, and the engine's scalars, blocks and series."""
    for name in a.records.__dataclass_fields__:
        x, y = getattr(a.records, name), getattr(b.records, name)
        if x is None:
            assert y is None
            continue
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert a.stopped == b.stopped
    for e, f in zip(a.engines, b.engines, strict=True):
        assert [getattr(e, k) for k in OBSERVED] == [getattr(f, k) for k in OBSERVED]
        assert (e.pool.used, e.pool.private_used) == (f.pool.used, f.pool.private_used)
        assert bytes(e.series) == bytes(f.series)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=st.sampled_from(["qwen3-0.6b", "qwen3-8b", "qwen3-30b-a3b", "llama-3.1-8b"]),
       backend=st.sampled_from(["vllm", "trtllm", "sglang"]),
       capacity=st.sampled_from(["default", "max_utilization"]),
       calibration=st.sampled_from(["roofline", "profile"]),
       tp=st.sampled_from([1, 2]),
       seqs=st.sampled_from([1, 4, 32, 256]),
       budget=st.sampled_from([256, 1024, 8192]),
       block=st.sampled_from([1, 16, 64]),
       pool_gib=st.sampled_from([0.6, 2.0, 20.0]),
       chunked=st.booleans(),
       threshold=st.sampled_from([0, 0, 100]),
       rate=st.sampled_from([2.0, 40.0, 400.0]),
       share=st.sampled_from([None, None, 0.5, 0.9, 0.99]))
def test_the_core_reproduces_the_scheduler_on_random_runs(
        model, backend, capacity, calibration, tp, seqs, budget, block, pool_gib, chunked,
        threshold, rate, share, monkeypatch):
    engine = {"backend": backend, "tensor_parallel": tp, "max_num_seqs": seqs,
              "max_num_batched_tokens": budget if chunked else 8192, "block_size": block,
              "kv_pool_gib": pool_gib, "chunked_prefill": chunked,
              "long_prefill_token_threshold": threshold}
    if backend == "trtllm":
        engine["capacity_scheduler"] = capacity
    doc = _scenario(model, engine, n=200, rate=rate,
                    calibration=backend if calibration == "profile" else "roofline")
    try:
        reference = _run(doc, False, monkeypatch, share)
    except NapkinError as error:  # a request the pool cannot hold: the core refuses alike
        with pytest.raises(NapkinError, match=str(error)[:40].replace("+", r"\+")):
            _run(doc, True, monkeypatch, share)
        return
    assert _covered(doc)
    _assert_same(reference, _run(doc, True, monkeypatch, share))


def test_a_run_stops_where_the_scheduler_stops_it_once_its_slo_is_out_of_reach(monkeypatch):
    """The planner's stop (:func:`slo_miss_stop`), which the core applies itself: an
    overloaded run stops at the same request, with the same records and engine state; one
    within its SLO runs to the end in both."""
    overloaded = _scenario(n=1500, rate=200.0, calibration="vllm")
    light = _scenario(n=300, rate=2.0, calibration="vllm")
    for doc, stops in ((overloaded, True), (light, False)):
        reference = _run(doc, False, monkeypatch, 0.9)
        assert reference.stopped is stops
        _assert_same(reference, _run(doc, True, monkeypatch, 0.9))
    assert len(reference.records.rid) == 300  # (the light run: every request)
    assert 0 < len(_run(overloaded, True, monkeypatch, 0.9).records.rid) < 1500


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(replicas=st.integers(2, 4), backend=st.sampled_from(["vllm", "trtllm", "sglang"]),
       calibration=st.sampled_from(["roofline", "profile"]),
       rate=st.sampled_from([5.0, 60.0, 600.0]), pool_gib=st.sampled_from([1.5, 20.0]))
def test_replicas_behind_round_robin_match_the_event_heap(replicas, backend, calibration,
                                                           rate, pool_gib, monkeypatch):
    """Round-robin replicas run one at a time in the core and merged by finishing time: the
    event heap's records (engine column included) and every engine's state, bit for bit."""
    doc = _scenario(engine={"backend": backend, "replicas": replicas, "router": "round_robin",
                            "kv_pool_gib": pool_gib, "max_num_seqs": 32},
                    n=300, rate=rate, calibration=backend if calibration == "profile"
                    else "roofline")
    calls = []
    core = compiled.run_replicas
    monkeypatch.setattr(compiled, "run_replicas", lambda *a: calls.append(1) or core(*a))
    monkeypatch.setattr(sim, "_replicas_alone", lambda *a: None)  # (the heap, not run alone)
    reference = _run(doc, False, monkeypatch)
    assert len(reference.engines) == replicas
    _assert_same(reference, _run(doc, True, monkeypatch))
    assert calls == [1]


def test_round_robin_replicas_report_progress_as_each_runs(monkeypatch):
    """With a progress callback round-robin replicas still take the core, one at a time: the
    requests finished rise through each replica's share (earlier replicas' added) to all of
    them, and the records are the heap's."""
    doc = _scenario(engine={"replicas": 3, "router": "round_robin"}, n=300)
    alone = sim._replicas_alone
    monkeypatch.setattr(sim, "_replicas_alone", lambda *a: None)  # (the heap, not run alone)
    reference = _run(doc, False, monkeypatch)
    monkeypatch.setattr(sim, "_replicas_alone", alone)
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 0)
    monkeypatch.setattr(compiled, "UNITS_A_CALL", 40)
    calls, seen = [], []
    core = compiled.run_replicas
    monkeypatch.setattr(compiled, "run_replicas", lambda *a: calls.append(1) or core(*a))
    built = build(Scenario.model_validate(doc), Path("."))
    _assert_same(reference, built.simulate(progress=lambda t, f: seen.append(f)))
    assert calls == [1]
    assert len(seen) > 5 and seen == sorted(seen) and seen[-1] == 300
    assert {100, 200} <= set(seen)  # each replica's share of 100 ends with a report


def test_replicas_that_finish_at_one_instant_run_on_the_event_heap(monkeypatch):
    """Identical requests reaching two replicas at the same instants finish at the same
    instants: the merge cannot order such ties as the heap does, so the run falls back to it
    (nothing written by the core) and still matches."""
    built = build(Scenario.model_validate(_scenario(engine={"replicas": 2}, n=40)), Path("."))
    times = built.source.requests.arrival_s
    times[:] = np.repeat(np.arange(20.0), 2)  # two arrivals an instant, one a replica
    built.source.requests.input_tokens[:] = 500
    built.source.requests.output_tokens[:] = 50
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 0)
    assert compiled.run_replicas(built.engines(), OpenFeed(built.source, 0.0, 0.0)) is None
    runs = []
    for after in (10**18, 0):
        monkeypatch.setattr(compiled, "COMPILED_AFTER", after)
        runs.append(simulate(built.engines(), built.source, "round_robin"))
    _assert_same(*runs)
    assert runs[1].records.finish_s[0] == runs[1].records.finish_s[1]


def test_the_core_reproduces_the_pinned_runs_it_covers(monkeypatch):
    """Every pinned run (``tests/serving/pinned.py``) with the core taking each run it covers
    (one engine, or replicas behind least-outstanding routing): the same digests; the covered
    ones counted (the test is not empty)."""
    pinned = json.loads(FILE.read_text())
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 0)
    calls, routed = [], []
    core, routed_core = compiled.run, compiled.run_routed
    monkeypatch.setattr(compiled, "run", lambda *a: calls.append(1) or core(*a))
    monkeypatch.setattr(compiled, "run_routed", lambda *a: routed.append(1) or routed_core(*a))
    assert [key for key in sorted(pinned) if run(key) != pinned[key]] == []
    assert len(calls) >= 15 and len(routed) >= 5  # (17 and 7 on 2026-12-06)


def test_a_heavy_preempting_run_and_a_reserving_one_match(monkeypatch):
    """Hand-picked: a small pool under overload (thousands of preemptions, self-preempting
    chunks of a long prompt), TensorRT-LLM's max-length reservation and SGLang retracting
    under its profile (its ratio reset)."""
    preempting = _scenario(engine={"max_num_seqs": 128, "max_num_batched_tokens": 1024,
                                   "kv_pool_gib": 1.5, "long_prefill_token_threshold": 300},
                           n=1500, rate=30.0, calibration="vllm")
    reserving = _scenario(engine={"backend": "trtllm", "max_num_seqs": 128,
                                  "max_num_batched_tokens": 4096, "kv_pool_gib": 4},
                          n=1000, rate=30.0, calibration="trtllm")
    delayed = _scenario(n=400, frontend_ms=7.0)  # a latency outside the engine: covered
    retracting = _scenario(engine={"backend": "sglang", "max_num_seqs": 128,
                                   "kv_pool_gib": 1.5}, n=1500, rate=30.0, calibration="sglang")
    chunky = _scenario(engine={"max_num_seqs": 1, "max_num_batched_tokens": 64}, n=100)
    assert _covered(delayed) and _covered(retracting)
    for doc in (preempting, reserving, delayed, retracting, chunky):
        reference = _run(doc, False, monkeypatch)
        _assert_same(reference, _run(doc, True, monkeypatch))
    assert _run(reserving, True, monkeypatch).engines[0].preemptions == 0
    assert _run(preempting, True, monkeypatch).engines[0].preemptions > 1000
    assert _run(retracting, True, monkeypatch).engines[0].ratio_reset_step > 0
    assert _run(chunky, True, monkeypatch).engines[0].num_units > 2 * 100 + 16  # (grown)


@pytest.mark.parametrize("extra", [
    {"engine": {"enable_prefix_caching": True}},
    {"engine": {"batching": "static"}},
    {"engine": {"backend": "sglang", "scheduler_recv_interval": 4}},
    {"engine": {"speculative": {"draft_tokens": 2, "acceptance": [0.8, 0.6],
                                "draft_cost": 0.05}}},
    {"engine": {"async_scheduling": True}},
    {"engine": {"mode": "exact"}},
    {"engine": {"frontend": {"request_ms": 2.0, "prompt_token_us": 20.0,
                             "output_token_us": 300.0, "response_ms": 0.0}}},
    {"model": "gpt-oss-20b"},  # sliding windows
], ids=["prefix-caching", "static", "sglang-receive-interval", "speculative", "async", "exact",
        "frontend", "windows"])
def test_a_run_the_core_does_not_cover_runs_the_reference(extra, monkeypatch):
    doc = _scenario(n=60)
    doc["engine"].update(extra.pop("engine", {}))
    doc.update(extra)
    assert not _covered(doc)
    monkeypatch.setattr(compiled, "run", lambda *a: pytest.fail("the core ran"))
    _run(doc, True, monkeypatch)


def test_the_core_waits_for_enough_requests_and_can_be_turned_off(monkeypatch):
    doc = _scenario(n=50)
    built = build(Scenario.model_validate(doc), Path("."))
    engine = built.engines()[0]
    feed = OpenFeed(built.source, 0.0, 0.0)
    monkeypatch.setattr(compiled, "_simulated", [0])
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 120)
    assert [compiled.takes(engine, feed, None) for _ in range(3)] == [False, False, True]
    assert not compiled.covered(engine, feed, lambda r: False)  # a stop callback
    assert compiled.covered(engine, feed, slo_miss_stop(built, 0.9))
    monkeypatch.setenv("NAPKIN_COMPILED", "0")
    assert not compiled.takes(engine, feed, None)


def test_a_run_in_many_calls_reports_progress_and_ends_as_one_call(monkeypatch):
    """The core resumed every 50 units: the same run bit for bit, progress after each call
    (the clock and requests finished so far, both growing) and at the end; a callback that
    raises stops the run there."""
    doc = _scenario(n=400, calibration="vllm")
    reference = _run(doc, False, monkeypatch)
    monkeypatch.setattr(compiled, "UNITS_A_CALL", 50)
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 0)
    reports: list[tuple[float, int]] = []
    built = build(Scenario.model_validate(doc), Path("."))
    result = built.simulate(progress=lambda t, done: reports.append((t, done)))
    _assert_same(reference, result)
    units = result.engines[0].num_units
    assert len(reports) == -(-units // 50)
    assert reports == sorted(reports) and reports[-1] == (result.engines[0].clock, 400)

    def budget(t: float, done: int) -> None:
        if done > 100:
            raise NapkinError("time: past the budget")
    with pytest.raises(NapkinError, match="past the budget"):
        build(Scenario.model_validate(doc), Path(".")).simulate(progress=budget)


def test_a_refused_request_is_refused_as_the_scheduler_refuses_it(monkeypatch):
    doc = _scenario(engine={"kv_pool_gib": 0.2}, n=100)
    with pytest.raises(NapkinError) as reference:
        _run(doc, False, monkeypatch)
    with pytest.raises(NapkinError) as core:
        _run(doc, True, monkeypatch)
    assert str(core.value) == str(reference.value)
    assert "KV blocks but the pool has" in str(core.value)


lines = st.floats(min_value=0.0, max_value=0.05, allow_nan=False)
slopes = st.floats(min_value=-1e-5, max_value=1e-4, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(c0=lines, dc=slopes, m0=lines, dm=slopes, oh=st.sampled_from([0.0, 0.004]),
       n=st.integers(0, 3000), w0=st.integers(0, 10**6), dw=st.integers(0, 300),
       fraction=st.floats(0.0, 1.2))
def test_the_series_sums_are_step_series_own(c0, dc, m0, dm, oh, n, w0, dw, fraction):
    """Time, weighted time and the steps a time reaches, bit for bit, for both kinds of
    series (a fitted profile's runs are :class:`LineSeries`)."""
    series = StepSeries(c0, dc, m0, dm, oh)
    mine = (c0, dc, m0, dm, oh, series.side, False)
    elapsed = fraction * series.time(n) if n else fraction
    assert series_time(mine, n) == series.time(n)
    if n:
        assert series_weighted(mine, n, w0, dw) == series.weighted(n, w0, dw)
    if dc >= 0 and dm >= 0:
        assert steps_until(mine, elapsed, n) == series.steps_until(elapsed, n)
    line = LineSeries(c0, abs(dc), 0.0, 0.0, 0.0)
    mine = (c0, abs(dc), 0.0, 0.0, 0.0, 1, True)
    assert series_time(mine, n) == line.time(n)
    if n:
        assert series_weighted(mine, n, w0, dw) == line.weighted(n, w0, dw)
    assert steps_until(mine, elapsed, n) == line.steps_until(elapsed, n)
    assert not math.isnan(series_time(mine, n))
