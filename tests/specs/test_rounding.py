"""BF16/FP16/FP32 rounding (question bank q20) against independent references: numpy's own
float16/float32 casts and a BF16 built from float32 bits (round-to-nearest-even on the upper 16
bits, the way hardware converts)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from napkin.errors import NapkinError
from napkin.specs.rounding import FORMATS, round_to, ulp

BF16, FP16, FP32 = FORMATS["bf16"], FORMATS["fp16"], FORMATS["fp32"]


def bf16_from_fp32_bits(x: float) -> float:
    """Reference BF16: x as float32, then the upper 16 bits rounded to nearest even."""
    bits = int(np.array([x], dtype=np.float32).view(np.uint32)[0])
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])


def test_q20_one_plus_a_thousandth():
    # q20: "у BF16 всего 7 бит мантиссы: 1 + 0.001 = 1"; ulp at 1 is 2^-7 = 0.0078125, half of
    # it 0.0039 > 0.001, so 1.001 rounds back to 1
    assert BF16.stored_significand_bits == 7
    assert ulp(1.0, BF16) == 2.0**-7
    assert round_to(1.001, BF16) == 1.0
    # FP16: ulp 2^-10 = 0.0009765625; 1.001 is 1.024 ulps above 1 → 1 + 2^-10
    assert round_to(1.001, FP16) == 1.0 + 2.0**-10
    assert round_to(1.001, FP32) == float(np.float32(1.001))


def test_range_and_extremes():
    assert round_to(65504.0, FP16) == 65504.0  # FP16's largest finite
    assert round_to(65520.0, FP16) == math.inf  # the tie above it goes to even: inf
    assert round_to(1e38, BF16) == pytest.approx(1e38, rel=2**-8)  # FP32's range
    assert round_to(1e39, BF16) == math.inf
    assert round_to(2.0**-133, BF16) == 2.0**-133  # subnormal: 2^-126 · 2^-7
    assert round_to(2.0**-135, BF16) == 0.0  # a quarter of the smallest subnormal
    with pytest.raises(NapkinError, match="value"):
        round_to(math.nan, BF16)


@given(st.floats(allow_nan=False, allow_infinity=False, width=32))
def test_matches_hardware_style_references(x):
    assert round_to(x, FP32) == x
    assert round_to(x, BF16) == bf16_from_fp32_bits(x)
    with np.errstate(over="ignore"):
        assert round_to(x, FP16) == float(np.float16(x))


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300))
def test_fp16_fp32_from_doubles(x):
    with np.errstate(over="ignore"):
        assert round_to(x, FP16) == float(np.float16(x))
        assert round_to(x, FP32) == float(np.float32(x))
