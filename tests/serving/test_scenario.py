"""Scenario files: overrides, KV pool sizing, validation errors."""

import pytest

from napkin.catalog import load_model, scenario_file
from napkin.errors import NapkinError
from napkin.serving.replica import activation_peak_bytes
from napkin.serving.scenario import apply_overrides, build, load_scenario
from napkin.units import GB, GiB


def test_shipped_chapter_scenario_pool():
    scenario, base = load_scenario(scenario_file("chapter-3-1-uniform.yaml"))
    built = build(scenario, base)
    # 24 GiB / (16 tokens × 147,456 B) = 10,922.67 → 10,922 blocks
    assert built.spec.num_blocks == 24 * GiB // (16 * 147_456) == 10_922
    assert built.spec.max_num_seqs == 64 and not built.spec.enable_prefix_caching
    assert len(built.source.requests) == 480


def test_overrides_reach_nested_fields():
    scenario, _ = load_scenario(scenario_file("chapter-3-1-uniform.yaml"),
                                   ["engine.max_num_seqs=128", "mfu=0.5", "engine.mode=exact"])
    assert (scenario.engine.max_num_seqs, scenario.mfu, scenario.engine.mode) == (128, 0.5,
                                                                                  "exact")
    assert apply_overrides({"a": {"b": 1}}, ["a.c=[1, 2]"]) == {"a": {"b": 1, "c": [1, 2]}}
    with pytest.raises(NapkinError, match=r"field\.path=value"):
        apply_overrides({}, ["no-equals-sign"])


def test_derived_pool_follows_vllm_arithmetic(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "model: qwen3-8b\ngpu: rtx-pro-6000\n"
        "engine: {max_num_seqs: 64, max_num_batched_tokens: 8192, gpu_memory_utilization: 0.9,"
        " reserve_gib: 1.0}\n"
        "workload: {classes: {a: {input_tokens: 10, output_tokens: 5}},"
        " arrivals: {kind: poisson, rate_per_s: 1, num_requests: 3}}\n")
    built = build(*load_scenario(tmp_path / "s.yaml"))
    model = load_model("qwen3-8b")
    # activations: 8192 tokens × (2·4096 + max(attention 32·256 + 2048, 1.5 · 2·12288)) × 2 B
    # + 64 × 151,936 × 4 B of FP32 logits
    act = 8192 * (2 * 4096 + 36_864) * 2 + 64 * 151_936 * 4
    assert activation_peak_bytes(model, 8192, 64) == act
    pool = 96 * GB * 0.9 - 8_190_735_360 * 2 - act - GiB
    assert built.spec.num_blocks == int(pool // (16 * 147_456))


@pytest.mark.parametrize("text, field", [
    ("model: qwen3-8b\nworkload: w.yaml\nengine: {max_num_seqs: 0}\n", "engine.max_num_seqs"),
    ("model: qwen3-8b\nworkload: w.yaml\nmfu: 1.5\n", "mfu"),
    ("model: qwen3-8b\nworkload: w.yaml\nturbo: true\n", "turbo"),
    ("workload: w.yaml\n", "model"),
])
def test_bad_scenarios_name_the_field(tmp_path, text, field):
    (tmp_path / "s.yaml").write_text(text)
    with pytest.raises(NapkinError, match=field) as info:
        load_scenario(tmp_path / "s.yaml")
    assert "\n" not in str(info.value)


def test_pool_too_small_is_one_clear_error(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "model: llama-3.1-70b\ngpu: l4\n"
        "workload: {classes: {a: {input_tokens: 10, output_tokens: 5}},"
        " arrivals: {kind: poisson, rate_per_s: 1, num_requests: 3}}\n")
    with pytest.raises(NapkinError, match="nothing left for KV"):
        build(*load_scenario(tmp_path / "s.yaml"))


def test_calibration_auto_picks_the_backend_profile_and_warns_outside_its_domain():
    scenario, base = load_scenario(scenario_file("chapter-3-1-uniform.yaml"))
    built = build(scenario, base)
    assert built.calibration == "vllm" and built.profile is not None
    assert any("GPU rtx-pro-6000" in w for w in built.warnings)
    assert any("model qwen3-8b" in w for w in built.warnings)
    roof = build(*load_scenario(scenario_file("chapter-3-1-uniform.yaml"),
                                ["calibration=roofline", "mfu=0.7"]))
    assert roof.profile is None and roof.warnings == () and roof.eff.mfu == 0.7


def test_roofline_knobs_with_a_profile_are_refused():
    with pytest.raises(NapkinError, match="mfu: applies with calibration: roofline"):
        build(*load_scenario(scenario_file("chapter-3-1-uniform.yaml"), ["mfu=0.5"]))
    with pytest.raises(NapkinError, match="calibration: unknown profile 'nope'"):
        build(*load_scenario(scenario_file("chapter-3-1-uniform.yaml"), ["calibration=nope"]))


def test_tensor_parallel_that_vllm_refuses_is_refused():
    with pytest.raises(NapkinError, match="tensor_parallel"):
        build(*load_scenario(scenario_file("chapter-3-1-uniform.yaml"),
                             ["engine.tensor_parallel=3"]))


def test_derived_pool_uses_the_memory_the_device_reports(tmp_path):
    """H100: 81,559 MiB reported, not 80 GB: 0.9 × 81,559 × 2^20 B is the usable memory."""
    (tmp_path / "s.yaml").write_text(
        "model: qwen3-8b\ngpu: h100-sxm\n"
        "workload: {classes: {a: {input_tokens: 10, output_tokens: 5}},"
        " arrivals: {kind: poisson, rate_per_s: 1, num_requests: 3}}\n")
    built = build(*load_scenario(tmp_path / "s.yaml"))
    assert built.pool_derivation["usable_bytes_per_device"] == pytest.approx(
        0.9 * 81_559 * 2**20)


def test_requests_past_the_model_context_are_refused(tmp_path):
    from napkin.serving.simulate import simulate

    (tmp_path / "s.yaml").write_text(
        "model: qwen3-8b\ngpu: h100-sxm\nengine: {kv_pool_gib: 60}\n"
        "workload: {classes: {a: {input_tokens: 40000, output_tokens: 1000}},"
        " arrivals: {kind: poisson, rate_per_s: 1, num_requests: 1}}\n")
    built = build(*load_scenario(tmp_path / "s.yaml"))
    with pytest.raises(NapkinError, match="max_position_embeddings"):
        simulate(built.engines(), built.source)


def _closed(tmp_path, extra: str) -> tuple:
    (tmp_path / "s.yaml").write_text(
        "model: qwen3-8b\ngpu: h100-sxm\ncalibration: roofline\n" + extra +
        "engine: {kv_pool_gib: 20}\n"
        "workload: {classes: {a: {input_tokens: 500, output_tokens: 20}},"
        " arrivals: {kind: closed_loop, clients: 2, num_requests: 6, warmup_requests: 2}}\n")
    return build(*load_scenario(tmp_path / "s.yaml"))


def test_warmup_requests_are_simulated_but_not_counted(tmp_path):
    from napkin.serving.metrics import summarize
    from napkin.serving.simulate import simulate

    built = _closed(tmp_path, "")
    assert built.warmup == 2
    run = simulate(built.engines(), built.source)
    assert len(run.records.rid) == 6
    s = summarize(run, built.slo, built.warmup)
    assert s.requests == 4
    r = run.records
    keep = r.rid >= 2
    assert s.ttft.mean_s == pytest.approx(float((r.first_token_s - r.arrival_s)[keep].mean()))


def test_frontend_latency_adds_to_every_ttft(tmp_path):
    """A request reaches the engine 50 ms after it is sent: with one client at a time the
    schedule is the same, so every TTFT is 50 ms longer and every TPOT unchanged."""
    from napkin.serving.simulate import simulate

    (tmp_path / "s.yaml").write_text(
        "model: qwen3-8b\ngpu: h100-sxm\ncalibration: roofline\nfrontend_ms: 50\n"
        "engine: {kv_pool_gib: 20}\n"
        "workload: {classes: {a: {input_tokens: 500, output_tokens: 20}},"
        " arrivals: {kind: closed_loop, clients: 1, num_requests: 3}}\n")
    slow = build(*load_scenario(tmp_path / "s.yaml"))
    fast = build(*load_scenario(tmp_path / "s.yaml", ["frontend_ms=0"]))
    a, b = (simulate(x.engines(), x.source).records for x in (slow, fast))
    assert (a.first_token_s - a.arrival_s) == pytest.approx(
        (b.first_token_s - b.arrival_s) + 0.05, rel=1e-9)
    assert (a.finish_s - a.first_token_s) == pytest.approx(b.finish_s - b.first_token_s)


def test_lengths_past_the_profile_domain_warn(tmp_path):
    """The vLLM profile was fitted on outputs of at most 8,192 tokens: a 10,000-token answer
    is extrapolation."""
    (tmp_path / "s.yaml").write_text(
        "model: qwen3-32b\ngpu: h100-sxm\nengine: {tensor_parallel: 2}\n"
        "workload: {classes: {a: {input_tokens: 2000, output_tokens: 10000}},"
        " arrivals: {kind: poisson, rate_per_s: 1, num_requests: 2}}\n")
    built = build(*load_scenario(tmp_path / "s.yaml"))
    assert built.warnings == ("outside profile 'vllm': output tokens 10000 (fitted on 128–8192)",)


def test_unchunked_prefill_that_can_starve_is_flagged():
    built = build(*load_scenario(scenario_file("chapter-3-1-uniform.yaml"),
                                 ["engine.chunked_prefill=false"]))
    assert any("chunked_prefill off: a 8192-token prompt" in w for w in built.warnings)


def _tp16(gpu: str, engine: str = "") -> object:
    scenario, base = load_scenario(scenario_file("chapter-3-1-uniform.yaml"), [
        "model=deepseek-r1", f"gpu={gpu}", "weights=fp8", "engine.tensor_parallel=16",
        "engine.max_num_seqs=8", *([engine] if engine else [])])
    return build(scenario, base)


def test_tensor_parallelism_past_one_nvlink_domain_runs_its_allreduces_over_the_nics():
    """DeepSeek-R1 FP8 at TP 16 on H100 spans two 8-GPU nodes: the all-reduces are
    hierarchical (:func:`allreduce_link_bytes_per_s`: 293.5 GB/s as one ring link, against
    NVLink's 450) and the run says so; on GB200 (a 72-GPU NVLink domain) TP 16 stays on NVLink
    (900 GB/s), as it does where the scenario gives ``engine.gpus_per_node`` past the group or
    its own ``engine.allreduce_gbs``."""
    built = _tp16("h100-sxm")
    assert built.spec.allreduce_bytes_per_s == pytest.approx(293.478e9, rel=1e-5)
    (note,) = [w for w in built.warnings if "NVLink domains" in w]
    assert note.startswith("tensor parallel 16 spans 2 NVLink domains of 8 GPUs") and "50 GB/s" \
        in note and "293.5 GB/s" in note
    for gpu, engine, link in (("gb200", "", 900e9), ("h100-sxm", "engine.gpus_per_node=16", 450e9),
                              ("h100-sxm", "engine.allreduce_gbs=100", 100e9)):
        built = _tp16(gpu, engine)
        assert built.spec.allreduce_bytes_per_s == link
        assert not [w for w in built.warnings if "NVLink domains" in w]
