"""The parametric scaling law of chapter 3.6.1 and its fit (Hoffmann et al. 2022, Approach 3).

Validation loss in nats/token of a model with N parameters trained on D tokens::

    L(N, D) = E + A/N^α + B/D^β

E is the irreducible loss, A/N^α the penalty for too few parameters, B/D^β for too few tokens
(Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models", eq. 2). The fit follows
their Appendix D.2: with E = exp(e), A = exp(a), B = exp(b), minimize over (a, b, e, α, β)

    Σ_i Huber_δ( LSE(a − α·log N_i, b − β·log D_i, e) − log L_i ),   δ = 10⁻³,

summed (not averaged) over runs, from every point of a grid of initializations, keeping the
lowest objective. The residual is in log space, so a run with loss 4 weighs no more than one
with loss 2. Where the paper runs L-BFGS-B once per start, napkin descends all starts at once
by damped Newton (:mod:`napkin.scaling.multistart`), which lands on the same optimum in about
a second instead of minutes (benchmarks/scaling_fit_speed.py). :func:`holdout` fits some runs
and predicts the others, the check of the chapter's Example 3-5 (a curve always fits the points
it was fitted on; only runs it never saw test whether it extrapolates).
"""

import csv
import itertools
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from napkin.errors import NapkinError, require
from napkin.scaling import multistart

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

PF_DAY_FLOPS = 1e15 * 86_400.0
"""One petaflop/s-day, Kaplan et al.'s unit of compute: 8.64e19 FLOPs."""


@dataclass(frozen=True)
class FittedAllocation:
    """A compute-optimal size fitted directly as a power of the budget, not derived from a
    loss surface: ``N_opt = n_ref · (C / c_ref)^a`` parameters for C FLOPs (a =
    ``exponents.n_exponent``); the tokens follow from ``C = 6ND``."""

    name: str
    n_ref: float
    c_ref_flops: float
    exponents: AllocationExponents


# Kaplan et al. 2020, eq. (6.1), Fig. 14 and Table 6: N_opt = 1.3e9 · C_min^0.73 non-embedding
# parameters with C_min in PF-days. Their Table 6 also gives D_opt = 2e10 · C_min^0.27 tokens,
# whose product with N_opt is not C/6 (C_min counts compute at the critical batch size); napkin
# anchors N on the published constant and takes D = C/(6N), so that 6ND = C as everywhere else
# and D ∝ C^0.27 still holds.
KAPLAN_2020_ALLOCATION = FittedAllocation("kaplan", 1.3e9, PF_DAY_FLOPS, KAPLAN_2020)


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


# The batched fit (napkin.scaling.multistart): every start is scored, the lowest-objective
# ``_SCREEN_KEEP`` of them are descended by damped Newton, first on smoother objectives (Huber
# thresholds ``_CONTINUATION`` > δ: 1 is least squares in log space for these residuals) and
# then at δ itself, each stage at most ``_NEWTON_MAX_ITER`` steps. On the datablations and
# Chinchilla Figure-4 fits the winning basin is reached from hundreds of the kept starts
# (benchmarks/scaling_fit_speed.py), and the optimum equals what one L-BFGS-B run per start of
# all 4,500 gives (scipy, ftol 1e-15, gtol 1e-10) to 1e-6 on every loss prediction.
_SCREEN_KEEP = 256
_CONTINUATION = (1.0, 0.1, 0.01)
_NEWTON_MAX_ITER = 100


@dataclass(frozen=True)
class FitResult:
    """The best fit over the grid; residuals are ``prediction − observation`` per run."""

    law: ScalingLaw
    objective: float  # Σ Huber_δ of the log residuals at the optimum
    observations: tuple[Observation, ...]
    success: bool  # the kept start's Newton descent converged
    delta: float = 1e-3  # Huber threshold on log residuals
    fixed_E: float | None = None  # E held fixed during the fit (None: fitted)

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


def _screen(starts: np.ndarray, logs: tuple[np.ndarray, ...], delta: float,
            keep: int) -> np.ndarray:
    """The ``keep`` distinct starts with the lowest ``Σ Huber_δ`` (finite ones only)."""
    starts = np.unique(starts, axis=0)
    f = multistart.objective(starts, *logs, delta)
    finite = np.flatnonzero(np.isfinite(f))
    return starts[finite[np.argsort(f[finite], kind="stable")][:keep]]


def _descend(starts: np.ndarray, logs: tuple[np.ndarray, ...], delta: float,
             free_e: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Newton from every start through the Huber thresholds ``_CONTINUATION`` above δ, then
    δ: end points, objectives at δ, converged flags."""
    params, f, converged = starts, np.empty(0), np.empty(0, dtype=bool)
    for level in [d for d in _CONTINUATION if d > delta] + [delta]:
        params, f, converged = multistart.newton(params, *logs, level, free_e=free_e,
                                                 max_iter=_NEWTON_MAX_ITER)
    return params, f, converged


def fit(observations: list[Observation] | tuple[Observation, ...], *, delta: float = 1e-3,
        grid: FitGrid = HOFFMANN_GRID, fixed_E: float | None = None) -> FitResult:
    """Fit ``L = E + A/N^α + B/D^β`` by Hoffmann et al. 2022, Appendix D.2 (module docstring).

    Minimizes ``Σ Huber_δ(LSE(a − α·log N, b − β·log D, e) − log L)`` from the starts of
    ``grid`` (:data:`HOFFMANN_GRID`, 4,500 starts, is the paper's; :data:`COARSE_GRID`, 243,
    a quick look) and keeps the lowest objective. ``delta`` is the Huber threshold on log
    residuals. Parameters are unbounded, as in the paper, except that E ≥ 0: the boundary
    E = 0 (e → −∞) is searched as well, since with few runs the infimum lies there and a
    descent in e only creeps toward it. ``fixed_E`` (nats/token) holds E at that value and
    fits A, B, α, β alone. Starts are descended all at once (``_screen``, ``_descend``).
    """
    runs = tuple(observations)
    require(len(runs) >= NUM_PARAMETERS,
            f"fit: needs at least {NUM_PARAMETERS} observations for E, A, B, α, β; got {len(runs)}")
    require(delta > 0 and math.isfinite(delta),
            f"delta: Huber threshold must be > 0, got {delta}")
    require(fixed_E is None or (math.isfinite(fixed_E) and fixed_E >= 0),
            f"fixed_E: irreducible loss must be >= 0 nats/token, got {fixed_E}")
    starts = grid.starts()
    require(len(starts) > 0, "grid: every axis needs at least one value")
    logs = (np.log([o.N for o in runs]), np.log([o.D for o in runs]),
            np.log([o.loss for o in runs]))
    best: tuple[float, np.ndarray, bool] | None = None
    for variant_starts, free_e in _variants(starts, fixed_E):
        kept = _screen(variant_starts, logs, delta, _SCREEN_KEEP)
        if len(kept) == 0:
            continue
        params, f, converged = _descend(kept, logs, delta, free_e)
        f = np.where(np.isfinite(f), f, np.inf)
        i = int(np.argmin(f))
        if math.isfinite(f[i]) and (best is None or f[i] < best[0]):
            best = (float(f[i]), params[i], bool(converged[i]))
    require(best is not None, "fit: the objective was not finite from any start")
    objective, (a, b, e, alpha, beta), success = best
    require(max(a, b, e) < math.log(sys.float_info.max),
            f"fit: diverged (log A = {a:.3g}, log B = {b:.3g}, log E = {e:.3g})")
    law = ScalingLaw(E=math.exp(e), A=math.exp(a), B=math.exp(b), alpha=float(alpha),
                     beta=float(beta))
    return FitResult(law=law, objective=objective, observations=runs, success=success,
                     delta=delta, fixed_E=fixed_E)


def _variants(starts: np.ndarray,
              fixed_E: float | None) -> list[tuple[np.ndarray, bool]]:
    """(starts, e free?) to descend: E fitted and E = 0 (the boundary), or E held at
    ``fixed_E`` (e = log E, −∞ for 0)."""
    def with_e(value: float) -> np.ndarray:
        e = math.log(value) if value > 0 else -math.inf
        return np.column_stack([starts[:, :2], np.full(len(starts), e), starts[:, 3:]])

    if fixed_E is None:
        return [(starts, True), (with_e(0.0), False)]
    return [(with_e(fixed_E), False)]


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
            test_idx: list[int], *, delta: float = 1e-3, grid: FitGrid = HOFFMANN_GRID,
            fixed_E: float | None = None) -> HoldoutResult:
    """Fit on ``observations[fit_idx]``, predict ``observations[test_idx]`` (chapter 3.6.1);
    ``delta``, ``grid`` and ``fixed_E`` as for :func:`fit`."""
    runs = tuple(observations)
    require(bool(test_idx), "test_idx: hold out at least one observation")
    for name, idx in (("fit_idx", fit_idx), ("test_idx", test_idx)):
        bad = [i for i in idx if not 0 <= i < len(runs)]
        require(not bad, f"{name}: indices {bad} outside 0..{len(runs) - 1}")
        require(len(set(idx)) == len(idx), f"{name}: repeated indices")
    both = sorted(set(fit_idx) & set(test_idx))
    require(not both, f"fit_idx, test_idx: {both} in both; a held-out run must not be fitted")
    fitted = fit([runs[i] for i in fit_idx], delta=delta, grid=grid, fixed_E=fixed_E)
    return HoldoutResult(fit=fitted, test=tuple(runs[i] for i in test_idx))
