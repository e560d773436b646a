"""Load scaling, the sustainable-load bisection, sweeps and the overload line, against hand
derivations."""

from pathlib import Path

import numpy as np
import pytest

from napkin.serving.arrivals import generate
from napkin.serving.load import base_load, offered_rate, scale_load
from napkin.serving.metrics import summarize
from napkin.serving.scenario import Scenario, build
from napkin.serving.simulate import simulate
from napkin.serving.sweep import max_sustainable, sweep
from napkin.serving.workload import Workload

CLASSES = {"a": {"input_tokens": 16, "output_tokens": 10}}


def _wl(arrivals: dict) -> Workload:
    return Workload.model_validate({"seed": 1, "classes": CLASSES, "arrivals": arrivals})


def test_scaling_keeps_the_span_and_multiplies_the_load():
    p = scale_load(_wl({"kind": "poisson", "rate_per_s": 2.0, "num_requests": 100}), 1.5).arrivals
    assert (p.rate_per_s, p.num_requests) == (3.0, 150)  # same expected span, 50 s
    w = scale_load(_wl({"kind": "windows", "windows": [
        {"duration_s": 60, "requests": 240}, {"duration_s": 60, "rate_per_s": 2.0}]}), 0.25)
    assert [(x.requests, x.rate_per_s) for x in w.arrivals.windows] == [(60, None), (None, 0.5)]
    c = scale_load(_wl({"kind": "closed_loop", "clients": 16, "num_requests": 160}), 2).arrivals
    assert (c.clients, c.num_requests) == (32, 320)
    s = scale_load(_wl({"kind": "schedule", "segments": [{"duration_s": 10, "rate_per_s": 4},
                                                         {"duration_s": 5, "rate_per_s": 0}]}),
                   0.5).arrivals
    assert [seg.rate_per_s for seg in s.segments] == [2.0, 0.0]


def test_trace_scaling_replays_the_same_slice_faster():
    t = scale_load(Workload.model_validate({"arrivals": {
        "kind": "trace", "format": "csv", "path": "x.csv", "time_scale": 1.0, "start_s": 60,
        "end_s": 120}}), 2.0).arrivals
    assert (t.time_scale, t.start_s, t.end_s) == (0.5, 30.0, 60.0)


def test_offered_rate_of_even_windows_is_count_over_duration():
    """Even spacing puts n arrivals at (i + ½)·d/n: (n − 1)/span = n/d exactly."""
    src = generate(_wl({"kind": "windows", "windows": [{"duration_s": 60, "requests": 240}]}))
    assert offered_rate(src.requests.arrival_s) == pytest.approx(4.0)
    assert base_load(_wl({"kind": "closed_loop", "clients": 8, "num_requests": 80}), None) == 8


def test_bisection_brackets_the_threshold():
    lo, hi = max_sustainable(lambda x: x <= 3.7, start=1.0, rel_tol=0.01)
    assert lo <= 3.7 < hi and hi / lo <= 1.01
    lo, hi = max_sustainable(lambda x: x <= 3.7, start=50.0, rel_tol=0.01)
    assert lo <= 3.7 < hi and hi / lo <= 1.01
    assert max_sustainable(lambda x: x <= 37, start=5, integer=True) == (37, 38)
    assert max_sustainable(lambda x: False, start=4, integer=True) == (None, 1)
    lo, hi = max_sustainable(lambda x: True, start=1.0, max_steps=3)
    assert (lo, hi) == (8.0, None)


def _scenario(rate: float) -> Scenario:
    """One sequence at a time, every step 100 ms (a 100 ms step overhead dwarfs the 0.6B
    model's roofline time on an H100: ≈ 0.4 ms), 10 output tokens: each request holds the engine
    for 10 steps (prefill emits the first token) ≈ 1.004 s, so μ ≈ 0.996 requests/s."""
    return Scenario.model_validate({
        "name": "one at a time", "model": "qwen3-0.6b", "gpu": "h100-sxm",
        "calibration": "roofline", "step_overhead_ms": 100,
        "engine": {"max_num_seqs": 1, "kv_pool_gib": 1},
        "slo": {"ttft_s": 2.0, "tpot_s": 1.0, "share": 0.9},
        "workload": {"seed": 0, "classes": CLASSES, "arrivals": {
            "kind": "windows", "spacing": "even",
            "windows": [{"duration_s": 60, "rate_per_s": rate}]}}})


def _service_s() -> float:
    built = build(_scenario(0.1), Path("."))
    run = simulate(built.engines(), built.source)
    r = run.records
    return float(np.mean(r.finish_s - r.first_scheduled_s))


def test_max_sustainable_rate_of_a_deterministic_server():
    """Even arrivals at rate r > μ to a one-at-a-time server of service time 1/μ: request k
    (of n = 60 r) waits k·(1/μ − 1/r), so a 60 s run keeps 90 % of its requests within the
    2 s TTFT bound up to r = μ · (1 + 1.9/54) — its queue has not had time to build, and in a
    run 4× longer the bound would be μ · (1 + 1.9/216). In steady state no rate above μ is
    sustainable: the sweep's capacity is μ (every request queued at once, one served each
    1/μ) and its answer is μ within the bisection's 0.5 %, whatever the run's length."""
    mu = 1 / _service_s()
    assert mu == pytest.approx(1 / 1.004, rel=0.01)
    result = sweep(_scenario(0.5), Path("."), loads=[0.5, 2.0], rel_tol=0.005)
    assert result.unit == "requests/s" and result.base_load == pytest.approx(0.5)
    assert result.capacity == pytest.approx(mu, rel=1e-3)
    assert mu * (1 - 0.006) <= result.max_sustainable <= mu
    lo, hi = result.bracket
    assert hi is not None and hi / lo <= 1.005 + 1e-9
    finite_run_answer = mu * (1 + 1.9 / 54)  # what the 60 s run alone would accept
    over = [p for p in result.points if p.load >= finite_run_answer]
    assert all(p.over_capacity and not p.sustainable(0.9) for p in over)
    assert [p.load for p in result.points] == sorted(p.load for p in result.points)


def test_overload_is_flagged_with_its_factor():
    """At twice μ the queue grows for the whole minute: offered 2 requests/s, served n over the
    makespan ≈ 120/(120/μ) = μ, so the factor is ≈ 2/μ; at half μ nothing is flagged."""
    mu = 1 / _service_s()
    for rate, flagged in ((2.0, True), (0.5, False)):
        built = build(_scenario(rate), Path("."))
        s = summarize(simulate(built.engines(), built.source), built.slo)
        assert s.offered_requests_per_s == pytest.approx(rate)
        if flagged:
            assert s.overload_factor == pytest.approx(rate / mu, rel=0.03)
        else:
            assert s.overload_factor is None


def test_python_api_sweeps_a_scenario_file():
    from napkin.api.serving import sweep
    from napkin.catalog import scenario_file

    result = sweep(scenario_file("chapter-3-1-uniform.yaml"), rates=[0.5, 4.0],
                   overrides=["slo.share=0.95"]).value
    assert result.share == 0.95
    assert result.points[0].sustainable(0.95) and not result.points[-1].sustainable(0.95)
    assert result.points[-1].summaries[0].overload_factor > 2


def test_an_end_to_end_bound_counts_with_the_other_two():
    """At 0.5 requests/s the one-at-a-time server finishes each request 10 steps ≈ 1.004 s
    after it arrives: an end-to-end bound of 1.1 s is met by all, one of 0.9 s by none."""
    for bound, share in ((1.1, 1.0), (0.9, 0.0)):
        s = _scenario(0.5)
        s = s.model_copy(update={"slo": s.slo.model_copy(update={"e2e_s": bound})})
        built = build(s, Path("."))
        assert summarize(built.simulate(), built.slo).slo_met_frac == share


def test_a_load_the_search_only_decides_stops_at_its_thirteenth_miss():
    """The deterministic server at 2 requests/s (n = 120, allowed misses 10 % = 12): request k
    waits k·(1/μ − 1/2) ≈ 0.504·k s, so k = 0…3 meet the 2 s TTFT (0.504·k + 0.1 ≤ 2) and
    k = 4, 5, … miss; the run stops when the 13th miss (k = 16) finishes: 17 requests. Run in
    full when asked for, it finishes all 120. (2 requests/s is twice the server's capacity, which
    decides it without a run: the early stop is shown with the capacity test set aside.)"""
    from napkin.serving.sweep import _Runner

    r = _Runner(_scenario(2.0), Path("."), (0, 1))
    over = r.run(2.0, decide=True)
    assert over.over_capacity and over.summaries == () and not over.sustainable(0.9)
    r.capacity = None
    decided = r.run(2.0, decide=True)
    assert decided.stopped and not decided.sustainable(0.9)
    assert len(decided.summaries) == 1  # the second seed is not run
    assert decided.summaries[0].requests == 17
    full = r.run(2.0)
    assert not full.stopped and [s.requests for s in full.summaries] == [120, 120]
    assert not full.sustainable(0.9)
    assert r.run(2.0, decide=True) is full  # a full point answers a decision too


def test_a_sweep_reports_its_stopped_points_without_their_partial_figures(monkeypatch):
    """The search's unsustainable loads stop early; the table shows them decided (SLO met below
    the share, no figures) and the JSON keeps their partial summaries marked stopped. (With the
    capacity test set aside, so that the loads above capacity are run and stop.)"""
    from napkin.report.serve_views import sweep_doc
    from napkin.serving.sweep import _Runner

    monkeypatch.setattr(_Runner, "_capacity", lambda self, built: None)
    built = build(_scenario(0.5), Path("."))
    result = sweep(_scenario(0.5), Path("."), rel_tol=0.05)
    stopped = [p for p in result.points if p.stopped]
    assert stopped and all(not p.sustainable(0.9) for p in stopped)
    doc = sweep_doc(result, built)
    rows = {row[0]: row for row in doc.sections[0].rows}
    for p in stopped:
        assert rows[f"{p.load:,.4g}"][1:] == ["< 90%", "—", "—", "—", "—", "—", "—", "—",
                                              "no", "stopped early"]
    assert [q["stopped"] for q in doc.data["points"]] == [p.stopped for p in result.points]


def test_the_miss_budget_is_exact_at_the_share():
    """120 counted requests at share 0.9 may miss 12 (108/120 = 0.9 meets it): the stop fires
    on the 13th miss, not on the 12th (where (1 − 0.9)·120 rounds to 11.999…)."""
    from napkin.serving.request import Request
    from napkin.serving.sweep import slo_miss_stop

    built = build(_scenario(2.0), Path("."))
    assert len(built.source.requests) == 120 and built.warmup == 0
    stop = slo_miss_stop(built, 0.9)
    fired = []
    for k in range(13):
        r = Request(k, 0.0, 16, 10)
        r.first_token_s, r.finish_s = 5.0, 5.5  # TTFT 5 s > the 2 s bound: a miss
        fired.append(stop(r))
    assert fired == [False] * 12 + [True]


def _lenient(duration_s: float) -> Scenario:
    """Qwen3-0.6B on an L4 (roofline at MFU 0.5 / MBU 0.7), 16 sequences, fixed 400 / 150
    tokens, Poisson arrivals, an SLO a short overloaded run still meets (5 s TTFT)."""
    return Scenario.model_validate({
        "name": "lenient", "model": "qwen3-0.6b", "gpu": "l4", "calibration": "roofline",
        "mfu": 0.5, "mbu": 0.7, "engine": {"max_num_seqs": 16, "max_num_batched_tokens": 2048},
        "slo": {"ttft_s": 5.0, "tpot_s": 1.0, "share": 0.9},
        "workload": {"seed": 0, "classes": {"chat": {"input_tokens": 400, "output_tokens": 150}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 5,
                                  "duration_s": duration_s}}})


def test_the_sustainable_rate_does_not_rest_on_the_run_length():
    """A 30 s run at 12 requests/s (above the ≈ 10.5/s the engine serves with a queue that never
    empties) builds only (1 − 10.5/12) × 30 ≈ 4 s of wait by its end, within the 5 s TTFT bound,
    so a finite-run test accepted 12.7/s there and 10.5/s in a 120 s run (−17 %). In steady
    state neither is above the capacity, and the two agree within 3 %."""
    short = sweep(_lenient(30), Path("."), rel_tol=0.01, extra_points=False)
    long = sweep(_lenient(120), Path("."), rel_tol=0.01, extra_points=False)
    for r in (short, long):
        assert r.capacity is not None and r.max_sustainable <= r.capacity
        assert r.capacity == pytest.approx(10.5, rel=0.03)
    assert long.max_sustainable == pytest.approx(short.max_sustainable, rel=0.03)


@pytest.mark.parametrize(("seqs", "rate", "ttft_s"), [(4, 2.0, 30.0), (16, 5.0, 5.0),
                                                       (64, 20.0, 60.0), (8, 1.0, 0.5)])
def test_no_sustainable_rate_exceeds_the_all_at_once_throughput(seqs, rate, ttft_s):
    """Whatever the SLO (lenient enough for an overload to pass a short run, or tight), the
    sweep's answer is at most its capacity."""
    s = _lenient(20)
    s = s.model_copy(update={
        "engine": s.engine.model_copy(update={"max_num_seqs": seqs}),
        "slo": s.slo.model_copy(update={"ttft_s": ttft_s}),
        "workload": s.workload.model_copy(update={"arrivals": s.workload.arrivals.model_copy(
            update={"rate_per_s": rate})})})
    r = sweep(s, Path("."), rel_tol=0.02, extra_points=False)
    assert r.capacity is not None
    assert r.max_sustainable is None or r.max_sustainable <= r.capacity
    assert all(not p.sustainable(r.share) for p in r.points if p.load > r.capacity)


def test_the_sustainable_rate_carries_its_band_and_each_full_point_its_confidence():
    """Under the vLLM profile (TPOT band ×0.8644–1.151), the 80 % band of the maximum
    sustainable rate is max/1.151 … max/0.8644; a point run in full carries P(SLO met) (0
    when over capacity), one stopped early none; every full point its energy: the RTX PRO
    6000's 600 W board at the default shares, so at most 600 W per GPU on average."""
    from napkin.calibration.profile import load_profile
    from napkin.catalog import scenario_file
    from napkin.serving.scenario import load_scenario

    scenario, base = load_scenario(scenario_file("chapter-3-1-uniform.yaml"))
    result = sweep(scenario, base)
    tpot = load_profile("vllm").bands["tpot"]
    top = result.max_sustainable
    assert result.step_band == (tpot.ratio_low, tpot.ratio_high) == (0.8644, 1.151)
    assert result.band == pytest.approx((top / 1.151, top / 0.8644))
    full = [p for p in result.points if not p.stopped and p.summaries]
    assert full and all(0 <= p.p_slo_met <= 1 for p in full)
    assert all(p.p_slo_met == 0 for p in full if p.over_capacity)
    at_top = next(p for p in result.points if p.load == top)
    assert at_top.p_slo_met is not None and at_top.sustainable(0.9)
    assert result.sure is None or result.sure <= top
    for p in full:
        assert p.energy is not None and 0.1 * 600 <= p.energy.mean_power_w <= 600
    assert all(p.p_slo_met is None and p.energy is None for p in result.points if p.stopped)
