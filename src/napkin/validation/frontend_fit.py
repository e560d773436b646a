"""Fitting a profile's frontend queue (:mod:`napkin.timing.frontend`) to measurements, held out
by group.

A queue is not linear in its work (a request's wait grows without bound as the frontend's load
nears 1), so it cannot join the step-time fit's least squares
(:mod:`napkin.validation.fit`). It is chosen instead among candidate frontends, each replayed
through the simulator over every row with the profile's step-time model: the candidate with
the least mean |relative error| of TTFT and TPOT wins. Leave-one-group-out: each group's rows
are predicted under the candidate that wins on the other groups, so a frontend that only one
group asks for is not credited to it. The candidates include none (no frontend queue), which
wins wherever the rows show no frontend-bound ceiling.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from napkin.calibration.measurements.records import Measurement
from napkin.calibration.profile import Profile
from napkin.errors import require
from napkin.timing.frontend import Frontend
from napkin.validation.calibrate import METRICS, assumed, pairs
from napkin.validation.fit import Prediction, predict


@dataclass(frozen=True)
class FrontendFit:
    """The candidates, each one's predictions and error over every row, the winner and the
    held-out predictions (each group under the candidate that won without it)."""

    candidates: tuple[Frontend | None, ...]
    predictions: tuple[list[Prediction], ...]
    errors: tuple[float, ...]
    """Mean |relative error| of TTFT and TPOT over every row, per candidate."""
    chosen: Frontend | None
    holdout: list[Prediction]
    """In the rows' order."""
    by: str = "group"


def objective(preds: Sequence[Prediction]) -> float:
    """Mean |predicted / measured − 1| over the TTFT and TPOT of ``preds`` (each measured
    value once)."""
    errors = [np.abs(got / want - 1) for m in METRICS for got, want in [pairs(preds, m)]
              if len(want)]
    return float(np.concatenate(errors).mean()) if errors else 0.0


def fit_frontend(rows: Sequence[Measurement], profile: Profile,
                 candidates: Sequence[Frontend | None], by: str = "group",
                 progress: Callable[[str], None] | None = None) -> FrontendFit:
    """Choose ``profile``'s frontend among ``candidates`` on ``rows`` (see the module
    docstring); ``by`` groups the hold-out folds
    (:data:`~napkin.calibration.measurements.records.GROUPINGS`)."""
    require(len(candidates) >= 1, "candidates: need at least one frontend")
    rows = assumed(rows, profile)
    runs = []
    for c in candidates:
        runs.append(predict(rows, replace(profile.model, frontend=c)))
        if progress is not None:
            progress(f"frontend {c}: {objective(runs[-1]):.4f}")
    errors = tuple(objective(r) for r in runs)
    groups = sorted({m.group_by(by) for m in rows}, key=str)
    winner = [0] * len(rows)  # per row: the candidate that won without its group
    for g in groups:
        inside = {i for i, m in enumerate(rows) if m.group_by(by) == g}
        best = min(range(len(candidates)), key=lambda k: objective(
            [p for i, p in enumerate(runs[k]) if i not in inside]))
        for i in inside:
            winner[i] = best
    holdout = [runs[k][i] for i, k in enumerate(winner)]
    return FrontendFit(tuple(candidates), tuple(runs), errors,
                       candidates[int(np.argmin(errors))], holdout, by)
