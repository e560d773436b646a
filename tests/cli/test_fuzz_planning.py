"""Fuzz of the sweep, plan, disaggregation, expert-parallel and SLO inputs added with
``napkin plan``: every bad input exits 2 with one line naming the field, no traceback, and
writes nothing; every accepted one prints only finite numbers."""

import json

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonchecks import assert_finite

BAD_NUMBERS = ["nan", "inf", "-inf", "-1", "0", "1e400", "x", ""]

WORKLOAD = {"seed": 0, "classes": {"a": {"input_tokens": 16, "output_tokens": 10}},
            "arrivals": {"kind": "windows", "spacing": "even",
                         "windows": [{"duration_s": 20, "rate_per_s": 0.5}]}}
SCENARIO = {"name": "toy", "model": "qwen3-0.6b", "gpu": "h100-sxm",
            "calibration": "roofline", "step_overhead_ms": 100,
            "engine": {"max_num_seqs": 1, "kv_pool_gib": 1},
            "slo": {"ttft_s": 2.0, "tpot_s": 1.0}, "workload": WORKLOAD}
PLAN = {"name": "toy", "model": "qwen3-0.6b", "calibration": "roofline",
        "step_overhead_ms": 100, "workload": WORKLOAD,
        "slo": {"ttft_s": 2.0, "tpot_s": 1.0, "share": 0.9},
        "search": {"gpus": ["h100-sxm"], "tensor_parallel": [1], "replicas": [1, 2],
                   "max_num_seqs": [1]}, "seeds": 1}


def _refused(result: tuple[int, str, str], field: str | None = None) -> None:
    code, out, err = result
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and err.startswith("napkin: error:")
    assert err.count("\n") == 1, err
    assert out == ""
    if field is not None:
        assert field in err, err




def _file(tmp_path, data: object, name: str = "f.yaml") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return str(path)


# --- napkin serve sweep ---

@pytest.mark.parametrize("value", [*BAD_NUMBERS, "1,,2", "1;2", "auto,1", "0.5,-2"])
def test_sweep_rates(cli, tmp_path, value):
    _refused(cli("serve", "sweep", _file(tmp_path, SCENARIO), "--rates", value), "rates")


@pytest.mark.parametrize("value", ["0", "33", "-1", "x", "nan"])
def test_sweep_seeds(cli, tmp_path, value):
    _refused(cli("serve", "sweep", _file(tmp_path, SCENARIO), "--seeds", value), "seeds")


def test_sweep_plot_checked_before_work(cli, tmp_path):
    path = _file(tmp_path, SCENARIO)
    _refused(cli("serve", "sweep", path, "--plot", str(tmp_path / "s.txt")), "plot")
    _refused(cli("serve", "sweep", path, "--plot", str(tmp_path / "no" / "s.png")), "plot")
    _refused(cli("serve", "sweep", path, "--plot", str(tmp_path)), "plot")


def test_sweep_of_a_workload_with_one_arrival(cli, tmp_path):
    one = {**SCENARIO, "workload": {**WORKLOAD, "arrivals": {
        "kind": "windows", "windows": [{"duration_s": 10, "requests": 1}]}}}
    _refused(cli("serve", "sweep", _file(tmp_path, one)), "workload")


RATES = st.one_of(st.sampled_from([float("nan"), float("inf"), float("-inf"), 0.0, -1.0,
                                    1e300, 1e9, 5e-324]),
                  st.floats(min_value=0.05, max_value=3.0))


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(RATES, min_size=1, max_size=3))
def test_sweep_rates_any_numbers(cli, tmp_path, values):
    """Any list of numbers is swept (finite JSON) or refused in one line naming --rates: non-
    finite or non-positive loads, and loads whose 20 s window would draw more than the
    10,000,000-request cap (1e9 requests/s) or no request at all (5e-324)."""
    text = ",".join(repr(v) for v in values)
    code, out, err = cli("serve", "sweep", _file(tmp_path, SCENARIO), "--rates", text,
                         "--format", "json")
    if all(0.05 <= v <= 3.0 for v in values):
        assert code == 0, err
        assert_finite(json.loads(out))
    else:
        _refused((code, out, err), "rates")


# --- scenario keys: disaggregation, expert parallelism, SLO ---

@pytest.mark.parametrize(("setting", "field"), [
    *[(f"engine.disaggregated.prefill_replicas={v}", "prefill_replicas")
      for v in ("0", "-1", "1.5", "x")],
    *[(f"engine.disaggregated.decode_replicas={v}", "decode_replicas") for v in ("0", "x")],
    *[(f"engine.disaggregated.kv_link_gbs={v}", "kv_link_gbs")
      for v in ("0", "-1", ".nan", ".inf", "x")],
    *[(f"engine.disaggregated.kv_link_latency_us={v}", "kv_link_latency_us")
      for v in ("-1", ".nan", ".inf")],
    ("engine.disaggregated.prefill_tensor_parallel=0", "prefill_tensor_parallel"),
    ("engine.disaggregated.prefill_tensor_parallel=3", "tensor_parallel"),
    ("engine.disaggregated.colour=1", "colour"),
    ("engine.disaggregated=3", "disaggregated"),
    ("engine.expert_parallel=maybe", "expert_parallel"),
    ("engine.expert_parallel=true", "expert_parallel"),  # a dense model
    *[(f"engine.data_parallel={v}", "data_parallel") for v in ("0", "-1", "1.5", "x", "2000")],
    ("engine.data_parallel=2", "data_parallel"),  # a dense model
    *[(f"engine.two_batch_overlap={v}", "two_batch_overlap") for v in ("maybe", "true")],
    *[(f"engine.gpus_per_node={v}", "gpus_per_node") for v in ("0", "1.5", "x")],
    *[(f"engine.redundant_experts={v}", "redundant_experts") for v in ("-1", "1.5", "x", "1")],
    *[(f"engine.speculative.draft_tokens={v}", "draft_tokens") for v in ("0", "17", "x")],
    *[(f"engine.speculative.acceptance={v}", "acceptance")
      for v in ("1.5", "-0.1", ".nan", "[0.5, 2]", "[]", "x", "[0.5, 0.5]")],
    *[(f"engine.speculative.draft_cost={v}", "draft_cost") for v in ("-1", ".nan", ".inf", "x")],
    ("engine.speculative.draft_tokens=1", "draft_cost"),  # a model without MTP, no cost
    ("engine.speculative.colour=1", "colour"),
    *[(f"engine.internode_gbs={v}", "internode_gbs") for v in ("0", "-1", ".nan", ".inf", "x")],
    ("engine.kv_offload.host_gib=8", "kv_offload"),  # without prefix caching
    *[(f"engine.kv_offload.host_gib={v}", "host_gib")
      for v in ("0", "-1", ".nan", ".inf", "x", "1e9")],
    ("engine.kv_offload=3", "kv_offload"),
    *[(f"engine.pipeline_parallel={v}", "pipeline_parallel")
      for v in ("0", "-1", "1.5", "x", "65", "64")],
    *[(f"slo.share={v}", "slo.share") for v in ("0", "1.5", ".nan", "x")],
    *[(f"slo.e2e_s={v}", "slo.e2e_s") for v in ("0", "-1", ".nan", ".inf", "x")],
    *[(f"engine.frontend.{k}={v}", k)
      for k in ("request_ms", "prompt_token_us", "output_token_us", "response_ms")
      for v in ("-1", ".nan", ".inf", "x", "1e9")],
    ("engine.frontend=3", "frontend"),
    *[(f"engine.async_scheduling={v}", "async_scheduling") for v in ("maybe", "2", "[]")],
    ("engine.frontend.colour=1", "colour"),
])
def test_bad_scenario_keys(cli, tmp_path, setting, field):
    _refused(cli("serve", "simulate", _file(tmp_path, SCENARIO), "--set", setting), field)


@pytest.mark.parametrize("value", ["0", "-1", ".nan", ".inf", "x", "1e9"])
def test_a_bad_host_tier_bandwidth_is_refused(cli, tmp_path, value):
    _refused(cli("serve", "simulate", _file(tmp_path, SCENARIO), "--set",
                 "engine.enable_prefix_caching=true", "--set", "engine.kv_offload.host_gib=8",
                 "--set", f"engine.kv_offload.load_gbs={value}"), "load_gbs")


@pytest.mark.parametrize("settings", [
    ["engine.pipeline_parallel=2"],
    ["engine.pipeline_parallel=4", "engine.enable_prefix_caching=true",
     "engine.kv_offload.host_gib=1", "engine.kv_offload.load_gbs=1e-6"],
    ["engine.enable_prefix_caching=true", "engine.kv_offload.host_gib=1e6"],
    ["engine.frontend.request_ms=1e6", "engine.frontend.response_ms=1e6",
     "engine.frontend.output_token_us=1e6", "engine.frontend.prompt_token_us=1e6"],
    ["engine.frontend.request_ms=0"],
    ["engine.async_scheduling=true", "engine.enable_prefix_caching=true"],
    ["engine.async_scheduling=true", "engine.batching=static"],
])
def test_accepted_pipeline_and_host_tier_runs_print_finite_numbers(cli, tmp_path, settings):
    args = [x for s in settings for x in ("--set", s)]
    code, out, err = cli("serve", "simulate", _file(tmp_path, SCENARIO), *args,
                         "--format", "json")
    assert code == 0, err
    assert_finite(json.loads(out))


def test_a_host_tier_too_small_for_a_block_is_refused(cli, tmp_path):
    _refused(cli("serve", "simulate", _file(tmp_path, SCENARIO), "--set",
                 "engine.enable_prefix_caching=true", "--set", "engine.kv_offload.host_gib=1e-6"),
             "engine.kv_offload.host_gib")


def test_disaggregated_with_replicas_is_refused(cli, tmp_path):
    _refused(cli("serve", "simulate", _file(tmp_path, SCENARIO), "--set",
                 "engine.replicas=2", "--set", "engine.disaggregated.decode_replicas=1"),
             "engine.replicas")


def test_accepted_disaggregated_and_ep_runs_print_finite_numbers(cli, tmp_path):
    code, out, err = cli("serve", "simulate", _file(tmp_path, SCENARIO), "--set",
                         "engine.disaggregated.decode_replicas=2", "--format", "json")
    assert code == 0, err
    assert_finite(json.loads(out))
    moe = {**SCENARIO, "model": "qwen3-30b-a3b", "engine": {
        "max_num_seqs": 8, "tensor_parallel": 2, "expert_parallel": True}}
    code, out, err = cli("serve", "simulate", _file(tmp_path, moe), "--format", "json")
    assert code == 0, err
    assert_finite(json.loads(out))
    dep = {**moe, "engine": {"max_num_seqs": 8, "tensor_parallel": 1, "data_parallel": 4,
                             "expert_parallel": True, "two_batch_overlap": True,
                             "gpus_per_node": 2, "internode_gbs": 1e-3}}
    code, out, err = cli("serve", "simulate", _file(tmp_path, dep), "--format", "json")
    assert code == 0, err
    assert_finite(json.loads(out))


# --- napkin plan ---

@pytest.mark.parametrize(("path", "value", "field"), [
    *[(("seeds",), v, "seeds") for v in (0, 17, 1.5, "x", None)],
    *[(("prices", "h100-sxm"), v, "prices") for v in (float("nan"), float("inf"), -1, "x")],
    *[(("step_overhead_ms",), v, "step_overhead_ms") for v in (float("nan"), float("inf"), -1)],
    *[(("mfu",), v, "mfu") for v in (0, 1.5, float("nan"))],
    *[(("slo", "ttft_s"), v, "slo.ttft_s") for v in (0, -1, float("nan"), float("inf"))],
    *[(("slo", "e2e_s"), v, "slo.e2e_s") for v in (0, float("nan"))],
    *[(("slo", "confidence"), v, "slo.confidence") for v in (-0.1, 1, 1.5, float("nan"), "x")],
    *[(("energy", k), v, f"energy.{k}") for k in ("prefill_power_frac", "decode_power_frac",
                                                  "idle_power_frac")
      for v in (-0.1, 2, float("nan"), "x")],
    *[(("energy", "pue"), v, "energy.pue") for v in (0.5, 6, float("inf"))],
    *[(("energy", "usd_per_kwh"), v, "energy.usd_per_kwh") for v in (-1, 101, float("nan"))],
    (("energy", "kwh"), 1, "energy.kwh"),
    *[(("search", "replicas"), v, "replicas") for v in ([10_001], [2**40])],
    *[(("search", "tensor_parallel"), v, "tensor_parallel") for v in ([0], [1, 1], [], "x")],
    *[(("search", "replicas"), v, "replicas") for v in ([-1], [])],
    *[(("search", "max_num_seqs"), v, "max_num_seqs") for v in ([0], [1.5])],
    *[(("search", "max_gpus"), v, "max_gpus") for v in (0, float("nan"))],
    *[(("search", "disaggregated"), v, "disaggregated") for v in (["1P"], ["0P1D"], "1P1D")],
    (("search", "backends"), ["tgi"], "backends"),
    (("search", "expert_parallel"), ["maybe"], "expert_parallel"),
    *[(("search", "data_parallel"), v, "data_parallel") for v in ([0], [2, 2], [], [1.5])],
    *[(("search", "pipeline_parallel"), v, "pipeline_parallel")
      for v in ([0], [2, 2], [], [1.5], "x", [float("nan")])],
    (("search", "two_batch_overlap"), ["maybe"], "two_batch_overlap"),
    *[(("search", "prefill_layouts"), v, "prefill_layouts")
      for v in (["ep"], ["tp", "tp"], [], "tp", [float("nan")], [None])],
    (("search", "speculative"), [{"draft_tokens": 0}], "draft_tokens"),
    (("search", "speculative"), [{"acceptance": 2}], "acceptance"),
    (("search", "speculative"), [], "speculative"),
    (("search", "gpus"), ["h100-sxm", "nope"], "nope"),
    (("router",), "random", "router"),
    (("workload",), {"classes": {}}, "workload"),
    *[(("frontend", k), v, f"frontend.{k}")
      for k in ("request_ms", "prompt_token_us", "output_token_us", "response_ms")
      for v in (-1, float("nan"), float("inf"), "x", 1e9)],
    (("frontend", "colour"), 1, "colour"),
    (("frontend",), 3, "frontend"),
    *[(("async_scheduling",), v, "async_scheduling") for v in ("maybe", 2, [])],
])
def test_bad_plan_fields(cli, tmp_path, path, value, field):
    data = json.loads(json.dumps(PLAN))
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    export = tmp_path / "all.csv"
    _refused(cli("plan", _file(tmp_path, data), "--jobs", "1", "--export", str(export)), field)
    assert not export.exists()


@pytest.mark.parametrize("body", ["", "[1, 2]", "model: [", "just text", "\x00\x01"])
def test_bad_plan_files(cli, tmp_path, body):
    _refused(cli("plan", _file(tmp_path, body), "--jobs", "1"))


def test_plan_path_that_is_a_folder_or_missing(cli, tmp_path):
    _refused(cli("plan", str(tmp_path), "--jobs", "1"))
    _refused(cli("plan", str(tmp_path / "missing.yaml"), "--jobs", "1"))


@pytest.mark.parametrize(("option", "value", "field"), [
    ("--top", "0", "top"), ("--top", "x", "top"), ("--jobs", "257", "jobs"),
    ("--executor", "", "executor"), ("--export", "{tmp}/no/all.csv", "export"),
    ("--plot", "{tmp}", "plot")])
def test_bad_plan_options(cli, tmp_path, option, value, field):
    _refused(cli("plan", _file(tmp_path, PLAN), "--jobs", "1", option,
                 value.format(tmp=tmp_path)), field)


def test_accepted_plan_prints_finite_numbers(cli, tmp_path):
    code, out, err = cli("plan", _file(tmp_path, PLAN), "--jobs", "1", "--format", "json")
    assert code == 0, err
    assert_finite(json.loads(out))


# --- the plain CSV's range_style column ---

@pytest.mark.parametrize("value", ["above", "1", "nan", "SYMMETRIC "])
def test_plain_csv_range_style(cli, tmp_path, value):
    text = ("backend,model,gpu,weights,tp,input_tokens,output_tokens,harness,load,"
            "mean_ttft_ms,range_ratio,range_style\n"
            f"vllm,llama-3.1-8b,h100-sxm,bf16,1,512,32,closed_loop,2,60,0.5,{value}\n")
    out = tmp_path / "p.yaml"
    _refused(cli("calibrate", _file(tmp_path, text, "m.csv"), "--backend", "vllm", "--out",
                 str(out)), "range_style")
    assert not out.exists()


@pytest.mark.parametrize("arrivals", [
    {"kind": "poisson", "rate_per_s": 1e12, "duration_s": 60},
    {"kind": "windows", "windows": [{"duration_s": 60, "requests": 10_000_001}]},
    {"kind": "schedule", "segments": [{"duration_s": 1e9, "rate_per_s": 1}]},
])
def test_a_workload_past_the_request_cap_is_refused_before_drawing(cli, tmp_path, arrivals):
    """Drawing 6e13 arrivals would need terabytes: refused in one line, in milliseconds."""
    wl = {**WORKLOAD, "arrivals": arrivals}
    _refused(cli("serve", "demand", _file(tmp_path, wl)), "arrivals")
    _refused(cli("serve", "simulate", _file(tmp_path, {**SCENARIO, "workload": wl})),
             "arrivals")
