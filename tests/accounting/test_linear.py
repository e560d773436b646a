"""LinearCost reproduces forward()'s totals on random batches (it is a sum of the same rates)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from napkin.accounting import Batch, Precision, Segment, forward
from napkin.accounting.linear import LinearCost
from napkin.catalog import load_model

segments = st.lists(
    st.builds(lambda c, n, r, k: Segment(c, n, min(r, n), k), st.integers(0, 5000),
              st.integers(0, 600), st.integers(0, 3), st.integers(1, 4)),
    min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["qwen3-8b", "gpt-oss-20b", "qwen3-30b-a3b", "deepseek-v3",
                        "qwen3-0.6b"]),
       st.sampled_from([Precision.of(), Precision.of("int4-g128", "fp8", True)]), segments)
def test_linear_cost_equals_forward(model_id, precision, segs):
    model = load_model(model_id)
    batch = Batch(tuple(segs))
    exact = forward(model, batch, precision)
    flops, moved = LinearCost.of(model, precision).totals(batch)
    assert flops == pytest.approx(exact.flops, rel=1e-12, abs=1e-6)
    assert moved == pytest.approx(exact.bytes, rel=1e-12, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["qwen3-8b", "gpt-oss-20b", "deepseek-v3"]), segments)
def test_linear_parts_equal_forward_parts(model_id, segs):
    """The step-time model's split (dense/attention FLOPs, weight/KV bytes) is the same split
    of the same op list, and the parts sum to the totals."""
    model, precision = load_model(model_id), Precision.of()
    batch = Batch(tuple(segs))
    exact = forward(model, batch, precision).parts
    parts = LinearCost.of(model, precision).parts(batch)
    for got, want in zip(parts, exact, strict=True):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-6)
    flops, moved = LinearCost.of(model, precision).totals(batch)
    assert parts[0] + parts[1] == pytest.approx(flops)
    assert parts[2] + parts[3] == pytest.approx(moved)
