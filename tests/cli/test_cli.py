"""The command line: the issue's acceptance commands, formats, and one-line errors."""

import json

import pytest


def test_model_json(cli):
    code, out, _ = cli("model", "qwen3-8b", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["params"] == 8_190_735_360
    assert doc["kv_bytes_per_token"] == 147_456  # 2·36·8·128·2
    assert doc["decode_weight_bytes_per_step"] == 15_136_811_008  # (8.19e9 − 151936·4096)·2
    assert doc["inputs"]["weights"] == "bf16"


def test_model_from_a_config_path(cli, tmp_path):
    cfg = {"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
           "vocab_size": 32000, "sliding_window": 4096, "max_position_embeddings": 32768}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, out, _ = cli("model", str(path), "--format", "json")
    assert code == 0
    assert json.loads(out)["params"] == 7_241_732_096  # Mistral-7B-v0.1, published


def test_decode_task_2(cli):
    code, out, _ = cli("decode", "qwen3-8b", "--gpu", "rtx-4080",
                       "--gpu-mem-gb", "32", "--batch", "1,8,16,32", "--context", "4096",
                       "--read-embedding", "--format", "json")
    rows = json.loads(out)["rows"]
    assert code == 0
    # question bank task 2: 17.0/21.2/26.1/35.7 GB, 23.7/29.6/36.4 ms, 32 does not fit
    assert [round(r["memory_bytes"] / 1e9, 1) for r in rows] == [17.0, 21.2, 26.0, 35.7]
    assert [round(r["step_s"] * 1e3, 1) for r in rows[:3]] == [23.7, 29.6, 36.3]
    assert [r["fits"] for r in rows] == [True, True, True, False]


def test_decode_prints_bytes_moved_flops_2n_and_the_ridge_point(cli):
    args = ("decode", "qwen3-8b", "--gpu", "rtx-4080", "--gpu-mem-gb", "32", "--batch", "1,8",
            "--read-embedding")
    code, out, _ = cli(*args, "--format", "json")
    doc = json.loads(out)
    assert code == 0
    # question bank task 2: "Вычислений на токен 2N ≈ 16.4 GFLOP ... интенсивность около
    # 1 FLOP/байт при точке перегиба 136" (97.5 TFLOP/s ÷ 717 GB/s)
    assert round(doc["flops_per_token_2n"] / 1e9, 1) == 16.4
    assert doc["flops_per_token_2n"] == 2 * 8_190_735_360
    assert round(doc["ridge_flops_per_byte"]) == 136
    assert round(doc["rows"][0]["flops_per_byte"]) == 1
    assert doc["rows"][0]["flops_per_byte"] == doc["rows"][0]["flops"] / \
        doc["rows"][0]["bytes_moved"]
    # napkin's own count beside it: the step's FLOPs at batch 1 (attention at 4,096 included)
    assert doc["flops_per_token"] == doc["rows"][0]["flops"] > doc["flops_per_token_2n"]
    _, table, _ = cli(*args, "--wide")
    assert "moved per step" in table and "FLOPs per step" in table and "held (" in table
    assert "2N = 2 × 8.19B = 16.381 GFLOP" in table
    assert "= 136.0 FLOPs/byte" in table


def test_decode_ridge_point_of_the_h100(cli):
    # catalog H100 SXM: 989.4 TFLOP/s dense BF16 ÷ 3,350 GB/s = 295.3 FLOPs/byte; at MFU 0.4 /
    # MBU 0.5 the step turns compute-bound at 295.3 · 0.4/0.5 = 236.3
    _, out, _ = cli("decode", "qwen3-8b", "--gpu", "h100-sxm", "--mfu", "0.4", "--mbu", "0.5",
                    "--format", "json")
    doc = json.loads(out)
    assert doc["ridge_flops_per_byte"] == pytest.approx(989.4e12 / 3350e9)
    assert round(doc["ridge_flops_per_byte"], 1) == 295.3
    assert doc["effective_ridge_flops_per_byte"] == pytest.approx(989.4e12 * 0.4 / (3350e9 * 0.5))


def test_call_batch_labels_its_prefills(cli):
    code, out, _ = cli("call", "qwen3-8b", "--new", "100", "--gen", "4", "--batch", "8",
                       "--gpu", "h100-sxm", "--wide")
    assert code == 0
    assert "prefill (8 sequences in 1 batched call)" in out and "(1 call)" not in out
    assert "decode (3 steps of 8 sequences)" in out
    _, out, _ = cli("call", "qwen3-8b", "--new", "100", "--batch", "8", "--format", "json")
    prefill = json.loads(out)["prefill"]
    assert (prefill["sequences"], prefill["calls"]) == (8, 1)
    _, out, _ = cli("call", "qwen3-8b", "--new", "100", "--gpu", "h100-sxm", "--wide")
    assert "prefill (1 call)" in out


def test_decode_example_3_1(cli):
    code, out, _ = cli("decode", "qwen3-8b", "--gpu", "rtx-pro-6000",
                       "--batch", "64", "--context", "2742", "--mbu", "1", "--format", "json")
    assert code == 0
    assert json.loads(out)["rows"][0]["step_s"] * 1e3 == pytest.approx(22.89, abs=0.005)


def test_formats_and_assumptions_are_printed(cli):
    code, out, _ = cli("decode", "qwen3-8b", "--gpu", "h100-sxm",
                       "--format", "md", "--mfu", "0.5")
    assert code == 0 and out.startswith("# ") and "mfu=0.5" in out and "mbu=1.0" in out
    code, out, _ = cli("decode", "qwen3-8b", "--gpu", "h100-sxm")
    assert code == 0 and "tokens/s" in out and "mfu=1.0" in out


@pytest.mark.parametrize("args", [
    ["models"], ["gpus"], ["examples"], ["examples", "list"],
    ["call", "qwen3-8b", "--new", "2048", "--cached", "6144", "--gen", "4", "--gpu", "h100-sxm"],
    ["call", "deepseek-v3", "--new", "100"],
    ["capacity", "llama-3.1-70b", "--gpu", "rtx-4080", "--gpu-mem-gb", "32", "--count", "4",
     "--weights", "int4-g128", "--context", "32768", "--avg-context", "4096", "--reserve-gb", "2"],
    ["moe", "qwen3-30b-a3b", "--gpu", "rtx-4080", "--weights", "q4_k_m"],
    ["examples", "run", "q13"],
])
@pytest.mark.parametrize("fmt", ["table", "md", "json"])
def test_commands_run_in_every_format(cli, args, fmt):
    code, out, err = cli(*args, "--format", fmt)
    assert code == 0, err
    assert out.strip()
    if fmt == "json":
        json.loads(out)


def test_call_json_reports_chain(cli):
    code, out, _ = cli("call", "qwen3-8b", "--new", "1929", "--gen", "64",
                       "--gpu", "h100-sxm", "--mfu", "0.4", "--mbu", "0.5", "--format", "json")
    chain = json.loads(out)["chain"]
    assert code == 0
    assert chain["decode_steps"] == 63
    assert chain["e2e_s"] == pytest.approx(0.65, abs=0.005)  # §3.2.4


def test_capacity_json(cli):
    code, out, _ = cli("capacity", "llama-3.1-70b", "--gpu", "rtx-4080",
                       "--gpu-mem-gb", "32", "--count", "4", "--weights", "int4-g128",
                       "--context", "32768", "--reserve-gb", "2", "--kv-dtype", "fp8",
                       "--format", "json")
    assert code == 0
    assert json.loads(out)["capacity"]["users"] == 15  # task 3: ≈ 15 with FP8 KV


def test_examples_run_all_passes(cli):
    code, out, _ = cli("examples", "run", "--all", "--format", "json")
    assert code == 0
    assert json.loads(out)["failed_rows"] == 0


@pytest.mark.parametrize("args, field", [
    (["model", "no-such-model"], "model"),
    (["decode", "qwen3-8b", "--gpu", "no-such-gpu"], "gpu"),
    (["call", "qwen3-8b", "--new", "-1"], "new"),
    (["decode", "qwen3-8b", "--gpu", "h100-sxm", "--batch", "0"], "batch"),
    (["decode", "qwen3-8b", "--gpu", "h100-sxm", "--batch", "1,x"], "batch"),
    (["decode", "qwen3-8b", "--gpu", "h100-sxm", "--context", "99999999"], "context"),
    (["decode", "qwen3-8b", "--gpu", "h100-sxm", "--weights", "int3"], "weights"),
    (["decode", "qwen3-8b", "--gpu", "h100-sxm", "--mfu", "2"], "mfu"),
    (["decode", "qwen3-8b"], "gpu"),
    (["decode", "qwen3-8b", "--gpu", "h100-sxm", "--context", "abc"], "--context"),
    (["moe", "qwen3-8b"], "MoE"),
    (["moe", "deepseek-v3", "--ep", "0"], "ep"),
    (["moe", "deepseek-v3", "--ep", "3"], "ep"),
    (["moe", "deepseek-v3", "--ep", "x"], "--ep"),
    (["moe", "deepseek-v3", "--ep", "99999"], "ep"),
    (["moe", "deepseek-v3", "--ep", "8", "--batch", "4"], "batch"),
    (["moe", "deepseek-v3", "--ep", "8", "--balancedness", "0"], "balancedness"),
    (["moe", "deepseek-v3", "--ep", "8", "--balancedness", "nan"], "balancedness"),
    (["moe", "deepseek-v3", "--ep", "8", "--balancedness", "inf"], "balancedness"),
    (["moe", "deepseek-v3", "--balancedness", "0.8"], "balancedness"),
    (["examples", "run", "nope"], "example"),
    (["model"], "MODEL"),
    (["nosuch"], "nosuch"),
])
def test_bad_input_is_one_line(cli, args, field):
    code, out, err = cli(*args)
    assert code == 2
    assert out == ""  # nothing half-written
    assert err.count("\n") == 1 and "Traceback" not in err
    assert field in err


def test_malformed_config_is_one_line(cli, tmp_path):
    bad = tmp_path / "config.json"
    for text, field in (("{not json", "not valid JSON"), ('{"hidden_size": 4096}', "field"),
                        ("[1, 2]", "JSON object")):
        bad.write_text(text)
        code, out, err = cli("model", str(bad))
        assert (code, out) == (2, "") and err.count("\n") == 1 and field in err


MISTRAL_7B_V01 = {  # mistralai/Mistral-7B-v0.1 config.json: every layer slides over 4,096
    "architectures": ["MistralForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 32000}


def test_model_all_sliding_window_shows_kv_up_to_the_window(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MISTRAL_7B_V01))
    code, out, err = cli("model", str(path), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    per_token = 32 * 2 * 8 * 128 * 2  # layers × (K, V) × KV heads × head_dim × BF16 = 128 KiB
    assert doc["kv_bytes_per_token_in_window"] == per_token
    assert doc["min_window_tokens"] == 4096
    code, out, _ = cli("model", str(path))
    assert "KV per token up to 4,096 tokens" in out and "128.000 KiB" in out
