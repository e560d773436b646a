"""Round-robin replicas run alone, each on its share of the arrivals, and merged by finishing
time (:func:`napkin.serving.simulate._replicas_alone`), against the event heap: the same
records (engine column included) and every engine's state, bit for bit, with the scheduler's
features on; a tie across replicas falls back to the heap with the engines as they were."""

import json
from pathlib import Path

import numpy as np
import pytest
from pinned import FILE, run
from test_compiled import _assert_same, _scenario

from napkin.errors import NapkinError
from napkin.serving import compiled
from napkin.serving import simulate as sim
from napkin.serving.scenario import Scenario, build

PINNED = json.loads(FILE.read_text())


def _heap_and_alone(doc: dict, monkeypatch: pytest.MonkeyPatch, progress=None):
    """``doc`` on the heap (the per-replica path turned off) and through the per-replica path
    (counted), both below the compiled core's threshold."""
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 10**18)
    alone = sim._replicas_alone
    monkeypatch.setattr(sim, "_replicas_alone", lambda *a: None)
    heap = build(Scenario.model_validate(doc), Path(".")).simulate()
    taken: list[bool] = []
    monkeypatch.setattr(sim, "_replicas_alone",
                        lambda *a: taken.append((r := alone(*a)) is not None) or r)
    return heap, build(Scenario.model_validate(doc), Path(".")).simulate(progress), taken


@pytest.mark.parametrize("engine", [
    {"backend": "vllm"},
    {"backend": "sglang", "max_num_seqs": 16},
    {"backend": "trtllm", "kv_pool_gib": 1.5},
    {"enable_prefix_caching": True},
    {"backend": "vllm", "mode": "exact"},
])
def test_round_robin_replicas_alone_match_the_event_heap(engine, monkeypatch):
    doc = _scenario(engine={"replicas": 3, "router": "round_robin", **engine}, n=240, rate=40.0)
    heap, alone, taken = _heap_and_alone(doc, monkeypatch)
    _assert_same(heap, alone)
    assert taken == [True]
    assert sorted(set(alone.records.engine.tolist())) == [0, 1, 2]


def test_progress_counts_every_replicas_requests(monkeypatch):
    doc = _scenario(engine={"replicas": 3, "router": "round_robin"}, n=300)
    seen: list[int] = []
    heap, alone, taken = _heap_and_alone(doc, monkeypatch, lambda t, f: seen.append(f))
    _assert_same(heap, alone)
    assert taken == [True]
    assert seen == sorted(seen) and seen[-1] == 300 and {100, 200} <= set(seen)


def test_a_tie_across_replicas_runs_the_heap_on_the_engines_as_they_were(monkeypatch):
    """Identical requests reaching two replicas at the same instants finish at the same
    instants: the merge gives up, every engine is put back as it was, and the heap's run
    follows (the same records and state as the heap alone)."""
    built = build(Scenario.model_validate(_scenario(engine={"replicas": 2}, n=40)), Path("."))
    built.source.requests.arrival_s[:] = np.repeat(np.arange(20.0), 2)
    built.source.requests.input_tokens[:] = 500
    built.source.requests.output_tokens[:] = 50
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 10**18)
    engines = built.engines()
    feed = sim.OpenFeed(built.source, 0.0, 0.0)
    before = [dict(vars(e)) for e in engines]
    assert sim._replicas_alone(engines, feed, None) is None
    for engine, was in zip(engines, before, strict=True):
        assert engine.clock == was["clock"] == 0 and engine.steps == 0
        assert not engine.running and not engine.waiting and engine.pool.used == 0
    after_tie = sim.simulate(engines, built.source, "round_robin")
    monkeypatch.setattr(sim, "_replicas_alone", lambda *a: None)
    _assert_same(sim.simulate(built.engines(), built.source, "round_robin"), after_tie)
    assert after_tie.records.finish_s[0] == after_tie.records.finish_s[1]


def test_a_refused_request_is_the_one_the_heap_refuses(monkeypatch):
    """Prompts too long for the pool: the heap refuses the first to arrive; run alone, replica
    0 would meet its own first, so the engines go back and the heap names the same request."""
    doc = _scenario(engine={"replicas": 3, "router": "round_robin", "kv_pool_gib": 0.5}, n=300)
    monkeypatch.setattr(compiled, "COMPILED_AFTER", 10**18)
    with pytest.raises(NapkinError) as alone:
        build(Scenario.model_validate(doc), Path(".")).simulate()
    monkeypatch.setattr(sim, "_replicas_alone", lambda *a: None)
    with pytest.raises(NapkinError) as heap:
        build(Scenario.model_validate(doc), Path(".")).simulate()
    assert str(alone.value) == str(heap.value)
    assert str(heap.value).startswith("request ")


def test_the_pinned_round_robin_runs_go_through_it(monkeypatch):
    """Every pinned run (``tests/serving/pinned.py``: the scheduler's features at random)
    reproduced with round-robin replicas run alone; those taken counted (not empty)."""
    taken: list[bool] = []
    alone = sim._replicas_alone
    monkeypatch.setattr(sim, "_replicas_alone",
                        lambda *a: taken.append((r := alone(*a)) is not None) or r)
    for key in sorted(PINNED):
        assert run(key) == PINNED[key], key
    assert taken.count(True) >= 20  # (on 2026-12-06)
