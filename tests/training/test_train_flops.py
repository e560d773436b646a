"""Training FLOPs: the chapter's figures, the gap to 6ND adding up, recompute, LoRA, MoE."""

import pytest

from napkin.catalog import load_model
from napkin.errors import NapkinError
from napkin.specs.lora import LORA_ONLY, adapter_params, lora_params, with_lora
from napkin.training.flops import TrainShape, train_flops

T = 1e12


def test_chapter_3_4_3(qwen3_8b):
    step = train_flops(qwen3_8b, TrainShape((8192,)))
    # Figure 3-24: 143.789 / 287.579 / 431.368 TFLOPs, attention 59.381, 6ND 402.591
    assert step.forward.flops / T == pytest.approx(143.789, abs=5e-4)
    assert step.backward.flops / T == pytest.approx(287.579, abs=5e-4)
    assert step.micro_batch_flops / T == pytest.approx(431.368, abs=5e-4)
    assert step.attention_flops / T == pytest.approx(59.381, abs=5e-4)
    assert step.six_nd_flops == 6 * 8_190_735_360 * 8192
    # the gap: +attention − 6·(151,936·4,096)·8,192 for the embedding − norms
    assert step.gap.embedding_flops == -6 * 151_936 * 4096 * 8192
    assert step.gap.non_matmul_flops == -6 * (36 * (2 * 4096 + 2 * 128) + 4096) * 8192
    assert step.micro_batch_flops - step.six_nd_flops == pytest.approx(step.gap.total_flops)


def test_head_on_labelled_positions(qwen3_8b):
    step = train_flops(qwen3_8b, TrainShape((8192,), labels=4096, head="labelled"))
    assert step.micro_batch_flops / T == pytest.approx(416.074, abs=5e-4)
    # masking the loss alone changes nothing
    masked = train_flops(qwen3_8b, TrainShape((8192,), labels=4096, head="all"))
    assert masked.micro_batch_flops / T == pytest.approx(431.368, abs=5e-4)
    assert step.gap.head_skipped_flops == -6 * 151_936 * 4096 * 4096


@pytest.mark.parametrize("model_id", ["qwen3-0.6b", "qwen3-30b-a3b", "deepseek-v3",
                                      "gpt-oss-20b", "mixtral-8x7b"])
def test_gap_adds_up_for_every_family(model_id):
    model = load_model(model_id)
    step = train_flops(model, TrainShape((700, 300), micro_batch=2, labels=200, head="labelled",
                                         recompute="selective"), frozen=("embed", "attn/*"))
    assert step.micro_batch_flops - step.six_nd_flops == pytest.approx(
        step.gap.total_flops, rel=1e-12)


def test_recompute_adds_forward_work_back(qwen3_8b):
    none = train_flops(qwen3_8b, TrainShape((4096,)))
    full = train_flops(qwen3_8b, TrainShape((4096,), recompute="full"))
    selective = train_flops(qwen3_8b, TrainShape((4096,), recompute="selective"))
    head = 2 * 4096 * 151_936 * 4096
    assert full.micro_batch_flops - none.micro_batch_flops == pytest.approx(
        none.forward.flops - head)  # every layer's forward again, not the head
    assert selective.recompute_flops == pytest.approx(none.attention_flops / 3)


def test_update_arithmetic():
    shape = TrainShape((4096,), micro_batch=2, accumulation=8, labels=1024)
    # Exercise 3-6: a·B_μ·P = 8·2·4,096 = 65,536 tokens; a·B_μ·P_label = 16,384 labels
    assert (shape.tokens_per_update, shape.labels_per_update) == (65_536, 16_384)


def test_lora_adapters_are_modules(qwen3_8b):
    model = with_lora(qwen3_8b, 8, ("attn/q",))
    assert lora_params(model) == 36 * adapter_params(4096, 4096, 8) == 36 * 65_536
    step = train_flops(model, TrainShape((1024,)), frozen=LORA_ONLY)
    # only adapters train: dW of A and B only; dX flows from layer 0's adapter upward
    dw = sum(op.flops for op in step.backward.ops if op.pass_ == "backward-dw")
    assert dw == 36 * 2 * 1024 * (4096 * 8 + 8 * 4096)
    with pytest.raises(NapkinError, match="match no linear"):
        with_lora(qwen3_8b, 8, ("nope/*",))


def test_moe_counts_chosen_experts():
    model = load_model("qwen3-30b-a3b")
    step = train_flops(model, TrainShape((512,)))
    expert = sum(op.flops for op in step.forward.ops if op.kind == "expert")
    # 48 layers × 8 chosen experts × 3 matmuls of 2048 × 768 per token
    assert expert == 2 * 512 * 48 * 8 * 3 * 2048 * 768


def test_shape_validation():
    with pytest.raises(NapkinError, match="labels"):
        TrainShape((100,), labels=200)
    with pytest.raises(NapkinError, match="recompute"):
        TrainShape((100,), recompute="some")
