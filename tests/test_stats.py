"""Nearest-rank percentiles (chapter 3.1.2)."""

import pytest

from napkin.errors import NapkinError
from napkin.stats import nearest_rank, percentile, summary


def test_chapter_3_1_2_ranks():
    assert nearest_rank(4, 0.95) == 4  # "for four requests p95 is the maximum"
    assert nearest_rank(480, 0.95) == 456  # "for 480 requests, the 456th value"
    assert nearest_rank(100, 0.5) == 50


def test_percentile_and_summary():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 0.95) == 5.0  # ⌈4.75⌉ = 5th smallest
    assert percentile(values, 0.5) == 3.0  # ⌈2.5⌉ = 3rd
    s = summary(list(range(1, 101)))
    assert (s["mean"], s["p50"], s["p90"], s["p95"], s["p99"]) == (50.5, 50, 90, 95, 99)


def test_bad_quantiles():
    with pytest.raises(NapkinError):
        nearest_rank(0, 0.5)
    with pytest.raises(NapkinError):
        nearest_rank(10, 1.5)
