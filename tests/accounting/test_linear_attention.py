"""Linear-attention (Gated DeltaNet) layers in the accounting: FLOPs per token, the fixed state
per sequence, no KV cache — hand-worked on Qwen3-Next-80B-A3B's geometry.

Qwen3-Next-80B-A3B: hidden h = 2,048; 36 Gated DeltaNet layers with Hk = 16 key heads and
Hv = 32 value heads of dk = dv = 128 and a 4-tap convolution; 12 gated-attention layers with
16 query heads and 2 KV heads of 256 (config.json). Per Gated DeltaNet layer and token
(transformers ``Qwen3NextGatedDeltaNet``, recurrent form ``torch_recurrent_gated_delta_rule``):

- in_proj_qkvz h → 2·Hk·dk + 2·Hv·dv = 12,288: 2·2,048·12,288 = 50,331,648 FLOPs;
- in_proj_ba h → 2·Hv = 64: 2·2,048·64 = 262,144 FLOPs;
- conv1d over conv_dim = 2·2,048 + 4,096 = 8,192 channels, 4 taps: 2·8,192·4 = 65,536 FLOPs;
- the delta rule per value head on its 128 × 128 state S: Sᵀk, the rank-1 update k·δᵀ and
  the output Sᵀq, one multiply-add per state entry each: 3·128·128 = 49,152 MACs a head, so
  6·128·128·32 = 3,145,728 FLOPs a token (Sᵀk and the update 2,097,152, the output
  1,048,576);
- out_proj Hv·dv = 4,096 → h: 2·4,096·2,048 = 16,777,216 FLOPs.

The state a sequence keeps per layer: 32·128·128 = 524,288 FP32 numbers (2,097,152 B) plus the
convolution's last 3 inputs of 8,192 channels, 24,576 numbers in the KV format (49,152 B in
BF16): 2,146,304 B, read and written once by each decode step whatever the context.
"""

import pytest

from napkin.accounting import Batch, Precision, Segment, forward
from napkin.accounting.linear import LinearCost
from napkin.accounting.ops import Op
from napkin.catalog import load_model
from napkin.serving.step import StepShape

MODEL = "qwen3-next-80b-a3b"
GDN_LAYERS, ATTN_LAYERS = 36, 12
STATE_PER_LAYER = 32 * 128 * 128 * 4 + 8192 * 3 * 2  # FP32 recurrent + BF16 conv
KV_PER_TOKEN = ATTN_LAYERS * 2 * 2 * 256 * 2  # K and V, 2 heads of 256, BF16: 24,576 B


def _ops(batch: Batch, precision: Precision | None = None) -> dict[str, Op]:
    cost = forward(load_model(MODEL), batch, precision or Precision.of())
    return {op.name: op for op in cost.ops}


def test_one_gdn_layer_per_decode_token_by_hand():
    ops = _ops(Batch.decode(4096))
    n = GDN_LAYERS
    assert ops["moe-gdn/attn/in_proj_qkvz"].flops == n * 2 * 2048 * 12_288 == n * 50_331_648
    assert ops["moe-gdn/attn/in_proj_ba"].flops == n * 262_144
    assert ops["moe-gdn/attn/conv1d"].flops == n * 2 * 8192 * 4 == n * 65_536
    update, output = ops["moe-gdn/attn/state_update"], ops["moe-gdn/attn/state_output"]
    assert update.flops == n * 2 * 2 * 32 * 128 * 128 == n * 2_097_152  # Sᵀk and k·δᵀ
    assert output.flops == n * 2 * 32 * 128 * 128 == n * 1_048_576  # Sᵀq
    assert (update.flops + output.flops) / n == 6 * 128 * 128 * 32 == 3_145_728
    assert ops["moe-gdn/attn/out_proj"].flops == n * 16_777_216
    # the state: read and written once per sequence, nothing per cached token
    assert STATE_PER_LAYER == 2_097_152 + 49_152 == 2_146_304
    assert update.kv_read_bytes == update.kv_write_bytes == n * STATE_PER_LAYER
    assert output.kv_read_bytes == output.kv_write_bytes == 0
    assert "moe-gdn/attn/scores" not in ops and "moe-gdn/attn/values" not in ops


def test_decode_state_traffic_does_not_grow_with_context():
    short, long = _ops(Batch.decode(1_000, 8)), _ops(Batch.decode(100_000, 8))
    state = 8 * GDN_LAYERS * STATE_PER_LAYER  # 8 sequences: 618,135,552 B each way
    assert short["moe-gdn/attn/state_update"].kv_read_bytes == state == 618_135_552
    assert long["moe-gdn/attn/state_update"].kv_read_bytes == state
    # the attention layers' KV read grows with the context: 99,000 more tokens × 24,576 B
    kv = sum(long[k].kv_read_bytes - short[k].kv_read_bytes
             for k in ("moe/attn/scores", "moe/attn/values"))
    assert kv == 8 * 99_000 * KV_PER_TOKEN


def test_fresh_prompt_writes_the_state_a_later_chunk_reads_and_writes():
    fresh = _ops(Batch((Segment(0, 512, 1),)))["moe-gdn/attn/state_update"]
    assert (fresh.kv_read_bytes, fresh.kv_write_bytes) == (0, GDN_LAYERS * STATE_PER_LAYER)
    chunk = _ops(Batch((Segment(512, 512, 1),)))["moe-gdn/attn/state_update"]
    assert chunk.kv_read_bytes == chunk.kv_write_bytes == GDN_LAYERS * STATE_PER_LAYER
    # prefill FLOPs of the recurrence: the same per-token rate (recurrent form)
    assert fresh.flops == 512 * GDN_LAYERS * 2_097_152


def test_state_takes_fp32_recurrent_and_kv_format_conv_bytes():
    ops = _ops(Batch.decode(10), Precision.of(kv="fp8"))
    per_layer = 32 * 128 * 128 * 4 + 8192 * 3 * 1  # the conv state in FP8: 1 byte a number
    assert ops["moe-gdn/attn/state_update"].kv_write_bytes == GDN_LAYERS * per_layer


def test_decode_step_bytes_by_hand():
    """A decode step of 4 sequences at 2,000 cached tokens: KV read for 2,000 tokens of the 12
    attention layers and written for the new token, the state read and written once."""
    cost = forward(load_model(MODEL), Batch.decode(2_000, 4), Precision.of())
    kv = 4 * (2_000 * KV_PER_TOKEN + KV_PER_TOKEN)
    state = 4 * 2 * GDN_LAYERS * STATE_PER_LAYER  # 618,135,552 B
    assert cost.kv_read_bytes + cost.kv_write_bytes == kv + state == 196_706_304 + 618_135_552
    # attention FLOPs: the delta rule per token plus scores/values over 2,001 keys
    attention = 4 * (GDN_LAYERS * 3_145_728 + ATTN_LAYERS * 2 * 2 * 16 * 256 * 2_001)
    assert cost.parts[1] == attention


@pytest.mark.parametrize("precision", [Precision.of(), Precision.of("fp8", "fp8"),
                                       Precision.of("nvfp4", "fp8", True, "attention,lm-head")])
def test_simulator_shortcuts_equal_forward(precision):
    """decode_parts and step_parts (the simulator's) move each sequence's state as forward()
    does: decodes read and write it, a fresh chunk writes it, a later chunk reads and writes."""
    model = load_model(MODEL)
    cost = LinearCost.of(model, precision)
    n_dec, sum_ctx = 5, 5 * 300
    chunks = [(0, 700, 1), (1200, 64, 0), (40, 1, 1)]
    got = cost.step_parts(n_dec, sum_ctx, chunks)
    assert got == cost.parts(StepShape(n_dec, sum_ctx, chunks))
    assert cost.decode_parts(n_dec, sum_ctx) == cost.parts(StepShape(n_dec, sum_ctx, []))
    segs = tuple(Segment(c, n, o) for c, n, o in chunks) + (Segment(300, 1, 1),) * n_dec
    exact = forward(model, Batch(segs), precision).parts
    for g, want in zip(got, exact, strict=True):
        assert g == pytest.approx(want, rel=1e-12)
    # the state: 36 × (524,288 FP32 + 24,576 conv numbers in the KV format)
    kvb = precision.kv.bytes_per_element
    assert cost.state_bytes == GDN_LAYERS * (2_097_152 + 24_576 * kvb)
    # a fresh 700-token prompt writes its KV and its state once, reads neither
    fresh = cost.step_parts(0, 0, [(0, 700, 1)])
    assert fresh[3] == pytest.approx(700 * KV_PER_TOKEN * kvb / 2 + cost.state_bytes)
