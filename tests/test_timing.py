"""Roofline timing and the exact time of affine runs."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from napkin.accounting.ops import CallCost, Op, OpKind
from napkin.accounting.series import AffineRun
from napkin.errors import NapkinError
from napkin.specs.hardware import Accelerator
from napkin.timing.efficiency import Efficiency
from napkin.timing.roofline import roofline, run_time
from napkin.timing.series import LineSeries, StepSeries, _line_sum, _product_sum

ACC = Accelerator("toy", "toy", 1e9, 1e9, {"bf16": 1e12})  # 1 GB/s, 1 TFLOP/s


def test_time_is_the_slower_side_plus_overhead():
    t = roofline(2e12, 1e9, ACC, "bf16", Efficiency(mfu=0.5, mbu=1.0, overhead_s=0.1))
    assert t.compute_s == 4.0  # 2e12 / (1e12 · 0.5)
    assert t.memory_s == 1.0
    assert t.time_s == pytest.approx(4.1)
    assert t.bound == "compute"
    t = roofline(1e12, 3e9, ACC, "bf16", Efficiency(mbu=0.5))
    assert (t.memory_s, t.bound) == (6.0, "memory")


@pytest.mark.parametrize("kwargs", [{"mfu": 0}, {"mfu": 1.2}, {"mbu": -1}, {"overhead_s": -1}])
def test_efficiency_is_validated(kwargs):
    with pytest.raises(NapkinError):
        Efficiency(**kwargs)


@given(st.integers(1, 200), st.floats(0, 1e13), st.floats(-1e10, 1e10), st.floats(0, 1e10),
       st.floats(-1e7, 1e7))
def test_run_time_equals_step_sum(n, f0, df, b0, db):
    # keep every step's cost non-negative, as real runs are
    df = max(df, -f0 / n)
    db = max(db, -b0 / n)
    first = CallCost((Op("toy", "toy", OpKind.PROJECTION, 0, 1, f0, b0),))
    run = AffineRun(0, n, first, df, db)
    eff = Efficiency(0.7, 0.9, 1e-4)
    brute = sum(max((f0 + j * df) / 0.7e12, (b0 + j * db) / 0.9e9) + 1e-4 for j in range(n))
    assert run_time(run, ACC, "bf16", eff) == pytest.approx(brute, rel=1e-9, abs=1e-12)



@given(st.integers(0, 80), st.floats(0, 5), st.floats(-0.05, 0.05), st.floats(0, 5),
       st.floats(-0.05, 0.05), st.floats(0, 1e3), st.floats(-10, 10))
def test_step_series_sums_match_loops(n, c0, dc, m0, dm, w0, dw):
    dc, dm = max(dc, -c0 / max(n, 1)), max(dm, -m0 / max(n, 1))
    series = StepSeries(c0, dc, m0, dm, 0.01)
    steps = [max(c0 + j * dc, m0 + j * dm) + 0.01 for j in range(n)]
    assert series.time(n) == pytest.approx(sum(steps), rel=1e-9, abs=1e-9)
    assert series.weighted(n, w0, dw) == pytest.approx(
        sum((w0 + j * dw) * t for j, t in enumerate(steps)), rel=1e-9, abs=1e-6)
    if n:
        target = sum(steps) / 2
        k = series.steps_until(target, n)
        assert series.time(k) >= target and (k == 0 or series.time(k - 1) < target)


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1), st.floats(0, 1e-3), st.floats(0, 1e-2), st.integers(0, 5000),
       st.floats(0, 1e6), st.floats(-10, 10))
def test_line_series_sums_equal_the_general_series(c0, dc, overhead, n, w0, dw):
    """A fitted model's run (no memory line) sums exactly as the general two-line series."""
    line, general = LineSeries(c0, dc, 0.0, 0.0, overhead), StepSeries(c0, dc, 0.0, 0.0, overhead)
    assert line.time(n) == general.time(n)
    assert line.weighted(n, w0, dw) == general.weighted(n, w0, dw)
    t = general.time(n) / 2
    assert line.steps_until(t, n) == general.steps_until(t, n)


@given(st.integers(0, 5000), st.floats(0, 5), st.floats(-0.05, 0.05), st.floats(0, 5),
       st.floats(-0.05, 0.05), st.floats(0, 1e3), st.floats(-10, 10),
       st.sampled_from([0.01, 0.0]))
def test_one_sided_shortcuts_equal_the_split_sums_bit_for_bit(n, c0, dc, m0, dm, w0, dw, ov):
    """A series whose lines never cross (the usual decode run) sums one line, and a series
    without overhead (a fitted model's) skips the overhead's sum; the shortcuts give the same
    float as splitting at the crossing, term for term."""
    series = StepSeries(c0, dc, m0, dm, ov)
    a, b = series._compute_bound(n)
    split_time = (_line_sum(c0, dc, a, b) + _line_sum(m0, dm, 0, a) + _line_sum(m0, dm, b, n)
                  + n * ov)
    split_weighted = (_product_sum(w0, dw, ov, 0.0, 0, n) + _product_sum(w0, dw, c0, dc, a, b)
                      + _product_sum(w0, dw, m0, dm, 0, a) + _product_sum(w0, dw, m0, dm, b, n))
    if n != 1:
        assert series.weighted(n, w0, dw) == split_weighted
    if series.side and n != 1:
        assert (a, b) in ((0, n), (0, 0), (n, n))
        assert series.time(n) == split_time
        assert series.weighted(n, w0, dw) == split_weighted


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["qwen3-0.6b", "llama-3.1-70b", "deepseek-v3"]),
       st.sampled_from(["bf16", "fp8"]), st.sampled_from([1, 2, 8]), st.integers(1, 256),
       st.integers(0, 200_000), st.integers(0, 8192), st.booleans())
def test_a_single_steps_time_is_its_series_first_step(model_id, weights, tp, n_dec, ctx, chunk,
                                                      prefill):
    """``step_s`` (the simulator's single steps, no series built) is ``series(parts, None,
    tokens).time(1)`` bit for bit, for the roofline (tensor parallel, FP8 with 16-bit parts)
    and a fitted profile; and a series' one-step weighted sum is the weight times that time."""
    from napkin.accounting import Precision
    from napkin.accounting.linear import LinearCost
    from napkin.calibration.basis import FittedTimer, StepBasis
    from napkin.calibration.profile import load_profile
    from napkin.catalog import load_accelerator, load_model
    from napkin.timing.steps import RooflineTimer

    model, acc = load_model(model_id), load_accelerator("h100-sxm")
    precision = Precision.of(weights)
    cost = LinearCost.of(model, precision)
    chunks = [(ctx % 4096, chunk, 1)] if chunk else []
    parts = cost.step_parts(n_dec, ctx, chunks)
    tokens = n_dec + chunk
    prefill = prefill and bool(chunks)
    roofline_timer = RooflineTimer.of(model, acc, precision.weights.compute,
                                      Efficiency(0.6, 0.8, 2e-3), tp)
    fitted = FittedTimer(StepBasis.of(model, acc, precision.weights.compute, tp, 64e9),
                         load_profile("vllm").model)
    for timer in (roofline_timer, fitted):
        series = timer.series(parts, None, tokens, prefill)
        assert timer.step_s(parts, tokens, prefill) == series.time(1)
        assert series.weighted(1, 3.0e5, 7.0) == 3.0e5 * series.time(1)
