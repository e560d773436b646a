"""The question bank's attention score variance (q6, with a seeded Monte Carlo) and the Switch
load-balancing loss (q17), against the bank's numbers or a hand derivation."""

import math

import numpy as np
import pytest

from napkin.accounting.attention_scale import score_scale
from napkin.accounting.balance_loss import switch_balance_loss
from napkin.errors import NapkinError


def test_q6_variance_and_scale():
    # q6: "Var(q·k) = d_k. При d_k = 128 стандартное отклонение оценок около 11"
    s = score_scale(128)
    assert s.score_var == 128 and round(s.score_std) == 11
    assert s.scale == pytest.approx(1 / math.sqrt(128)) and s.scaled_var == 1.0
    # hand: σ_q² = 2, σ_k² = 0.5, d_k = 64 → 64·2·0.5 = 64; scaled 1
    assert score_scale(64, 2.0, 0.5).score_var == 64.0


def test_q6_monte_carlo():
    rng = np.random.default_rng(0)
    d_k, n = 128, 200_000
    q, k = rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k))
    scores = (q * k).sum(axis=1)
    assert scores.var() == pytest.approx(score_scale(d_k).score_var, rel=0.02)
    assert (scores / math.sqrt(d_k)).var() == pytest.approx(1.0, rel=0.02)


def test_q17_switch_loss():
    # hand: uniform over N = 4 → α·4·Σ(¼·¼)·4 terms = α·4·(4/16) = α
    assert switch_balance_loss([0.25] * 4, [0.25] * 4, 0.01) == pytest.approx(0.01)
    # collapse onto one expert: α·N·1·1 = 4α
    assert switch_balance_loss([1, 0, 0, 0], [1, 0, 0, 0], 0.01) == pytest.approx(0.04)
    # hand: f = (0.5, 0.3, 0.2), P = (0.4, 0.4, 0.2): 3·(0.2 + 0.12 + 0.04) = 1.08 → α·1.08
    assert switch_balance_loss([0.5, 0.3, 0.2], [0.4, 0.4, 0.2], 1.0) == pytest.approx(1.08)
    with pytest.raises(NapkinError, match=r"^p: one probability per expert"):
        switch_balance_loss([0.5, 0.5], [1.0], 0.01)
    with pytest.raises(NapkinError, match=r"^f: the shares must sum to 1"):
        switch_balance_loss([0.5, 0.6], [0.5, 0.5], 0.01)
