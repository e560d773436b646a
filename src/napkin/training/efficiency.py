"""How fast one rank computes an update: its work split by where it runs, and the efficiency
model that turns the work into seconds.

A rank's work (:class:`RankWork`) of one update, all over its share of the model (TP·PP):

- ``matmul_flops``: matmuls at the 16-bit rate (every linear, the LM head, the router; with an
  FP8 recipe only the head and the router);
- ``low_matmul_flops``: the block linears an FP8 recipe runs at the FP8 rate
  (:data:`~napkin.training.flops.BLOCK_LINEARS`; 0 in BF16);
- ``attention_flops``: QKᵀ and AV, forward, backward and recompute (FlashAttention kernels);
- ``activation_bytes``: the activations the layers write, per pass (Korthikanti et al.'s
  per-layer bytes without recompute, ``s·b·h·(18 + 4·ffn/h)`` on the rank), times the passes
  over them (forward 1, backward 2, full recompute 1 more): a proxy for the elementwise traffic
  (norms, residual adds, SwiGLU, RoPE, casts) that runs at HBM bandwidth, not at the matmul rate.

Seconds of compute: with a plain efficiency ``mfu`` (the user's ``--mfu``) every matmul runs at
``mfu`` of its format's dense peak and the elementwise traffic is inside that share::

    compute = matmul / (peak₁₆·mfu) + low_matmul / (peak₈·mfu) + attention / (peak₁₆·mfu)

With a fitted :class:`TrainingProfile` each part has its own coefficient (seconds per second
of ideal time; 1/efficiency for the matmuls)::

    compute = c_matmul·matmul/peak₁₆ + c_fp8·low_matmul/peak₈ + c_attn·attention/peak₁₆
              + c_elem·activation_bytes/HBM bandwidth

``c_fp8`` is the tensorwise-scaled recipe's (``fp8``) or the rowwise one's (``fp8-rowwise``);
``c_elem`` the eager one's or, under ``torch.compile`` (which fuses the elementwise kernels),
the compiled one's.
"""

from dataclasses import dataclass

from napkin.errors import require
from napkin.specs.hardware import Accelerator
from napkin.timing import check_efficiency

PRECISIONS = ("bf16", "fp8", "fp8-rowwise")
"""Training matmul recipes: BF16 everywhere; FP8 block linears with tensorwise scales
(torchao's default, delayed or dynamic); FP8 with rowwise scales (more accurate, slower
kernels)."""
TERMS = ("matmul", "fp8", "fp8_rowwise", "attention", "elementwise", "elementwise_compiled")
"""A profile's coefficients, in order."""


@dataclass(frozen=True)
class RankWork:
    """One rank's work of an update, by where it runs (module docstring)."""

    matmul_flops: float
    low_matmul_flops: float
    attention_flops: float
    activation_bytes: float


@dataclass(frozen=True)
class TrainingProfile:
    """Fitted coefficients of the compute time (module docstring), where they come from and how
    far off they were on the rows held out."""

    name: str
    coefficients: tuple[float, ...]
    sources: tuple[str, ...] = ()
    band: tuple[float, float] = (0.0, 0.0)
    """10th and 90th percentile of held-out ``predicted / measured − 1`` of throughput."""
    gpus: tuple[str, ...] = ()
    """GPUs the fit saw (a query on another warns)."""
    precisions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        require(len(self.coefficients) == len(TERMS),
                f"coefficients: need {len(TERMS)} ({', '.join(TERMS)})")
        require(all(0 <= c < float("inf") for c in self.coefficients),
                "coefficients: must be finite and >= 0")

    def coefficient(self, term: str) -> float:
        return self.coefficients[TERMS.index(term)]


def basis(work: RankWork, acc: Accelerator, precision: str = "bf16",
          compiled: bool = False) -> tuple[float, ...]:
    """The ideal seconds of each :data:`TERMS` entry for ``work`` on ``acc`` (0 for the terms
    the recipe does not use)."""
    require(precision in PRECISIONS, f"precision: must be one of {', '.join(PRECISIONS)}, "
            f"got {precision!r}")
    p16 = acc.peak_flops_per_s("bf16")
    low = work.low_matmul_flops / acc.peak_flops_per_s("fp8") if work.low_matmul_flops else 0.0
    elem = work.activation_bytes / acc.mem_bytes_per_s
    return (work.matmul_flops / p16,
            low if precision == "fp8" else 0.0,
            low if precision == "fp8-rowwise" else 0.0,
            work.attention_flops / p16,
            0.0 if compiled else elem,
            elem if compiled else 0.0)


def compute_s(work: RankWork, acc: Accelerator, *, mfu: float | None = None,
              profile: TrainingProfile | None = None, precision: str = "bf16",
              compiled: bool = False) -> float:
    """Seconds one rank computes ``work``: at a plain ``mfu`` or by a fitted ``profile``
    (exactly one of them; module docstring)."""
    require((mfu is None) != (profile is None), "compute: give an mfu or a profile")
    x = basis(work, acc, precision, compiled)
    if profile is not None:
        return sum(c * v for c, v in zip(profile.coefficients, x, strict=True))
    check_efficiency(mfu, "mfu")
    return (x[0] + x[1] + x[2] + x[3]) / mfu
