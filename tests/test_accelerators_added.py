"""The H100 NVL, H200 NVL, GH200 (144 GB HBM3e) and GB300 catalog entries against the published
figures they were read from: dense rates, never the 2:4-sparsity headline."""

from importlib import resources

import pytest

from napkin.catalog import accelerators, load_accelerator
from napkin.specs.yaml_text import load_yaml

ADDED = ("h100-nvl", "h200-nvl", "gh200", "gb300")
MIB = 2**20


def tflops(acc_id: str, fmt: str) -> float:
    return load_accelerator(acc_id).peak_flops_per_s(fmt) / 1e12


def raw_entry(acc_id: str) -> dict:
    """The YAML entry itself (tdp_w, memory_type and host_link are not on Accelerator)."""
    text = resources.files("napkin.catalog").joinpath("accelerators.yaml").read_text()
    return next(e for e in load_yaml(text) if e["id"] == acc_id)


@pytest.mark.parametrize("acc_id", ADDED)
def test_entries_load_with_sources(acc_id):
    assert acc_id in accelerators()
    acc = load_accelerator(acc_id)
    assert acc.id == acc_id
    for key in ("memory", "bandwidth", "compute", "interconnect", "device_memory"):
        assert acc.sources.get(key, "").strip(), f"{acc_id}: no source for {key}"
    assert acc.notes.strip()
    assert acc.confidence in ("high", "medium")
    # what CUDA sees is within 10% of the marketed capacity
    assert 0.9 < acc.device_memory_bytes / acc.memory_bytes < 1.1
    e = raw_entry(acc_id)
    assert e["vendor"] == "NVIDIA"
    assert e["host_link"].strip()


def test_h100_nvl():
    """H100 datasheet / product page, H100 NVL column: 94 GB, 3.9 TB/s (product brief
    PB-11773-001: 3,938 GB/s), BF16/FP16 1,671* and FP8/INT8 3,341* (*with sparsity) -> dense
    835.5 / 1,670.5; NVLink bridge 600 GB/s; max TDP 350-400 W. nvidia-smi: 95830 MiB."""
    acc = load_accelerator("h100-nvl")
    assert acc.memory_bytes == 94e9
    assert acc.mem_bytes_per_s == 3938e9
    assert acc.mem_bytes_per_s == pytest.approx(3.9e12, rel=0.01)
    assert tflops("h100-nvl", "bf16") == 1671 / 2 == 835.5
    assert tflops("h100-nvl", "fp16") == 1671 / 2
    assert tflops("h100-nvl", "fp8") == 3341 / 2 == 1670.5
    assert tflops("h100-nvl", "int8") == 3341 / 2
    assert acc.device_memory_bytes == 95830 * MIB
    assert acc.interconnect_bytes_per_s == 600e9
    assert raw_entry("h100-nvl")["tdp_w"] == 400
    # Per card, not the launch material's 2-card pair (188 GB, 7.8 TB/s, FP8 7,916*), and
    # slower than H100 SXM (989.4 BF16 dense) despite more memory and bandwidth.
    assert tflops("h100-nvl", "bf16") < tflops("h100-sxm", "bf16")
    assert acc.memory_bytes > load_accelerator("h100-sxm").memory_bytes
    assert acc.memory_bytes != 188e9


def test_h200_nvl():
    """H200 product page, H200 NVL column: 141 GB HBM3e, 4.8 TB/s, BF16/FP16 1,671* and
    FP8/INT8 3,341* (*with sparsity) -> dense 835.5 / 1,670.5; 2- or 4-way NVLink bridge
    900 GB/s per GPU; max TDP up to 600 W. nvidia-smi: 143771 MiB (as H200 SXM)."""
    acc = load_accelerator("h200-nvl")
    sxm = load_accelerator("h200")
    assert acc.memory_bytes == 141e9 == sxm.memory_bytes
    assert acc.mem_bytes_per_s == 4.8e12 == sxm.mem_bytes_per_s
    assert tflops("h200-nvl", "bf16") == 1671 / 2
    assert tflops("h200-nvl", "fp16") == 1671 / 2
    assert tflops("h200-nvl", "fp8") == 3341 / 2
    assert tflops("h200-nvl", "int8") == 3341 / 2
    assert acc.device_memory_bytes == 143771 * MIB == sxm.device_memory_bytes
    assert acc.interconnect_bytes_per_s == 900e9
    assert raw_entry("h200-nvl")["tdp_w"] == 600
    # Same memory as H200 SXM, but the PCIe power bin's compute (the NVL column), not 989.4.
    assert tflops("h200-nvl", "bf16") < tflops("h200", "bf16")
    for fmt in ("bf16", "fp8", "int8"):
        assert tflops("h200-nvl", fmt) == tflops("h100-nvl", fmt)


def test_gh200_144gb_hbm3e():
    """GH200 Grace Hopper Superchip datasheet (verbatim copy in atineoSE/coding-model-seeks-gpu
    gh200_specs.md): 96GB HBM3 | 144GB HBM3e, up to 4TB/s | up to 4.9TB/s; BF16/FP16
    1,979* | 990, FP8/INT8 3,958* | 1,979 (*with sparsity); NVLink-C2C 900 GB/s; module power
    450-1000 W. The 144 GB HBM3e variant is the one catalogued. nvidia-smi: 146831 MiB."""
    acc = load_accelerator("gh200")
    assert acc.memory_bytes == 144e9
    assert acc.mem_bytes_per_s == 4.9e12
    # the datasheet prints both: dense = half the starred figure
    assert tflops("gh200", "bf16") == pytest.approx(1979 / 2, abs=0.2)
    assert tflops("gh200", "bf16") == pytest.approx(990, abs=1)  # datasheet dense column: 990
    assert tflops("gh200", "fp8") == pytest.approx(3958 / 2, abs=0.2)
    assert tflops("gh200", "int8") == pytest.approx(1979, abs=0.2)
    # H100 SXM compute (132 SMs; Hopper whitepaper 989.4 / 1978.9)
    for fmt in ("bf16", "fp16", "fp8", "int8"):
        assert tflops("gh200", fmt) == tflops("h100-sxm", fmt)
    assert "fp4" not in acc.dense_flops_per_s
    assert acc.device_memory_bytes == 146831 * MIB
    assert acc.device_memory_bytes > 144e9  # the shipping part is the 144 GB one, not 141 GB
    assert acc.interconnect_bytes_per_s == 900e9  # 18 NVLink-4 links x 50 GB/s
    e = raw_entry("gh200")
    assert e["tdp_w"] == 1000  # whole module (Grace + LPDDR5X + GPU), configurable 450-1000 W
    assert "900 GB/s" in e["host_link"]
    assert "141" in acc.notes and "4.9" in acc.notes  # the variant chosen is stated


def test_gb300_per_gpu():
    """GB300 NVL72 per Blackwell Ultra GPU: rack FP4 1,080 PF dense | 1,440 PF sparse, FP8
    720 PF*, BF16 360 PF* (*sparse), INT8 24 POPS*, 576 TB/s, 130 TB/s NVLink, over 72 GPUs
    -> 15,000 FP4 / 5,000 FP8 / 2,500 BF16 dense, 8 TB/s, 1.8 TB/s; aiconfigurator gb300.yaml
    (Blackwell Ultra datasheet): 2500 / 5000 / int8 165 / fp4 15000 TFLOPS, 8 TB/s, 1400 W,
    284208 MiB from nvidia-smi. 288 GB HBM3e (NVIDIA MLPerf system GB300-288GB)."""
    acc = load_accelerator("gb300")
    assert acc.memory_bytes == 288e9
    assert acc.mem_bytes_per_s == 8e12 == 576e12 / 72
    assert tflops("gb300", "bf16") == 360_000 / 72 / 2 == 2500
    assert tflops("gb300", "fp16") == 2500
    assert tflops("gb300", "fp8") == 720_000 / 72 / 2 == 5000
    assert tflops("gb300", "int8") == 165
    assert tflops("gb300", "int8") == pytest.approx(24_000 / 72 / 2, rel=0.02)
    # Blackwell Ultra raised DENSE FP4: 1.08 EF / 72, three quarters (not half) of the sparse
    # 1.44 EF / 72.
    assert tflops("gb300", "fp4") == 1_080_000 / 72 == 15_000
    assert tflops("gb300", "fp4") == 0.75 * 1_440_000 / 72
    assert "sparse" in acc.sources["fp4"]
    assert acc.device_memory_bytes == 284208 * MIB == 298_013_687_808
    assert acc.interconnect_bytes_per_s == 1.8e12
    assert acc.interconnect_bytes_per_s == pytest.approx(130e12 / 72, rel=0.01)
    assert raw_entry("gb300")["tdp_w"] == 1400


def test_gb300_is_not_hgx_b300():
    """GB300 at up to 1,400 W: 15 PF FP4 dense per GPU vs HGX B300's 13.125 PF (1,100 W), and
    2.5 / 5 PF BF16 / FP8 vs 2.25 / 4.5; same 288 GB class memory."""
    assert tflops("b300", "fp4") == 13_125
    assert tflops("gb300", "fp4") > tflops("b300", "fp4")
    assert tflops("gb300", "bf16") / tflops("b300", "bf16") == pytest.approx(2500 / 2250)
    assert tflops("gb300", "fp8") == tflops("gb200", "fp8")  # 5 PF dense on both at NVL72 power
    assert tflops("gb300", "fp4") == 1.5 * tflops("gb200", "fp4")
    assert raw_entry("gb300")["tdp_w"] > raw_entry("b300")["tdp_w"]
    # INT8 was cut on Blackwell Ultra: far below GB200's 5,000
    assert tflops("gb300", "int8") < tflops("gb200", "int8") / 20
