"""Fuzz of the file formats issue 38 added: request logs (``serve metrics``), run records
(``train --run``, ``rl --run``), retrieval queries (``eval retrieval``), tokenizer files and
text files (``tokens``). A good file mutated in one field, a file of odd bytes or a structure
past what is read: finite JSON (exit 0) or one line (exit 2), never a traceback, nothing
half-written to stdout."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonchecks import assert_finite

ODD = ["nan", "inf", "-inf", "-1", "0", "1e400", "5e-324", "1e308", "x", "", "[]", "{}",
       "99999999999999999999", "null", "true", "\"3\""]

LOG_HEAD = "arrival_s,first_token_s,last_token_s,output_tokens\n"
LOG_ROW = ["0", "0.5", "3", "8"]

TRAIN_RECORD = {"kind": "train", "model": "qwen3-0.6b", "seq": 512, "gpu": "h100-sxm",
                "devices": 2, "zero": 3, "mfu": 0.4, "tokens": 1e9}
RL_RECORD = {"kind": "rl", "model": "qwen3-0.6b", "prompt_len": 64, "gen_len": 16, "keep": 4,
             "generate": 8}
QUERY = {"query": "q1", "ranked": ["d3", "d1"], "relevant": ["d1"]}

BYTES = [b"", b"\x00\x01\xff\xfe", b"\xef\xbb\xbf", b"[" * 100_000, b"{" * 100_000,
         "привет".encode("utf-16"), b"\n" * 1000, b"# only a comment\n"]


def _check(result: tuple[int, str, str]) -> None:
    code, out, err = result
    assert "Traceback" not in err, err
    if code == 0:
        assert_finite(json.loads(out))
    else:
        assert code == 2 and out == "" and err.count("\n") == 1, (code, err)


def _literal(value: str) -> object:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


settings_ = settings(max_examples=20, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


@settings_
@given(column=st.integers(0, 3), value=st.sampled_from(ODD), jsonl=st.booleans())
def test_request_log_fields(cli, tmp_path, column, value, jsonl):
    row = list(LOG_ROW)
    row[column] = value
    path = tmp_path / ("log.jsonl" if jsonl else "log.csv")
    if jsonl:
        keys = LOG_HEAD.strip().split(",")
        path.write_text(json.dumps(dict(zip(keys, map(_literal, row), strict=True))) + "\n")
    else:
        path.write_text(LOG_HEAD + ",".join(row) + "\n")
    _check(cli("serve", "metrics", str(path), "--format", "json"))


@settings_
@given(kind=st.sampled_from(["train", "rl"]), value=st.sampled_from(ODD), data=st.data())
def test_run_record_fields(cli, tmp_path, kind, value, data):
    record = dict(TRAIN_RECORD if kind == "train" else RL_RECORD)
    field = data.draw(st.sampled_from(sorted(record)))
    record[field] = _literal(value)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(record))
    _check(cli(kind, "--run", str(path), "--format", "json"))


@settings_
@given(field=st.sampled_from(sorted(QUERY)), value=st.sampled_from(ODD))
def test_retrieval_query_fields(cli, tmp_path, field, value):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({**QUERY, field: _literal(value)}) + "\n")
    _check(cli("eval", "retrieval", str(path), "--format", "json"))


@pytest.mark.parametrize("content", BYTES)
@pytest.mark.parametrize("command", [
    ["serve", "metrics", "{}"], ["train", "--run", "{}"], ["rl", "--run", "{}"],
    ["eval", "retrieval", "{}"], ["tokens", "--tokenizer", "{}", "hello"],
    ["tokens", "--file", "{}"]])
def test_odd_bytes(cli, tmp_path, command, content):
    pytest.importorskip("tokenizers")
    path = tmp_path / "f.json"
    path.write_bytes(content)
    _check(cli(*[str(path) if a == "{}" else a for a in command], "--format", "json"))


@pytest.mark.parametrize("command", [
    ["serve", "metrics", "{}"], ["train", "--run", "{}"], ["eval", "retrieval", "{}"],
    ["tokens", "--tokenizer", "{}", "hello"], ["tokens", "--file", "{}"]])
def test_a_folder_or_a_missing_file(cli, tmp_path, command):
    for path in (tmp_path, tmp_path / "missing.json"):
        code, out, err = cli(*[str(path) if a == "{}" else a for a in command])
        assert code == 2 and out == "" and err.count("\n") == 1, (path, err)
