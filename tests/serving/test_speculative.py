"""Speculative decoding (MTP, EAGLE, draft models): tokens per step, the verification's cost,
and the simulator's virtual steps, against hand derivations and DeepSeek-V3's report."""

from pathlib import Path

import pytest

from napkin.accounting.batch import Batch, Segment
from napkin.accounting.forward import Precision, forward
from napkin.accounting.linear import LinearCost
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.inference.speculative import expected_tokens, mtp_draft_cost, tokens_per_step
from napkin.serving.scenario import Scenario, build
from napkin.timing.efficiency import Efficiency
from napkin.timing.steps import RooflineTimer


def test_deepseek_v3_mtp_acceptance_gives_its_reported_speedup():
    """DeepSeek-V3's technical report (§5.4.3): its one MTP token is accepted 85–90 % of the
    time, and decoding runs 1.8× as many tokens per second. One verification keeps 1 + 0.85 =
    1.85 to 1.90 tokens; a draft pass costs the MTP module's share of the parameters a token
    uses — its block (585,318,656 active), eh_proj (2·7,168²) and the shared head (7,168 ×
    129,280) over the main model's 36.6 B non-embedding active parameters, 4.4 % — so a step
    costs 1.044 plain steps and the speed-up is 1.85/1.044 = 1.77 to 1.90/1.044 = 1.82: the
    reported 1.8×."""
    m = load_model("deepseek-v3")
    draft = 585_318_656 + 2 * 7168 * 7168 + 129_280 * 7168
    active = m.active_params - m.embedding_params
    assert mtp_draft_cost(m) == pytest.approx(draft / active)
    assert mtp_draft_cost(m) == pytest.approx(0.0441, abs=1e-4)
    low, high = tokens_per_step([0.85]), tokens_per_step([0.90])
    assert (low, high) == (pytest.approx(1.85), pytest.approx(1.90))
    assert low / (1 + mtp_draft_cost(m)) == pytest.approx(1.77, abs=0.005)
    assert high / (1 + mtp_draft_cost(m)) == pytest.approx(1.82, abs=0.005)


def test_falling_acceptance_by_position():
    """Three draft tokens kept 80 %, then 60 % of those, then 50 %: 1 + 0.8 + 0.8·0.6 +
    0.8·0.6·0.5 = 2.52 tokens a verification; a constant rate is Leviathan's closed form."""
    assert tokens_per_step([0.8, 0.6, 0.5]) == pytest.approx(2.52)
    assert tokens_per_step([0.7] * 4) == pytest.approx(expected_tokens(0.7, 4))
    with pytest.raises(NapkinError, match=r"^acceptance"):
        tokens_per_step([1.2])


def test_a_verification_costs_what_forward_counts_for_its_tokens():
    """Qwen3-8B (GQA): 3 sequences at 100, 2,000 and 7,000 cached tokens each verifying 4
    tokens (1 + 3 drafted) cost what forward() counts for three 4-token segments read out at
    every position: 12 tokens, pairs 4·9,100 + 3·10."""
    m, p = load_model("qwen3-8b"), Precision.of("bf16")
    got = LinearCost.of(m, p).verify_parts(3, 9100, 4)
    ref = forward(m, Batch(tuple(Segment(c, 4, 4) for c in (100, 2000, 7000))), p)
    assert sum(got[:2]) + got[4] == pytest.approx(ref.flops, rel=1e-12)
    assert got[2] + got[3] == pytest.approx(ref.bytes, rel=1e-12)


def test_mla_verifies_in_latent_space():
    """DeepSeek-V3 verifies as it decodes (absorbed MLA, "MQA with a 576-wide head"): one
    sequence at 4,096 cached tokens verifying 2 tokens has 2·4,096 + 3 pairs, each
    2·128·576 + 2·128·512 FLOPs a layer, over 61 layers."""
    m, p = load_model("deepseek-v3"), Precision.of("fp8")
    cost = LinearCost.of(m, p)
    pairs = 2 * 4096 + 3
    attention = cost.verify_parts(1, 4096, 2)[1]
    assert attention == pytest.approx(pairs * 61 * 2 * 128 * (576 + 512), rel=1e-12)


def _scenario(**spec) -> Scenario:
    return Scenario.model_validate({
        "model": "qwen3-8b", "gpu": "h100-sxm", "calibration": "roofline", "mfu": 0.5,
        "mbu": 0.8, "engine": {"max_num_seqs": 4, **spec},
        "workload": {"classes": {"a": {"input_tokens": 1000, "output_tokens": 3}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 0.001, "num_requests": 1}}})


def test_one_speculative_request_by_hand():
    """One request, 1,000-token prompt, 3 output tokens, 2 drafted a step kept 80 % / 50 %
    (L = 1 + 0.8 + 0.4 = 2.2), a draft token costing 0.1 of a decode step: its two decode
    steps are virtual steps of ``t(verify of 3 tokens + 2 × 0.1 decode) / 2.2`` at 1,000 and
    1,001 cached tokens — the roofline at MFU 0.5 / MBU 0.8 of those parts."""
    b = build(_scenario(speculative={"draft_tokens": 2, "acceptance": [0.8, 0.5],
                                     "draft_cost": 0.1}), Path("."))
    run = b.simulate()
    r = run.records
    tpot = float((r.finish_s[0] - r.first_token_s[0]) / 2)
    m, acc = load_model("qwen3-8b"), load_accelerator("h100-sxm")
    cost, timer = LinearCost.of(m, Precision.of("bf16")), RooflineTimer.of(
        m, acc, "bf16", Efficiency(0.5, 0.8))

    def virtual(ctx: int) -> float:
        v, d = cost.verify_parts(1, ctx, 3), cost.decode_parts(1, ctx)
        parts = tuple(a + 0.2 * b for a, b in zip(v, d, strict=True))
        return timer.step_s(parts, 3) / 2.2

    assert tpot == pytest.approx((virtual(1000) + virtual(1001)) / 2, rel=1e-9)
    plain = build(_scenario(), Path(".")).simulate().records
    plain_tpot = float((plain.finish_s[0] - plain.first_token_s[0]) / 2)
    assert 1.5 < plain_tpot / tpot < 2.2  # a memory-bound step: nearly L faster


def test_speculative_errors_name_the_field():
    with pytest.raises(ValueError, match="acceptance: give one rate or 2"):
        _scenario(speculative={"draft_tokens": 2, "acceptance": [0.8]})
    with pytest.raises(NapkinError) as e:
        build(_scenario(speculative={"draft_tokens": 1}), Path("."))
    assert str(e.value).startswith("engine.speculative.draft_cost: qwen3-8b has no MTP module")


def test_a_sliding_window_model_verifies_with_its_windows():
    """gpt-oss-20b (every other layer a 128-token sliding window) with EAGLE-style drafts of 2
    tokens at 10 % of a decode step each: a decode-only step of sequences at 50, 127 and 3,000
    cached tokens costs what forward() counts for three 3-token segments read out whole (the
    window caps each sliding layer's pairs at 128 a token) plus 2 × 0.1 of the plain decode
    step's; the scenario runs, faster per token than without drafts at 0.9 acceptance."""
    from napkin.serving.speculative import Speculation, SpeculativeCost
    from napkin.serving.step import StepShape

    m, p = load_model("gpt-oss-20b"), Precision.of("bf16")
    ctx = [50, 127, 3000]
    spec = SpeculativeCost(LinearCost.of(m, p), Speculation(2, (0.9, 0.9), 0.1))
    got = spec.parts(StepShape(3, sum(ctx), [], ctx))
    verify = forward(m, Batch(tuple(Segment(c, 3, 3) for c in ctx)), p)
    plain = forward(m, Batch(tuple(Segment(c, 1, 1) for c in ctx)), p)
    assert sum(got[:2]) + got[4] == pytest.approx(verify.flops + 0.2 * plain.flops, rel=1e-12)
    assert got[2] + got[3] == pytest.approx(verify.bytes + 0.2 * plain.bytes, rel=1e-12)
    base = _scenario().model_copy(update={"model": "gpt-oss-20b"})
    fast = _scenario(speculative={"draft_tokens": 2, "acceptance": 0.9, "draft_cost": 0.1}
                     ).model_copy(update={"model": "gpt-oss-20b"})
    from napkin.serving.metrics import summarize
    plain_run, spec_run = (summarize(build(s, Path(".")).simulate()) for s in (base, fast))
    assert spec_run.tpot.mean_s < plain_run.tpot.mean_s


def test_a_sparse_attention_model_verifies_its_drafts_as_chunks():
    """DeepSeek-V3.2 (DSA in all 61 layers: top 2,048 latent entries attended, the indexer over
    every cached token) with one MTP draft: a sequence at 4,000 cached tokens verifies 2 tokens,
    each attending 2,048 entries at 2·128·576 + 2·128·512 = 278,528 FLOPs a pair, while the
    indexer scores 4,001 and 4,002 keys at 2·64·128 = 16,384 FLOPs a pair — the attention part
    of the step is 61 × (2 × 2,048 × 278,528 + 8,003 × 16,384) = 77,590,282,240 FLOPs, plus the
    draft's 0.1 of a plain decode step's; the scenario runs, faster per token than without
    drafts at 0.9 acceptance."""
    from napkin.serving.metrics import summarize
    from napkin.serving.speculative import Speculation, SpeculativeCost
    from napkin.serving.step import StepShape

    m, p = load_model("deepseek-v3.2"), Precision.of("fp8", "fp8")
    cost = LinearCost.of(m, p)
    spec = SpeculativeCost(cost, Speculation(1, (0.9,), 0.1))
    got = spec.parts(StepShape(1, 4000, [], [4000]))
    verify = 61 * (2 * 2048 * 278_528 + (4001 + 4002) * 16_384)
    assert verify == 77_590_282_240
    plain = cost.parts(StepShape(1, 4000, [], [4000]))
    assert got[1] == pytest.approx(verify + 0.1 * plain[1], rel=1e-12)
    base = _scenario(kv_pool_gib=10).model_copy(update={"model": "deepseek-v3.2"})
    fast = _scenario(speculative={"draft_cost": 0.1, "acceptance": 0.9}, kv_pool_gib=10
                     ).model_copy(update={"model": "deepseek-v3.2"})
    plain_run, spec_run = (summarize(build(s, Path(".")).simulate()) for s in (base, fast))
    assert spec_run.tpot.mean_s < plain_run.tpot.mean_s


def test_speculative_needs_fast_mode():
    s = _scenario(speculative={"draft_cost": 0.1}, mode="exact")
    with pytest.raises(NapkinError, match=r"^speculative: runs in engine\.mode fast"):
        build(s, Path(".")).engines()


def test_a_profile_warns_it_was_fitted_without_speculation():
    """Under the vLLM profile (fitted on plain decoding) a speculative scenario says so; its
    engine keeps 1 + 0.8 = 1.8 tokens a verification."""
    b = build(Scenario.model_validate({
        "model": "qwen3-8b", "gpu": "h100-sxm", "calibration": "vllm",
        "engine": {"max_num_seqs": 4, "speculative": {"draft_cost": 0.1}},
        "workload": {"classes": {"a": {"input_tokens": 1000, "output_tokens": 3}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 1, "num_requests": 1}}}),
        Path("."))
    assert any("speculative decoding (fitted without it" in w for w in b.warnings)
    assert b.engines()[0].timer.tokens_per_step == pytest.approx(1.8)
