"""Request logs (:mod:`napkin.serving.request_log`): the formats, the latency formulas and
odd files (one-line errors, never a traceback)."""

import json

import numpy as np
import pytest

from napkin.errors import NapkinError
from napkin.serving.request_log import latency_stats, read_request_log


def test_csv_and_json_lines_give_the_same_latencies(tmp_path):
    """A request arriving at 10 s, first token at 10.4 s, last (the 6th) at 11.4 s: TTFT
    0.4 s, TPOT (11.4 − 10.4)/5 = 0.2 s, e2e 1.4 s; the columns may come in any order."""
    csv_log = tmp_path / "a.csv"
    csv_log.write_text("output_tokens,last_token_s,first_token_s,arrival_s\n6,11.4,10.4,10\n")
    jl = tmp_path / "a.jsonl"
    jl.write_text(json.dumps({"arrival_s": 10, "first_token_s": 10.4, "last_token_s": 11.4,
                              "output_tokens": 6}) + "\n\n")
    for path in (csv_log, jl):
        ttft, tpot, e2e = latency_stats(read_request_log(path), (50.0,))
        assert ttft.mean_s == pytest.approx(0.4) and tpot.mean_s == pytest.approx(0.2)
        assert e2e.percentiles_s == ((50.0, pytest.approx(1.4)),)


def test_nearest_rank_percentiles_of_the_chapter():
    """§3.1.2: p95 of four observations is the largest; of 480, the 456th."""
    from napkin.serving.request_log import RequestTimes

    for n, rank in ((4, 4), (480, 456)):
        last = np.arange(1, n + 1, dtype=float)[::-1].copy()
        times = RequestTimes(np.zeros(n), np.zeros(n), last, np.full(n, 2))
        _, _, e2e = latency_stats(times, (95.0,))
        assert e2e.percentiles_s[0][1] == rank


@pytest.mark.parametrize("text, field", [
    ("", "arrival_s"),
    ("arrival_s,first_token_s,last_token_s,output_tokens\n", "no requests"),
    ("arrival_s,first_token_s,last_token_s,output_tokens\n0,1,2,1.5\n", "output_tokens"),
    ("arrival_s,first_token_s,last_token_s,output_tokens\n0,1,2,0\n", "output_tokens"),
    ("arrival_s,first_token_s,last_token_s,output_tokens\n0,1,0.5,2\n", "last_token_s"),
    ("arrival_s,first_token_s,last_token_s,output_tokens\n0,nan,2,2\n", "first_token_s"),
    ("arrival_s,first_token_s,last_token_s,output_tokens\n0,x,2,2\n", "first_token_s"),
    ("arrival_s,first_token_s,last_token_s,output_tokens\n0,1\n", "last_token_s"),
    ("{", "not JSON"),
    ("[" * 100_000, "nested"),
    ("[1, 2]", "must be an object"),
    ('{"arrival_s": 0}', "first_token_s"),
    ('{"ttfts": [0.1], "itls": [[0.1]]}', "output_lens"),
    ('{"ttfts": [0.1, 0.2], "itls": [[0.1]], "output_lens": [2]}', "one entry per request"),
    ('{"ttfts": ["x"], "itls": [[0.1]], "output_lens": [2]}', "ttfts"),
    ('{"ttfts": [0.1], "itls": [5], "output_lens": [2]}', "itls"),
    ('{"ttfts": [0.1], "itls": [[-1]], "output_lens": [2]}', "last_token_s"),
])
def test_odd_logs_are_one_line_errors(tmp_path, text, field):
    path = tmp_path / "log.txt"
    path.write_text(text)
    with pytest.raises(NapkinError, match=field) as e:
        read_request_log(path)
    assert "\n" not in str(e.value)


def test_percentiles_out_of_range(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("arrival_s,first_token_s,last_token_s,output_tokens\n0,1,2,2\n")
    for bad in ((), (0.0,), (100.5,)):
        with pytest.raises(NapkinError, match="percentiles"):
            latency_stats(read_request_log(path), bad)


def test_shipped_logs_give_the_chapters_ranks():
    """The shipped logs (``#`` comment lines allowed): §3.1.2 'Для четырёх запросов p95 равен
    максимальному значению, а для 480 запросов — 456-му значению' — end-to-end times 1…n s in
    scrambled order give p95 = 4 s and 456 s."""
    from napkin.catalog import scenario_file

    for name, p95 in (("requests-4.csv", 4.0), ("requests-480.csv", 456.0)):
        _, _, e2e = latency_stats(read_request_log(scenario_file(name)), (95.0,))
        assert e2e.percentiles_s == ((95.0, p95),)


def test_huge_times_stay_finite(tmp_path):
    """Durations that overflow are refused; means of huge finite ones stay finite."""
    path = tmp_path / "log.csv"
    path.write_text("arrival_s,first_token_s,last_token_s,output_tokens\n-1e308,0,1.7e308,2\n")
    with pytest.raises(NapkinError, match="overflows"):
        read_request_log(path)
    path.write_text("arrival_s,first_token_s,last_token_s,output_tokens\n"
                    "0,1e308,1.7e308,2\n0,1e308,1.7e308,2\n")
    ttft, _, e2e = latency_stats(read_request_log(path))
    assert ttft.mean_s == 1e308 and e2e.mean_s == 1.7e308
