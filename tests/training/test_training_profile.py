"""The fitted training profile: what it is fitted on, how it is held out, and the memory and
recompute terms the fit needed, worked by hand.

Hold-out gate: every row of torchtitan's table predicted by a fit on the other tables
(leave one table out, :func:`napkin.training.fitting.holdout`). Measured when the profile was
fitted: throughput median |error| 8.4 % (issue 35 asks ≤ 12 %), peak memory 7.9 % (≤ 8 %).
"""

import math
import statistics

import pytest

from napkin.catalog import load_accelerator, load_model, measurement_file
from napkin.training.efficiency import RankWork, basis, compute_s, shipped_profile
from napkin.training.fitting import fit, holdout, row_terms
from napkin.training.flops import TrainShape, train_flops
from napkin.training.measured import plan_run, predicted, read_measured_runs
from napkin.training.memory import activation_bytes_per_layer, recipe
from napkin.training.plan import Cluster, plan_training

TABLE = measurement_file("torchtitan_training.csv")
THROUGHPUT_GATE = 0.090
MEMORY_GATE = 0.080


@pytest.fixture(scope="module")
def runs():
    return read_measured_runs(TABLE)


@pytest.fixture(scope="module")
def rows(runs):
    return [row_terms(r) for r in runs if r.quantity == "tokens_per_s_per_gpu"]


def test_the_shipped_profile_is_the_fit_of_the_shipped_table(rows):
    profile = shipped_profile()
    refit = fit(rows, profile.architectures)
    assert set(refit) == set(profile.coefficients)
    for name, value in refit.items():
        assert profile.coefficients[name] == pytest.approx(value, rel=1e-3), name
    # the matmul and attention coefficients are 1/efficiency: no kernel beats its peak
    assert all(v >= 1 for k, v in profile.coefficients.items()
               if not k.startswith("elem") and k != "gemm_memory")


def test_held_out_by_table(rows, runs):
    profile = shipped_profile()
    errors = [p / r.run.measured - 1 for r, p in holdout(rows, profile.architectures)]
    median = statistics.median(abs(e) for e in errors)
    assert median <= THROUGHPUT_GATE
    assert median == pytest.approx(profile.holdout_median, abs=1e-3)
    memory = [(r.group, r.measured, predicted(r, plan_run(r))) for r in runs
              if r.quantity == "peak_mem_gib"]
    held = []
    for g, m, p in memory:
        others = [math.log(mm / pp) for gg, mm, pp in memory if gg != g]
        held.append(abs(p * math.exp(statistics.mean(others)) / m - 1))
    assert statistics.median(held) <= MEMORY_GATE
    assert math.exp(statistics.mean(math.log(m / p) for _, m, p in memory)) - 1 == (
        pytest.approx(profile.allocator_overhead, abs=1e-3))


def test_a_profile_sums_its_coefficients_times_the_ideal_seconds():
    """1 PFLOP of BF16 matmuls, 2 of FP8 block linears, 0.5 of attention and 100 GB of
    activation traffic on an A100 (no FP8 rate: the FP8 term needs one, so BF16 here) and on
    an H200: Σ c · ideal with the architecture's own matmul and attention coefficients."""
    profile = shipped_profile()
    h200 = load_accelerator("h200")
    work = RankWork(1e15, 2e15, 0.5e15, 100e9)
    c = profile.coefficients
    want = (c["matmul.hopper"] * 1e15 / h200.peak_flops_per_s("bf16")
            + c["fp8"] * 2e15 / h200.peak_flops_per_s("fp8")
            + c["attention.hopper"] * 0.5e15 / h200.peak_flops_per_s("bf16")
            + c["elementwise_compiled"] * 100e9 / h200.mem_bytes_per_s)
    assert compute_s(work, h200, profile=profile, precision="fp8", compiled=True) == (
        pytest.approx(want))
    a100 = load_accelerator("a100-80gb-sxm")
    bf16 = RankWork(1e15, 0.0, 0.5e15, 100e9)
    assert compute_s(bf16, a100, profile=profile) == pytest.approx(
        c["matmul.ampere"] * 1e15 / 312e12 + c["attention.ampere"] * 0.5e15 / 312e12
        + c["elementwise"] * 100e9 / a100.mem_bytes_per_s)
    assert basis(bf16, a100)["fp8"] == 0


def test_warnings_outside_what_the_profile_saw():
    profile = shipped_profile()
    b200 = load_accelerator("b200")
    assert profile.architecture_of(b200) == "hopper"
    (w,) = profile.warnings(b200, "bf16")
    assert "b200 (blackwell) is outside" in w and "hopper's coefficients" in w
    (w,) = profile.warnings(load_accelerator("h100-sxm"), "fp8")
    assert "h100-sxm was not among the training profile's GPUs" in w
    assert profile.warnings(load_accelerator("h200"), "fp8") == []


def test_torchtitan_recompute_policies_by_hand():
    """Llama-3-8B, 2 × 8,192 tokens: per-op recompute re-runs the second, fourth and sixth
    matmul of each block (k 4096·1024, o 4096², up 4096·14,336) forward; the every-second-layer
    policy re-runs half of full recompute."""
    m = load_model("llama-3-8b")
    tokens = 2 * 8192
    op = train_flops(m, TrainShape((8192,), 2, recompute="selective-op"))
    assert op.recompute_flops == pytest.approx(
        32 * 2 * tokens * (4096 * 1024 + 4096 * 4096 + 4096 * 14336))
    full = train_flops(m, TrainShape((8192,), 2, recompute="full"))
    layer = train_flops(m, TrainShape((8192,), 2, recompute="selective-layer"))
    assert layer.recompute_flops == pytest.approx(full.recompute_flops / 2)


def test_torchtitan_recompute_memory_by_hand():
    """Per layer and sequence of 8,192 tokens, Llama-3-8B (h 4096, kv 1024, FFN 14,336),
    16-bit: per-op keeps the input, q, v, the attention output and the gate, 2·s·(3h + kv + ffn)
    B; every second layer keeps half a whole layer, s·h·(18 + 4·ffn/h), and half an input."""
    s, h, kv, ffn = 8192, 4096, 1024, 14336
    coefficient = 18 + 4 * ffn / h
    assert activation_bytes_per_layer(s, 1, h, 32, "selective-op", True, 1, False, coefficient,
                                      kv / h) == pytest.approx(2 * s * (3 * h + kv + ffn))
    assert activation_bytes_per_layer(s, 1, h, 32, "selective-layer", True, 1, False,
                                      coefficient) == pytest.approx(
        0.5 * s * h * coefficient + 0.5 * 2 * s * h)


def test_logits_fsdp_buffers_and_the_allocator_by_hand():
    """Llama-3-8B, FSDP over 8 H100, 2 × 8,192 tokens, full recompute, adamw, allocator 20 %:
    logits 16,384 × 128,256 × 10 B; the re-run layer's whole activations 2 × 8,192 × 4096 ×
    (18 + 4·3.5) B; the gathered layer and the prefetched one in BF16 plus its BF16 gradient,
    (8,030,261,248 / 32 layers) × (2 + 2 + 2) B; the allocator's 20 % on all of it."""
    m = load_model("llama-3-8b")
    plan = plan_training(m, TrainShape((8192,), 2, recompute="full"),
                         Cluster(load_accelerator("h100-sxm"), 8, 3, mfu=0.5,
                                 allocator_overhead=0.2), recipe("adamw"))
    fit = plan.fit
    assert fit.logits_bytes == pytest.approx(16384 * 128256 * 10)
    assert fit.working_bytes == pytest.approx(2 * 8192 * 4096 * 32)
    assert fit.buffer_bytes == pytest.approx(8_030_261_248 / 32 * 6)
    assert fit.allocator_bytes == pytest.approx(0.2 * (
        fit.state.bytes + fit.activations_bytes + fit.logits_bytes + fit.working_bytes
        + fit.buffer_bytes))
    assert fit.total_bytes == pytest.approx(fit.allocated_bytes * 1.2)
    assert fit.capacity_bytes == load_accelerator("h100-sxm").device_memory_bytes


def test_pure_bf16_adamw_by_hand():
    """BF16 weights (2), gradients (2) and both Adam moments (2 + 2), no FP32 master: 8 B a
    parameter, half of mixed-precision AdamW's 16."""
    rec = recipe("adamw-bf16")
    assert rec.bytes_per_param == 8 == recipe("adamw").bytes_per_param / 2


def test_blackwell_recipes_at_their_own_rates():
    """NVFP4 block linears at the B200's dense FP4 9,000 TFLOP/s, MXFP8 at its FP8 rate, each
    with the tensorwise FP8 coefficient (the fit saw neither; both warn)."""
    profile = shipped_profile()
    b200 = load_accelerator("b200")
    work = RankWork(0.0, 9e15, 0.0, 0.0)
    assert compute_s(work, b200, profile=profile, precision="nvfp4") == pytest.approx(
        profile.coefficients["nvfp4"] * 9e15 / 9000e12)
    assert profile.coefficients["nvfp4"] == profile.coefficients["fp8"]
    assert compute_s(work, b200, profile=profile, precision="mxfp8") == pytest.approx(
        profile.coefficients["mxfp8"] * 9e15 / b200.peak_flops_per_s("fp8"))
    assert any("nvfp4 is outside" in w for w in profile.warnings(b200, "nvfp4"))


def test_skinny_gemms_by_hand():
    """Llama-3.1-8B at TP 8, 12 × 8,192 tokens: a rank's slice of k is 98,304 × 4,096 by
    4,096 × 128 — 103 GFLOP against (98,304·4,096 + 4,096·128 + 98,304·128) × 2 B = 831 MB of
    operands: on an H100 SXM 248 µs at 3.35 TB/s against 104 µs at 989.4 TFLOP/s, 144 µs over
    the matmul; the q slice (N 512) takes 272 µs of memory under 417 µs of matmul: none."""
    h100 = load_accelerator("h100-sxm")
    m, n, k = 98304, 128, 4096
    memory = (m * k + k * n + m * n) * 2 / 3.35e12
    flops = 2 * m * n * k / 989.4e12
    assert memory > flops
    work = RankWork(0.0, 0.0, 0.0, 0.0, ((m, n, k, 1.0), (m, 512, 4096, 1.0)))
    q_memory = (m * 4096 + 4096 * 512 + m * 512) * 2 / 3.35e12
    q_flops = 2 * m * 512 * 4096 / 989.4e12
    assert basis(work, h100)["gemm_memory"] == pytest.approx(
        memory - flops + max(0.0, q_memory - q_flops))
