"""Retrieval metrics of a RAG search: ``napkin eval retrieval | rrf`` (question bank q44, q45)."""

from collections.abc import Sequence
from pathlib import Path

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.errors import require
from napkin.report.econ_views import result_doc


@checked
def eval_retrieval(queries: str | Path | None = None, *, ranked: Sequence[str] = (),
                   relevant: Sequence[str] = (), k: int = 5) -> Result:
    """recall@k and MRR of a retriever (q45).

    ``queries``: a JSON Lines file, one query a line (``{"query": "q1", "ranked": ["d3", "d1",
    …], "relevant": ["d1"]}``); or one query as ``ranked`` (document ids, best first) and
    ``relevant``. recall@k of a query ``= |relevant ∩ top-k| / |relevant|``, its reciprocal
    rank ``1/rank`` of the first relevant result (0 if none listed); both averaged over the
    queries that have a relevant document (those without are counted apart). ``value``: the
    :class:`~napkin.retrieval.RetrievalScores`.
    """
    from napkin.retrieval import Query, read_queries, score

    if queries is not None:
        require(not ranked and not relevant,
                "ranked: give a QUERIES file or --ranked and --relevant, not both")
        items = read_queries(queries)
        source: str | None = str(queries)
    else:
        require(bool(ranked), "ranked: give a QUERIES file or --ranked (document ids, best "
                              "first)")
        require(bool(relevant), "relevant: give the relevant document ids of the query")
        items = [Query("query", tuple(ranked), frozenset(relevant))]
        source = None
    s = score(items, k)
    rows = [["queries", f"{s.num_queries:,}"],
            ["without a relevant document (not scored)", f"{s.num_unanswerable:,}"],
            [f"recall@{k}", f"{s.recall_at_k:.4f}"], ["MRR", f"{s.mrr:.4f}"]]
    data = {"queries": s.num_queries, "unanswerable": s.num_unanswerable,
            "recall_at_k": s.recall_at_k, "mrr": s.mrr,
            "per_query": [{"query": q, "recall_at_k": r, "reciprocal_rank": rr}
                          for q, r, rr in s.per_query]}
    notes = ["recall@k: share of a query's relevant documents in the first k results; MRR: "
             "mean of 1/rank of the first relevant result (0 if none is listed)"]
    return Result(result_doc("Retrieval metrics", rows, data,
                             {"queries": source, "ranked": list(ranked),
                              "relevant": list(relevant), "k": k}, notes), s)


@checked
def eval_rrf(lists: Sequence[Sequence[str]], *, k: int = 60, top: int = 10) -> Result:
    """Reciprocal-rank fusion of ranked lists (Cormack et al. 2009; q44).

    Each document's score is ``Σ_lists 1/(k + rank)`` over the ``lists`` that hold it (ranks
    from 1, ``k`` = 60), highest first; the first ``top`` are shown (all in ``value``).
    ``value``: list of (document id, score), best first.
    """
    from napkin.retrieval import rrf

    require(top >= 1, f"top: must be an integer >= 1, got {top}")
    fused = rrf(lists, k)
    ranks = [{d: i for i, d in reversed(list(enumerate(lst, 1)))} for lst in lists]
    rows = [[str(i), doc, f"{score:.6f}",
             ", ".join(str(r.get(doc, "—")) for r in ranks)]
            for i, (doc, score) in enumerate(fused[:top], 1)]
    data = {"fused": [{"doc": doc, "score": score} for doc, score in fused]}
    notes = [f"score = Σ 1/({k} + rank) over the lists holding the document; merged by "
             "places, not by the lists' own (incomparable) scores"]
    return Result(result_doc("Reciprocal-rank fusion", rows, data,
                             {"lists": [list(x) for x in lists], "k": k, "top": top}, notes,
                             ["rank", "document", "RRF score", "rank in each list"]), fused)
