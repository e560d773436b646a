"""The busiest rank of a parallel layout and its step time, against hand derivations."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from napkin.accounting.forward import Precision, routed_weight_bytes, weight_bytes
from napkin.accounting.linear import LinearCost
from napkin.accounting.ranks import RankCost, dispatch_bytes_per_element
from napkin.accounting.routing import expected_max_rank_experts_touched
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.serving.step import StepShape
from napkin.specs.layout import ParallelLayout
from napkin.timing.efficiency import Efficiency
from napkin.timing.layout import LayoutTimer
from napkin.timing.steps import RooflineTimer

# DeepSeek-V3's config.json: hidden 7,168; 61 layers, the first 3 dense; 256 routed experts,
# top-8, moe_intermediate_size 2,048 (gate, up, down: 3·7,168·2,048 weights an expert);
# MLA latent kv_lora_rank 512 + qk_rope_head_dim 64 = 576 numbers cached per token and layer.
H, LAYERS, MOE_LAYERS, EXPERTS, TOP_K, EXPERT_INTER = 7168, 61, 58, 256, 8, 2048
LATENT = 512 + 64


def test_dep8_deepseek_v3_decode_step_on_8_h100_by_hand():
    """DEP8 (attention data parallel 8, expert parallel 8, attention TP 1) DeepSeek-V3, FP8
    weights, BF16 KV, a decode step of 256 sequences per GPU (2,048 in the replica) at 2,000
    cached tokens each, on 8×H100 SXM (3.35 TB/s, 1,978.9 TFLOP/s FP8) at the roofline
    ceiling, NVLink 450 GB/s a direction, 10 µs a collective. (At FP8 the weights, 84 GB a GPU,
    do not fit an 80 GB H100: this pins the step's arithmetic, not a deployment.)"""
    m, acc = load_model("deepseek-v3"), load_accelerator("h100-sxm")
    p = Precision.of("fp8", "bf16")
    lay = ParallelLayout(attention_tp=1, attention_dp=8, expert_parallel=8)
    timer = LayoutTimer.of(m, p, lay, RooflineTimer.of(m, acc, "fp8", Efficiency()),
                           450e9, 10e-6)
    seqs, ctx = 2048, 2000
    parts = LinearCost.of(m, p).parts(StepShape(seqs, seqs * ctx, []))
    dense, attention, weights, kv, _ = timer.cost.rank_parts(parts, seqs)

    # KV: each rank caches its own 256 sequences' latents, read once and one token written:
    # 256 · (2,000 + 1) · 61 layers · 576 · 2 B = 35,997,253,632 B.
    kv_rank = 256 * (ctx + 1) * LAYERS * LATENT * 2
    assert kv_rank == 35_997_253_632
    assert kv == pytest.approx(kv_rank, rel=1e-12)

    # Expert reads: 2,048 tokens × 8 picks touch every expert (a given expert is missed with
    # probability (1 − 8/256)^2048 ≈ 5e-29), so the busiest rank reads all its 32 experts:
    # 32 · 3 · 7,168 · 2,048 · 58 layers · 1 B = 81,738,596,352 B; the attention side (every
    # weight but the routed experts, a copy on each rank) is read whole.
    expert_bytes = 3 * H * EXPERT_INTER * MOE_LAYERS
    routed = EXPERTS * expert_bytes
    assert routed == routed_weight_bytes(m, p)
    attention_side = weight_bytes(m, p) - m.embedding_params - routed  # the lookup reads 0
    assert weights == pytest.approx(attention_side + 32 * expert_bytes, rel=1e-9)
    assert 32 * expert_bytes == 81_738_596_352

    # All-to-all: a rank's 256 tokens each go to D = 8·(1 − C(224, 8)/C(256, 8)) ranks on
    # average (one send per rank holding any of its 8 experts), 7/8 of them remote, as FP8
    # with a 4-byte scale per 128 (1.03125 B per element) out and BF16 (2 B) back.
    d = 8 * (1 - math.comb(224, 8) / math.comb(256, 8))
    assert d == pytest.approx(5.2947, abs=1e-4)
    a2a = 256 * d * 7 / 8 * H * (1 + 4 / 128 + 2)
    assert timer.cost.alltoall_bytes(seqs) == pytest.approx(a2a, rel=1e-12)
    assert a2a == pytest.approx(25.77e6, rel=1e-3)
    # 58 MoE layers × (bytes / 450 GB/s + dispatch and combine latency 2 × 10 µs)
    comm = MOE_LAYERS * (a2a / 450e9 + 20e-6)
    assert timer.comm.seconds(seqs) == (0.0, pytest.approx(comm, rel=1e-12))
    assert comm == pytest.approx(4.481e-3, rel=1e-3)

    # Step: memory-bound, (81.7 + 16.2 + 36.0) GB / 3.35 TB/s ≈ 39.98 ms, plus 4.48 ms.
    compute_s = (dense + attention) / 1978.9e12
    memory_s = (weights + kv) / 3.35e12
    assert compute_s < memory_s
    assert timer.step_s(parts, seqs) == pytest.approx(memory_s + comm, rel=1e-12)
    assert timer.step_s(parts, seqs) == pytest.approx(44.46e-3, rel=1e-3)


def test_tp8_caches_the_whole_latent_on_every_rank_and_dep8_an_eighth():
    """MLA's latent KV is one head: tensor parallelism replicates it on every rank, data-parallel
    attention splits the requests, so DEP8 reads 1/8 of TP8's KV per rank."""
    m, p = load_model("deepseek-v3"), Precision.of("fp8", "bf16")
    parts = LinearCost.of(m, p).parts(StepShape(64, 64 * 4096, []))
    tp8 = RankCost.of(m, p, ParallelLayout(8)).rank_parts(parts, 64)
    dep8 = RankCost.of(m, p, ParallelLayout(1, 8, 8)).rank_parts(parts, 64)
    assert tp8[3] == parts[3]
    assert dep8[3] == pytest.approx(parts[3] / 8, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), seqs=st.integers(1, 512),
       ctx=st.integers(0, 32_768), chunk=st.integers(0, 4096))
def test_a_tensor_parallel_layout_is_the_roofline_timer(tp, seqs, ctx, chunk):
    """ParallelLayout(tp) through LayoutTimer (one rank's work on a one-GPU roofline plus the
    attention all-reduces) gives RooflineTimer.of(tp)'s step time: every part over tp, the KV
    over kv_devices(tp), the same all-reduces."""
    m, acc = load_model("qwen3-30b-a3b"), load_accelerator("h100-sxm")
    p, eff = Precision.of("bf16"), Efficiency(0.6, 0.8, 1e-4)
    chunks = [(0, chunk, 1)] if chunk else []
    parts = LinearCost.of(m, p).parts(StepShape(seqs, seqs * ctx, chunks))
    tokens = seqs + chunk
    whole = RooflineTimer.of(m, acc, "bf16", eff, tp, 450e9, 10e-6)
    layout = LayoutTimer.of(m, p, ParallelLayout(tp), RooflineTimer.of(m, acc, "bf16", eff),
                            450e9, 10e-6)
    assert layout.step_s(parts, tokens) == pytest.approx(whole.step_s(parts, tokens), rel=1e-9)


def test_expert_parallel_one_token_reads_the_busiest_ranks_experts():
    """Qwen3-30B-A3B (128 experts, top-8, 48 MoE layers, hidden 2,048, expert width 768) over 4
    ranks, one decode token: tensor-parallel experts read 8 experts' slices, 2 experts' worth
    a rank; whole experts make the busiest rank read every expert of its own the token picks,
    M = E[max over 4 ranks of experts touched] — the rest of the step is the same."""
    m, p = load_model("qwen3-30b-a3b"), Precision.of("bf16")
    parts = LinearCost.of(m, p).parts(StepShape(1, 1000, []))
    tp = RankCost.of(m, p, ParallelLayout(4)).rank_parts(parts, 1)
    ep = RankCost.of(m, p, ParallelLayout(4, 1, 4)).rank_parts(parts, 1)
    expert = 3 * 2048 * 768 * 48 * 2  # one expert's bytes over the 48 layers, BF16
    busiest = expected_max_rank_experts_touched(128, 8, 4, 1)
    assert 2 < busiest < 8
    assert ep[2] - tp[2] == pytest.approx((busiest - 2) * expert, rel=1e-9)
    assert ep[3] == tp[3] and ep[1] == tp[1]


def test_dispatch_precision():
    assert dispatch_bytes_per_element("fp8") == 1.03125
    assert dispatch_bytes_per_element("bf16") == 2


def test_two_batch_overlap_pays_the_weights_twice_to_hide_the_all_to_all():
    """With TBO a step is two micro-batches, each reading the rank's weights, each all-to-all
    of one under a stage of the other's work (tests/accounting/test_overlap.py). DEP8
    DeepSeek-V3 decode of 2,048 sequences at 2,000 tokens (the hand-worked step above,
    memory-bound): without TBO (81.7 + 16.2 + 36.0) GB / 3.35 TB/s + 4.48 ms = 44.46 ms; with
    it (2·97.9 + 36.0) GB / 3.35 TB/s = 69.2 ms, every all-to-all hidden (on NVLink a layer's
    dispatch is 20 µs, under 35 µs of attention side) — the overlap loses in a memory-bound
    decode within a node. A prefill of 16,384 tokens a GPU is compute-bound: its weights'
    second read hides under the FLOPs, and so does its all-to-all."""
    m, acc = load_model("deepseek-v3"), load_accelerator("h100-sxm")
    p = Precision.of("fp8", "bf16")
    dev = RooflineTimer.of(m, acc, "fp8", Efficiency())
    plain = LayoutTimer.of(m, p, ParallelLayout(1, 8, 8), dev, 450e9, 10e-6)
    tbo = LayoutTimer.of(m, p, ParallelLayout(1, 8, 8, True), dev, 450e9, 10e-6)
    parts = LinearCost.of(m, p).parts(StepShape(2048, 2048 * 2000, []))
    _, _, weights, kv, _ = plain.cost.rank_parts(parts, 2048)
    assert tbo.cost.run_parts(parts, 2048)[2] == pytest.approx(2 * weights, rel=1e-12)
    assert plain.cost.run_parts(parts, 2048) == plain.cost.rank_parts(parts, 2048)
    assert plain.step_s(parts, 2048) == pytest.approx(44.46e-3, rel=1e-3)
    assert tbo.step_s(parts, 2048) == pytest.approx((2 * weights + kv) / 3.35e12, rel=1e-12)
    assert tbo.step_s(parts, 2048) == pytest.approx(69.2e-3, rel=1e-3)
    series = tbo.series(parts, None, 2048)
    assert series.time(1) == pytest.approx(tbo.step_s(parts, 2048), rel=1e-12)

    tokens = 8 * 16384
    prefill = LinearCost.of(m, p).parts(StepShape(0, 0, [(0, 4096, 1)] * (tokens // 4096)))
    dense, attention, w, kv, _ = tbo.cost.run_parts(prefill, tokens)
    device = max((dense + attention) / 1978.9e12, (w + kv) / 3.35e12)
    _, a2a = tbo.comm.seconds(tokens)
    assert device > a2a  # 0.677 s of FLOPs hide the 0.214 s all-to-all (NVLink 450 GB/s)
    assert tbo.step_s(prefill, tokens, True) == pytest.approx(device, rel=1e-9)
    assert tbo.step_s(prefill, tokens, True) < plain.step_s(prefill, tokens, True)


def test_across_nodes_the_nic_carries_the_remote_share():
    """DEP16 over two 8-GPU nodes: of a token's remote sends, 7/15 stay on the node
    (NVLink 450 GB/s) and 8/15 cross it (50 GB/s): the NIC sets the time."""
    m, acc = load_model("deepseek-v3"), load_accelerator("h100-sxm")
    p = Precision.of("fp8", "bf16")
    t = LayoutTimer.of(m, p, ParallelLayout(1, 16, 16),
                       RooflineTimer.of(m, acc, "fp8", Efficiency()), 450e9, 10e-6, 50e9, 8)
    b = t.cost.alltoall_bytes(4096)
    assert t.comm.seconds(4096)[1] == pytest.approx(58 * (b * 8 / 15 / 50e9 + 20e-6), rel=1e-12)


def test_moe_tp_by_ep_one_token_by_enumeration():
    """Qwen3-235B-A22B on TP8 with EP4 (MoE TP 2): 4 groups of 32 whole experts, each expert
    split over its group's 2 GPUs. One token's 8 distinct experts fall into the groups as a
    multivariate hypergeometric draw (8 of 128, 32 per group); the busiest GPU's routed FLOPs
    are f/8 · E[max group count] / 2 and its expert bytes E[max] · b / 2 (each picked expert
    touched once), E[max] enumerated here over all compositions of 8: 3.4859. napkin's maximum
    over ranks treats the ranks as independent with a correction (napkin.accounting.routing):
    within 2.5 % of the exact value (3.4257 assignments, 3.4520 experts touched)."""
    m, p = load_model("qwen3-235b-a22b"), Precision.of("bf16", "bf16")
    cost = RankCost.of(m, p, ParallelLayout(8, 1, 4))
    assert cost.layout.moe_tp == 2 and cost.layout.label() == "tp8 ep4"
    total = math.comb(128, 8)
    e_max = 0.0
    for a in range(9):
        for b in range(9 - a):
            for c in range(9 - a - b):
                d = 8 - a - b - c
                ways = (math.comb(32, a) * math.comb(32, b) * math.comb(32, c)
                        * math.comb(32, d))
                e_max += ways / total * max(a, b, c, d)
    assert e_max == pytest.approx(3.4859, abs=1e-4)
    g = cost.groups[0]
    _, _, rank_f, rank_b = cost.routed(1)
    assert rank_f == pytest.approx(g.flops_per_token / 8 * e_max / 2, rel=0.025)
    assert rank_b == pytest.approx(e_max * g.bytes_per_expert / 2, rel=0.025)
    # the replica's expert weights divide over all 8 GPUs, as with whole experts per GPU
    assert ParallelLayout(8, 1, 4).expert_share(m) == ParallelLayout(8, 1, 8).expert_share(m)
    assert ParallelLayout(8, 1, 4).flags("trtllm") == ["--tp_size 8", "--ep_size 4"]
    with pytest.raises(NapkinError, match="vLLM's expert parallelism spans every rank"):
        ParallelLayout(8, 1, 4).flags("vllm")


def test_a_whole_prompt_on_one_data_parallel_group_sets_the_step():
    """DEP8 DeepSeek-V3: a step of 64 decodes (at 2,000 tokens) and one 4,096-token prompt.
    Spread evenly, each GPU would run (64 + 4,096)/8 = 520 tokens of the attention side; but
    the prompt runs whole on the GPU holding its request, beside its 8 decodes, and the groups
    wait for each other at every MoE layer: that GPU's attention side is 4,104 tokens' (its
    dense FLOPs less their routed experts', its attention FLOPs and KV whole), while the routed
    experts still take the busiest rank's share of all 4,160 tokens."""
    m, p = load_model("deepseek-v3"), Precision.of("fp8", "bf16")
    cost = LinearCost.of(m, p)
    ranks = RankCost.of(m, p, ParallelLayout(1, 8, 8))
    step = cost.step_parts(64, 64 * 2000, [(0, 4096, 1)])
    group = cost.step_parts(8, 8 * 2000, [(0, 4096, 1)])
    tokens = 64 + 4096
    even = ranks.rank_parts(step, tokens)
    busy = ranks.rank_parts(step, tokens, (group, 8 + 4096))
    rank_f = ranks.routed(tokens)[2]
    g_routed = ranks.routed(8 + 4096)[0]
    assert busy[0] == pytest.approx(group[0] - g_routed + rank_f, rel=1e-12)
    assert busy[1] == pytest.approx(group[1], rel=1e-12)  # attention FLOPs whole
    assert busy[3] == pytest.approx(group[3], rel=1e-12)  # its KV whole (MLA: d = 1)
    assert busy[2] == even[2]  # the weights it reads do not change
    assert 7 < (busy[0] - rank_f) / (even[0] - rank_f) < 8.2  # ≈ 4,104 / 520 tokens
    assert ranks.rank_parts(step, tokens, (cost.step_parts(8, 8 * 2000, []), 8)) == even


def test_measured_balancedness_sets_the_busiest_ranks_routed_load():
    """DEP8 DeepSeek-V3, 16,384 tokens (2,048 a GPU): the mean rank load is 16,384·8/8 =
    16,384 (token, expert) pairs; uniform routing's busiest rank carries ≈ 1.1 % more. A
    measured balancedness of 0.8 (EPLB's mean/max) puts 16,384/0.8 = 20,480 pairs on the busiest
    rank, so its routed FLOPs are f/k·20,480 with f = 2·3·7,168·2,048·8·58 FLOPs a token over
    its 8 experts in the 58 MoE layers; its expert bytes (every local expert touched) do not
    change. Balancedness 1 leaves the uniform figure: the statistical excess stays."""
    m, p = load_model("deepseek-v3"), Precision.of("fp8", "bf16")
    tokens = 16384
    uniform = RankCost.of(m, p, ParallelLayout(1, 8, 8))
    skewed = RankCost.of(m, p, ParallelLayout(1, 8, 8, balancedness=0.8))
    one = RankCost.of(m, p, ParallelLayout(1, 8, 8, balancedness=1.0))
    f = 2 * 3 * H * EXPERT_INTER * TOP_K * MOE_LAYERS
    _, _, rank_f, rank_b = skewed.routed(tokens)
    assert rank_f == pytest.approx(f / TOP_K * tokens / 0.8, rel=1e-12)
    _, _, uniform_f, uniform_b = uniform.routed(tokens)
    assert 1 < uniform_f / (f / TOP_K * tokens) < 1.02 and rank_b == uniform_b
    assert one.routed(tokens) == uniform.routed(tokens)
    assert skewed.busiest(skewed.groups[0], tokens)[0] == pytest.approx(20480)
    assert ParallelLayout(1, 8, 8, balancedness=0.8).label() == "dp8 ep8 bal 0.8"


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"attention_tp": 0}, "tensor_parallel"),
    ({"attention_dp": 0}, "data_parallel"),
    ({"attention_tp": 2, "attention_dp": 2, "expert_parallel": 3}, "expert_parallel"),
    ({"attention_dp": 8, "expert_parallel": 8, "balancedness": 0.0}, "expert_balancedness"),
    ({"attention_dp": 8, "expert_parallel": 8, "balancedness": 1.5}, "expert_balancedness"),
    ({"attention_dp": 8, "balancedness": 0.9}, "expert_balancedness"),
])
def test_bad_layouts(kwargs, field):
    with pytest.raises(NapkinError, match=f"^{field}:"):
        ParallelLayout(**kwargs)


def test_layouts_check_the_model():
    with pytest.raises(NapkinError, match=r"engine\.data_parallel"):
        ParallelLayout(1, 4).check(load_model("qwen3-8b"))
    with pytest.raises(NapkinError, match=r"engine\.expert_parallel: 128 experts"):
        ParallelLayout(1, 3, 3).check(load_model("qwen3-30b-a3b"))
    ParallelLayout(1, 8, 8).check(load_model("deepseek-v3"))


def test_flags_per_engine():
    dep = ParallelLayout(1, 8, 8)
    assert dep.label() == "dp8 ep8"
    assert dep.flags("vllm") == ["--tensor-parallel-size 1", "--data-parallel-size 8",
                                 "--enable-expert-parallel"]
    assert dep.flags("sglang") == ["--tp 8", "--dp 8", "--enable-dp-attention",
                                   "--moe-dense-tp-size 1", "--ep-size 8",
                                   "--moe-a2a-backend deepep"]
    assert dep.flags("trtllm") == ["--tp_size 8", "--ep_size 8"]
    assert dep.trtllm_options() == ["enable_attention_dp: true"]
    assert ParallelLayout(8).flags("vllm") == ["--tensor-parallel-size 8"]
    with pytest.raises(NapkinError, match="attention TP 1"):
        ParallelLayout(2, 4, 8).flags("trtllm")


@pytest.mark.parametrize(("model", "layout"), [
    ("deepseek-v3", ParallelLayout(1, 8, 8)), ("qwen3-235b-a22b", ParallelLayout(8, 1, 8)),
    ("qwen3-235b-a22b", ParallelLayout(2, 4, 8)), ("deepseek-v3", ParallelLayout(1, 16, 16)),
])
@pytest.mark.parametrize(("seqs", "chunk"), [(1, 0), (64, 0), (256, 2048), (0, 8192)])
def test_a_layout_basis_times_as_its_fitted_timer(model, layout, seqs, chunk):
    """Fitting sums LayoutBasis terms; predicting runs layout_timer around a fitted timer:
    coefficients · terms must be the timer's step time (the all-reduces through the model's
    allreduce and allreduce_bytes coefficients, the all-to-alls through alltoall and
    alltoall_bytes)."""
    from napkin.calibration.basis import FittedTimer, LayoutBasis, StepBasis, layout_timer
    from napkin.calibration.profile import load_profile
    from napkin.calibration.terms import TERMS

    m, acc, p = load_model(model), load_accelerator("h100-sxm"), Precision.of("fp8", "bf16")
    fitted = load_profile("trtllm").model
    device = FittedTimer(StepBasis.of(m, acc, "fp8", 1, 450e9), fitted)
    timer = layout_timer(m, p, layout, device, 450e9, 10e-6)
    basis = LayoutBasis.of(m, acc, p, layout, 450e9)
    chunks = [(0, chunk, 1)] if chunk else []
    parts = LinearCost.of(m, p).parts(StepShape(seqs, seqs * 3000, chunks))
    tokens = seqs + chunk
    want = timer.step_s(parts, tokens, bool(chunk))
    assert fitted.time(basis.terms(parts, tokens, bool(chunk))) == pytest.approx(want, rel=1e-9)
    a2a = 2 * m.blocks.count(m.blocks[-1]) if layout.all_to_all else 0
    x = basis.terms(parts, tokens)
    assert (x[TERMS.index("allreduce")], x[TERMS.index("alltoall")]) == (
        timer.comm.allreduces, a2a)


@settings(max_examples=30, deadline=None)
@given(tokens=st.integers(1, 40_000),
       shape=st.sampled_from([(256, 8, 8), (8, 2, 2), (128, 8, 4), (256, 8, 64)]))
def test_busiest_rank_on_its_grid_is_the_exact_figure(tokens, shape):
    """Past 512 tokens busiest_rank takes the routing figures at a grid point 1.1 % away and
    scales the load's excess by √(T/T'): within 0.1 % of the excess computed at T itself."""
    from napkin.accounting.ranks import busiest_rank
    from napkin.accounting.routing import expected_max_rank_tokens

    e, k, r = shape
    load, touched = busiest_rank(e, k, r, tokens)
    exact = expected_max_rank_tokens(e, k, r, tokens)
    mean = tokens * k / r
    assert load - mean == pytest.approx(exact - mean, rel=1e-3, abs=1e-9)
    assert touched == pytest.approx(expected_max_rank_experts_touched(e, k, r, tokens),
                                    rel=1e-3)


def test_redundant_experts_make_ep72_of_deepseek_v3():
    """256 experts do not divide over 72 GPUs; 32 redundant copies make 288 slots, 4 a GPU.
    A GPU then holds 4 experts' weights (256/72 = 3.56 without copies), and routing spreads
    over the 288 slots: the busiest rank's load and a token's destinations are the routing
    figures at E = 288."""
    from napkin.accounting.routing import expected_destination_ranks, expected_max_rank_tokens

    m, p = load_model("deepseek-v3"), Precision.of("fp8", "bf16")
    with pytest.raises(NapkinError, match=r"256 experts do not divide over 72"):
        ParallelLayout(1, 72, 72).check(m)
    lay = ParallelLayout(1, 72, 72, redundant_experts=32)
    lay.check(m)
    assert lay.label() == "dp72 ep72 +32r"
    assert lay.expert_share(m) == pytest.approx(4 / 256)
    assert "--ep-num-redundant-experts 32" in lay.flags("sglang")
    cost = RankCost.of(m, p, lay)
    seqs = 256 * 72
    parts = LinearCost.of(m, p).parts(StepShape(seqs, seqs * 2000, []))
    expert_flops = 3 * 2 * H * EXPERT_INTER * MOE_LAYERS  # one token through one expert
    busiest = expected_max_rank_tokens(288, 8, 72, seqs)
    assert busiest > 256 * 8  # the mean: 18,432 tokens × 8 picks over 72 ranks
    _, _, rank_f, rank_b = cost.routed(seqs)
    assert rank_f == pytest.approx(expert_flops * busiest, rel=1e-4)
    assert rank_b == pytest.approx(4 * 3 * H * EXPERT_INTER * MOE_LAYERS, rel=1e-9)
    d = expected_destination_ranks(288, 8, 72)
    assert cost.alltoall_bytes(seqs) == pytest.approx(
        256 * d * 71 / 72 * H * (1 + 4 / 128 + 2), rel=1e-12)
    assert cost.rank_parts(parts, seqs)[3] == pytest.approx(parts[3] / 72, rel=1e-12)


def test_all_to_alls_a_profile_did_not_fit_cost_the_links_own_time():
    """The DEP8 DeepSeek-V3 decode step of the hand-worked test above (2,048 sequences, 58 MoE
    layers, 25.77 MB of dispatch and combine a layer on the busiest rank) under fitted profiles:
    vLLM's leaves the all-reduces out of its fit (its per-layer time carries them), so its
    all-to-alls take the link's figures, 58 × (25.77 MB / 450 GB/s + 2 × 10 µs) = 4.48 ms
    (nothing before the pair existed); TensorRT-LLM's fits a time once a step that runs them
    (``alltoall_step``, on its attention-DP rows), takes the link's 10 µs a collective and
    times the bytes as its fitted all-reduces' (``allreduce_bytes`` × the ideal link time). The
    layout basis holds 116 all-to-alls, one step that runs them and no all-reduces (attention
    TP 1), and coefficients · terms is the timer's step."""
    from napkin.calibration.basis import FittedTimer, LayoutBasis, StepBasis, layout_timer
    from napkin.calibration.profile import load_profile
    from napkin.calibration.terms import TERMS

    m, acc = load_model("deepseek-v3"), load_accelerator("h100-sxm")
    p = Precision.of("fp8", "bf16")
    lay = ParallelLayout(attention_tp=1, attention_dp=8, expert_parallel=8)
    seqs, ctx = 2048, 2000
    parts = LinearCost.of(m, p).parts(StepShape(seqs, seqs * ctx, []))
    a2a = 256 * 8 * (1 - math.comb(224, 8) / math.comb(256, 8)) * 7 / 8 * H * (1 + 4 / 128 + 2)
    trt = load_profile("trtllm").model.as_dict()
    assert trt["alltoall"] == 10e-6
    for name, per_byte, step in (("vllm", 1.0, 0.0),
                                 ("trtllm", trt["allreduce_bytes"], trt["alltoall_step"])):
        model = load_profile(name).model
        device = FittedTimer(StepBasis.of(m, acc, "fp8", 1, 450e9), model)
        timer = layout_timer(m, p, lay, device, 450e9, 10e-6)
        want = MOE_LAYERS * (per_byte * a2a / 450e9 + 2 * 10e-6) + step
        assert timer.comm.seconds(seqs) == (0.0, pytest.approx(want, rel=1e-12))
        x = LayoutBasis.of(m, acc, p, lay, 450e9).terms(parts, seqs)
        assert (x[TERMS.index("allreduce")], x[TERMS.index("alltoall")],
                x[TERMS.index("alltoall_step")]) == (0.0, 116.0, 1.0)
        assert x[TERMS.index("alltoall_bytes")] == pytest.approx(MOE_LAYERS * a2a / 450e9)
        assert model.time(x) == pytest.approx(timer.step_s(parts, seqs), rel=1e-9)
    assert MOE_LAYERS * (a2a / 450e9 + 20e-6) == pytest.approx(4.481e-3, rel=1e-3)
