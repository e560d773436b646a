"""The training-measurement table reader and how a row becomes napkin's inputs."""


import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from napkin.catalog import measurement_file
from napkin.errors import NapkinError
from napkin.training.measured import plan_run, predicted, read_measured_runs

TABLE = measurement_file("torchtitan_training.csv")
HEADER = ("id,model_ref,gpu,gpu_mem_gb,gpu_bw_gbs,gpu_tflops,gpus,tp,pp,vp,cp,ep,zero,seq,"
          "micro_batch,global_batch,recompute,precision,compile,async_tp,optimizer,grad_dtype,"
          "quantity,measured,stated_mfu\n")
GOOD = ("r1,llama-3.1-8b,h100-sxm,96,2400,,8,1,1,1,1,1,3,8192,2,16,selective,bf16,1,0,,fp32,"
        "tokens_per_s_per_gpu,6667,\n")


@pytest.fixture(scope="module")
def runs():
    return read_measured_runs(TABLE)


def test_the_shipped_table(runs):
    assert len(runs) == 63
    assert sum(r.quantity == "tokens_per_s_per_gpu" for r in runs) == 43
    assert {r.precision for r in runs} == {"bf16", "fp8", "fp8-rowwise"}
    assert {r.gpu for r in runs} == {"a100-80gb-sxm", "h100-sxm-96gb", "h200"}


def test_layout_arithmetic(runs):
    by_id = {r.id: r for r in runs}
    # Table 5: 512 GPUs = FSDP 8 × TP 8 × PP 8; the local batch of 32 in 8 micro-batches of 4
    pp = by_id["torchtitan-h100-405b-pp-1f1b-tokens"]
    assert (pp.data_parallel, pp.micro_batch, pp.accumulation) == (8, 4, 8)
    # Table 2: FSDP 2 × CP 4 on 8 GPUs, one 131,072-token sequence a DP rank
    cp = by_id["torchtitan-h100-8b-fsdp2-cp4-tokens"]
    assert (cp.data_parallel, cp.cp, cp.accumulation, cp.seq) == (2, 4, 1, 131072)
    plan = plan_run(cp, mfu=0.5)
    assert plan.gpus == 8 and plan.tokens_per_update == 2 * 131072
    assert predicted(cp, plan) == pytest.approx(plan.tokens_per_s / 8)


def test_the_overrides_reach_the_plan(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + GOOD.replace("peak_mem", "x").replace(
        "tokens_per_s_per_gpu", "peak_mem_gib"))
    (run,) = read_measured_runs(path)
    plan = plan_run(run)
    assert plan.fit.capacity_bytes == 96e9
    assert predicted(run, plan) == pytest.approx(plan.fit.total_bytes / 2**30)


def test_a_good_row(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + GOOD)
    (run,) = read_measured_runs(path)
    assert (run.compiled, run.async_tp, run.optimizer, run.grad_dtype) == (True, False,
                                                                           "adamw", "fp32")


@pytest.mark.parametrize(("column", "value", "message"), [
    ("tp", "3", "gpus: 8 is not a multiple of tp × pp × cp (3)"),
    ("global_batch", "10", "global_batch: 10 is not a multiple"),
    ("precision", "fp4", "precision: 'fp4' is not one of bf16, fp8, fp8-rowwise"),
    ("recompute", "some", "recompute: 'some' is not one of"),
    ("compile", "yes", "compile: 'yes' is not 0 or 1"),
    ("zero", "4", "zero: '4' is not 0, 1, 2 or 3"),
    ("measured", "nan", "measured: 'nan' is not a finite positive number"),
    ("tp", "0", "tp: '0' is not an integer"),
    ("quantity", "mfu", "quantity: 'mfu' is not one of"),
    ("grad_dtype", "fp64", "grad_dtype: 'fp64' is not bf16, fp16 or fp32"),
])
def test_a_bad_row_is_one_line_naming_its_column(tmp_path, column, value, message):
    names = HEADER.strip().split(",")
    cells = GOOD.strip().split(",")
    cells[names.index(column)] = value
    path = tmp_path / "t.csv"
    path.write_text(HEADER + ",".join(cells) + "\n")
    with pytest.raises(NapkinError, match="line 2") as e:
        read_measured_runs(path)
    assert message in str(e.value) and "\n" not in str(e.value)


ODD = ["nan", "inf", "-inf", "-1", "0", "1e400", "5e-324", "0.5", "3", "x", "", " ",
       "99999999999999999999", "fp8", "selective-op", "1"]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_fuzzed_rows_parse_or_fail_in_one_line(tmp_path_factory, data):
    """Any cell of a row replaced by an odd value: the row reads with finite positive numbers,
    or the reader raises one line naming the file and line — never a traceback."""
    names = HEADER.strip().split(",")
    cells = GOOD.strip().split(",")
    for _ in range(data.draw(st.integers(1, 3))):
        cells[data.draw(st.integers(0, len(cells) - 1))] = data.draw(st.sampled_from(ODD))
    path = tmp_path_factory.mktemp("fuzz") / "t.csv"
    path.write_text(HEADER + ",".join(cells) + "\n")
    try:
        (run,) = read_measured_runs(path)
    except NapkinError as e:
        assert "\n" not in str(e) and str(path) in str(e)
        return
    assert all(math.isfinite(v) and v > 0 for v in (run.measured, run.seq, run.gpus))
    assert run.id == (cells[names.index("id")].strip() or "line 2")


@pytest.mark.parametrize("text", ["", "not,a,table\n1,2\n", HEADER, HEADER + "a,b\n",
                                  "\x00\x01\x02", HEADER.replace("measured", "value") + GOOD])
def test_bad_files_are_one_line(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    try:
        runs = read_measured_runs(path)
    except NapkinError as e:
        assert "\n" not in str(e)
        return
    assert runs == []


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(NapkinError) as e:
        read_measured_runs(tmp_path / "nope.csv")
    assert "\n" not in str(e.value)
