"""The scheduler's two drivers (:mod:`napkin.serving.scheduler`): one engine without an event
heap and the event heap give the same records and engine state, bit for bit; the garbage
collector around a run."""

from pathlib import Path

import pytest
from simruns import assert_same_run

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.serving import simulate as simulate_module
from napkin.serving.arrivals import generate
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.request import Request
from napkin.serving.scenario import Scenario, build
from napkin.serving.simulate import SimRun, simulate
from napkin.serving.workload import parse_workload
from napkin.timing.efficiency import Efficiency


def _both(make_engine, make_source, stop_after: int = 0) -> tuple[SimRun, SimRun]:
    """(one engine without a heap, the same on the event heap) on fresh engines and sources;
    both report progress (each unit's end and the requests finished by then) alike."""
    def go(events: bool) -> tuple[SimRun, list[tuple[float, int]]]:
        engines = [make_engine()]
        seen, reports = [], []

        def stop(req: Request) -> bool:
            seen.append(req.rid)
            return 0 < stop_after == len(seen)
        report = lambda t, done: reports.append((t, done))  # noqa: E731
        if not events:
            return simulate(engines, make_source(), progress=report, stop=stop), reports
        source, timer = make_source(), engines[0].timer
        feed = simulate_module.OpenFeed(source, timer.request_s, timer.request_token_s)
        return simulate_module._on_events(engines, feed, "round_robin", report, stop,
                                          None), reports
    alone, alone_reports = go(False)
    heap, heap_reports = go(True)
    assert alone_reports == heap_reports
    return alone, heap


@pytest.mark.parametrize(("backend", "rate"), [("vllm", 10), ("sglang", 10), ("trtllm", 30)])
def test_one_engine_runs_alike_under_a_fitted_profile(backend, rate):
    """A shipped profile's timer (linear step times, a per-request latency) on an overloaded
    H100: a long queue (preemptions, SGLang's retractions, TensorRT-LLM's reservations), and
    the same run either way."""
    sc = Scenario.model_validate({
        "name": "overload", "model": "qwen3-8b", "gpu": "h100-sxm", "calibration": backend,
        "engine": {"max_num_seqs": 256, "max_num_batched_tokens": 8192, "backend": backend},
        "workload": {"seed": 1, "classes": {"chat": {
            "input_tokens": {"dist": "lognormal", "median": 1000, "sigma": 1.0, "max": 16000},
            "output_tokens": {"dist": "lognormal", "median": 250, "sigma": 1.0, "max": 4000}}},
            "arrivals": {"kind": "poisson", "rate_per_s": rate, "num_requests": 3000}}})
    built = build(sc, Path("."))
    flat, ref = _both(lambda: built.engines()[0], lambda: built.source)
    assert flat.engines[0].spec.backend == backend
    assert max(flat.engines[0].series_waiting) > 50  # a queue builds up
    assert_same_run(flat, ref)


def test_a_run_leaves_the_garbage_collector_as_it_found_it():
    """``simulate`` pauses the cyclic collector for the run and restores it after: on, off,
    and after a run that fails (a request longer than the model's context)."""
    import gc

    model, acc = load_model("qwen3-0.6b"), load_accelerator("l4")
    wl = {"seed": 1, "classes": {"a": {"input_tokens": {"dist": "uniform", "low": 10,
                                                         "high": 20},
                                       "output_tokens": {"dist": "uniform", "low": 1,
                                                         "high": 5}}},
          "arrivals": {"kind": "poisson", "rate_per_s": 5.0, "num_requests": 3}}

    def engine() -> Engine:
        return Engine(model, acc, Precision.of(), Efficiency(), EngineSpec(num_blocks=100))
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            assert len(simulate([engine()], generate(parse_workload(wl))).records.rid) == 3
            assert gc.isenabled() is enabled
        gc.enable()
        long = dict(wl, classes={"a": dict(wl["classes"]["a"], input_tokens={
            "dist": "uniform", "low": 2000, "high": 2000})})
        with pytest.raises(NapkinError, match="KV blocks"):  # 2,000 tokens > 100 × 16
            simulate([engine()], generate(parse_workload(long)))
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("pause_after", [1, 3, 7])
def test_a_scheduler_closed_mid_run_resumes_where_it_stopped(pause_after):
    """Closing the coroutine writes the engine's state back, the unit in flight as
    ``engine.plan``; a new coroutine on that engine takes the unit up again, so a run paused
    after a few units and resumed finishes every request at the same instants as one run
    straight through."""
    from stepping import Stepper

    def engine() -> Engine:
        return Engine(load_model("qwen3-0.6b"), load_accelerator("l4"), Precision.of(),
                      Efficiency(0.5, 0.7, 1e-4),
                      EngineSpec(num_blocks=60, max_num_seqs=3, max_num_batched_tokens=96))

    def requests() -> list[Request]:
        return [Request(i, 0.01 * i, 40 + 30 * i, 5 + 7 * i) for i in range(6)]

    whole = Stepper(engine())
    for r in requests():
        whole.add(r, r.arrival_s)
    straight = {r.rid: (r.first_token_s, r.finish_s) for r in whole.run()}

    e = engine()
    first = Stepper(e)
    for r in requests():
        first.add(r, r.arrival_s)
    done = [r for _ in range(pause_after) for r in first.step()]
    first.close()
    assert e.plan is not None  # a unit was in flight when it closed
    done += Stepper(e).run()
    assert len(done) == len(straight) == 6
    assert {r.rid: (r.first_token_s, r.finish_s) for r in done} == straight


def test_the_scheduler_compiled_for_a_plain_engine_drops_the_features_that_are_off(
        monkeypatch):
    """Once a process has simulated ``SPECIALISE_AFTER`` requests, a plain engine runs
    ``process`` compiled with its switches as constants: the prefix cache's, the receive
    interval's and recording's calls are gone from its code (a prefix-caching engine's variant
    keeps the prefix cache's); below the count, or without the source, ``process`` itself."""
    import dis

    from napkin.serving import scheduler, specialise

    def engine(**spec) -> Engine:
        return Engine(load_model("qwen3-0.6b"), load_accelerator("l4"), Precision.of(),
                      Efficiency(), EngineSpec(num_blocks=100, **spec))
    monkeypatch.setattr(specialise, "_simulated", [0])
    monkeypatch.setattr(specialise, "CACHE", None)
    assert specialise.specialised(engine(), requests=10) is scheduler.process
    plain = specialise.specialised(engine(), requests=specialise.SPECIALISE_AFTER)
    assert plain is not scheduler.process
    assert plain.__code__.co_filename == scheduler.process.__code__.co_filename
    def called(f) -> set[str]:  # the names its bytecode loads
        return {i.argval for i in dis.get_instructions(f) if isinstance(i.argval, str)}
    features = {"_prefix_hits", "_take_prefix", "_take_in", "basis_at", "_series"}
    assert not called(plain) & features
    assert features <= called(scheduler.process)
    cached = specialise.specialised(engine(enable_prefix_caching=True))
    assert "_prefix_hits" in called(cached) and "_take_in" not in called(cached)
    assert specialise.specialised(engine()) is plain  # one variant per combination
    monkeypatch.setattr(specialise.scheduler, "__file__", "/nonexistent/scheduler.py")
    specialise._compiled.cache_clear()
    try:
        assert specialise.specialised(engine()) is scheduler.process  # no source: as written
    finally:
        monkeypatch.undo()
        specialise._compiled.cache_clear()
