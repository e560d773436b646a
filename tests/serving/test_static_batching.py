"""Static batching (``engine.batching: static``) against continuous batching: a hand-counted
schedule, slot use, fast = exact, and the scenario field."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model, scenario_file
from napkin.errors import NapkinError
from napkin.serving.arrivals import OpenLoop, generate
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.metrics import slot_use
from napkin.serving.requests import RequestSet
from napkin.serving.scenario import build, load_scenario
from napkin.serving.simulate import simulate
from napkin.serving.workload import parse_workload
from napkin.timing.efficiency import Efficiency


def _engine(batching: str, mode: str = "fast", seqs: int = 2, blocks: int = 10_000) -> Engine:
    return Engine(load_model("qwen3-0.6b"), load_accelerator("h100-sxm"), Precision.of(),
                  Efficiency(0.5, 0.7, 1e-4),
                  EngineSpec(num_blocks=blocks, max_num_seqs=seqs, max_num_batched_tokens=64,
                             batching=batching, mode=mode))


def _four() -> OpenLoop:
    """A, B, C, D at t = 0 with 4-token prompts and 1, 5, 1, 5 output tokens."""
    return OpenLoop(RequestSet.build([0.0] * 4, [4] * 4, [1, 5, 1, 5]), (0,))


@pytest.mark.parametrize("mode", ["fast", "exact"])
def test_two_slots_hand_counted(mode):
    """2 slots; A(1 token), B(5), C(1), D(5), all at t = 0. A step's prefill yields a request's
    first token, each decode step one more.
    Static: step 1 prefills A and B (A done); steps 2–5 decode B alone (its tokens 2–5); step 6
    prefills C and D (C done); steps 7–10 decode D. 10 steps, slot-steps 2 + 4·1 + 2 + 4·1 =
    12: slot use 12/(2·10) = 60 %.
    Continuous: step 1 prefills A, B (A done); step 2 decodes B and prefills C (done); step 3
    decodes B and prefills D; steps 4–5 decode B and D (B's 5th token at step 5); steps 6–7
    decode D (its 5th token at step 7). 7 steps, slot-steps 2·5 + 1·2 = 12: 12/14 = 6/7.
    (Question bank, q38: 'Состав батча пересматривается после каждого шага decode —
    закончившиеся запросы уходят, новые встают на их место'; neither seed prints numbers.)"""
    static, cont = _engine("static", mode), _engine("continuous", mode)
    runs = [simulate([e], _four()) for e in (static, cont)]
    assert (static.num_steps, static.slot_steps) == (10, 12)
    assert (cont.num_steps, cont.slot_steps) == (7, 12)
    assert slot_use([static]) == pytest.approx(0.6)
    assert slot_use([cont]) == pytest.approx(6 / 7)
    if mode == "exact":  # one series point a step: D's first token ends step 6, resp. 3
        for run, step in zip(runs, (6, 3), strict=True):
            r = run.records
            d = int(np.flatnonzero(r.rid == 3)[0])
            assert r.first_token_s[d] == run.engines[0].series_t[step - 1]


def test_static_d_waits_for_the_whole_first_batch():
    """Under static batching C and D start only when B (the longest of the first batch) has
    finished; under continuous batching C starts while B still decodes."""
    static = simulate([_engine("static")], _four()).records
    cont = simulate([_engine("continuous")], _four()).records
    by = lambda r, rid: int(np.flatnonzero(r.rid == rid)[0])  # noqa: E731
    assert static.first_scheduled_s[by(static, 2)] == static.finish_s[by(static, 1)]
    assert cont.first_scheduled_s[by(cont, 2)] < cont.finish_s[by(cont, 1)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), seqs=st.integers(1, 6),
       blocks=st.integers(60, 300), rate=st.sampled_from([5.0, 400.0]))
def test_fast_equals_exact_under_static_batching(seed, n, seqs, blocks, rate):
    """Random Poisson workloads, pools small enough to preempt: both modes give the same
    per-request times and slot-steps."""
    wl = parse_workload({"seed": seed, "classes": {"a": {
        "input_tokens": {"dist": "uniform", "low": 1, "high": 200},
        "output_tokens": {"dist": "uniform", "low": 1, "high": 80}}},
        "arrivals": {"kind": "poisson", "rate_per_s": rate, "num_requests": n}})
    out = []
    for mode in ("fast", "exact"):
        engine = _engine("static", mode, seqs, max(blocks, 20))
        run = simulate([engine], generate(wl))
        order = np.argsort(run.records.rid)
        out.append((run.records.first_token_s[order], run.records.finish_s[order],
                    engine.slot_steps, engine.num_steps))
    (f1, e1, s1, k1), (f2, e2, s2, k2) = out
    np.testing.assert_allclose(f1, f2, rtol=1e-9)
    np.testing.assert_allclose(e1, e2, rtol=1e-9)
    assert (s1, k1) == (s2, k2)


SCENARIO = {
    "name": "two classes", "model": "qwen3-8b", "gpu": "rtx-pro-6000", "calibration": "roofline",
    "engine": {"max_num_seqs": 8, "kv_pool_gib": 24},
    "workload": {"seed": 0, "classes": {
        "long_input": {"input_tokens": 8192, "output_tokens": 256},
        "long_output": {"input_tokens": 1024, "output_tokens": 2048}},
        "arrivals": {"kind": "windows", "spacing": "even", "windows": [
            {"duration_s": 5, "requests": 32, "mix": {"long_input": 1, "long_output": 1}}]}},
}


def test_scenario_field_and_its_slot_use():
    """``engine.batching: static`` on the chapter's two classes (8,192 in / 256 out and 1,024 in
    / 2,048 out), 32 requests, 8 slots: slot use is lower than under continuous batching (a
    long-input request's slot idles until the batch's long outputs end), and a wrong value is
    refused naming the field."""
    from napkin.serving.scenario import Scenario

    uses = {}
    for batching in ("continuous", "static"):
        data = {**SCENARIO, "engine": {**SCENARIO["engine"], "batching": batching}}
        built = build(Scenario.model_validate(data), Path.cwd())
        assert built.spec.batching == batching
        uses[batching] = slot_use(built.simulate().engines)
    assert 0 < uses["static"] < uses["continuous"] <= 1
    with pytest.raises(NapkinError, match=r"engine\.batching"):
        load_scenario(scenario_file("chapter-3-1-uniform.yaml"), ["engine.batching=dynamic"])
