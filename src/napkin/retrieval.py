"""Retrieval metrics of a RAG search (question bank q44, q45): recall@k, the mean reciprocal
rank, and reciprocal-rank fusion of several ranked lists.

* recall@k of one query: the share of its relevant documents found in the first k results,
  ``|relevant ∩ top-k| / |relevant|`` (with one relevant document: whether it reached the
  context); averaged over the queries that have a relevant document.
* reciprocal rank: ``1/rank`` of the first relevant result (0 when none is listed); MRR is its
  mean over the same queries.
* RRF (Cormack et al. 2009): a document's fused score is ``Σ_lists 1/(k + rank)`` over the
  lists that hold it (ranks from 1, ``k = 60``), so lists are merged by their places, not by
  their incomparable scores (BM25 against cosine similarity).

Queries without any relevant document (the bank's "questions with no answer in the base") are
counted apart: recall is undefined for them.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from napkin.errors import NapkinError, require
from napkin.specs.files import read_user_text

RRF_K = 60
"""RRF's rank offset (Cormack et al. 2009; the bank's Σ 1/(60 + rank))."""


@dataclass(frozen=True)
class Query:
    """One evaluated query: the retriever's ranked document ids and the relevant ones."""

    query: str
    ranked: tuple[str, ...]
    relevant: frozenset[str]


@dataclass(frozen=True)
class RetrievalScores:
    """recall@k and MRR over the queries with a relevant document."""

    k: int
    num_queries: int
    num_unanswerable: int
    recall_at_k: float
    mrr: float
    per_query: tuple[tuple[str, float, float], ...]
    """(query, recall@k, reciprocal rank) of each scored query."""


def recall_at_k(ranked: Sequence[str], relevant: frozenset[str], k: int) -> float:
    """``|relevant ∩ ranked[:k]| / |relevant|``."""
    require(k >= 1, f"k: must be an integer >= 1, got {k}")
    require(bool(relevant), "relevant: recall needs at least one relevant document")
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def reciprocal_rank(ranked: Sequence[str], relevant: frozenset[str]) -> float:
    """``1/rank`` of the first relevant document in ``ranked`` (ranks from 1); 0 if none."""
    return next((1.0 / i for i, doc in enumerate(ranked, 1) if doc in relevant), 0.0)


def score(queries: Sequence[Query], k: int) -> RetrievalScores:
    """recall@k and MRR averaged over the ``queries`` that have a relevant document."""
    require(k >= 1, f"k: must be an integer >= 1, got {k}")
    scored = [(q.query, recall_at_k(q.ranked, q.relevant, k), reciprocal_rank(q.ranked,
                                                                               q.relevant))
              for q in queries if q.relevant]
    require(bool(scored), "relevant: no query has a relevant document to find")
    n = len(scored)
    return RetrievalScores(k, len(queries), len(queries) - n, sum(s[1] for s in scored) / n,
                           sum(s[2] for s in scored) / n, tuple(scored))


def rrf(lists: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Documents by fused score ``Σ 1/(k + rank)`` (highest first; ties by first appearance).
    A document listed twice in one list counts at its best rank there."""
    require(k >= 0, f"k: must be an integer >= 0, got {k}")
    require(len(lists) >= 1 and all(lists), "list: give at least one non-empty ranked list")
    fused: dict[str, float] = {}
    for ranking in lists:
        best: dict[str, int] = {}
        for rank, doc in enumerate(ranking, 1):
            best.setdefault(doc, rank)
        for doc, rank in best.items():
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda item: -item[1])


def _ids(value: object, line: int, field: str) -> tuple[str, ...]:
    ok = isinstance(value, list) and all(isinstance(v, str | int) and not isinstance(v, bool)
                                         for v in value)
    require(ok, f"queries: line {line}: {field} must be a list of document ids (strings or "
                f"integers), got {value!r:.60}")
    return tuple(str(v) for v in value)  # type: ignore[union-attr]


def read_queries(path: str | Path) -> list[Query]:
    """A JSON Lines file, one query a line: ``{"query": "q1", "ranked": ["d3", "d1"],
    "relevant": ["d1"]}`` (``query`` optional; ids strings or integers)."""
    text = read_user_text(path, "queries")
    out = []
    for line, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            raise NapkinError(f"queries: line {line} is not a JSON object") from None
        require(isinstance(row, dict) and {"ranked", "relevant"} <= set(row)
                and set(row) <= {"query", "ranked", "relevant"},
                f"queries: line {line} must be an object with ranked and relevant (and "
                "optionally query)")
        out.append(Query(str(row.get("query", line)), _ids(row["ranked"], line, "ranked"),
                         frozenset(_ids(row["relevant"], line, "relevant"))))
    require(bool(out), f"queries: {str(path)!r} holds no query")
    return out
