"""Weight and KV-cache number formats."""

import pytest

from napkin.catalog import load_model
from napkin.errors import NapkinError
from napkin.specs.dtypes import KV_FORMATS, WEIGHT_FORMATS, kv_format, weight_format


@pytest.mark.parametrize(
    ("name", "bits"),
    [
        ("fp32", 32),
        ("bf16", 16),
        ("fp16", 16),
        ("fp8", 8),
        ("int8", 8),
        ("int4", 4),
        ("int4-g128", 4 + 16 / 128),  # question bank q40: 4.125 bits (one FP16 scale per 128)
        ("int4-g32", 4 + 16 / 32),  # 4.5 bits
        ("mxfp4", 4 + 8 / 32),  # OCP MX spec: E8M0 shared scale per block of 32 → 4.25 bits
    ],
)
def test_bits_per_weight(name, bits):
    fmt = weight_format(name)
    assert fmt.bits_per_weight == bits
    assert fmt.bytes_per_weight == bits / 8


def test_group_quantization_literals():
    assert weight_format("int4-g128").bits_per_weight == 4.125  # question bank q40
    assert weight_format("int4-g32").bits_per_weight == 4.5
    assert weight_format("mxfp4").bits_per_weight == 4.25


def test_question_bank_task_3_weight_bytes():
    # Question bank task-3: Llama 3 70B INT4 g128 → 36.4 GB of weights
    # (70,553,706,496 params × 4.125 / 8 = 36.38e9 bytes).
    params = load_model("llama-3-70b").params
    assert round(params * weight_format("int4-g128").bytes_per_weight / 1e9, 1) == 36.4


def test_bf16_two_bytes():
    assert weight_format("bf16").bytes_per_weight == 2
    assert kv_format("bf16").bytes_per_element == 2


@pytest.mark.parametrize(
    ("name", "nbytes"), [("fp32", 4), ("bf16", 2), ("fp16", 2), ("fp8", 1), ("int8", 1)]
)
def test_kv_bytes(name, nbytes):
    assert kv_format(name).bytes_per_element == nbytes


@pytest.mark.parametrize(
    ("name", "compute"),
    [
        ("int4", "bf16"),  # W4A16: weights unpacked to 16 bits, matmul at the BF16 rate
        ("int4-g128", "bf16"),
        ("int4-g32", "bf16"),
        ("mxfp4", "bf16"),
        ("q4_k_m", "bf16"),
        ("fp8", "fp8"),  # W8A8 at the FP8 rate
        ("int8", "int8"),  # W8A8 at the INT8 rate
        ("bf16", "bf16"),
        ("fp16", "fp16"),
    ],
)
def test_compute_format(name, compute):
    assert weight_format(name).compute == compute


def test_unknown_weight_format():
    with pytest.raises(NapkinError) as e:
        weight_format("int3")
    msg = str(e.value)
    assert msg.startswith("weights:")
    assert "'int3'" in msg
    for allowed in ("bf16", "fp8", "int4-g128", "mxfp4"):
        assert allowed in msg


def test_unknown_kv_format():
    with pytest.raises(NapkinError) as e:
        kv_format("int4")
    msg = str(e.value)
    assert msg.startswith("kv-dtype:")
    assert "'int4'" in msg
    for allowed in ("bf16", "fp16", "fp8", "int8"):
        assert allowed in msg


def test_case_insensitive():
    assert weight_format("INT4-G128") is WEIGHT_FORMATS["int4-g128"]
    assert weight_format("BF16") is WEIGHT_FORMATS["bf16"]
    assert kv_format("FP8") is KV_FORMATS["fp8"]
