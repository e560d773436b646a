"""Llama 4 Scout and Maverick (napkin.specs.llama4): parameters against the model cards and the
published checkpoint totals, layer placement, chunked attention read as windows.

Every expected number is a published figure (source next to it) or a hand derivation from the
config.json shapes (src/napkin/catalog/models/llama-4-*.json) written out below.
"""

import json
from importlib import resources

import pytest

from napkin.accounting import Batch, Precision, forward
from napkin.catalog import load_model
from napkin.errors import NapkinError
from napkin.specs.hf_config import from_hf_config

# text_config of both: hidden 5120, 48 layers, 40 query heads and 8 KV heads of 128, experts
# and shared expert of intermediate_size 8192, dense MLP of intermediate_size_mlp 16384,
# vocab 202,048, untied head; Scout 16 experts every layer, Maverick 128 experts every 2nd.
H, LAYERS, VOCAB = 5120, 48, 202_048
ATTN = H * 40 * 128 + 2 * H * 8 * 128 + 40 * 128 * H  # q, k, v, o; no biases
EXPERT = 3 * H * 8192  # gate, up (gate_up_proj) and down of one SwiGLU expert
DENSE_MLP = 3 * H * 16384
NORMS = 2 * H  # input and post-attention RMSNorms; Scout's q/k L2 norms have no weight
EMBED_AND_HEAD = 2 * VOCAB * H


def _moe_layer(experts: int, used: int) -> int:
    """Attention, router (h → E, no bias), one shared expert, ``used`` routed experts, norms."""
    return ATTN + H * experts + EXPERT + used * EXPERT + NORMS


def _vision_tower() -> int:
    """Llama4VisionModel + multi_modal_projector from vision_config (identical in both):
    hidden 1408, 34 layers, 16 heads, MLP 5632, 336-pixel images in 14-pixel patches,
    pixel-shuffle adapter to projector dims 4096, projector 4096 → text hidden 5120."""
    d, inner = 1408, 5632
    layer = (4 * (d * d + d)  # q, k, v, o with biases
             + (d * inner + inner) + (inner * d + d)  # fc1, fc2 with biases
             + 2 * 2 * d)  # two LayerNorms, weight and bias
    patches = (336 // 14) ** 2 + 1  # plus the class token
    model = (3 * 14 * 14 * d  # patch embedding (unfold + linear, no bias)
             + d + patches * d  # class embedding, positional embedding
             + 2 * 2 * d  # layernorm_pre, layernorm_post
             + 34 * layer
             + inner * 4096 + 4096 * 4096)  # vision_adapter fc1 (5632 → 4096), fc2
    return model + 4096 * H  # multi_modal_projector.linear_1, no bias


VISION = 871_932_416


def test_vision_tower_by_hand():
    assert _vision_tower() == VISION


def test_scout_params_by_hand():
    scout = load_model("llama-4-scout")
    total = LAYERS * _moe_layer(16, 16) + H + EMBED_AND_HEAD
    assert scout.params == total == 107_769_861_120
    active = LAYERS * _moe_layer(16, 1) + H + EMBED_AND_HEAD
    assert scout.active_params == active == 17_172_894_720


def test_maverick_params_by_hand():
    maverick = load_model("llama-4-maverick")
    dense = ATTN + DENSE_MLP + NORMS
    total = 24 * dense + 24 * _moe_layer(128, 128) + H + EMBED_AND_HEAD
    assert maverick.params == total == 400_711_848_960
    active = 24 * dense + 24 * _moe_layer(128, 1) + H + EMBED_AND_HEAD
    assert maverick.active_params == active == 17_184_691_200


@pytest.mark.parametrize(("model_id", "checkpoint_total"), [
    # meta-llama/Llama-4-Scout-17B-16E-Instruct: HF API safetensors total 108,641,793,536
    # (quoted in several repositories' model tables)
    ("llama-4-scout", 108_641_793_536),
    # Llama 4 Maverick: parameter_count 401,583,781,376 (Fireworks billing export example;
    # a model-landscape test of the HF checkpoint)
    ("llama-4-maverick", 401_583_781_376),
])
def test_language_model_plus_vision_tower_is_the_checkpoint(model_id, checkpoint_total):
    assert load_model(model_id).params + VISION == checkpoint_total


@pytest.mark.parametrize(("model_id", "card_total"), [
    ("llama-4-scout", 109e9),  # model card: "17B active, 109B total"
    ("llama-4-maverick", 400e9),  # model card: "17B active, 400B total"
])
def test_cards_within_the_vision_tower(model_id, card_total):
    # The cards count the vision tower (0.87 B) in the total: the language model alone is the
    # card total minus the tower, to the card's rounding (Scout 109 B to 0.5 B; Maverick's
    # "400B" is 401.58 B rounded to 10 B). napkin counts the language model only.
    spec = load_model(model_id)
    rounding = 0.5e9 if model_id == "llama-4-scout" else 5e9
    assert spec.params < card_total + rounding
    assert abs(card_total - (spec.params + VISION)) <= rounding
    assert card_total - spec.params <= VISION + rounding
    # "17B active": the language model's per-token parameters (the tower runs only on images)
    assert round(spec.active_params / 1e9) == 17


def test_moe_layers_and_shared_expert():
    scout, maverick = load_model("llama-4-scout"), load_model("llama-4-maverick")
    assert all(b.experts is not None for b in scout.blocks)  # interleave_moe_layer_step 1
    # step 2: layers 1, 3, …, 47 are MoE (range(step − 1, 48, step)), the even ones dense
    assert [i for i, b in enumerate(maverick.blocks) if b.experts] == list(range(1, 48, 2))
    moe, dense = maverick.blocks[1], maverick.blocks[0]
    assert moe.experts.num_experts == 128 and moe.experts.num_active == 1
    shared = {lin.name: (lin.in_features, lin.out_features) for lin in moe.linears
              if lin.name.startswith("moe/shared/")}
    assert shared == {"moe/shared/gate": (H, 8192), "moe/shared/up": (H, 8192),
                      "moe/shared/down": (8192, H)}
    assert {lin.name: lin.out_features for lin in dense.linears}["mlp/gate"] == 16384
    assert scout.blocks[0].norm_params == NORMS  # the L2 q/k norms have no parameters


def test_chunked_layers_read_as_windows():
    # no_rope_layers absent: layer i is NoPE (full attention) when (i + 1) % 4 == 0
    for model_id in ("llama-4-scout", "llama-4-maverick"):
        spec = load_model(model_id)
        full = [i for i, b in enumerate(spec.blocks) if b.window is None]
        assert full == list(range(3, 48, 4))
        assert {b.window for b in spec.blocks} == {8192, None}


def test_kv_by_hand():
    scout = load_model("llama-4-scout")
    per_layer = 2 * 8 * 128 * 2  # K and V, 8 heads of 128, BF16
    assert scout.kv_bytes_per_token(2) == 12 * per_layer  # past the window: the NoPE layers
    c = 1_048_576
    assert scout.kv_bytes(c, 2) == (36 * 8192 + 12 * c) * per_layer


def test_chunked_attention_is_bounded_by_the_window():
    # A 32,768-token prefill, 4 chunks of 8,192. Chunked attention: each chunk n(n+1)/2 pairs.
    # The window napkin uses: n(n+1)/2 for the first 8,192 tokens, then 8,192 keys per token —
    # an upper bound, 1.75× here, tending to 2× as the prompt grows.
    scout = load_model("llama-4-scout")
    ops = {op.name: op for op in forward(scout, Batch.uniform(0, 32_768), Precision.of()).ops}
    chunk = 8192
    chunked = 4 * chunk * (chunk + 1) // 2
    window = chunk * (chunk + 1) // 2 + 3 * chunk * chunk
    scores = ops["moe-swa8192/attn/scores"].flops
    assert scores == 2 * window * 40 * 128 * 36
    assert 1 < scores / (2 * chunked * 40 * 128 * 36) < 2


def _text_config(model_id: str, **changes) -> dict:
    path = resources.files("napkin.catalog").joinpath("models", f"{model_id}.json")
    return {**json.loads(path.read_text())["text_config"], **changes}


def test_flat_text_config_reads_as_the_nested_one():
    # A Llama4ForCausalLM checkpoint (text only) has the text_config's keys at the top level.
    flat = from_hf_config(_text_config("llama-4-maverick"), "flat")
    assert flat.params == load_model("llama-4-maverick").params


def test_explicit_layer_lists():
    # moe_layers and no_rope_layers given (as the Scout base checkpoint's config lists them)
    cfg = _text_config("llama-4-scout", moe_layers=[0, 2], no_rope_layers=[1, 0] * 24)
    spec = from_hf_config(cfg, "lists")
    assert [i for i, b in enumerate(spec.blocks) if b.experts] == [0, 2]
    assert [b.window for b in spec.blocks[:4]] == [8192, None, 8192, None]
    # newer configs: layer_types take precedence
    cfg = _text_config("llama-4-scout", layer_types=["full_attention"] * 48)
    assert all(b.window is None for b in from_hf_config(cfg, "types").blocks)
    # without attention_chunk_size every layer attends in full
    cfg = _text_config("llama-4-scout", attention_chunk_size=None)
    assert all(b.window is None for b in from_hf_config(cfg, "no-chunks").blocks)


def test_bad_llama4_field_named():
    with pytest.raises(NapkinError, match="interleave_moe_layer_step"):
        from_hf_config(_text_config("llama-4-scout", interleave_moe_layer_step=0), "bad")
