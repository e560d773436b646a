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
