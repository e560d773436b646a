"""Affine runs of decode steps equal the step-by-step sums (property test)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from napkin.accounting import Batch, Precision, forward
from napkin.accounting.series import decode_runs
from napkin.catalog import load_accelerator, load_model
from napkin.timing.efficiency import Efficiency
from napkin.timing.roofline import call_time, run_time

MODELS = ["qwen3-8b", "gpt-oss-20b", "qwen3-30b-a3b", "deepseek-v3"]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(MODELS), st.integers(1, 8), st.integers(0, 300), st.integers(1, 60),
       st.floats(0.05, 1), st.floats(0.05, 1), st.sampled_from(["h100-sxm", "rtx-4080", "l4"]))
def test_runs_match_step_by_step(model_id, batch, first, steps, mfu, mbu, gpu):
    model, acc = load_model(model_id), load_accelerator(gpu)
    p, eff = Precision.of(), Efficiency(mfu, mbu, 1e-5)
    runs = decode_runs(model, p, batch, first, steps)
    exact = [forward(model, Batch.decode(first + j, batch), p) for j in range(steps)]
    assert sum(r.steps for r in runs) == steps
    assert abs(sum(r.flops for r in runs) - sum(c.flops for c in exact)) <= 1e-9 * sum(
        c.flops for c in exact)
    assert abs(sum(r.bytes for r in runs) - sum(c.bytes for c in exact)) <= 1e-9 * sum(
        c.bytes for c in exact)
    t_runs = sum(run_time(r, acc, "bf16", eff) for r in runs)
    t_exact = sum(call_time(c, acc, "bf16", eff).time_s for c in exact)
    assert abs(t_runs - t_exact) <= 1e-9 * t_exact


def test_window_boundary_splits_runs():
    runs = decode_runs(load_model("gpt-oss-20b"), Precision.of(), 1, 100, 100)
    assert [(r.first_context, r.steps) for r in runs] == [(100, 27), (127, 73)]  # W − 1 = 127
