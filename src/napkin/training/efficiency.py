"""How fast one rank computes an update: its work split by where it runs, and the efficiency
model that turns the work into seconds.

A rank's work (:class:`RankWork`) of one update, all over its share of the model (TP·PP) and of
the sequence (CP):

- ``matmul_flops``: matmuls at the 16-bit rate (every linear, the LM head, the router; with an
  FP8 recipe only the head and the router);
- ``low_matmul_flops``: the block linears an FP8 recipe runs at the FP8 rate
  (:data:`~napkin.training.flops.BLOCK_LINEARS`; 0 in BF16);
- ``attention_flops``: QKᵀ and AV, forward, backward and recompute (FlashAttention kernels);
- ``activation_bytes``: the activations the layers write, per pass (Korthikanti et al.'s
  per-layer bytes without recompute, ``s·b·h·(18 + 4·ffn/h)`` on the rank), times the passes
  over them (forward 1, backward 2, full recompute 1 more): a proxy for the elementwise traffic
  (norms, residual adds, SwiGLU, RoPE, FP8 casts) that runs at HBM bandwidth, not at the matmul
  rate.

Its ideal seconds per term (:func:`basis`): ``matmul`` = matmul FLOPs / BF16 peak, ``fp8``,
``fp8_rowwise`` or ``mxfp8`` = low-precision FLOPs / FP8 peak (tensorwise, rowwise or
per-32-element scales), ``nvfp4`` = low-precision FLOPs / FP4 peak, ``gemm_memory`` = what
the block-linear GEMMs would take beyond their FLOPs at the HBM bandwidth,
``Σ max(0, (MK + KN + MN)·b/BW − 2MNK/peak)`` (skinny GEMMs — tensor-parallel slices of a
small model — are bound by memory, not by the matmul rate), ``attention``
= attention FLOPs / BF16 peak, ``elementwise`` or ``elementwise_compiled`` = activation bytes /
HBM bandwidth (eager, or fused by ``torch.compile``).

Seconds of compute: with a plain efficiency ``mfu`` (the user's ``--mfu``) every matmul runs at
``mfu`` of its format's dense peak and the elementwise traffic is inside that share::

    compute = (matmul + fp8 + fp8_rowwise + attention) / mfu

With a fitted :class:`TrainingProfile` each term has its own coefficient (seconds per second
of ideal time; 1/efficiency for the matmuls), the matmul and attention ones per GPU
architecture (kernels are tuned per architecture: FlashAttention-2 reaches far more of an
A100's peak than of an H100's)::

    compute = Σ_term c_term · ideal_term
"""

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from napkin.accounting.forward import gemm_flops, gemm_operand_bytes
from napkin.catalog import CATALOG_DIR
from napkin.errors import require
from napkin.specs.hardware import Accelerator
from napkin.timing.efficiency import check_efficiency

PRECISIONS = ("bf16", "fp8", "fp8-rowwise", "mxfp8", "nvfp4")
"""Training matmul recipes: BF16 everywhere; FP8 block linears with tensorwise scales
(torchao's default, delayed or dynamic); FP8 with rowwise scales (more accurate, slower
kernels); on Blackwell MXFP8 (FP8 with a scale per 32 elements, at the FP8 rate) and NVFP4
(FP4 with a scale per 16, at the FP4 rate) block linears. The head, the router and attention
stay BF16 in every recipe, and the weights keep their high-precision master."""
TERMS = ("matmul", "fp8", "fp8_rowwise", "mxfp8", "nvfp4", "attention", "elementwise",
         "elementwise_compiled", "gemm_memory")
"""The ideal-seconds terms of :func:`basis`, in order."""
MATMUL_TERMS = ("matmul", "fp8", "fp8_rowwise", "mxfp8", "nvfp4", "attention")
"""The terms a plain ``mfu`` divides (the matmul FLOPs at their peaks)."""
RATE_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5}
"""Bytes per GEMM operand element at each dense rate."""
PER_ARCHITECTURE = ("matmul", "attention")
"""Terms a profile fits per GPU architecture (``matmul.hopper``); the others are shared."""


@dataclass(frozen=True)
class RankWork:
    """One rank's work of an update, by where it runs (module docstring)."""

    matmul_flops: float
    low_matmul_flops: float
    attention_flops: float
    activation_bytes: float
    gemms: tuple[tuple[float, float, float, float], ...] = ()
    """The rank's block-linear GEMMs as ``(M, N, K, count)``: ``count`` runs of an
    ``M × K · K × N`` product per update (forward, the two of backward, recompute)."""


def matmul_rate(precision: str) -> str:
    """The dense rate (``Accelerator.dense_flops_per_s`` key) a recipe's block linears run
    at: ``bf16``, ``fp4`` for NVFP4, else ``fp8``."""
    return {"bf16": "bf16", "nvfp4": "fp4"}.get(precision, "fp8")


def basis(work: RankWork, acc: Accelerator, precision: str = "bf16",
          compiled: bool = False) -> dict[str, float]:
    """The ideal seconds of each :data:`TERMS` entry for ``work`` on ``acc`` (0 for the terms
    the recipe does not use)."""
    require(precision in PRECISIONS, f"precision: must be one of {', '.join(PRECISIONS)}, "
            f"got {precision!r}")
    p16 = acc.peak_flops_per_s("bf16")
    low = (work.low_matmul_flops / acc.peak_flops_per_s(matmul_rate(precision))
           if work.low_matmul_flops else 0.0)
    elem = work.activation_bytes / acc.mem_bytes_per_s
    width = RATE_BYTES[matmul_rate(precision)]
    peak = acc.peak_flops_per_s(matmul_rate(precision))
    skinny = sum(count * max(0.0, gemm_operand_bytes(m, n, k, width) / acc.mem_bytes_per_s
                             - gemm_flops(m, n, k) / peak) for m, n, k, count in work.gemms)
    return {"matmul": work.matmul_flops / p16,
            "fp8": low if precision == "fp8" else 0.0,
            "fp8_rowwise": low if precision == "fp8-rowwise" else 0.0,
            "mxfp8": low if precision == "mxfp8" else 0.0,
            "nvfp4": low if precision == "nvfp4" else 0.0,
            "attention": work.attention_flops / p16,
            "elementwise": 0.0 if compiled else elem,
            "elementwise_compiled": elem if compiled else 0.0,
            "gemm_memory": skinny}


def column(term: str, architecture: str) -> str:
    """A profile's coefficient name for ``term`` on ``architecture`` (``matmul.hopper``;
    shared terms keep their name)."""
    return f"{term}.{architecture}" if term in PER_ARCHITECTURE else term


@dataclass(frozen=True)
class TrainingProfile:
    """Fitted coefficients of the compute time (module docstring), where they come from and how
    far off they were on the rows held out."""

    name: str
    coefficients: Mapping[str, float]
    """By :func:`column` name: ``matmul.<arch>``, ``attention.<arch>`` for each of
    :attr:`architectures`, and the shared terms."""
    architectures: tuple[str, ...]
    """Architectures the fit saw; the last stands in for any other (with a warning)."""
    sources: tuple[str, ...] = ()
    band: tuple[float, float] = (0.0, 0.0)
    """10th and 90th percentile of held-out ``predicted / measured − 1`` of throughput."""
    holdout_median: float = 0.0
    """Median |predicted / measured − 1| of throughput on the rows held out."""
    gpus: tuple[str, ...] = ()
    """GPUs the fit saw."""
    precisions: tuple[str, ...] = ()
    """Matmul recipes the fit saw."""
    allocator_overhead: float = 0.0
    """Memory the caching allocator reserves beyond what is allocated, as a share of it: the
    geometric mean of measured peak reserved / napkin's allocated over the memory rows."""
    memory_holdout_median: float = 0.0
    """Median |predicted / measured − 1| of peak memory on the rows held out."""
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        require(bool(self.architectures), "architectures: a profile covers at least one")
        need = [column(t, a) for t in PER_ARCHITECTURE for a in self.architectures] + [
            t for t in TERMS if t not in PER_ARCHITECTURE]
        missing = [n for n in need if n not in self.coefficients]
        require(not missing, f"coefficients: missing {', '.join(missing)}")
        require(all(0 <= v < float("inf") for v in self.coefficients.values()),
                "coefficients: must be finite and >= 0")

    def architecture_of(self, acc: Accelerator) -> str:
        """The architecture whose coefficients time ``acc``: its own if fitted, else the
        profile's last (newest)."""
        return acc.architecture if acc.architecture in self.architectures else (
            self.architectures[-1])

    def warnings(self, acc: Accelerator, precision: str) -> list[str]:
        """What the query asks outside what the profile was fitted on."""
        out = []
        if acc.architecture not in self.architectures:
            out.append(f"gpu: {acc.id} ({acc.architecture or 'custom'}) is outside the "
                       f"training profile's architectures ({', '.join(self.architectures)}); "
                       f"timed with {self.architectures[-1]}'s coefficients")
        elif self.gpus and acc.id not in self.gpus:
            out.append(f"gpu: {acc.id} was not among the training profile's GPUs "
                       f"({', '.join(self.gpus)}); timed with its architecture's coefficients")
        if self.precisions and precision not in self.precisions:
            out.append(f"precision: {precision} is outside the training profile's recipes "
                       f"({', '.join(self.precisions)})")
        return out

    def compute_s(self, ideal: Mapping[str, float], architecture: str) -> float:
        """``Σ c_term · ideal_term`` (module docstring)."""
        return sum(self.coefficients[column(t, architecture)] * ideal[t] for t in TERMS)


def compute_s(work: RankWork, acc: Accelerator, *, mfu: float | None = None,
              profile: TrainingProfile | None = None, precision: str = "bf16",
              compiled: bool = False) -> float:
    """Seconds one rank computes ``work``: at a plain ``mfu`` or by a fitted ``profile``
    (exactly one of them; module docstring)."""
    require((mfu is None) != (profile is None), "compute: give an mfu or a profile")
    ideal = basis(work, acc, precision, compiled)
    if profile is not None:
        return profile.compute_s(ideal, profile.architecture_of(acc))
    check_efficiency(mfu, "mfu")
    return sum(ideal[t] for t in MATMUL_TERMS) / mfu


PROFILE_FILE = "training_profile.yaml"
"""The shipped training profile (``napkin/catalog``), written by ``benchmarks/fit_training.py``."""


@cache
def shipped_profile() -> TrainingProfile:
    """The shipped training profile (fitted on torchtitan's published tables)."""
    from napkin.specs.yaml_text import load_yaml

    d = load_yaml(CATALOG_DIR.joinpath(PROFILE_FILE).read_text(encoding="utf-8"))
    return TrainingProfile(
        name=d["name"], coefficients={k: float(v) for k, v in d["coefficients"].items()},
        architectures=tuple(d["architectures"]), sources=tuple(d["sources"]),
        band=(float(d["band"][0]), float(d["band"][1])),
        holdout_median=float(d["holdout_median"]), gpus=tuple(d["gpus"]),
        precisions=tuple(d["precisions"]), allocator_overhead=float(d["allocator_overhead"]),
        memory_holdout_median=float(d["memory_holdout_median"]), notes=tuple(d["notes"]))
