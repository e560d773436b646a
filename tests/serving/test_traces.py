"""Trace readers: each public format written by hand, read back, checked against hand-derived
arrivals (seconds, rebased to 0), lengths, labels, prefix hashes and drop counts."""

import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from napkin.errors import NapkinError
from napkin.serving.trace_rows import Trace
from napkin.serving.traces import read_trace


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _close(actual: np.ndarray, expected: list[float], atol: float = 1e-9) -> None:
    np.testing.assert_allclose(actual, expected, rtol=0, atol=atol)


# --- Azure ---------------------------------------------------------------------------------------

AZURE_2023 = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.2224670,879,55
2023-11-16 18:15:53.1000000,1020,0
2023-11-16 18:15:46.6805901,2048,12
"""


def test_azure_2023_seven_digit_timestamps(tmp_path: Path) -> None:
    trace = read_trace(_write(tmp_path, "AzureLLMInferenceTrace_conv.csv", AZURE_2023), "azure")
    r = trace.requests
    # sorted: 46.6805900, 46.6805901 (last line, 100 ns later), 50.9951690, 51.2224670;
    # the 53.1 s row generated 0 tokens and is dropped
    _close(r.arrival_s, [0.0, 0.0000001, 4.3145790, 4.5418770], atol=1e-12)
    assert r.arrival_s[1] > 0.0  # the 7th fractional digit survives
    assert r.input_tokens.tolist() == [374, 2048, 396, 879]
    assert r.output_tokens.tolist() == [44, 12, 109, 55]
    assert r.labels == ("azure",)
    assert r.label.tolist() == [0, 0, 0, 0]
    assert r.prefix_hashes is None
    assert (trace.rows_read, trace.rows_dropped, trace.rows_filtered) == (5, 1, 0)
    assert trace.drop_reason == "output tokens <= 0"
    assert "AzureLLMInferenceTrace_conv.csv" in trace.source and "azure" in trace.source


def test_azure_2024_timezone_timestamps(tmp_path: Path) -> None:
    text = """TIMESTAMP,ContextTokens,GeneratedTokens
2024-05-10 00:00:00.009930+00:00,2162,5
2024-05-10 00:00:00.511930+00:00,4350,21
2024-05-10 00:00:01.009930+00:00,1046,224
2024-05-11 00:00:00.009930+00:00,783,18
"""
    trace = read_trace(_write(tmp_path, "AzureLLMInferenceTrace_code_1week.csv", text), "azure")
    _close(trace.requests.arrival_s, [0.0, 0.502, 1.0, 86400.0])
    assert trace.requests.input_tokens.tolist() == [2162, 4350, 1046, 783]
    assert trace.requests.output_tokens.tolist() == [5, 21, 224, 18]
    assert (trace.rows_read, trace.rows_dropped, trace.drop_reason) == (4, 0, "")


# --- BurstGPT ------------------------------------------------------------------------------------

BURSTGPT = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,ChatGPT,1087,230,1317,Conversation log
118,GPT-4,417,276,693,Conversation log
120,GPT-4,300,0,300,API log
131,ChatGPT,256,102,358,API log
150,GPT-4,1500,620,2120,Conversation log
"""


@pytest.fixture
def burstgpt(tmp_path: Path) -> Path:
    return _write(tmp_path, "BurstGPT_1.csv", BURSTGPT)


def test_burstgpt_drops_failed_requests_and_labels_models(burstgpt: Path) -> None:
    trace = read_trace(burstgpt, "burstgpt")
    r = trace.requests
    # timestamps 5, 45, 118, 131, 150 (120 failed: 0 response tokens) minus 5
    _close(r.arrival_s, [0.0, 40.0, 113.0, 126.0, 145.0])
    assert r.input_tokens.tolist() == [472, 1087, 417, 256, 1500]
    assert r.output_tokens.tolist() == [18, 230, 276, 102, 620]
    assert r.labels == ("ChatGPT", "GPT-4")
    assert r.label.tolist() == [0, 0, 1, 0, 1]
    assert (trace.rows_read, trace.rows_dropped, trace.rows_filtered) == (6, 1, 0)
    assert trace.drop_reason == "output tokens 0 (failed requests in BurstGPT)"


def test_burstgpt_model_filter(burstgpt: Path) -> None:
    trace = read_trace(burstgpt, "burstgpt", model="GPT-4")
    r = trace.requests
    # GPT-4 rows: 118 (kept), 120 (failed, dropped), 150 (kept) → 0, 32
    _close(r.arrival_s, [0.0, 32.0])
    assert r.input_tokens.tolist() == [417, 1500]
    assert r.output_tokens.tolist() == [276, 620]
    assert r.labels == ("GPT-4",)
    assert r.label.tolist() == [0, 0]
    assert (trace.rows_read, trace.rows_filtered, trace.rows_dropped) == (6, 3, 1)
    chat = read_trace(burstgpt, "burstgpt", model="ChatGPT")
    _close(chat.requests.arrival_s, [0.0, 40.0, 126.0])
    assert chat.requests.labels == ("ChatGPT",)
    assert (chat.rows_filtered, chat.rows_dropped) == (3, 0)


def test_burstgpt_max_rows(burstgpt: Path) -> None:
    trace = read_trace(burstgpt, "burstgpt", max_rows=2)
    assert trace.rows_read == 2
    _close(trace.requests.arrival_s, [0.0, 40.0])
    assert trace.requests.labels == ("ChatGPT",)


def test_scaled_and_sliced(burstgpt: Path) -> None:
    r = read_trace(burstgpt, "burstgpt").requests
    _close(r.scaled(0.5).arrival_s, [0.0, 20.0, 56.5, 63.0, 72.5])
    part = r.sliced(40.0, 126.0)  # arrivals 40 and 113, rebased to start at 40
    _close(part.arrival_s, [0.0, 73.0])
    assert part.input_tokens.tolist() == [1087, 417]
    assert part.output_tokens.tolist() == [230, 276]
    assert part.label.tolist() == [0, 1]
    assert part.labels == ("ChatGPT", "GPT-4")
    kept = r.sliced(100.0, rebase=False)
    _close(kept.arrival_s, [113.0, 126.0, 145.0])


# --- Mooncake ------------------------------------------------------------------------------------

MOONCAKE = """\
{"timestamp": 27482, "input_length": 1300, "output_length": 52, "hash_ids": [46, 47, 48]}
{"timestamp": 30535, "input_length": 1100, "output_length": 26, "hash_ids": [46, 47, 2366]}
{"timestamp": 30535, "input_length": 700, "output_length": 310, "hash_ids": [46, 2367]}
{"timestamp": 33001, "input_length": 2600, "output_length": 0, "hash_ids": [46, 47, 48, 2368, 2369, 2370]}
{"timestamp": 36010, "input_length": 1536, "output_length": 97, "hash_ids": [46, 47, 48]}
"""  # noqa: E501 (one JSON object per line, as the trace writes it)


@pytest.fixture
def mooncake(tmp_path: Path) -> Path:
    return _write(tmp_path, "conversation_trace.jsonl", MOONCAKE)


def test_mooncake_ms_timestamps_and_prefix_hashes(mooncake: Path) -> None:
    trace = read_trace(mooncake, "mooncake")
    r = trace.requests
    # (27482, 30535, 30535, 36010 ms) - 27482 ms; the 33001 ms line has output 0 → dropped
    _close(r.arrival_s, [0.0, 3.053, 3.053, 8.528])
    assert r.input_tokens.tolist() == [1300, 1100, 700, 1536]
    assert r.output_tokens.tolist() == [52, 26, 310, 97]
    assert r.prefix_hashes == ((46, 47, 48), (46, 47, 2366), (46, 2367), (46, 47, 48))
    assert r.hash_block_tokens == 512
    assert r.labels == ("mooncake",)
    assert (trace.rows_read, trace.rows_dropped) == (5, 1)
    assert trace.drop_reason == "output tokens <= 0"


def test_mooncake_sliced_keeps_hashes(mooncake: Path) -> None:
    r = read_trace(mooncake, "mooncake").requests.sliced(3.0)
    _close(r.arrival_s, [0.053, 0.053, 5.528])
    assert r.prefix_hashes == ((46, 47, 2366), (46, 2367), (46, 47, 48))
    assert r.hash_block_tokens == 512
    _close(read_trace(mooncake, "mooncake").requests.scaled(2.0).arrival_s,
           [0.0, 6.106, 6.106, 17.056])


# --- generic CSV ---------------------------------------------------------------------------------

# as pandas writes an int column holding a blank: 120.0, 80.0, '', 64.0
GENERIC = """request_id,arrival,prompt_tokens,completion_tokens
r1,1000,120.0,30
r2,4000,80.0,15
r3,1250,,40
r4,1500,64.0,8
"""
GENERIC_COLUMNS = {"arrival_column": "arrival", "input_column": "prompt_tokens",
                   "output_column": "completion_tokens"}


@pytest.mark.parametrize(
    ("unit", "expected"),
    [
        ("ms", [0.0, 0.5, 3.0]),  # 1000, 1500, 4000 ms
        ("s", [0.0, 500.0, 3000.0]),
        ("us", [0.0, 0.0005, 0.003]),
    ],
)
def test_csv_time_units(tmp_path: Path, unit: str, expected: list[float]) -> None:
    path = _write(tmp_path, "requests.csv", GENERIC)
    trace = read_trace(path, "csv", time_unit=unit, **GENERIC_COLUMNS)  # type: ignore[arg-type]
    r = trace.requests
    _close(r.arrival_s, expected, atol=1e-12)
    assert r.input_tokens.tolist() == [120, 64, 80]  # r1, r4, r2
    assert r.output_tokens.tolist() == [30, 8, 15]
    assert r.labels == ("csv",)
    assert (trace.rows_read, trace.rows_dropped) == (4, 1)
    assert trace.drop_reason == "input tokens missing"


def test_csv_datetime_unit(tmp_path: Path) -> None:
    text = """when,in,out
2024-05-10T00:00:00Z,100,10
2024-05-10T01:00:02+01:00,200,20
2024-05-10 00:00:01.25,300,30
2024-05-09T23:59:59.5-00:00,50,5
"""
    path = _write(tmp_path, "dt.csv", text)
    trace = read_trace(path, "csv", arrival_column="when", input_column="in",
                       output_column="out", time_unit="datetime")
    # UTC: 23:59:59.5, 00:00:00, 00:00:01.25 (zone-less = UTC), 00:00:02 (01:00:02+01:00)
    _close(trace.requests.arrival_s, [0.0, 0.5, 1.75, 2.5])
    assert trace.requests.input_tokens.tolist() == [50, 100, 300, 200]
    assert trace.requests.output_tokens.tolist() == [5, 10, 30, 20]


# --- parquet -------------------------------------------------------------------------------------


def test_parquet_round_trip(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "trace.parquet"
    pq.write_table(pa.table({
        "t_ms": pa.array([5000, 5250, 7000, 9000], pa.int64()),
        "isl": pa.array([100, 200, None, 50], pa.int64()),
        "osl": pa.array([10, 20, 30, 0], pa.int64()),
    }), path)
    trace = read_trace(path, "parquet", arrival_column="t_ms", input_column="isl",
                       output_column="osl", time_unit="ms")
    _close(trace.requests.arrival_s, [0.0, 0.25])
    assert trace.requests.input_tokens.tolist() == [100, 200]
    assert trace.requests.output_tokens.tolist() == [10, 20]
    assert trace.requests.labels == ("parquet",)
    assert (trace.rows_read, trace.rows_dropped) == (4, 2)
    assert trace.drop_reason == "input tokens missing; output tokens <= 0"
    first = read_trace(path, "parquet", arrival_column="t_ms", input_column="isl",
                       output_column="osl", time_unit="ms", max_rows=2)
    assert first.rows_read == 2
    _close(first.requests.arrival_s, [0.0, 0.25])


def test_parquet_timestamp_column(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "ts.parquet"
    pq.write_table(pa.table({
        "arrived": pa.array([datetime(2024, 5, 10, 0, 0, 0, 250000), datetime(2024, 5, 10),
                             datetime(2024, 5, 10, 0, 0, 3)], pa.timestamp("us")),
        "prompt": pa.array([300.0, 100.0, 200.0]),
        "completion": pa.array([3, 1, 2], pa.int32()),
    }), path)
    trace = read_trace(path, "parquet", arrival_column="arrived", input_column="prompt",
                       output_column="completion", time_unit="datetime")
    _close(trace.requests.arrival_s, [0.0, 0.25, 3.0])
    assert trace.requests.input_tokens.tolist() == [100, 300, 200]
    assert trace.requests.output_tokens.tolist() == [1, 3, 2]
    with pytest.raises(NapkinError, match=r"time_unit.*'arrived'"):
        read_trace(path, "parquet", arrival_column="arrived", input_column="prompt",
                   output_column="completion", time_unit="s")


def test_parquet_without_pyarrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "t.parquet", "not really parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(NapkinError, match="pip install pyarrow"):
        read_trace(path, "parquet", arrival_column="t", input_column="i", output_column="o")


def test_parquet_missing_column(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"t": [0, 1], "isl": [5, 6], "osl": [1, 2]}), path)
    with pytest.raises(NapkinError, match=r"missing column 'output'.*columns found: t, isl, osl"):
        read_trace(path, "parquet", arrival_column="t", input_column="isl",
                   output_column="output")


# --- errors --------------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(NapkinError, match=r"no such file .*nope\.csv"):
        read_trace(tmp_path / "nope.csv", "azure")


def test_missing_column_azure(tmp_path: Path) -> None:
    path = _write(tmp_path, "a.csv", "TIMESTAMP,ContextTokens,OutputTokens\n"
                                     "2023-11-16 18:15:46.6805900,374,44\n")
    with pytest.raises(NapkinError, match=r"missing column 'GeneratedTokens'.*"
                                          r"columns found: TIMESTAMP, ContextTokens, OutputTokens"):
        read_trace(path, "azure")


def test_missing_column_burstgpt_model(tmp_path: Path) -> None:
    path = _write(tmp_path, "b.csv", "Timestamp,Request tokens,Response tokens\n5,472,18\n")
    with pytest.raises(NapkinError, match="missing column 'Model'"):
        read_trace(path, "burstgpt")


def test_unparseable_token_count(tmp_path: Path) -> None:
    text = BURSTGPT.replace("45,ChatGPT,1087,", "45,ChatGPT,lots,")
    path = _write(tmp_path, "b.csv", text)
    with pytest.raises(NapkinError, match=r"b\.csv:3: column 'Request tokens': .*'lots'"):
        read_trace(path, "burstgpt")
    frac = _write(tmp_path, "c.csv", BURSTGPT.replace(",18,490,", ",18.5,490,"))
    with pytest.raises(NapkinError, match=r"c\.csv:2: column 'Response tokens'"):
        read_trace(frac, "burstgpt")


def test_unparseable_timestamp(tmp_path: Path) -> None:
    bad_hour = AZURE_2023.replace("18:15:50.9951690", "25:15:50.9951690")
    path = _write(tmp_path, "a.csv", bad_hour)
    with pytest.raises(NapkinError, match=r"a\.csv:3: column 'TIMESTAMP': .*25:15:50"):
        read_trace(path, "azure")
    other = _write(tmp_path, "b.csv", AZURE_2023.replace("2023-11-16 18:15:51.2224670",
                                                         "16/11/2023 18:15"))
    with pytest.raises(NapkinError, match=r"b\.csv:4: column 'TIMESTAMP'"):
        read_trace(other, "azure")
    ms = _write(tmp_path, "c.csv", GENERIC.replace("r2,4000,", "r2,soon,"))
    with pytest.raises(NapkinError, match=r"c\.csv:3: column 'arrival': .*'soon'"):
        read_trace(ms, "csv", time_unit="ms", **GENERIC_COLUMNS)  # type: ignore[arg-type]


def test_mooncake_errors(tmp_path: Path) -> None:
    lines = MOONCAKE.splitlines()
    broken = _write(tmp_path, "a.jsonl", lines[0] + "\n" + lines[1][:-1] + "\n")
    with pytest.raises(NapkinError, match=r"a\.jsonl:2: not valid JSON"):
        read_trace(broken, "mooncake")
    no_input = _write(tmp_path, "b.jsonl", '{"timestamp": 0, "output_length": 5}\n')
    with pytest.raises(NapkinError, match=r"b\.jsonl:1: missing field 'input_length'.*"
                                          r"fields found: timestamp, output_length"):
        read_trace(no_input, "mooncake")
    text_ts = _write(tmp_path, "c.jsonl", lines[0] + "\n" + lines[1].replace("30535", '"x"'))
    with pytest.raises(NapkinError, match=r"c\.jsonl:2: field 'timestamp'"):
        read_trace(text_ts, "mooncake")


def test_empty_after_dropping(tmp_path: Path) -> None:
    text = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
120,GPT-4,300,0,300,API log
121,ChatGPT,250,0,250,API log
"""
    path = _write(tmp_path, "b.csv", text)
    with pytest.raises(NapkinError, match=r"no requests left after dropping 2 of 2 rows "
                                          r"\(output tokens 0 \(failed requests in BurstGPT\)\)"):
        read_trace(path, "burstgpt")
    header_only = _write(tmp_path, "h.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n")
    with pytest.raises(NapkinError, match="no data rows"):
        read_trace(header_only, "azure")


def test_model_filter_without_matches(burstgpt: Path) -> None:
    with pytest.raises(NapkinError, match=r"no rows with Model 'gpt-4' .*'ChatGPT', 'GPT-4'"):
        read_trace(burstgpt, "burstgpt", model="gpt-4")


def test_generic_formats_need_columns(tmp_path: Path) -> None:
    path = _write(tmp_path, "r.csv", GENERIC)
    with pytest.raises(NapkinError, match=r"missing: input_column$"):
        read_trace(path, "csv", arrival_column="arrival", output_column="completion_tokens")
    with pytest.raises(NapkinError, match="missing: arrival_column, input_column, output_column"):
        read_trace(path, "parquet")


def test_option_errors(tmp_path: Path, burstgpt: Path) -> None:
    with pytest.raises(NapkinError, match="format 'sharegpt' is not one of"):
        read_trace(burstgpt, "sharegpt")  # type: ignore[arg-type]
    with pytest.raises(NapkinError, match="time_unit: 'h' is not one of"):
        read_trace(burstgpt, "csv", time_unit="h", **GENERIC_COLUMNS)  # type: ignore[arg-type]
    with pytest.raises(NapkinError, match=r"^model: .*'azure'"):
        read_trace(burstgpt, "azure", model="GPT-4")
    with pytest.raises(NapkinError, match=r"^time_unit: only for formats"):
        read_trace(burstgpt, "burstgpt", time_unit="ms")
    with pytest.raises(NapkinError, match=r"^arrival_column: only for formats"):
        read_trace(burstgpt, "burstgpt", arrival_column="Timestamp")
    with pytest.raises(NapkinError, match=r"^max_rows: "):
        read_trace(burstgpt, "burstgpt", max_rows=0)


def test_trace_is_frozen(burstgpt: Path) -> None:
    trace = read_trace(str(burstgpt), "burstgpt")
    assert isinstance(trace, Trace)
    with pytest.raises(AttributeError):
        trace.rows_read = 0  # type: ignore[misc]
