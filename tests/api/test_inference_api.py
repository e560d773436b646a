"""The public API of the catalog and one-call commands: same answers as the CLI, typed values,
the seeds' numbers."""

import json

import pytest

import napkin
from napkin.errors import NapkinError


def test_describe_model_matches_cli_and_published_counts(cli):
    r = napkin.describe_model("qwen3-8b")
    assert r.value.name == "qwen3-8b"
    assert r.data["params"] == 8_190_735_360  # Qwen3-8B config.json, counted by hand in tests/cli
    assert r.data["kv_bytes_per_token"] == 2 * 36 * 8 * 128 * 2
    _, out, _ = cli("model", "qwen3-8b", "--format", "json")
    assert r.data == json.loads(out)


def test_decode_table_task_2(cli):
    """Question bank task 2: Qwen3-8B BF16 on a 32 GB RTX 4080, 4,096-token contexts."""
    r = napkin.decode_table("qwen3-8b", gpu="rtx-4080", gpu_mem_gb=32, batch=[1, 8, 16, 32],
                            context=4096)
    _, out, _ = cli("decode", "qwen3-8b", "--gpu", "rtx-4080", "--gpu-mem-gb", "32",
                    "--batch", "1,8,16,32", "--context", "4096", "--format", "json")
    assert r.data == json.loads(out)
    rows = r.value.rows
    assert [row.batch for row in rows] == [1, 8, 16, 32]
    # KV of one 4,096-token sequence: 4096 · 147,456 B = 0.604 GB
    assert rows[0].kv_bytes == pytest.approx(4096 * 147_456)


def test_call_chain_matches_cli(cli):
    r = napkin.call("qwen3-8b", new=2048, cached=6144, gen=4, gpu="h100-sxm")
    _, out, _ = cli("call", "qwen3-8b", "--new", "2048", "--cached", "6144", "--gen", "4",
                    "--gpu", "h100-sxm", "--format", "json")
    assert r.data == json.loads(out)
    assert r.value["chain"] is not None
    # 1 prefill + 3 decode steps: e2e = TTFT + 3 TPOT
    c = r.value["chain"]
    assert c.e2e_s == pytest.approx(c.ttft_s + 3 * c.tpot_s)


def test_capacity_and_moe_match_cli(cli):
    r = napkin.capacity("llama-3.1-70b", gpu="rtx-4080", gpu_mem_gb=32, count=4,
                        weights="int4-g128", context=32768, avg_context=4096, reserve_gb=2)
    _, out, _ = cli("capacity", "llama-3.1-70b", "--gpu", "rtx-4080", "--gpu-mem-gb", "32",
                    "--count", "4", "--weights", "int4-g128", "--context", "32768",
                    "--avg-context", "4096", "--reserve-gb", "2", "--format", "json")
    assert r.data == json.loads(out)
    m = napkin.moe("qwen3-30b-a3b", gpu="rtx-4080", weights="q4_k_m", batch=[1, 4])
    _, out, _ = cli("moe", "qwen3-30b-a3b", "--gpu", "rtx-4080", "--weights", "q4_k_m",
                    "--batch", "1,4", "--format", "json")
    assert m.data == json.loads(out)


def test_renderings_and_errors():
    r = napkin.describe_model("qwen3-8b")
    assert r.to_table().startswith(r.title)
    assert r.to_markdown().startswith(f"# {r.title}")
    html = r._repr_html_()
    assert html.startswith('<div class="napkin-result">') and "<table>" in html
    assert json.loads(r.to_json()) == r.data
    with pytest.raises(NapkinError, match=r"^new: must be >= 1"):
        napkin.call("qwen3-8b", new=0)
    with pytest.raises(NapkinError, match=r"^batch:"):
        napkin.decode_table("qwen3-8b", gpu="h100-sxm", batch=[0])
    with pytest.raises(NapkinError, match=r"^plot:"):
        r.plot("x.png")


def test_decode_crossover_by_hand():
    """Qwen3-8B BF16 on an H100 SXM at context 1: a step reads W = 15.14 GB of weights (all but
    the embedding) and does F = 2·7.57e9 = 15.14 GFLOP per sequence, plus 2·147,456 B of KV per
    sequence (read one token, write one). Compute-bound when B·F/peak ≥ (W + B·kv)/BW, i.e.
    B ≥ W·r / (F − kv·r) with r = 989.4e12 / 3.35e12 = 295.3 FLOP/B: B ≥ 297.0."""
    r = napkin.decode_table("qwen3-8b", gpu="h100-sxm", batch=[1, 512], context=1)
    assert r.value.compute_bound_batch in (297, 298)  # attention FLOPs add a few
    assert r.data["compute_bound_batch"] == r.value.compute_bound_batch
    assert [row.step.bound for row in r.value.rows] == ["memory", "compute"]
    # at 4,096 tokens each sequence's KV (0.6 GB per step) outweighs its 15 GFLOP: never
    assert napkin.decode_table("qwen3-8b", gpu="h100-sxm", context=4096
                               ).value.compute_bound_batch is None
