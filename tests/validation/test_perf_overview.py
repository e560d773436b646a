"""The shipped set ``trtllm-perf-overview`` (TensorRT-LLM's perf-overview H100 offline
throughputs): how its rows read, that no profile is fitted on it, and the shipped TensorRT-LLM
profile's error on it — issue 33's hold-out of the H100 MoE rows (gpt-oss-120b over attention
DP 4 with EP, Qwen3-235B-A22B over attention DP 8 with EP) within 15 %."""

from dataclasses import replace
from pathlib import Path

import pytest

from napkin.accounting.forward import Precision
from napkin.accounting.linear import LinearCost
from napkin.calibration.basis import layout_timer
from napkin.calibration.profile import load_profile
from napkin.calibration.terms import TERMS
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.step import StepShape
from napkin.specs.layout import ParallelLayout
from napkin.validation.fit import fitted_timer
from napkin.validation.perf_overview import PERF_OVERVIEW_TABLE, layout_of, perf_overview_rows
from napkin.validation.sets import FITTED, TRAINING, load_set

HEADER = "model,gpu,gpus,parallelism,isl,osl,num_requests,value\n"


def test_rows_read_as_bursts_of_the_whole_layout():
    rows = load_set("trtllm-perf-overview")
    assert len(rows) == 15
    first = rows[0]  # gpt-oss-120b DEP4 1000/1000: 4,685 output tokens/s per GPU
    assert (first.model, first.tensor_parallel, first.attention_data_parallel,
            first.expert_parallel_size) == ("gpt-oss-120b", 1, 4, 4)
    assert first.output_tokens_per_s == 4 * 4685
    # the 1,000-token rows give no count; the page's table gives 3,000 for 1,024/1,024
    assert first.harness.num_requests == 1000 and rows[1].harness.num_requests == 3000
    # MXFP4 experts with the "Hopper: use auto" (BF16) KV cache; FP8 checkpoints' KV in FP8
    assert (first.weights, first.kv_dtype) == ("mxfp4", "bf16")
    qwen = [m for m in rows if m.model == "qwen3-235b-a22b"]
    assert {(m.weights, m.kv_dtype, m.attention_data_parallel) for m in qwen} == {
        ("fp8", "fp8", 8)}
    assert all(m.launch is not None and not m.launch.chunked_prefill for m in rows)


def test_layouts_and_bad_rows_are_one_line_each(tmp_path: Path):
    assert layout_of("DEP8") == (1, 8, 8) and layout_of("TP2") == (2, 1, 1)
    good = "openai/gpt-oss-20b,H100,1,TP1,1024,1024,3000,11403\n"
    bad = {"parallelism": good.replace("TP1", "PP2"),
           "gpu": good.replace("H100", "B200"),
           "gpus": good.replace(",1,TP1", ",2,TP1"),
           "model": good.replace("openai/gpt-oss-20b", "acme/x"),
           "value": good.replace("11403", "nan")}
    for field, line in bad.items():
        path = tmp_path / f"{field}.csv"
        path.write_text(HEADER + line)
        with pytest.raises(NapkinError, match=f"line 2: .*{field}"):
            perf_overview_rows(path)
    with pytest.raises(NapkinError, match="kv"):
        perf_overview_rows(kv="int4")


def test_no_profile_is_fitted_on_it():
    assert "trtllm-perf-overview" not in FITTED + TRAINING
    for name in ("trtllm", "vllm", "sglang", "trtllm-compiled"):
        files = {s.get("file") for s in load_profile(name).sources}
        assert PERF_OVERVIEW_TABLE not in files


def test_a_dep_step_pays_its_all_to_alls_once_a_collective_and_once_a_step():
    """The shipped profile's all-to-all fixed times, by hand: a gpt-oss-120b decode step of 64
    sequences a rank over attention DP 4 with EP 4 (36 MoE layers) differs from the same step
    with ``alltoall`` and ``alltoall_step`` at 0 by 2 × 36 × c_alltoall + c_alltoall_step (H100:
    the time scale is 1) — the link's 10 µs a dispatch or combine, and a fitted time once a
    step that runs them, the same for any depth (Qwen3-235B-A22B's 94 MoE layers too)."""
    m, acc = load_model("gpt-oss-120b"), load_accelerator("h100-sxm")
    precision = Precision.of("mxfp4", "bf16")
    model = load_profile("trtllm").model
    c, per_step = model.as_dict()["alltoall"], model.as_dict()["alltoall_step"]
    assert c == 10e-6  # not fitted: the link's latency (UNFITTED)
    assert 5e-3 < per_step < 30e-3  # fitted: ranks waiting at every MoE layer, host work
    layout = ParallelLayout(1, 4, 4)
    seqs = 4 * 64
    shape = StepShape(seqs, seqs * 2000, [])
    parts = LinearCost.of(m, precision).parts(shape)
    spec = EngineSpec(num_blocks=1, backend="trtllm")
    zero = list(model.coefficients)
    zero[TERMS.index("alltoall")] = zero[TERMS.index("alltoall_step")] = 0.0

    def step(mdl) -> float:
        device = fitted_timer(mdl)(m, acc, precision, spec)
        timer = layout_timer(m, precision, layout, device, acc.allreduce_bytes_per_s, 10e-6,
                             engine="trtllm")
        return timer.step_s(parts, seqs, False)

    assert m.num_layers == 36 and all(b.experts is not None for b in m.blocks)
    assert step(model) - step(replace(model, coefficients=tuple(zero))) == pytest.approx(
        2 * 36 * c + per_step, rel=1e-9)


def test_the_shipped_profile_holds_out_within_15_percent():
    """Issue 33: the perf-overview H100 MoE rows within 15 % (median |error| of the output
    throughput over the 15 rows; the profile never saw them)."""
    from napkin.api import calibration as api

    ((label, how, rep),) = api.validate("trtllm-perf-overview").value
    assert "trtllm" in label and "as fitted" in how
    stats = rep.overall["throughput"]
    assert stats.rows == 15
    assert stats.median_abs_error <= 0.15


def test_validate_names_the_attention_dp_layouts_of_a_group(cli):
    """A (GPU, model, TP) group's TP is the attention's: DEP rows are ``tp 1``. The report says
    which layouts a group's attention-DP rows run, and the worst rows print each row's layout
    (``dp 4 ep 4``), a plain TP row its TP."""
    code, out, err = cli("validate", "trtllm-perf-overview", "--wide")
    assert code == 0, err
    assert "gpt-oss-120b on h100-sxm, tp 1 (dp 4 ep 4)" in out
    assert "qwen3-235b-a22b on h100-sxm, tp 1 (dp 8 ep 8)" in out
    assert "gpt-oss-20b on h100-sxm, tp 1 " in out and "gpt-oss-20b on h100-sxm, tp 1 (" not in out
    assert "burst, dp 8 ep 8" in out and "burst, tp 1" in out
