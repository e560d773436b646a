"""Evaluation statistics against the question bank (q4, q31, q33, q34, q48, q50, self-check) and
against independent derivations: brute-force enumeration, hand arithmetic, binomial quantiles."""

import math
from itertools import combinations

import numpy as np
import pytest
from scipy.stats import binom

from napkin.errors import NapkinError
from napkin.evaluation import (
    PairedBootstrap,
    bits_per_byte,
    confidence_interval,
    difference_standard_error,
    dpo_loss,
    expected_generations_per_useful_group,
    grpo_advantages,
    grpo_signal_probability,
    maj_at_k,
    paired_bootstrap,
    pass_at_k,
    pass_hat_k,
    standard_error,
    total_loss_nats,
)

# ---------------------------------------------------------------- q48: benchmark noise


def test_q48_interval_half_widths_reproduce_at_p_one_half():
    # the bank prints ±7.7 pp (HumanEval, 164 problems) and ±18 pp (AIME, 30 problems);
    # p = 0.5 (worst case): 1.96·√(0.25/164) = 0.0765, 1.96·√(0.25/30) = 0.1789
    low, high = confidence_interval(0.5, 164)
    assert round((high - low) / 2 * 100, 1) == 7.7
    low, high = confidence_interval(0.5, 30)
    assert round((high - low) / 2 * 100) == 18
    assert (high - low) / 2 == pytest.approx(0.17892, abs=1e-5)


def test_standard_error_by_hand():
    assert standard_error(0.5, 100) == pytest.approx(0.05)  # √(0.25/100)
    assert standard_error(0.9, 100) == pytest.approx(0.03)  # √(0.09/100)
    assert standard_error(0.0, 10) == 0.0
    assert standard_error(1.0, 10) == 0.0
    # p = 0.5 is the worst case: any other p gives a smaller error
    assert all(standard_error(p, 164) < standard_error(0.5, 164) for p in (0.1, 0.3, 0.7, 0.99))


def test_interval_is_symmetric_wald_and_z_scales_it():
    low, high = confidence_interval(0.8, 100, z=2.0)  # SE = √(0.16/100) = 0.04
    assert (low, high) == (pytest.approx(0.72), pytest.approx(0.88))


def test_difference_is_sqrt_two_noisier():
    # q48: "the difference of two models is √2 times noisier"
    assert difference_standard_error(0.5, 0.5, 164) == pytest.approx(
        math.sqrt(2) * math.sqrt(0.25 / 164))
    assert 1.96 * difference_standard_error(0.5, 0.5, 164) * 100 == pytest.approx(10.82, abs=0.01)
    # unequal accuracies: √(0.16/100 + 0.09/100) = √0.0025 = 0.05
    assert difference_standard_error(0.8, 0.9, 100) == pytest.approx(0.05)


# ---------------------------------------------------------------- q48: paired bootstrap


def test_paired_bootstrap_identical_models_have_zero_difference():
    a = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1]
    result = paired_bootstrap(a, list(a), resamples=500, rng=np.random.default_rng(0))
    assert isinstance(result, PairedBootstrap)
    assert (result.mean_difference, result.low, result.high) == (0.0, 0.0, 0.0)
    assert result.share_a_not_better == 1.0  # every resample has A = B, hence A ≤ B
    assert (result.resamples, result.level) == (500, 0.95)


def test_paired_bootstrap_a_always_better():
    # A right and B wrong on every item: each resample has difference exactly 1
    result = paired_bootstrap(np.ones(50), np.zeros(50), resamples=200,
                              rng=np.random.default_rng(1))
    assert (result.mean_difference, result.low, result.high) == (1.0, 1.0, 1.0)
    assert result.share_a_not_better == 0.0


def test_paired_bootstrap_matches_binomial_quantiles():
    # 100 items; A right on all, B right on the first 80: per-item differences are 20 ones and
    # 80 zeros, so a resampled mean difference is Binomial(100, 0.2)/100. Its 2.5 % and 97.5 %
    # quantiles are 12 and 28 (scipy's binomial ppf), and P(X = 0) = 0.8^100 ≈ 2e-10.
    a = np.ones(100, dtype=int)
    b = np.array([1] * 80 + [0] * 20)
    result = paired_bootstrap(a, b, rng=np.random.default_rng(2))
    assert result.mean_difference == pytest.approx(0.2)
    assert binom.ppf(0.025, 100, 0.2) == 12 and binom.ppf(0.975, 100, 0.2) == 28
    assert result.low == pytest.approx(0.12, abs=0.011)
    assert result.high == pytest.approx(0.28, abs=0.011)
    assert result.share_a_not_better == 0.0
    assert result.resamples == 10_000


def test_paired_bootstrap_agrees_with_naive_index_resampling():
    # A wins on 15 items, B on 10, they agree on 75: compare with a plain index bootstrap
    a = np.array([1] * 15 + [0] * 10 + [1] * 40 + [0] * 35)
    b = np.array([0] * 15 + [1] * 10 + [1] * 40 + [0] * 35)
    result = paired_bootstrap(a, b, resamples=20_000, rng=np.random.default_rng(3))
    rng = np.random.default_rng(4)
    idx = rng.integers(0, a.size, size=(20_000, a.size))
    naive = (a[idx] - b[idx]).mean(axis=1)
    assert result.mean_difference == pytest.approx(0.05)
    assert result.low == pytest.approx(np.quantile(naive, 0.025), abs=0.011)
    assert result.high == pytest.approx(np.quantile(naive, 0.975), abs=0.011)
    assert result.share_a_not_better == pytest.approx(np.mean(naive <= 0), abs=0.02)


def test_paired_bootstrap_is_reproducible_with_the_same_seed():
    a = [1, 1, 0, 1, 0, 1, 1, 0]
    b = [0, 1, 0, 1, 1, 0, 1, 0]
    first = paired_bootstrap(a, b, resamples=1000, rng=np.random.default_rng(7))
    second = paired_bootstrap(a, b, resamples=1000, rng=np.random.default_rng(7))
    assert first == second


# ---------------------------------------------------------------- q50: pass@k, pass^k, maj@k


def _brute_force(n: int, c: int, k: int) -> tuple[float, float]:
    """(share of k-subsets with at least one correct, share with all correct)."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    any_ok = sum(any(samples[i] for i in s) for s in subsets)
    all_ok = sum(all(samples[i] for i in s) for s in subsets)
    return any_ok / len(subsets), all_ok / len(subsets)


def test_q50_pass_at_5():
    # 1 − C(8,5)/C(10,5) = 1 − 56/252 = 0.778
    assert round(pass_at_k(10, 2, 5), 3) == 0.778
    assert pass_at_k(10, 2, 5) == pytest.approx(1 - 56 / 252)


def test_self_13_pass_at_2():
    # 1 − C(7,2)/C(10,2) = 1 − 21/45 = 0.533
    assert round(pass_at_k(10, 3, 2), 3) == 0.533


def test_pass_at_k_and_pass_hat_k_match_enumeration():
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                any_ok, all_ok = _brute_force(n, c, k)
                assert pass_at_k(n, c, k) == pytest.approx(any_ok, abs=1e-12), (n, c, k)
                assert pass_hat_k(n, c, k) == pytest.approx(all_ok, abs=1e-12), (n, c, k)


def test_pass_at_1_is_accuracy_and_large_n_is_stable():
    assert pass_at_k(200, 37, 1) == pytest.approx(37 / 200)
    assert pass_hat_k(200, 37, 1) == pytest.approx(37 / 200)
    # C(1000, 100) overflows a float; the product form does not
    assert pass_at_k(1000, 1, 100) == pytest.approx(0.1)  # one correct of n: k/n
    assert pass_hat_k(10, 3, 2) == pytest.approx(3 / 45)  # C(3,2)/C(10,2)
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 6, 5) == 1.0  # fewer than k wrong: every draw has a correct one


def test_maj_at_k():
    assert maj_at_k(["42", "41", "42", "7", "42"], "42") == 1.0
    assert maj_at_k(["41", "41", "42"], "42") == 0.0
    # only the first k answers vote
    assert maj_at_k(["41", "42", "42", "42"], "42", k=1) == 0.0
    assert maj_at_k(["41", "42", "42", "42"], "42", k=3) == 1.0
    # tie: expected score of a uniform random tie break
    assert maj_at_k(["41", "42"], "42") == 0.5
    assert maj_at_k(["1", "2", "3", "3", "2", "1"], "3") == pytest.approx(1 / 3)
    assert maj_at_k(["1", "1", "2", "2", "3"], "3") == 0.0
    # None is an abstention and does not vote
    assert maj_at_k([None, None, None, "42"], "42") == 1.0
    assert maj_at_k([None, None], "42") == 0.0
    # maj@k can be wrong while pass@k is right: the correct answer is present but outvoted
    assert maj_at_k([5, 5, 7], 7) == 0.0


# ---------------------------------------------------------------- q4, self-12: bits per byte


def test_self_12_total_loss_decides():
    a = total_loss_nats(2.0, 250)
    b = total_loss_nats(1.6, 400)
    assert (a, b) == (pytest.approx(500.0), pytest.approx(640.0))
    assert a < b  # A is better although its loss per token is higher
    # on a 1,000-byte text: 500/(0.693147·1000) = 0.7213 and 640/693.147 = 0.9233 bits per byte
    assert bits_per_byte(a, 1000) == pytest.approx(0.72135, abs=1e-5)
    assert bits_per_byte(b, 1000) == pytest.approx(0.92333, abs=1e-5)


def test_bits_per_byte_by_hand():
    # a uniform model over 256 byte values, one token per byte: ln 256 nats per byte = 8 bits
    assert bits_per_byte(1000 * math.log(256), 1000) == pytest.approx(8.0)
    assert bits_per_byte(0.0, 5) == 0.0


# ---------------------------------------------------------------- q31, self-4: DPO


@pytest.mark.parametrize("beta", [0.01, 0.1, 0.5, 1.0, 10.0])
def test_dpo_loss_at_step_zero_is_ln_2_for_any_beta(beta: float):
    assert dpo_loss(0.0, 0.0, beta) == pytest.approx(math.log(2))
    assert round(dpo_loss(0.0, 0.0, beta), 3) == 0.693  # self-4
    # equal log-ratios (policy moved both answers alike) also leave the margin at zero
    assert dpo_loss(-1.3, -1.3, beta) == pytest.approx(math.log(2))


def test_dpo_loss_by_hand():
    # β = 0.1, log-ratios 2 and −3: margin 0.5, −log σ(0.5) = ln(1 + e^{−0.5}) = 0.474077
    assert dpo_loss(2.0, -3.0) == pytest.approx(0.474077, abs=1e-6)
    # the wrong order costs more: ln(1 + e^{0.5}) = 0.974077
    assert dpo_loss(-3.0, 2.0) == pytest.approx(0.974077, abs=1e-6)
    # huge margins neither overflow nor lose the linear tail
    assert dpo_loss(0.0, 10_000.0, beta=0.1) == pytest.approx(1000.0)
    assert dpo_loss(10_000.0, 0.0, beta=0.1) == pytest.approx(0.0, abs=1e-300)


# ---------------------------------------------------------------- q33, self-5: GRPO advantages


def test_self_5_grpo_advantage():
    # mean 0.25, population std √(0.1875) = 0.4330: (1 − 0.25)/0.4330 = 1.732
    adv = grpo_advantages([1, 0, 0, 0])
    assert round(float(adv[0]), 2) == 1.73
    assert adv == pytest.approx([math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3),
                                 -1 / math.sqrt(3)])
    # sample std (divide by G − 1) is √(0.25) = 0.5: 0.75/0.5 = 1.5
    assert grpo_advantages([1, 0, 0, 0], std="sample")[0] == pytest.approx(1.5)
    # eps enters the denominator
    assert grpo_advantages([1, 0], eps=0.5)[0] == pytest.approx(0.5 / 1.0)


def test_grpo_degenerate_group_gives_zeros():
    for rewards in ([1, 1, 1, 1], [0] * 8, [0.1, 0.1, 0.1], [0.7]):
        adv = grpo_advantages(rewards)
        assert adv.tolist() == [0.0] * len(rewards)
    assert grpo_advantages([1, 1], std="sample").tolist() == [0.0, 0.0]


# ---------------------------------------------------------------- q34: degenerate groups


def test_q34_signal_probability_and_cost():
    # 1 − 0.1^8 − 0.9^8 = 1 − 1e-8 − 0.43046721 = 0.56953278
    s = grpo_signal_probability(0.1, 8)
    assert round(s, 2) == 0.57
    assert s == pytest.approx(0.56953278, abs=1e-8)
    # groups until one has signal are geometric: 1/0.5695 = 1.756 groups of 8 = 14.05 answers
    assert expected_generations_per_useful_group(0.1, 8) == pytest.approx(8 / 0.56953278)
    assert expected_generations_per_useful_group(0.1, 8) == pytest.approx(14.047, abs=1e-3)


def test_signal_probability_by_enumeration():
    # sum the probability of every outcome of a group of 4 that has both a 1 and a 0
    p, g = 0.3, 4
    total = 0.0
    for outcome in range(2**g):
        ones = bin(outcome).count("1")
        if 0 < ones < g:
            total += p**ones * (1 - p) ** (g - ones)
    assert grpo_signal_probability(p, g) == pytest.approx(total)
    assert grpo_signal_probability(0.5, 2) == pytest.approx(0.5)  # HT or TH
    assert grpo_signal_probability(0.0, 8) == 0.0
    assert grpo_signal_probability(1.0, 8) == 0.0
    assert grpo_signal_probability(0.37, 1) == 0.0


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(("call", "needle"), [
    (lambda: standard_error(1.2, 10), "p must be in [0, 1]"),
    (lambda: standard_error(float("nan"), 10), "p must be in [0, 1]"),
    (lambda: standard_error(0.5, 0), "n must be an integer in [1, ∞)"),
    (lambda: standard_error(0.5, 10.0), "n must be an integer"),
    (lambda: confidence_interval(0.5, 10, z=0.0), "z must be in (0, ∞)"),
    (lambda: difference_standard_error(0.5, -0.1, 10), "p2 must be in [0, 1]"),
    (lambda: pass_at_k(0, 0, 1), "n must be an integer in [1, 10000000]"),
    (lambda: pass_at_k(10, 11, 5), "c must be an integer in [0, 10]"),
    (lambda: pass_at_k(10, 2, 11), "k must be an integer in [1, 10]"),
    (lambda: pass_at_k(10, 2, 0), "k must be an integer in [1, 10]"),
    (lambda: pass_hat_k(10, -1, 2), "c must be an integer in [0, 10]"),
    (lambda: pass_hat_k(10, True, 2), "c must be an integer"),
    (lambda: maj_at_k([], "a"), "at least 1 answer"),
    (lambda: maj_at_k(["a", "b"], "a", k=3), "k must be an integer in [1, 2]"),
    (lambda: maj_at_k("ab", "a"), "not one string"),
    (lambda: total_loss_nats(-1.0, 10), "mean_loss_per_token must be in [0, ∞)"),
    (lambda: total_loss_nats(1.0, 0), "n_tokens must be an integer in [1, ∞)"),
    (lambda: bits_per_byte(10.0, 0), "n_bytes must be an integer in [1, ∞)"),
    (lambda: bits_per_byte(float("inf"), 10), "total_loss_nats must be a finite number"),
    (lambda: dpo_loss(0.0, 0.0, beta=0.0), "beta must be in (0, ∞)"),
    (lambda: dpo_loss(float("nan"), 0.0), "policy_logratio_chosen must be a finite number"),
    (lambda: grpo_advantages([]), "rewards must be a non-empty 1-D sequence"),
    (lambda: grpo_advantages([1.0], std="sample"), "needs at least 2 rewards"),
    (lambda: grpo_advantages([1, 0], std="median"), "std must be 'population' or 'sample'"),
    (lambda: grpo_advantages([1, 0], eps=-1.0), "eps must be in [0, ∞)"),
    (lambda: grpo_advantages([1, float("nan")]), "rewards must be finite"),
    (lambda: grpo_signal_probability(1.5, 8), "p must be in [0, 1]"),
    (lambda: grpo_signal_probability(0.5, 0), "group_size must be an integer in [1, ∞)"),
    (lambda: expected_generations_per_useful_group(0.0, 8), "no group has signal"),
    (lambda: expected_generations_per_useful_group(1.0, 8), "no group has signal"),
    (lambda: expected_generations_per_useful_group(0.5, 1), "no group has signal"),
])
def test_bad_inputs_raise_one_line_napkin_errors(call, needle: str):
    with pytest.raises(NapkinError) as info:
        call()
    message = str(info.value)
    assert needle in message
    assert "\n" not in message


@pytest.mark.parametrize(("a", "b", "kwargs", "needle"), [
    ([1, 0, 1], [1, 0], {}, "same length"),
    ([1, 0, 2], [1, 0, 1], {}, "correct_a values must be 0 or 1"),
    ([1, 0, 1], [1, 0.5, 1], {}, "correct_b values must be 0 or 1"),
    ([], [], {}, "correct_a must be a non-empty 1-D sequence"),
    ([[1, 0]], [[1, 0]], {}, "correct_a must be a non-empty 1-D sequence"),
    (["1", "0"], [1, 0], {}, "correct_a must hold 0/1 numbers or bools"),
    ([1, 0], [1, 0], {"resamples": 0}, "resamples must be an integer in [1, ∞)"),
    ([1, 0], [1, 0], {"level": 1.0}, "level must be in (0, 1)"),
    ([1, 0], [1, 0], {"rng": 42}, "rng must be a numpy.random.Generator"),
])
def test_paired_bootstrap_errors(a, b, kwargs: dict, needle: str):
    arguments = {"rng": np.random.default_rng(0), **kwargs}
    with pytest.raises(NapkinError) as info:
        paired_bootstrap(a, b, **arguments)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)
