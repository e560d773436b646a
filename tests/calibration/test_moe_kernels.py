"""The routed experts' own terms fitted on MoE kernel timings: features by hand, recovery of
known coefficients, and the shipped table read."""

import pytest

from napkin.accounting.routing import expected_max_rank_tokens
from napkin.calibration.basis import StepModel
from napkin.calibration.moe_kernels import (
    KernelRow,
    features,
    fit_kernels,
    read_moe_kernels,
)
from napkin.calibration.terms import TERMS
from napkin.errors import NapkinError

# Qwen3-235B-A22B: hidden 4,096, 128 experts of 1,536, top-8, 94 MoE layers. H100 SXM:
# 1,978.9 TFLOP/s FP8, 989.4 BF16, 3.35 TB/s.
H, INTER, EXPERTS, TOP_K = 4096, 1536, 128, 8


def test_features_of_one_row_by_hand():
    """1,024 tokens over EP 8 (16 experts a GPU), FP8: the busiest GPU's expected load L of
    the 8,192 (token, expert) pairs, 6·4,096·1,536 FLOPs each over the FP8 peak in
    ``expert_low``, its 16 experts, all touched, 3·4,096·1,536 B each over the bandwidth in
    ``expert_weights``, one ``moe_layer``, the pair term L·4,096·2 B over 3.35 TB/s; a profile
    whose expert terms follow its dense ones times the layer at 2.0 × FLOPs + 1.0 × bytes."""
    row = KernelRow("trtllm", "1.2.0rc5", "fp8_block", "qwen3-235b-a22b", 1024, 1, 8, 187e-6)
    load = expected_max_rank_tokens(EXPERTS, TOP_K, 8, 1024)
    assert 1024 < load < 1.2 * 1024
    f = features(row)
    x = dict(zip(TERMS, f.x, strict=True))
    flops, weights = 6 * H * INTER * load, 16 * 3 * H * INTER
    assert x["expert_low"] == pytest.approx(flops / 1978.9e12, rel=1e-3)
    assert x["expert_weights"] == pytest.approx(weights / 3.35e12, rel=1e-3)
    assert x["moe_layer"] == 1.0 and x["expert"] == x["dense_low"] == 0.0
    assert x["expert_pair"] == pytest.approx(load * H * 2 / 3.35e12, rel=1e-9)
    assert f.measured_s == 187e-6
    profile = StepModel.of({"dense": 1.3, "dense_low": 2.0, "weights": 1.0})
    assert f.time(profile) == pytest.approx(2.0 * flops / 1978.9e12 + weights / 3.35e12,
                                            rel=1e-3)
    bf16 = dict(zip(TERMS, features(KernelRow("x", "1", "bfloat16", "qwen3-235b-a22b", 1024,
                                              1, 8, 1.0)).x, strict=True))
    assert bf16["expert"] == pytest.approx(flops / 989.4e12, rel=1e-3)
    assert bf16["expert_weights"] == pytest.approx(2 * weights / 3.35e12, rel=1e-3)


def test_fit_recovers_known_coefficients():
    """Rows timed as 2.5 × the BF16 ideal FLOPs, 3.0 × the FP8 ones, 1.2 × the ideal reads and
    30 µs a layer: the fit finds them and reads the rows exactly in and out of sample (by
    model); at the dense profile's coefficients it misses."""
    truth = StepModel.of({"expert": 2.5, "expert_low": 3.0, "expert_weights": 1.2,
                          "moe_layer": 30e-6})
    rows = []
    for model in ("qwen3-235b-a22b", "deepseek-v3", "mixtral-8x7b"):
        for dtype in ("bfloat16", "fp8_block"):
            for tokens in (16, 256, 4096, 16384):
                for ep in (1, 8):
                    f = features(KernelRow("x", "1", dtype, model, tokens, 1, ep, 1.0))
                    rows.append(KernelRow("x", "1", dtype, model, tokens, 1, ep, f.time(truth)))
    fit = fit_kernels(rows, StepModel.of({"dense": 1.3, "dense_low": 2.0, "weights": 1.0}))
    assert set(fit.coefficients) == {"expert", "expert_low", "expert_weights", "moe_layer"}
    for term, value in (("expert", 2.5), ("expert_low", 3.0), ("expert_weights", 1.2),
                        ("moe_layer", 30e-6)):
        assert fit.coefficients[term] == pytest.approx(value, rel=1e-6)
    assert fit.train_error < 1e-6 and fit.holdout_error < 1e-6
    assert fit.start_error > 0.03


def test_shipped_kernel_table():
    """aiconfigurator's H100 MoE kernel tables of TensorRT-LLM 1.2.0rc5, vLLM 0.19.0 and SGLang
    0.5.9, the shapes of catalog models, balanced routing; TensorRT-LLM's FP8 block-scaled
    Qwen3-235B-A22B layer over EP 8 at 1,024 tokens took 0.187 ms."""
    rows = read_moe_kernels()
    assert {r.engine for r in rows} == {"trtllm", "vllm", "sglang"}
    hit = [r for r in rows if (r.engine, r.moe_dtype, r.model, r.tokens, r.moe_tp, r.moe_ep)
           == ("trtllm", "fp8_block", "qwen3-235b-a22b", 1024, 1, 8)]
    assert len(hit) == 1 and hit[0].latency_s == pytest.approx(0.186971e-3, rel=1e-5)


def test_a_bad_kernel_row_is_one_error_line(tmp_path):
    path = tmp_path / "k.csv"
    head = "engine,version,moe_dtype,model,num_tokens,moe_tp_size,moe_ep_size,latency_ms\n"
    path.write_text(head + "trtllm,1,fp8_block,deepseek-v3,ten,1,8,0.1\n")
    with pytest.raises(NapkinError, match=r"line 2: invalid literal"):
        read_moe_kernels(path)
    path.write_text(head + "trtllm,1,int2,deepseek-v3,10,1,8,0.1\n")
    with pytest.raises(NapkinError, match=r"line 2: moe_dtype: 'int2' not one of"):
        read_moe_kernels(path)
    path.write_text(head + "trtllm,1,fp8,deepseek-v3,0,1,8,0.1\n")
    with pytest.raises(NapkinError, match=r"line 2: num_tokens, moe_tp_size"):
        read_moe_kernels(path)
    for latency in ("-1", "0", "nan", "inf"):
        path.write_text(head + f"trtllm,1,fp8,deepseek-v3,10,1,8,{latency}\n")
        with pytest.raises(NapkinError, match=r"line 2: latency_ms: must be finite and > 0"):
            read_moe_kernels(path)
    path.write_text("engine,model\n")
    with pytest.raises(NapkinError, match=r"columns: missing version"):
        read_moe_kernels(path)


def test_b200_table_and_features_by_hand():
    """aiconfigurator's B200 tables of the same engine versions: the same TensorRT-LLM layer
    (FP8 block-scaled Qwen3-235B-A22B over EP 8, 1,024 tokens) took 0.122 ms (DeepGEMM) against
    the H100's 0.187 — 1.53× faster on a GPU with 2.27× the FP8 peak (4,500 TFLOP/s) and 2.3×
    the bandwidth (7.7 TB/s). Its features are the H100 test's counts over B200's rates."""
    rows = read_moe_kernels(gpu="b200")
    assert {r.gpu for r in rows} == {"b200"}
    assert {r.engine for r in rows} == {"trtllm", "vllm", "sglang"}
    hit = [r for r in rows if (r.engine, r.moe_dtype, r.model, r.tokens, r.moe_tp, r.moe_ep)
           == ("trtllm", "fp8_block", "qwen3-235b-a22b", 1024, 1, 8)]
    assert len(hit) == 1 and hit[0].latency_s == pytest.approx(0.121915e-3, rel=1e-5)
    h100 = [r for r in read_moe_kernels() if (r.engine, r.moe_dtype, r.model, r.tokens,
            r.moe_tp, r.moe_ep) == ("trtllm", "fp8_block", "qwen3-235b-a22b", 1024, 1, 8)]
    assert h100[0].latency_s / hit[0].latency_s == pytest.approx(1.534, rel=1e-3)
    load = expected_max_rank_tokens(EXPERTS, TOP_K, 8, 1024)
    x = dict(zip(TERMS, features(hit[0]).x, strict=True))
    assert x["expert_low"] == pytest.approx(6 * H * INTER * load / 4500e12, rel=1e-3)
    assert x["expert_weights"] == pytest.approx(16 * 3 * H * INTER / 7.7e12, rel=1e-3)
    assert x["moe_layer"] == 1.0  # B200's fixed-time scale (no clock in the catalog)
    nvfp4 = dict(zip(TERMS, features(KernelRow("x", "1", "nvfp4", "qwen3-235b-a22b", 1024, 1,
                                               8, 1.0, "b200")).x, strict=True))
    assert nvfp4["expert_low"] == pytest.approx(6 * H * INTER * load / 9000e12, rel=1e-3)


def test_a_gpu_without_a_table_is_one_error():
    with pytest.raises(NapkinError, match="gpu: no shipped MoE kernel table for 'a100-sxm'"):
        read_moe_kernels(gpu="a100-sxm")
