"""Evaluation statistics: benchmark noise, pass@k, bits per byte, DPO and GRPO quantities.

Sources are the chapter's interview questions (question bank 003): q4 (bits per byte), q31 (DPO
loss at step 0 is ln 2), q33 and q34 (GRPO advantages and degenerate groups), q48 (benchmark
standard error, paired bootstrap), q50 (unbiased pass@k, maj@k, pass^k); the estimators follow
Chen et al. 2021 (Codex, pass@k), Rafailov et al. 2023 (DPO) and Shao et al. 2024 (GRPO).

Every function is pure; bad input raises :class:`NapkinError` naming the argument and the
allowed range. Probabilities and accuracies are fractions in [0, 1], not percent.
"""

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from napkin.errors import require
from napkin.stats import nearest_rank

# ---------------------------------------------------------------- validation helpers


def _integer(where: str, name: str, value: object, low: int, high: int | None = None) -> int:
    """``value`` as an int in [low, high] (high None: unbounded); bools and floats are refused."""
    ok = isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
    upper = "∞)" if high is None else f"{high}]"
    require(ok, f"{where}: {name} must be an integer in [{low}, {upper}, got {value!r}")
    number = int(value)  # type: ignore[call-overload]
    require(low <= number and (high is None or number <= high),
            f"{where}: {name} must be an integer in [{low}, {upper}, got {number}")
    return number


def _probability(where: str, name: str, value: float) -> float:
    """``value`` as a float in [0, 1] (NaN is refused)."""
    number = float(value)
    require(0.0 <= number <= 1.0, f"{where}: {name} must be in [0, 1], got {value!r}")
    return number


def _finite(where: str, name: str, value: float) -> float:
    number = float(value)
    require(math.isfinite(number), f"{where}: {name} must be a finite number, got {value!r}")
    return number


def _binary(where: str, name: str, values: Sequence[float] | np.ndarray) -> np.ndarray:
    """A non-empty 1-D array of 0/1 correctness flags (bools or numbers equal to 0 or 1)."""
    array = np.asarray(values)
    require(array.ndim == 1 and array.size >= 1,
            f"{where}: {name} must be a non-empty 1-D sequence of 0/1, got shape {array.shape}")
    require(array.dtype.kind in "biuf",
            f"{where}: {name} must hold 0/1 numbers or bools, got dtype {array.dtype}")
    as_float = array.astype(np.float64)
    require(bool(np.all((as_float == 0.0) | (as_float == 1.0))),
            f"{where}: {name} values must be 0 or 1")
    return as_float


# ---------------------------------------------------------------- benchmark noise (q48)


def standard_error(p: float, n: int) -> float:
    """Standard error of an accuracy ``p`` measured on ``n`` independent items.

    ``SE = √(p(1 − p)/n)`` (binomial proportion; q48). It is largest at p = 0.5, which is the
    value that reproduces the chapter's intervals: 1.96·√(0.25/164) = 7.65 pp on HumanEval and
    1.96·√(0.25/30) = 17.9 pp on AIME.
    """
    p = _probability("standard_error", "p", p)
    n = _integer("standard_error", "n", n, 1)
    return math.sqrt(p * (1.0 - p) / n)


def confidence_interval(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Normal-approximation (Wald) interval ``p ± z·SE`` with ``SE = √(p(1 − p)/n)`` (q48).

    ``z = 1.96`` gives 95 %. The interval is not clipped to [0, 1], so ``high − low = 2·z·SE``
    always; near p = 0 or 1 and for small n the Wald interval is poor (use the bootstrap or a
    Wilson interval there).
    """
    z = _finite("confidence_interval", "z", z)
    require(z > 0, f"confidence_interval: z must be in (0, ∞), got {z!r}")
    half = z * standard_error(p, n)
    return p - half, p + half


def difference_standard_error(p1: float, p2: float, n: int) -> float:
    """Standard error of the difference of two accuracies measured independently on n items.

    ``√(SE₁² + SE₂²)`` (independent errors add in quadrature); with p1 = p2 it is ``SE·√2``, the
    chapter's "the difference of two models is √2 times noisier" (q48). Two models scored on the
    same items are correlated, and :func:`paired_bootstrap` measures that directly.
    """
    where = "difference_standard_error"
    p1 = _probability(where, "p1", p1)
    p2 = _probability(where, "p2", p2)
    n = _integer(where, "n", n, 1)
    return math.sqrt(p1 * (1.0 - p1) / n + p2 * (1.0 - p2) / n)


@dataclass(frozen=True)
class PairedBootstrap:
    """Result of :func:`paired_bootstrap`; differences are accuracy(A) − accuracy(B)."""

    mean_difference: float  # observed mean(A) − mean(B) on the given items
    low: float  # lower end of the percentile interval of the resampled differences
    high: float  # upper end
    share_a_not_better: float  # share of resamples with difference ≤ 0 (A ≤ B)
    resamples: int
    level: float  # coverage of [low, high], e.g. 0.95


def paired_bootstrap(correct_a: Sequence[float] | np.ndarray,
                     correct_b: Sequence[float] | np.ndarray, *,
                     resamples: int = 10_000, rng: np.random.Generator,
                     level: float = 0.95) -> PairedBootstrap:
    """Paired bootstrap of the accuracy difference of models A and B on the same items (q48).

    ``correct_a[i]`` and ``correct_b[i]`` are 0/1 for item i. Each resample draws n items with
    replacement and keeps both models' results on each drawn item, so the correlation between
    the models is preserved. The per-item difference ``d = a − b`` takes the values −1, 0, +1,
    so the resampled mean of d depends only on how many of each were drawn; those counts are
    drawn as one multinomial (n, shares of −1/0/+1), which has exactly the distribution of
    index resampling at O(resamples) cost.

    The interval is the percentile interval at ``level`` with nearest-rank quantiles (chapter
    3.1.2): the ⌈α/2·R⌉-th and ⌈(1 − α/2)·R⌉-th smallest of the R resampled differences.
    ``share_a_not_better`` is the share of resamples with mean(A) ≤ mean(B).
    """
    where = "paired_bootstrap"
    a = _binary(where, "correct_a", correct_a)
    b = _binary(where, "correct_b", correct_b)
    require(a.size == b.size, f"{where}: correct_a and correct_b must have the same length "
            f"(the same items), got {a.size} and {b.size}")
    resamples = _integer(where, "resamples", resamples, 1)
    require(isinstance(rng, np.random.Generator),
            f"{where}: rng must be a numpy.random.Generator, got {type(rng).__name__}")
    level = float(level)
    require(0.0 < level < 1.0, f"{where}: level must be in (0, 1), got {level!r}")

    n = a.size
    d = a - b
    shares = np.array([np.sum(d < 0), np.sum(d == 0), np.sum(d > 0)], dtype=np.float64) / n
    counts = rng.multinomial(n, shares, size=resamples)
    diffs = np.sort((counts[:, 2] - counts[:, 0]) / n)
    alpha = 1.0 - level
    low = float(diffs[nearest_rank(resamples, alpha / 2) - 1])
    high = float(diffs[nearest_rank(resamples, 1.0 - alpha / 2) - 1])
    return PairedBootstrap(mean_difference=float(d.mean()), low=low, high=high,
                           share_a_not_better=float(np.mean(diffs <= 0.0)),
                           resamples=resamples, level=level)


# ---------------------------------------------------------------- sampling metrics (q50)


MAX_SAMPLES_PER_PROBLEM = 10_000_000
"""Most samples n of one problem pass@k and pass^k take (their products run over up to n
terms)."""


def _counts(where: str, n: int, c: int, k: int) -> tuple[int, int, int]:
    n = _integer(where, "n", n, 1, MAX_SAMPLES_PER_PROBLEM)
    c = _integer(where, "c", c, 0, n)
    k = _integer(where, "k", k, 1, n)
    return n, c, k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct: ``1 − C(n − c, k)/C(n, k)``.

    The probability that at least one of k samples drawn without replacement from the n is
    correct (q50; Chen et al. 2021). Computed in the numerically stable product form
    ``1 − ∏_{i=n−c+1}^{n} (1 − k/i)``, and 1 when ``n − c < k``. n = 10, c = 2, k = 5 → 0.778.
    """
    n, c, k = _counts("pass_at_k", n, c, k)
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k from n samples of which c are correct: ``C(c, k)/C(n, k)``.

    The probability that all k of k samples drawn without replacement are correct, i.e. the
    reliability of k independent attempts (q50: "are all k attempts correct"). Computed as
    ``∏_{i=0}^{k−1} (c − i)/(n − i)``, and 0 when ``c < k``.
    """
    n, c, k = _counts("pass_hat_k", n, c, k)
    if c < k:
        return 0.0
    product = 1.0
    for i in range(k):
        product *= (c - i) / (n - i)
    return product


def maj_at_k(answers: Sequence[Hashable], correct: Hashable, k: int | None = None) -> float:
    """maj@k: is the most frequent of the first k answers the correct one (q50)?

    Majority vote without a verifier over ``answers[:k]`` (all answers when k is None); answers
    are compared with ``==`` after extraction, so normalise them first. ``None`` is an
    abstention (an answer that could not be extracted) and does not vote; if every answer
    abstains the result is 0.

    Tie rule: when several answers share the top count, the result is ``1/(number tied)`` if the
    correct answer is among them and 0 otherwise, i.e. the expected score of breaking the tie
    uniformly at random. Without ties the result is 1 or 0. Averaging over problems gives the
    benchmark's maj@k.
    """
    where = "maj_at_k"
    require(not isinstance(answers, str),
            f"{where}: answers must be a sequence of answers, not one string")
    answers = list(answers)
    require(len(answers) >= 1, f"{where}: answers must hold at least 1 answer, got 0")
    require(correct is not None, f"{where}: correct must be an answer, got None")
    if k is not None:
        k = _integer(where, "k", k, 1, len(answers))
        answers = answers[:k]
    votes = Counter(answer for answer in answers if answer is not None)
    if not votes:
        return 0.0
    top = max(votes.values())
    leaders = [answer for answer, count in votes.items() if count == top]
    return 1.0 / len(leaders) if correct in leaders else 0.0


# ---------------------------------------------------------------- language-model loss (q4)


def total_loss_nats(mean_loss_per_token: float, n_tokens: int) -> float:
    """Total cross-entropy of a text in nats: ``mean loss per token × number of tokens`` (q4).

    Self-check 12: 2.0 nats/token × 250 tokens = 500 nats beats 1.6 × 400 = 640 nats on the
    same text, although the second model has the lower loss per token.
    """
    where = "total_loss_nats"
    loss = _finite(where, "mean_loss_per_token", mean_loss_per_token)
    require(loss >= 0, f"{where}: mean_loss_per_token must be in [0, ∞) nats, got {loss!r}")
    n_tokens = _integer(where, "n_tokens", n_tokens, 1)
    return loss * n_tokens


def bits_per_byte(total_loss_nats: float, n_bytes: int) -> float:
    """Bits per byte: ``total cross-entropy in nats / (ln 2 · bytes of the text)`` (q4).

    Unlike perplexity or loss per token it does not depend on the tokenizer, so it compares
    models with different vocabularies on the same text.
    """
    where = "bits_per_byte"
    total = _finite(where, "total_loss_nats", total_loss_nats)
    require(total >= 0, f"{where}: total_loss_nats must be in [0, ∞), got {total!r}")
    n_bytes = _integer(where, "n_bytes", n_bytes, 1)
    return total / (math.log(2.0) * n_bytes)


# ---------------------------------------------------------------- preference and RL (q31-q34)


def dpo_loss(policy_logratio_chosen: float, policy_logratio_rejected: float,
             beta: float = 0.1) -> float:
    """DPO loss of one pair: ``−log σ(β[(log πθ/πref)_w − (log πθ/πref)_l])`` (q31).

    The arguments are the log-ratios ``log πθ(y|x) − log πref(y|x)`` of the chosen (w) and the
    rejected (l) answer, summed over the answer's tokens. At step 0 the policy equals the
    reference, both log-ratios are 0 and the loss is ln 2 ≈ 0.693 for every β. Computed as the
    softplus ``log(1 + e^{−x})`` in an overflow-free form.
    """
    where = "dpo_loss"
    chosen = _finite(where, "policy_logratio_chosen", policy_logratio_chosen)
    rejected = _finite(where, "policy_logratio_rejected", policy_logratio_rejected)
    beta = _finite(where, "beta", beta)
    require(beta > 0, f"{where}: beta must be in (0, ∞), got {beta!r}")
    x = beta * (chosen - rejected)
    # −log σ(x) = log(1 + e^{−x}) = max(−x, 0) + log1p(e^{−|x|})
    return max(-x, 0.0) + math.log1p(math.exp(-abs(x)))


def grpo_advantages(rewards: Sequence[float] | np.ndarray,
                    std: Literal["population", "sample"] = "population",
                    eps: float = 0.0) -> np.ndarray:
    """GRPO group-relative advantages ``A_i = (r_i − mean(r))/(std(r) + eps)`` (q33).

    ``std="population"`` divides the variance by G (self-check 5: rewards [1, 0, 0, 0] give the
    correct answer 0.75/0.433 = 1.73); ``"sample"`` divides by G − 1 (torch's default, giving
    1.5). A degenerate group, where all rewards are equal, has no signal: the advantages are
    zeros (q34), with no division by zero even when eps = 0.
    """
    where = "grpo_advantages"
    r = np.asarray(rewards, dtype=np.float64)
    require(r.ndim == 1 and r.size >= 1,
            f"{where}: rewards must be a non-empty 1-D sequence, got shape {r.shape}")
    require(bool(np.all(np.isfinite(r))), f"{where}: rewards must be finite numbers")
    require(std in ("population", "sample"),
            f"{where}: std must be 'population' or 'sample', got {std!r}")
    eps = _finite(where, "eps", eps)
    require(eps >= 0, f"{where}: eps must be in [0, ∞), got {eps!r}")
    ddof = 1 if std == "sample" else 0
    require(r.size > ddof, f"{where}: std='sample' needs at least 2 rewards, got {r.size}")
    if bool(np.all(r == r[0])):
        return np.zeros_like(r)
    return (r - r.mean()) / (float(r.std(ddof=ddof)) + eps)


def grpo_signal_probability(p: float, group_size: int) -> float:
    """Probability that a GRPO group of G answers is not degenerate: ``1 − p^G − (1 − p)^G``.

    p is the model's accuracy on the prompt; a group where all G answers are right (p^G) or all
    wrong ((1 − p)^G) has zero advantages and no gradient (q34). p = 0.1, G = 8 → 0.57.
    """
    where = "grpo_signal_probability"
    p = _probability(where, "p", p)
    g = _integer(where, "group_size", group_size, 1)
    return max(0.0, 1.0 - p**g - (1.0 - p) ** g)


def expected_generations_per_useful_group(p: float, group_size: int) -> float:
    """Expected answers generated per non-degenerate group: ``G / (1 − p^G − (1 − p)^G)``.

    Groups are independent, so the number of groups until one has signal is geometric with
    mean ``1/probability`` and each costs G generations (q34, the cost DAPO's dynamic sampling
    pays). p = 0.1, G = 8 → 8/0.5695 = 14.0. Raises when the probability is 0 (p = 0, p = 1 or
    G = 1): no group ever has signal.
    """
    where = "expected_generations_per_useful_group"
    p = _probability(where, "p", p)
    g = _integer(where, "group_size", group_size, 1)
    probability = grpo_signal_probability(p, g)
    require(probability > 0, f"{where}: no group has signal at p={p} and group_size={g}; "
            "needs p in (0, 1) and group_size in [2, ∞)")
    return g / probability
