"""Calibrated call and decode times: the fitted model's arithmetic by hand, and the shipped
vLLM profile against measured decode steps it was fitted on."""

import pytest

from napkin.accounting import Batch, Precision, forward
from napkin.calibration.basis import StepModel
from napkin.calibration.predict import calibrated_call, calibrated_decode
from napkin.calibration.profile import Band, Profile, load_profile
from napkin.catalog import load_accelerator, load_model

MODEL, ACC, BF16 = load_model("qwen3-8b"), load_accelerator("h100-sxm"), Precision.of()


def _profile() -> Profile:
    sm = StepModel.of({"step": 2e-3, "dense": 2.0, "weights": 1.25}, request_s=0.05)
    return Profile("hand", "vllm", sm, bands={"ttft": Band(0.8, 1.5, 0.1, 10),
                                               "tpot": Band(0.9, 1.2, 0.05, 10)})


def test_calibrated_call_by_hand():
    """TTFT = 50 ms + 2 ms + 2·prefill FLOPs/989.4 TFLOP/s + 1.25·prefill weights/3.35 TB/s;
    TPOT = mean of the first (context 1,000) and last (context 1,008) decode steps."""
    c = calibrated_call(_profile(), MODEL, ACC, BF16, new=1000, gen=10)
    pre = forward(MODEL, Batch.uniform(0, 1000), BF16).parts
    assert c.ttft_s == pytest.approx(0.05 + 2e-3 + 2 * pre[0] / 989.4e12 + 1.25 * pre[2] / 3.35e12)

    def step(ctx: int) -> float:
        p = forward(MODEL, Batch.decode(ctx), BF16).parts
        return 2e-3 + 2 * p[0] / 989.4e12 + 1.25 * p[2] / 3.35e12
    assert c.tpot_s == pytest.approx((step(1000) + step(1008)) / 2)
    assert c.e2e_s == pytest.approx(c.ttft_s + 9 * c.tpot_s)
    assert (c.ttft_low_s, c.ttft_high_s) == pytest.approx((0.8 * c.ttft_s, 1.5 * c.ttft_s))
    assert (c.tpot_low_s, c.tpot_high_s) == pytest.approx((0.9 * c.tpot_s, 1.2 * c.tpot_s))


def test_calibrated_call_prefill_takes_the_eager_floor():
    """With a 1 ms per layer floor (Qwen3-8B: 36 layers, 36 ms) the 1,000-token prefill (≈ 23 ms
    of sum) takes the floor; decode steps (no prefill chunk) do not, and a 16k-token prefill
    (over 300 ms of sum) is above it."""
    sm = StepModel.of({"step": 2e-3, "dense": 2.0, "weights": 1.25, "eager_layer": 1e-3},
                      request_s=0.05)
    floored = Profile("floor", "trtllm", sm)
    c = calibrated_call(floored, MODEL, ACC, BF16, new=1000, gen=10)
    plain = calibrated_call(_profile(), MODEL, ACC, BF16, new=1000, gen=10)
    assert plain.ttft_s - 0.05 < 0.036
    assert c.ttft_s == pytest.approx(0.05 + 0.036)
    assert c.tpot_s == pytest.approx(plain.tpot_s)
    big = calibrated_call(floored, MODEL, ACC, BF16, new=16000, gen=2)
    assert big.ttft_s == pytest.approx(
        calibrated_call(_profile(), MODEL, ACC, BF16, new=16000, gen=2).ttft_s)


def test_shipped_vllm_profile_decode_step_near_measured_tpot():
    """aiconfigurator's vLLM 0.12 rows, Qwen3-32B BF16 on 2 H100: TPOT 15.9 ms at 8 clients
    and 26.1 ms at 64 (1,024 in, 1,024 out; mean context ≈ 1,536). A measured TPOT also
    carries the other clients' prompts: each client's 1,024-token prefill once per 1,024
    steps, at ≈ 2·32.8e9 FLOPs/token / (2 × 989 TFLOP/s) ≈ 33 µs/token ideal, so ≥ C × 33 µs
    per step: ≥ 0.3 ms at 8 clients, ≥ 2.1 ms at 64. The profile's pure decode step at that
    batch and context is within 10 % of TPOT at 8 clients and within 10 % of TPOT less that
    floor at 64 (these rows were in its fit)."""
    steps = calibrated_decode(load_profile("vllm"), load_model("qwen3-32b"), ACC, BF16,
                              [8, 64], 1536, tensor_parallel=2)
    assert steps[0].step_s == pytest.approx(15.90e-3, rel=0.10)
    assert steps[1].step_s == pytest.approx(26.09e-3 - 64 * 33e-6, rel=0.10)
    assert steps[1].tokens_per_s == pytest.approx(64 / steps[1].step_s)
