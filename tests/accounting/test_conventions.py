"""The chapter's accounting conventions (DESIGN.md), each pinned by a hand derivation or a
figure printed in chapter 3."""

import pytest

from napkin.accounting import Batch, Precision, Segment, backward, forward
from napkin.accounting.batch import causal_pairs
from napkin.specs.modules import OpKind

BF16 = Precision.of()
# Qwen3-8B geometry (config.json): h 4096, 36 layers, 32 heads × 128, 8 KV heads, FFN 12288,
# vocab 151936, untied head.
H, L, HEADS, KV, D, FFN, V = 4096, 36, 32, 8, 128, 12288, 151_936
LINEAR_MACS_PER_TOKEN = L * (H * HEADS * D + 2 * H * KV * D + HEADS * D * H + 3 * H * FFN)
HEAD_MACS = H * V


def test_one_multiply_add_is_two_flops(qwen3_8b):
    # one new token, no context, head at the one position: projections + FFN + head, and the
    # attention of the token with itself (1 pair): QK 2·1·32·128, AV the same, per layer.
    cost = forward(qwen3_8b, Batch.uniform(0, 1), BF16)
    attention = 2 * (2 * 1 * HEADS * D) * L
    assert cost.flops == 2 * LINEAR_MACS_PER_TOKEN + 2 * HEAD_MACS + attention


def test_causal_pairs_include_the_diagonal():
    assert causal_pairs(0, 4) == 10  # 4·5/2
    assert causal_pairs(6144, 2048) == 2048 * 6144 + 2048 * 2049 // 2
    # §3.4.2: documents 4096 + 4096 vs 7168 + 1024 packed without cross-document attention
    assert causal_pairs(0, 4096) * 2 == 16_781_312
    assert causal_pairs(0, 7168) + causal_pairs(0, 1024) == 26_218_496


def test_attention_flops_per_layer_match_chapter_3_4_2(qwen3_8b):
    # §3.4.2: QKᵀ + AV forward of one Qwen3-8B layer for two 4096-token documents: 0.275 TFLOPs
    cost = forward(qwen3_8b, Batch((Segment(0, 4096, 1, 2),)), BF16)
    per_layer = sum(op.flops for op in cost.ops if op.kind in (OpKind.ATTN_SCORE,
                                                                OpKind.ATTN_VALUE)) / L
    assert per_layer == 4 * 16_781_312 * HEADS * D
    assert per_layer / 1e12 == pytest.approx(0.275, abs=5e-4)


def test_lm_head_runs_only_at_readout_positions(qwen3_8b):
    prefill = forward(qwen3_8b, Batch.uniform(0, 1000, readout=1), BF16)
    decision = forward(qwen3_8b, Batch.uniform(0, 1000, readout=8), BF16)
    head = {c: next(op for op in c.ops if op.kind == OpKind.LM_HEAD) for c in (prefill, decision)}
    assert head[prefill].flops == 2 * HEAD_MACS
    assert head[decision].flops == 8 * 2 * HEAD_MACS
    assert decision.flops - prefill.flops == 7 * 2 * HEAD_MACS


def test_decode_reads_all_weights_but_the_embedding(qwen3_8b):
    # Example 3-1: "at least 15.14 GB of shared weights"; exactly (8,190,735,360 − 151,936·4096)·2
    step = forward(qwen3_8b, Batch.decode(2742, 64), BF16)
    assert step.weight_bytes == (8_190_735_360 - V * H) * 2 == 15_136_811_008
    napkin = forward(qwen3_8b, Batch.decode(2742, 64), Precision.of(read_embedding=True))
    assert napkin.weight_bytes == 8_190_735_360 * 2  # the question bank's 16.4 GB


def test_decode_reads_cached_kv_and_writes_the_new_token(qwen3_8b):
    kv_token = 2 * L * KV * D * 2  # 147,456 B
    step = forward(qwen3_8b, Batch.decode(2742, 64), BF16)
    assert step.kv_read_bytes == 64 * 2742 * kv_token
    assert step.kv_write_bytes == 64 * kv_token
    # Example 3-1: ≥ 41.02 GB moved per step
    assert step.bytes / 1e9 == pytest.approx(41.02, abs=0.005)


def test_prefill_writes_kv_of_new_tokens_and_reads_cached(qwen3_8b):
    kv_token = 2 * L * KV * D * 2
    cost = forward(qwen3_8b, Batch.uniform(6144, 2048), BF16)
    assert cost.kv_read_bytes == 6144 * kv_token
    assert cost.kv_write_bytes == 2048 * kv_token


def test_training_step_flops_match_chapter_3_4_3(qwen3_8b):
    # §3.4.3 / Figure 3-24: B = 1, P = 8192, head on every position, no recomputation
    fwd = forward(qwen3_8b, Batch.uniform(0, 8192, readout=8192), BF16)
    bwd = backward(qwen3_8b, fwd)
    assert fwd.flops / 1e12 == pytest.approx(143.789, abs=5e-4)
    assert bwd.flops / 1e12 == pytest.approx(287.579, abs=5e-4)
    assert (fwd.flops + bwd.flops) / 1e12 == pytest.approx(431.368, abs=5e-4)
    attention = sum(op.flops for op in fwd.ops + bwd.ops
                    if op.kind in (OpKind.ATTN_SCORE, OpKind.ATTN_VALUE))
    assert attention / 1e12 == pytest.approx(59.381, abs=5e-4)
    assert bwd.flops == 2 * fwd.flops  # backward of every matmul = 2× its forward


def test_head_on_labelled_positions_only_matches_chapter_3_4_3(qwen3_8b):
    # §3.4.3: 4,096 labelled tokens, head only there: 416.074 TFLOPs for forward + backward
    fwd = forward(qwen3_8b, Batch.uniform(0, 8192, readout=4096), BF16)
    total = fwd.flops + backward(qwen3_8b, fwd).flops
    assert total / 1e12 == pytest.approx(416.074, abs=5e-4)


def test_frozen_embedding_skips_first_layer_input_gradients(qwen3_8b):
    fwd = forward(qwen3_8b, Batch.uniform(0, 512, readout=512), BF16)
    full = backward(qwen3_8b, fwd).flops
    frozen = backward(qwen3_8b, fwd, frozen=("embed",)).flops
    # only layer 0's q, k, v projections (they read the embedding output) lose their dX
    qkv_layer0 = 2 * (H * HEADS * D + 2 * H * KV * D) * 512
    assert full - frozen == qkv_layer0


def test_only_head_trains(qwen3_8b):
    fwd = forward(qwen3_8b, Batch.uniform(0, 512, readout=512), BF16)
    bwd = backward(qwen3_8b, fwd, frozen=("embed", "attn/*", "mlp/*", "norms"))
    # nothing upstream trains: no dX anywhere; the head's dW only
    assert bwd.flops == 2 * HEAD_MACS * 512
    assert {op.kind for op in bwd.ops} == {OpKind.LM_HEAD}


def test_frozen_attention_keeps_dx_below_trainable_mlp(qwen3_8b):
    fwd = forward(qwen3_8b, Batch.uniform(0, 64, readout=64), BF16)
    bwd = backward(qwen3_8b, fwd, frozen=("embed", "attn/*", "norms"))
    dw = sum(op.flops for op in bwd.ops if op.pass_ == "backward-dw")
    dx = sum(op.flops for op in bwd.ops if op.pass_ == "backward-dx")
    assert dw == 2 * 64 * (L * 3 * H * FFN + HEAD_MACS)  # MLP and head weights train
    # dX: everything in layers 1..35 (they sit above layer 0's MLP) plus layer 0's down
    # projection (above its own gate/up) and the head
    per_layer_fwd = next(op for op in fwd.ops if op.name == "layers/mlp/down").flops / L
    layer_fwd = (fwd.flops - next(op for op in fwd.ops if op.kind == OpKind.LM_HEAD).flops) / L
    attn_fwd = sum(op.flops for op in fwd.ops
                   if op.kind in (OpKind.ATTN_SCORE, OpKind.ATTN_VALUE)) / L
    expected = (L - 1) * (layer_fwd + attn_fwd) + per_layer_fwd + 2 * 64 * HEAD_MACS
    assert dx == pytest.approx(expected)


def test_empty_batch_costs_nothing(qwen3_8b):
    assert forward(qwen3_8b, Batch.uniform(10, 0, readout=0), BF16).ops == ()
