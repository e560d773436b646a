"""Harness protocols: parsing, what they do to rows that do not describe their harness, the
length ranges they draw, and the silicon sample's InferenceMAX rows."""

from dataclasses import replace
from pathlib import Path

import pytest

from napkin.calibration.measurements.aiconfigurator import read_aiconfigurator_csv
from napkin.calibration.measurements.records import Harness, Measurement
from napkin.calibration.protocol import (
    PROTOCOLS,
    Campaign,
    Protocol,
    assume,
    campaigns_of,
    harness_dict,
    parse_campaign,
    parse_protocol,
    with_latencies,
)
from napkin.errors import NapkinError
from napkin.serving.arrivals import generate
from napkin.serving.workload import parse_workload
from napkin.validation.replay import _workload


def _row(harness: Harness) -> Measurement:
    return Measurement("t:1", "vllm", "", "qwen3-8b", "h100-sxm", "bf16", 1, 1000, 200, harness)


def test_named_protocols_and_key_values():
    assert parse_protocol("steady") == Protocol()
    assert parse_protocol("inferencemax") == Protocol(0.0, 10, 0, 0.8, "below")
    assert parse_protocol(" ramp_cycles=0 , range_ratio=0.5") == Protocol(
        ramp_cycles=0.0, range_ratio=0.5)
    assert parse_protocol("requests_per_client=4,range_style=below") == Protocol(
        requests_per_client=4, range_style="below")


@pytest.mark.parametrize("text", ["", "fast", "ramp_cycles", "ramp_cycles=x", "speed=1",
                                  "ramp_cycles=nan", "ramp_cycles=inf", "range_ratio=1.5",
                                  "requests_per_client=0", "range_style=above"])
def test_bad_protocols_name_the_harness(text):
    with pytest.raises(NapkinError, match=r"^harness: "):
        parse_protocol(text)


def test_assume_fills_only_unstated_closed_loops():
    unstated = _row(Harness("closed_loop", concurrency=16, stated=False))
    stated = _row(Harness("closed_loop", concurrency=16, ramp_s=2.0))
    poisson = _row(Harness("poisson", rate_per_s=3.0, stated=False))
    a, b, c = assume([unstated, stated, poisson], PROTOCOLS["burst"])
    # 10 counted per client × 16 clients, nothing dropped, every client at t = 0
    assert a.harness == Harness("closed_loop", concurrency=16, num_requests=160,
                                warmup_requests=0, range_ratio=0.8, ramp_cycles=0.0)
    assert b is stated and c is poisson


def test_a_campaign_runs_its_rows_under_its_own_protocol():
    """Rows of the campaign (model, version, GPU) take its protocol; other models, versions or
    GPUs take the default; a stated harness stays as it is. The profile's mapping lists the
    campaign with every protocol key and reads back equal; a campaign written with only the
    keys that differ takes the rest from the default."""
    burst = PROTOCOLS["burst"]
    llama = Campaign("llama-3.1-8b", replace(burst, dispatch_intervals=1.0), "1.0.0rc3",
                     "h100-sxm")

    def row(model: str, version: str, gpu: str, stated: bool = False) -> Measurement:
        return Measurement("t:1", "trtllm", version, model, gpu, "bf16", 1, 1000, 200,
                           Harness("closed_loop", concurrency=8, stated=stated))
    rows = [row("llama-3.1-8b", "1.0.0rc3", "h100-sxm"), row("qwen3-32b", "1.0.0rc3", "h100-sxm"),
            row("llama-3.1-8b", "1.2.0", "h100-sxm"), row("llama-3.1-8b", "1.0.0rc3", "h200-sxm"),
            row("llama-3.1-8b", "1.0.0rc3", "h100-sxm", stated=True)]
    got = [m.harness.dispatch_intervals for m in assume(rows, burst, (llama,))]
    assert got == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert [m.harness.num_requests for m in assume(rows, burst, (llama,))][:4] == [80] * 4
    mapping = harness_dict(burst, (llama,))
    assert Protocol.of(mapping) == burst and campaigns_of(mapping) == (llama,)
    short = {**burst.as_dict(), "campaigns": [{"model": "llama-3.1-8b", "backend_version":
                                                "1.0.0rc3", "gpu": "h100-sxm",
                                                "dispatch_intervals": 1.0}]}
    assert campaigns_of(short) == (llama,)
    assert campaigns_of(burst.as_dict()) == ()


def test_a_fitted_latency_campaign_round_trips_and_gives_its_rows_the_new_latency():
    """``latency_s=fit`` marks the campaign; the profile's mapping keeps the mark
    (``latency_fitted``) and the latency; :func:`with_latencies` moves a new latency into the
    rows assumed from that campaign and no other (a stated harness, and the default's rows, keep
    theirs)."""
    burst = PROTOCOLS["burst"]
    qwen = parse_campaign("qwen3-32b/h100-sxm:latency_s=fit,range_ratio=0.5", burst)
    assert (qwen.fit_latency, qwen.protocol.range_ratio, qwen.protocol.latency_s) == \
        (True, 0.5, 0.0)
    assert "latency fitted" in qwen.describe()
    fitted = replace(qwen, protocol=replace(qwen.protocol, latency_s=0.085))
    assert campaigns_of(harness_dict(burst, (fitted,))) == (fitted,)

    def row(model: str, stated: bool = False) -> Measurement:
        return Measurement("t:1", "trtllm", "1", model, "h100-sxm", "bf16", 1, 1000, 200,
                           Harness("closed_loop", concurrency=8, stated=stated, latency_s=0.01))
    rows = assume([row("qwen3-32b"), row("llama-3.1-8b"), row("qwen3-32b", stated=True)],
                  burst, (qwen,))
    assert [m.harness.campaign for m in rows] == ["qwen3-32b h100-sxm", "", ""]
    got = [m.harness.latency_s for m in with_latencies(rows, (fitted,))]
    assert got == [0.085, 0.0, 0.01]


@pytest.mark.parametrize("campaigns", [{"model": "x"}, [{"gpu": "h100-sxm"}], ["llama"],
                                       [{"model": "x", "dispatch_intervals": -1}],
                                       [{"model": "x", "range_style": "above"}],
                                       [{"model": "x", "latency_s": -0.5}],
                                       [{"model": "x", "latency_fitted": "yes"}]])
def test_bad_campaigns_name_the_harness(campaigns):
    with pytest.raises(NapkinError, match=r"^harness: "):
        campaigns_of({**PROTOCOLS["burst"].as_dict(), "campaigns": campaigns})


def test_profile_harness_round_trip_and_old_profiles():
    p = PROTOCOLS["inferencemax"]
    assert Protocol.of(p.as_dict()) == p
    assert "[0.8·L, L]" in p.describe()
    assert Protocol.of({"ramp_cycles": 0.0, "closed_loop": "text"}) == Protocol(ramp_cycles=0.0)


@pytest.mark.parametrize(("style", "low", "high"), [("symmetric", 200, 1800),
                                                    ("below", 800, 1000)])
def test_length_ranges_as_the_benchmark_clients_draw_them(style, low, high):
    """vllm bench serve ≥ 0.10 draws [(1−r)·L, (1+r)·L]; InferenceMAX's and SGLang's
    bench_serving draw [r·L, L]; r = 0.8, L = 1000."""
    h = Harness("burst", num_requests=4000, range_ratio=0.8, range_style=style)
    workload, _ = _workload(h, 1000, 1000, seed=1, ramp_s=0.0)
    lengths = generate(parse_workload(workload, "test")).requests.input_tokens
    assert lengths.min() >= low and lengths.max() <= high
    assert lengths.mean() == pytest.approx((low + high) / 2, rel=0.02)


def test_dated_silicon_rows_ran_the_inferencemax_client(tmp_path: Path):
    header = ("id,backend,backend_version,model_path,system,precision,mode,isl,osl,"
              "gemm_quant_mode,batch_size,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n")
    rows = ("2026_04_06_llama_3_1_70b_h100_sxm_vllm_fp8_agg_1024x1024_c16_tp8_ep1,vllm,,"
            "meta-llama/Llama-3.1-70B,h100_sxm,fp8,agg,1024,1024,,16,8,1,93.0,11.4\n"
            "qwen_c16_tp8,vllm,0.12.0,Qwen/Qwen3-32B,h100_sxm,,agg,1024,1024,,16,8,1,100.8,8.9\n")
    path = tmp_path / "s.csv"
    path.write_text(header + rows)
    dated, plain = read_aiconfigurator_csv(path)
    assert dated.harness == Harness("closed_loop", concurrency=16, num_requests=160,
                                    warmup_requests=0, range_ratio=0.8, range_style="below",
                                    ramp_cycles=0.0)
    assert plain.harness == Harness("closed_loop", concurrency=16, stated=False)
    # InferenceMAX serves FP8 weights with an FP8 KV cache (its vLLM and TensorRT-LLM scripts)
    assert (dated.weights, dated.kv_dtype) == ("fp8", "fp8")
    assert (plain.weights, plain.kv_dtype) == ("bf16", "bf16")


def test_trtllm_fp8_rows_run_an_fp8_kv_cache(tmp_path: Path):
    """TensorRT-LLM's FP8 rows of the sample read with an FP8 KV cache (as aiconfigurator models
    FP8 checkpoints); vLLM's undated FP8 rows and TensorRT-LLM's BF16 ones keep BF16."""
    header = ("id,backend,backend_version,model_path,system,precision,mode,isl,osl,"
              "gemm_quant_mode,batch_size,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n")
    rows = ("q_trt,trtllm,1.0.0rc3,Qwen/Qwen3-32B,h100_sxm,fp8,agg,4096,256,fp8,64,1,1,1639,102\n"
            "l_trt,trtllm,1.0.0rc3,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,4096,256,,64,1,1,"
            "636,41\n"
            "q_vllm,vllm,0.12.0,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1024,1024,fp8,16,1,1,100,9\n")
    path = tmp_path / "s.csv"
    path.write_text(header + rows)
    trt_fp8, trt_bf16, vllm_fp8 = read_aiconfigurator_csv(path)
    assert (trt_fp8.weights, trt_fp8.kv_dtype) == ("fp8", "fp8")
    assert (trt_bf16.weights, trt_bf16.kv_dtype) == ("bf16", "bf16")
    assert (vllm_fp8.weights, vllm_fp8.kv_dtype) == ("fp8", "bf16")


def test_a_bf16_kv_pool_cannot_hold_the_row_that_proves_fp8():
    """The reading's evidence, by hand: Qwen3-32B KV is 64 layers × 8 heads × 128 × 2 × 2 B =
    262,144 B per token in BF16. TensorRT-LLM keeps 0.9 × (85.5 GB reported − 32.8 GB FP8
    weights − activations − 1 GiB) free, ≈ 45 GB: about 171k BF16 tokens, 343k FP8. The row
    (64 clients × (4,096 + 256) = 278,528 tokens, 1.64 s TTFT) fits only in FP8."""
    from napkin.accounting import Precision
    from napkin.catalog import load_accelerator, load_model
    from napkin.validation.replay import backend_defaults, kv_pool_blocks

    model, acc = load_model("qwen3-32b"), load_accelerator("h100-sxm")
    d = backend_defaults("trtllm")
    assert model.kv_bytes_per_token(2) == 64 * 8 * 128 * 2 * 2
    need = 64 * (4096 + 256)
    bf16 = 16 * kv_pool_blocks(model, acc, Precision.of("fp8", "bf16"), 1, d)
    fp8 = 16 * kv_pool_blocks(model, acc, Precision.of("fp8", "fp8"), 1, d)
    assert 160_000 < bf16 < 180_000 < need < fp8


def test_fp4_rows_take_their_format_from_gemm_quant_mode(tmp_path: Path):
    header = ("id,backend,backend_version,model_path,system,precision,mode,isl,osl,"
              "gemm_quant_mode,batch_size,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n")
    row = ("2026_04_06_llama_3_1_70b_b200_sxm_vllm_fp4_agg_1024x1024_c4_tp1_ep1,vllm,,"
           "nvidia/Llama-3.1-8B-Instruct-FP8,b200_sxm,fp4,agg,1024,1024,nvfp4,4,1,1,50,5\n")
    path = tmp_path / "s.csv"
    path.write_text(header + row)
    (m,) = read_aiconfigurator_csv(path)
    assert (m.model, m.gpu, m.weights, m.kv_dtype) == ("llama-3.1-8b", "b200", "nvfp4", "fp8")


def test_dispatch_intervals_add_mean_lives_over_clients_to_ttft():
    """k = 1 adds one mean request life / clients to the mean TTFT (and nothing to TPOT)."""
    from napkin.validation.replay import replay, roofline_timer

    h = Harness("closed_loop", concurrency=4, num_requests=16, ramp_cycles=0.0)
    base = replay(_row(h), roofline_timer())
    wait = replay(_row(Harness("closed_loop", concurrency=4, num_requests=16, ramp_cycles=0.0,
                               dispatch_intervals=1.0)), roofline_timer())
    life = base.mean_ttft_s + (200 - 1) * base.mean_tpot_s  # every request's own life
    assert wait.mean_tpot_s == base.mean_tpot_s
    assert wait.mean_ttft_s - base.mean_ttft_s == pytest.approx(life / 4, rel=1e-6)
    assert parse_protocol("dispatch_intervals=0.5").dispatch_intervals == 0.5
    with pytest.raises(NapkinError, match="dispatch_intervals"):
        parse_protocol("dispatch_intervals=-1")


def test_latency_s_adds_a_fixed_time_to_ttft_only():
    """A harness's own latency of 150 ms: the mean TTFT is the engine's plus 0.150 s exactly
    (whatever the schedule), TPOT unchanged; the recorded features carry it as an offset that no
    coefficient scales; a campaign can set it, and a bad value names the harness."""
    from napkin.calibration.profile import load_profile
    from napkin.validation.fit import fitted_timer
    from napkin.validation.replay import replay, roofline_timer

    h = Harness("closed_loop", concurrency=4, num_requests=16, ramp_cycles=0.0)
    base = replay(_row(h), roofline_timer())
    late = replay(_row(replace(h, latency_s=0.150)), roofline_timer())
    assert late.mean_tpot_s == base.mean_tpot_s
    assert late.mean_ttft_s - base.mean_ttft_s == pytest.approx(0.150, abs=1e-12)
    model = load_profile("vllm").model
    r = replay(_row(replace(h, latency_s=0.150)), fitted_timer(model), record=True)
    assert r.ttft_offset_s == 0.150
    import numpy as np
    c = np.array(model.coefficients)
    assert r.mean_ttft_s == pytest.approx(r.ttft_request_weight * model.request_s
                                          + r.ttft_features @ c + 0.150, rel=1e-9)
    assert parse_protocol("latency_s=0.15").latency_s == 0.15
    assert "150 ms of the harness's own latency" in Protocol(latency_s=0.15).describe()
    (m,) = assume([_row(Harness("closed_loop", concurrency=4, stated=False))], PROTOCOLS["burst"],
                  (Campaign("qwen3-8b", replace(PROTOCOLS["burst"], latency_s=0.15)),))
    assert m.harness.latency_s == 0.15
    with pytest.raises(NapkinError, match=r"^harness: latency_s must be in \[0, 60\]"):
        parse_protocol("latency_s=-1")


def test_database_rows_run_the_inferencemax_client_and_its_sglang_launch_flags(tmp_path: Path):
    """InferenceMAX's database rows (``…_cfg81``) ran its client too, and SGLang's DeepSeek rows
    the flags of its scripts (``dsr1_fp8_b200.sh``: chunk 32,768, memory 0.82, FP8 KV, a recv
    interval of 10 below 16 clients and 30 from 16; ``dsr1_fp8_h200.sh``: 512 running at
    1k/1k, BF16 KV, every step); rows no recipe covers keep the engine's defaults."""
    header = ("id,backend,backend_version,model_path,system,precision,mode,isl,osl,"
              "gemm_quant_mode,batch_size,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms\n")
    rows = ("dsr1_b200_sglang_fp8_agg_1024x1024_c8_cfg81,sglang,0.5.9,deepseek-ai/DeepSeek-R1,"
            "b200_sxm,fp8,agg,1024,1024,fp8_block,8,8,1,200,8\n"
            "dsr1_b200_sglang_fp8_agg_1024x1024_c32_cfg83,sglang,0.5.9,deepseek-ai/DeepSeek-R1,"
            "b200_sxm,fp8,agg,1024,1024,fp8_block,32,8,1,500,15\n"
            "dsr1_h200_sglang_fp8_agg_1024x1024_c32_cfg90,sglang,0.5.9,deepseek-ai/DeepSeek-R1,"
            "h200_sxm,fp8,agg,1024,1024,fp8_block,32,8,1,500,15\n"
            "qwen3_b200_vllm_fp8_agg_1024x1024_c8_cfg7,vllm,0.15.0,Qwen/Qwen3-32B,"
            "b200_sxm,fp8,agg,1024,1024,fp8,8,1,1,40,3\n")
    path = tmp_path / "s.csv"
    path.write_text(header + rows)
    few, many, hopper, other = read_aiconfigurator_csv(path)
    for m in (few, many, hopper, other):
        assert (m.harness.num_requests, m.harness.range_style) == (10 * m.harness.concurrency,
                                                                   "below")
    assert (few.launch.scheduler_recv_interval, many.launch.scheduler_recv_interval) == (10, 30)
    assert (many.launch.max_num_batched_tokens, many.launch.memory_fraction) == (32768, 0.82)
    assert many.launch.max_num_seqs is None and many.kv_dtype == "fp8"
    assert "dsr1_fp8_b200.sh" in many.launch.source
    assert (hopper.launch.max_num_seqs, hopper.launch.scheduler_recv_interval) == (512, 1)
    assert hopper.kv_dtype == "bf16"
    assert other.launch is None
    from napkin.validation.replay import engine_for, roofline_timer

    engine = engine_for(many, roofline_timer())
    assert (engine.spec.scheduler_recv_interval, engine.spec.max_num_batched_tokens) == (30,
                                                                                        32768)


def test_a_replay_launches_the_engine_with_the_rows_flags():
    """:func:`launched` puts a row's flags over the backend's defaults (SGLang ≥ 0.5.3 on a
    B200 at TP 8: chunk 16,384 and memory 0.852 by its GPU rule) and keeps the rest."""
    from napkin.calibration.measurements.records import Launch
    from napkin.catalog import load_accelerator
    from napkin.validation.replay import backend_defaults, launched

    d = backend_defaults("sglang", "0.5.9", load_accelerator("b200").device_memory_bytes, 8)
    assert (d.max_num_batched_tokens, d.memory_fraction) == (16384, 0.852)
    flags = launched(d, Launch(max_num_batched_tokens=32768, memory_fraction=0.82,
                               scheduler_recv_interval=30, source="script.sh"))
    assert (flags.max_num_seqs, flags.max_num_batched_tokens, flags.memory_fraction) == (
        d.max_num_seqs, 32768, 0.82)
    assert flags.source.startswith("script.sh over ")
    assert launched(d, None) is d


@pytest.mark.parametrize(("model", "gpu", "weights", "version", "tp", "c", "isl", "osl", "want"), [
    # dsr1_fp8_b200_trt_slurm.sh (TensorRT-LLM 1.1): (4 + 1024 + 127) // 64 · 64 = 1,152 tokens
    ("deepseek-r1", "b200", "fp8", "1.1.0rc2.post2", 8, 4, 1024, 1024,
     (2048, 1152, 0.8, 0, 0.0, "fp8")),
    # … 1.2 (January 2026): a floor of 8,192 and, at 1k/1k from 64 clients, prompts held
    ("deepseek-r1", "b200", "fp8", "1.2.0rc6.post3", 8, 64, 1024, 1024,
     (2048, 8192, 0.8, 40, 0.8, "fp8")),
    ("deepseek-r1", "b200", "fp8", "1.2.0rc6.post3", 4, 8, 8192, 1024,
     (2048, 8320, 0.75, 0, 0.0, "fp8")),
    ("deepseek-r1", "h200", "fp8", "", 8, 16, 8192, 1024, (2048, 8320, 0.75, 0, 0.0, "fp8")),
    ("gpt-oss-120b", "h200", "mxfp4", "", 2, 16, 1024, 1024, (16, 20000, 0.85, 0, 0.0, "bf16")),
    ("gpt-oss-120b", "b200", "nvfp4", "1.2.0rc2", 1, 16, 1024, 1024,
     (512, 20000, 0.85, 0, 0.0, "fp8")),
    ("llama-3.1-70b", "b200", "fp8", "", 4, 16, 1024, 1024, (2048, 16384, None, 20, 0.9, "fp8")),
    ("llama-3.1-70b", "h200", "fp8", "", 8, 16, 1024, 1024, (2048, 16384, None, 0, 0.0, "fp8")),
])
def test_trtllm_recipes_are_inferencemax_scripts(model, gpu, weights, version, tp, c, isl, osl,
                                                 want):
    """TensorRT-LLM's flags in InferenceMAX's scripts (by hand from each script), chunked
    prefill off in all (trtllm-serve's default, which none changes)."""
    from napkin.calibration.inferencemax import launch_of

    launch, kv = launch_of("trtllm", model, gpu, weights, version, tp, c, isl, osl)
    assert (launch.max_num_seqs, launch.max_num_batched_tokens, launch.memory_fraction,
            launch.batch_wait_timeout_iters, launch.batch_wait_max_tokens_ratio, kv) == want
    assert launch.chunked_prefill is False
    assert launch_of("trtllm", "qwen3-32b", gpu, weights, version, tp, c, isl, osl) is None


def test_vllm_recipes_follow_the_script_at_the_runs_time(tmp_path: Path):
    """``minimaxm2.5_fp8_b200.sh`` changed at 2026-04-03 16:31 UTC (InferenceX bddbf40): a run
    measured at 02:34 that day ran memory 0.95 and a BF16 KV cache, one measured on 8 April
    0.90, FP8 KV and a 2·ISL budget (2,048 tokens at 1k); the time comes from
    ``silicon_data_source``."""
    header = ("id,backend,backend_version,model_path,system,precision,mode,isl,osl,"
              "gemm_quant_mode,batch_size,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms,"
              "silicon_data_source\n")
    row = ("minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c8_cfg{n},vllm,0.18.0,"
           "MiniMaxAI/MiniMax-M2.5,b200_sxm,fp8,agg,1024,1024,fp8,8,4,1,60,6,"
           "db-dump/2026-04-27; config_id=1; measured={when}; workflow_run_id=2\n")
    path = tmp_path / "s.csv"
    path.write_text(header + row.format(n=1, when="2026-04-03T02:34:11.000Z")
                    + row.format(n=2, when="2026-04-08T00:00:00Z"))
    before, after = read_aiconfigurator_csv(path)
    assert (before.launch.memory_fraction, before.launch.max_num_batched_tokens,
            before.kv_dtype) == (0.95, None, "bf16")
    assert (after.launch.memory_fraction, after.launch.max_num_batched_tokens,
            after.kv_dtype) == (0.90, 2048, "fp8")
    assert "minimaxm2.5_fp8_b200.sh" in after.launch.source


def test_gpt_oss_b200_vllm_kv_follows_the_december_2025_change():
    """``gptoss_fp4_b200.sh`` set ``kv-cache-dtype: fp8`` on 2025-12-05 21:49 UTC (InferenceX
    25506e8): a run of 2 November used BF16, one of 25 February FP8."""
    from napkin.calibration.inferencemax import launch_of

    args = ("vllm", "gpt-oss-120b", "b200", "mxfp4-w4a8", "", 1, 8, 1024, 1024)
    before, kv_before = launch_of(*args, "2025-11-02")
    after, kv_after = launch_of(*args, "2026-02-25T10:00:00")
    assert (kv_before, kv_after) == ("bf16", "fp8")
    assert (after.max_num_seqs, after.max_num_batched_tokens, after.memory_fraction) == (
        512, 8192, 0.9)
    assert "gptoss_fp4_b200.sh" in before.source


def test_kimi_fp4_vllm_kv_is_the_checkpoints_from_vllm_0_14():
    """``kimik2.5_fp4_b200.sh`` set no ``--kv-cache-dtype`` before 20 April 2026: from vLLM 0.14
    (PR #30785) the server then runs the FP8 cache NVIDIA's NVFP4 checkpoint declares in its
    hf_quant_config.json, before it BF16; the INT4 checkpoint (compressed-tensors, no KV
    format) stays BF16 on every release."""
    from napkin.calibration.inferencemax import launch_of

    def kv(weights: str, version: str) -> str:
        launch, kv = launch_of("vllm", "kimi-k2.5", "b200", weights, version, 4, 64, 8192,
                               1024, "2026-03-25T10:00:00")
        assert (launch.max_num_seqs, launch.max_num_batched_tokens) == (64, None)
        return kv

    assert [kv("nvfp4", v) for v in ("0.13.0", "0.14.0", "0.17.0", "")] == [
        "bf16", "fp8", "fp8", "bf16"]
    assert kv("int4-g32", "0.17.0") == "bf16"


def test_minimax_h100_vllm_runs_bf16_kv_at_0_9_and_256_requests():
    """``minimaxm2.5_fp8_h100.sh`` (InferenceX, March 2026): ``--gpu-memory-utilization 0.90
    --max-num-seqs 256`` and no ``--kv-cache-dtype``; MiniMax's own FP8 checkpoint declares no
    KV format (its config.json's quantization_config has none), so the cache is BF16 — before,
    a dated run of FP8 weights was read with an FP8 cache, twice the KV pool the engine had."""
    from napkin.calibration.inferencemax import launch_of

    launch, kv = launch_of("vllm", "minimax-m2.5", "h100-sxm", "fp8", "0.18.0", 4, 64, 8192,
                           1024, "2026-03-27T07:59:49")
    assert kv == "bf16"
    assert (launch.max_num_seqs, launch.max_num_batched_tokens, launch.memory_fraction) == (
        256, None, 0.9)
    assert "minimaxm2.5_fp8_h100.sh" in launch.source


def test_trtllm_attention_dp_runs_balance_as_their_scripts_write():
    """``dsr1_{fp8,fp4}_{b200,h200}_trt.sh`` write ``attention_dp_config: {batching_wait_iters:
    0, enable_balance: true, timeout_iters: 60}``; ``gptoss_fp4_b200_trt.sh`` only
    ``enable_balance: true`` (TensorRT-LLM's defaults: 50 and 10); the H200 gpt-oss script no
    balancing; Llama's none. The engine applies it only over attention-DP ranks."""
    from napkin.calibration.inferencemax import launch_of

    def balance(model: str, gpu: str, weights: str) -> tuple[int, int]:
        launch, _ = launch_of("trtllm", model, gpu, weights, "1.2.0", 8, 64, 1024, 1024)
        return launch.attention_dp_timeout_iters, launch.attention_dp_batching_wait_iters

    assert balance("deepseek-r1", "b200", "fp8") == balance("deepseek-v3", "h200", "fp8") \
        == balance("deepseek-r1", "b200", "nvfp4") == (60, 0)
    assert balance("gpt-oss-120b", "b200", "mxfp4-w4a8") == (50, 10)
    assert balance("gpt-oss-120b", "h200", "mxfp4") == balance("llama-3.1-70b", "b200",
                                                                "fp8") == (0, 0)


def test_qwen35_sglang_runs_as_their_scripts_launched_them():
    """InferenceX's ``qwen3.5_{bf16,fp8,fp4}_b200.sh`` (Feb–April 2026): chunk 32,768, memory
    0.82 (FP4 0.85), the scheduler taking in requests every 10 decode steps below 16 clients
    and every 30 from 16, FP8 KV for FP8/FP4 weights; ``qwen3.5_fp8_b300.sh`` (17 April): at
    most C, chunk 16,384, memory 0.8, every 10 steps; ``qwen3.5_fp8_h200.sh``: chunk 16,384,
    memory 0.8, every step. The B300 runs of 3 April predate the B300 scripts: no recipe."""
    from napkin.calibration.inferencemax import launch_of

    def read(gpu: str, weights: str, c: int, when: str = "2026-03-24T00:52:21"):
        return launch_of("sglang", "qwen3.5-397b-a17b", gpu, weights, "0.5.9", 4, c, 1024,
                         1024, when)

    few, kv = read("b200", "fp8", 8)
    many, _ = read("b200", "fp8", 32)
    assert kv == "fp8" and (few.scheduler_recv_interval, many.scheduler_recv_interval) == (10, 30)
    assert (few.max_num_seqs, few.max_num_batched_tokens, few.memory_fraction) == (
        None, 32768, 0.82)
    assert read("b200", "bf16", 8)[1] == "bf16"
    assert read("b200", "nvfp4", 8)[0].memory_fraction == 0.85
    b300, kv = read("b300", "fp8", 32, "2026-04-17T09:00:00")
    assert (b300.max_num_seqs, b300.max_num_batched_tokens, b300.memory_fraction,
            b300.scheduler_recv_interval, kv) == (32, 16384, 0.8, 10, "fp8")
    assert read("b300", "fp8", 32, "2026-04-03T16:55:34") is None
    h200, kv = read("h200", "fp8", 32)
    assert (h200.max_num_batched_tokens, h200.memory_fraction, h200.scheduler_recv_interval,
            kv) == (16384, 0.8, 1, "fp8")
    assert "qwen3.5_fp8_h200.sh" in h200.source


def test_glm5_sglang_runs_as_their_scripts_launched_them():
    """``glm5_fp8_b200.sh`` (20 March 2026): at most C, chunk 32,768, memory 0.85, FP8 KV;
    ``glm5_nvfp4_b200.sh`` (28 March): chunk 131,072, memory 0.80 and no KV flag — NVIDIA's
    NVFP4 checkpoint declares FP8; ``glm5_fp8_h200.sh``: memory 0.85 only, so the FP8
    checkpoint (no KV format) runs a BF16 cache. None spaces the scheduler's intake."""
    from napkin.calibration.inferencemax import launch_of

    def read(gpu: str, weights: str):
        return launch_of("sglang", "glm-5", gpu, weights, "nightly-dev", 8, 16, 8192, 1024,
                         "2026-03-29T00:00:00")

    fp8, kv8 = read("b200", "fp8")
    fp4, kv4 = read("b200", "nvfp4")
    hopper, kvh = read("h200", "fp8")
    assert (fp8.max_num_seqs, fp8.max_num_batched_tokens, fp8.memory_fraction, kv8) == (
        16, 32768, 0.85, "fp8")
    assert (fp4.max_num_batched_tokens, fp4.memory_fraction, kv4) == (131072, 0.80, "fp8")
    assert (hopper.max_num_seqs, hopper.max_num_batched_tokens, hopper.memory_fraction,
            kvh) == (None, None, 0.85, "bf16")
    assert {fp8.scheduler_recv_interval, fp4.scheduler_recv_interval,
            hopper.scheduler_recv_interval} == {1}
    assert read("b300", "fp8") is None
