"""Every worked-example row computes through the library and matches its published value."""

import pytest

from napkin.errors import NapkinError
from napkin.examples.catalog import EXAMPLES, find_example
from napkin.examples.row import Row, rounded

REQUIRED = {"3-1", "3-1-ex", "§3.2.4-ced", "§3.2.4-decision", "task-2", "task-3", "task-5",
            "q13", "q15", "q39", "q40", "self-1", "self-2",  # issue 2
            "3-2", "§3.1.2", "sim-3-1",  # issue 3
            "3-3-mem", "§3.4.2", "§3.4.3", "3-6", "§3.5.2", "3-4-rl", "3-7", "3-5-fit",
            "§3.6.1-life", "3-8", "§3.6.2", "§3.6.3", "3-10", "§3.2.2", "3-3", "task-1",
            "task-4", "q18", "q19", "q21", "q22", "q23", "q27", "q28", "q34", "q48", "q50",
            "self-4", "self-5", "self-6", "self-7", "self-12", "self-13"}  # issue 4


def test_catalog_holds_this_issues_rows():
    assert {e.id for e in EXAMPLES} >= REQUIRED


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_rows_pass(example):
    rows = example.rows()
    assert rows
    failing = [(r.label, r.value, r.published) for r in rows if r.status == "FAIL"]
    assert not failing
    # a tolerance wider than 0.5% must carry its explanation
    assert all(r.note for r in rows if r.published is not None and r.tolerance > 0.005)


def test_row_deviation_and_status():
    assert Row("x", 101, 100).status == "FAIL"
    assert Row("x", 100.4, 100).status == "ok"
    assert Row("x", 7, (7, 8)).deviation == 0
    assert Row("x", 9, (7, 8)).deviation == pytest.approx(1 / 8)
    assert Row("x", 3, None).status == "computed"
    assert rounded("x", 33.79, 34).status == "ok"  # within half a unit of 34
    assert rounded("x", 33.4, 34).status == "FAIL"


def test_find_example_accepts_s_for_section_sign():
    assert find_example("s3.2.4-ced").id == "§3.2.4-ced"
    with pytest.raises(NapkinError, match="unknown id"):
        find_example("nope")


def test_3_1_ex_by_hand():
    rows = {r.label: r.value for r in find_example("3-1-ex").rows()}
    assert rows["1×1024: decode steps"] == 1023
    assert rows["8×128: decode steps, all requests"] == 8 * 127
    assert rows["1×1024: KV tokens at completion (S+P+G−1)"] == 1024 + 1024 - 1
    assert rows["8×128: KV tokens at completion, each"] == 1024 + 128 - 1
    assert rows["1×1024: weight-read cycles"] == 1 + 1023
    assert rows["8×128: weight-read cycles"] == 1 + 127
