"""The accelerator catalog: required devices, datasheet figures, dense-not-sparse, overrides."""

import pytest

from napkin.catalog import accelerators, load_accelerator
from napkin.errors import NapkinError
from napkin.specs.hardware import override

REQUIRED = (
    "a100-80gb-sxm", "h100-sxm", "h100-pcie", "h800", "h200", "b200", "mi300x", "l40s", "l4",
    "rtx-4090", "rtx-4080", "rtx-pro-6000",
)


def tflops(acc_id, fmt):
    return load_accelerator(acc_id).peak_flops_per_s(fmt) / 1e12


def test_required_ids_present():
    assert set(REQUIRED) <= set(accelerators())


@pytest.mark.parametrize("acc_id", REQUIRED)
def test_required_fields_and_sources(acc_id):
    acc = load_accelerator(acc_id)
    assert acc.id == acc_id
    assert acc.memory_bytes > 0
    assert acc.mem_bytes_per_s > 0
    assert acc.peak_flops_per_s("bf16") > 0
    assert acc.peak_flops_per_s("fp16") > 0
    for key in ("memory", "bandwidth", "compute"):
        assert acc.sources.get(key, "").strip(), f"{acc_id}: no source for {key}"


# ---------------------------------------------------------------------------------------------
# Figures used in the chapter and datasheets
# ---------------------------------------------------------------------------------------------


def test_h100_sxm_bf16():
    # Hopper whitepaper: 989.4 dense BF16 TFLOP/s = 132 SMs × 4096 FLOP/clk/SM × 1.83 GHz.
    assert tflops("h100-sxm", "bf16") == pytest.approx(989.4)
    assert round(132 * 4096 * 1.83e9 / 1e12, 1) == 989.4


def test_a100_bf16():
    # A100 datasheet: BF16 Tensor Core 312 | 624* TFLOPS (*sparsity);
    # 108 SMs × 2048 FLOP/clk/SM × 1.41 GHz = 311.9.
    assert tflops("a100-80gb-sxm", "bf16") == pytest.approx(312)
    assert tflops("a100-80gb-sxm", "fp16") == pytest.approx(312)
    assert round(108 * 2048 * 1.41e9 / 1e12) == 312


def test_rtx_pro_6000_memory_and_bandwidth():
    acc = load_accelerator("rtx-pro-6000")
    # RTX PRO 6000 Blackwell Workstation Edition datasheet: 96 GB GDDR7, 512-bit, 28 Gbps.
    assert acc.memory_bytes == 96e9
    assert acc.mem_bytes_per_s == pytest.approx(28e9 * 512 / 8)  # 1792 GB/s
    assert acc.mem_bytes_per_s == pytest.approx(1792e9)


def test_rtx_4080_chapter_figures():
    acc = load_accelerator("rtx-4080")
    # Ada whitepaper RTX 4080: BF16 (FP32 accumulate) 97.5 dense TFLOP/s;
    # 76 SMs × 512 FLOP/clk/SM × 2.505 GHz = 97.5.
    assert tflops("rtx-4080", "bf16") == pytest.approx(97.5)
    assert round(76 * 512 * 2.505e9 / 1e12, 1) == 97.5
    # 22.4 Gbps × 256-bit / 8 = 716.8 GB/s; the textbook (question bank task-2) rounds to 717.
    assert acc.mem_bytes_per_s == pytest.approx(22.4e9 * 256 / 8)
    assert acc.mem_bytes_per_s == pytest.approx(716.8e9)
    assert round(acc.mem_bytes_per_s / 1e9) == 717
    assert acc.memory_bytes == 16e9


def test_rtx_4090_bandwidth():
    # Ada whitepaper Appendix A: 21 Gbps × 384-bit = 1,008 GB/s; 24 GB.
    acc = load_accelerator("rtx-4090")
    assert acc.mem_bytes_per_s == pytest.approx(21e9 * 384 / 8)
    assert acc.memory_bytes == 24e9


@pytest.mark.parametrize(
    ("acc_id", "mem_gb", "bw_gbs"),
    [
        ("a100-80gb-sxm", 80, 2039),  # A100 datasheet: 80GB HBM2e, 2,039 GB/s
        ("h100-sxm", 80, 3350),  # H100 datasheet SXM: 80GB, 3.35 TB/s
        ("h100-pcie", 80, 2000),  # H100 datasheet PCIe: 80GB, 2 TB/s
        ("h200", 141, 4800),  # H200 datasheet: 141 GB HBM3e, 4.8 TB/s
        ("b200", 180, 7700),  # Blackwell datasheet HGX B200 per GPU: 180 GB, 7.7 TB/s
        # Blackwell Ultra datasheet, HGX B300: 2.3 TB over 8 GPUs (288 GB), 62 TB/s / 8
        ("b300", 288, 7750),
        ("mi300x", 192, 5300),  # AMD MI300X data sheet: 192 GB HBM3, 5.3 TB/s
        ("l40s", 48, 864),  # L40S datasheet: 48 GB GDDR6, 864 GB/s
        ("l4", 24, 300),  # L4 datasheet: 24 GB GDDR6, 300 GB/s
    ],
)
def test_datasheet_memory_and_bandwidth_in_base_units(acc_id, mem_gb, bw_gbs):
    acc = load_accelerator(acc_id)
    assert acc.memory_bytes == mem_gb * 1e9  # GB = 1e9 bytes
    assert acc.mem_bytes_per_s == pytest.approx(bw_gbs * 1e9)


def test_base_units():
    acc = load_accelerator("h100-sxm")
    assert acc.memory_bytes == 80 * 10**9
    assert acc.mem_bytes_per_s == pytest.approx(3.35e12)
    assert acc.peak_flops_per_s("bf16") == pytest.approx(989.4e12)


# ---------------------------------------------------------------------------------------------
# Dense, never the 2:4-sparsity headline
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("acc_id", "fmt", "sparse_headline", "tol"),
    [
        # H100 datasheet SXM: BF16 1,979*, FP8 3,958*, INT8 3,958* (*with sparsity);
        # whitepaper dense FP8 1978.9 = 3957.8 / 2.
        ("h100-sxm", "bf16", 1979, 0.5),
        ("h100-sxm", "fp8", 3957.8, 0.05),
        ("h100-sxm", "int8", 3958, 0.5),
        # H100 datasheet PCIe: BF16 1,513*, FP8 3,026*; whitepaper dense BF16 756.
        ("h100-pcie", "bf16", 1513, 0.5),
        ("h100-pcie", "fp8", 3026, 0.5),
        # H200 datasheet: BF16 1,979*, FP8 3,958* (same GH100 SXM5 compute as H100 SXM).
        ("h200", "bf16", 1979, 0.5),
        ("h200", "fp8", 3958, 0.5),
        # A100 datasheet: BF16 624*, INT8 1,248*.
        ("a100-80gb-sxm", "bf16", 624, 0),
        ("a100-80gb-sxm", "int8", 1248, 0),
        # Blackwell datasheet, HGX B200 per GPU: FP16/BF16 4.5 PF*, FP8 9 PF*, FP4 18 PF*.
        ("b200", "bf16", 4500, 0),
        ("b200", "fp8", 9000, 0),
        ("b200", "fp4", 18000, 0),
        # Blackwell Ultra datasheet, HGX B300 over 8 GPUs: BF16 36 PF*, FP8 72 PF* (= B200's);
        # FP4 18 PF* per GPU (glennklockwood.com B300 table: 13,125 dense, not half of it).
        ("b300", "bf16", 36000 / 8, 0),
        ("b300", "fp8", 72000 / 8, 0),
        # L40S datasheet: FP8 733 | 1,466*.
        ("l40s", "fp8", 1466, 0),
        # L4 datasheet: BF16 242*, FP8 485*.
        ("l4", "bf16", 242, 0),
        ("l4", "fp8", 485, 0),
        # AMD MI300X data sheet: "with structured sparsity" BF16 2,614.9, FP8 5,229.8.
        ("mi300x", "bf16", 2614.9, 0.06),
        ("mi300x", "fp8", 5229.8, 0),
    ],
)
def test_dense_is_half_the_sparse_headline(acc_id, fmt, sparse_headline, tol):
    assert tflops(acc_id, fmt) == pytest.approx(sparse_headline / 2, abs=tol + 1e-9)


def test_named_dense_values():
    assert tflops("h100-sxm", "fp8") == pytest.approx(1978.9)  # Hopper whitepaper dense FP8
    assert tflops("l40s", "fp8") == pytest.approx(733)  # L40S datasheet dense, not 1,466*
    assert tflops("l40s", "bf16") == pytest.approx(362.05)  # L40S datasheet dense
    assert tflops("h100-pcie", "bf16") == pytest.approx(756)  # Hopper whitepaper (1,513*/2)
    assert tflops("mi300x", "bf16") == pytest.approx(1307.4)  # AMD MI300X data sheet, dense
    assert tflops("rtx-pro-6000", "bf16") == pytest.approx(503.8)  # RTX Blackwell whitepaper
    # HGX B300 dense FP4 per GPU: glennklockwood.com B300 table, 13,125 dense / 18,000 sparse
    # (105 PF over 8 GPUs): Blackwell Ultra raised dense FP4, not the sparse headline (B200:
    # 9,000 / 18,000).
    assert tflops("b300", "fp4") == pytest.approx(105_000 / 8)


def test_geforce_fp32_accumulate_rates():
    # NVIDIA's "1,321 AI TOPS" (RTX 4090) and "780 AI TOPS" (RTX 4080) are FP8 with FP16
    # accumulate and sparsity; dense FP32-accumulate FP8 is a quarter of that
    # (Ada whitepaper: 4090 FP8 330.3 dense, 4080 FP8 194.9 dense).
    assert tflops("rtx-4090", "fp8") == pytest.approx(1321.2 / 4)
    assert tflops("rtx-4080", "fp8") == pytest.approx(779.8 / 4, abs=0.06)
    # BF16 always accumulates in FP32 on GeForce Ada: half of FP8 (FP32 acc).
    assert tflops("rtx-4090", "bf16") == pytest.approx(165.2)


def test_h800_same_compute_as_h100_sxm():
    # H800 is the export variant of H100 SXM: same tensor rates, NVLink cut to 400 GB/s.
    for fmt in ("bf16", "fp8"):
        assert tflops("h800", fmt) == tflops("h100-sxm", fmt)
    assert load_accelerator("h800").interconnect_bytes_per_s == 400e9


# ---------------------------------------------------------------------------------------------
# Lookup and overrides
# ---------------------------------------------------------------------------------------------


def test_no_fp8_on_a100():
    with pytest.raises(NapkinError) as e:
        load_accelerator("a100-80gb-sxm").peak_flops_per_s("fp8")
    msg = str(e.value)
    assert "fp8" in msg
    assert "a100-80gb-sxm" in msg


def test_unknown_accelerator():
    with pytest.raises(NapkinError, match="unknown accelerator"):
        load_accelerator("h100-nonexistent")


def test_lookup_case_insensitive():
    assert load_accelerator("H100-SXM") is load_accelerator("h100-sxm")


def test_one_accelerator_parsed_alone_is_the_catalogs():
    """load_accelerator parses only its entry of accelerators.yaml: the same device, for every
    id, as the whole file parsed at once."""
    catalog = accelerators()
    assert [load_accelerator(ref) for ref in catalog] == list(catalog.values())


def test_override_memory():
    base = load_accelerator("rtx-4080")
    acc = override(base, mem_gb=32)  # question bank task-1: "RTX 4080 with 32 GB"
    assert acc.memory_bytes == 32e9
    assert acc.id == "rtx-4080*"
    assert acc.mem_bytes_per_s == base.mem_bytes_per_s
    assert acc.dense_flops_per_s == base.dense_flops_per_s
    assert "override" in acc.sources["memory"]
    assert base.memory_bytes == 16e9  # the catalog entry is untouched


def test_override_bandwidth_and_tflops():
    acc = override(load_accelerator("h100-sxm"), bw_gbs=1000, tflops=500)
    assert acc.mem_bytes_per_s == 1e12
    for fmt in ("bf16", "fp16", "fp8", "int8"):
        assert acc.peak_flops_per_s(fmt) == 500e12
    assert acc.id == "h100-sxm*"


def test_override_nothing_returns_base():
    base = load_accelerator("l4")
    assert override(base) is base


def test_custom_device_from_all_three():
    acc = override(None, mem_gb=24, bw_gbs=500, tflops=100)
    assert acc.id == "custom"
    assert acc.memory_bytes == 24e9
    assert acc.mem_bytes_per_s == 500e9
    assert acc.peak_flops_per_s("bf16") == 100e12
    assert acc.peak_flops_per_s("fp8") == 100e12


@pytest.mark.parametrize(
    "kwargs",
    [{"mem_gb": 24}, {"mem_gb": 24, "bw_gbs": 500}, {"tflops": 100}, {}],
    ids=["mem", "mem+bw", "tflops", "none"],
)
def test_custom_device_needs_all_three(kwargs):
    with pytest.raises(NapkinError, match="gpu-mem-gb"):
        override(None, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"mem_gb": 0}, "gpu-mem-gb"),
        ({"mem_gb": -1}, "gpu-mem-gb"),
        ({"bw_gbs": 0}, "gpu-bw-gbs"),
        ({"tflops": -5}, "gpu-tflops"),
    ],
)
def test_non_positive_override(kwargs, field):
    with pytest.raises(NapkinError, match=field):
        override(load_accelerator("rtx-4080"), **kwargs)
