"""The routed experts' own efficiency, fitted on engines' MoE kernel timings.

A MoE layer's routed experts do not run at the efficiency of the dense layers' matmuls: their
grouped GEMMs split each rank's tokens into many small matrices (lower tensor-core occupancy,
block-scaled FP8 rescaling per tile), each token's hidden vector is gathered into its k experts'
groups and the k outputs scattered back and summed, and a router, a top-k and a permutation run
every layer. The step-time basis therefore times the routed experts with their own terms
(:mod:`napkin.calibration.terms`): ``expert`` / ``expert_low`` / ``expert_w4a16`` (the routed
FLOPs over the format's peak, as ``dense*`` are for the rest), ``expert_weights`` (the expert
bytes read over the bandwidth; ``expert_weights_w4a16`` for weight-only 4-bit experts), beside
``moe_layer`` (a fixed time per MoE layer) and ``expert_pair`` (per routed pair).

Serving rows cannot set those apart from the dense terms (few MoE rows, and each mixes both),
so they are fitted here, on the engines' own timings of one MoE layer's routed experts on H100
(aiconfigurator's collected kernel tables: ``num_tokens`` tokens routed top-k over
``moe_tp_size × moe_ep_size`` GPUs, balanced, latency in ms;
``catalog/measurements/aiconfigurator_h100_moe_kernels.csv``, the shapes of catalog models).
Each row is one layer of the busiest rank — its routed FLOPs and expert bytes
(:meth:`~napkin.accounting.ranks.RankCost.routed`) and pairs (:meth:`~napkin.accounting.ranks.
RankCost.rank_pairs`), over all MoE layers divided by their count — as basis terms
(:func:`features`), and

    t_kernel = Σ_term c_term · x_term     (terms: the expert ones, ``moe_layer``, optionally
                                           ``expert_pair``)

is fitted by non-negative least squares on relative residuals, and held out by model.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from napkin.accounting.forward import Precision
from napkin.accounting.ranks import RankCost
from napkin.calibration.basis import PAIR_BYTES, StepBasis, StepModel
from napkin.calibration.measurements.fields import csv_table
from napkin.calibration.terms import TERMS
from napkin.catalog import gpu_measurement_file, load_accelerator, load_model
from napkin.errors import NapkinError, require
from napkin.specs.layout import ParallelLayout

KERNELS = "aiconfigurator_h100_moe_kernels.csv"
KERNEL_TABLES = {"h100-sxm": KERNELS, "b200": "aiconfigurator_b200_moe_kernels.csv"}
"""The shipped kernel table of each GPU (``benchmarks/extract_moe_kernels.py`` writes them from
aiconfigurator's, the same engine versions on each): the H100's fits the profiles' expert
terms; the B200's measures how those carry to Blackwell (``benchmarks/check_moe_kernels.py
--gpu b200``)."""
COLUMNS = ("engine", "version", "moe_dtype", "model", "num_tokens", "moe_tp_size",
           "moe_ep_size", "latency_ms")
FORMATS = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8", "w4a16_mxfp4": "mxfp4",
           "nvfp4": "nvfp4"}
"""The kernel tables' expert formats as napkin weight formats (FP8 per-tensor and 128×128
block-scaled alike; MXFP4 weights with 16-bit activations run W4A16; NVFP4 on a GPU with an
FP4 rate)."""


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
    gpu: str = "h100-sxm"
    """The catalog GPU it was timed on."""


def read_moe_kernels(path: Path | None = None, gpu: str = "h100-sxm") -> list[KernelRow]:
    """Rows of a kernel table timed on ``gpu`` (default: the shipped table of that GPU,
    :data:`KERNEL_TABLES`); a malformed row is one error line naming the file, the line and
    the column."""
    source = gpu_measurement_file(KERNEL_TABLES, gpu, "MoE kernel") if path is None else path
    rows = []
    for line, r in csv_table(source, COLUMNS):
        try:
            row = KernelRow(r["engine"], r["version"], r["moe_dtype"], r["model"],
                            int(r["num_tokens"]), int(r["moe_tp_size"]),
                            int(r["moe_ep_size"]), float(r["latency_ms"]) * 1e-3, gpu)
        except ValueError as e:
            raise NapkinError(f"{source} line {line}: {e}") from None
        require(row.moe_dtype in FORMATS, f"{source} line {line}: moe_dtype: "
                f"{row.moe_dtype!r} not one of {', '.join(FORMATS)}")
        require(row.tokens > 0 and row.moe_tp > 0 and row.moe_ep > 0,
                f"{source} line {line}: num_tokens, moe_tp_size and moe_ep_size must be >= 1")
        require(0 < row.latency_s < float("inf"),
                f"{source} line {line}: latency_ms: must be finite and > 0, got "
                f"{r['latency_ms']}")
        rows.append(row)
    return rows


KERNEL_TERMS = ("expert", "expert_low", "expert_w4a16", "expert_weights",
                "expert_weights_w4a16", "moe_layer")
"""The terms a kernel fit sets (:func:`fit_kernels`): the routed experts' matmuls of each
compute class, their reads and the fixed time of a MoE layer."""


@dataclass(frozen=True)
class KernelFeatures:
    """A row as basis terms of one MoE layer of the busiest rank (:data:`TERMS` order) and
    its measured seconds."""

    x: tuple[float, ...]
    measured_s: float

    def time(self, model: StepModel) -> float:
        """The layer's time under ``model``: Σ c·x."""
        return float(np.dot(model.coefficients, self.x))


def features(row: KernelRow) -> KernelFeatures:
    """One MoE layer of ``row``'s catalog model on its GPU in the layout of its GPUs
    (``moe_tp × moe_ep`` ranks, experts over ``moe_ep`` groups): the busiest rank's routed
    FLOPs in the ``expert*`` term of the format (over the format's peak), its expert bytes in
    ``expert_weights`` (over the bandwidth), ``moe_layer`` the GPU's fixed-time scale (1 on
    the H100) and its routed pairs × hidden × :data:`PAIR_BYTES` / bandwidth in
    ``expert_pair`` (all over the MoE layers' count)."""
    model, acc = load_model(row.model), load_accelerator(row.gpu)
    precision = Precision.of(FORMATS[row.moe_dtype], "bf16")
    cost = RankCost.of(model, precision, ParallelLayout(1, row.moe_tp * row.moe_ep,
                                                        row.moe_ep))
    _, _, flops, weight_bytes = cost.routed(row.tokens)
    basis = StepBasis.of(model, acc, precision.weights.compute, 1, acc.allreduce_bytes_per_s,
                         precision.weights.weight_only)
    x = [0.0] * len(TERMS)
    _, expert, _, expert_weights = basis.expert_slots
    layers = cost.moe_layers
    x[expert] = flops * basis.per_dense_flop / layers
    x[expert_weights] = weight_bytes * basis.per_byte / layers
    x[TERMS.index("moe_layer")] = acc.fixed_time_scale
    x[TERMS.index("expert_pair")] = (cost.rank_pairs(row.tokens) / layers * model.hidden_size
                                     * PAIR_BYTES / acc.mem_bytes_per_s)
    return KernelFeatures(tuple(x), row.latency_s)


@dataclass(frozen=True)
class KernelFit:
    """Coefficients fitted on one engine's kernel rows and the fit's errors (median |relative
    error| of the layer time): training, held out by model, and under the model the fit
    started from (the profile's, for comparison)."""

    coefficients: dict[str, float]
    rows: int
    train_error: float
    holdout_error: float
    start_error: float


def _solve(f: list[KernelFeatures], columns: list[int]) -> np.ndarray:
    y = np.array([k.measured_s for k in f])
    a = np.array([[k.x[i] for i in columns] for k in f]) / y[:, None]
    c, _ = nnls(a, np.ones(len(f)))
    return c


def _errors(f: list[KernelFeatures], columns: list[int], c: np.ndarray) -> np.ndarray:
    return np.array([abs(sum(v * k.x[i] for v, i in zip(c, columns, strict=True))
                         / k.measured_s - 1) for k in f])


def fit_kernels(rows: list[KernelRow], start: StepModel,
                terms: tuple[str, ...] = KERNEL_TERMS) -> KernelFit:
    """``terms`` fitted on ``rows`` (one engine's; a term no row exercises — an expert format
    the table lacks — is left out), held out by model; ``start``'s time of each row is the
    comparison (its expert terms as its profile resolves them)."""
    require(len(rows) > 0, "kernel rows: none to fit")
    f = [features(r) for r in rows]
    columns = [TERMS.index(t) for t in terms if any(k.x[TERMS.index(t)] for k in f)]
    c = _solve(f, columns)
    models = np.array([r.model for r in rows])
    held: list[float] = []
    for m in sorted(set(models)):
        train = [k for k, o in zip(f, models == m, strict=True) if not o]
        if train:
            out = [k for k, o in zip(f, models == m, strict=True) if o]
            held += list(_errors(out, columns, _solve(train, columns)))
    start_error = np.median([abs(k.time(start) / k.measured_s - 1) for k in f])
    return KernelFit({TERMS[i]: float(v) for i, v in zip(columns, c, strict=True)}, len(rows),
                     float(np.median(_errors(f, columns, c))),
                     float(np.median(held)) if held else float("nan"), float(start_error))


SCALED_TERMS = ("expert", "expert_low", "expert_w4a16")
"""The routed experts' matmul terms an architecture's kernel tables scale
(:func:`architecture_scales`). Their reads are not scaled: fitted on each GPU's tables,
``expert_weights`` comes out alike (TensorRT-LLM 1.22 on H100 against 1.25 on B200), and
scaling it too read SGLang's held-out B200 layers worse."""


def architecture_scales(h100: list[KernelRow], other: list[KernelRow],
                        terms: tuple[str, ...] = SCALED_TERMS) -> dict[str, float]:
    """How much slower, against its datasheet rates, another GPU runs one engine's routed
    experts than the H100 does: for each of ``terms`` that both tables exercise, the ratio of
    its coefficient fitted on ``other``'s rows to that fitted on ``h100``'s (both with every
    kernel term free, :func:`fit_kernels`). A profile fitted on H100 multiplies its own
    coefficients by them on that GPU's architecture (:meth:`StepModel.on`)."""
    start = StepModel.of({})
    a, b = fit_kernels(h100, start), fit_kernels(other, start)
    return {t: b.coefficients[t] / a.coefficients[t] for t in terms
            if a.coefficients.get(t, 0.0) > 0 and b.coefficients.get(t, 0.0) > 0}
