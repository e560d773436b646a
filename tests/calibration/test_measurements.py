"""Readers of public serving-benchmark files: each format parsed from a tiny inline fixture."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from napkin.calibration.measurements.aiconfigurator import read_aiconfigurator_csv
from napkin.calibration.measurements.catalog_ids import (
    catalog_gpu_id,
    catalog_model_id,
    weight_format_name,
)
from napkin.calibration.measurements.guidellm import read_guidellm_json
from napkin.calibration.measurements.plain_csv import read_plain_csv
from napkin.calibration.measurements.read import read_measurements
from napkin.calibration.measurements.records import Harness
from napkin.calibration.measurements.vllm_bench import read_vllm_bench_json
from napkin.catalog import MODELS
from napkin.errors import NapkinError
from napkin.specs.dtypes import weight_format

REAL_AICONFIGURATOR = Path("/work/shared/validation/serving_measured_h100.csv")

AIC_HEADER = (
    "id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,"
    "batch_size,tp_size,pp_size,silicon_ttft_ms,silicon_tpot_ms"
)
AIC_ROWS = [
    "q32_c16_tp2,sglang,0.5.1.post1,Qwen/Qwen3-32B,h100_sxm,,agg,1024,128,,16,2,1,"
    "840.8064807531249,16.538571871875",
    "l8_c64_tp1,trtllm,1.0.0rc3,meta-llama/Llama-3.1-8B-Instruct,h200_sxm,fp8,agg,4096,512,fp8,"
    "64,1,1,250,8.5",
    "l8_disagg,trtllm,1.0.0rc3,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,fp8,disagg,1024,128,"
    "fp8,8,1,1,100,5",
    "l70_pp2,vllm,0.12.0,meta-llama/Llama-3.1-70B,h100_sxm,,agg,1024,128,,8,4,2,300,20",
]


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _error(func, *args, **kwargs) -> str:
    """The message of the NapkinError ``func`` raises; it must be one line."""
    with pytest.raises(NapkinError) as info:
        func(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


# --- name mapping ---


@pytest.mark.parametrize(("hf_id", "napkin_id"), [
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("Qwen/Qwen3-32B", "qwen3-32b"),
    ("qwen/qwen3-32b", "qwen3-32b"),
    ("meta-llama/Llama-3.1-70B", "llama-3.1-70b"),
    ("meta-llama/Meta-Llama-3-70B-Instruct", "llama-3-70b"),
    ("/models/Qwen3-8B", "qwen3-8b"),
    ("qwen3-8b", "qwen3-8b"),
])
def test_catalog_model_id(hf_id, napkin_id):
    assert catalog_model_id(hf_id) == napkin_id


def test_catalog_model_id_unknown_points_to_napkin_models():
    message = _error(catalog_model_id, "acme/NotAModel-7B")
    assert "acme/NotAModel-7B" in message
    assert "napkin models" in message


@pytest.mark.parametrize(("system", "gpu"), [
    ("h100_sxm", "h100-sxm"), ("h200_sxm", "h200"), ("b200_sxm", "b200"),
    ("gb200_sxm", "gb200"), ("a100_sxm", "a100-80gb-sxm"), ("l40s", "l40s"),
    ("b300_sxm", "b300"),
    ("h100-sxm", "h100-sxm"), ("mystery_gpu", "mystery-gpu"),
])
def test_catalog_gpu_id(system, gpu):
    assert catalog_gpu_id(system) == gpu


@pytest.mark.parametrize(("precision", "weights"), [
    ("", "bf16"), ("fp8", "fp8"), ("fp8_block", "fp8"), ("nvfp4", "nvfp4"),
    ("w4a16_awq", "int4-g128"), ("int4-g128", "int4-g128"), ("bf16", "bf16"),
])
def test_weight_format_name(precision, weights):
    assert weight_format_name(precision) == weights


# --- aiconfigurator CSV ---


def test_aiconfigurator_reads_agg_pp1_rows_only(tmp_path):
    path = _write(tmp_path / "aic.csv", "\n".join([AIC_HEADER, *AIC_ROWS]) + "\n")
    first, second = read_aiconfigurator_csv(path)  # disagg and pp_size 2 rows are skipped
    assert first.source == "aic.csv:q32_c16_tp2"
    assert (first.backend, first.backend_version) == ("sglang", "0.5.1.post1")
    assert first.group == ("h100-sxm", "qwen3-32b", 2)
    assert first.weights == "bf16"
    assert (first.input_tokens, first.output_tokens) == (1024, 128)
    assert first.harness == Harness("closed_loop", concurrency=16, stated=False)
    assert first.mean_ttft_s == pytest.approx(0.8408064807531249)
    assert first.mean_tpot_s == pytest.approx(0.016538571871875)
    assert first.median_ttft_s is None
    assert second.group == ("h200", "llama-3.1-8b", 1)
    assert second.weights == "fp8"
    assert second.harness.concurrency == 64
    assert second.mean_ttft_s == pytest.approx(0.25)
    assert second.mean_tpot_s == pytest.approx(0.0085)


def test_fp4_rows_on_hopper_run_as_weight_only_fp4(tmp_path):
    """The sample labels gpt-oss-120b's H200 rows ``nvfp4``; Hopper has no FP4 rate, so they
    run as FP4 weights with BF16 matmuls (``mxfp4``); on B200 its MXFP4 checkpoint runs with
    MXFP8 activations at the FP8 rate (``mxfp4-w4a8``: TensorRT-LLM's GPT-OSS deployment
    guide, vLLM's ``VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8``)."""
    rows = [f"g_{gpu},vllm,0.11.2,openai/gpt-oss-120b,{gpu},fp4,agg,1024,1024,nvfp4,8,1,1,"
            "90,4" for gpu in ("h200_sxm", "b200_sxm")]
    path = _write(tmp_path / "s.csv", AIC_HEADER + "\n" + "\n".join(rows) + "\n")
    hopper, blackwell = read_aiconfigurator_csv(path)
    assert (hopper.gpu, hopper.weights) == ("h200", "mxfp4")
    assert (blackwell.gpu, blackwell.weights) == ("b200", "mxfp4-w4a8")
    from napkin.specs.dtypes import weight_format

    assert weight_format("mxfp4-w4a8").compute == "fp8"
    assert weight_format("mxfp4-w4a8").bits_per_weight == 4 + 8 / 32


def _layouts(tmp_path) -> list:
    """gpt-oss-120b (MoE) and Llama-3.1-8B (dense) rows with the sample's layout columns:
    (model, tp, attention_dp_size, moe_ep_size)."""
    header = AIC_HEADER + ",attention_dp_size,moe_ep_size"
    cases = [("openai/gpt-oss-120b", 4, "1", "1"), ("openai/gpt-oss-120b", 4, "1", "4"),
             ("openai/gpt-oss-120b", 4, "", ""), ("openai/gpt-oss-120b", 4, "1", "2"),
             ("openai/gpt-oss-120b", 1, "4", "4"), ("meta-llama/Llama-3.1-8B-Instruct", 2, "0",
                                                     "2"),
             ("openai/gpt-oss-120b", 4, "1", "3")]
    rows = [f"r{k},vllm,0.18.0,{model},h200_sxm,fp4,agg,1024,1024,nvfp4,8,{tp},1,90,4,{dp},{ep}"
            for k, (model, tp, dp, ep) in enumerate(cases)]
    return read_aiconfigurator_csv(_write(tmp_path / "l.csv", header + "\n" + "\n".join(rows)
                                          + "\n"))


def test_parallel_layout_columns(tmp_path):
    """A row replays in its layout: EP 1 or no column is plain TP (the TP group's basis);
    experts whole over the TP group, attention data parallelism with experts over every rank,
    or MoE TP × EP (2 expert groups of 2 GPUs, as TensorRT-LLM runs it) time the busiest rank
    (a LayoutTimer around a one-GPU timer); an EP size that does not divide the ranks, or MoE
    TP × EP on vLLM (whose EP spans every rank), is refused with one line naming the column and
    the row; a dense model ignores moe_ep_size."""
    from napkin.calibration.basis import StepBasis
    from napkin.calibration.profile import load_profile
    from napkin.catalog import load_accelerator, load_model
    from napkin.timing.layout import LayoutTimer
    from napkin.validation.fit import fitted_timer
    from napkin.validation.replay import engine_for

    rows = _layouts(tmp_path)
    assert [(m.expert_parallel_size, m.attention_data_parallel) for m in rows] == [
        (1, 1), (4, 1), (1, 1), (2, 1), (4, 4), (2, 1), (3, 1)]
    timer = fitted_timer(load_profile("vllm").model)
    model, acc = load_model("gpt-oss-120b"), load_accelerator("h200")
    tp_basis = StepBasis.of(model, acc, "bf16", 4, acc.allreduce_bytes_per_s, weight_only=True)
    for m in (rows[0], rows[2]):  # gpt-oss's MXFP4 on H200: W4A16
        basis = engine_for(m, timer).timer.basis
        assert replace(basis, routed=None) == tp_basis
        assert basis.routed is not None and basis.routed.layout.attention_tp == 4
    ep, dep = engine_for(rows[1], timer).timer, engine_for(rows[4], timer).timer
    assert isinstance(ep, LayoutTimer) and ep.cost.layout.label() == "tp4 ep4"
    assert isinstance(dep, LayoutTimer) and dep.cost.layout.label() == "dp4 ep4"
    # (one rank's basis; the layout counts the busiest rank's routed pairs and experts itself)
    assert ep.device.basis == replace(
        StepBasis.of(model, acc, "bf16", 1, acc.allreduce_bytes_per_s, weight_only=True),
        pair_s_per_token=0.0).at_attention_tp(model, 4)
    assert ep.device.basis.routed is None
    with pytest.raises(NapkinError, match=r"vLLM's expert parallelism spans every rank"):
        engine_for(rows[3], timer)  # vLLM cannot launch MoE TP × EP; TensorRT-LLM can
    mixed = engine_for(replace(rows[3], backend="trtllm"), timer).timer
    assert isinstance(mixed, LayoutTimer) and mixed.cost.layout.label() == "tp4 ep2"
    assert mixed.cost.layout.moe_tp == 2
    with pytest.raises(NapkinError, match=r"^moe_ep_size: 3 expert-parallel groups do not "
                                          r"divide the 4 ranks .*r6\)$"):
        engine_for(rows[6], timer)
    engine_for(rows[5], timer)  # a dense model: moe_ep_size 2 of 4 does not apply


def test_concurrency_is_batch_size_per_attention_dp_rank(tmp_path):
    """aiconfigurator's batch_size is per attention-DP rank (global_bs = bs × attention_dp_size):
    an InferenceMAX c32 run of 4 DP ranks lists batch_size 8. A stated silicon_concurrency
    wins over the product."""
    header = AIC_HEADER + ",attention_dp_size,moe_ep_size,silicon_data_source"
    base = "{id},vllm,0.18.0,openai/gpt-oss-120b,h100_sxm,fp8,agg,1024,1024,fp8,{b},1,1,90,4"
    rows = [base.format(id="dep_c32", b=8) + ",4,4,",
            base.format(id="tp_c8", b=8) + ",1,1,",
            base.format(id="stated", b=32) + ",64,4,model=x; silicon_concurrency=32; measured=",
            # a TensorRT-LLM attention-DP run the columns do not mark: c224 at tp_size 4 lists 56
            base.format(id="c224", b=56).replace(",1,1,90,4", ",4,1,90,4")
            + ",,4,silicon_concurrency=224"]
    dep, tp, stated, unmarked = read_aiconfigurator_csv(
        _write(tmp_path / "c.csv", "\n".join([header, *rows]) + "\n"))
    assert (dep.harness.concurrency, tp.harness.concurrency, stated.harness.concurrency) == \
        (8 * 4, 8, 32)
    assert (dep.tensor_parallel, dep.attention_data_parallel) == (1, 4)
    assert (unmarked.harness.concurrency, unmarked.tensor_parallel,
            unmarked.attention_data_parallel) == (56 * 4, 1, 4)


def test_multiplied_out_layouts_are_read_as_the_runs(tmp_path):
    """The sample's 2026-04-06 export and database dump multiply a run's layout out; the dated
    id states the run (c, tp = GPUs, ep), a squared database row ran on moe_ep_size GPUs. A
    vLLM run's attention_dp_size is part of the multiplying-out, not DP attention: InferenceX's
    minimaxm2.5-fp8-h100-vllm entry is ``{ tp: 4, ep: 4 }`` (no dp-attn) and the 2026-03-25
    export wrote the same runs attention_dp_size 1, moe_ep_size 4."""
    header = AIC_HEADER + ",attention_dp_size,moe_tp_size,moe_ep_size,silicon_data_source"
    row = ("{id},{be},x,{model},{gpu},fp8,agg,1024,1024,fp8,{b},{tp},1,90,4,{dp},{mtp},{ep},"
           "{src}")
    rows = [
        # vLLM MiniMax-M2.5 tp4 ep4 on 4 H100s, written tp 4 × dp 4, ep 16
        row.format(id="2026_04_06_minimax_m2_5_h100_sxm_vllm_fp8_agg_1024x1024_c32_tp4_ep4_1",
                   be="vllm", model="MiniMaxAI/MiniMax-M2.5", gpu="h100_sxm", b=8, tp=4,
                   dp=4, mtp="", ep=16, src="silicon_concurrency=32"),
        # TensorRT-LLM DeepSeek-R1 tp8 ep8 on one B200 node, written tp 64
        row.format(id="2026_04_06_deepseek_r1_b200_sxm_trtllm_fp8_agg_1024x1024_c4_tp8_ep8_9",
                   be="trtllm", model="deepseek-ai/DeepSeek-R1", gpu="b200_sxm", b=4, tp=64,
                   dp=1, mtp="", ep=8, src=""),
        # a database row of SGLang's tp 8, ep 8: tp_size 64, moe_tp_size 8, moe_ep_size 8
        row.format(id="dsr1_b200_sglang_fp8_agg_1024x1024_c4_cfg201", be="sglang",
                   model="deepseek-ai/DeepSeek-R1", gpu="b200_sxm", b=4, tp=64, dp=1, mtp=8,
                   ep=8, src="silicon_concurrency=4"),
        # a consistent MoE TP 2 × EP 4 database row on 8 GPUs stays as written
        row.format(id="x_cfg7", be="trtllm", model="deepseek-ai/DeepSeek-R1", gpu="b200_sxm",
                   b=4, tp=8, dp=1, mtp=2, ep=4, src=""),
    ]
    read = read_aiconfigurator_csv(_write(tmp_path / "m.csv",
                                          "\n".join([header, *rows]) + "\n"))
    assert [(m.harness.concurrency, m.tensor_parallel, m.attention_data_parallel,
             m.expert_parallel_size) for m in read] == [(32, 4, 1, 4), (4, 8, 1, 8),
                                                        (4, 8, 1, 8), (4, 8, 1, 4)]


def test_the_optional_columns_keep_what_reads_a_squared_database_row(tmp_path):
    """A copy of the sample cut to the columns napkin reads (AICONFIGURATOR_COLUMNS and the
    optional AICONFIGURATOR_PARALLEL_COLUMNS, as ``benchmarks/external_check.py`` writes it)
    reads a squared database row as the full row does: SGLang's ``tp 8, ep 8`` on one B200
    node, written tp_size 64, moe_tp_size 8, moe_ep_size 8, ran on 8 GPUs. Without
    ``moe_tp_size`` among the optional columns it read as TP 64 (and so found no recipe)."""
    import csv

    from napkin.calibration.measurements.aiconfigurator import (
        AICONFIGURATOR_COLUMNS,
        AICONFIGURATOR_PARALLEL_COLUMNS,
    )

    full = dict(zip(
        (AIC_HEADER + ",attention_dp_size,moe_tp_size,moe_ep_size,silicon_data_source,"
         "extra").split(","),
        ["dsr1_b200_sglang_fp8_agg_1024x1024_c4_cfg199", "sglang", "", "deepseek-ai/DeepSeek-R1",
         "b200_sxm", "fp8", "agg", "1024", "1024", "fp8", "4", "64", "1", "171.8", "10.3", "1",
         "8", "8", "silicon_concurrency=4; measured=2026-03-25T00:00:00.000Z", "x"],
        strict=True))
    cut = tmp_path / "cut.csv"
    with cut.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=AICONFIGURATOR_COLUMNS + AICONFIGURATOR_PARALLEL_COLUMNS,
                           extrasaction="ignore")
        w.writeheader()
        w.writerow(full)
    [m] = read_aiconfigurator_csv(cut)
    assert (m.tensor_parallel, m.attention_data_parallel, m.expert_parallel_size) == (8, 1, 8)
    assert m.launch is not None and "dsr1_fp8_b200.sh" in m.launch.source


@pytest.mark.parametrize("bad", ["-1", "1.5", "x", "inf", "9999"])
def test_parallel_layout_bad_values_name_the_column(tmp_path, bad):
    header = AIC_HEADER + ",attention_dp_size,moe_ep_size"
    row = AIC_ROWS[0] + f",1,{bad}"
    message = _error(read_aiconfigurator_csv, _write(tmp_path / "a.csv", f"{header}\n{row}\n"))
    assert "a.csv line 2" in message and "moe_ep_size" in message


def test_weight_only_int4_runs_as_the_checkpoints_own_grouping(tmp_path):
    # Kimi-K2.5's config.json: compressed-tensors, num_bits 4, group_size 32 → 4 + 16/32 bits;
    # a model without such a config: GPTQ/AWQ's group of 128.
    rows = [
        "k_c4,vllm,0.16.0,moonshotai/Kimi-K2.5,h200_sxm,int4,agg,1024,1024,int4_wo,4,8,1,90,20",
        "q_c4,vllm,0.16.0,Qwen/Qwen3-32B,h200_sxm,int4,agg,1024,1024,int4_wo,4,1,1,90,20",
    ]
    kimi, qwen = read_aiconfigurator_csv(_write(tmp_path / "aic.csv",
                                                "\n".join([AIC_HEADER, *rows]) + "\n"))
    assert (kimi.model, kimi.weights) == ("kimi-k2.5", "int4-g32")
    assert qwen.weights == "int4-g128"
    assert weight_format(kimi.weights).bits_per_weight == 4 + 16 / 32


def test_fp8_labelled_rows_of_the_mxfp4_checkpoint_run_its_mxfp4_path(tmp_path):
    """gpt-oss exists only as MXFP4: a row labelled ``fp8`` (the sample's TensorRT-LLM H100
    rows) runs W4A16 on Hopper with the checkpoint's own BF16 KV cache (TensorRT-LLM's TRITON
    MoE backend, BF16 activations), not FP8 weights with an FP8 cache, and W4A8 on Blackwell; a
    BF16 row stays BF16, and an FP8 row of another model stays FP8."""
    rows = [f"g_{gpu}_{q},trtllm,1.3.0rc1,openai/gpt-oss-120b,{gpu},{q},agg,4000,1000,{q},48,1,"
            "1,1590,48" for gpu, q in (("h100_sxm", "fp8"), ("b200_sxm", "fp8"),
                                       ("h100_sxm", "bf16"))]
    rows.append("q_fp8,trtllm,1.0.0rc3,Qwen/Qwen3-32B,h100_sxm,fp8,agg,1024,128,fp8,4,1,1,90,9")
    hopper, blackwell, bf16, qwen = read_aiconfigurator_csv(
        _write(tmp_path / "g.csv", "\n".join([AIC_HEADER, *rows]) + "\n"))
    assert (hopper.weights, hopper.kv_dtype) == ("mxfp4", "bf16")
    assert (blackwell.weights, bf16.weights) == ("mxfp4-w4a8", "bf16")
    assert (qwen.weights, qwen.kv_dtype) == ("fp8", "fp8")


def test_nvidia_nvfp4_rows_run_an_fp8_kv_cache_on_every_backend(tmp_path):
    # nvidia/MiniMax-M2.5-NVFP4's hf_quant_config.json: kv_cache_quant_algo FP8 (vLLM row);
    # gpt-oss's FP4 rows run its own MXFP4 checkpoint, which declares no KV format.
    rows = [
        "mm_c4,vllm,0.19.0,MiniMaxAI/MiniMax-M2.5,b200_sxm,fp4,agg,1024,1024,nvfp4,4,4,1,90,9",
        "go_c4,vllm,0.19.0,openai/gpt-oss-120b,b200_sxm,fp4,agg,1024,1024,nvfp4,4,1,1,40,4",
        "mf_c4,vllm,0.19.0,MiniMaxAI/MiniMax-M2.5,b200_sxm,fp8,agg,1024,1024,fp8,4,4,1,90,9",
    ]
    nv, oss, fp8 = read_aiconfigurator_csv(_write(tmp_path / "aic.csv",
                                                  "\n".join([AIC_HEADER, *rows]) + "\n"))
    assert (nv.model, nv.weights, nv.kv_dtype) == ("minimax-m2.5", "nvfp4", "fp8")
    assert (oss.weights, oss.kv_dtype) == ("mxfp4-w4a8", "bf16")
    assert fp8.kv_dtype == "bf16"  # vLLM FP8 rows of an unstated harness: BF16, as before


def test_aiconfigurator_missing_column_is_named(tmp_path):
    header = AIC_HEADER.replace(",silicon_tpot_ms", "")
    row = AIC_ROWS[0].rsplit(",", 1)[0]
    message = _error(read_aiconfigurator_csv, _write(tmp_path / "a.csv", f"{header}\n{row}\n"))
    assert "a.csv" in message
    assert "silicon_tpot_ms" in message


@pytest.mark.parametrize("bad", ["nan", "inf", "-3.5", "0", "fast"])
def test_aiconfigurator_bad_latency_names_column_and_line(tmp_path, bad):
    row = AIC_ROWS[0].replace("840.8064807531249", bad)
    message = _error(read_aiconfigurator_csv,
                     _write(tmp_path / "a.csv", f"{AIC_HEADER}\n{row}\n"))
    assert "a.csv line 2" in message
    assert "silicon_ttft_ms" in message


def test_aiconfigurator_unknown_model_names_column(tmp_path):
    row = AIC_ROWS[0].replace("Qwen/Qwen3-32B", "acme/Mystery-9B")
    message = _error(read_aiconfigurator_csv,
                     _write(tmp_path / "a.csv", f"{AIC_HEADER}\n{row}\n"))
    assert "model_path" in message
    assert "acme/Mystery-9B" in message
    assert "napkin models" in message


def test_aiconfigurator_bad_batch_size(tmp_path):
    row = AIC_ROWS[0].replace(",16,2,1,", ",0,2,1,")
    message = _error(read_aiconfigurator_csv,
                     _write(tmp_path / "a.csv", f"{AIC_HEADER}\n{row}\n"))
    assert "batch_size" in message


@pytest.mark.skipif(not REAL_AICONFIGURATOR.exists(), reason="validation data not present")
def test_real_aiconfigurator_file():
    rows = read_aiconfigurator_csv(REAL_AICONFIGURATOR)
    assert len(rows) == 579
    catalog = {m.id for m in MODELS}
    assert all(m.model in catalog for m in rows)
    assert {m.gpu for m in rows} == {"h100-sxm"}
    assert all(m.harness.kind == "closed_loop" and m.harness.concurrency >= 1 for m in rows)


# --- vllm bench serve JSON ---


def _vllm_result(**changes) -> dict:
    """A ``vllm bench serve --save-result`` object (64 prompts of 1024 in / 128 out)."""
    result = {
        "date": "20250601-120000", "endpoint_type": "vllm", "backend": "vllm", "label": None,
        "model_id": "Qwen/Qwen3-8B", "tokenizer_id": "Qwen/Qwen3-8B", "num_prompts": 64,
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 16, "duration": 30.5,
        "completed": 64, "failed": 0, "total_input_tokens": 65536, "total_output_tokens": 8192,
        "request_throughput": 2.1, "request_goodput": None, "output_throughput": 268.6,
        "total_token_throughput": 2417.0, "max_output_tokens_per_s": 300.0,
        "max_concurrent_requests": 16, "rtfx": 0.0,
        "mean_ttft_ms": 120.5, "median_ttft_ms": 110.0, "std_ttft_ms": 10.0,
        "p99_ttft_ms": 200.0, "mean_tpot_ms": 12.25, "median_tpot_ms": 12.0,
        "std_tpot_ms": 1.0, "p99_tpot_ms": 15.0, "mean_itl_ms": 12.2, "median_itl_ms": 12.0,
        "std_itl_ms": 1.0, "p99_itl_ms": 16.0,
    }
    result.update(changes)
    return result


def test_vllm_closed_loop(tmp_path):
    path = _write(tmp_path / "vllm.json", json.dumps(_vllm_result()))
    (m,) = read_vllm_bench_json(path, gpu="h100-sxm", tensor_parallel=2, weights="fp8")
    assert m.source == "vllm.json:1"
    assert m.backend == "vllm"
    assert m.group == ("h100-sxm", "qwen3-8b", 2)
    assert m.weights == "fp8"
    assert (m.input_tokens, m.output_tokens) == (1024, 128)  # 65536/64, 8192/64
    # request_rate inf: the semaphore admits all 16 clients at t = 0
    assert m.harness == Harness("closed_loop", concurrency=16, num_requests=64, ramp_s=0.0)
    assert m.mean_ttft_s == pytest.approx(0.1205)
    assert m.median_ttft_s == pytest.approx(0.110)
    assert m.mean_tpot_s == pytest.approx(0.01225)
    assert m.median_tpot_s == pytest.approx(0.012)
    assert m.output_tokens_per_s == pytest.approx(268.6)
    assert m.extra["backend"] == "vllm"


def test_vllm_list_of_results_with_metadata(tmp_path):
    poisson = _vllm_result(max_concurrency=None, request_rate=2.5, random_input_len="2048",
                           random_output_len="256", random_range_ratio="0.1")
    burst = _vllm_result(max_concurrency=None, backend="openai-chat")
    path = _write(tmp_path / "runs.json", json.dumps([poisson, burst]))
    a, b = read_vllm_bench_json(path, gpu="h100_sxm", model="qwen3-8b")
    assert a.harness == Harness("poisson", rate_per_s=2.5, num_requests=64, range_ratio=0.1)
    assert (a.input_tokens, a.output_tokens) == (2048, 256)  # metadata wins over totals
    assert a.gpu == "h100-sxm"
    assert (a.tensor_parallel, a.weights) == (1, "bf16")
    assert b.harness == Harness("burst", num_requests=64)
    assert b.source == "runs.json:2"
    assert b.extra["backend"] == "openai-chat"


def test_vllm_json_lines(tmp_path):
    lines = [json.dumps(_vllm_result(max_concurrency=c)) for c in (1, 8)]
    path = _write(tmp_path / "appended.json", "\n".join(lines) + "\n")
    rows = read_vllm_bench_json(path, gpu="h100-sxm")
    assert [m.harness.concurrency for m in rows] == [1, 8]


def test_vllm_rounds_mean_lengths(tmp_path):
    path = _write(tmp_path / "v.json", json.dumps(
        _vllm_result(completed=3, total_input_tokens=1000, total_output_tokens=302)))
    (m,) = read_vllm_bench_json(path, gpu="h100-sxm")
    assert (m.input_tokens, m.output_tokens) == (333, 101)


def test_vllm_needs_gpu(tmp_path):
    path = _write(tmp_path / "v.json", json.dumps(_vllm_result()))
    message = _error(read_vllm_bench_json, path)
    assert "v.json" in message
    assert "gpu" in message


def test_vllm_nan_latency_is_named(tmp_path):
    path = _write(tmp_path / "v.json", json.dumps(_vllm_result(mean_ttft_ms=float("nan"))))
    message = _error(read_vllm_bench_json, path, gpu="h100-sxm")
    assert "v.json result 1" in message
    assert "mean_ttft_ms" in message


def test_vllm_zero_completed_is_named(tmp_path):
    path = _write(tmp_path / "v.json", json.dumps(_vllm_result(completed=0)))
    assert "completed" in _error(read_vllm_bench_json, path, gpu="h100-sxm")


def test_vllm_unknown_model_is_named(tmp_path):
    path = _write(tmp_path / "v.json", json.dumps(_vllm_result(model_id="acme/Mystery-9B")))
    message = _error(read_vllm_bench_json, path, gpu="h100-sxm")
    assert "model_id" in message
    assert "napkin models" in message


# --- guidellm report JSON ---


def _dist(mean: float, median: float) -> dict:
    """A guidellm StatusDistributionSummary with the same numbers in every status."""
    summary = {"mean": mean, "median": median, "mode": median, "variance": 0.0,
               "std_dev": 0.0, "min": median, "max": mean, "count": 10,
               "total_sum": mean * 10, "percentiles": {"p50": median}}
    return {"successful": summary, "incomplete": None, "errored": None, "total": summary}


def _guidellm_metrics(ttft_ms: float, itl_ms: float) -> dict:
    return {
        "request_totals": {"successful": 40, "incomplete": 0, "errored": 0, "total": 40},
        "prompt_token_count": _dist(512.2, 512),
        "output_token_count": _dist(127.6, 128),
        "time_to_first_token_ms": _dist(ttft_ms, ttft_ms - 5),
        "time_per_output_token_ms": _dist(itl_ms + 1, itl_ms + 1),
        "inter_token_latency_ms": _dist(itl_ms, itl_ms - 0.5),
        "output_tokens_per_second": _dist(900.0, 880.0),
    }


def _guidellm_benchmark(strategy: dict, ttft_ms: float = 50.0, itl_ms: float = 10.0) -> dict:
    """A guidellm 0.7 GenerativeBenchmark (``config.strategy``, ``config.backend.model``)."""
    return {
        "type_": "generative_benchmark",
        "config": {
            "id_": "b", "run_id": "r", "run_index": 0, "strategy": strategy,
            "constraints": {}, "profile": {"type_": "sweep"}, "requests": {},
            "backend": {"kind": "openai_http", "target": "http://localhost:8000",
                        "model": "Qwen/Qwen3-8B"},
            "environment": {},
        },
        "scheduler_metrics": {}, "metrics": _guidellm_metrics(ttft_ms, itl_ms),
        "requests": {"successful": [], "incomplete": [], "errored": [], "total": None},
    }


def _guidellm_report(*benchmarks: dict) -> str:
    return json.dumps({"metadata": {"version": 2, "guidellm_version": "0.7.3"},
                       "config": {"benchmarks": [None]}, "benchmarks": list(benchmarks)})


def test_guidellm_strategies(tmp_path):
    path = _write(tmp_path / "report.json", _guidellm_report(
        _guidellm_benchmark({"type_": "synchronous"}),
        _guidellm_benchmark({"type_": "concurrent", "streams": 8, "rampup_duration": 5.0}),
        _guidellm_benchmark({"type_": "constant", "rate": 4.0}),
        _guidellm_benchmark({"type_": "poisson", "rate": 2.5, "random_seed": 42}),
        _guidellm_benchmark({"type_": "throughput", "max_concurrency": None}),
        _guidellm_benchmark({"type_": "throughput", "max_concurrency": 64}),
    ))
    rows = read_guidellm_json(path, gpu="h100-sxm", tensor_parallel=4)
    assert [m.harness for m in rows] == [
        Harness("closed_loop", concurrency=1, num_requests=40),
        Harness("closed_loop", concurrency=8, num_requests=40, ramp_s=5.0),
        Harness("poisson", rate_per_s=4.0, num_requests=40),
        Harness("poisson", rate_per_s=2.5, num_requests=40),
        Harness("burst", num_requests=40),
        Harness("closed_loop", concurrency=64, num_requests=40),
    ]
    assert [m.extra["strategy"] for m in rows][2] == "constant"
    m = rows[0]
    assert m.source == "report.json:0"
    assert m.group == ("h100-sxm", "qwen3-8b", 4)
    assert (m.input_tokens, m.output_tokens) == (512, 128)  # 512.2 and 127.6 rounded
    assert m.mean_ttft_s == pytest.approx(0.050)
    assert m.median_ttft_s == pytest.approx(0.045)
    assert m.mean_tpot_s == pytest.approx(0.010)  # inter_token_latency_ms, not TPOT incl. 1st
    assert m.median_tpot_s == pytest.approx(0.0095)
    assert m.output_tokens_per_s == pytest.approx(900.0)


def test_guidellm_v03_args_schema(tmp_path):
    bench = {"type_": "generative_benchmark",
             "args": {"strategy_index": 0, "strategy": {"type_": "concurrent", "streams": 4}},
             "worker": {"backend_model": "meta-llama/Llama-3.1-8B-Instruct"},
             "metrics": _guidellm_metrics(80.0, 12.0)}
    path = _write(tmp_path / "old.json", json.dumps({"benchmarks": [bench]}))
    (m,) = read_guidellm_json(path, gpu="h100-sxm")
    assert m.model == "llama-3.1-8b"
    assert m.harness.concurrency == 4
    assert m.mean_ttft_s == pytest.approx(0.080)


def test_guidellm_model_keyword_wins(tmp_path):
    path = _write(tmp_path / "r.json", _guidellm_report(_guidellm_benchmark(
        {"type_": "synchronous"})))
    (m,) = read_guidellm_json(path, gpu="h100-sxm", model="qwen3-32b")
    assert m.model == "qwen3-32b"


def test_guidellm_unknown_strategy_is_named(tmp_path):
    path = _write(tmp_path / "r.json", _guidellm_report(_guidellm_benchmark(
        {"type_": "trace", "time_scale": 1.0})))
    message = _error(read_guidellm_json, path, gpu="h100-sxm")
    assert "r.json benchmarks[0]" in message
    assert "config.strategy.type_" in message


def test_guidellm_nan_latency_is_named(tmp_path):
    path = _write(tmp_path / "r.json", _guidellm_report(_guidellm_benchmark(
        {"type_": "synchronous"}, ttft_ms=float("nan"))))
    message = _error(read_guidellm_json, path, gpu="h100-sxm")
    assert "metrics.time_to_first_token_ms.successful" in message


def test_guidellm_missing_token_counts_are_named(tmp_path):
    bench = _guidellm_benchmark({"type_": "synchronous"})
    del bench["metrics"]["prompt_token_count"]
    path = _write(tmp_path / "r.json", _guidellm_report(bench))
    assert "prompt_token_count" in _error(read_guidellm_json, path, gpu="h100-sxm")


def test_guidellm_needs_gpu(tmp_path):
    path = _write(tmp_path / "r.json", _guidellm_report(_guidellm_benchmark(
        {"type_": "synchronous"})))
    assert "gpu" in _error(read_guidellm_json, path)


# --- plain CSV ---

PLAIN = """\
backend,model,gpu,weights,tp,input_tokens,output_tokens,harness,load,mean_ttft_ms,mean_tpot_ms,\
num_requests,range_ratio,kv_dtype,id
vllm,qwen3-8b,h100-sxm,bf16,1,1024,128,closed_loop,16,84.1,11.5,,,,
sglang,Qwen/Qwen3-32B,h200,fp8,2,2048,256,poisson,2.5,61,,200,0.25,fp8,p1
vllm,llama-3.1-8b,h100-sxm,bf16,1,512,64,burst,,,9.0,100,,,
"""


def test_plain_csv(tmp_path):
    a, b, c = read_plain_csv(_write(tmp_path / "plain.csv", PLAIN))
    assert a.source == "plain.csv:2"
    assert a.group == ("h100-sxm", "qwen3-8b", 1)
    assert a.harness == Harness("closed_loop", concurrency=16)
    assert a.mean_ttft_s == pytest.approx(0.0841)
    assert a.mean_tpot_s == pytest.approx(0.0115)
    assert a.median_ttft_s is None
    assert b.source == "plain.csv:p1"
    assert b.group == ("h200", "qwen3-32b", 2)
    assert (b.weights, b.kv_dtype) == ("fp8", "fp8")
    assert b.harness == Harness("poisson", rate_per_s=2.5, num_requests=200, range_ratio=0.25)
    assert b.mean_tpot_s is None
    assert c.harness == Harness("burst", num_requests=100)
    assert c.mean_ttft_s is None


def test_plain_csv_unknown_column_is_named(tmp_path):
    text = PLAIN.replace(",id\n", ",colour\n", 1)
    message = _error(read_plain_csv, _write(tmp_path / "p.csv", text))
    assert "colour" in message


def test_plain_csv_missing_column_is_named(tmp_path):
    text = "backend,model,gpu,weights,tp,input_tokens,output_tokens,harness\n"
    message = _error(read_plain_csv, _write(tmp_path / "p.csv", text))
    assert "load" in message


def test_plain_csv_nan_latency_is_named(tmp_path):
    text = PLAIN.replace(",84.1,", ",nan,")
    message = _error(read_plain_csv, _write(tmp_path / "p.csv", text))
    assert "p.csv line 2" in message
    assert "mean_ttft_ms" in message


@pytest.mark.parametrize(("old", "new", "field"), [
    (",closed_loop,16,", ",closed_loop,0,", "load"),
    (",closed_loop,16,", ",ramp,16,", "harness"),
    (",1,1024,128,closed", ",0,1024,128,closed", "tp"),
    (",1024,128,closed", ",1024.5,128,closed", "input_tokens"),
    ("vllm,qwen3-8b,", "vllm,acme/Mystery-9B,", "model"),
])
def test_plain_csv_bad_values_are_named(tmp_path, old, new, field):
    message = _error(read_plain_csv, _write(tmp_path / "p.csv", PLAIN.replace(old, new, 1)))
    assert "p.csv line 2" in message
    assert f": {field}:" in message


def test_plain_csv_ragged_row(tmp_path):
    text = PLAIN.replace(",84.1,11.5,,,,", ",84.1,11.5,,,,,extra")
    assert "line 2" in _error(read_plain_csv, _write(tmp_path / "p.csv", text))


LAUNCH = """\
backend,model,gpu,weights,tp,input_tokens,output_tokens,harness,load,mean_ttft_ms,\
launch_max_num_batched_tokens,launch_memory_fraction,launch_chunked_prefill,\
launch_scheduler_recv_interval,launch_batch_wait_timeout_iters,launch_batch_wait_max_tokens_ratio
sglang,qwen3-8b,h100-sxm,bf16,1,1024,128,closed_loop,16,84.1,32768,0.82,,30,,
trtllm,qwen3-8b,h100-sxm,bf16,1,1024,128,closed_loop,16,84.1,1152,0.8,false,,40,0.8
vllm,qwen3-8b,h100-sxm,bf16,1,1024,128,closed_loop,16,84.1,,,,,,
"""


def test_plain_csv_launch_flags(tmp_path):
    """The ``launch_*`` columns become the row's :class:`Launch` (replayed as the engine's
    flags); a row without them keeps the engine's defaults."""
    sglang, trtllm, vllm = read_plain_csv(_write(tmp_path / "l.csv", LAUNCH))
    assert (sglang.launch.max_num_batched_tokens, sglang.launch.memory_fraction,
            sglang.launch.scheduler_recv_interval, sglang.launch.chunked_prefill) == (
        32768, 0.82, 30, None)
    assert (trtllm.launch.chunked_prefill, trtllm.launch.batch_wait_timeout_iters,
            trtllm.launch.batch_wait_max_tokens_ratio) == (False, 40, 0.8)
    assert vllm.launch is None
    from napkin.validation.replay import engine_for, roofline_timer

    spec = engine_for(trtllm, roofline_timer()).spec
    assert (spec.max_num_batched_tokens, spec.chunked_prefill, spec.batch_wait_timeout_iters) \
        == (1152, False, 40)


@pytest.mark.parametrize(("old", "new", "field"), [
    (",32768,0.82,,30,", ",32768,1.5,,30,", "launch_memory_fraction"),
    (",32768,0.82,,30,", ",32768,0,,30,", "launch_memory_fraction"),
    (",32768,0.82,,30,", ",32768,0.82,maybe,30,", "launch_chunked_prefill"),
    (",32768,0.82,,30,", ",-1,0.82,,30,", "launch_max_num_batched_tokens"),
    (",32768,0.82,,30,", ",32768,0.82,,nan,", "launch_scheduler_recv_interval"),
    ("sglang,qwen3-8b", "vllm,qwen3-8b", "launch_scheduler_recv_interval"),
    ("trtllm,qwen3-8b,h100-sxm,bf16,1,1024,128,closed_loop,16,84.1,1152,0.8,false,,40,0.8",
     "sglang,qwen3-8b,h100-sxm,bf16,1,1024,128,closed_loop,16,84.1,1152,0.8,false,,,0.8",
     "launch_batch_wait_max_tokens_ratio"),
])
def test_plain_csv_bad_launch_flags_are_named(tmp_path, old, new, field):
    message = _error(read_plain_csv, _write(tmp_path / "p.csv", LAUNCH.replace(old, new, 1)))
    assert f": {field}:" in message and "p.csv line" in message


# --- dispatch and file errors ---


def test_read_measurements_dispatches_by_content(tmp_path):
    aic = _write(tmp_path / "aic.csv", "\n".join([AIC_HEADER, *AIC_ROWS]) + "\n")
    plain = _write(tmp_path / "plain.csv", PLAIN)
    guide = _write(tmp_path / "g.json", _guidellm_report(_guidellm_benchmark(
        {"type_": "synchronous"})))
    vllm = _write(tmp_path / "v.jsonl", json.dumps(_vllm_result()) + "\n")
    rows = read_measurements([aic, plain, guide, vllm], gpu="h100-sxm", tensor_parallel=2)
    assert [m.source for m in rows] == [
        "aic.csv:q32_c16_tp2", "aic.csv:l8_c64_tp1", "plain.csv:2", "plain.csv:p1",
        "plain.csv:4", "g.json:0", "v.jsonl:1",
    ]
    assert rows[0].tensor_parallel == 2  # from the CSV, not the keyword
    assert rows[2].tensor_parallel == 1
    assert rows[-2].tensor_parallel == rows[-1].tensor_parallel == 2
    assert read_measurements(str(vllm), gpu="h100-sxm")[0].tensor_parallel == 1


def test_missing_file(tmp_path):
    message = _error(read_measurements, tmp_path / "nope.json", gpu="h100-sxm")
    assert "nope.json" in message
    assert "no such file" in message


def test_not_utf8(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("backend,model\nvllm,caf\xe9\n".encode("latin-1"))
    message = _error(read_measurements, path)
    assert "latin1.csv" in message
    assert "UTF-8" in message


def test_invalid_json(tmp_path):
    message = _error(read_measurements, _write(tmp_path / "bad.json", '{"completed": 3,'),
                     gpu="h100-sxm")
    assert "bad.json" in message
    assert "JSON" in message


def test_json_not_an_object(tmp_path):
    message = _error(read_vllm_bench_json, _write(tmp_path / "n.json", "[1, 2]"), gpu="h100")
    assert "n.json" in message


def test_empty_csv(tmp_path):
    message = _error(read_measurements, _write(tmp_path / "empty.csv", ""))
    assert "empty.csv" in message


def test_a_replayed_layout_takes_its_gpus_nvlink_domain(tmp_path):
    """A DEP4 row's all-to-alls leave an NVLink domain only past it: 8 GPUs on an H200 board,
    72 on a GB200 NVL72 (the catalog's ``nvlink_domain``); the TP group's all-reduce link is
    NVLink's within it."""
    from napkin.calibration.profile import load_profile
    from napkin.catalog import load_accelerator
    from napkin.validation.fit import fitted_timer
    from napkin.validation.replay import engine_for

    dep = _layouts(tmp_path)[4]
    timer = fitted_timer(load_profile("vllm").model)
    for gpu, domain in (("h200", 8), ("gb200", 72)):
        engine = engine_for(replace(dep, gpu=gpu), timer)
        assert engine.timer.comm.gpus_per_node == domain
        assert engine.spec.allreduce_bytes_per_s == load_accelerator(gpu).allreduce_bytes_per_s
