"""The public API of ``napkin serve``: the CLI's answers, typed values, hand derivations."""

import json

import pytest
import yaml

from napkin.api import serving
from napkin.catalog import scenario_file
from napkin.errors import NapkinError
from napkin.serving.scenario import Scenario

SHIFTED_WL = str(scenario_file("chapter-3-1-shifted.workload.yaml"))
WORKLOAD = {"seed": 0, "classes": {"a": {"input_tokens": 16, "output_tokens": 10}},
            "arrivals": {"kind": "windows", "spacing": "even",
                         "windows": [{"duration_s": 20, "rate_per_s": 0.5}]}}
# one sequence at a time, every step 100 ms + the 0.6B model's ≈ 0.4 ms roofline time on an
# H100 (tests/serving/test_sweep.py): a request holds the engine for 10 steps ≈ 1.004 s
SCENARIO = {"name": "toy", "model": "qwen3-0.6b", "gpu": "h100-sxm",
            "calibration": "roofline", "step_overhead_ms": 100,
            "engine": {"max_num_seqs": 1, "kv_pool_gib": 1},
            "slo": {"ttft_s": 2.0, "tpot_s": 1.0, "share": 0.9}, "workload": WORKLOAD}


def _file(tmp_path, data: dict, name: str = "f.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_demand_of_a_file_matches_cli_and_of_a_mapping_by_hand(cli):
    r = serving.demand(SHIFTED_WL)
    _, out, _ = cli("serve", "demand", SHIFTED_WL, "--format", "json")
    assert r.data == json.loads(out)
    # Example 3-1's two windows (tests/cli/test_serve_cli.py)
    assert [round(w.decode_steps_per_s, 1) for w in r.value["windows"]] == [1736.8, 7471.2]
    # 10 requests of P = 16, G = 10 in 20 s: 160/20 input tokens/s, 10·9/20 decode steps/s,
    # mean decode context P + (G − 2)/2 = 20
    w = serving.demand(WORKLOAD).value["overall"]
    assert (w.requests, w.input_tokens_per_s, w.decode_steps_per_s) == (10, 8, 4.5)
    assert w.mean_decode_context == 20


def test_fluid_reproduces_example_3_1_and_draws(cli, tmp_path):
    r = serving.fluid(SHIFTED_WL, capacity_steps_s=5591.33)
    _, out, _ = cli("serve", "fluid", SHIFTED_WL, "--capacity-steps-s", "5591.33",
                    "--format", "json")
    assert r.data == json.loads(out)
    assert round(r.value.final_backlog) == 112_792  # (7,471.2 − 5,591.33) × 60
    derived = serving.fluid(SHIFTED_WL, gpu="rtx-pro-6000", count=2)
    _, out, _ = cli("serve", "fluid", SHIFTED_WL, "--gpu", "rtx-pro-6000", "--count", "2",
                    "--format", "json")
    assert derived.data == json.loads(out)
    # 2 × 64 / 22.89 ms at 2,742 tokens (Example 3-1)
    assert derived.document.assumptions["capacity_steps_per_s"] == pytest.approx(5591.33,
                                                                                 rel=1e-4)
    png = derived.plot(tmp_path / "fluid.png")
    assert png.stat().st_size > 10_000


def test_fluid_errors_name_the_field():
    with pytest.raises(NapkinError, match=r"^capacity:"):
        serving.fluid(SHIFTED_WL)
    with pytest.raises(NapkinError, match=r"^gpu:"):
        serving.fluid(SHIFTED_WL, capacity_steps_s=1.0, gpu="h100-sxm")
    with pytest.raises(NapkinError, match=r"^count:"):
        serving.fluid(SHIFTED_WL, gpu="h100-sxm", count=0)


def test_simulate_a_mapping_matches_the_cli_on_its_file(cli, tmp_path):
    seen, started = [], []
    r = serving.simulate(SCENARIO, progress=lambda t, n: seen.append((t, n)),
                         on_scenario=lambda name, n: started.append((name, n)))
    _, out, _ = cli("serve", "simulate", _file(tmp_path, SCENARIO), "--format", "json")
    assert r.data == json.loads(out)
    assert started == [("toy", 10)] and seen[-1][1] == 10
    s = r.value["reports"][0].summary
    assert s.requests == 10
    # arrivals 2 s apart never queue: each request is 10 steps of ≈ 100.4 ms
    assert s.e2e.mean_s == pytest.approx(1.004, rel=0.01)
    assert s.e2e.mean_s == pytest.approx(s.ttft.mean_s + 9 * s.tpot.mean_s)


def test_simulate_several_kinds_of_scenario_with_overrides_and_export(tmp_path):
    loaded = Scenario.model_validate({**SCENARIO, "name": "object"})
    r = serving.simulate([_file(tmp_path, SCENARIO), loaded],
                         overrides=["engine.max_num_seqs=2"], mode="exact", seed=3,
                         export=tmp_path / "out")
    names = [s["name"] for s in r.data["scenarios"]]
    assert names == ["toy", "object"]
    assert all(s["inputs"]["max_num_seqs"] == 2 and s["inputs"]["mode"] == "exact"
               for s in r.data["scenarios"])
    assert [name for name, _ in r.value["runs"]] == names
    assert (tmp_path / "out" / "object.requests.csv").read_text().count("\n") == 11  # + header


def test_simulate_refuses_before_any_run_or_export(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(NapkinError, match=r"^scenario: field engine.max_num_seqs"):
        serving.simulate([SCENARIO, {**SCENARIO, "engine": {"max_num_seqs": 0}}], export=out)
    with pytest.raises(NapkinError, match=r"^export:"):
        serving.simulate(SCENARIO, export=tmp_path / "no" / "such")
    with pytest.raises(NapkinError, match=r"^set:"):
        serving.simulate(SCENARIO, overrides=["mfu"])
    assert not out.exists()


def test_sweep_finds_the_deterministic_servers_maximum(cli, tmp_path):
    """As tests/serving/test_sweep.py derives it: a one-at-a-time server of service time
    1/μ ≈ 1.004 s sustains at most μ (its capacity: no queue above it stops growing); the
    bracket is within 3 %."""
    scenario = {**SCENARIO, "workload": {**WORKLOAD, "arrivals": {
        "kind": "windows", "spacing": "even", "windows": [{"duration_s": 60, "rate_per_s": 0.5}]}}}
    r = serving.sweep(scenario, rates=[0.5, 2.0])
    _, out, _ = cli("serve", "sweep", _file(tmp_path, scenario), "--rates", "0.5,2",
                    "--format", "json")
    assert r.data == json.loads(out)
    mu = 1 / 1.004
    lo, hi = r.value.bracket
    assert r.value.max_sustainable == lo and hi / lo <= 1.03 + 1e-9
    assert r.value.capacity == pytest.approx(mu, rel=0.01)
    assert lo == pytest.approx(mu, rel=0.03) and lo <= r.value.capacity


def test_sweep_errors_name_the_field():
    with pytest.raises(NapkinError, match=r"^rates:"):
        serving.sweep(SCENARIO, rates=[1.0, float("nan")])
    with pytest.raises(NapkinError, match=r"^seeds:"):
        serving.sweep(SCENARIO, seeds=0)
    with pytest.raises(NapkinError, match=r"^scenario: field slo.share"):
        serving.sweep(SCENARIO, overrides=["slo.share=1.5"])
