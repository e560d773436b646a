"""Kimi Delta Attention (KDA) layers in the accounting: FLOPs per token, the fixed state per
sequence, no KV cache — hand-worked on Kimi-Linear-48B-A3B's geometry.

Kimi-Linear-48B-A3B: hidden h = 2,304; 20 KDA layers with H = 32 heads of d = 128 (keys and
values) and 4-tap short convolutions; 7 MLA layers with 32 heads, kv_lora_rank 512,
qk_rope_head_dim 64 (config.json). Per KDA layer and token (vLLM ``KimiDeltaAttention``, the
recurrence of fla's ``naive_recurrent_kda``: ``S ← S·exp(g)`` per key channel, ``S += β·k ⊗
(v − kᵀS)``, ``o = qᵀS``):

- q_proj, k_proj, v_proj h → H·d = 4,096: 3 · 2·2,304·4,096 = 56,623,104 FLOPs;
- the decay's f_a_proj h → 128 and f_b_proj 128 → 4,096: 2·(294,912 + 524,288) = 1,638,400;
- the output gate's g_a_proj and g_b_proj: the same, 1,638,400;
- b_proj h → 32: 2·2,304·32 = 147,456;
- three short convolutions over 4,096 channels each, 4 taps: 2·12,288·4 = 98,304 FLOPs;
- the delta rule per head on its 128 × 128 state: kᵀS, the rank-1 update and qᵀS, one
  multiply-add per state entry each: 6·128·128·32 = 3,145,728 FLOPs a token (kᵀS and the update
  2,097,152, the output 1,048,576); the per-channel decay is one multiply per entry, elementwise
  and counted 0, as for Gated DeltaNet's per-head decay;
- o_proj 4,096 → h: 2·4,096·2,304 = 18,874,368 FLOPs.

The state a sequence keeps per layer: 32·128·128 = 524,288 FP32 numbers (2,097,152 B) plus the
three convolutions' last 3 inputs of 4,096 channels, 36,864 numbers in the KV format (73,728 B
in BF16): 2,170,880 B, read and written once by each decode step whatever the context.
"""

from napkin.accounting import Batch, Precision, Segment, forward
from napkin.accounting.linear import LinearCost
from napkin.accounting.ops import Op
from napkin.catalog import load_model
from napkin.serving.step import StepShape

MODEL = "kimi-linear-48b-a3b"
KDA_LAYERS, MLA_LAYERS = 20, 7
STATE_PER_LAYER = 32 * 128 * 128 * 4 + 3 * 4096 * 3 * 2  # FP32 recurrent + BF16 conv
KV_PER_TOKEN = MLA_LAYERS * (512 + 64) * 2  # one latent + rope key per MLA layer, BF16


def _ops(batch: Batch, precision: Precision | None = None) -> dict[str, Op]:
    cost = forward(load_model(MODEL), batch, precision or Precision.of())
    return {op.name: op for op in cost.ops}


def _kda(ops: dict[str, Op], name: str) -> float:
    """FLOPs of op ``name`` over all 20 KDA layers (layer 0 is dense, the 19 others MoE)."""
    return ops[f"dense-kda/attn/{name}"].flops + ops[f"moe-kda/attn/{name}"].flops


def test_kda_layers_per_decode_token_by_hand():
    ops = _ops(Batch.decode(4096))
    n = KDA_LAYERS
    assert ops["dense-kda/attn/q"].flops == 2 * 2304 * 4096 == 18_874_368  # one layer
    assert ops["moe-kda/attn/q"].flops == 19 * 18_874_368
    assert sum(_kda(ops, p) for p in ("q", "k", "v")) == n * 56_623_104
    assert sum(_kda(ops, p) for p in ("f_a", "f_b")) == n * 2 * (2304 * 128 + 128 * 4096)
    assert sum(_kda(ops, p) for p in ("g_a", "g_b")) == n * 1_638_400
    assert _kda(ops, "b") == n * 147_456
    assert _kda(ops, "conv1d") == n * 2 * 3 * 4096 * 4 == n * 98_304
    update, output = _kda(ops, "state_update"), _kda(ops, "state_output")
    assert update == n * 2 * 2 * 32 * 128 * 128 == n * 2_097_152  # kᵀS and the update
    assert output == n * 2 * 32 * 128 * 128 == n * 1_048_576  # qᵀS
    assert (update + output) / n == 6 * 32 * 128 * 128 == 3_145_728
    assert _kda(ops, "o") == n * 18_874_368
    # the state: read and written once per sequence, nothing per cached token
    assert STATE_PER_LAYER == 2_097_152 + 73_728 == 2_170_880
    kda_update = ops["moe-kda/attn/state_update"]
    assert kda_update.kv_read_bytes == kda_update.kv_write_bytes == 19 * STATE_PER_LAYER
    assert "moe-kda/attn/scores" not in ops and "moe/attn/scores" in ops  # the 7 MLA layers


def test_decode_step_bytes_by_hand():
    """A decode step of 4 sequences at 2,000 cached tokens: the 7 MLA layers' latent KV read for
    2,000 tokens and written for the new one, each KDA state read and written once."""
    cost = forward(load_model(MODEL), Batch.decode(2_000, 4), Precision.of())
    kv = 4 * (2_000 * KV_PER_TOKEN + KV_PER_TOKEN)
    state = 4 * 2 * KDA_LAYERS * STATE_PER_LAYER
    assert KV_PER_TOKEN == 8_064
    assert cost.kv_read_bytes + cost.kv_write_bytes == kv + state == 64_544_256 + 347_340_800
    # the state does not grow with the context
    longer = forward(load_model(MODEL), Batch.decode(200_000, 4), Precision.of())
    assert (longer.kv_read_bytes + longer.kv_write_bytes) - (kv + state) == \
        4 * 198_000 * KV_PER_TOKEN


def test_simulator_shortcuts_equal_forward():
    model, precision = load_model(MODEL), Precision.of("fp8", "fp8")
    cost = LinearCost.of(model, precision)
    n_dec, sum_ctx = 3, 3 * 500
    chunks = [(0, 300, 1), (800, 64, 0)]
    got = cost.step_parts(n_dec, sum_ctx, chunks)
    assert got == cost.parts(StepShape(n_dec, sum_ctx, chunks))
    segs = tuple(Segment(c, n, o) for c, n, o in chunks) + (Segment(500, 1, 1),) * n_dec
    exact = forward(model, Batch(segs), precision).parts
    for g, want in zip(got, exact, strict=True):
        assert abs(g - want) <= 1e-9 * max(abs(want), 1)
    # the state with an FP8 conv state: 20 × (524,288 · 4 + 36,864 · 1) bytes
    assert cost.state_bytes == KDA_LAYERS * (2_097_152 + 36_864) == 42_680_320
