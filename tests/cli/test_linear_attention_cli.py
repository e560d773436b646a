"""The command line on a linear-attention hybrid (Qwen3-Next-80B-A3B): model, call, decode."""

import json

STATE = 36 * (32 * 128 * 128 * 4 + 8192 * 3 * 2)  # FP32 recurrent + BF16 conv: 77,266,944 B
KV_TOKEN = 12 * 2 * 2 * 256 * 2  # the 12 attention layers' K and V in BF16: 24,576 B


def test_model_reports_kv_of_the_attention_layers_and_the_state(cli):
    code, out, _ = cli("model", "qwen3-next-80b-a3b", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["params"] == 79_674_391_296  # tests/specs/test_qwen3_next.py
    assert doc["kv_bytes_per_token"] == KV_TOKEN
    assert doc["state_bytes_per_sequence"] == STATE
    assert doc["attention"]["kind"] == "gqa"  # the attention layers', not the first layer's
    kinds = [g["kind"] for g in doc["layer_groups"]]
    assert kinds == ["moe", "moe"] and len(doc["layer_groups"][0]["layers"]) == 36


def test_call_and_decode_run(cli):
    code, out, _ = cli("call", "qwen3-next-80b-a3b", "--new", "2048", "--gen", "8", "--gpu",
                       "h200", "--format", "json")
    assert code == 0
    code, out, _ = cli("decode", "qwen3-next-80b-a3b", "--gpu", "h200", "--batch", "1,4",
                       "--context", "1000", "--format", "json")
    rows = json.loads(out)["rows"]
    assert code == 0
    assert [r["state_bytes"] for r in rows] == [STATE, 4 * STATE]
    assert [r["kv_bytes"] for r in rows] == [1000 * KV_TOKEN, 4 * 1000 * KV_TOKEN]


def test_attention_matrix_counts_the_attention_layers_only(cli):
    code, out, _ = cli("attention-matrix", "qwen3-next-80b-a3b", "--seq", "8192",
                       "--format", "json")
    value = json.loads(out)
    assert code == 0
    assert value["heads"] == 16  # the gated-attention layers' query heads (not the 32 value
    # heads of the Gated DeltaNet layers, which have no score matrix)
    assert value["kv_bytes_per_layer"] == 8192 * 2 * 2 * 256 * 2  # one attention layer's KV


# Kimi-Linear-48B-A3B (tests/specs/test_kimi_linear.py): 20 KDA layers of 32 heads × 128, three
# 4-tap convolutions of 4,096 channels; 7 MLA layers caching 512 + 64 numbers a token.
KIMI = "kimi-linear-48b-a3b"
KIMI_STATE = 20 * (32 * 128 * 128 * 4 + 3 * 4096 * 3 * 2)  # FP32 + BF16 conv: 43,417,600 B
KIMI_KV_TOKEN = 7 * (512 + 64) * 2  # the 7 MLA layers' latent and rope key in BF16: 8,064 B


def test_models_lists_kimi_linear(cli):
    code, out, _ = cli("models", "--format", "json")
    assert code == 0
    assert KIMI in out and "moonshotai/Kimi-Linear-48B-A3B-Instruct" in out


def test_kimi_linear_model_call_and_decode(cli):
    code, out, _ = cli("model", KIMI, "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["params"] == 49_122_681_728  # the checkpoint's tensor total
    assert doc["kv_bytes_per_token"] == KIMI_KV_TOKEN
    assert doc["state_bytes_per_sequence"] == KIMI_STATE == 43_417_600
    assert doc["attention"]["kind"] == "mla"  # the full-attention layers', not layer 0's KDA
    assert [len(g["layers"]) for g in doc["layer_groups"]] == [1, 19, 7]
    code, out, _ = cli("call", KIMI, "--new", "2048", "--gen", "8", "--gpu", "h200",
                       "--format", "json")
    assert code == 0
    code, out, _ = cli("decode", KIMI, "--gpu", "h200", "--batch", "1,4", "--context", "1000",
                       "--format", "json")
    rows = json.loads(out)["rows"]
    assert code == 0
    assert [r["state_bytes"] for r in rows] == [KIMI_STATE, 4 * KIMI_STATE]
    assert [r["kv_bytes"] for r in rows] == [1000 * KIMI_KV_TOKEN, 4 * 1000 * KIMI_KV_TOKEN]


def test_kimi_linear_serve_simulate_runs(cli, tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: kimi\nmodel: qwen3-0.6b\ngpu: h100-sxm\ncalibration: roofline\n"
        "engine: {max_num_seqs: 4, kv_pool_gib: 4}\nslo: {ttft_s: 2.0, tpot_s: 1.0}\n"
        "workload:\n  seed: 0\n  classes: {a: {input_tokens: 256, output_tokens: 16}}\n"
        "  arrivals: {kind: windows, spacing: even, windows: [{duration_s: 10, rate_per_s: 1}]}\n")
    code, out, err = cli("serve", "simulate", str(scenario), "--set", f"model={KIMI}",
                         "--set", "gpu=h200", "--format", "json")
    assert code == 0, err
    assert KIMI in out and "nan" not in out.lower()


def test_kimi_linear_capacity_holds_kv_and_one_state_per_user(cli):
    code, out, _ = cli("capacity", KIMI, "--gpu", "h200", "--context", "4096",
                       "--format", "json")
    cap = json.loads(out)["capacity"]
    assert code == 0
    weights = 49_122_681_728 * 2  # BF16: 98,245,363,456 B
    per_user = 4096 * KIMI_KV_TOKEN + KIMI_STATE  # 33,030,144 + 43,417,600 B
    assert cap["weights_bytes"] == weights
    assert cap["kv_bytes_per_user"] == 4096 * KIMI_KV_TOKEN == 33_030_144
    assert cap["state_bytes_per_user"] == KIMI_STATE
    assert cap["users"] == (141_000_000_000 - weights) // per_user == 559
