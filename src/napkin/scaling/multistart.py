"""Many starts of the Hoffmann et al. (2022) Approach 3 fit as one batched Newton problem.

Each row of ``params`` is one start ``θ = (a, b, e, α, β)``; for run i the log prediction is

    ŷ_i = LSE(a − α·log N_i, b − β·log D_i, e),    r_i = ŷ_i − log L_i,

and the objective of a start is ``Σ_i Huber_δ(r_i)``, ``Huber_δ(r) = c·(r − c/2)`` with
``c = clip(r, −δ, δ)`` (δ in nats of log loss, dimensionless). With ``p = softmax(t)`` the
weights of the three terms (∂LSE/∂t), ``∂r/∂θ = (p_N, p_D, p_E, −p_N·log N, −p_D·log D)`` and
``∂²r/∂θ² = Jᵀ(diag p − p·pᵀ)J``, so the exact Hessian is

    H = Σ_i [Huber''(r_i)·∇r_i∇r_iᵀ + c_i·∇²r_i],    Huber'' = 1 inside ±δ, 0 outside.

:func:`newton` takes Levenberg–Marquardt-damped Newton steps for every start at once
(eigenvalues floored at ``μ·max|λ|``, ``μ`` shrunk ×10 after a step that lowers the objective,
grown ×100 after one that does not). Everything is numpy over a (starts × runs) array: one
iteration costs a few passes over it instead of one Python-level optimizer call per start.
The runs' ``log N, log D, log L`` are either shared, shape (runs,), or one set per start,
shape (starts, runs), so fits of many subsets of runs can share one batch.
"""

import numpy as np

_UPPER = np.triu_indices(5, 1)
_MU_START, _MU_MIN, _MU_MAX = 1e-6, 1e-12, 1e6
# Converged when the damped Newton step's predicted decrease is below this share of the
# objective: at double precision no further step changes the loss predictions.
_PREDICTED_RTOL = 1e-14


def _softmax_terms(params: np.ndarray, log_n: np.ndarray, log_d: np.ndarray,
                   log_l: np.ndarray) -> tuple[np.ndarray, ...]:
    """Residuals ``r`` (starts × runs, log nats) and the term weights ``p_N, p_D, p_E``.

    ``e`` may be −∞ (E = 0): its term then weighs nothing. The largest exponent is subtracted
    before exponentiating so nothing overflows.
    """
    a, b, e, alpha, beta = (params[:, i:i + 1] for i in range(5))
    t_n = a - alpha * log_n
    t_d = b - beta * log_d
    top = np.maximum(np.maximum(t_n, t_d), e)
    x_n, x_d = np.exp(t_n - top), np.exp(t_d - top)
    x_e = np.exp(e - top)
    total = x_n + x_d + x_e
    r = top + np.log(total) - log_l
    return r, x_n / total, x_d / total, x_e / total


def objective(params: np.ndarray, log_n: np.ndarray, log_d: np.ndarray, log_l: np.ndarray,
              delta: float) -> np.ndarray:
    """``Σ_i Huber_δ(r_i)`` per start (one value per row of ``params``); inf or nan where a
    start overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        r, *_ = _softmax_terms(params, log_n, log_d, log_l)
    c = np.clip(r, -delta, delta)
    return np.einsum("kn,kn->k", c, r - 0.5 * c)


def _sums(weights: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """``Σ_i weights_ki · basis_i·`` (shared runs) or ``Σ_i weights_ki · basis_ki·``."""
    if basis.ndim == 2:
        return weights @ basis
    return np.einsum("kn,knm->km", weights, basis)


def _rows(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The runs' data for starts ``idx``: shared data as is, per-start data those rows."""
    return values if values.ndim == 1 else values[idx]


def derivatives(params: np.ndarray, log_n: np.ndarray, log_d: np.ndarray, log_l: np.ndarray,
                delta: float, free_e: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Objective (K,), gradient (K, 5) and exact Hessian (K, 5, 5) per start (module docstring).

    With ``free_e`` False the e row and column are frozen (gradient 0, Hessian identity there),
    so Newton steps leave a fixed E where it is.
    """
    r, p_n, p_d, p_e = _softmax_terms(params, log_n, log_d, log_l)
    c = np.clip(r, -delta, delta)
    f = np.einsum("kn,kn->k", c, r - 0.5 * c)
    w = (np.abs(r) < delta) - c  # Huber'' minus Huber' (the −p·pᵀ part of ∇²r)
    one = np.ones_like(log_n)
    basis_n = np.stack([one, log_n, log_n * log_n], -1)
    basis_d = np.stack([one, log_d, log_d * log_d], -1)
    basis_nd = np.stack([one, log_n, log_d, log_n * log_d], -1)
    s_n, s_d, s_e = _sums(c * p_n, basis_n), _sums(c * p_d, basis_d), (c * p_e).sum(1)
    grad = np.stack([s_n[:, 0], s_d[:, 0], s_e, -s_n[:, 1], -s_d[:, 1]], 1)
    wp_n, wp_d = w * p_n, w * p_d
    nn, dd = _sums(wp_n * p_n, basis_n), _sums(wp_d * p_d, basis_d)
    nd = _sums(wp_n * p_d, basis_nd)
    ne, de = _sums(wp_n * p_e, basis_n[..., :2]), _sums(wp_d * p_e, basis_d[..., :2])
    hess = np.empty((len(params), 5, 5))
    hess[:, 0, 0] = nn[:, 0] + s_n[:, 0]
    hess[:, 0, 1] = nd[:, 0]
    hess[:, 0, 2] = ne[:, 0]
    hess[:, 0, 3] = -nn[:, 1] - s_n[:, 1]
    hess[:, 0, 4] = -nd[:, 2]
    hess[:, 1, 1] = dd[:, 0] + s_d[:, 0]
    hess[:, 1, 2] = de[:, 0]
    hess[:, 1, 3] = -nd[:, 1]
    hess[:, 1, 4] = -dd[:, 1] - s_d[:, 1]
    hess[:, 2, 2] = (w * p_e * p_e).sum(1) + s_e
    hess[:, 2, 3] = -ne[:, 1]
    hess[:, 2, 4] = -de[:, 1]
    hess[:, 3, 3] = nn[:, 2] + s_n[:, 2]
    hess[:, 3, 4] = nd[:, 3]
    hess[:, 4, 4] = dd[:, 2] + s_d[:, 2]
    hess[:, _UPPER[1], _UPPER[0]] = hess[:, _UPPER[0], _UPPER[1]]
    if not free_e:
        grad[:, 2] = 0.0
        hess[:, 2, :] = 0.0
        hess[:, :, 2] = 0.0
        hess[:, 2, 2] = 1.0
    return f, grad, hess


def _damped_step(grad: np.ndarray, hess: np.ndarray,
                 mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``s = −V·diag(1/max(|λ|, μ·max|λ|))·Vᵀ·g`` and the decrease its quadratic model
    predicts, ``−g·s − ½·sᵀHs`` (positive)."""
    lam, vec = np.linalg.eigh(hess)
    size = np.abs(lam)
    floor = mu[:, None] * size.max(1, keepdims=True) + np.finfo(float).tiny
    proj = np.einsum("kji,kj->ki", vec, grad)
    scaled = proj / np.maximum(size, floor)
    step = -np.einsum("kij,kj->ki", vec, scaled)
    predicted = np.einsum("ki,ki->k", proj, scaled) - 0.5 * np.einsum("ki,ki,ki->k", scaled,
                                                                        scaled, lam)
    return step, predicted


def newton(params: np.ndarray, log_n: np.ndarray, log_d: np.ndarray, log_l: np.ndarray,
           delta: float, *, free_e: bool = True,
           max_iter: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Damped Newton from every row of ``params`` at once (module docstring).

    Returns the end points, their objectives and a converged flag per start: the step's
    predicted decrease fell below 1e-14 of the objective, or no damping found a lower point.
    A start leaves the batch when it converges, so late iterations cost only the stragglers.
    Steps that overflow (far-off starts with a flat Hessian) give a non-finite trial objective
    and count as not lowering it.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _newton(np.array(params, dtype=float), log_n, log_d, log_l, delta, free_e,
                       max_iter)


def _newton(params: np.ndarray, log_n: np.ndarray, log_d: np.ndarray, log_l: np.ndarray,
            delta: float, free_e: bool,
            max_iter: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = len(params)
    f = objective(params, log_n, log_d, log_l, delta)
    mu = np.full(k, _MU_START)
    converged = np.zeros(k, dtype=bool)
    active = np.isfinite(f)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        data = (_rows(log_n, idx), _rows(log_d, idx), _rows(log_l, idx))
        f_now, grad, hess = derivatives(params[idx], *data, delta, free_e)
        finite = np.isfinite(hess).all((1, 2)) & np.isfinite(grad).all(1)
        if not finite.all():  # overflowed: drop the start, unconverged
            active[idx[~finite]] = False
            idx, f_now, grad, hess = idx[finite], f_now[finite], grad[finite], hess[finite]
            data = tuple(_rows(v, finite) for v in data)
            if idx.size == 0:
                continue
        step, predicted = _damped_step(grad, hess, mu[idx])
        if not free_e:
            step[:, 2] = 0.0
        trial = params[idx] + step
        f_trial = objective(trial, *data, delta)
        better = np.isfinite(f_trial) & (f_trial < f_now) & np.isfinite(predicted)
        params[idx[better]] = trial[better]
        f[idx[better]] = f_trial[better]
        mu[idx] = np.where(better, np.maximum(mu[idx] / 10, _MU_MIN), mu[idx] * 100)
        done = (predicted <= _PREDICTED_RTOL * f_now) | (~better & (mu[idx] > _MU_MAX))
        converged[idx[done]] = True
        active[idx[done]] = False
    return params, f, converged
