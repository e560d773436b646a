"""recall@k, MRR and reciprocal-rank fusion (question bank q44, q45) by hand derivation."""

import pytest

from napkin.retrieval import Query, recall_at_k, reciprocal_rank, rrf, score


def test_retrieval_hand():
    # hand: ranked d3, d1, d2 with d1 relevant: first relevant at rank 2 → RR 1/2;
    # recall@1 = 0 (d1 not in the first), recall@2 = 1
    ranked, rel = ("d3", "d1", "d2"), frozenset({"d1"})
    assert reciprocal_rank(ranked, rel) == 0.5
    assert recall_at_k(ranked, rel, 1) == 0 and recall_at_k(ranked, rel, 2) == 1
    # two relevant, one in the top 2: recall@2 = 1/2
    assert recall_at_k(("a", "b", "c"), frozenset({"b", "c"}), 2) == 0.5
    s = score([Query("q1", ranked, rel), Query("q2", ("x",), frozenset({"x"})),
               Query("q3", ("y",), frozenset())], 1)
    # q1: RR ½, recall@1 0; q2: RR 1, recall 1; q3 unanswerable, not scored
    assert s.mrr == 0.75 and s.recall_at_k == 0.5 and s.num_unanswerable == 1


def test_rrf_hand():
    # q44: RRF Σ 1/(60 + rank). Lists (d1, d2, d3) and (d3, d1):
    # d1: 1/61 + 1/62, d3: 1/63 + 1/61, d2: 1/62
    fused = dict(rrf([["d1", "d2", "d3"], ["d3", "d1"]]))
    assert fused["d1"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["d3"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["d2"] == pytest.approx(1 / 62)
    assert [d for d, _ in rrf([["d1", "d2", "d3"], ["d3", "d1"]])] == ["d1", "d3", "d2"]
