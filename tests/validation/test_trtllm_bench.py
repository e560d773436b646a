"""trtllm-bench's engine settings (``napkin.validation.trtllm_bench``) against hand derivations of
TensorRT-LLM's heuristic (``tensorrt_llm/bench/tuning/heuristics.py``)."""

import pytest

from napkin.accounting.forward import Precision, weight_bytes
from napkin.catalog import load_accelerator, load_model
from napkin.units import GiB
from napkin.validation.trtllm_bench import bench_settings, finetune, kv_gib_per_token

H100 = load_accelerator("h100-sxm")


def test_finetune_rounds_as_trtllm_bench():
    assert finetune(10, 1000, 1000) == (64, 2048)      # min batch 64, min tokens 2048
    assert finetune(291.3, 1000, 1000) == (384, 2048)  # 128·⌈291.3/128⌉; 582.7 tokens → 2048
    assert finetune(1100, 1000, 1000) == (1280, 2304)  # 256·⌈1100/256⌉; 2200 → 256·⌈2200/256⌉
    assert finetune(5000, 8192, 1024) == (4096, 32768)  # batch capped at 4096, tokens at 32768
    assert finetune(700, 1024, 1024) == (768, 2048)  # 1400 tokens → the 2048 floor
    assert finetune(3000, 1024, 1024) == (3072, 6144)  # 6000 tokens → 512·⌈6000/512⌉


def test_llama_70b_fp8_tp2_by_hand():
    # Llama-3.1-70B (80 layers, 8 KV heads of 128), FP8 weights and KV, TP 2 on H100
    # (81,559 MiB a device), 1000/1000 tokens, kv_cache_free_gpu_mem_fraction 0.95
    model, p = load_model("llama-3.1-70b"), Precision.of("fp8", "fp8")
    per_token = 2 * 80 * max(2, 8) * 128 * 1 / GiB
    assert kv_gib_per_token(model, p, 2) == pytest.approx(per_token)
    memory = 81559 / 1024 * 2 - weight_bytes(model, p) / GiB
    requests = memory * 0.95 / (per_token * 2000)
    s = bench_settings(model, p, H100, 2, 1000, 1000)
    assert s.kv_requests == pytest.approx(requests)
    assert 256 <= requests < 384 and (s.max_batch_size, s.max_num_tokens) == (384, 2048)
    assert s.tuned and not s.chunked_prefill


def test_chunked_prefill_off_raises_the_budget_to_a_whole_prompt():
    model, p = load_model("llama-3.1-70b"), Precision.of("fp8", "fp8")
    s = bench_settings(model, p, H100, 2, 8192, 1024)
    assert s.max_num_tokens == 8192 + s.max_batch_size
    on = bench_settings(model, p, H100, 2, 8192, 1024, chunked_prefill=True)
    assert on.max_num_tokens < s.max_num_tokens


def test_attention_dp_sizes_one_rank_and_counts_kv_heads_up_to_tp():
    # Qwen3-235B-A22B (94 layers, 4 KV heads of 128) DEP8: per rank, checkpoint / 8, and the
    # heuristic's max(tp, kv_heads) = 8 heads a token
    model, p = load_model("qwen3-235b-a22b"), Precision.of("fp8", "fp8")
    per_token = 2 * 94 * 8 * 128 / GiB
    memory = 81559 / 1024 - weight_bytes(model, p) / GiB / 8
    s = bench_settings(model, p, H100, 8, 1000, 1000, attention_dp=True)
    assert s.kv_requests == pytest.approx(memory * 0.95 / (per_token * 2000))


def test_mla_counts_its_latent_once():
    model, p = load_model("deepseek-v3"), Precision.of("fp8", "bf16")
    assert kv_gib_per_token(model, p, 8) == pytest.approx(61 * (512 + 64) * 2 / GiB)


def test_untuned_quantization_gets_the_defaults():
    s = bench_settings(load_model("gpt-oss-120b"), Precision.of("mxfp4-w4a8", "bf16"), H100,
                       4, 1000, 1000, attention_dp=True)
    assert (s.max_batch_size, s.max_num_tokens, s.tuned) == (2048, 8192, False)


V017_HEADER = "source,metric,model,tp,gpu,precision,isl,osl,value\n"


@pytest.mark.parametrize(("row", "message"), [
    ("s,m,LLaMA v3.1 8B,x,H100-80GB,FP8,128,128,1000", "tp, isl, osl and value must be numbers"),
    ("s,m,LLaMA v3.1 8B,1,H100-80GB,FP8,128,128,nan", "must be positive"),
    ("s,m,LLaMA v3.1 8B,1,H100-80GB,FP8,128,128,inf", "must be positive"),
    ("s,m,LLaMA v3.1 8B,0,H100-80GB,FP8,128,128,1000", "must be positive"),
    ("s,m,LLaMA v3.1 8B,1,H100-80GB,FP8,-1,128,1000", "must be positive"),
    ("s,m,GPT-5,1,H100-80GB,FP8,128,128,1000", "model: 'GPT-5' not one of"),
    ("s,m,LLaMA v3.1 8B,1,H100-80GB,FP8,128,128,1000,extra", "more fields"),
])
def test_a_bad_v017_row_is_one_line(tmp_path, row, message):
    """The v0.17 throughput table's reader: a bad row names the file, its line and what is
    wrong (rows of GPUs outside the catalog are skipped, not refused)."""
    from napkin.errors import NapkinError
    from napkin.validation.trtllm_bench import v017_throughput_rows

    path = tmp_path / "t.csv"
    path.write_text(V017_HEADER + row + "\n")
    with pytest.raises(NapkinError, match=message):
        v017_throughput_rows(path)
    path.write_text(V017_HEADER + row.replace("H100-80GB", "GH200-480GB") + "\n")
    if "more fields" not in message:
        assert v017_throughput_rows(path) == []


def test_a_v017_table_without_its_columns(tmp_path):
    from napkin.errors import NapkinError
    from napkin.validation.trtllm_bench import v017_throughput_rows

    path = tmp_path / "t.csv"
    path.write_text("model,tp\nLLaMA v3.1 8B,1\n")
    with pytest.raises(NapkinError, match="columns: missing gpu"):
        v017_throughput_rows(path)
    with pytest.raises(NapkinError, match="no such file"):
        v017_throughput_rows(tmp_path / "none.csv")
