"""Fitting the training compute profile (:class:`~napkin.training.efficiency.TrainingProfile`)
to measured runs, and scoring it on runs held out.

Each measured throughput row is planned once (:func:`row_terms`): its rank's ideal seconds per
term, and everything of its update that does not depend on the profile — the exposed TP, PP and
CP traffic, the FSDP traffic the compute must hide, the pipeline bubble, the optimizer step.
Its predicted update time under coefficients ``c`` is then::

    compute = Σ c_term · ideal_term
    update  = max(compute + TP exposed + PP + CP, FSDP traffic) / (1 − bubble) + optimizer

(TP exposed = the TP traffic, or under async TP only what exceeds the compute), and its
throughput ``tokens per update / update / GPUs``. The fit minimizes the squared log ratios of
predicted to measured throughput (``scipy.optimize.least_squares``), every matmul and attention
coefficient ≥ 1 (no kernel beats its peak) and the elementwise and GEMM-memory ones ≥ 0. A
coefficient no training row exercises takes its default (:data:`DEFAULTS`).

Hold-out (:func:`holdout`): each row is predicted by a fit on the rows of the other groups
(:attr:`~napkin.training.measured.MeasuredRun.group`: the source table, one cluster and code
version).
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from napkin.errors import require
from napkin.training.efficiency import PER_ARCHITECTURE, TERMS, basis, column
from napkin.training.measured import MeasuredRun, accelerator, plan_run

UPPER = 50.0
START = {"matmul": 1.5, "attention": 3.0, "fp8": 2.0, "fp8_rowwise": 4.0, "mxfp8": 2.0,
         "nvfp4": 2.0, "gemm_memory": 1.0,
         "elementwise": 5.0, "elementwise_compiled": 5.0}
DEFAULTS: dict[str, Callable[[dict[str, float], str], float]] = {
    "fp8": lambda c, a: c[column("matmul", a)],
    "fp8_rowwise": lambda c, a: c["fp8"],
    "mxfp8": lambda c, a: c["fp8"],
    "nvfp4": lambda c, a: c["fp8"],
    "elementwise": lambda c, a: 0.0,
    "elementwise_compiled": lambda c, a: c["elementwise"],
    "gemm_memory": lambda c, a: 0.0,
}
"""What a shared coefficient no training row exercises is set to: FP8 matmuls as fast (relative
to their peak) as BF16 ones, rowwise, MXFP8 and NVFP4 as tensorwise FP8 (relative to their own
peak), compiled elementwise kernels as eager ones. A per-architecture coefficient without rows
takes the other architectures' mean."""


@dataclass(frozen=True)
class RowTerms:
    """A throughput row's profile-free parts (module docstring); seconds per update."""

    run: MeasuredRun
    architecture: str
    ideal: dict[str, float]
    tp_s: float
    pp_s: float
    cp_s: float
    dp_s: float
    bubble: float
    optimizer_s: float
    dequant_s: float
    tokens_per_gpu: float
    """Tokens per update per GPU."""

    def update_s(self, coefficients: dict[str, float]) -> float:
        compute = sum(coefficients[column(t, self.architecture)] * self.ideal[t]
                      for t in TERMS)
        tp = max(0.0, self.tp_s - compute) if self.run.async_tp else self.tp_s
        return max(compute + self.dequant_s + tp + self.pp_s + self.cp_s, self.dp_s) / (
            1 - self.bubble) + self.optimizer_s

    def tokens_per_s(self, coefficients: dict[str, float]) -> float:
        return self.tokens_per_gpu / self.update_s(coefficients)


def row_terms(run: MeasuredRun) -> RowTerms:
    """Plan ``run`` once and keep what the profile does not change."""
    plan = plan_run(run, mfu=1.0)
    acc, mp = accelerator(run), plan.model_parallel
    require(mp is not None, "fit: a plan without its model-parallel traffic")
    return RowTerms(run, acc.architecture, basis(plan.work, acc, run.precision, run.compiled),
                    mp.tp_s, mp.pp_s, mp.cp_s, plan.comm.time_s, plan.bubble_frac,
                    plan.optimizer_s, plan.dequant_s, plan.tokens_per_update / plan.gpus)


def columns_of(architectures: tuple[str, ...]) -> tuple[str, ...]:
    """Every coefficient a profile over ``architectures`` holds."""
    return tuple(column(t, a) for t in PER_ARCHITECTURE for a in architectures) + tuple(
        t for t in TERMS if t not in PER_ARCHITECTURE)


def fit(rows: list[RowTerms], architectures: tuple[str, ...]) -> dict[str, float]:
    """Coefficients (by :func:`~napkin.training.efficiency.column` name) minimizing the
    squared log errors of ``rows``' throughput (module docstring)."""
    from scipy.optimize import least_squares

    require(bool(rows), "fit: no throughput rows to fit")
    names = columns_of(architectures)
    used = {n: any(r.ideal[t] > 0 for r in rows for t in TERMS
                   if column(t, r.architecture) == n) for n in names}
    free = [n for n in names if used[n]]

    def full(z: np.ndarray) -> dict[str, float]:
        c = dict.fromkeys(names, 0.0)
        c.update({n: float(v) for n, v in zip(free, z, strict=True)})
        for term in PER_ARCHITECTURE:
            seen = [c[column(term, a)] for a in architectures if used[column(term, a)]]
            for a in architectures:
                if not used[column(term, a)]:
                    c[column(term, a)] = sum(seen) / len(seen) if seen else 1.0
        for name, default in DEFAULTS.items():
            if not used[name]:
                c[name] = default(c, architectures[-1])
        return c

    def residuals(z: np.ndarray) -> np.ndarray:
        c = full(z)
        return np.array([math.log(r.tokens_per_s(c) / r.run.measured) for r in rows])

    lower = [0.0 if n.startswith("elementwise") or n == "gemm_memory" else 1.0 for n in free]
    start = [max(START[n.split(".")[0]], low) for n, low in zip(free, lower, strict=True)]
    result = least_squares(residuals, start, bounds=(lower, [UPPER] * len(free)))
    return full(result.x)


def holdout(rows: list[RowTerms], architectures: tuple[str, ...]
            ) -> list[tuple[RowTerms, float]]:
    """Each row's throughput predicted by a fit on the rows of the other groups, in order."""
    out: dict[int, float] = {}
    for g in sorted({r.run.group for r in rows}):
        c = fit([r for r in rows if r.run.group != g], architectures)
        out.update({i: r.tokens_per_s(c) for i, r in enumerate(rows) if r.run.group == g})
    return [(r, out[i]) for i, r in enumerate(rows)]
