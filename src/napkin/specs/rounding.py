"""Rounding a real number to a binary floating-point format: BF16, FP16, FP32.

A format with ``p`` significand bits (the implicit leading 1 included), a smallest normal
exponent ``e_min`` and a largest finite value holds, near ``x`` with ``2^E ≤ |x| < 2^(E+1)``,
the multiples of ``ulp = 2^(max(E, e_min) − (p − 1))``; round-to-nearest-even picks the nearest
multiple (ties to the even one), and a result past the largest finite value is ±inf. BF16 keeps
FP32's 8 exponent bits (range) and 8 significand bits (7 stored), so its ulp at 1 is
2^-7 = 0.0078: 1 + 0.001 rounds back to 1 (question bank q20). FP16 has 11 (10 stored), FP32 24.
Subnormals (below 2^e_min) keep the ulp of 2^e_min (gradual underflow).
"""

import math
from dataclasses import dataclass

from napkin.errors import require


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: significand bits with the implicit 1, smallest normal
    exponent, largest finite value."""

    name: str
    significand_bits: int
    min_exponent: int
    max_finite: float

    @property
    def stored_significand_bits(self) -> int:
        """The mantissa bits the format stores (the leading 1 is implicit)."""
        return self.significand_bits - 1

    @property
    def epsilon(self) -> float:
        """Machine epsilon: the ulp at 1, ``2^-(p − 1)``."""
        return math.ldexp(1.0, -(self.significand_bits - 1))


FORMATS: dict[str, FloatFormat] = {
    "bf16": FloatFormat("bf16", 8, -126, math.ldexp(2.0 - 2.0**-7, 127)),
    "fp16": FloatFormat("fp16", 11, -14, 65504.0),
    "fp32": FloatFormat("fp32", 24, -126, math.ldexp(2.0 - 2.0**-23, 127)),
}
"""The formats :func:`round_to` knows (IEEE 754 binary16/binary32; bfloat16)."""


def float_format(name: str) -> FloatFormat:
    require(name in FORMATS, f"format: must be one of {', '.join(FORMATS)}, got {name!r}")
    return FORMATS[name]


def ulp(x: float, fmt: FloatFormat) -> float:
    """Spacing of ``fmt``'s numbers at ``x``: ``2^(max(E, e_min) − (p − 1))``, E = ⌊log2|x|⌋
    (at 0 the subnormal spacing)."""
    exponent = math.frexp(x)[1] - 1 if x else fmt.min_exponent
    return math.ldexp(1.0, max(exponent, fmt.min_exponent) - (fmt.significand_bits - 1))


def round_to(x: float, fmt: FloatFormat) -> float:
    """``x`` rounded to the nearest number of ``fmt`` (ties to even), ±inf past its range."""
    require(math.isfinite(x), f"value: must be a finite number, got {x!r}")
    if x == 0.0:
        return x
    q = ulp(x, fmt)
    # x / q is exact (q is a power of two) and below 2^p; round() is round-half-even
    r = round(x / q) * q
    return math.copysign(math.inf, r) if abs(r) > fmt.max_finite else r
