"""The parametric scaling law of chapter 3.6.1 and its fit (Hoffmann et al. 2022, Approach 3).

Validation loss in nats/token of a model with N parameters trained on D tokens::

    L(N, D) = E + A/N^α + B/D^β

E is the irreducible loss, A/N^α the penalty for too few parameters, B/D^β for too few tokens
(Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models", eq. 2). The fit follows
their Appendix D.2: with E = exp(e), A = exp(a), B = exp(b), minimize over (a, b, e, α, β)

    Σ_i Huber_δ( LSE(a − α·log N_i, b − β·log D_i, e) − log L_i ),   δ = 10⁻³,

summed (not averaged) over runs, with L-BFGS-B started from every point of a grid of
initializations and the lowest objective kept. The residual is in log space, so a run with loss 4
weighs no more than one with loss 2. :func:`holdout` fits some runs and predicts the others, the
check of the chapter's Example 3-5 (a curve always fits the points it was fitted on; only runs it
never saw test whether it extrapolates).
"""

import csv
import itertools
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize

from napkin.errors import NapkinError, require

NUM_PARAMETERS = 5  # E, A, B, α, β


@dataclass(frozen=True)
class ScalingLaw:
    """``L(N, D) = E + A/N^α + B/D^β`` in nats/token (Hoffmann et al. 2022, eq. 2).

    N: parameters; D: training tokens (each seen once); E: irreducible loss; A, α: the
    model-size term; B, β: the data term. Fitted coefficients hold only for the data, tokenizer
    and training recipe they were fitted on.
    """

    E: float
    A: float
    B: float
    alpha: float
    beta: float

    def __post_init__(self) -> None:
        values = (self.E, self.A, self.B, self.alpha, self.beta)
        require(all(math.isfinite(v) for v in values),
                f"scaling law: coefficients must be finite, got {values}")
        require(self.E >= 0, f"E: irreducible loss must be >= 0 nats/token, got {self.E}")
        require(self.A > 0 and self.B > 0, f"A, B: must be > 0, got A={self.A}, B={self.B}")

    def loss(self, N: ArrayLike, D: ArrayLike) -> float | np.ndarray:
        """``E + A/N^α + B/D^β`` (nats/token) for N parameters and D tokens; scalars or arrays."""
        n = np.asarray(N, dtype=float)
        d = np.asarray(D, dtype=float)
        require(bool(np.all(n > 0)), "N: parameters must be > 0")
        require(bool(np.all(d > 0)), "D: training tokens must be > 0")
        value = self.E + self.A / n**self.alpha + self.B / d**self.beta
        return float(value) if value.ndim == 0 else value


# Hoffmann et al. 2022, eq. 10 (Approach 3), the rounded values the paper prints; its TeX source
# carries E=1.6934, α=0.3392, β=0.2849 (Besiroglu et al. 2024, Section 2).
CHINCHILLA_APPROACH3 = ScalingLaw(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)

# Besiroglu, Erdil, Barnett, You 2024, "Chinchilla Scaling: A replication attempt"
# (arXiv:2404.10102, Epoch AI): Approach 3 refitted to the points extracted from Hoffmann's
# Figure 4, the five highest-loss points dropped (240 left), Huber δ = 10⁻³ summed.
# Published: E = 1.8172, A = 482.01, B = 2085.43, α = 0.3478, β = 0.3658 (E ≈ 1.82 rounded).
EPOCH_REPLICATION = ScalingLaw(E=1.8172, A=482.01, B=2085.43, alpha=0.3478, beta=0.3658)


@dataclass(frozen=True)
class AllocationExponents:
    """Compute-optimal growth ``N_opt ∝ C^n_exponent``, ``D_opt ∝ C^d_exponent`` (C FLOPs).

    Under ``C = 6ND`` the two add up to 1. For :class:`ScalingLaw` they follow from α and β
    (:func:`napkin.scaling.optimum.allocation_exponents`); Kaplan et al. 2020 fitted them directly.
    """

    n_exponent: float
    d_exponent: float


# Kaplan et al. 2020, "Scaling Laws for Neural Language Models", Section 6: N_opt ∝ C_min^0.73 and
# D ∝ C_min^0.27 (batch ∝ C^0.24 times steps ∝ C^0.03). Kaplan's loss has another functional form
# (L(N, D) = [(N_c/N)^(α_N/α_D) + D_c/D]^α_D), so only the exponents are kept here.
KAPLAN_2020 = AllocationExponents(n_exponent=0.73, d_exponent=0.27)


@dataclass(frozen=True)
class Observation:
    """One training run: N parameters, D tokens, final validation loss in nats/token."""

    N: float
    D: float
    loss: float

    def __post_init__(self) -> None:
        require(math.isfinite(self.N) and self.N > 0, f"N: parameters must be > 0, got {self.N}")
        require(math.isfinite(self.D) and self.D > 0, f"D: tokens must be > 0, got {self.D}")
        require(math.isfinite(self.loss) and self.loss > 0,
                f"loss: must be > 0 nats/token, got {self.loss}")


def read_observations(path: str | Path, n_col: str, d_col: str,
                      loss_col: str) -> list[Observation]:
    """Read runs from a CSV file with a header row; ``n_col``, ``d_col``, ``loss_col`` name the
    columns holding N (parameters), D (tokens) and the loss (nats/token)."""
    path = Path(path)
    require(path.is_file(), f"observations: no such file {path}")
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        for col in (n_col, d_col, loss_col):
            require(col in header,
                    f"observations: column {col!r} not in {path.name}; it has {header}")
        runs = []
        for row_num, row in enumerate(reader, start=2):
            try:
                values = [float(row[col]) for col in (n_col, d_col, loss_col)]
                runs.append(Observation(*values))
            except (TypeError, ValueError) as err:  # NapkinError is a ValueError
                raise NapkinError(f"observations: {path.name} row {row_num}: {err}") from err
    require(bool(runs), f"observations: {path.name} has no data rows")
    return runs


@dataclass(frozen=True)
class FitGrid:
    """Starting points of the fit: every combination of the listed values."""

    alpha: tuple[float, ...]
    beta: tuple[float, ...]
    e: tuple[float, ...]
    a: tuple[float, ...]
    b: tuple[float, ...]

    def starts(self) -> np.ndarray:
        """All combinations as rows ``(a, b, e, α, β)``, the optimizer's parameter order."""
        return np.array(list(itertools.product(self.a, self.b, self.e, self.alpha, self.beta)),
                        dtype=float).reshape(-1, NUM_PARAMETERS)


# Hoffmann et al. 2022, Appendix D.2: α, β ∈ {0, 0.5, …, 2}, e ∈ {−1, −.5, …, 1},
# a, b ∈ {0, 5, …, 25}: 4,500 starts.
HOFFMANN_GRID = FitGrid(alpha=(0.0, 0.5, 1.0, 1.5, 2.0), beta=(0.0, 0.5, 1.0, 1.5, 2.0),
                        e=(-1.0, -0.5, 0.0, 0.5, 1.0), a=(0.0, 5.0, 10.0, 15.0, 20.0, 25.0),
                        b=(0.0, 5.0, 10.0, 15.0, 20.0, 25.0))

# Every other value of HOFFMANN_GRID: 3⁵ = 243 starts, about 18× faster.
COARSE_GRID = FitGrid(alpha=(0.0, 1.0, 2.0), beta=(0.0, 1.0, 2.0), e=(-1.0, 0.0, 1.0),
                      a=(0.0, 10.0, 20.0), b=(0.0, 10.0, 20.0))


# Deliberate deviation from scipy's defaults (ftol 2.2e-9, gtol 1e-5): L-BFGS-B stops when the
# objective falls by less than ftol·max(|f|, 1), an absolute 2.2e-9 here since the summed Huber
# loss is far below 1 (≈1e-3 for 240 runs, ≈1e-5 for six). Runs then stop early along the flat
# valleys of the surface and the kept fit depends on the order of the points (Besiroglu et al.
# 2024 suggest such early termination behind Hoffmann's own estimates). With these tolerances,
# noise-free points from a known law give that law back from every grid.
_LBFGSB_OPTIONS = {"ftol": 1e-15, "gtol": 1e-10}


def _objective(params: np.ndarray, log_n: np.ndarray, log_d: np.ndarray, log_l: np.ndarray,
               delta: float) -> tuple[float, np.ndarray]:
    """Σ Huber_δ(LSE(a − α·log N, b − β·log D, e) − log L) and its gradient in (a, b, e, α, β)."""
    a, b, e, alpha, beta = params
    t_n = a - alpha * log_n
    t_d = b - beta * log_d
    top = np.maximum(np.maximum(t_n, t_d), e)  # shift so the exponentials cannot overflow
    x_n, x_d, x_e = np.exp(t_n - top), np.exp(t_d - top), np.exp(e - top)
    total = x_n + x_d + x_e
    r = top + np.log(total) - log_l
    # Huber_δ(r) = c·(r − c/2) with c = clip(r, −δ, δ), which is also dHuber/dr
    c = np.clip(r, -delta, delta)
    w = c / total  # dLSE/dt_k = x_k / total
    grad = np.array([w @ x_n, w @ x_d, w @ x_e, -(w * x_n) @ log_n, -(w * x_d) @ log_d])
    return float(c @ (r - 0.5 * c)), grad


@dataclass(frozen=True)
class FitResult:
    """The best fit over the grid; residuals are ``prediction − observation`` per run."""

    law: ScalingLaw
    objective: float  # Σ Huber_δ of the log residuals at the optimum
    observations: tuple[Observation, ...]
    success: bool  # L-BFGS-B's convergence flag for the kept start

    @property
    def num_points(self) -> int:
        return len(self.observations)

    @property
    def observed(self) -> np.ndarray:
        """Observed losses, nats/token."""
        return np.array([o.loss for o in self.observations])

    @property
    def predicted(self) -> np.ndarray:
        """The fitted law at each run's (N, D), nats/token."""
        return np.asarray(self.law.loss([o.N for o in self.observations],
                                        [o.D for o in self.observations]))

    @property
    def residuals_log(self) -> np.ndarray:
        """``log L̂ − log L`` per run: what the Huber loss sees."""
        return np.log(self.predicted) - np.log(self.observed)

    @property
    def residuals(self) -> np.ndarray:
        """``L̂ − L`` per run, nats/token."""
        return self.predicted - self.observed


def fit(observations: list[Observation] | tuple[Observation, ...], *, delta: float = 1e-3,
        grid: FitGrid = HOFFMANN_GRID) -> FitResult:
    """Fit ``L = E + A/N^α + B/D^β`` by Hoffmann et al. 2022, Appendix D.2 (module docstring).

    One L-BFGS-B run per start of ``grid``, each run to convergence (tolerances far below
    scipy's defaults, see ``_LBFGSB_OPTIONS``); the lowest objective wins. ``delta`` is the Huber
    threshold on log residuals. :data:`HOFFMANN_GRID` (4,500 starts) is the paper's;
    :data:`COARSE_GRID` (243) is for quick looks. Parameters are unbounded, as in the paper.
    """
    runs = tuple(observations)
    require(len(runs) >= NUM_PARAMETERS,
            f"fit: needs at least {NUM_PARAMETERS} observations for E, A, B, α, β; got {len(runs)}")
    require(delta > 0, f"delta: Huber threshold must be > 0, got {delta}")
    starts = grid.starts()
    require(len(starts) > 0, "grid: every axis needs at least one value")
    log_n = np.log([o.N for o in runs])
    log_d = np.log([o.D for o in runs])
    log_l = np.log([o.loss for o in runs])
    best = None
    for x0 in starts:
        res = minimize(_objective, x0, args=(log_n, log_d, log_l, delta), jac=True,
                       method="L-BFGS-B", options=_LBFGSB_OPTIONS)
        if math.isfinite(res.fun) and (best is None or res.fun < best.fun):
            best = res
    require(best is not None, "fit: the objective was not finite from any start")
    a, b, e, alpha, beta = best.x
    require(max(a, b, e) < math.log(sys.float_info.max),
            f"fit: diverged (log A = {a:.3g}, log B = {b:.3g}, log E = {e:.3g})")
    law = ScalingLaw(E=math.exp(e), A=math.exp(a), B=math.exp(b), alpha=float(alpha),
                     beta=float(beta))
    return FitResult(law=law, objective=float(best.fun), observations=runs,
                     success=bool(best.success))


@dataclass(frozen=True)
class HoldoutResult:
    """A fit on some runs and its predictions for runs it never saw (errors: ``L̂ − L``)."""

    fit: FitResult
    test: tuple[Observation, ...]

    @property
    def observed(self) -> np.ndarray:
        """Held-out losses, nats/token."""
        return np.array([o.loss for o in self.test])

    @property
    def predicted(self) -> np.ndarray:
        """The fitted law at each held-out run, nats/token."""
        return np.asarray(self.fit.law.loss([o.N for o in self.test], [o.D for o in self.test]))

    @property
    def errors(self) -> np.ndarray:
        """``L̂ − L`` per held-out run, nats/token (positive: the law is pessimistic)."""
        return self.predicted - self.observed

    @property
    def rmse(self) -> float:
        """``√(mean(errors²))`` over the held-out runs, nats/token."""
        return float(np.sqrt(np.mean(self.errors**2)))


def holdout(observations: list[Observation] | tuple[Observation, ...], fit_idx: list[int],
            test_idx: list[int], *, delta: float = 1e-3,
            grid: FitGrid = HOFFMANN_GRID) -> HoldoutResult:
    """Fit on ``observations[fit_idx]``, predict ``observations[test_idx]`` (chapter 3.6.1)."""
    runs = tuple(observations)
    require(bool(test_idx), "test_idx: hold out at least one observation")
    for name, idx in (("fit_idx", fit_idx), ("test_idx", test_idx)):
        bad = [i for i in idx if not 0 <= i < len(runs)]
        require(not bad, f"{name}: indices {bad} outside 0..{len(runs) - 1}")
        require(len(set(idx)) == len(idx), f"{name}: repeated indices")
    both = sorted(set(fit_idx) & set(test_idx))
    require(not both, f"fit_idx, test_idx: {both} in both; a held-out run must not be fitted")
    fitted = fit([runs[i] for i in fit_idx], delta=delta, grid=grid)
    return HoldoutResult(fit=fitted, test=tuple(runs[i] for i in test_idx))
