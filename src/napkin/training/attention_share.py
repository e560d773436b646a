"""What ``6ND`` leaves out at a long context: causal attention's QKᵀ and AV (question bank q18).

6ND counts 6 FLOPs per parameter per token; attention's score and value matmuls have no
parameters, so it misses them. For one sequence of T tokens they cost, forward and backward,
the itemized ``ATTN_SCORE`` + ``ATTN_VALUE`` ops of :func:`napkin.training.flops.train_flops`
(T(T+1)/2 causal pairs; 2·pairs·heads·head_dim FLOPs each for QKᵀ and AV per layer, ×3 for
forward + backward: 6·T(T+1)·H·Q·L for L full-attention layers). Their share is taken over
``6·N·T`` with N the active parameters without the embedding and head, as q18 does:
``(T+1)·H·Q·L / N``, which for a plain transformer (N ≈ 12·L·d², H·Q = d) is ≈ T/(12d):
8% at T = d = 4,096, 67% at 32K.
"""

from dataclasses import dataclass

from napkin.accounting.rules import train_flops_6nd
from napkin.specs.model import ModelSpec
from napkin.training.flops import TrainShape, train_flops


@dataclass(frozen=True)
class AttentionShare:
    """Attention FLOPs of one T-token sequence against 6·N·T."""

    context_tokens: int
    attention_flops: float
    """QKᵀ and AV, forward + backward, one sequence of ``context_tokens`` tokens."""
    six_nt_flops: float
    """``6·N·T`` with N the active parameters without embedding and head."""

    @property
    def share(self) -> float:
        """``attention_flops / six_nt_flops``."""
        return self.attention_flops / self.six_nt_flops


def matmul_params(model: ModelSpec) -> int:
    """Active parameters without the embedding table and the LM head: N of q18's share."""
    return model.active_params - model.embedding_params - model.lm_head_params


def attention_share(model: ModelSpec, context_tokens: int) -> AttentionShare:
    """Attention of one ``context_tokens``-token training sequence against 6·N·T (module
    docstring). No context limit is checked: past ``max_position_embeddings`` this is what the
    matmuls would cost if the model were extended to that length."""
    attn = train_flops(model, TrainShape((context_tokens,))).attention_flops
    return AttentionShare(context_tokens, attn,
                          train_flops_6nd(matmul_params(model), context_tokens))
