"""Number formats of weights and of the KV cache.

A weight format stores ``bits_per_weight`` bits per parameter *including* its scales (group-wise
quantization keeps one 16-bit scale per group: ``int4-g128`` = 4 + 16/128 = 4.125 bits), and runs
its matmuls at the tensor-core rate of ``compute`` (W4A16 formats unpack to 16 bits in registers,
so their prefill runs at the BF16 rate; W8A8 formats run at the FP8 or INT8 rate).
The compute precision is explicit per format, never inferred from the storage bits: ``mxfp4``
(weight-only, W4A16) runs at the BF16 rate, ``mxfp4-w4a8`` (MXFP8 activations) at the FP8 rate,
while ``nvfp4`` and ``mxfp4-w4a4`` (FP4 weights and activations, W4A4) run at the FP4
tensor-core rate, which only Blackwell parts have (``Accelerator.peak_flops_per_s("fp4")``
raises on others).
A format applies to every parameter (napkin convention of the question bank's task 3:
70.6 B × 4.125 / 8 ≈ 36.4 GB) unless the precision names the parts a real checkpoint keeps in
BF16 (:data:`UNQUANTIZED_ROLES`, ``Precision.unquantized``): gpt-oss's MXFP4 checkpoint keeps
attention, router, embedding and head in BF16; NVIDIA's NVFP4 ones keep at least the head.
"""

from dataclasses import dataclass

from napkin.errors import NapkinError

SIXTEEN_BIT = ("bf16", "fp16", "fp32", "tf32")
"""Compute formats of 16 bits or more: matmuls in them run at the BF16/FP16 (or wider) rate."""

UNQUANTIZED_ROLES = ("attention", "router", "shared-experts", "dense-mlp", "lm-head",
                     "embedding")
"""Parts of a model a quantized checkpoint may keep in BF16: the attention projections, the MoE
router, shared experts, dense layers' MLP, the LM head and the embedding table (routed experts
are what such a checkpoint quantizes; norms follow the weight format, a few kB)."""


def parse_unquantized(value: str | tuple[str, ...] | frozenset[str] | None,
                      field: str = "unquantized") -> frozenset[str]:
    """A set of :data:`UNQUANTIZED_ROLES` from a comma-separated string or a sequence."""
    if value is None:
        return frozenset()
    names = [v.strip().lower() for v in (value.split(",") if isinstance(value, str) else value)]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in UNQUANTIZED_ROLES]
    if unknown:
        raise NapkinError(f"{field}: {', '.join(unknown)} not a part kept in BF16; allowed: a "
                          f"comma-separated subset of {', '.join(UNQUANTIZED_ROLES)}")
    return frozenset(names)


@dataclass(frozen=True)
class WeightFormat:
    """How weights are stored and at which tensor-core rate their matmuls run."""

    name: str
    bits_per_weight: float
    compute: str
    description: str

    @property
    def bytes_per_weight(self) -> float:
        """Storage bytes per parameter, scales included."""
        return self.bits_per_weight / 8

    @property
    def weight_only(self) -> bool:
        """Stored below 16 bits but multiplied at a 16-bit rate (W4A16: INT4, MXFP4, GGUF): the
        kernel unpacks every weight tile to BF16 before the tensor cores see it."""
        return self.compute in SIXTEEN_BIT and self.bits_per_weight < 16


@dataclass(frozen=True)
class KVFormat:
    """How one element of the KV cache is stored."""

    name: str
    bytes_per_element: float
    description: str


def _group_bits(bits: int, group: int, scale_bits: int = 16) -> float:
    """Bits per weight of ``bits``-bit integers with one ``scale_bits`` scale per ``group``."""
    return bits + scale_bits / group


WEIGHT_FORMATS: dict[str, WeightFormat] = {
    f.name: f
    for f in (
        WeightFormat("fp32", 32, "fp32", "IEEE single precision"),
        WeightFormat("bf16", 16, "bf16", "bfloat16"),
        WeightFormat("fp16", 16, "fp16", "IEEE half precision"),
        WeightFormat("fp8", 8, "fp8", "FP8 E4M3, W8A8 (matmuls at the FP8 rate)"),
        WeightFormat("int8", 8, "int8", "INT8, W8A8 (matmuls at the INT8 rate)"),
        WeightFormat("int4", 4, "bf16", "INT4 without scales, W4A16"),
        WeightFormat(
            "int4-g128", _group_bits(4, 128), "bf16", "INT4 + one FP16 scale per 128 (GPTQ/AWQ)"
        ),
        WeightFormat(
            "int4-g32", _group_bits(4, 32), "bf16", "INT4 + one FP16 scale per 32 weights"
        ),
        WeightFormat(
            "mxfp4", _group_bits(4, 32, scale_bits=8), "bf16",
            "OCP MXFP4 weight-only (W4A16): FP4 + one 8-bit shared exponent per 32 weights, "
            "matmuls at the BF16 rate",
        ),
        WeightFormat(
            "mxfp4-w4a8", _group_bits(4, 32, scale_bits=8), "fp8",
            "OCP MXFP4 weights with MXFP8 activations (W4A8), matmuls at the FP8 rate: "
            "TensorRT-LLM's and vLLM's MXFP4 MoE kernels on Blackwell",
        ),
        WeightFormat(
            "mxfp4-w4a4", _group_bits(4, 32, scale_bits=8), "fp4",
            "OCP MXFP4 W4A4: FP4 E2M1 + one E8M0 scale per 32, weights and activations, "
            "matmuls at the FP4 rate",
        ),
        WeightFormat(
            "nvfp4", _group_bits(4, 16, scale_bits=8), "fp4",
            "NVIDIA NVFP4 W4A4: FP4 E2M1 + one FP8 E4M3 scale per 16 (+ a per-tensor FP32 "
            "scale, negligible), matmuls at the FP4 rate",
        ),
        WeightFormat(
            "q4_k_m", 4.84, "bf16",
            "GGUF Q4_K_M, mixed Q4_K/Q6_K; 4.84 bits/weight as llama.cpp's quantize README "
            "lists for Llama 2 7B (4.80-4.84 across sizes)",
        ),
    )
}

KV_FORMATS: dict[str, KVFormat] = {
    f.name: f
    for f in (
        KVFormat("fp32", 4, "IEEE single precision"),
        KVFormat("bf16", 2, "bfloat16"),
        KVFormat("fp16", 2, "IEEE half precision"),
        KVFormat("fp8", 1, "FP8 E4M3 (per-tensor scale, negligible)"),
        KVFormat("int8", 1, "INT8 (per-tensor scale, negligible)"),
    )
}


def weight_format(name: str) -> WeightFormat:
    """The weight format called ``name`` (case-insensitive)."""
    try:
        return WEIGHT_FORMATS[name.lower()]
    except KeyError:
        allowed = ", ".join(WEIGHT_FORMATS)
        raise NapkinError(f"weights: unknown format {name!r}; allowed: {allowed}") from None


def kv_format(name: str) -> KVFormat:
    """The KV-cache format called ``name`` (case-insensitive)."""
    try:
        return KV_FORMATS[name.lower()]
    except KeyError:
        allowed = ", ".join(KV_FORMATS)
        raise NapkinError(f"kv-dtype: unknown format {name!r}; allowed: {allowed}") from None
