"""Decode tables (task 2) and serving capacity (task 3), by hand."""

import math

import pytest

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.inference.capacity import capacity
from napkin.inference.decode import decode_table
from napkin.specs.hardware import override
from napkin.timing.roofline import Deployment

KV_TOKEN = 2 * 36 * 8 * 128 * 2  # Qwen3-8B: 147,456 B
QWEN_BYTES = 8_190_735_360 * 2


def test_task_2_table_by_hand(qwen3_8b):
    acc = override(load_accelerator("rtx-4080"), mem_gb=32)
    table = decode_table(Deployment(qwen3_8b, acc, Precision.of(read_embedding=True)),
                         [1, 8, 16, 32], context=4096)
    for row in table.rows:
        b = row.batch
        held = QWEN_BYTES + b * 4096 * KV_TOKEN
        read = QWEN_BYTES + b * 4096 * KV_TOKEN + b * KV_TOKEN
        assert row.memory_bytes == held
        assert row.step.memory_s == pytest.approx(read / 716.8e9)
        assert row.step_s == row.step.memory_s  # memory-bound at every batch here
        assert row.tokens_per_s == pytest.approx(b / row.step_s)
        assert row.fits == (held <= 32e9)
    # question bank task 2: 23.7 ms / 42 tok/s at batch 1, batch 32 does not fit in 32 GB
    assert table.rows[0].step_s * 1e3 == pytest.approx(23.7, abs=0.05)
    assert [r.fits for r in table.rows] == [True, True, True, False]


def test_chapter_convention_step(qwen3_8b):
    # Example 3-1: 64 sequences at 2,742 tokens on 1,792 GB/s: 22.89 ms
    dep = Deployment(qwen3_8b, load_accelerator("rtx-pro-6000"), Precision.of())
    row = decode_table(dep, [64], 2742).rows[0]
    assert row.step_s * 1e3 == pytest.approx(22.89, abs=0.005)


def test_task_3_capacity_by_hand():
    model = load_model("llama-3.1-70b")
    acc = override(load_accelerator("rtx-4080"), mem_gb=32)
    cap = capacity(Deployment(model, acc, Precision.of("int4-g128")), devices=4, context=32_768,
                   avg_context=4096, reserve_bytes_per_device=2e9)
    weights = 70_553_706_496 * 4.125 / 8
    kv_user = 2 * 80 * 8 * 128 * 2 * 32_768  # 10 GiB
    budget = 4 * 32e9 - 4 * 2e9 - weights
    assert cap.weights_bytes == pytest.approx(weights)
    assert cap.kv_bytes_per_user == kv_user == 10 * 2**30
    assert cap.users == math.floor(budget / kv_user) == 7
    assert cap.users_avg == math.floor(budget / (kv_user / 8))


def test_capacity_counts_kv_heads_replicated_over_the_devices():
    """DeepSeek-V3 FP8 on 8 × H200 at 32K: MLA's latent cache (61 layers × 576 × 2 B per
    token) sits whole on every device, so each user's KV is held 8 times; Llama-3.1-70B on 4
    devices (8 KV heads) holds it once, as in task 3 above."""
    model, acc = load_model("deepseek-v3"), load_accelerator("h200")
    cap = capacity(Deployment(model, acc, Precision.of("fp8")), devices=8, context=32_768)
    kv_user = 61 * 576 * 2 * 32_768
    assert cap.kv_bytes_per_user == kv_user and cap.kv_replicas == 8
    assert cap.users == math.floor(cap.kv_budget_bytes / (8 * kv_user))
    llama = capacity(Deployment(load_model("llama-3.1-70b"), acc, Precision.of("fp8")), 4,
                     32_768)
    assert llama.kv_replicas == 1


def test_capacity_refuses_bad_input(qwen3_8b, h100):
    dep = Deployment(qwen3_8b, h100, Precision.of())
    with pytest.raises(NapkinError, match="count"):
        capacity(dep, 0, 1000)
    with pytest.raises(NapkinError, match="max_position_embeddings"):
        capacity(dep, 1, 100_000)
    with pytest.raises(NapkinError, match="avg-context"):
        capacity(dep, 1, 1000, avg_context=2000)
    with pytest.raises(NapkinError, match="batch"):
        decode_table(dep, [0], 100)
