"""A profile's domain places a model it never saw against the architectures it was fitted on:
attention kinds and routed experts a layer, read off the models' config.json values."""

import pytest
import yaml

from napkin.calibration.profile import (
    Domain,
    attention_kinds,
    load_profile,
    routed_experts_per_layer,
)
from napkin.catalog import load_model
from napkin.errors import NapkinError


def test_architecture_of_catalog_models_matches_their_configs():
    """DeepSeek-V3 config.json: kv_lora_rank 512 (MLA), n_routed_experts 256; Qwen3-235B-A22B:
    64 query / 4 KV heads (GQA), num_experts 128; Llama-3.1-70B: 64 / 8 heads, dense."""
    ds = load_model("deepseek-v3")
    assert attention_kinds(ds) == ("mla",) and routed_experts_per_layer(ds) == 256
    qwen = load_model("qwen3-235b-a22b")
    assert attention_kinds(qwen) == ("gqa",) and routed_experts_per_layer(qwen) == 128
    llama = load_model("llama-3.1-70b")
    assert attention_kinds(llama) == ("gqa",) and routed_experts_per_layer(llama) == 0


def test_domain_spans_the_fitted_models_architectures():
    models = [load_model(m) for m in ("llama-3.1-8b", "qwen3-235b-a22b", "qwen3-32b")]
    assert Domain.architectures(models) == {"attention": ("gqa",), "routed_experts": (0, 128)}
    assert Domain.architectures([]) == {}


def test_shipped_trtllm_profile_flags_mla_and_more_experts_than_it_saw():
    """TensorRT-LLM's profile was fitted on GQA models with 0 (dense) or 128 routed experts."""
    d = load_profile("trtllm").domain
    assert d.attention == ("gqa",) and d.routed_experts == (0, 128)
    ds = d.outside("h100-sxm", "deepseek-r1", 8, "fp8", spec=load_model("deepseek-r1"))
    assert "attention MLA (fitted on GQA models only)" in ds
    assert "256 routed experts a layer (fitted on 0–128)" in ds
    qwen = d.outside("h100-sxm", "qwen3-30b-a3b", 1, "bf16", spec=load_model("qwen3-30b-a3b"))
    assert not any("attention" in w or "routed" in w for w in qwen)  # GQA, 128 experts: seen


def test_dense_only_profile_flags_any_moe_and_a_moe_only_one_flags_dense():
    """SGLang's profile is fitted on dense models only; vLLM's also on gpt-oss-120b (128
    experts a layer), so a 128-expert model is inside its span."""
    sglang = load_profile("sglang").domain
    assert sglang.routed_experts == (0, 0)
    assert "128 routed experts a layer (fitted on dense models only)" in sglang.outside(
        "h100-sxm", "qwen3-30b-a3b", 1, "bf16", spec=load_model("qwen3-30b-a3b"))
    assert load_profile("vllm").domain.routed_experts == (0, 128)
    moe_only = Domain(attention=("gqa",), routed_experts=(64, 128))
    assert moe_only.outside("h100-sxm", "x", 1, "bf16", spec=load_model("qwen3-32b")) == [
        "a dense model (fitted on 64–128 routed experts a layer)"]


def test_a_profile_without_architecture_skips_the_check():
    assert Domain().outside("h100-sxm", "x", 1, "bf16", spec=load_model("deepseek-v3")) == []


def test_profile_file_round_trips_and_refuses_a_bad_span(tmp_path):
    p = load_profile("trtllm")
    path = tmp_path / "p.yaml"
    p.save(path)
    assert load_profile(str(path)).domain == p.domain
    data = yaml.safe_load(path.read_text())
    data["domain"]["routed_experts"] = [128, 0]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(NapkinError, match="routed_experts"):
        load_profile(str(path))
