"""The public API of ``napkin examples``: the CLI's answers, rows derived by hand."""

import json

import pytest

from napkin.api import examples
from napkin.errors import NapkinError


def test_list_examples_matches_cli(cli):
    r = examples.list_examples()
    _, out, _ = cli("examples", "list", "--format", "json")
    assert r.data == json.loads(out)
    ids = [e.id for e in r.value]
    assert len(ids) == len(set(ids)) and {"3-1", "3-1-ex", "q13"} <= set(ids)


def test_run_examples_matches_cli_and_the_hand_counts(cli):
    r = examples.run_examples("3-1-ex")
    code, out, _ = cli("examples", "run", "3-1-ex", "--format", "json")
    assert code == 0 and r.data == json.loads(out)
    ((example, rows),) = r.value
    values = {row.label: row.value for row in rows}
    # a 1,024-token output is 1 prefill + 1,023 decode steps; its KV at completion holds
    # S + P + G − 1 = 1024 + 1024 − 1 tokens (tests/examples/test_examples.py)
    assert example.id == "3-1-ex"
    assert values["1×1024: decode steps"] == 1023
    assert values["1×1024: KV tokens at completion (S+P+G−1)"] == 1024 + 1024 - 1
    assert r.data["failed_rows"] == 0


def test_run_several_examples_and_errors():
    r = examples.run_examples(["q13", "s3.2.4-ced"])  # § may be typed s
    assert [e.id for e, _ in r.value] == ["q13", "§3.2.4-ced"]
    assert r.data["failed_rows"] == sum(row.status == "FAIL" for _, rows in r.value
                                        for row in rows) == 0
    with pytest.raises(NapkinError, match=r"^example: unknown id 'nope'"):
        examples.run_examples("nope")
