"""Expert load under expert parallelism: the busiest rank of a top-k MoE layer.

Expert parallelism splits a MoE layer's ``E`` routed experts evenly over ``R`` ranks, ``m = E/R``
contiguous experts each. The ranks run a layer in step (dispatch all-to-all, expert matmuls,
combine all-to-all), so the **slowest rank sets the layer's time**, and the busiest rank is the
one to cost. Two loads matter:

* its (token, expert) **assignments**, the rows its expert matmuls run: the FLOPs, which
  dominate at large batch (prefill, big decode batches): :func:`expected_max_rank_tokens`,
  :func:`imbalance`;
* its **distinct experts touched**, the weights it reads: the bytes, which dominate at small
  batch (decode): :func:`expected_max_rank_experts_touched`.

:func:`expected_destination_ranks` sizes the dispatch all-to-all (DeepEP sends a token once per
destination rank, not once per expert).

Routing is uniform and tokens are independent, the assumption of
:func:`napkin.accounting.forward.experts_touched`: each of ``T`` tokens picks ``k`` distinct
experts uniformly at random.

* One token puts ``X₁ ~ Hypergeometric(E, m, k)`` assignments on a given rank:
  ``P(X₁ = j) = C(m, j)·C(E − m, k − j)/C(E, k)``, mean ``k·m/E = k/R``, variance
  ``k·(m/E)·(1 − m/E)·(E − k)/(E − 1)``.
* A rank's load is the sum over tokens, the ``T``-fold convolution of that pmf
  (:func:`rank_tokens_pmf`), mean ``T·k/R``, variance ``T·var(X₁)``. Computed exactly by
  repeated squaring (``O(log T)`` convolutions, tails under 1e-15 trimmed); past a standard
  deviation of :data:`NORMAL_ABOVE_SD` assignments (``T`` in the hundreds of millions for
  DeepSeek-V3's E = 256, k = 8, R = 8) it is the normal with that mean and variance,
  discretised on the integers, whose error is far below a napkin's there.
* The maximum over ranks starts from **independent** ranks, ``P(max ≤ x) = F(x)^R`` with ``F``
  one rank's CDF, so ``E_ind[max] = Σ_{x ≥ 0} (1 − F(x)^R)``. But the loads sum to ``T·k``:
  any two have correlation ``−1/(R − 1)``, and negatively correlated loads spread further
  apart, so independence **under-estimates** the maximum (by 1 % for E 256, k 8, R 8 at
  T = 64, 3 % for E 8, k 2 on 2 ranks at T = 16, against a Monte Carlo of the routing). Loads
  ``Yᵢ − Ȳ + T·k/R`` built from independent ``Yᵢ`` of variance ``σ²·R/(R − 1)`` have exactly
  the loads' means, variances and correlations, and their maximum exceeds the mean by
  ``√(R/(R − 1))`` times the independent ranks' excess, exactly so where the loads are normal
  (large ``T``, by the central limit theorem). Hence
  ``E[max] ≈ T·k/R + √(R/(R − 1))·(E_ind[max] − T·k/R)``: within 0.1 % of the Monte Carlo
  for E 256/k 8/R 8 and E 128/k 4/R 4 at T = 64 to 2048 and E 8/k 2/R 2 at T = 16; 0.3 % and
  0.6 % short for E 128/k 4/R 4 and E 8/k 2/R 8 at T = 16; 2–3 % either way at T = 1.
* A rank's distinct experts touched is taken as ``Binomial(m, p)`` with
  ``p = 1 − (1 − k/E)^T`` (each expert touched independently; exact mean ``m·p``, consistent
  with :func:`~napkin.accounting.forward.experts_touched`), and its maximum over ranks by
  ``F^R`` again, ranks independent: within 0.15 % of the Monte Carlo at T ≥ 16 in the cases
  above, 1–2 % at T = 1.
"""

import math

import numpy as np

from napkin.accounting.forward import experts_touched
from napkin.errors import require

TAIL = 1e-15
"""Probabilities below this are trimmed from the ends of a rank's load distribution."""

NORMAL_ABOVE_SD = 20_000.0
"""Past this standard deviation of one rank's load (in assignments), :func:`rank_tokens_pmf`
is the discretised normal instead of the exact convolution, whose window (about ±8 standard
deviations) would then pass 300,000 points; the sum's skewness, ``skew(X₁)/√T``, is then
under 1e-3."""

_FFT_ABOVE = 256
"""Convolutions of two arrays both longer than this use the FFT; shorter ones numpy's direct
sum."""


def _check(num_experts: int, top_k: int, ranks: int | None = None,
           tokens: int | None = None) -> None:
    require(num_experts == int(num_experts) and num_experts >= 1,
            f"num_experts: must be an integer >= 1, got {num_experts}")
    require(top_k == int(top_k) and 1 <= top_k <= num_experts,
            f"top_k: must be an integer from 1 to num_experts ({num_experts}), got {top_k}")
    if ranks is not None:
        require(ranks == int(ranks) and ranks >= 1,
                f"ranks: must be an integer >= 1, got {ranks}")
        require(num_experts % ranks == 0,
                f"ranks: must divide num_experts ({num_experts}) evenly, got {ranks}")
    if tokens is not None:
        require(tokens == int(tokens) and tokens >= 0,
                f"tokens: must be an integer >= 0, got {tokens}")


def _hypergeometric_pmf(num_experts: int, per_rank: int, top_k: int) -> np.ndarray:
    """``P(X₁ = j) = C(m, j)·C(E − m, k − j)/C(E, k)`` for ``j = 0 … k``: one token's
    assignments on a rank of ``m`` experts (zeros where ``j`` is impossible)."""
    total = math.comb(num_experts, top_k)
    return np.array([math.comb(per_rank, j) * math.comb(num_experts - per_rank, top_k - j)
                     / total for j in range(top_k + 1)])


def _hypergeometric_var(num_experts: int, per_rank: int, top_k: int) -> float:
    """``k·(m/E)·(1 − m/E)·(E − k)/(E − 1)``; 0 when ``E = 1``."""
    if num_experts == 1:
        return 0.0
    share = per_rank / num_experts
    return top_k * share * (1 - share) * (num_experts - top_k) / (num_experts - 1)


def _exp(x: np.ndarray) -> np.ndarray:
    """``e^x`` element by element with the C library's ``exp``: NumPy's own picks a kernel by
    the CPU (AVX-512 and AVX2 ones differ in the last bit), and the simulator's pinned runs
    must not move with the machine."""
    return np.array([math.exp(v) for v in x.tolist()])


def _trim(offset: int, pmf: np.ndarray) -> tuple[int, np.ndarray]:
    """Drop entries under :data:`TAIL` from both ends (clipping FFT round-off below 0 first)
    and renormalise; ``offset`` is the value of ``pmf[0]``."""
    pmf = np.clip(pmf, 0.0, None)
    keep = np.flatnonzero(pmf >= TAIL)
    lo, hi = int(keep[0]), int(keep[-1]) + 1
    pmf = pmf[lo:hi]
    return offset + lo, pmf / pmf.sum()


def _convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if min(len(a), len(b)) <= _FFT_ABOVE:
        return np.convolve(a, b)
    n = len(a) + len(b) - 1
    size = 1 << (n - 1).bit_length()
    return np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n]


def _rank_load(num_experts: int, top_k: int, ranks: int, tokens: int) -> tuple[int, np.ndarray]:
    """One rank's load distribution as ``(offset, window)``: ``P(load = offset + i) =
    window[i]``, tails under :data:`TAIL` trimmed. Arguments already checked."""
    per_rank = num_experts // ranks
    if tokens == 0:
        return 0, np.ones(1)
    var = tokens * _hypergeometric_var(num_experts, per_rank, top_k)
    if math.sqrt(var) > NORMAL_ABOVE_SD:
        mean = tokens * top_k / ranks
        sd = math.sqrt(var)
        lo = max(0, math.floor(mean - 9 * sd))
        hi = min(tokens * min(top_k, per_rank), math.ceil(mean + 9 * sd))
        x = np.arange(lo, hi + 1, dtype=float)
        return _trim(lo, _exp(-0.5 * ((x - mean) / sd) ** 2))
    base = _trim(0, _hypergeometric_pmf(num_experts, per_rank, top_k))
    result = (0, np.ones(1))
    t = tokens
    while True:
        if t & 1:
            result = _trim(result[0] + base[0], _convolve(result[1], base[1]))
        t >>= 1
        if not t:
            return result
        base = _trim(2 * base[0], _convolve(base[1], base[1]))


def rank_tokens_pmf(num_experts: int, top_k: int, ranks: int, tokens: int) -> np.ndarray:
    """Distribution of the (token, expert) assignments on one expert-parallel rank:
    ``pmf[n] = P(load = n)``, ``n`` in assignments.

    The ``T``-fold convolution of one token's ``Hypergeometric(E, E/R, k)`` pmf
    (``C(m, j)·C(E − m, k − j)/C(E, k)``, ``m = E/R``): mean ``T·k/R``, variance
    ``T·k·(m/E)·(1 − m/E)·(E − k)/(E − 1)``. Exact up to tails under :data:`TAIL` (those
    entries are 0 and the array ends at the last value kept, so it may be shorter than the
    support's ``T·min(k, m) + 1``); past a standard deviation of :data:`NORMAL_ABOVE_SD` the
    discretised normal of that mean and variance. ``T = 0``: ``[1.0]``.
    """
    _check(num_experts, top_k, ranks, tokens)
    offset, window = _rank_load(num_experts, top_k, ranks, int(tokens))
    return np.concatenate([np.zeros(offset), window])


def _expected_max(offset: int, pmf: np.ndarray, ranks: int) -> float:
    """``E[max of R independent copies] = Σ_{x ≥ 0} (1 − F(x)^R)`` for a distribution on the
    integers ``offset, offset + 1, …``; ``1 − F^R`` from the survival ``S = 1 − F`` as
    ``−expm1(R·log1p(−S))`` so that the upper tail keeps its digits."""
    survival = np.cumsum(pmf[::-1])[::-1][1:]  # S(x) = P(X > x) for x = offset … last − 1
    # (S = 1: 1 − F^R = 1 exactly, where log1p(−S) would be −inf)
    return offset + float(np.array([1.0 if s >= 1.0 else -math.expm1(ranks * math.log1p(-s))
                                    for s in survival.tolist()]).sum())


def expected_max_rank_tokens(num_experts: int, top_k: int, ranks: int, tokens: int) -> float:
    """Expected assignments (token–expert pairs, the rows of its expert matmuls) on the busiest
    of ``R`` expert-parallel ranks for ``T`` tokens.

    ``T·k/R + √(R/(R − 1))·(E_ind[max] − T·k/R)``, where ``E_ind[max] = Σ_{x ≥ 0}
    (1 − F(x)^R)``, ``F`` the CDF of :func:`rank_tokens_pmf`, is the maximum of independent
    ranks and ``√(R/(R − 1))`` restores the loads' correlation ``−1/(R − 1)`` (they sum to
    ``T·k``), exactly for normal loads (module docstring). Clamped to ``[T·k/R,
    T·min(k, E/R)]``; ``R = 1``: ``T·k``.
    """
    _check(num_experts, top_k, ranks, tokens)
    if tokens == 0:
        return 0.0
    if ranks == 1:
        return float(tokens * top_k)
    offset, window = _rank_load(num_experts, top_k, ranks, int(tokens))
    mean = tokens * top_k / ranks
    excess = _expected_max(offset, window, ranks) - mean
    most = tokens * min(top_k, num_experts // ranks)
    return min(mean + max(math.sqrt(ranks / (ranks - 1)) * excess, 0.0), float(most))


def imbalance(num_experts: int, top_k: int, ranks: int, tokens: int) -> float:
    """Busiest rank's expected load over the mean load: :func:`expected_max_rank_tokens` /
    ``(T·k/R)``, dimensionless, ``≥ 1``; 1.0 for ``T = 0`` or ``R = 1``."""
    _check(num_experts, top_k, ranks, tokens)
    if tokens == 0 or ranks == 1:
        return 1.0
    return expected_max_rank_tokens(num_experts, top_k, ranks, tokens) / (
        tokens * top_k / ranks)


def expected_max_rank_experts_touched(num_experts: int, top_k: int, ranks: int,
                                      tokens: int) -> float:
    """Expected distinct experts touched on the busiest of ``R`` ranks for ``T`` tokens: the
    expert weights that rank reads (multiply by one expert's bytes).

    Each expert is touched with ``p = 1 − (1 − k/E)^T`` (:func:`experts_touched` / ``E``); a
    rank's count is taken as ``Binomial(E/R, p)`` (exact mean, experts independent) and the
    maximum over ranks as ``Σ_{x ≥ 0} (1 − F(x)^R)``, ranks independent. ``R = 1``:
    :func:`experts_touched` exactly.
    """
    _check(num_experts, top_k, ranks, tokens)
    if tokens == 0:
        return 0.0
    if ranks == 1:
        return experts_touched(num_experts, top_k, int(tokens))
    per_rank = num_experts // ranks
    p = experts_touched(num_experts, top_k, int(tokens)) / num_experts
    if p >= 1.0:
        return float(per_rank)
    j = np.arange(per_rank + 1)
    log_comb = np.array([math.lgamma(per_rank + 1) - math.lgamma(i + 1)
                         - math.lgamma(per_rank - i + 1) for i in range(per_rank + 1)])
    pmf = _exp(log_comb + j * math.log(p) + (per_rank - j) * math.log1p(-p))
    return min(max(_expected_max(0, pmf / pmf.sum(), ranks), per_rank * p), float(per_rank))


def expected_destination_ranks(num_experts: int, top_k: int, ranks: int) -> float:
    """Expected distinct ranks one token's ``k`` experts live on (the copies a dispatch
    all-to-all like DeepEP's sends of it): ``R·(1 − C(E − m, k)/C(E, k))``, ``m = E/R``, the
    ratio as ``Π_{i<k} (E − m − i)/(E − i)`` (the chance a given rank holds none of them).
    Between 1 and ``min(k, R)``."""
    _check(num_experts, top_k, ranks)
    per_rank = num_experts // ranks
    missed = 1.0
    for i in range(top_k):
        missed *= max(num_experts - per_rank - i, 0) / (num_experts - i)
    return ranks * (1.0 - missed)
