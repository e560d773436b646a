"""FP4 weight formats (NVFP4, MXFP4 W4A4 and W4A16) and the FP4 tensor-core rate."""

import json
import sys

import pytest

from napkin.accounting.batch import Batch
from napkin.accounting.forward import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.cli.main import main
from napkin.errors import NapkinError
from napkin.specs.dtypes import weight_format
from napkin.specs.hardware import override
from napkin.timing.roofline import Deployment


def test_nvfp4_bytes_per_weight_by_hand():
    # NVFP4: 4-bit E2M1 value + one 8-bit E4M3 scale shared by 16 weights
    # = 4 + 8/16 = 4.5 bits = 0.5625 bytes (the per-tensor FP32 scale is negligible).
    fmt = weight_format("nvfp4")
    assert fmt.bits_per_weight == 4.5
    assert fmt.bytes_per_weight == 4.5 / 8 == 0.5625
    assert fmt.compute == "fp4"


def test_mxfp4_w4a4_and_weight_only_mxfp4():
    # OCP MX: E8M0 scale per block of 32 → 4 + 8/32 = 4.25 bits in both MXFP4 variants;
    # only the compute precision differs.
    w4a4, w4a16 = weight_format("mxfp4-w4a4"), weight_format("mxfp4")
    assert w4a4.bits_per_weight == w4a16.bits_per_weight == 4.25
    assert w4a4.compute == "fp4"
    assert w4a16.compute == "bf16"
    assert "weight-only" in w4a16.description


def test_llama_70b_nvfp4_weight_bytes():
    # 70,553,706,496 params × 4.5 / 8 = 39.69e9 bytes (vs 36.38e9 for int4-g128).
    params = load_model("llama-3-70b").params
    assert params * weight_format("nvfp4").bytes_per_weight == pytest.approx(params * 0.5625)
    assert round(params * 0.5625 / 1e9, 1) == 39.7


def test_nvfp4_prefill_on_b200_is_compute_timed_at_the_fp4_rate():
    model, b200 = load_model("qwen3-8b"), load_accelerator("b200")
    fp4 = Deployment(model, b200, Precision.of("nvfp4"))
    cost = fp4.cost(Batch.uniform(0, 8192))
    t = fp4.time(cost)
    assert fp4.compute == "fp4"
    assert t.bound == "compute"
    # Blackwell datasheet, HGX B200 per GPU: FP4 18 PFLOPS with sparsity → 9e15 dense
    assert t.compute_s == pytest.approx(cost.flops / 9e15)
    # the same FLOPs at the FP8 rate (4.5e15) take twice as long
    fp8 = Deployment(model, b200, Precision.of("fp8"))
    assert fp8.time(fp8.cost(Batch.uniform(0, 8192))).compute_s == pytest.approx(2 * t.compute_s)
    # weight-only MXFP4 stays at the BF16 rate (2.25e15): four times the FP4 time
    w4a16 = Deployment(model, b200, Precision.of("mxfp4"))
    assert w4a16.time(w4a16.cost(Batch.uniform(0, 8192))).compute_s == pytest.approx(
        4 * t.compute_s)


def _cli(monkeypatch, capsys, *args):
    monkeypatch.setattr(sys, "argv", ["napkin", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def test_call_cli_nvfp4_on_b200(monkeypatch, capsys):
    code, out, _ = _cli(monkeypatch, capsys, "call", "qwen3-8b", "--new", "8192", "--gpu", "b200",
                        "--weights", "nvfp4", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["assumptions"]["compute"] == "fp4"
    assert doc["assumptions"]["bits_per_weight"] == 4.5
    assert doc["assumptions"]["gpu_peak_flops_per_s"] == 9e15
    prefill = doc["chain"]["prefill_time"]
    assert prefill["bound"] == "compute"
    assert prefill["compute_s"] == pytest.approx(doc["prefill"]["flops"] / 9e15)


def test_no_fp4_rate_on_h100_is_a_one_line_error():
    with pytest.raises(NapkinError) as e:
        load_accelerator("h100-sxm").peak_flops_per_s("fp4")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("gpu: h100-sxm has no dense fp4 rate")
    assert "--weights" in msg


def test_nvfp4_on_h100_cli_exits_2_with_one_line(monkeypatch, capsys):
    code, _, err = _cli(monkeypatch, capsys, "call", "qwen3-8b", "--new", "100", "--gpu",
                        "h100-sxm", "--weights", "nvfp4")
    assert code == 2
    assert "no dense fp4 rate" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("acc_id", "sparse_pflops"), [("b200", 18), ("gb200", 20)])
def test_blackwell_fp4_is_half_the_sparse_datasheet_figure(acc_id, sparse_pflops):
    acc = load_accelerator(acc_id)
    assert acc.peak_flops_per_s("fp4") == sparse_pflops * 1e15 / 2
    assert "fp4" in acc.sources and "sparsity" in acc.sources["fp4"]


def test_rtx_pro_6000_fp4_about_half_of_4000_ai_tops():
    # datasheet: 4000 AI TOPS = FP4 with sparsity; catalog: 4 × 503.8 dense BF16 = 2015.2
    acc = load_accelerator("rtx-pro-6000")
    assert acc.peak_flops_per_s("fp4") == pytest.approx(4 * 503.8e12)
    assert acc.peak_flops_per_s("fp4") == pytest.approx(4000e12 / 2, rel=0.01)


def test_custom_gpu_tflops_covers_fp4():
    acc = override(None, mem_gb=24, bw_gbs=500, tflops=100)
    assert acc.peak_flops_per_s("fp4") == 100e12


def test_gpus_table_has_an_fp4_column(monkeypatch, capsys):
    code, out, _ = _cli(monkeypatch, capsys, "gpus", "--format", "md")
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("| id"))
    assert "fp4" in header
    b200 = next(line for line in out.splitlines() if line.startswith("| b200 "))
    h100 = next(line for line in out.splitlines() if line.startswith("| h100-sxm "))
    assert "9,000.0" in b200
    assert h100.split("|")[header.split("|").index(" fp4 ")].strip() == "—"
