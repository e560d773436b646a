"""The flat one-engine loop (:mod:`napkin.serving.flatloop`) against the engine's own methods:
the same records and the same engine state, bit for bit."""

import dataclasses
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simruns import assert_same_run

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.serving import flatloop
from napkin.serving.arrivals import generate
from napkin.serving.engine import Engine, EngineSpec
from napkin.serving.request import Request
from napkin.serving.scenario import Scenario, build
from napkin.serving.simulate import SimRun, simulate
from napkin.serving.workload import parse_workload
from napkin.timing import Efficiency


def _both(make_engine, make_source, stop_after: int = 0, replicas: int = 1,
          router: str = "round_robin") -> tuple[SimRun, SimRun]:
    """(flat loop, the engine's methods) on fresh engines and sources; both report progress
    (each unit's end and the requests finished by then) alike."""
    def go() -> tuple[SimRun, list[tuple[float, int]]]:
        engines = [make_engine() for _ in range(replicas)]
        seen, reports = [], []

        def stop(req: Request) -> bool:
            seen.append(req.rid)
            return 0 < stop_after == len(seen)
        run = simulate(engines, make_source(), router,
                       progress=lambda t, done: reports.append((t, done)), stop=stop)
        return run, reports
    flat, flat_reports = go()
    with mock.patch.object(flatloop, "applies", lambda engine: False):
        ref, ref_reports = go()
    assert flat_reports == ref_reports
    return flat, ref


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_id=st.sampled_from(["qwen3-0.6b", "qwen3-30b-a3b", "deepseek-v3"]),
       seed=st.integers(0, 10_000), n=st.integers(1, 40), blocks=st.integers(40, 300),
       seqs=st.integers(1, 12), budget_extra=st.integers(0, 400), bs=st.sampled_from([4, 16]),
       backend=st.sampled_from(["vllm", "trtllm", "trtllm-max-utilization", "sglang"]),
       chunked=st.booleans(),
       threshold=st.sampled_from([0, 64]), rate=st.sampled_from([5.0, 40.0, 400.0]),
       request_ms=st.sampled_from([0.0, 7.0]), token_us=st.sampled_from([0.0, 0.0, 50.0]),
       grid_s=st.sampled_from([0.0, 0.05]),
       stop_after=st.integers(0, 40), replicas=st.sampled_from([1, 1, 2, 3]),
       router=st.sampled_from(["round_robin", "least_outstanding"]))
def test_the_flat_loop_equals_the_engine(model_id, seed, n, blocks, seqs, budget_extra, bs,
                                         backend, chunked, threshold, rate, request_ms, token_us,
                                         grid_s, stop_after, replicas, router):
    """Random open-loop workloads, pools small enough to preempt (down to one request's
    blocks), chunking on and off, a long-prefill threshold, same-instant bursts, a per-request
    latency and one per prompt token (which reorders arrivals), early stops, and one to three
    replicas behind either router: records, every engine's state and unfinished requests agree
    exactly with the engine's methods (one engine) and the general event loop (several)."""
    budget = seqs + budget_extra + (0 if chunked else 500)
    wl = {"seed": seed, "classes": {
        "a": {"input_tokens": {"dist": "uniform", "low": 1, "high": 300},
              "output_tokens": {"dist": "uniform", "low": 1, "high": 120}},
        "b": {"input_tokens": {"dist": "lognormal", "median": 60, "sigma": 1.0, "max": 500},
              "output_tokens": {"dist": "uniform", "low": 1, "high": 40}}},
        "arrivals": {"kind": "poisson", "rate_per_s": rate, "num_requests": n}}
    spec = EngineSpec(num_blocks=max(blocks, (500 + 120) // bs + 1), max_num_seqs=seqs,
                      max_num_batched_tokens=budget, block_size=bs,
                      backend=backend.removesuffix("-max-utilization"),
                      capacity_scheduler="max_utilization" if backend.endswith("utilization")
                      else "default",
                      chunked_prefill=chunked, long_prefill_token_threshold=threshold)
    model = load_model(model_id)

    def make_engine() -> Engine:
        engine = Engine(model, load_accelerator("l4"), Precision.of(),
                        Efficiency(0.5, 0.7, 1e-4), spec)
        engine.timer = dataclasses.replace(engine.timer, request_s=request_ms / 1e3,
                                           request_token_s=token_us / 1e6)
        return engine

    def make_source():
        source = generate(parse_workload(wl))
        if grid_s:
            times = source.requests.arrival_s
            times[:] = np.round(times / grid_s) * grid_s
        return source
    assert flatloop.applies(make_engine())
    assert_same_run(*_both(make_engine, make_source, stop_after, replicas, router))


@pytest.mark.parametrize(("backend", "rate"), [("vllm", 10), ("sglang", 10), ("trtllm", 30)])
def test_the_flat_loop_equals_the_engine_under_a_fitted_profile(backend, rate):
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


def test_which_engines_take_the_flat_loop():
    """Only the engine the flat loop implements; any other feature runs the engine's
    methods."""
    model, acc = load_model("qwen3-0.6b"), load_accelerator("l4")

    def engine(model=model, record=False, **kw) -> Engine:
        return Engine(model, acc, Precision.of(), Efficiency(), EngineSpec(num_blocks=500, **kw),
                      record=record)
    for backend in ({}, {"backend": "trtllm"}, {"backend": "sglang"},
                    {"backend": "trtllm", "capacity_scheduler": "max_utilization"}):
        assert flatloop.applies(engine(**backend))
    for other in (engine(mode="exact"), engine(enable_prefix_caching=True), engine(record=True),
                  engine(model=load_model("gpt-oss-20b")),
                  engine(backend="sglang", scheduler_recv_interval=2),
                  engine(backend="trtllm", capacity_scheduler="max_utilization",
                         batch_wait_timeout_iters=2, batch_wait_max_tokens_ratio=0.5)):
        assert not flatloop.applies(other)
    busy = engine()
    busy.add(Request(0, 0.0, 10, 5), 0.0)
    assert not flatloop.applies(busy)  # a used engine: its state is the methods' to carry on


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
