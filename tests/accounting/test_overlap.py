"""Two-batch overlap: the stages that hide each all-to-all and the exposed time, by hand."""

from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from napkin.accounting.forward import Precision
from napkin.accounting.linear import LinearCost
from napkin.accounting.overlap import (
    ALTERNATING,
    ATTENTION_CORE,
    ATTENTION_PREPARE,
    SHARED_EXPERTS,
    STAGGERED,
    OverlapStages,
    schedule_of,
    stage_of,
)
from napkin.accounting.ranks import ROUTED_EXPERTS
from napkin.catalog import load_accelerator, load_model
from napkin.serving.step import StepShape
from napkin.specs.layout import ParallelLayout
from napkin.specs.modules import OpKind
from napkin.timing.efficiency import Efficiency
from napkin.timing.layout import LayoutTimer
from napkin.timing.steps import RooflineTimer

# DeepSeek-V3's config.json: hidden 7,168; 61 layers (3 dense, 58 MoE); q_lora_rank 1,536,
# kv_lora_rank 512, 128 heads of qk_nope 128 + qk_rope 64 (192) and v_head_dim 128; 256 routed
# experts top-8 and one shared expert, moe_intermediate_size 2,048; 576 latent numbers cached
# per token and layer. FP8 weights (1 byte each), BF16 KV. H100 SXM: 3.35 TB/s.
H, LAYERS, MOE_LAYERS, BW = 7168, 61, 58, 3.35e12


def _dep72():
    m, acc = load_model("deepseek-v3"), load_accelerator("h100-sxm")
    p = Precision.of("fp8", "bf16")
    dev = RooflineTimer.of(m, acc, "fp8", Efficiency())
    layout = ParallelLayout(1, 72, 72, True, redundant_experts=32)
    return m, p, dev, layout


def test_stages_of_deepseek_v3_ops():
    """SGLang's decode stages: ``op_prepare`` (the q/kv projections, MLA's absorbed kv_b) and
    ``op_core`` (the attention kernel and o_proj) around the router, the shared experts apart;
    routed experts, the dense layers' MLP and the LM head hide nothing."""
    assert stage_of("attn/q_a", OpKind.PROJECTION) == ATTENTION_PREPARE
    assert stage_of("attn/kv_b", OpKind.PROJECTION) == ATTENTION_PREPARE
    assert stage_of("norms", OpKind.NORM) == ATTENTION_PREPARE
    assert stage_of("attn/scores", OpKind.ATTN_SCORE) == ATTENTION_CORE
    assert stage_of("attn/o", OpKind.PROJECTION) == ATTENTION_CORE
    assert stage_of("moe/router", OpKind.ROUTER) == ATTENTION_CORE
    assert stage_of("moe/shared/up", OpKind.EXPERT) == SHARED_EXPERTS
    assert stage_of("moe/experts/up", OpKind.EXPERT) is None
    assert stage_of("mlp/up", OpKind.FFN) is None
    assert stage_of("lm_head", OpKind.LM_HEAD) is None
    # Gated DeltaNet (Qwen3-Next): its projections prepare, its recurrence and out_proj core
    assert stage_of("attn/in_proj_qkvz", OpKind.PROJECTION) == ATTENTION_PREPARE
    assert stage_of("attn/state_update", OpKind.ATTN_SCORE) == ATTENTION_CORE
    assert stage_of("attn/out_proj", OpKind.PROJECTION) == ATTENTION_CORE


def test_deepseek_v3_stage_rates_by_hand():
    """Per layer (FP8, 1 byte a weight): prepare q_a 7,168·1,536 + q_b 1,536·128·192 + kv_a
    7,168·576 + kv_b 512·128·(128 + 128) = 69,664,768 weights (plus the layer's norms, 16.6 kB),
    2 FLOPs a weight a token; core o_proj 128·128·7,168 in 61 layers and the router 7,168·256
    in 58; shared experts 3·7,168·2,048 in 58."""
    m, p = load_model("deepseek-v3"), Precision.of("fp8", "bf16")
    s = OverlapStages.of(m, p)
    prepare = H * 1536 + 1536 * 128 * 192 + H * 576 + 512 * 128 * 256
    assert prepare == 69_664_768
    assert s.prepare.weight_bytes / LAYERS == pytest.approx(prepare, rel=3e-4)
    assert s.prepare.flops_per_token == pytest.approx(2 * prepare * LAYERS, rel=1e-12)
    assert s.core.weight_bytes == 128 * 128 * H * LAYERS + H * 256 * MOE_LAYERS
    assert s.shared.weight_bytes == 3 * H * 2048 * MOE_LAYERS
    assert s.shared.flops_per_token == 2 * s.shared.weight_bytes
    assert s.layers == LAYERS
    assert s.prepare.sixteen_per_token == s.core.sixteen_per_token == 0.0


def test_dep72_deepseek_v3_decode_with_sglang_overlap_by_hand():
    """The SGLang blog's decode layout: EP72 over 9 nodes of 8 H100 with 32 redundant experts
    (288 slots, 4 a GPU), DP attention, two-batch overlap; 256 sequences a GPU at 2,000 cached
    tokens, at the roofline ceiling (memory-bound: every stage time is its bytes / 3.35 TB/s).

    A micro-batch is 128 sequences a GPU. Per layer: prepare 69.68 MB → 20.80 µs; core o_proj
    and router (7,270,301,696 B over 61 layers) plus half the rank's KV, 256·2,001·576·2·61 / 2
    B over 61 layers → 123.65 µs; shared experts 44.04 MB → 13.15 µs.
    A token's 8 slots of 288 land on D = 72·(1 − C(284, 8)/C(288, 8)) = 7.7114 ranks, 71/72 of
    them remote; of those, 64/71 leave the node over its 50 GB/s NIC (7/71 on 450 GB/s NVLink:
    less time), so a micro-batch's dispatch per layer is 128·D·(71/72)·7,168·1.03125 B · 64/71
    / 50 GB/s + 10 µs = 139.71 µs and its combine (BF16, 2 B) 261.56 µs.
    SGLang's decode schedule hides a dispatch under the sender's shared experts and the other
    micro-batch's prepare, a combine under the other's core: (139.71 − 13.15 − 20.80) +
    (261.56 − 123.65) = 243.67 µs a layer and micro-batch, ×2×58 = 28.27 ms exposed, on top
    of both micro-batches' reads: a 54.8 ms step (measured: 92 ms; without the overlap napkin
    has 64.0 ms)."""
    m, p, dev, layout = _dep72()
    timer = LayoutTimer.of(m, p, layout, dev, 450e9, 10e-6, engine="sglang")
    seqs = 256 * 72
    parts = LinearCost.of(m, p).parts(StepShape(seqs, seqs * 2000, []))
    kv_rank = 256 * 2001 * 576 * 2 * LAYERS
    assert timer.cost.rank_parts(parts, seqs)[3] == kv_rank

    t = timer.stage_s(parts, seqs)
    prepare_bytes = OverlapStages.of(m, p).prepare.weight_bytes
    assert t[ATTENTION_PREPARE] == pytest.approx(prepare_bytes / LAYERS / BW, rel=1e-6)
    assert t[ATTENTION_PREPARE] == pytest.approx(20.80e-6, rel=1e-3)
    core = (128 * 128 * H * LAYERS + H * 256 * MOE_LAYERS + kv_rank / 2) / LAYERS / BW
    assert t[ATTENTION_CORE] == pytest.approx(core, rel=1e-6)
    assert t[ATTENTION_CORE] == pytest.approx(123.65e-6, rel=1e-3)
    assert t[SHARED_EXPERTS] == pytest.approx(3 * H * 2048 / BW, rel=1e-6)

    d = 72 * (1 - comb(284, 8) / comb(288, 8))
    assert d == pytest.approx(7.7114, abs=1e-4)
    sends = 128 * d * 71 / 72 * H * 64 / 71 / 50e9
    dispatch, combine = timer.comm.layer_alltoall_s(seqs / 2)
    assert dispatch == pytest.approx(sends * 1.03125 + 10e-6, rel=1e-9)
    assert combine == pytest.approx(sends * 2 + 10e-6, rel=1e-9)
    assert (dispatch, combine) == pytest.approx((139.71e-6, 261.56e-6), rel=1e-4)

    exposed = 2 * MOE_LAYERS * ((dispatch - t[SHARED_EXPERTS] - t[ATTENTION_PREPARE])
                                + (combine - t[ATTENTION_CORE]))
    assert exposed == pytest.approx(28.27e-3, rel=1e-3)
    assert timer.overlap_exposed_s(parts, seqs) == pytest.approx(exposed, rel=1e-12)
    _, _, weights, kv, _ = timer.cost.rank_parts(parts, seqs)
    step = timer.step_s(parts, seqs)
    assert step == pytest.approx((2 * weights + kv) / BW + exposed, rel=1e-12)
    assert step == pytest.approx(54.8e-3, rel=1e-3)
    plain = LayoutTimer.of(m, p, ParallelLayout(1, 72, 72, redundant_experts=32), dev, 450e9,
                           10e-6, engine="sglang")
    assert plain.step_s(parts, seqs) == pytest.approx(64.0e-3, rel=1e-3)


def test_a_steps_own_all_to_all_time_is_not_hidden_by_the_overlap():
    """A fitted profile's ``alltoall_step`` (a time once a step that runs all-to-alls: the
    ranks' wait for the slowest, host work) adds to the step whole, with two-batch overlap as
    without, and not to a step whose tokens cross no rank (attention TP 8 over EP 8). The DEP72
    step of the test above, 54.8 ms with the overlap and 64.0 ms without, gains 5 ms each."""
    m, p, dev, layout = _dep72()
    seqs = 256 * 72
    parts = LinearCost.of(m, p).parts(StepShape(seqs, seqs * 2000, []))
    for lay in (layout, ParallelLayout(1, 72, 72, redundant_experts=32)):
        base = LayoutTimer.of(m, p, lay, dev, 450e9, 10e-6, engine="sglang")
        fixed = LayoutTimer.of(m, p, lay, dev, 450e9, 10e-6, engine="sglang",
                               alltoall_step_s=5e-3)
        assert fixed.step_s(parts, seqs) - base.step_s(parts, seqs) == pytest.approx(5e-3)
    tp8 = ParallelLayout(8, 1, 8)
    parts8 = LinearCost.of(m, p).parts(StepShape(256, 256 * 2000, []))
    base, fixed = (LayoutTimer.of(m, p, tp8, dev, 450e9, 10e-6, alltoall_step_s=s)
                   for s in (0.0, 5e-3))
    assert fixed.step_s(parts8, 256) == base.step_s(parts8, 256)


def test_alternating_schedule_hides_the_combine_under_the_routed_experts():
    """vLLM's dual-batch overlap (and SGLang's prefill) alternate the micro-batches at every
    all-to-all: a dispatch runs under the other's whole attention side (20.80 + 123.65 + 13.15
    µs: all of the dispatch's 139.71 µs hides), a combine under its routed experts — the
    busiest rank's 4 expert slots, all touched, 4·3·7,168·2,048 B = 176.2 MB → 52.59 µs a
    layer. Exposed: 2·58·(261.56 − 52.59) µs = 24.24 ms."""
    m, p, dev, layout = _dep72()
    timer = LayoutTimer.of(m, p, layout, dev, 450e9, 10e-6, engine="vllm")
    seqs = 256 * 72
    parts = LinearCost.of(m, p).parts(StepShape(seqs, seqs * 2000, []))
    t = timer.stage_s(parts, seqs)
    assert t[ROUTED_EXPERTS] == pytest.approx(4 * 3 * H * 2048 / BW, rel=1e-3)
    _, combine = timer.comm.layer_alltoall_s(seqs / 2)
    assert timer.overlap_exposed_s(parts, seqs) == pytest.approx(
        2 * MOE_LAYERS * (combine - t[ROUTED_EXPERTS]), rel=1e-12)
    assert timer.overlap_exposed_s(parts, seqs) == pytest.approx(24.24e-3, rel=2e-3)


def test_schedules():
    assert schedule_of("sglang", prefill=False) == STAGGERED
    assert schedule_of("sglang", prefill=True) == ALTERNATING
    assert schedule_of("vllm", prefill=False) == ALTERNATING
    assert schedule_of(None, prefill=False) == ALTERNATING


def test_all_to_all_against_deepep_low_latency_kernels():
    """DeepEP's published low-latency kernels (deepseek-ai/DeepEP docs/legacy.md, H800 with
    one 400 Gb/s CX7 NIC a GPU: 128 tokens a rank, hidden 7,168, top-8 of 256 experts, FP8
    dispatch, BF16 combine): at EP 64 a dispatch takes 173 µs and a combine 314 µs; at EP 128,
    192 µs and 369 µs. napkin's layer all-to-all for the same (DeepSeek-V3, 128 tokens a rank,
    8 GPUs a node, 50 GB/s NICs, 10 µs latency) reads 18–24 % short: DeepEP's low-latency mode
    sends a token once per expert rather than once per rank, and its kernels reach 39–46 GB/s
    of the NIC's 50 (the table's own bandwidth column)."""
    m, p = load_model("deepseek-v3"), Precision.of("fp8", "bf16")
    acc = load_accelerator("h100-sxm")
    dev = RooflineTimer.of(m, acc, "fp8", Efficiency())
    for ranks, (dispatch_s, combine_s) in {64: (173e-6, 314e-6), 128: (192e-6, 369e-6)}.items():
        timer = LayoutTimer.of(m, p, ParallelLayout(1, ranks, ranks), dev, 160e9, 10e-6)
        d, c = timer.comm.layer_alltoall_s(128 * ranks)
        assert -0.30 < d / dispatch_s - 1 < -0.10
        assert -0.30 < c / combine_s - 1 < -0.10


@settings(max_examples=40, deadline=None)
@given(per_gpu=st.integers(1, 512), context=st.integers(1, 8000),
       ranks=st.sampled_from([8, 16, 32]), engine=st.sampled_from(["sglang", "vllm"]),
       prefill=st.booleans())
def test_overlap_exposes_at_most_the_all_to_alls(per_gpu, context, ranks, engine, prefill):
    """With the overlap a step takes at least both micro-batches' work and at most that plus
    every all-to-all of both micro-batches (each paying its own latency)."""
    m, p = load_model("deepseek-v3"), Precision.of("fp8", "bf16")
    acc = load_accelerator("h100-sxm")
    dev = RooflineTimer.of(m, acc, "fp8", Efficiency(0.5, 0.8))
    timer = LayoutTimer.of(m, p, ParallelLayout(1, ranks, ranks, True), dev, 450e9, 10e-6,
                           engine=engine)
    seqs = per_gpu * ranks
    shape = (StepShape(0, 0, [(context, per_gpu, 1)] * ranks) if prefill
             else StepShape(seqs, seqs * context, []))
    tokens = seqs
    parts = LinearCost.of(m, p).parts(shape)
    device = dev.step_s(timer.cost.run_parts(parts, tokens), tokens / ranks, prefill)
    dispatch, combine = timer.comm.layer_alltoall_s(tokens / 2)
    step = timer.step_s(parts, tokens, prefill)
    assert device <= step * (1 + 1e-12)
    assert step <= (device + 2 * MOE_LAYERS * (dispatch + combine)) * (1 + 1e-12)
    assert all(v >= -1e-15 for v in timer.stage_s(parts, tokens, prefill).values())
