"""Prediction targets per sequence of the two pretraining objectives (question bank q5, q12).

A causal (decoder-only) LM predicts every next token: a sequence of T tokens gives ``T − 1``
loss terms (T when a BOS token precedes it, so the first token is predicted too). A masked LM
(BERT, Devlin et al. 2018) predicts only the tokens it masked, a share ``mask_rate`` (15 %) of
them: ``mask_rate·T`` terms on average. The bank's example: from 1000 tokens a decoder gets 999
examples, BERT about 150.
"""

import math
from dataclasses import dataclass

from napkin.errors import require

BERT_MASK_RATE = 0.15
"""Share of tokens BERT selects for prediction (Devlin et al. 2018, §3.1)."""


@dataclass(frozen=True)
class ObjectiveTargets:
    """Loss terms per sequence of ``seq_tokens`` tokens under each objective."""

    seq_tokens: int
    mask_rate: float
    bos: bool

    @property
    def causal_targets(self) -> int:
        """Next-token targets: T − 1, or T with a BOS token in front."""
        return self.seq_tokens if self.bos else self.seq_tokens - 1

    @property
    def masked_targets(self) -> float:
        """Expected masked-LM targets: mask_rate·T."""
        return self.mask_rate * self.seq_tokens

    @property
    def ratio(self) -> float:
        """Causal targets per masked-LM target (mask_rate > 0 and T ≥ 1: never a zero
        divisor)."""
        return self.causal_targets / self.masked_targets


def objective_targets(seq_tokens: int, mask_rate: float = BERT_MASK_RATE,
                      bos: bool = False) -> ObjectiveTargets:
    """The :class:`ObjectiveTargets` of a ``seq_tokens``-token sequence (≥ 2 without BOS, so a
    causal LM has a target; ≥ 1 with it) and a masked share ``mask_rate`` in (0, 1]."""
    require(seq_tokens >= (1 if bos else 2),
            f"seq: must be an integer >= {1 if bos else 2}, got {seq_tokens}")
    require(math.isfinite(mask_rate) and 0 < mask_rate <= 1,
            f"mask-rate: must be in (0, 1], got {mask_rate}")
    return ObjectiveTargets(seq_tokens, mask_rate, bos)
