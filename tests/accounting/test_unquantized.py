"""Parts a quantized checkpoint keeps in BF16 (``Precision.unquantized``): their bytes, their
matmuls' rate, and what the benchmark replays assume for the public checkpoints."""

import pytest

from napkin.accounting import Batch, Precision, forward
from napkin.accounting.forward import weight_bytes
from napkin.api import inference as api
from napkin.catalog import load_accelerator, load_model
from napkin.catalog.checkpoints import checkpoint_unquantized
from napkin.errors import NapkinError
from napkin.timing.efficiency import Efficiency
from napkin.timing.roofline import call_time

GiB = 2**30


@pytest.mark.parametrize(("model_id", "published_gib"), [
    # OpenAI's gpt-oss model card (arXiv:2508.10925, Table 1): checkpoint size 60.8 GiB
    # (gpt-oss-120b) and 12.8 GiB (gpt-oss-20b): MXFP4 experts, everything else BF16 (its
    # config.json's modules_to_not_convert: self_attn, mlp.router, embed_tokens, lm_head).
    ("gpt-oss-120b", 60.8),
    ("gpt-oss-20b", 12.8),
])
def test_gpt_oss_checkpoint_size_with_its_bf16_parts(model_id, published_gib):
    model = load_model(model_id)
    keeps = checkpoint_unquantized(model_id, "mxfp4")
    assert keeps == {"attention", "router", "embedding", "lm-head"}
    kept = weight_bytes(model, Precision.of("mxfp4", unquantized=keeps))
    assert kept / GiB == pytest.approx(published_gib, rel=0.002)
    # all-MXFP4 (napkin's convention without the scope) misses it by 5 % and 19 %
    assert weight_bytes(model, Precision.of("mxfp4")) / GiB < 0.96 * published_gib


def test_weight_bytes_hand_derivation_llama_nvfp4_with_bf16_head():
    # Llama-3.1-8B: lm_head 128,256 × 4,096 in BF16 (2 bytes), every other parameter NVFP4
    # (4 bits + one FP8 scale per 16 = 4.5 bits).
    model = load_model("llama-3.1-8b")
    head = 128_256 * 4_096
    want = (model.params - head) * 4.5 / 8 + head * 2
    got = weight_bytes(model, Precision.of("nvfp4", unquantized="lm-head"))
    assert got == pytest.approx(want, rel=1e-12)
    assert weight_bytes(model, Precision.of("nvfp4")) == pytest.approx(model.params * 4.5 / 8)


def test_unquantized_parts_change_nothing_at_16_bits():
    model = load_model("qwen3-8b")
    plain = Precision.of("bf16")
    scoped = Precision.of("bf16", unquantized="attention,lm-head")
    batch = Batch.uniform(0, 512, 2)
    assert weight_bytes(model, scoped) == weight_bytes(model, plain)
    assert forward(model, batch, scoped).parts == forward(model, batch, plain).parts
    assert forward(model, batch, scoped).sixteen_bit_flops == 0


def test_prefill_time_with_bf16_attention_on_b200_by_hand():
    """Llama-3.1-8B, one 8,192-token prefill on a B200 in NVFP4 with the attention projections
    in BF16, at the roofline ceiling: the projections (q 4096², k and v 4096×1024, o 4096² per
    layer, 32 layers: 1,342,177,280 weights, 2·W·8192 FLOPs) run at 2,250 TFLOP/s, every other
    FLOP at the FP4 rate 9,000."""
    model, b200 = load_model("llama-3.1-8b"), load_accelerator("b200")
    batch = Batch.uniform(0, 8192, 1)
    attention_weights = 32 * 4096 * (4096 + 1024 + 1024 + 4096)
    assert attention_weights == 1_342_177_280
    sixteen = 2 * attention_weights * 8192
    cost = forward(model, batch, Precision.of("nvfp4", unquantized="attention"))
    assert cost.sixteen_bit_flops == pytest.approx(sixteen, rel=1e-12)
    plain = forward(model, batch, Precision.of("nvfp4"))
    assert cost.flops == pytest.approx(plain.flops, rel=1e-12)  # the same FLOPs, another rate
    want = (cost.flops - sixteen) / 9000e12 + sixteen / 2250e12
    assert call_time(cost, b200, "fp4", Efficiency(1.0, 1.0)).compute_s == \
        pytest.approx(want, rel=1e-12)
    assert call_time(plain, b200, "fp4", Efficiency(1.0, 1.0)).compute_s == \
        pytest.approx(plain.flops / 9000e12, rel=1e-12)


def test_the_api_takes_the_parts_and_echoes_them():
    r = api.call("llama-3.1-8b", new=8192, gpu="b200", weights="nvfp4",
                 unquantized="attention", mfu=1.0, mbu=1.0)
    plain = api.call("llama-3.1-8b", new=8192, gpu="b200", weights="nvfp4", mfu=1.0, mbu=1.0)
    assert r.document.assumptions["unquantized"] == "attention"
    assert "unquantized" not in plain.document.assumptions
    extra = 2 * 1_342_177_280 * 8192 * (1 / 2250e12 - 1 / 9000e12)
    assert r.value["chain"].ttft_s - plain.value["chain"].ttft_s == pytest.approx(extra, rel=1e-9)


def test_checkpoint_names_what_the_catalog_models_checkpoint_keeps():
    from napkin.api.catalog import describe_model

    got = describe_model("gpt-oss-120b", weights="mxfp4", unquantized="checkpoint")
    assert got.document.inputs["unquantized"] == "attention,embedding,lm-head,router"
    assert got.document.data["weights_bytes"] / GiB == pytest.approx(60.71, abs=0.01)
    from importlib import resources

    path = str(resources.files("napkin.catalog").joinpath("models", "qwen3-8b.json"))
    with pytest.raises(NapkinError, match="unquantized: checkpoint needs a catalog model"):
        api.call(path, new=8, weights="nvfp4", unquantized="checkpoint")


@pytest.mark.parametrize("bad", ["attn", "attention,experts", "lm_head"])
def test_unknown_part_is_one_clear_error(bad):
    with pytest.raises(NapkinError, match=r"unquantized: .* allowed: a comma-separated subset "
                                          r"of attention, router"):
        Precision.of("nvfp4", unquantized=bad)


@pytest.mark.parametrize(("model_id", "weights", "keeps"), [
    # gpt-oss: its MXFP4 config (modules_to_not_convert), whatever FP4 label a row carries
    ("gpt-oss-120b", "nvfp4", {"attention", "router", "embedding", "lm-head"}),
    # MiniMax-M2.5's FP8 config: modules_to_not_convert gate, e_score_correction_bias, lm_head
    ("minimax-m2.5", "fp8", {"router", "lm-head"}),
    # Kimi-K2.5's INT4 (compressed-tensors) ignore list: lm_head, self_attn, shared_experts,
    # mlp.(gate|up|gate_up|down)_proj
    ("kimi-k2.5", "int4-g32", {"lm-head", "attention", "shared-experts", "dense-mlp"}),
    # NVIDIA's NVFP4 checkpoints (ModelOpt): MoE keeps head, attention, router; dense the head
    ("kimi-k2.5", "nvfp4", {"lm-head", "attention", "router"}),
    ("deepseek-r1", "nvfp4", {"lm-head", "attention", "router"}),
    ("llama-3.1-70b", "nvfp4", {"lm-head"}),
    # a config that declares no exclusions, and 16-bit weights: nothing
    ("deepseek-r1", "fp8", set()),
    ("qwen3-32b", "bf16", set()),
])
def test_what_the_public_checkpoints_keep_in_bf16(model_id, weights, keeps):
    assert checkpoint_unquantized(model_id, weights) == keeps


def test_serve_scenario_sizes_its_pool_with_the_bf16_parts():
    """``unquantized`` in a scenario: gpt-oss-120b in MXFP4 on one H200 holds 60.71 GiB of
    weights with its BF16 parts, not 57.80 GiB, and the KV pool shrinks by the difference."""
    from pathlib import Path

    from napkin.serving.scenario import Scenario, build

    def built(unquantized):
        return build(Scenario.model_validate({
            "model": "gpt-oss-120b", "gpu": "h200", "weights": "mxfp4",
            "unquantized": unquantized, "calibration": "roofline",
            "workload": {"classes": {"a": {"input_tokens": 100, "output_tokens": 10}},
                         "arrivals": {"kind": "poisson", "rate_per_s": 1.0,
                                      "num_requests": 2}}}), Path("."))
    kept, plain = built("attention,router,embedding,lm-head"), built(None)
    model = load_model("gpt-oss-120b")
    want = weight_bytes(model, Precision.of("mxfp4", unquantized=checkpoint_unquantized(
        "gpt-oss-120b", "mxfp4")))
    assert kept.pool_derivation["weights_bytes_per_device"] == pytest.approx(want)
    assert plain.pool_derivation["weights_bytes_per_device"] == \
        pytest.approx(weight_bytes(model, Precision.of("mxfp4")))
    assert kept.kv_pool_bytes < plain.kv_pool_bytes
    assert kept.precision.unquantized == {"attention", "router", "embedding", "lm-head"}


def test_a_hint_names_what_the_checkpoint_keeps_when_the_parts_are_not_given():
    from napkin.report.views import checkpoint_notes

    model = load_model("gpt-oss-120b")
    (note,) = checkpoint_notes(model, Precision.of("mxfp4"))
    # 60.71 GiB = 65.19 GB with the BF16 parts, 57.80 GiB = 62.07 GB without
    assert "attention, embedding, lm-head, router in BF16" in note
    assert "65.19 GB" in note and "62.07 GB" in note
    assert checkpoint_notes(model, Precision.of("mxfp4", unquantized="attention")) == []
    assert checkpoint_notes(model, Precision.of("bf16")) == []
    assert checkpoint_notes(load_model("qwen3-8b"), Precision.of("fp8")) == []
