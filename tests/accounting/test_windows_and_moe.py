"""Sliding windows and MoE routing against brute force."""

import itertools
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from napkin.accounting import Batch, Precision, forward
from napkin.accounting.batch import cached_read, causal_pairs
from napkin.accounting.forward import experts_touched
from napkin.catalog import load_model


@given(st.integers(0, 300), st.integers(0, 300), st.one_of(st.none(), st.integers(1, 200)))
def test_pairs_match_brute_force(cached, new, window):
    brute = sum(min(cached + i + 1, window or 10**9) for i in range(new))
    assert causal_pairs(cached, new, window) == brute


@given(st.integers(0, 500), st.integers(1, 300))
def test_window_layers_read_at_most_w_minus_one_cached(cached, window):
    assert cached_read(cached, window) == min(cached, window - 1)
    assert cached_read(cached) == cached


def test_experts_touched_matches_exact_enumeration():
    # E = 4 experts, top-2, 3 tokens: average the distinct experts over all C(4,2)^3 routings
    e, k, t = 4, 2, 3
    choices = list(itertools.combinations(range(e), k))
    total = sum(len(set().union(*route)) for route in itertools.product(choices, repeat=t))
    exact = Fraction(total, len(choices) ** t)
    assert abs(experts_touched(e, k, t) - float(exact)) < 1e-12
    assert experts_touched(e, k, 0) == 0


def test_task_5_touched_shares():
    # question bank task 5: 1 − (15/16)^B = 23%, 64%, 98% at B = 4, 16, 64
    for b, pct in ((4, 23), (16, 64), (64, 98)):
        assert round(100 * experts_touched(128, 8, b) / 128) == pct


def test_moe_weight_bytes_grow_with_touched_experts():
    model = load_model("qwen3-30b-a3b")
    p = Precision.of()
    one = forward(model, Batch.decode(0, 1), p).weight_bytes
    many = forward(model, Batch.decode(0, 4096), p).weight_bytes
    # 48 layers × 128 experts × 3·2048·768 params × 2 B; batch 1 reads 8 of 128, 4096 ≈ all
    expert_bytes = 48 * 3 * 2048 * 768 * 2
    assert many - one == pytest.approx(expert_bytes * (128 - 8), rel=1e-9)


def test_gpt_oss_sliding_layers_hold_only_the_window():
    model = load_model("gpt-oss-120b")
    per_layer = 2 * 8 * 64 * 2  # K and V, 8 KV heads × 64, BF16
    # 18 full layers hold every token; 18 sliding layers hold at most 128
    assert model.kv_bytes(100, 2) == 36 * 100 * per_layer
    assert model.kv_bytes(10_000, 2) == (18 * 10_000 + 18 * 128) * per_layer
    assert model.kv_bytes_per_token(2) == 18 * per_layer
    step = forward(model, Batch.decode(10_000, 1), Precision.of())
    assert step.kv_read_bytes == (18 * 10_000 + 18 * 127) * per_layer


def test_mla_decode_attends_in_latent_space_and_prefill_decompresses():
    model = load_model("deepseek-v3")
    p = Precision.of()
    heads, layers, latent, rope, nope, v = 128, 61, 512, 64, 128, 128
    step = forward(model, Batch.decode(4096, 1), p)
    scores = sum(op.flops for op in step.ops if op.module == "attn/scores")
    values = sum(op.flops for op in step.ops if op.module == "attn/values")
    # one decode token sees 4097 keys: "MQA with a 576-wide head" (question bank q15)
    assert scores == 2 * 4097 * heads * (latent + rope) * layers
    assert values == 2 * 4097 * heads * latent * layers
    # a 512-token prefill on 4096 cached: decompress the cached latents through kv_b,
    # then attend per head with 192-wide keys and 128-wide values
    pre = forward(model, Batch.uniform(4096, 512), p)
    decompress = sum(op.flops for op in pre.ops if op.module == "attn/kv_b_cached")
    assert decompress == 2 * 4096 * latent * heads * (nope + v) * layers
    pairs = 512 * 4096 + 512 * 513 // 2
    assert sum(op.flops for op in pre.ops if op.module == "attn/scores") == (
        2 * pairs * heads * (nope + rope) * layers)
    # the KV read is the latent either way: 576 numbers per token per layer
    assert step.kv_read_bytes == 4096 * (latent + rope) * 2 * layers
