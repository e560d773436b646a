"""A frontend that queues (``engine.frontend``): tokenization before the engine, detokenization
before the client, one job at a time; hand-worked against the same engine without it."""

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from napkin.accounting import Precision
from napkin.calibration.basis import FittedTimer, StepBasis
from napkin.calibration.profile import Profile
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.serving import specialise
from napkin.serving.arrivals import OpenLoop
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.metrics import summarize
from napkin.serving.requests import RequestSet
from napkin.serving.scenario import Scenario, build
from napkin.serving.simulate import SimRun, simulate
from napkin.timing.efficiency import Efficiency
from napkin.timing.frontend import Frontend, served


def _engine(frontend: Frontend | None = None, mode: str = "fast") -> Engine:
    return Engine(load_model("qwen3-0.6b"), load_accelerator("h100-sxm"), Precision.of(),
                  Efficiency(0.5, 0.7, 1e-4),
                  EngineSpec(num_blocks=10_000, max_num_seqs=8, max_num_batched_tokens=256,
                             mode=mode, frontend=frontend))


def _run(engine: Engine, times: list[float], prompts: list[int], outs: list[int]) -> SimRun:
    return simulate([engine], OpenLoop(RequestSet.build(times, prompts, outs), (0,)))


def _by_rid(run: SimRun, field: str) -> np.ndarray:
    r = run.records
    return getattr(r, field)[np.argsort(r.rid)]


def test_a_server_takes_one_job_at_a_time():
    """A 2 s job handed at 1 s to a server free from 0 ends at 3 s; handed at 1 s to one busy
    until 4 s, at 6 s."""
    assert served(0.0, 1.0, 2.0) == 3.0
    assert served(4.0, 1.0, 2.0) == 6.0


def test_the_ceiling_and_the_tokenize_job():
    """20 ms + 10 µs × 1,000 prompt tokens + 20 µs × 500 outputs = 40 ms a request: 25/s."""
    f = Frontend(0.020, 10e-6, 20e-6)
    assert f.tokenize_s(1000) == pytest.approx(0.030)
    assert f.requests_per_s(1000, 500) == pytest.approx(25.0)
    assert Frontend().requests_per_s(1000, 500) == math.inf
    assert not Frontend().active and f.active


@pytest.mark.parametrize("bad", [-1e-3, math.inf, math.nan])
def test_bad_work_is_refused_by_name(bad):
    with pytest.raises(NapkinError, match=r"frontend\.request_s"):
        Frontend(request_s=bad)


@pytest.mark.parametrize("mode", ["fast", "exact"])
def test_three_requests_at_once_are_tokenized_in_turn(mode):
    """Three 4-token prompts at t = 0, one output each, 1 s of frontend work a request: they
    reach the engine at 1, 2 and 3 s, each alone on an idle engine, so each one's TTFT is its
    turn in the queue plus the TTFT one request alone gets without a frontend (ms)."""
    alone = _by_rid(_run(_engine(mode=mode), [0.0], [4], [1]), "first_token_s")[0]
    run = _run(_engine(Frontend(request_s=1.0), mode), [0.0] * 3, [4] * 3, [1] * 3)
    ttft = _by_rid(run, "first_token_s") - _by_rid(run, "arrival_s")
    np.testing.assert_allclose(ttft, [1 + alone, 2 + alone, 3 + alone], rtol=1e-12)


@pytest.mark.parametrize("mode", ["fast", "exact"])
def test_detokenization_delays_what_the_client_sees(mode):
    """One 4-token prompt, 3 outputs, 0.5 s of frontend work per output token. The engine makes
    the first token at t1 (its prefill) and the other two by t1 + two decode steps (ms): the
    client sees the first at t1 + 0.5 and the last once the frontend has done all three,
    t1 + 1.5, whether the two decodes are one unit (fast) or two (exact)."""
    base = _run(_engine(mode=mode), [0.0], [4], [3])
    t1 = _by_rid(base, "first_token_s")[0]
    assert _by_rid(base, "finish_s")[0] - t1 < 0.01  # two decode steps: milliseconds
    run = _run(_engine(Frontend(output_token_s=0.5), mode), [0.0], [4], [3])
    assert _by_rid(run, "first_token_s")[0] == pytest.approx(t1 + 0.5, rel=1e-12)
    assert _by_rid(run, "finish_s")[0] == pytest.approx(t1 + 1.5, rel=1e-12)


def test_the_engine_schedules_as_without_it_when_it_keeps_up():
    """Arrivals 1 s apart and 1 ms of frontend work: every request reaches the engine 1 ms late
    and the engine does the same work, so every latency is 1 ms longer (to the ulp)."""
    times, prompts, outs = [0.0, 1.0, 2.0], [100, 200, 300], [5, 6, 7]
    base = _run(_engine(), times, prompts, outs)
    run = _run(_engine(Frontend(request_s=1e-3)), times, prompts, outs)
    for field in ("first_token_s", "finish_s"):
        np.testing.assert_allclose(_by_rid(run, field), _by_rid(base, field) + 1e-3,
                                   rtol=0, atol=1e-12)
    assert run.engines[0].frontend_busy_s == pytest.approx(3e-3)


def _closed(clients: int, replicas: int = 1, router: str = "round_robin") -> dict:
    return {"name": "frontend", "model": "qwen3-0.6b", "gpu": "h100-sxm",
            "calibration": "roofline",
            "engine": {"max_num_seqs": 256, "replicas": replicas, "router": router,
                       "frontend": {"request_ms": 20, "prompt_token_us": 10,
                                    "output_token_us": 20}},
            "workload": {"seed": 1, "classes": {"chat": {"input_tokens": 500,
                                                         "output_tokens": 100}},
                         "arrivals": {"kind": "closed_loop", "clients": clients,
                                      "num_requests": 3000 * replicas}}}


@pytest.mark.parametrize("replicas,router", [(1, "round_robin"), (2, "round_robin"),
                                             (2, "least_outstanding")])
def test_a_closed_loop_levels_off_at_the_frontends_rate(replicas, router):
    """20 ms + 10 µs × 500 + 20 µs × 100 = 27 ms of frontend work a request: 37.04 requests/s a
    replica, far below what a 0.6B model's engine serves; 64 clients a replica keep each
    frontend busy, so the served rate is the ceiling (within 1 %: the run's ends). The
    least-outstanding router counts the requests in each frontend's queue."""
    built = build(Scenario.model_validate(_closed(64 * replicas, replicas, router)), Path("."))
    s = summarize(built.simulate(), built.slo)
    assert s.requests_per_s == pytest.approx(replicas / 0.027, rel=0.01)


def test_the_compiled_scheduler_runs_it_the_same(monkeypatch):
    """The scheduler compiled for the frontend switch gives the same records, bit for bit."""
    runs = []
    for after in (10**18, 0):
        monkeypatch.setattr(specialise, "SPECIALISE_AFTER", after)
        monkeypatch.setattr(specialise, "CACHE", None)
        built = build(Scenario.model_validate(_closed(16)), Path("."))
        runs.append(built.simulate().records)
    for name in ("first_token_s", "finish_s", "arrival_s"):
        np.testing.assert_array_equal(getattr(runs[0], name), getattr(runs[1], name))


def test_it_is_refused_with_disaggregated_pools():
    d = _closed(4)
    d["engine"]["disaggregated"] = {"prefill_replicas": 1, "decode_replicas": 1}
    with pytest.raises(ValueError, match="frontend: not with disaggregated"):
        Scenario.model_validate(d)


def test_a_kv_router_does_not_see_the_frontends_queue():
    """Requests in a frontend hold no KV, so least-KV routing piles them on one replica's
    frontend while the other's idles: below the two frontends' ceiling (what a KV-only router
    does; ``least_outstanding`` counts them)."""
    built = build(Scenario.model_validate(_closed(128, 2, "least_kv")), Path("."))
    assert summarize(built.simulate(), built.slo).requests_per_s < 0.97 * 2 / 0.027


def test_a_finished_response_holds_the_frontend_but_not_its_own_last_token():
    """1 s to tokenize a request, 2 s to finish a response; A and B at t = 0, C at 1.5 s, one
    output each (the engine's own time a, under a millisecond). The frontend's jobs in the
    order they are handed over: A's tokens 0–1, B's 1–2, A's response (handed at 1 + a) 2–4,
    C's tokens (handed at 1.5) 4–5, B's response 5–7, C's response 7–9. So A's TTFT is 1 + a,
    B's 2 + a, C's 5 + a − 1.5; no response job delays its own request; the frontend
    worked 3 × 1 + 3 × 2 = 9 s."""
    a = _by_rid(_run(_engine(), [0.0], [4], [1]), "first_token_s")[0]
    run = _run(_engine(Frontend(request_s=1.0, response_s=2.0)), [0.0, 0.0, 1.5], [4] * 3,
               [1] * 3)
    ttft = _by_rid(run, "first_token_s") - _by_rid(run, "arrival_s")
    np.testing.assert_allclose(ttft, [1 + a, 2 + a, 3.5 + a], rtol=1e-12)
    np.testing.assert_array_equal(_by_rid(run, "finish_s"), _by_rid(run, "first_token_s"))
    assert run.engines[0].frontend_busy_s == pytest.approx(9.0)
    assert run.engines[0].frontend_free_s == pytest.approx(9.0)


def test_a_profile_carries_its_frontend_to_the_engine():
    """A profile file's ``frontend:`` (seconds) reaches the fitted timer and the engine it
    times; a scenario's ``engine.frontend`` (EngineSpec.frontend) takes precedence; a bad entry
    is one error naming the field."""
    base = {"backend": "trtllm", "coefficients": {"dense": 1.5, "weights": 1.1, "step": 1e-3}}
    p = Profile.from_dict({**base, "frontend": {"response_s": 0.027}}, "p.yaml")
    assert p.model.frontend == Frontend(response_s=0.027)
    assert Profile.from_dict(p.to_dict(), "again.yaml").model.frontend == p.model.frontend
    assert "frontend" not in Profile.from_dict(base, "p.yaml").to_dict()
    model, acc = load_model("qwen3-0.6b"), load_accelerator("h100-sxm")
    timer = FittedTimer(StepBasis.of(model, acc, "bf16", 1, acc.allreduce_bytes_per_s), p.model)
    spec = EngineSpec(num_blocks=1000)
    assert Engine(model, acc, Precision.of(), Efficiency(), spec, timer=timer).frontend \
        == Frontend(response_s=0.027)
    own = Frontend(request_s=0.001)
    assert Engine(model, acc, Precision.of(), Efficiency(), replace(spec, frontend=own),
                  timer=timer).frontend == own
    for bad in ({"response_s": -1}, {"response_s": "fast"}, {"latency_s": 1.0}, [0.1]):
        with pytest.raises(NapkinError, match="frontend") as e:
            Profile.from_dict({**base, "frontend": bad}, "p.yaml")
        assert "\n" not in str(e.value)


def test_a_sweeps_band_stops_where_the_frontend_saturates():
    """50 ms of frontend work a request: at most 20 requests/s whatever the steps take. The
    sweep's maximum stays under it, and the band's upper end (the maximum over the profile's
    fastest step ratio) is capped where the frontend's busy share reaches 1, within the 5 %
    its busy share over a run's span (ramp and drain included) reads low."""
    from napkin.serving.sweep import sweep

    s = Scenario.model_validate({
        "name": "frontend sweep", "model": "llama-3.1-8b", "gpu": "h100-sxm",
        "engine": {"frontend": {"request_ms": 50}},
        "workload": {"seed": 1, "classes": {"chat": {"input_tokens": 1024, "output_tokens": 128}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 10, "num_requests": 1000}}})
    r = sweep(s, Path("."))
    assert r.max_sustainable is not None and r.max_sustainable <= 20.0
    assert r.band is not None and r.band[1] <= 1.05 * 20.0
    assert r.band[1] < r.max_sustainable / r.step_band[0]  # the ceiling, not the step band


def test_a_profiles_table_lists_its_frontend():
    """``napkin calibrate``'s profile table: the frontend's four works in seconds, or none."""
    from napkin.report.calib_views import profile_section

    base = {"backend": "vllm", "coefficients": {"dense": 1.5}}
    rows = dict(profile_section(Profile.from_dict(
        {**base, "frontend": {"response_s": 0.027}}, "p.yaml")).rows)
    assert rows["frontend response_s"] == "0.027" and rows["frontend request_s"] == "0"
    assert dict(profile_section(Profile.from_dict(base, "p.yaml")).rows)["frontend"] \
        == "none (no queue)"


def test_a_profiles_table_says_which_terms_it_fitted_held_or_took_from_the_link():
    """The table tells a fitted coefficient from one held at a value fitted elsewhere (a
    kernel table's all-reduce latency, 3.45 µs), one tied to another term's and one at the
    link's own figure (an all-to-all's 10 µs) — not "0 (not fitted)" beside a value."""
    from napkin.report.calib_views import profile_section

    p = Profile.from_dict({"backend": "trtllm", "fitted_terms": ["dense", "allreduce_bytes"],
                           "coefficients": {"dense": 1.35, "allreduce": 3.45e-6,
                                            "allreduce_bytes": 2.25, "alltoall": 10e-6}},
                          "p.yaml")
    rows = dict(profile_section(p).rows)
    assert rows["dense"] == "1.35"
    assert rows["allreduce"] == "3.45e-06 (held, not fitted here)"
    assert rows["alltoall_bytes"] == "2.25 (= allreduce_bytes)"
    assert rows["alltoall"] == "1e-05 (the link's, not fitted)"
    assert rows["alltoall_step"] == "0 (not fitted)"
