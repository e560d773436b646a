"""Basis recording: a step's fitted-basis terms summed over the steps of a unit.

A recording engine (:class:`~napkin.serving.engine.Engine` with ``record``) keeps the running
sum of every step's basis vector (:data:`napkin.calibration.basis.TERMS`, as its timer counts
it) and stamps each request with the sum at its arrival, first token and finish, so a request's
TTFT and TPOT are linear in the coefficients for the schedule simulated (what calibration fits).
A unit's steps have terms affine in the step index: step j's are ``b0 + j·db``.
"""

import numpy as np

from napkin.serving.step import Plan


def basis_through(basis: tuple[np.ndarray, np.ndarray], steps: float) -> np.ndarray:
    """Σ of the basis over a unit's first ``steps`` steps (fractional: part of the next):
    ``w·b0 + w(w−1)/2·db`` for the whole steps w, then the fraction of step w."""
    b0, db = basis
    whole = int(steps)
    total = whole * b0 + whole * (whole - 1) / 2 * db
    if steps > whole:
        total = total + (steps - whole) * (b0 + whole * db)
    return total


def basis_at(total: np.ndarray, plan: Plan | None, t: float) -> np.ndarray:
    """The running basis sum at instant ``t``: ``total`` (what the committed units summed)
    plus the unit in flight's steps done by ``t``, the step under way pro rata."""
    if plan is None or plan.basis is None or t <= plan.start_s:
        return total.copy()
    elapsed = t - plan.start_s
    m = plan.series.steps_until(elapsed, plan.steps)  # steps whose total reaches elapsed
    before, upto = plan.series.time(max(m - 1, 0)), plan.series.time(m)
    frac = (elapsed - before) / (upto - before) if upto > before else 1.0
    return total + basis_through(plan.basis, max(m - 1, 0) + min(frac, 1.0))
