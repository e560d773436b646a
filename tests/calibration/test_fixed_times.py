"""Fixed times across GPUs (the SM clock) and ring all-reduces across TP sizes, by hand."""

import pytest

from napkin.accounting import Precision
from napkin.accounting.linear import LinearCost
from napkin.calibration.basis import FittedTimer, LayoutBasis, StepBasis, StepModel, layout_timer
from napkin.calibration.terms import TERMS
from napkin.catalog import load_accelerator, load_model
from napkin.serving.step import StepShape
from napkin.specs.layout import ParallelLayout

SECONDS = ("step", "layer", "moe_layer", "token", "token_layer", "allreduce", "eager_layer",
           "allreduce_hop")


def test_the_fixed_time_scale_is_the_clock_ratio():
    """nvidia-smi's maximum SM clocks: H100 SXM 1,980 MHz (the reference), A100 SXM4 1,410 MHz
    → 1,980 / 1,410 = 1.4043; L40S 2,520 MHz → 0.7857; a GPU without a sourced clock (B200)
    reads as the reference."""
    assert load_accelerator("h100-sxm").fixed_time_scale == 1.0
    assert load_accelerator("a100-80gb-sxm").fixed_time_scale == pytest.approx(1.40426, rel=1e-5)
    assert load_accelerator("l40s").fixed_time_scale == pytest.approx(0.78571, rel=1e-5)
    assert load_accelerator("b200").fixed_time_scale == 1.0
    assert "clock" in load_accelerator("a100-80gb-sxm").sources


def test_seconds_terms_scale_with_the_clock_and_roofline_terms_with_the_datasheet():
    """Llama-2-70B BF16 at TP 4, 16 decodes at 512 tokens of context, on A100 and H100: every
    seconds term is 1.4043× H100's on A100; the weights term is the ratio of bandwidths
    (3,350 / 2,039 GB/s) and the dense term of BF16 peaks (989.4 / 312 TFLOP/s)."""
    model = load_model("llama-2-70b")
    parts = LinearCost.of(model, Precision.of()).parts(StepShape(16, 16 * 512, []))
    x = {gpu: dict(zip(TERMS, StepBasis.of(model, load_accelerator(gpu), "bf16", 4, 300e9)
                       .terms(parts, 16, prefill=True), strict=True))
         for gpu in ("h100-sxm", "a100-80gb-sxm")}
    h, a = x["h100-sxm"], x["a100-80gb-sxm"]
    assert (h["step"], h["layer"], h["token"], h["token_layer"]) == (1.0, 80.0, 16.0, 16 * 80)
    assert h["allreduce"] == 160 and h["eager_layer"] == 80
    for term in SECONDS:
        assert a[term] == pytest.approx(h[term] * 1980 / 1410)
    assert a["weights"] == pytest.approx(h["weights"] * 3350 / 2039)
    assert a["dense"] == pytest.approx(h["dense"] * 989.4 / 312)


def test_allreduce_hop_counts_a_rings_extra_ranks():
    """A ring all-reduce over tp ranks takes 2(tp − 1) latency-bound steps; the term is
    all-reduces × (tp − 1): Llama-2-70B has 80 layers, 2 all-reduces each under TP → 160 at TP
    2, 480 at TP 4, 1,120 at TP 8, none on one GPU; doubling TP from 4 to 8 multiplies it by 7/3
    where ``allreduce`` (a one-shot kernel's time) stays at 160. At 10 µs per all-reduce and
    extra rank a TP-8 step on H100 spends 11.2 ms in it, on A100 11.2 · 1,980 / 1,410 = 15.73 ms."""
    model = load_model("llama-2-70b")
    parts = LinearCost.of(model, Precision.of()).parts(StepShape(1, 600, []))
    hops = {}
    for tp in (1, 2, 4, 8):
        x = dict(zip(TERMS, StepBasis.of(model, load_accelerator("h100-sxm"), "bf16", tp,
                                         450e9).terms(parts, 1), strict=True))
        hops[tp] = x["allreduce_hop"]
        assert x["allreduce"] == (160 if tp > 1 else 0)
    assert hops == {1: 0, 2: 160, 4: 480, 8: 1120}
    only = StepModel.of({"allreduce_hop": 10e-6})
    for gpu, want in (("h100-sxm", 11.2e-3), ("a100-80gb-sxm", 15.7277e-3)):
        basis = StepBasis.of(model, load_accelerator(gpu), "bf16", 8, 450e9)
        assert FittedTimer(basis, only).step_s(parts, 1) == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-80gb-sxm"])
def test_a_layout_times_its_hops_and_clock_as_its_basis(gpu):
    """Qwen3-235B-A22B BF16 in attention TP 2 × DP 4 with EP 8: the layout's all-reduces run over
    the attention's 2 ranks (one extra rank each); a model with every seconds term set times a
    step through ``layout_timer`` as coefficients · LayoutBasis terms, on either GPU. The step's
    own all-to-all time (``alltoall_step``) is charged once, at the GPU's clock, beside the 94
    MoE layers' dispatches and combines (``alltoall``, each)."""
    m, acc, p = load_model("qwen3-235b-a22b"), load_accelerator(gpu), Precision.of()
    lay = ParallelLayout(2, 4, 8)
    sm = StepModel.of({"step": 1e-3, "layer": 2e-5, "token": 1e-6, "allreduce": 8e-6,
                       "allreduce_hop": 5e-6, "alltoall": 12e-6, "dense": 1.3, "weights": 1.2,
                       "kv": 1.1, "attention": 1.5, "allreduce_bytes": 1.1,
                       "alltoall_step": 3e-3})
    device = FittedTimer(StepBasis.of(m, acc, "bf16", 1, 450e9), sm)
    timer = layout_timer(m, p, lay, device, 450e9, 10e-6)
    basis = LayoutBasis.of(m, acc, p, lay, 450e9)
    parts = LinearCost.of(m, p).parts(StepShape(64, 64 * 2000, []))
    x = dict(zip(TERMS, basis.terms(parts, 64), strict=True))
    scale = acc.fixed_time_scale
    assert x["allreduce_hop"] == pytest.approx(x["allreduce"] * 1)
    assert x["allreduce"] == pytest.approx(scale * timer.comm.allreduces)
    assert (x["alltoall"], x["alltoall_step"]) == pytest.approx((scale * 2 * 94, scale))
    dispatch, combine = timer.comm.layer_alltoall_s(64)
    assert timer.comm.seconds(64)[1] == pytest.approx(94 * (dispatch + combine) + scale * 3e-3)
    assert sm.time(tuple(x.values())) == pytest.approx(timer.step_s(parts, 64), rel=1e-9)
