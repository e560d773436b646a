"""Prediction targets per sequence, causal LM against masked LM (question bank q12)."""

import pytest

from napkin.errors import NapkinError
from napkin.training.objectives import objective_targets


def test_q12_targets():
    # q12: "из 1000 токенов decoder-only получает 999 примеров, BERT — около 150"
    o = objective_targets(1000)
    assert o.causal_targets == 999 and o.masked_targets == pytest.approx(150)
    assert objective_targets(1000, bos=True).causal_targets == 1000
    with pytest.raises(NapkinError, match=r"^seq"):
        objective_targets(1)
