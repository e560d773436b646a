"""Expert load under expert parallelism: a Monte Carlo of top-k routing, hand-worked small
cases and the moments of one rank's load."""

import math
import time

import numpy as np
import pytest

from napkin.accounting.forward import experts_touched
from napkin.accounting.routing import (
    expected_destination_ranks,
    expected_max_rank_experts_touched,
    expected_max_rank_tokens,
    imbalance,
    rank_tokens_pmf,
)
from napkin.errors import NapkinError


def _sample_top_k(rng: np.random.Generator, n: int, num_experts: int, k: int) -> np.ndarray:
    """``n`` tokens × ``k`` distinct experts, uniform, each row sorted: the i-th pick is
    uniform over the ``E − i`` experts not yet picked (a draw from ``[0, E − i)`` shifted past
    the picked ones, in ascending order)."""
    chosen = np.empty((n, 0), dtype=np.int64)
    for i in range(k):
        x = rng.integers(0, num_experts - i, size=n)
        for j in range(i):
            x += x >= chosen[:, j]
        chosen = np.sort(np.concatenate([chosen, x[:, None]], axis=1), axis=1)
    return chosen


def _monte_carlo(num_experts: int, k: int, ranks: int, tokens: int, trials: int,
                 seed: int = 0) -> dict[str, tuple[float, float]]:
    """(mean, standard error) over ``trials`` routed steps of the busiest rank's assignments
    and distinct experts touched, and over every token of its destination ranks."""
    rng = np.random.default_rng(seed)
    per_rank = num_experts // ranks
    experts = _sample_top_k(rng, trials * tokens, num_experts, k)
    step = np.repeat(np.arange(trials), tokens * k)
    per_expert = np.bincount(step * num_experts + experts.ravel(),
                             minlength=trials * num_experts).reshape(trials, ranks, per_rank)
    busiest = per_expert.sum(axis=2).max(axis=1)
    touched = (per_expert > 0).sum(axis=2).max(axis=1)
    destinations = 1 + (np.diff(experts // per_rank, axis=1) != 0).sum(axis=1)  # rows sorted

    def stat(x: np.ndarray) -> tuple[float, float]:
        return float(x.mean()), float(x.std() / math.sqrt(len(x)))

    return {"tokens": stat(busiest), "touched": stat(touched), "ranks": stat(destinations)}


# (E, k, R, T, trials): DeepSeek-V3-like at a prefill chunk and a decode batch, E 128 / k 4 on
# 4 ranks, Mixtral-like on 2 and on 8 ranks. Trials keep every case near a million tokens; at
# T = 2048 400 steps already put the standard error of the busiest load at 0.05 %.
CASES = [(256, 8, 8, 2048, 400), (256, 8, 8, 64, 15_000), (128, 4, 4, 256, 3_000),
         (128, 4, 4, 16, 20_000), (8, 2, 2, 16, 20_000), (8, 2, 8, 16, 20_000)]


@pytest.mark.parametrize(("num_experts", "k", "ranks", "tokens", "trials"), CASES)
def test_busiest_rank_matches_a_monte_carlo_of_top_k_routing(num_experts, k, ranks, tokens,
                                                             trials):
    """Tolerance: 1 % plus 4 standard errors of the Monte Carlo. The busiest load's formula
    (independent ranks, rescaled by √(R/(R − 1)) for the loads' fixed sum) measured within
    0.1 % here but at T = 16 for E 128, k 4, R 4 (0.3 %) and E 8, k 2, R 8 (0.6 %), loads of 16
    tokens being far from normal; without the rescaling it falls 0.2–3.3 % short. The touched
    experts (each rank binomial, ranks independent) measured within 0.15 %. Destination ranks
    are exact: 4 standard errors."""
    mc = _monte_carlo(num_experts, k, ranks, tokens, trials)
    mean, se = mc["tokens"]
    assert expected_max_rank_tokens(num_experts, k, ranks, tokens) == pytest.approx(
        mean, abs=0.01 * mean + 4 * se)
    mean, se = mc["touched"]
    assert expected_max_rank_experts_touched(num_experts, k, ranks, tokens) == pytest.approx(
        mean, abs=0.01 * mean + 4 * se)
    mean, se = mc["ranks"]
    assert expected_destination_ranks(num_experts, k, ranks) == pytest.approx(
        mean, abs=4 * se + 1e-12)


def test_one_rank_holds_every_assignment_and_every_touched_expert():
    assert expected_max_rank_tokens(256, 8, 1, 2048) == 2048 * 8
    assert imbalance(256, 8, 1, 2048) == 1.0
    for tokens in (1, 64, 2048):
        assert expected_max_rank_experts_touched(256, 8, 1, tokens) == experts_touched(
            256, 8, tokens)
    assert rank_tokens_pmf(256, 8, 1, 3).tolist() == [0.0] * 24 + [1.0]


def test_no_tokens_no_load():
    assert expected_max_rank_tokens(256, 8, 8, 0) == 0.0
    assert expected_max_rank_experts_touched(256, 8, 8, 0) == 0.0
    assert imbalance(256, 8, 8, 0) == 1.0
    assert rank_tokens_pmf(256, 8, 8, 0).tolist() == [1.0]


def test_one_token_on_a_rank_is_hypergeometric_by_hand():
    # E 4, k 2, R 2: a rank holds 2 of the 4 experts; C(2, j)·C(2, 2 − j)/C(4, 2), C(4, 2) = 6
    assert rank_tokens_pmf(4, 2, 2, 1) == pytest.approx([1 / 6, 4 / 6, 1 / 6], abs=1e-15)
    # two tokens: the convolution [1, 4, 1] * [1, 4, 1] / 36 = [1, 8, 18, 8, 1] / 36
    assert rank_tokens_pmf(4, 2, 2, 2) == pytest.approx(np.array([1, 8, 18, 8, 1]) / 36,
                                                        abs=1e-15)


def test_busiest_of_two_single_expert_ranks_by_hand():
    """E = R = 2, k = 1, T = 2: a rank's load is Binomial(2, 1/2), pmf [1/4, 1/2, 1/4], so
    independent ranks give E[max] = (1 − (1/4)²) + (1 − (3/4)²) = 1.375, and the fixed sum's
    rescaling 1 + √2·0.375 = 1.530. Exactly, by enumeration, the loads are (2, 0) or (0, 2)
    w.p. 1/2 and (1, 1) w.p. 1/2: E[max] = 1.5; independence is 8 % short, the rescaled
    formula 2 % over."""
    assert rank_tokens_pmf(2, 1, 2, 2) == pytest.approx([0.25, 0.5, 0.25], abs=1e-15)
    assert expected_max_rank_tokens(2, 1, 2, 2) == pytest.approx(1 + math.sqrt(2) * 0.375,
                                                                 rel=1e-12)
    assert expected_max_rank_tokens(2, 1, 2, 2) == pytest.approx(1.5, rel=0.025)
    assert imbalance(2, 1, 2, 2) == pytest.approx(1 + math.sqrt(2) * 0.375, rel=1e-12)


def test_destination_ranks_by_hand():
    # E 4, k 2, R 2: a rank misses both experts w.p. C(2, 2)/C(4, 2) = 1/6 → 2·(1 − 1/6) = 5/3
    assert expected_destination_ranks(4, 2, 2) == pytest.approx(5 / 3, rel=1e-15)
    # one expert per rank: k distinct experts are k distinct ranks
    assert expected_destination_ranks(8, 2, 8) == pytest.approx(2.0, rel=1e-15)
    assert expected_destination_ranks(256, 8, 1) == 1.0
    # DeepSeek-V3, 8 ranks of 32: 8·(1 − C(224, 8)/C(256, 8))
    assert expected_destination_ranks(256, 8, 8) == pytest.approx(
        8 * (1 - math.comb(224, 8) / math.comb(256, 8)), rel=1e-13)


def _hypergeometric_variance(num_experts: int, k: int, ranks: int) -> float:
    """One token's assignments on a rank of m = E/R experts: k·(m/E)·(1 − m/E)·(E − k)/(E − 1)."""
    share = (num_experts // ranks) / num_experts
    return k * share * (1 - share) * (num_experts - k) / (num_experts - 1)


@pytest.mark.parametrize(("num_experts", "k", "ranks", "tokens"),
                         [(256, 8, 8, 1), (256, 8, 8, 2048), (256, 8, 8, 65_536),
                          (8, 2, 2, 7), (128, 4, 4, 1000), (160, 6, 20, 333), (16, 16, 4, 5),
                          (16, 12, 2, 9)])
def test_rank_load_moments(num_experts, k, ranks, tokens):
    """Sum 1, mean T·k/R, variance T·k·(m/E)·(1 − m/E)·(E − k)/(E − 1)."""
    pmf = rank_tokens_pmf(num_experts, k, ranks, tokens)
    n = np.arange(len(pmf))
    mean = float(n @ pmf)
    assert pmf.min() >= 0.0 and pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert len(pmf) <= tokens * min(k, num_experts // ranks) + 1
    assert mean == pytest.approx(tokens * k / ranks, rel=1e-12)
    assert float((n - mean) ** 2 @ pmf) == pytest.approx(
        tokens * _hypergeometric_variance(num_experts, k, ranks), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("tokens", [1_000_000, 1_000_000_000])
def test_busiest_load_tends_to_the_normal_maximum(tokens):
    """Large T, loads normal: E[max] = T·k/R + √(R/(R − 1))·σ·e_R with σ² = T·var(X₁) and
    e_8 = 1.42360 the expected largest of 8 standard normals (Harter's tables). T = 10⁹ takes
    the normal branch (σ ≈ 29,000)."""
    sigma = math.sqrt(tokens * _hypergeometric_variance(256, 8, 8))
    excess = expected_max_rank_tokens(256, 8, 8, tokens) - tokens
    assert excess == pytest.approx(math.sqrt(8 / 7) * sigma * 1.42360, rel=2e-3)


@pytest.mark.parametrize(("num_experts", "k", "ranks"),
                         [(256, 8, 8), (256, 8, 64), (8, 2, 2), (8, 2, 8), (128, 4, 4),
                          (16, 12, 2), (16, 16, 4), (4, 1, 4)])
@pytest.mark.parametrize("tokens", [1, 2, 5, 64, 2048])
def test_bounds(num_experts, k, ranks, tokens):
    m = num_experts // ranks
    busiest = expected_max_rank_tokens(num_experts, k, ranks, tokens)
    assert tokens * k / ranks - 1e-9 <= busiest <= min(tokens * k, tokens * min(k, m))
    assert imbalance(num_experts, k, ranks, tokens) >= 1.0 - 1e-12
    touched = expected_max_rank_experts_touched(num_experts, k, ranks, tokens)
    assert experts_touched(num_experts, k, tokens) / ranks - 1e-9 <= touched <= m
    assert 1.0 <= expected_destination_ranks(num_experts, k, ranks) <= min(k, ranks) + 1e-12


def test_large_batches_are_fast():
    start = time.perf_counter()
    expected_max_rank_tokens(256, 8, 8, 65_536)
    rank_tokens_pmf(256, 8, 8, 65_536)
    expected_max_rank_tokens(256, 8, 8, 1_000_000)
    assert time.perf_counter() - start < 1.0  # about 10 ms when measured


@pytest.mark.parametrize(("args", "field"),
                         [((0, 1, 1, 1), "num_experts"), ((8, 0, 2, 1), "top_k"),
                          ((8, 9, 2, 1), "top_k"), ((8, 2, 0, 1), "ranks"),
                          ((8, 2, 3, 1), "ranks"), ((8, 2, 2, -1), "tokens"),
                          ((8, 2, 2, 1.5), "tokens")])
def test_bad_arguments_name_the_field(args, field):
    for fn in (rank_tokens_pmf, expected_max_rank_tokens, imbalance,
               expected_max_rank_experts_touched):
        with pytest.raises(NapkinError, match=field):
            fn(*args)
    if field != "tokens":
        with pytest.raises(NapkinError, match=field):
            expected_destination_ranks(*args[:3])
