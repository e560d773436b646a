"""The routed-expert block's time per (token, expert) pair, fitted on engines' MoE kernel timings.

A MoE layer's routed experts cost more than their matmuls and weight reads: each token's hidden
vector is gathered into its k experts' groups, the activation runs between the grouped GEMMs,
and the k outputs are scattered back and summed. Those passes scale with the routed pairs, not
with the FLOPs, so fine-grained experts (many, small) lose most. The step-time basis times them
with ``expert_pair`` (:mod:`napkin.calibration.basis`): the busiest rank's pairs × hidden × 2 B
over the memory bandwidth, times a coefficient.

Serving rows cannot set that coefficient apart from the per-token time, so it is fitted here,
on the engines' own timings of one MoE layer's routed experts on H100 (aiconfigurator's
collected kernel tables: ``num_tokens`` tokens routed top-k over ``moe_tp_size × moe_ep_size``
GPUs, balanced, latency in ms; ``catalog/measurements/aiconfigurator_h100_moe_kernels.csv``,
the shapes of catalog models). Each row is timed as napkin times that layer — the busiest
rank's routed FLOPs and expert bytes (:meth:`~napkin.accounting.ranks.RankCost.routed`) at a
profile's matmul and weight coefficients, held — and the rest is fitted as

    t_kernel − t_matmuls_and_weights = c_pair · x_pair + t_0

(non-negative least squares on relative residuals; ``t_0`` is the kernel chain's fixed time,
which the serving fit carries in its per-layer terms and is not kept). Held out by model, the
fit reports the median |error| of the layer time with and without the pair term.
"""

import csv
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from napkin.accounting.forward import Precision
from napkin.accounting.ranks import RankCost
from napkin.calibration.basis import PAIR_BYTES, TERMS, StepBasis, StepModel
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError, require
from napkin.specs.layout import ParallelLayout

KERNELS = "aiconfigurator_h100_moe_kernels.csv"
COLUMNS = ("engine", "version", "moe_dtype", "model", "num_tokens", "moe_tp_size",
           "moe_ep_size", "latency_ms")
FORMATS = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8", "w4a16_mxfp4": "mxfp4"}
"""The kernel tables' expert formats as napkin weight formats (FP8 per-tensor and 128×128
block-scaled alike; MXFP4 on H100 runs W4A16)."""
WORK_TERMS = ("dense", "dense_low", "dense_w4a16", "weights")


@dataclass(frozen=True)
class KernelRow:
    """One timing of one MoE layer's routed experts."""

    engine: str
    version: str
    moe_dtype: str
    model: str
    tokens: int
    moe_tp: int
    moe_ep: int
    latency_s: float


def read_moe_kernels(path: Path | None = None) -> list[KernelRow]:
    """Rows of a kernel table (default: the shipped one); a malformed row is one error line
    naming the file, the line and the column."""
    source = (resources.files("napkin.catalog").joinpath("measurements", KERNELS)
              if path is None else path)
    rows = []
    with source.open() as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        require(not missing, f"{source}: missing columns {', '.join(missing)}")
        for line, r in enumerate(reader, start=2):
            try:
                row = KernelRow(r["engine"], r["version"], r["moe_dtype"], r["model"],
                                int(r["num_tokens"]), int(r["moe_tp_size"]),
                                int(r["moe_ep_size"]), float(r["latency_ms"]) * 1e-3)
            except ValueError as e:
                raise NapkinError(f"{source} line {line}: {e}") from None
            require(row.moe_dtype in FORMATS, f"{source} line {line}: moe_dtype: "
                    f"{row.moe_dtype!r} not one of {', '.join(FORMATS)}")
            require(row.tokens > 0 and row.moe_tp > 0 and row.moe_ep > 0,
                    f"{source} line {line}: num_tokens, moe_tp_size and moe_ep_size must be "
                    ">= 1")
            require(0 < row.latency_s < float("inf"),
                    f"{source} line {line}: latency_ms: must be finite and > 0, got "
                    f"{r['latency_ms']}")
            rows.append(row)
    return rows


@dataclass(frozen=True)
class KernelFeatures:
    """A row timed as napkin times one MoE layer: (matmul and weight seconds at a profile's
    coefficients, the pair term's ideal seconds, the measured seconds)."""

    work_s: float
    pair_s: float
    measured_s: float


def features(row: KernelRow, coefficients: StepModel) -> KernelFeatures:
    """One MoE layer of ``row``'s catalog model on H100 SXM in the layout of its GPUs
    (``moe_tp × moe_ep`` ranks, experts over ``moe_ep`` groups): the busiest rank's routed
    FLOPs and expert bytes (over all MoE layers, divided by their count) through
    :meth:`StepBasis.terms` at ``coefficients``' matmul and weight terms, and its routed pairs
    × hidden × :data:`PAIR_BYTES` / bandwidth."""
    model, acc = load_model(row.model), load_accelerator("h100-sxm")
    precision = Precision.of(FORMATS[row.moe_dtype], "bf16")
    ranks = row.moe_tp * row.moe_ep
    cost = RankCost.of(model, precision, ParallelLayout(1, ranks, row.moe_ep))
    _, _, rank_f, rank_b = cost.routed(row.tokens)
    basis = StepBasis.of(model, acc, precision.weights.compute, 1, acc.allreduce_bytes_per_s,
                         precision.weights.weight_only)
    x = basis.terms((rank_f, 0.0, rank_b, 0.0, 0.0), row.tokens)
    c = coefficients.as_dict()
    work = sum(c[t] * x[TERMS.index(t)] for t in WORK_TERMS) / cost.moe_layers
    pairs = cost.rank_pairs(row.tokens) / cost.moe_layers
    return KernelFeatures(work, pairs * model.hidden_size * PAIR_BYTES / acc.mem_bytes_per_s,
                          row.latency_s)


@dataclass(frozen=True)
class PairFit:
    """The fitted pair coefficient and fixed time, and the fit's errors (median |relative
    error| of the layer time): training, held out by model, and without the pair term."""

    expert_pair: float
    fixed_s: float
    rows: int
    train_error: float
    holdout_error: float
    without_error: float


def _solve(f: list[KernelFeatures]) -> tuple[float, float]:
    y = np.array([k.measured_s for k in f])
    a = np.array([[k.pair_s, 1.0] for k in f]) / y[:, None]
    target = 1.0 - np.array([k.work_s for k in f]) / y
    (pair, fixed), _ = nnls(a, target)
    return float(pair), float(fixed)


def _error(f: list[KernelFeatures], pair: float, fixed: float) -> np.ndarray:
    return np.array([abs((k.work_s + pair * k.pair_s + fixed) / k.measured_s - 1) for k in f])


def fit_expert_pair(rows: list[KernelRow], coefficients: StepModel) -> PairFit:
    """:data:`KernelFeatures` of ``rows`` (one engine's) at ``coefficients``, the pair
    coefficient and fixed time fitted (module docstring), held out by model."""
    require(len(rows) > 0, "kernel rows: none to fit")
    f = [features(r, coefficients) for r in rows]
    pair, fixed = _solve(f)
    models = np.array([r.model for r in rows])
    held = []
    for m in sorted(set(models)):
        out = models == m
        train = [k for k, o in zip(f, out, strict=True) if not o]
        if not train:
            continue
        p, c = _solve(train)
        held += list(_error([k for k, o in zip(f, out, strict=True) if o], p, c))
    _, fixed_only = _solve([KernelFeatures(k.work_s, 0.0, k.measured_s) for k in f])
    return PairFit(pair, fixed, len(rows), float(np.median(_error(f, pair, fixed))),
                   float(np.median(held)) if held else float("nan"),
                   float(np.median(_error(f, 0.0, fixed_only))))
