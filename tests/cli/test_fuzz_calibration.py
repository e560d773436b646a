"""Fuzz of the calibration commands, options and file formats added with the fitted
step-time model: every bad input exits 2 with one line naming the field, no traceback, and
writes nothing."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonchecks import assert_finite

SCENARIO = "examples/chapter-3-1-uniform.yaml"
PLAIN_HEADER = ("backend,model,gpu,weights,tp,input_tokens,output_tokens,harness,load,"
                "mean_ttft_ms,mean_tpot_ms\n")
GOOD_ROW = "vllm,llama-3.1-8b,h100-sxm,bf16,1,512,32,closed_loop,2,60,7.5\n"

BAD_NUMBERS = ["nan", "inf", "-inf", "-1", "0", "1e400", "x", "", "99999999999999999999"]


def _refused(result: tuple[int, str, str], field: str | None = None) -> None:
    code, out, err = result
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and err.startswith("napkin: error:")
    assert err.count("\n") == 1, err
    if field is not None:
        assert field in err, err


def _plain(tmp_path, row: str) -> str:
    path = tmp_path / "m.csv"
    path.write_text(PLAIN_HEADER + row)
    return str(path)


HARNESS = ["ramp_cycles=nan", "ramp_cycles=inf", "ramp_cycles=-1", "ramp_cycles=11",
           "ramp_cycles=1e308", "ramp_cycles=x", "requests_per_client=0",
           "requests_per_client=1.5", "warmup_per_client=-1", "range_ratio=2",
           "range_style=above", "speed=3", "fast", "", ",", "range_ratio", "latency_s=-0.1",
           "latency_s=nan", "latency_s=inf", "latency_s=61", "latency_s=x"]
CAMPAIGN = ["", ":", "llama-3.1-8b", "llama-3.1-8b:", ":range_ratio=0.5",
            "llama-3.1-8b:dispatch_intervals=-1", "llama-3.1-8b:dispatch_intervals=nan",
            "llama-3.1-8b:range_ratio=2", "llama-3.1-8b:speed=1", "llama-3.1-8b:steady",
            "qwen3-32b:range_ratio=0.5", "llama-3.1-8b@9.9:range_ratio=0.5",
            "llama-3.1-8b/b200:range_ratio=0.5", "llama-3.1-8b:latency_s=-1",
            "llama-3.1-8b:latency_s=nan", "llama-3.1-8b:latency_s=fitted",
            "llama-3.1-8b:latency_s=fit,range_ratio=3"]


@pytest.mark.parametrize(("option", "value"), [("harness", v) for v in HARNESS]
                         + [("campaign", v) for v in CAMPAIGN])
def test_calibrate_protocol_options(cli, tmp_path, option, value):
    """--harness and --campaign (a campaign that matches no row included)."""
    out = tmp_path / "p.yaml"
    _refused(cli("calibrate", _plain(tmp_path, GOOD_ROW), "--backend", "vllm", "--out",
                 str(out), f"--{option}", value), option)
    assert not out.exists()


@pytest.mark.parametrize("value", ["", ",", "mfu", "dense,mfu", "all,dense", "Dense", "nan",
                                   "expert_weights_w4a17"])
def test_calibrate_terms(cli, tmp_path, value):
    out = tmp_path / "p.yaml"
    _refused(cli("calibrate", _plain(tmp_path, GOOD_ROW), "--backend", "vllm", "--out",
                 str(out), "--terms", value), "terms")
    assert not out.exists()


@pytest.mark.parametrize(("option", "value"), [("--rounds", "0"), ("--rounds", "21"),
                                               ("--rounds", "x"), ("--jobs", "-1"),
                                               ("--jobs", "257")])
def test_calibrate_counts(cli, tmp_path, option, value):
    out = tmp_path / "p.yaml"
    _refused(cli("calibrate", _plain(tmp_path, GOOD_ROW), "--backend", "vllm", "--out",
                 str(out), option, value), option)
    assert not out.exists()


def test_calibrate_outputs_checked_before_work(cli, tmp_path):
    m = _plain(tmp_path, GOOD_ROW)
    (tmp_path / "dir.yaml").mkdir()
    for out in ("p.txt", "missing/p.yaml", "dir.yaml"):
        _refused(cli("calibrate", m, "--backend", "vllm", "--out", str(tmp_path / out)), "out")
    _refused(cli("calibrate", m, "--backend", "tgi", "--out", str(tmp_path / "p.yaml")),
             "backend")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(column=st.sampled_from(["tp", "input_tokens", "output_tokens", "load", "mean_ttft_ms",
                               "mean_tpot_ms"]),
       value=st.sampled_from(BAD_NUMBERS))
def test_plain_csv_bad_numbers_name_their_column(cli, tmp_path, column, value):
    cols = PLAIN_HEADER.strip().split(",")
    row = dict(zip(cols, GOOD_ROW.strip().split(","), strict=True))
    if column.startswith("mean_") and value in ("", "99999999999999999999"):
        return  # an empty latency is "not reported"; 1e20 ms is finite: both allowed
    row[column] = value
    path = _plain(tmp_path, ",".join(row[c] for c in cols) + "\n")
    _refused(cli("validate", path, "--calibration", "vllm"), column)


@pytest.mark.parametrize("content", [b"", b"\xff\xfe\x00\x01", b"{", b"[1, 2, 3]", b"null",
                                     b'{"benchmarks": 3}', b'{"completed": "x"}',
                                     PLAIN_HEADER.encode(), b"a,b\n1,2,3\n"])
@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_bad_measurement_files(cli, tmp_path, content, suffix):
    path = tmp_path / f"m{suffix}"
    path.write_bytes(content)
    _refused(cli("validate", str(path), "--calibration", "vllm", "--gpu", "h100-sxm"))


AIC_LAYOUT = ("id,backend,backend_version,model_path,system,precision,mode,isl,osl,"
              "gemm_quant_mode,batch_size,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms,"
              "attention_dp_size,moe_ep_size\n")


@pytest.mark.parametrize(("dp", "ep", "field"), [("1", "3", "moe_ep_size"),
                                                  ("4", "4", "attention_dp_size"),
                                                  ("1", "-1", "moe_ep_size"),
                                                  ("x", "1", "attention_dp_size"),
                                                  ("1", "1e9", "moe_ep_size")])
def test_silicon_layouts_napkin_does_not_model(cli, tmp_path, dp, ep, field):
    """A gpt-oss-120b row at TP 4 with expert-parallel groups that do not divide the ranks,
    attention DP with experts over part of them (which vLLM, the row's engine, cannot run), or
    a bad layout value: one line naming the column."""
    path = tmp_path / "s.csv"
    path.write_text(AIC_LAYOUT + "r1,vllm,0.18.0,openai/gpt-oss-120b,h100_sxm,fp4,agg,1024,"
                    f"1024,nvfp4,8,4,1,90,4,{dp},{ep}\n")
    _refused(cli("validate", str(path), "--calibration", "vllm"), field)


def test_a_silicon_row_whose_tp_cannot_split_the_heads(cli, tmp_path):
    """gpt-oss-120b (64 attention heads) over 12 GPUs as tensor parallelism: no engine runs
    that, so the row is refused with one line naming tensor_parallel, not replayed."""
    path = tmp_path / "s.csv"
    path.write_text(AIC_LAYOUT + "r1,vllm,0.18.0,openai/gpt-oss-120b,h100_sxm,fp4,agg,1024,"
                    "1024,nvfp4,8,12,1,90,4,1,1\n")
    _refused(cli("validate", str(path), "--calibration", "vllm"), "tensor_parallel: 12")


def test_measurement_path_that_is_a_folder_or_missing(cli, tmp_path):
    _refused(cli("validate", str(tmp_path), "--calibration", "vllm"))
    _refused(cli("validate", str(tmp_path / "none.csv"), "--calibration", "vllm"))
    _refused(cli("validate", "no-such-set"))


@pytest.mark.parametrize("body", [
    "coefficients: {dense: .nan}\nbackend: vllm\n",
    "coefficients: {dense: -1}\nbackend: vllm\n",
    "coefficients: {dense: .inf}\nbackend: vllm\n",
    "coefficients: {dense: x}\nbackend: vllm\n",
    "coefficients: {dense: 1, dense_low: .nan}\nbackend: vllm\n",
    "coefficients: {dense: 1, dense_low: -2}\nbackend: vllm\n",
    "coefficients: {dense: 1, dense_low: .inf}\nbackend: vllm\n",
    "coefficients: {dense: 1}\nbackend: vllm\nfitted_terms: [dense, dense_fp8]\n",
    "coefficients: {mfu: 0.5}\nbackend: vllm\n",
    "coefficients: {dense: 1}\nbackend: vllm\nrequest_s: .inf\n",
    "coefficients: {dense: 1}\n",
    "- 1\n- 2\n",
    "coefficients: 3\nbackend: vllm\n",
    "bands: {ttft: {ratio_low: x}}\ncoefficients: {dense: 1}\nbackend: vllm\n",
    "coefficients: {dense: 1, eager_layer: -1e-3}\nbackend: vllm\n",
    "coefficients: {dense: 1, eager_layer: .nan}\nbackend: vllm\n",
    "coefficients: {dense: 1}\nbackend: vllm\nharness: {dispatch_intervals: -1}\n",
    "coefficients: {dense: 1}\nbackend: vllm\nharness: {latency_s: -0.1}\n",
    "coefficients: {dense: 1}\nbackend: vllm\nharness: {latency_s: .nan}\n",
    "coefficients: {dense: 1}\nbackend: vllm\nharness: {latency_s: .inf}\n",
    "coefficients: {dense: 1}\nbackend: vllm\nharness: {latency_s: soon}\n",
    "coefficients: {dense: 1, moe_layer: -1e-5}\nbackend: vllm\n",
    "coefficients: {dense: 1, token_layer: .nan}\nbackend: vllm\n",
    "coefficients: {dense: 1, elementwise: .nan}\nbackend: vllm\n",
    "coefficients: {dense: 1, norms: -1}\nbackend: vllm\n",
    "coefficients: {dense: 1}\nbackend: vllm\nrequest_token_s: -1e-6\n",
    "coefficients: {dense: 1}\nbackend: vllm\nrequest_token_s: .inf\n",
    "coefficients: {dense: 1}\nbackend: vllm\nrequest_token_s: fast\n",
    "coefficients: {dense: 1}\nbackend: vllm\nfrontend: {response_s: -1}\n",
    "coefficients: {dense: 1}\nbackend: vllm\nfrontend: {request_s: .nan}\n",
    "coefficients: {dense: 1}\nbackend: vllm\nfrontend: {output_token_s: .inf}\n",
    "coefficients: {dense: 1}\nbackend: vllm\nfrontend: {prompt_token_s: fast}\n",
    "coefficients: {dense: 1}\nbackend: vllm\nfrontend: {latency_s: 1}\n",
    "coefficients: {dense: 1}\nbackend: vllm\nfrontend: 3\n",
    "coefficients: {dense: 1, dense_w4a16: -2}\nbackend: vllm\n",
    "coefficients: {dense: 1, dense_w4a16: .inf}\nbackend: vllm\n",
    "coefficients: {dense: 1, alltoall: .nan}\nbackend: vllm\n",
    "coefficients: {dense: 1, alltoall: -1e-5}\nbackend: vllm\n",
    "coefficients: {dense: 1, alltoall_bytes: fast}\nbackend: vllm\n",
    "coefficients: {dense: 1, alltoall_step: -1e-3}\nbackend: vllm\n",
    "coefficients: {dense: 1, alltoall_step: .inf}\nbackend: vllm\n",
    "coefficients: {dense: 1, alltoall_step: [0.01]}\nbackend: vllm\n",
    "coefficients: {dense: 1, expert_pair: -3}\nbackend: vllm\n",
    "coefficients: {dense: 1, expert_pair: .nan}\nbackend: vllm\n",
    "coefficients: {dense: 1, expert_pair: [5]}\nbackend: vllm\n",
    "coefficients: {dense: 1, expert_low: -2}\nbackend: vllm\n",
    "coefficients: {dense: 1, expert: .inf}\nbackend: vllm\n",
    "coefficients: {dense: 1, expert_weights: .nan}\nbackend: vllm\n",
    "coefficients: {dense: 1, expert_weights_w4a16: -1}\nbackend: vllm\n",
    "coefficients: {dense: 1, expert_weights_w4a16: .inf}\nbackend: vllm\n",
    "coefficients: {dense: 1, expert_weights_w4a16: [1]}\nbackend: vllm\n",
    "coefficients: {dense: 1, expert_w4a16: fast}\nbackend: vllm\n",
    "coefficients: {dense: 1, expert_lo: 2}\nbackend: vllm\n",
    "coefficients: {dense: 1, allreduce: .inf}\nbackend: vllm\nfitted_terms: [allreduce]\n",
    "coefficients: {dense: 1, allreduce: 1e-5}\nbackend: vllm\nfitted_terms: 5\n",
    "coefficients: {dense: 1, alltoal: 1e-5}\nbackend: vllm\n",
    "coefficients: {dense: 1}\nbackend: vllm\n"
    "harness: {campaigns: [{model: x, latency_s: 99}]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\n"
    "harness: {campaigns: [{model: x, latency_fitted: maybe}]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\nharness: {campaigns: [{gpu: h100-sxm}]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\nharness: {campaigns: 3}\n",
    "coefficients: {dense: 1}\nbackend: vllm\n"
    "harness: {campaigns: [{model: x, range_ratio: 2}]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {attention: gqa}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {attention: [1]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {routed_experts: [128, 0]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {routed_experts: [-1, 8]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {routed_experts: [8]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {routed_experts: many}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {routed_experts: [1.5, 8]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {layouts: tp}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {layouts: [dep]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {versions: 0.17}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {versions: [[1, 2]]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {versions: {a: 1}}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {attention_dp: [0, 4]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {attention_dp: [8, 2]}\n",
    "coefficients: {dense: 1}\nbackend: vllm\ndomain: {attention_dp: 4}\n",
    "coefficients: {dense: 1}\nbackend: vllm\narchitecture_scales: 2\n",
    "coefficients: {dense: 1}\nbackend: vllm\narchitecture_scales: {hopper: {}}\n",
    "coefficients: {dense: 1}\nbackend: vllm\narchitecture_scales: {hopper: {expert: .nan}}\n",
    "coefficients: {dense: 1}\nbackend: vllm\narchitecture_scales: {hopper: {expert: .inf}}\n",
    "coefficients: {dense: 1}\nbackend: vllm\narchitecture_scales: {hopper: {expert: 0}}\n",
    "coefficients: {dense: 1}\nbackend: vllm\narchitecture_scales: {hopper: {expert: x}}\n",
    "coefficients: {dense: 1}\nbackend: vllm\narchitecture_scales: {hopper: {expart: 2}}\n",
    "[",
])
def test_bad_profile_files(cli, tmp_path, body):
    path = tmp_path / "p.yaml"
    path.write_text(body)
    _refused(cli("validate", "h100", "--calibration", str(path)))
    _refused(cli("serve", "simulate", SCENARIO, "--set", f"calibration={path}"))
    _refused(cli("decode", "qwen3-8b", "--gpu", "h100-sxm", "--calibration", str(path)))


@pytest.mark.parametrize("domain, field", [
    ("{attention: gqa}", "domain.attention"),
    ("{routed_experts: [128, 0]}", "domain.routed_experts"),
    ("{layouts: [tp, dep]}", "domain.layouts"),
    ("{attention_dp: [0, 4]}", "domain.attention_dp"),
])
def test_a_bad_domain_value_is_named_alone(cli, tmp_path, domain, field):
    """The error line names the domain field, not the list of coefficient names."""
    path = tmp_path / "p.yaml"
    path.write_text(f"coefficients: {{dense: 1}}\nbackend: vllm\ndomain: {domain}\n")
    result = cli("decode", "qwen3-8b", "--gpu", "h100-sxm", "--calibration", str(path))
    _refused(result, field)
    assert "coefficients are" not in result[2], result[2]


@pytest.mark.parametrize("setting", [
    "calibration=1", "calibration=nope", "calibration=", "engine.backend=tgi",
    "engine.capacity_scheduler=x", "engine.capacity_scheduler=max_utilization",
    "engine.chunked_prefill=maybe", "engine.tensor_parallel=3", "engine.tensor_parallel=0",
    "mfu=0.5", "frontend_ms=1", "engine.version=latest", "engine.version=.nan",
    "engine.version=.inf", "engine.version=[1]", "engine.version=" + "9" * 80,
])
def test_bad_scenario_calibration_keys(cli, setting):
    _refused(cli("serve", "simulate", SCENARIO, "--set", setting))


@pytest.mark.parametrize("value", ["-1", ".inf", ".nan", "x"])
def test_frontend_ms_under_the_roofline(cli, value):
    _refused(cli("serve", "simulate", SCENARIO, "--set", "calibration=roofline", "--set",
                 f"frontend_ms={value}"), "frontend_ms")


@pytest.mark.parametrize("value", ["-1", ".inf", "x", "1.5"])
def test_warmup_requests(cli, tmp_path, value):
    path = tmp_path / "s.yaml"
    path.write_text("model: qwen3-8b\ngpu: h100-sxm\n"
                    "workload: {classes: {a: {input_tokens: 10, output_tokens: 5}}, arrivals: "
                    "{kind: closed_loop, clients: 2, num_requests: 4, "
                    f"warmup_requests: {value}}}}}\n")
    _refused(cli("serve", "simulate", str(path)), "warmup_requests")


@pytest.mark.parametrize("args", [
    ["--tp", "0"], ["--tp", "-1"], ["--tp", "3"], ["--tp", "x"], ["--calibration", "nope"],
    ["--calibration", ""],
])
def test_decode_and_call_calibration_options(cli, args):
    _refused(cli("decode", "qwen3-32b", "--gpu", "h100-sxm", "--calibration", "vllm", *args))
    _refused(cli("call", "qwen3-32b", "--new", "100", "--gpu", "h100-sxm", "--calibration",
                 "vllm", *args))


def test_successful_calibrated_outputs_are_finite(cli):
    code, out, err = cli("decode", "qwen3-32b", "--gpu", "h100-sxm", "--batch", "1,1024",
                         "--context", "40000", "--calibration", "vllm", "--tp", "8",
                         "--format", "json")
    assert code == 0, err
    for step in json.loads(out)["calibrated"]["steps"]:
        assert all(isinstance(v, int | float) and v == v and abs(v) < 1e300
                   for v in step.values())


LAUNCH = {"launch_max_num_seqs": "vllm", "launch_max_num_batched_tokens": "vllm",
          "launch_memory_fraction": "vllm", "launch_chunked_prefill": "trtllm",
          "launch_scheduler_recv_interval": "sglang",
          "launch_batch_wait_timeout_iters": "trtllm",
          "launch_batch_wait_max_tokens_ratio": "trtllm"}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(column=st.sampled_from(sorted(LAUNCH)),
       value=st.sampled_from(["nan", "inf", "-inf", "-1", "1e400", "x", "2.5", "maybe"]))
def test_plain_csv_bad_launch_flags_name_their_column(cli, tmp_path, column, value):
    """A bad ``launch_*`` cell (2.5 is not a whole number, above 1 for a fraction, not true or
    false): one error line naming the column, from ``validate``."""
    if column == "launch_batch_wait_max_tokens_ratio" and value == "2.5":
        value = "1.5"
    path = tmp_path / "m.csv"
    row = GOOD_ROW.replace("vllm,", f"{LAUNCH[column]},", 1).strip()
    path.write_text(PLAIN_HEADER.strip() + f",{column}\n" + row + f",{value}\n")
    _refused(cli("validate", str(path), "--calibration", LAUNCH[column]), column)


@pytest.mark.parametrize(("column", "value", "backend"), [
    ("launch_scheduler_recv_interval", "30", "sglang"),
    ("launch_batch_wait_timeout_iters", "20", "trtllm"),
    ("launch_memory_fraction", "0.8", "vllm"),
    ("launch_chunked_prefill", "false", "trtllm"),
])
def test_plain_csv_launch_flags_replay_to_finite_numbers(cli, tmp_path, column, value, backend):
    path = tmp_path / "m.csv"
    row = GOOD_ROW.replace("vllm,", f"{backend},", 1).strip()
    path.write_text(PLAIN_HEADER.strip() + f",{column}\n" + row + f",{value}\n")
    code, out, err = cli("validate", str(path), "--calibration", backend, "--format", "json")
    assert code == 0, err
    assert_finite(json.loads(out))


@pytest.mark.parametrize("by", ["rack", "", "GPU", "tp,gpu", "nan"])
def test_validate_refuses_an_unknown_grouping(cli, by):
    _refused(cli("validate", "h100", "--calibration", "vllm", "--by", by), "by")


PERF_HEADER = "model,gpu,gpus,parallelism,isl,osl,num_requests,value\n"
PERF_ROW = {"model": "openai/gpt-oss-20b", "gpu": "H100", "gpus": "1", "parallelism": "TP1",
            "isl": "1024", "osl": "1024", "num_requests": "3000", "value": "11403"}


@pytest.mark.parametrize(("column", "value"),
                         [(c, v) for c in ("gpus", "isl", "osl", "num_requests", "value")
                          for v in BAD_NUMBERS if not (c == "num_requests" and v == "")
                          and not (c == "value" and v == "99999999999999999999")]
                         + [("parallelism", v) for v in ("", "DEP0", "TP", "TP-1", "tp2",
                                                         "DEPx", "PP2", "TP1.5")]
                         + [("model", "acme/x"), ("gpu", "B200"), ("gpu", "")])
def test_perf_overview_rows_bad_values_name_their_field(tmp_path, column, value):
    """The perf-overview reader (the set ``trtllm-perf-overview``): one error line naming the
    file's line and the field, for every bad number (NaN, ±inf, negative, zero, overflow,
    text, empty) and layout."""
    from napkin.errors import NapkinError
    from napkin.validation.perf_overview import perf_overview_rows

    row = {**PERF_ROW, column: value}
    path = tmp_path / "p.csv"
    path.write_text(PERF_HEADER + ",".join(row[k] for k in PERF_ROW) + "\n")
    with pytest.raises(NapkinError) as e:
        perf_overview_rows(path)
    msg = str(e.value)
    assert "\n" not in msg and f"line 2: {column}:" in msg, msg


@pytest.mark.parametrize("body", ["", "model,gpu\n", PERF_HEADER + "a,b\n",
                                  PERF_HEADER.replace("value", "tokens") + "x,H100,1,TP1,1,1,,1\n"])
def test_perf_overview_bad_files_are_one_line(tmp_path, body):
    from napkin.errors import NapkinError
    from napkin.validation.perf_overview import perf_overview_rows

    path = tmp_path / "p.csv"
    path.write_text(body)
    with pytest.raises(NapkinError) as e:
        perf_overview_rows(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value)


@pytest.mark.parametrize(("option", "value", "field"),
                         [("kv", "int4", "kv"), ("kv", "", "kv"),
                          ("kv_fraction", float("nan"), "kv_fraction"),
                          ("kv_fraction", 0.0, "kv_fraction"),
                          ("kv_fraction", 1.5, "kv_fraction"),
                          ("kv_fraction", float("inf"), "kv_fraction"),
                          ("requests", 0, "requests"), ("requests", -3, "requests")])
def test_perf_overview_reader_options(option, value, field):
    from napkin.errors import NapkinError
    from napkin.validation.perf_overview import perf_overview_rows

    with pytest.raises(NapkinError, match=field):
        perf_overview_rows(**{option: value})


def test_validate_perf_overview_is_finite_and_checks_its_options(cli):
    """``napkin validate trtllm-perf-overview``: finite JSON (no TTFT or TPOT to score: null),
    and its options refused in one line."""
    code, out, err = cli("validate", "trtllm-perf-overview", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert_finite(doc)
    assert doc["results"][0]["overall"]["throughput"]["rows"] == 15
    _refused(cli("validate", "trtllm-perf-overview", "--by", "rack"), "by")
    _refused(cli("validate", "trtllm-perf-overview", "--calibration", "no-such-profile"),
             "calibration")


@pytest.mark.parametrize("bad", ["rack", "", "tp,gpu"])
def test_validate_minimax_set_is_finite_and_checks_its_options(cli, bad, tmp_path):
    """``napkin validate h100-minimax``: finite JSON over its 30 rows; a bad ``--by``, an unknown
    profile and a profile file with a NaN coefficient are one line each (the last naming the file
    and ``coefficients``)."""
    code, out, err = cli("validate", "h100-minimax", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert_finite(doc)
    assert doc["results"][0]["overall"]["ttft"]["rows"] == 30
    _refused(cli("validate", "h100-minimax", "--by", bad), "by")
    _refused(cli("validate", "h100-minimax", "--calibration", "no-such-profile"), "calibration")
    broken = tmp_path / "p.yaml"
    broken.write_text("coefficients: {dense: .nan}\nbackend: vllm\n")
    _refused(cli("validate", "h100-minimax", "--calibration", str(broken)), "coefficients")
