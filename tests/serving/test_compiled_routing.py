"""Replicas behind least-outstanding and least-KV routing in the compiled core
(:mod:`napkin.serving.compiled_routing`) against the event heap
(:func:`napkin.serving.events.run_events`): the same records (engine column included), stop and
engine state bit for bit on random runs, on arrivals that tie and on runs the planner's stop
ends; the runs it does not take go to the heap."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compiled import _assert_same, _run, _scenario

from napkin.errors import NapkinError
from napkin.serving import compiled
from napkin.serving.scenario import Scenario, build
from napkin.serving.simulate import OpenFeed, simulate


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one for each run :func:`compiled.run_routed` takes."""
    calls: list[int] = []
    core = compiled.run_routed
    monkeypatch.setattr(compiled, "run_routed", lambda *a: calls.append(1) or core(*a))
    return calls


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(replicas=st.integers(2, 5), backend=st.sampled_from(["vllm", "trtllm", "sglang"]),
       calibration=st.sampled_from(["roofline", "profile"]),
       seqs=st.sampled_from([4, 32, 256]), pool_gib=st.sampled_from([0.8, 20.0]),
       rate=st.sampled_from([3.0, 60.0, 600.0]),
       share=st.sampled_from([None, None, 0.5, 0.9, 0.99]))
@pytest.mark.parametrize("router", ["least_outstanding", "least_kv"])
def test_replicas_behind_a_stateful_router_match_the_event_heap(
        router, replicas, backend, calibration, seqs, pool_gib, rate, share, monkeypatch):
    doc = _scenario(engine={"backend": backend, "replicas": replicas,
                            "router": router, "kv_pool_gib": pool_gib,
                            "max_num_seqs": seqs},
                    n=300, rate=rate, calibration=backend if calibration == "profile"
                    else "roofline")
    calls = _counting(monkeypatch)
    try:
        reference = _run(doc, False, monkeypatch, share)
    except NapkinError as error:  # a request the pool cannot hold: refused alike
        with pytest.raises(NapkinError, match=str(error)[:40].replace("+", r"\+")):
            _run(doc, True, monkeypatch, share)
        return
    assert len(reference.engines) == replicas
    _assert_same(reference, _run(doc, True, monkeypatch, share))
    assert calls == ([1] if _covered(doc) else [])  # (not: a request longer than the pool)
    assert set(np.unique(reference.records.engine)) <= set(range(replicas))


def _covered(doc: dict) -> bool:
    built = build(Scenario.model_validate(doc), Path("."))
    engines = built.engines()
    feed = OpenFeed(built.source, engines[0].timer.request_s, engines[0].timer.request_token_s)
    return all(compiled.covered(e, feed, None) for e in engines)


def test_an_overloaded_run_stops_at_the_same_request_on_every_replica(monkeypatch):
    """The planner's stop counts misses over all replicas in finishing order: the run ends at
    the same request with the same records and every engine as the heap leaves it (units in
    flight on the others)."""
    doc = _scenario(engine={"replicas": 3, "router": "least_outstanding"}, n=2000, rate=300.0,
                    calibration="vllm")
    reference = _run(doc, False, monkeypatch, 0.9)
    assert reference.stopped and 0 < len(reference.records.rid) < 2000
    assert len(set(reference.records.engine.tolist())) == 3
    _assert_same(reference, _run(doc, True, monkeypatch, 0.9))


def test_arrivals_and_units_that_tie_keep_the_heaps_order(monkeypatch):
    """Identical requests reaching four replicas four at an instant: the engines' units end at
    the same instants, and the heap takes them in the order they were queued (arrivals first);
    the core keeps that order, so the records (which replica, in which order) are the heap's."""
    built = build(Scenario.model_validate(_scenario(
        engine={"replicas": 4, "router": "least_outstanding"}, n=80)), Path("."))
    times = built.source.requests.arrival_s
    times[:] = np.repeat(np.arange(20.0) * 0.5, 4)
    built.source.requests.input_tokens[:] = 700
    built.source.requests.output_tokens[:] = 60
    runs, calls = [], _counting(monkeypatch)
    for after in (10**18, 0):
        monkeypatch.setattr(compiled, "COMPILED_AFTER", after)
        runs.append(simulate(built.engines(), built.source, "least_outstanding"))
    _assert_same(*runs)
    assert calls == [1]
    finish = runs[0].records.finish_s
    assert np.any(finish[1:] == finish[:-1])  # the case is a tie case
    assert sorted(np.bincount(runs[0].records.engine).tolist()) == [20, 20, 20, 20]


def test_least_kv_counts_the_blocks_a_run_in_flight_has_taken(monkeypatch):
    """Least-KV routing reads each replica's blocks after the steps of its decode run in flight
    completed by the arrival (not as of the run's start): long answers on a small pool, where
    runs cross block boundaries between arrivals, route alike in the core and on the heap —
    and not as least-outstanding routes them."""
    doc = _scenario(engine={"replicas": 3, "router": "least_kv", "kv_pool_gib": 1.5,
                            "max_num_seqs": 64}, n=400, rate=40.0)
    calls = _counting(monkeypatch)
    by_kv = _run(doc, True, monkeypatch)
    _assert_same(_run(doc, False, monkeypatch), by_kv)
    assert calls == [1]
    doc["engine"]["router"] = "least_outstanding"
    by_count = _run(doc, True, monkeypatch)
    assert not np.array_equal(by_kv.records.engine, by_count.records.engine)


def test_progress_is_reported_as_the_routed_core_runs(monkeypatch):
    """With a progress callback (a terminal's bar) the routed core pauses every
    :data:`compiled.UNITS_A_CALL` units to report the requests finished, and resumes: the
    counts rise to every request, and the records are the heap's."""
    doc = _scenario(engine={"replicas": 3, "router": "least_kv"}, n=300)
    reference = _run(doc, False, monkeypatch)
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 0)
    monkeypatch.setattr(compiled, "UNITS_A_CALL", 40)
    calls, seen = _counting(monkeypatch), []
    built = build(Scenario.model_validate(doc), Path("."))
    run = built.simulate(progress=lambda t, finished: seen.append((t, finished)))
    _assert_same(reference, run)
    assert calls == [1]
    finished = [f for _, f in seen]
    assert len(seen) > 5 and finished == sorted(finished) and finished[-1] == 300
    assert all(t > 0 for t, _ in seen)


def test_runs_the_routed_core_does_not_take_run_on_the_heap(monkeypatch):
    """More replicas × requests than :data:`compiled.ROUTED_CELLS` go to the event heap (and
    still match it)."""
    doc = _scenario(engine={"replicas": 2, "router": "least_outstanding"}, n=200)
    built = build(Scenario.model_validate(doc), Path("."))
    feed = OpenFeed(built.source, 0.0, 0.0)
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 0)
    assert compiled.takes_routed(built.engines(), feed, None)
    monkeypatch.setattr(compiled, "ROUTED_CELLS", 399)
    assert not compiled.takes_routed(built.engines(), feed, None)
    calls = _counting(monkeypatch)
    _assert_same(_run(doc, False, monkeypatch), _run(doc, True, monkeypatch))
    assert calls == []
    monkeypatch.setattr(compiled, "ROUTED_CELLS", 400)
    _run(doc, True, monkeypatch)
    assert calls == [1]


def test_a_plan_counts_its_runs_up_front(monkeypatch):
    """:func:`compiled.expect`: a count reaching the threshold makes the next run take the
    core; a huge or infinite count is capped, a NaN or negative one ignored."""
    monkeypatch.setattr(compiled, "_simulated", [0])
    for bad in (float("nan"), -5.0, 0.0):
        compiled.expect(bad)
    assert compiled._simulated == [0]
    compiled.expect(float("inf"))
    assert compiled._simulated == [compiled.COMPILED_AFTER]
    doc = _scenario(engine={"replicas": 2, "router": "least_outstanding"}, n=50)
    built = build(Scenario.model_validate(doc), Path("."))
    assert compiled.takes_routed(built.engines(), OpenFeed(built.source, 0.0, 0.0), None)
