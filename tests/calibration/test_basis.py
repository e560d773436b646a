"""The step-time model's basis terms, derived by hand from the datasheet and the accounting."""

import pytest

from napkin.accounting import Precision
from napkin.accounting.linear import LinearCost
from napkin.calibration.basis import FittedTimer, StepBasis, StepModel
from napkin.calibration.terms import TERMS
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.serving.step import StepShape


def test_decode_step_terms_by_hand():
    """Qwen3-8B BF16 on one H100, 8 decodes at 1,000 tokens of context each: the weights term
    is the weight bytes over 3.35 TB/s; the KV term is 8,000 cached + 8 new tokens of KV
    (36 layers × 8 KV heads × 128 × 2 (K, V) × 2 bytes = 147,456 B per token) over 3.35 TB/s."""
    model, acc = load_model("qwen3-8b"), load_accelerator("h100-sxm")
    cost = LinearCost.of(model, Precision.of())
    parts = cost.parts(StepShape(8, 8000, []))
    terms = dict(zip(TERMS, StepBasis.of(model, acc, "bf16", 1, 450e9).terms(parts, 8),
                     strict=True))
    kv_per_token = 36 * 8 * 128 * 2 * 2
    assert kv_per_token == model.kv_bytes_per_token(2)
    assert terms["kv"] == pytest.approx(8008 * kv_per_token / 3.35e12)
    assert terms["weights"] == pytest.approx(parts[2] / 3.35e12)
    assert terms["dense"] == pytest.approx(parts[0] / 989.4e12)
    assert (terms["step"], terms["layer"], terms["token"]) == (1.0, 36.0, 8.0)
    assert terms["allreduce"] == 0 and terms["allreduce_bytes"] == 0  # tp 1: none
    assert terms["moe_layer"] == 0  # a dense model
    # norms: per layer 8·h = 32,768 elements on every rank (the two residual-add + RMSNorm
    # kernels); elementwise: 2·(32 + 8)·128 = 10,240 (rotary) + 3 · 12,288 = 36,864 (the SwiGLU
    # activation reads gate and up, writes its product); × 2 B × 36 layers a token
    assert terms["norms"] == pytest.approx(8 * 32_768 * 2 * 36 / 3.35e12)
    assert terms["elementwise"] == pytest.approx(8 * (10_240 + 36_864) * 2 * 36 / 3.35e12)


@pytest.mark.parametrize(("model_id", "moe_layers"), [
    ("qwen3-235b-a22b", 94),  # config.json: 94 layers, decoder_sparse_step 1, no mlp_only
    ("deepseek-v3", 58),  # 61 layers, first_k_dense_replace 3
    ("gpt-oss-120b", 36),  # every one of its 36 layers routes over 128 experts
    ("llama-3.1-8b", 0),
])
def test_moe_layer_term_counts_the_layers_with_routed_experts(model_id, moe_layers):
    """The MoE term of a non-empty step is its model's layers with routed experts, whatever the
    tokens and the TP (each rank runs every MoE layer); an empty step has none."""
    model, acc = load_model(model_id), load_accelerator("h100-sxm")
    for tp in (1, 8):
        basis = StepBasis.of(model, acc, "bf16", tp, 450e9)
        for tokens in (1, 4096):
            x = basis.terms((1e12, 1e10, 1e10, 1e9, 0.0), tokens)
            assert x[TERMS.index("moe_layer")] == moe_layers
        assert basis.terms((0.0, 0.0, 0.0, 0.0, 0.0), 0)[TERMS.index("moe_layer")] == 0


def _qwen32b_terms(compute: str, tp: int) -> dict[str, float]:
    """Named basis terms of one Qwen3-32B step on H100s: parts (4e12 dense FLOPs, 1e11
    attention FLOPs, 6e10 weight bytes, 2e9 KV bytes), 100 new tokens, a 450 GB/s link."""
    model, acc = load_model("qwen3-32b"), load_accelerator("h100-sxm")
    terms = StepBasis.of(model, acc, compute, tp, 450e9).terms((4e12, 1e11, 6e10, 2e9, 0.0), 100)
    return dict(zip(TERMS, terms, strict=True))


def test_tensor_parallel_terms_by_hand():
    """TP 4: each device sees a quarter of the work; 2 ring all-reduces per layer, each moving
    2·(4 − 1)/4 of tokens × hidden × 2 bytes over the link."""
    one, four = _qwen32b_terms("bf16", 1), _qwen32b_terms("bf16", 4)
    for name in ("dense", "attention", "weights", "kv"):
        assert four[name] == pytest.approx(one[name] / 4)
    assert four["allreduce"] == 2 * 64
    assert four["allreduce_bytes"] == pytest.approx(2 * 64 * 2 * 3 / 4 * 100 * 5120 * 2 / 450e9)


def test_low_precision_matmuls_count_in_their_own_term():
    """FP8 weights on an H100: the matmul FLOPs over the FP8 dense peak (1,978.9 TFLOP/s) go to
    ``dense_low`` and ``dense`` is 0; BF16 puts the same FLOPs over 989.4 TFLOP/s in ``dense``.
    Attention stays at the BF16 rate either way."""
    fp8, bf16 = _qwen32b_terms("fp8", 1), _qwen32b_terms("bf16", 1)
    assert fp8["dense"] == 0 and fp8["dense_low"] == pytest.approx(4e12 / 1978.9e12)
    assert bf16["dense_low"] == 0 and bf16["dense"] == pytest.approx(4e12 / 989.4e12)
    assert fp8["attention"] == bf16["attention"] == pytest.approx(1e11 / 989.4e12)


def test_matmuls_of_parts_kept_in_bf16_count_in_dense_at_the_bf16_rate():
    """An FP8 model whose attention stays BF16 (``Precision.unquantized``): its 16-bit matmul
    FLOPs (the parts' fifth entry, 5e11) go over the BF16 peak into ``dense``, the FP8 ones
    into ``dense_low``; on a BF16 model both share ``dense``."""
    model, acc = load_model("qwen3-32b"), load_accelerator("h100-sxm")
    parts = (4e12, 1e11, 6e10, 2e9, 5e11)
    fp8 = dict(zip(TERMS, StepBasis.of(model, acc, "fp8", 1, 450e9).terms(parts, 100),
                   strict=True))
    bf16 = dict(zip(TERMS, StepBasis.of(model, acc, "bf16", 1, 450e9).terms(parts, 100),
                    strict=True))
    assert fp8["dense"] == pytest.approx(5e11 / 989.4e12)
    assert fp8["dense_low"] == pytest.approx(4e12 / 1978.9e12)
    assert bf16["dense"] == pytest.approx(4.5e12 / 989.4e12) and bf16["dense_low"] == 0


def test_a_profile_without_dense_low_uses_its_dense_coefficient():
    """Profiles written before ``dense_low`` existed keep one matmul efficiency for every
    format; a given ``dense_low`` is kept."""
    assert StepModel.of({"dense": 1.7}).as_dict()["dense_low"] == 1.7
    assert StepModel.of({"dense": 1.7, "dense_low": 2.1}).as_dict()["dense_low"] == 2.1


def test_fitted_timer_is_the_dot_product_and_affine_in_steps():
    model, acc = load_model("qwen3-8b"), load_accelerator("h100-sxm")
    basis = StepBasis.of(model, acc, "bf16", 1, 450e9)
    sm = StepModel.of({"step": 2e-3, "weights": 1.25, "kv": 1.5, "token": 1e-6})
    cost = LinearCost.of(model, Precision.of())
    p0, p1 = cost.parts(StepShape(4, 4000, [])), cost.parts(StepShape(4, 4004, []))
    series = FittedTimer(basis, sm).series(p0, p1, 4)
    t0 = 2e-3 + 1.25 * p0[2] / 3.35e12 + 1.5 * p0[3] / 3.35e12 + 4e-6
    t1 = 2e-3 + 1.25 * p1[2] / 3.35e12 + 1.5 * p1[3] / 3.35e12 + 4e-6
    assert series.time(1) == pytest.approx(t0)
    assert series.time(3) == pytest.approx(3 * t0 + 3 * (t1 - t0))  # t0 + t1 + t2


@pytest.mark.parametrize("compute", ["bf16", "fp8"])
@pytest.mark.parametrize("model_id", ["qwen3-32b", "qwen3-30b-a3b"])
def test_fitted_timer_equals_the_basis_dot_product_for_every_term(compute, model_id):
    """The timer's regrouped rates give Σ c_k·x_k of StepBasis.terms, with every term on
    (TP 2, so the all-reduce terms count too; FP8 puts the matmuls in dense_low; the MoE model
    has its moe_layer term); an empty step costs nothing."""
    model, acc = load_model(model_id), load_accelerator("h100-sxm")
    basis = StepBasis.of(model, acc, compute, 2, 450e9)
    seconds = ("step", "layer", "moe_layer", "token", "allreduce", "eager_layer")
    sm = StepModel(tuple(1e-3 * (k + 1) if t in seconds else 0.5 + k / 10
                         for k, t in enumerate(TERMS)), 0.01)
    timer = FittedTimer(basis, sm)
    p0, p1 = (3e12, 2e11, 6.5e10, 3e9, 4e11), (3e12, 2.1e11, 6.5e10, 3.1e9, 4.2e11)
    series = timer.series(p0, p1, 77)
    a, b = sm.time(basis.terms(p0, 77)), sm.time(basis.terms(p1, 77))
    assert series.time(1) == pytest.approx(a, rel=1e-12)
    assert series.time(2) == pytest.approx(a + b, rel=1e-12)
    assert timer.series(p0, None, 0).time(5) == 0.0


def test_a_step_with_a_prefill_chunk_takes_at_least_the_eager_floor():
    """Qwen3-32B (64 layers) BF16 on 8 H100s, a step of parts (4e12 dense FLOPs, 1e11
    attention FLOPs, 6e10 weight bytes, 2e9 KV bytes) and 100 tokens, under 1 ms per step,
    dense 1.5, weights 1.0: the sum is 1 ms + 1.5·4e12/(8·989.4 TFLOP/s) + 6e10/(8·3.35 TB/s)
    = 3.997 ms. A floor of 0.2 ms per layer (12.8 ms) binds on that step when it carries a
    prefill chunk and not when it is decode-only; a floor of 0.05 ms per layer (3.2 ms) never
    binds. Either way the effective basis vector's dot product is the step's time."""
    model, acc = load_model("qwen3-32b"), load_accelerator("h100-sxm")
    basis = StepBasis.of(model, acc, "bf16", 8, 450e9)
    parts = (4e12, 1e11, 6e10, 2e9, 0.0)
    total = 1e-3 + 1.5 * 4e12 / (8 * 989.4e12) + 6e10 / (8 * 3.35e12)
    assert total == pytest.approx(3.997e-3, rel=1e-3)
    for floor_per_layer, prefill_s in ((0.2e-3, 64 * 0.2e-3), (0.05e-3, total)):
        sm = StepModel.of({"step": 1e-3, "dense": 1.5, "weights": 1.0,
                           "eager_layer": floor_per_layer})
        timer = FittedTimer(basis, sm)
        assert timer.series(parts, None, 100, prefill=True).time(1) == pytest.approx(prefill_s)
        assert timer.series(parts, None, 100).time(1) == pytest.approx(total)
        for prefill in (True, False):
            x = basis.terms(parts, 100, prefill)
            assert x[TERMS.index("eager_layer")] == (64.0 if prefill else 0.0)
            effective = sm.effective(x)
            assert sum(c * v for c, v in zip(sm.coefficients, effective, strict=True)) == \
                pytest.approx(sm.time(x))
            assert sm.time(x) == pytest.approx(prefill_s if prefill else total)


def test_a_prefill_step_is_timed_alone():
    model, acc = load_model("qwen3-32b"), load_accelerator("h100-sxm")
    timer = FittedTimer(StepBasis.of(model, acc, "bf16", 1, 450e9), StepModel.of({"dense": 1.0}))
    with pytest.raises(NapkinError, match="timed alone"):
        timer.series((1e12, 0, 0, 0, 0), (1e12, 0, 0, 0, 0), 10, prefill=True)


def test_step_model_refuses_bad_coefficients():
    with pytest.raises(NapkinError, match="coefficients: unknown terms"):
        StepModel.of({"mfu": 0.5})
    with pytest.raises(NapkinError, match="finite and >= 0"):
        StepModel.of({"dense": -1.0})
    with pytest.raises(NapkinError, match="finite and >= 0"):
        StepModel.of({"dense": float("inf")})


def test_shipped_vllm_profile_charges_its_fixed_layer_time_at_any_tp():
    """The vLLM profile's fixed step time is per layer, not per all-reduce (the H100 rows, all
    but one at TP ≥ 2, cannot tell the two apart: two all-reduces a layer), so a TP-1 decode
    pays it too. By hand: a one-token step's time less its roofline and per-token terms is
    step + layers · c_layer (+ MoE layers · c_moe), the same at TP 1 and TP 8 for Llama-3.1-70B
    (80 layers), and the all-reduce count (160 at TP 8) adds nothing."""
    from napkin.calibration.profile import load_profile

    model, acc = load_model("llama-3.1-70b"), load_accelerator("h100-sxm")
    m = load_profile("vllm").model
    c = m.as_dict()
    assert c["allreduce"] == 0 and c["layer"] > 20e-6  # tens of µs a layer

    def fixed(tp: int) -> float:
        basis = StepBasis.of(model, acc, "fp8", tp, 450e9)
        timer = FittedTimer(basis, m)
        zero = (0.0, 0.0, 0.0, 0.0, 0.0)
        per_token = (c["token"] + c["token_layer"] * 80 + c["norms"] * basis.norms_s_per_token
                     + c["elementwise"] * basis.elementwise_s_per_token
                     + c["allreduce_bytes"] * basis.allreduce_s_per_token)
        return timer.step_s(zero, 1) - per_token

    want = c["step"] + 80 * c["layer"]
    assert fixed(1) == pytest.approx(want) and fixed(8) == pytest.approx(want)


def test_weight_only_matmuls_count_in_their_own_term():
    """gpt-oss's MXFP4 experts on an H100 (W4A16: no FP4 rate, BF16 activations): the quantized
    matmul FLOPs (4e12) over the BF16 peak (989.4 TFLOP/s) go to ``dense_w4a16``, the parts the
    checkpoint keeps in BF16 (5e11) to ``dense``; ``dense_low`` is 0. A format that is not
    weight-only (FP8) ignores the flag; INT4-g128 and MXFP4 are weight-only, MXFP4 W4A8 and BF16
    are not."""
    from napkin.specs.dtypes import weight_format

    model, acc = load_model("gpt-oss-20b"), load_accelerator("h100-sxm")
    parts = (4e12, 1e11, 6e10, 2e9, 5e11)
    w4 = dict(zip(TERMS, StepBasis.of(model, acc, "bf16", 1, 450e9, weight_only=True)
                  .terms(parts, 100), strict=True))
    assert w4["dense_w4a16"] == pytest.approx(4e12 / 989.4e12)
    assert w4["dense"] == pytest.approx(5e11 / 989.4e12) and w4["dense_low"] == 0
    fp8 = dict(zip(TERMS, StepBasis.of(model, acc, "fp8", 1, 450e9, weight_only=True)
                   .terms(parts, 100), strict=True))
    assert fp8["dense_w4a16"] == 0 and fp8["dense_low"] == pytest.approx(4e12 / 1978.9e12)
    assert [weight_format(f).weight_only for f in ("int4-g128", "mxfp4", "mxfp4-w4a8", "bf16",
                                                  "fp8")] == [True, True, False, False, False]


def test_a_profile_without_dense_w4a16_uses_its_dense_coefficient():
    """A profile fitted without weight-only rows times their matmuls at its ``dense``
    coefficient: W4A16 and BF16 steps of the same FLOPs then take the same time."""
    assert StepModel.of({"dense": 1.7}).as_dict()["dense_w4a16"] == 1.7
    assert StepModel.of({"dense": 1.7, "dense_w4a16": 3.2}).as_dict()["dense_w4a16"] == 3.2
    model, acc = load_model("gpt-oss-20b"), load_accelerator("h100-sxm")
    parts = (4e12, 1e11, 6e10, 2e9, 5e11)
    old = FittedTimer(StepBasis.of(model, acc, "bf16", 1, 450e9, weight_only=True),
                      StepModel.of({"dense": 1.7}))
    plain = FittedTimer(StepBasis.of(model, acc, "bf16", 1, 450e9), StepModel.of({"dense": 1.7}))
    assert old.step_s(parts, 100) == pytest.approx(plain.step_s(parts, 100))
    assert old.step_s(parts, 100) == pytest.approx(1.7 * 4.5e12 / 989.4e12)


def test_expert_pair_term_by_hand():
    """DeepSeek-V3 routes a token to 8 experts in each of its 58 MoE layers: 464 (token, expert)
    pairs, each moving a 7,168-element BF16 hidden vector — 464·7,168·2 B = 6.65 MB a token
    over 3.35 TB/s, on every rank under TP (each permutes all the step's pairs); a dense model
    has none."""
    acc = load_accelerator("h100-sxm")
    for tp in (1, 8):
        basis = StepBasis.of(load_model("deepseek-v3"), acc, "fp8", tp, 450e9)
        x = basis.terms((1e12, 1e10, 1e10, 1e9, 0.0), 100)
        assert x[TERMS.index("expert_pair")] == pytest.approx(100 * 464 * 7168 * 2 / 3.35e12)
    dense = StepBasis.of(load_model("qwen3-8b"), acc, "bf16", 1, 450e9)
    assert dense.terms((1e12, 1e10, 1e10, 1e9, 0.0), 100)[TERMS.index("expert_pair")] == 0.0


def test_a_layout_counts_the_busiest_ranks_pairs():
    """In a layout the pair term is the busiest rank's routed pairs (RankCost.rank_pairs),
    not one rank's tokens times k: TP 8 attention with EP 8 (vLLM's ``tp8 ep8``) at 800 tokens
    puts ≈ 800·8/8 = 800 pairs a layer on a rank (the uniform routing's busiest a little
    more), where the device's 800 tokens would count 6,400. A profile's coefficient c makes
    ``routed_rates[0]`` = c·7,168·2 B / 3.35 TB/s a pair, and the device timer inside counts
    none."""
    from dataclasses import replace

    from napkin.calibration.basis import LayoutBasis, layout_timer
    from napkin.specs.layout import ParallelLayout

    model, acc = load_model("deepseek-v3"), load_accelerator("h100-sxm")
    p = Precision.of("fp8", "bf16")
    layout = ParallelLayout(8, 1, 8)
    basis = StepBasis.of(model, acc, "fp8", 1, 450e9)
    sm = StepModel.of({"dense": 1.5, "weights": 1.0, "expert_pair": 6.0})
    timer = layout_timer(model, p, layout, FittedTimer(basis, sm), 450e9, 10e-6)
    assert timer.routed_rates[0] == pytest.approx(6.0 * 7168 * 2 / 3.35e12)
    assert timer.device.basis == replace(basis, pair_s_per_token=0.0).at_attention_tp(
        model, 8)
    pairs = timer.cost.rank_pairs(800)
    assert 800 * 58 < pairs < 1.2 * 800 * 58
    parts = LinearCost.of(model, p).parts(StepShape(800, 800 * 1000, []))
    plain = layout_timer(model, p, layout, FittedTimer(basis, StepModel.of(
        {"dense": 1.5, "weights": 1.0})), 450e9, 10e-6)
    assert timer.step_s(parts, 800) - plain.step_s(parts, 800) == pytest.approx(
        pairs * timer.routed_rates[0], rel=1e-9)
    lb = LayoutBasis.of(model, acc, p, layout, 450e9)
    x = lb.terms(parts, 800)
    assert x[TERMS.index("expert_pair")] == pytest.approx(pairs * 7168 * 2 / 3.35e12)


def test_routed_experts_have_their_own_terms():
    """Qwen3-235B-A22B FP8 at TP 8, a 512-token decode step: the routed experts' FLOPs —
    512 tokens · 8 experts · 6·4,096·1,536 FLOPs · 94 layers — leave ``dense_low`` for
    ``expert_low`` (over 8 · 1,978.9 TFLOP/s), and the bytes of the experts touched —
    94 · 128·(1 − (1 − 8/128)^512) · 3·4,096·1,536 B (FP8) — leave ``weights`` for
    ``expert_weights`` (over 8 · 3.35 TB/s); the sums are what the basis without the split
    holds. A profile whose expert terms follow its dense ones times the step as before; one
    with its own expert coefficients adds (c_expert − c_dense) × their ideal times, in the
    simulator's fast timer as in Σ c·x."""
    from dataclasses import replace

    from napkin.serving.step import StepShape

    model, acc = load_model("qwen3-235b-a22b"), load_accelerator("h100-sxm")
    p = Precision.of("fp8", "fp8")
    split = StepBasis.of(model, acc, "fp8", 8, 450e9, precision=p)
    plain = replace(split, routed=None)
    parts = LinearCost.of(model, p).parts(StepShape(512, 512 * 1500, []))
    x, y = (dict(zip(TERMS, b.terms(parts, 512), strict=True)) for b in (split, plain))
    flops = 512 * 8 * 6 * 4096 * 1536 * 94
    touched = 128 * (1 - (1 - 8 / 128) ** 512)
    expert_bytes = 94 * touched * 3 * 4096 * 1536
    assert x["expert_low"] == pytest.approx(flops / (8 * 1978.9e12), rel=1e-3)
    assert x["expert_weights"] == pytest.approx(expert_bytes / (8 * 3.35e12), rel=1e-3)
    assert x["dense_low"] + x["expert_low"] == pytest.approx(y["dense_low"], rel=1e-12)
    assert x["weights"] + x["expert_weights"] == pytest.approx(y["weights"], rel=1e-12)
    assert x["expert"] == x["expert_w4a16"] == 0.0 and y["expert_low"] == 0.0
    shipped = StepModel.of({"dense": 1.3, "dense_low": 2.2, "weights": 1.0, "layer": 6e-5})
    assert FittedTimer(split, shipped).step_s(parts, 512) == pytest.approx(
        FittedTimer(plain, shipped).step_s(parts, 512), rel=1e-12)
    own = StepModel.of({**shipped.as_dict(), "expert_low": 3.0, "expert_weights": 1.25})
    t = FittedTimer(split, own).step_s(parts, 512)
    assert t == pytest.approx(own.time(split.terms(parts, 512)), rel=1e-12)
    assert t - FittedTimer(plain, shipped).step_s(parts, 512) == pytest.approx(
        0.8 * x["expert_low"] + 0.25 * x["expert_weights"], rel=1e-9)


def test_weight_only_experts_read_on_their_own_term():
    """gpt-oss-120b's MXFP4 experts on H100, which has no FP4 rate (W4A16: 4-bit weights, 16-bit
    matmuls; vLLM's Marlin kernels), 8 decodes at 1,000 tokens: the bytes of the experts the
    step touches — 128·(1 − (1 − 4/128)^8) experts of 36 layers × (2,880·5,760 + 5,760 +
    2,880·2,880 + 2,880) parameters (gate-up and down with their biases, all at MXFP4's 4.25
    bits as napkin's accounting counts them) — leave ``weights`` for ``expert_weights_w4a16``
    (over 3.35 TB/s), not
    ``expert_weights``, beside their FLOPs in ``expert_w4a16``. A profile without the term
    reads them at ``weights`` (its parent, as ``expert_w4a16`` follows ``dense_w4a16``), whatever
    its ``expert_weights`` (the 8- and 16-bit experts' reads, held at their kernels' fit); one
    that sets it apart adds (c_expert_weights_w4a16 − c_weights) × their ideal time."""
    from napkin.serving.step import StepShape

    model, acc = load_model("gpt-oss-120b"), load_accelerator("h100-sxm")
    p = Precision.of("mxfp4")
    assert p.weights.weight_only and p.weights.compute in ("bf16", "fp16")
    basis = StepBasis.of(model, acc, p.weights.compute, 1, 450e9, p.weights.weight_only, p)
    parts = LinearCost.of(model, p).parts(StepShape(8, 8000, []))
    x = dict(zip(TERMS, basis.terms(parts, 8), strict=True))
    [group] = basis.routed.groups
    touched = 128 * (1 - (1 - 4 / 128) ** 8)
    expert_bytes = 36 * (2880 * 5760 + 5760 + 2880 * 2880 + 2880) * 4.25 / 8
    assert (group.num_experts, group.top_k, model.num_layers) == (128, 4, 36)
    assert group.bytes_per_expert == pytest.approx(expert_bytes, rel=1e-9)
    assert x["expert_weights_w4a16"] == pytest.approx(touched * expert_bytes / 3.35e12,
                                                      rel=1e-3)
    assert x["expert_weights"] == 0.0 and x["expert_w4a16"] > 0.0
    tied = StepModel.of({"dense": 1.4, "dense_w4a16": 3.4, "weights": 1.0,
                         "expert_weights": 1.2})
    assert tied.as_dict()["expert_weights_w4a16"] == 1.0
    plain = StepModel.of({"dense": 1.4, "dense_w4a16": 3.4, "weights": 1.0})
    assert FittedTimer(basis, tied).step_s(parts, 8) == pytest.approx(
        FittedTimer(basis, plain).step_s(parts, 8), rel=1e-12)
    own = StepModel.of({**tied.as_dict(), "expert_weights_w4a16": 1.5})
    t_own, t_tied = (FittedTimer(basis, m).step_s(parts, 8) for m in (own, tied))
    assert t_own == pytest.approx(own.time(basis.terms(parts, 8)), rel=1e-12)
    assert t_own - t_tied == pytest.approx(0.5 * x["expert_weights_w4a16"], rel=1e-9)


def test_a_profile_without_expert_terms_reads_them_as_dense():
    """A profile file that predates the expert terms (or fitted none) times the routed
    experts as its dense layers of the format: ``expert_low`` = ``dense_low`` (itself
    ``dense`` where that is all it has), ``expert_weights`` = ``weights``."""
    m = StepModel.of({"dense": 1.4, "weights": 1.1})
    c = m.as_dict()
    assert c["expert"] == c["expert_low"] == c["expert_w4a16"] == c["dense_low"] == 1.4
    assert c["expert_weights"] == 1.1
    m = StepModel.of({"dense": 1.4, "dense_low": 2.0, "weights": 1.0, "expert_low": 3.0})
    assert m.as_dict()["expert_low"] == 3.0 and m.as_dict()["expert"] == 1.4


def test_a_layout_times_the_busiest_ranks_routed_experts_by_their_own_terms():
    """DeepSeek-V3 FP8 over DP 8 × EP 8, 2,048 decodes at 2,000 tokens: with its own expert
    coefficients (expert_low 3.0 against dense_low 2.0, expert_weights 1.25 against 1.0) the
    layout's step is Σ c·x of its basis, whose ``expert_low`` / ``expert_weights`` hold the
    busiest rank's routed FLOPs and bytes (RankCost.routed) over the peak and bandwidth; it
    exceeds the tied profile's by 1.0 × the first plus 0.25 × the second."""
    from napkin.accounting.ranks import RankCost
    from napkin.calibration.basis import LayoutBasis, layout_timer
    from napkin.specs.layout import ParallelLayout

    model, acc = load_model("deepseek-v3"), load_accelerator("h100-sxm")
    p = Precision.of("fp8", "bf16")
    layout = ParallelLayout(1, 8, 8)
    parts = LinearCost.of(model, p).parts(StepShape(2048, 2048 * 2000, []))
    tied = StepModel.of({"dense": 1.3, "dense_low": 2.0, "weights": 1.0, "layer": 5e-5})
    own = StepModel.of({**tied.as_dict(), "expert_low": 3.0, "expert_weights": 1.25})
    basis = StepBasis.of(model, acc, "fp8", 1, 450e9, precision=p)
    times = {name: layout_timer(model, p, layout, FittedTimer(basis, m), 450e9, 10e-6)
             .step_s(parts, 2048) for name, m in (("tied", tied), ("own", own))}
    x = dict(zip(TERMS, LayoutBasis.of(model, acc, p, layout, 450e9).terms(parts, 2048),
                 strict=True))
    _, _, flops, expert_bytes = RankCost.of(model, p, layout).routed(2048)
    assert x["expert_low"] == pytest.approx(flops / 1978.9e12, rel=1e-3)
    assert x["expert_weights"] == pytest.approx(expert_bytes / 3.35e12, rel=1e-3)
    assert times["own"] == pytest.approx(own.time(tuple(x.values())), rel=1e-9)
    assert times["own"] - times["tied"] == pytest.approx(
        x["expert_low"] + 0.25 * x["expert_weights"], rel=1e-9)


def test_doubling_tp_moves_each_term_as_the_engine_splits_the_work():
    """Llama-3.1-8B BF16 on H100 (h 4,096, I 14,336, 32 layers, 32 query and 8 KV heads of 128),
    a step of 100 decodes at 1,000 tokens of context, at TP 1, 2 and 4, term by term:

    - ``step``, ``layer``, ``token``, ``token_layer``: every rank runs every step, layer and
      token's host work — unchanged (``token_layer`` is tokens × layers, 3,200);
    - ``dense``, ``attention``, ``weights``: each rank holds 1/tp of the heads and of the MLP —
      halved per doubling; ``kv``: 8 KV heads split over up to 8 ranks — halved;
    - ``norms``: 32 × 8·4,096 elements × 2 B a token, whole on every rank (2,097,152 B);
      ``elementwise``: 32 × 53,248 / tp elements × 2 B — 3,407,872 B at TP 1, halved per
      doubling;
    - ``allreduce``: none on one GPU, 2 a layer (64) under TP; ``allreduce_bytes``: 64 ×
      2(tp − 1)/tp × 4,096 × 2 B a token over the link — 0, 524,288 B, 786,432 B;
      ``allreduce_hop``: 64 × (tp − 1) — 0, 64, 192 (a ring's latency-bound steps)."""
    model, acc = load_model("llama-3.1-8b"), load_accelerator("h100-sxm")
    cost = LinearCost.of(model, Precision.of())
    parts = cost.parts(StepShape(100, 100_000, []))
    link, bw = 450e9, 3.35e12
    x = {tp: dict(zip(TERMS, StepBasis.of(model, acc, "bf16", tp, link).terms(parts, 100),
                      strict=True)) for tp in (1, 2, 4)}
    for term in ("step", "layer", "token", "token_layer", "norms"):
        assert x[1][term] == x[2][term] == x[4][term]
    assert x[1]["token_layer"] == 100 * 32
    for term in ("dense", "attention", "weights", "kv", "elementwise"):
        assert x[2][term] == pytest.approx(x[1][term] / 2)
        assert x[4][term] == pytest.approx(x[1][term] / 4)
    assert x[1]["norms"] == pytest.approx(100 * 2_097_152 / bw)
    assert x[1]["elementwise"] == pytest.approx(100 * 3_407_872 / bw)
    assert (x[1]["allreduce"], x[2]["allreduce"], x[4]["allreduce"]) == (0, 64, 64)
    assert (x[1]["allreduce_hop"], x[2]["allreduce_hop"], x[4]["allreduce_hop"]) == (0, 64, 192)
    for tp, per_token in ((1, 0), (2, 524_288), (4, 786_432)):
        assert per_token == 64 * 2 * (tp - 1) / tp * 4096 * 2
        assert x[tp]["allreduce_bytes"] == pytest.approx(100 * per_token / link)
