"""LinearCost reproduces forward()'s totals on random batches (it is a sum of the same rates),
hybrids with linear attention (Qwen3-Next, Kimi Linear: a state per sequence) included."""

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
                        "qwen3-0.6b", "qwen3-next-80b-a3b", "kimi-linear-48b-a3b"]),
       st.sampled_from([Precision.of(), Precision.of("int4-g128", "fp8", True),
                        Precision.of("nvfp4", "fp8", True, "attention,router,lm-head"),
                        Precision.of("fp8", unquantized="dense-mlp,shared-experts,embedding")]),
       segments)
def test_linear_cost_equals_forward(model_id, precision, segs):
    model = load_model(model_id)
    batch = Batch(tuple(segs))
    exact = forward(model, batch, precision)
    flops, moved = LinearCost.of(model, precision).totals(batch)
    assert flops == pytest.approx(exact.flops, rel=1e-12, abs=1e-6)
    assert moved == pytest.approx(exact.bytes, rel=1e-12, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["qwen3-8b", "gpt-oss-20b", "deepseek-v3", "qwen3-next-80b-a3b",
                        "kimi-linear-48b-a3b"]),
       st.sampled_from([Precision.of(), Precision.of("nvfp4", unquantized="attention,lm-head")]),
       segments)
def test_linear_parts_equal_forward_parts(model_id, precision, segs):
    """The step-time model's split (dense/attention FLOPs, weight/KV bytes, 16-bit dense FLOPs)
    is the same split of the same op list, and the parts sum to the totals."""
    model = load_model(model_id)
    batch = Batch(tuple(segs))
    exact = forward(model, batch, precision).parts
    parts = LinearCost.of(model, precision).parts(batch)
    for got, want in zip(parts, exact, strict=True):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-6)
    flops, moved = LinearCost.of(model, precision).totals(batch)
    assert parts[0] + parts[1] + parts[4] == pytest.approx(flops)
    assert parts[2] + parts[3] == pytest.approx(moved)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["qwen3-8b", "qwen3-30b-a3b", "deepseek-v3", "llama-2-7b",
                        "mixtral-8x7b", "qwen3-next-80b-a3b", "kimi-linear-48b-a3b"]),
       st.integers(0, 512), st.integers(0, 2_000_000),
       st.sampled_from([Precision.of(), Precision.of("fp8", unquantized="attention,lm-head")]))
def test_decode_parts_are_parts_of_a_decode_only_step(model_id, n_dec, extra_ctx, precision):
    """The simulator's decode-only shortcut equals parts() of the same step shape, bit for bit,
    and forward() of n_dec decode segments whose contexts sum to the same total."""
    from napkin.serving.step import StepShape

    model = load_model(model_id)
    assert not model.cost_windows  # the shortcut's precondition
    cost = LinearCost.of(model, precision)
    sum_ctx = n_dec * 7 + (extra_ctx if n_dec else 0)
    assert cost.decode_parts(n_dec, sum_ctx) == cost.parts(StepShape(n_dec, sum_ctx, []))
    # again at another context: the token-count parts now come from the memo, still exact
    longer = sum_ctx + 3 * n_dec + 1
    assert cost.decode_parts(n_dec, longer) == cost.parts(StepShape(n_dec, longer, []))
    if n_dec:
        first = sum_ctx - (n_dec - 1) * 7
        segs = (Segment(first, 1, 1),) + (Segment(7, 1, 1),) * (n_dec - 1)
        exact = forward(model, Batch(segs), precision).parts
        for got, want in zip(cost.decode_parts(n_dec, sum_ctx), exact, strict=True):
            assert got == pytest.approx(want, rel=1e-12, abs=1e-6)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["qwen3-8b", "qwen3-30b-a3b", "deepseek-v3", "llama-2-7b",
                        "qwen3-next-80b-a3b", "kimi-linear-48b-a3b"]),
       st.sampled_from([Precision.of(), Precision.of("fp8", unquantized="attention,lm-head")]),
       st.integers(0, 256), st.integers(0, 100_000),
       st.lists(st.tuples(st.integers(0, 5000), st.integers(1, 8192), st.integers(0, 1)),
                max_size=5))
def test_step_parts_are_parts_of_the_same_step_shape(model_id, precision, n_dec, extra_ctx,
                                                     chunks):
    """The simulator's one-pass mixed-step shortcut equals parts() of the same step shape bit
    for bit, and forward() of the explicit batch (one-token chunks count as decodes)."""
    from napkin.serving.step import StepShape

    model = load_model(model_id)
    assert not model.cost_windows  # the shortcut's precondition
    cost = LinearCost.of(model, precision)
    sum_ctx = n_dec * 3 + (extra_ctx if n_dec else 0)
    got = cost.step_parts(n_dec, sum_ctx, chunks)
    assert got == cost.parts(StepShape(n_dec, sum_ctx, chunks))
    segs = tuple(Segment(c, n, o) for c, n, o in chunks)
    if n_dec:
        segs += (Segment(sum_ctx - (n_dec - 1) * 3, 1, 1),) + (Segment(3, 1, 1),) * (n_dec - 1)
    if segs:
        exact = forward(model, Batch(segs), precision).parts
        for g, want in zip(got, exact, strict=True):
            assert g == pytest.approx(want, rel=1e-12, abs=1e-6)
