"""Fast mode (closed-form decode runs, LinearCost) and exact mode (one step at a time, each
costed by ``forward`` on the explicit batch) give the same per-request times."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simruns import assert_same_run

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.serving.arrivals import generate
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.simulate import simulate
from napkin.serving.workload import parse_workload
from napkin.timing.efficiency import Efficiency

MODELS = ["qwen3-0.6b", "gpt-oss-20b", "qwen3-30b-a3b", "deepseek-v3", "qwen3-next-80b-a3b"]


def _workload(kind: str, seed: int, n: int) -> dict:
    classes = {
        "a": {"input_tokens": {"dist": "uniform", "low": 1, "high": 300},
              "output_tokens": {"dist": "uniform", "low": 1, "high": 120}},
        "b": {"input_tokens": {"dist": "lognormal", "median": 60, "sigma": 1.0, "max": 500},
              "output_tokens": {"dist": "uniform", "low": 1, "high": 40},
              "shared_prefix_tokens": 48},
    }
    arrivals = {
        "poisson": {"kind": "poisson", "rate_per_s": 40.0, "num_requests": n},
        "gamma": {"kind": "gamma", "rate_per_s": 60.0, "cv": 3.0, "num_requests": n},
        "closed_loop": {"kind": "closed_loop", "clients": 5, "num_requests": n,
                        "think_time_s": {"dist": "uniform", "low": 0, "high": 0.05}},
        "sessions": {"kind": "sessions", "num_sessions": max(2, n // 4), "rate_per_s": 30.0,
                     "rounds": {"dist": "uniform", "low": 1, "high": 4},
                     "first_input_tokens": {"dist": "uniform", "low": 20, "high": 200},
                     "turn_input_tokens": {"dist": "uniform", "low": 1, "high": 50},
                     "output_tokens": {"dist": "uniform", "low": 1, "high": 60},
                     "think_time_s": 0.02},
    }[kind]
    return {"seed": seed, "classes": classes, "arrivals": arrivals}


def _run(model_id, mode, wl, blocks, seqs, budget, caching, tp, replicas, router, bs):
    model = load_model(model_id)
    spec = EngineSpec(num_blocks=blocks, max_num_seqs=seqs, max_num_batched_tokens=budget,
                      block_size=bs, enable_prefix_caching=caching, tensor_parallel=tp,
                      mode=mode)
    engines = [Engine(model, load_accelerator("l4"), Precision.of(), Efficiency(0.5, 0.7, 1e-4),
                      spec) for _ in range(replicas)]
    run = simulate(engines, generate(parse_workload(wl)), router)
    order = np.argsort(run.records.rid)
    r = run.records
    return ({k: getattr(r, k)[order] for k in ("rid", "arrival_s", "first_token_s",
                                                "first_scheduled_s", "finish_s", "preemptions",
                                                "cached_tokens", "engine")},
            [e.kv_token_seconds for e in engines], [e.peak_blocks for e in engines])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_id=st.sampled_from(MODELS),
       kind=st.sampled_from(["poisson", "gamma", "closed_loop", "sessions"]),
       seed=st.integers(0, 10_000), n=st.integers(1, 24),
       blocks=st.integers(45, 400), seqs=st.integers(1, 12), budget_extra=st.integers(0, 400),
       caching=st.booleans(), tp=st.sampled_from([1, 2]), replicas=st.sampled_from([1, 2]),
       router=st.sampled_from(["round_robin", "least_outstanding", "least_kv"]),
       bs=st.sampled_from([4, 16]))
def test_fast_and_exact_modes_agree(model_id, kind, seed, n, blocks, seqs, budget_extra,
                                    caching, tp, replicas, router, bs):
    wl = _workload(kind, seed, n)
    blocks = max(blocks, (500 + 400 + 120) // bs + 2 if kind != "sessions" else 4000 // bs)
    args = (wl, blocks, seqs, seqs + budget_extra, caching, tp, replicas, router, bs)
    fast, kv_fast, peak_fast = _run(model_id, "fast", *args)
    exact, kv_exact, peak_exact = _run(model_id, "exact", *args)
    for key in ("rid", "preemptions", "cached_tokens", "engine"):
        np.testing.assert_array_equal(fast[key], exact[key], err_msg=key)
    for key in ("arrival_s", "first_scheduled_s", "first_token_s", "finish_s"):
        np.testing.assert_allclose(fast[key], exact[key], rtol=1e-9, atol=1e-12, err_msg=key)
    assert peak_fast == peak_exact
    assert kv_fast == pytest.approx(kv_exact, rel=1e-9, abs=1e-9)


def test_fast_mode_breaks_decode_runs_at_the_compressed_sparse_span():
    """DeepSeek V4-Flash's CSA layers stop growing at ratio·top-k = 4 × 512 = 2,048 tokens of
    context (besides the 128-token window): decodes that cross it are costed alike in fast mode
    (closed-form runs cut at the span) and exact mode (every step by ``forward``)."""
    assert load_model("deepseek-v4-flash").cost_windows == (128, 2048)
    wl = {"seed": 3, "classes": {"a": {"input_tokens": {"dist": "uniform", "low": 2000,
                                                        "high": 2040},
                                       "output_tokens": {"dist": "uniform", "low": 20,
                                                         "high": 60}}},
          "arrivals": {"kind": "poisson", "rate_per_s": 20.0, "num_requests": 6}}
    args = (wl, 2000, 8, 8192, False, 1, 1, "round_robin", 16)
    fast, _, _ = _run("deepseek-v4-flash", "fast", *args)
    exact, _, _ = _run("deepseek-v4-flash", "exact", *args)
    for key in ("first_token_s", "finish_s"):
        np.testing.assert_allclose(fast[key], exact[key], rtol=1e-9, err_msg=key)


@pytest.mark.parametrize("caching", [False, True])
def test_fast_and_exact_agree_on_a_linear_attention_hybrid(caching):
    """Qwen3-Next: every decode and resumed chunk reads and writes its Gated DeltaNet state, a
    fresh prompt writes it; fast mode (LinearCost's per-sequence term) and exact mode
    (``forward`` on each step's batch) time the same steps."""
    wl = _workload("sessions", 11, 12)
    args = (wl, 4000 // 16, 6, 256, caching, 1, 1, "round_robin", 16)
    fast, kv_fast, _ = _run("qwen3-next-80b-a3b", "fast", *args)
    exact, kv_exact, _ = _run("qwen3-next-80b-a3b", "exact", *args)
    for key in ("first_token_s", "finish_s"):
        np.testing.assert_allclose(fast[key], exact[key], rtol=1e-9, err_msg=key)
    assert kv_fast == pytest.approx(kv_exact, rel=1e-9)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_id=st.sampled_from(MODELS), kind=st.sampled_from(["poisson", "gamma"]),
       seed=st.integers(0, 10_000), n=st.integers(1, 30), blocks=st.integers(70, 300),
       seqs=st.integers(1, 12), budget_extra=st.integers(0, 400), caching=st.booleans(),
       backend=st.sampled_from(["vllm", "trtllm", "sglang"]),
       request_ms=st.sampled_from([0.0, 7.0]), token_us=st.sampled_from([0.0, 0.0, 50.0]),
       stop_after=st.integers(0, 40),
       grid_s=st.sampled_from([0.0, 0.05, 0.5]))
def test_one_engine_loop_equals_the_event_loop(model_id, kind, seed, n, blocks, seqs,
                                               budget_extra, caching, backend, request_ms,
                                               token_us, stop_after, grid_s):
    """One engine on open-loop arrivals runs without the event heap (``run_one``); on the
    heap (``run_events``) it gives the same records bit for bit, the
    same engine state and the same early stop. Arrival times rounded to a ``grid_s`` grid come
    in bursts at one instant (an idle engine starts after all of them); a latency per prompt
    token reorders when they reach the engine."""
    from napkin.serving.events import run_one
    from napkin.serving.simulate import Log, OpenFeed, SimRun, _on_events

    wl = _workload(kind, seed, n)
    caching = caching and backend == "vllm"
    spec = EngineSpec(num_blocks=max(blocks, (500 + 120) // 16 + 2), max_num_seqs=seqs,
                      max_num_batched_tokens=seqs + budget_extra + 500,
                      enable_prefix_caching=caching, backend=backend,
                      scheduler_recv_interval=3 if backend == "sglang" else 1)
    model = load_model(model_id)

    def run(loop: str):
        engine = Engine(model, load_accelerator("l4"), Precision.of(),
                        Efficiency(0.5, 0.7, 1e-4), spec)
        engine.timer = dataclasses.replace(engine.timer, request_s=request_ms / 1e3,
                                           request_token_s=token_us / 1e6)
        source = generate(parse_workload(wl))
        if grid_s:
            times = source.requests.arrival_s
            times[:] = np.round(times / grid_s) * grid_s
        feed = OpenFeed(source, engine.timer.request_s, engine.timer.request_token_s)
        seen = []

        def stop(req) -> bool:
            seen.append(req.rid)
            return 0 < stop_after == len(seen)
        if loop == "heap":
            return _on_events([engine], feed, "round_robin", None, stop, None)
        log = Log(stop)
        stopped = run_one(engine, feed, log, None)
        return SimRun(log.records(), (engine,), feed.labels, stopped=stopped)

    assert_same_run(run("one"), run("heap"))


@pytest.mark.parametrize("loop", ["open", "closed"])
def test_a_latency_per_prompt_token_lets_a_short_prompt_reach_the_engine_first(loop):
    """``request_s`` 5 ms and ``request_token_s`` 10 µs: a 1,000-token prompt sent at t = 0
    reaches an idle engine at 5 + 10 = 15 ms, a 100-token prompt sent at 1 ms at 1 + 5 + 1 =
    7 ms, so the short one is scheduled first, at 7 ms; each keeps its own id and arrival time
    (its TTFT counts the latency). Closed loop: one client's requests, each sent when the last
    one finished, reach the engine 5 ms + 10 µs × its prompt after it is sent."""
    model = load_model("qwen3-0.6b")
    engine = Engine(model, load_accelerator("l4"), Precision.of(), Efficiency(0.5, 0.7, 1e-4),
                    EngineSpec(num_blocks=200, max_num_seqs=8, max_num_batched_tokens=2048))
    engine.timer = dataclasses.replace(engine.timer, request_s=5e-3, request_token_s=10e-6)
    if loop == "open":
        source = generate(parse_workload({"seed": 0, "classes": {"a": {
            "input_tokens": 100, "output_tokens": 4}},
            "arrivals": {"kind": "poisson", "rate_per_s": 1.0, "num_requests": 2}}))
        source.requests.arrival_s[:] = [0.0, 1e-3]
        source.requests.input_tokens[:] = [1000, 100]
        r = simulate([engine], source).records
        by_rid = {int(rid): k for k, rid in enumerate(r.rid)}
        long, short = by_rid[0], by_rid[1]
        assert (r.arrival_s[long], r.arrival_s[short]) == (0.0, 1e-3)
        assert r.first_scheduled_s[short] == pytest.approx(7e-3)
        assert r.first_scheduled_s[long] >= 15e-3 - 1e-12
        assert r.first_token_s[short] < r.first_token_s[long]
        return
    source = generate(parse_workload({"seed": 0, "classes": {"a": {
        "input_tokens": 300, "output_tokens": 3}},
        "arrivals": {"kind": "closed_loop", "clients": 1, "num_requests": 3}}))
    r = simulate([engine], source).records
    assert r.first_scheduled_s[0] == pytest.approx(5e-3 + 300 * 10e-6)
    for k in (1, 2):  # sent when the previous one finished
        assert r.first_scheduled_s[k] - r.finish_s[k - 1] == pytest.approx(5e-3 + 3e-3)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), blocks=st.integers(40, 120), seqs=st.integers(2, 12))
def test_prefix_hits_never_exceed_the_prompts(seed, blocks, seqs):
    """Sessions re-sending their history to a pool small enough to preempt: a preempted
    request re-admitted finds its own blocks again, which saves recompute but serves no more of
    its prompt; each request's hits are at most its prompt, and the hit fraction at most 1."""
    from napkin.serving.metrics import SLO, summarize

    wl = _workload("sessions", seed, 24)
    spec = EngineSpec(num_blocks=blocks, max_num_seqs=seqs, max_num_batched_tokens=seqs + 512,
                      enable_prefix_caching=True)
    engine = Engine(load_model("qwen3-0.6b"), load_accelerator("l4"), Precision.of(),
                    Efficiency(0.5, 0.7, 1e-4), spec)
    run = simulate([engine], generate(parse_workload(wl)))
    r = run.records
    assert (r.cached_tokens <= r.input_tokens).all()
    assert 0 <= summarize(run, SLO()).prefix_hit_frac <= 1
