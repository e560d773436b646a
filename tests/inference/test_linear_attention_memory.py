"""Decode tables and serving capacity of a linear-attention hybrid (Qwen3-Next-80B-A3B), by hand:
each sequence holds KV for the 12 attention layers and a fixed state for the 36 Gated DeltaNet
layers."""

import math

import pytest

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.inference.capacity import capacity
from napkin.inference.decode import decode_table
from napkin.timing.roofline import Deployment

KV_TOKEN = 12 * 2 * 2 * 256 * 2  # 12 layers × (K, V) × 2 KV heads × 256 × BF16 = 24,576 B
STATE = 36 * (32 * 128 * 128 * 4 + 8192 * 3 * 2)  # FP32 recurrent + BF16 conv = 77,266,944 B
# weights: 79,674,391,296 parameters (tests/specs/test_qwen3_next.py) in BF16
WEIGHTS = 79_674_391_296 * 2


def _dep() -> Deployment:
    return Deployment(load_model("qwen3-next-80b-a3b"), load_accelerator("h200"), Precision.of())


def test_decode_holds_kv_and_state_and_moves_the_state_each_step():
    table = decode_table(_dep(), [1, 16], context=8192)
    for row in table.rows:
        b = row.batch
        assert row.kv_bytes == b * 8192 * KV_TOKEN
        assert row.state_bytes == b * STATE == b * 77_266_944
        assert row.memory_bytes == WEIGHTS + b * (8192 * KV_TOKEN + STATE)
        # bytes moved besides the weights: KV read for 8,192 tokens and written for the new
        # one, the state read and written once
        assert row.bytes_moved - row.weight_bytes_read == b * (8193 * KV_TOKEN + 2 * STATE)


def test_capacity_counts_one_state_per_user():
    cap = capacity(_dep(), devices=2, context=32_768)
    assert cap.kv_bytes_per_user == 32_768 * KV_TOKEN == 805_306_368
    assert cap.state_bytes_per_user == STATE
    # 2 × 141 GB − weights, over KV (2 KV heads on 2 devices: one copy) plus state per user
    budget = 2 * 141e9 - WEIGHTS
    assert cap.kv_budget_bytes == pytest.approx(budget)
    assert cap.users == math.floor(budget / (805_306_368 + 77_266_944)) == 138
    # at 4 devices the 2 KV heads are copied twice; the state (heads split 4 ways) is not
    cap4 = capacity(_dep(), devices=4, context=32_768)
    assert cap4.kv_replicas == 2
    assert cap4.users == math.floor((4 * 141e9 - WEIGHTS) / (2 * 805_306_368 + STATE))
