"""The building blocks of a decoder-only transformer, as napkin counts them.

A model is a tuple of :class:`Block` (one per decoder layer) plus embeddings, a final norm and an
LM head. Each block lists its matmuls as :class:`Linear` shapes; parameter counts, FLOPs and weight
bytes are all derived from these shapes, so there is one source of truth for every module's size.
"""

from dataclasses import dataclass
from enum import IntEnum, StrEnum


class OpKind(StrEnum):
    """What an operator of a model call is, for breakdowns."""

    EMBEDDING = "embedding"
    PROJECTION = "projection"
    ATTN_SCORE = "attention-score"
    ATTN_VALUE = "attention-value"
    FFN = "ffn"
    EXPERT = "expert"
    ROUTER = "router"
    NORM = "norm"
    LM_HEAD = "lm-head"


class Stage(IntEnum):
    """Order of data flow inside a block; ops of one stage read the same input.

    Backward needs an op's input gradient (dX) only if some trainable parameter sits at an
    earlier stage (or an earlier block), which is what these numbers decide.
    """

    ATTN_IN = 0
    ATTN_UP = 1
    SCORE = 2
    VALUE = 3
    ATTN_OUT = 4
    MLP_IN = 5
    MLP_OUT = 6


@dataclass(frozen=True)
class Linear:
    """A matmul ``y = x W (+ b)`` with ``W`` of shape ``in_features × out_features``."""

    name: str
    kind: OpKind
    in_features: int
    out_features: int
    bias: bool
    stage: Stage

    @property
    def params(self) -> int:
        """Weights plus bias elements."""
        return self.in_features * self.out_features + (self.out_features if self.bias else 0)

    @property
    def macs_per_token(self) -> int:
        """Multiply-adds per token through this matmul (bias adds are not counted)."""
        return self.in_features * self.out_features


@dataclass(frozen=True)
class Experts:
    """Routed experts of a MoE layer: ``num_experts`` copies of ``linears``, top-k per token."""

    num_experts: int
    num_active: int
    linears: tuple[Linear, ...]

    @property
    def params_per_expert(self) -> int:
        return sum(lin.params for lin in self.linears)

    @property
    def params(self) -> int:
        return self.num_experts * self.params_per_expert


@dataclass(frozen=True)
class AttentionShape:
    """Head geometry of one attention layer.

    ``k_elements`` and ``v_elements`` are the cached numbers per token per layer: GQA stores
    ``num_kv_heads·head_dim`` of each; MLA stores one latent of ``kv_lora_rank + qk_rope_head_dim``
    (counted as K, shared by V); ``latent_dim`` is that ``kv_lora_rank`` (0 for GQA).
    """

    kind: str
    num_heads: int
    num_kv_heads: int
    qk_head_dim: int
    v_head_dim: int
    k_elements: int
    v_elements: int
    latent_dim: int = 0

    @property
    def kv_elements_per_token(self) -> int:
        """Numbers cached per token in one layer."""
        return self.k_elements + self.v_elements


@dataclass(frozen=True)
class Block:
    """One decoder layer: attention (full or sliding ``window``), dense linears, MoE experts."""

    attention: AttentionShape
    window: int | None
    linears: tuple[Linear, ...]
    experts: Experts | None
    other_params: tuple[tuple[str, int], ...]

    @property
    def params(self) -> int:
        """All parameters of the layer."""
        routed = self.experts.params if self.experts else 0
        return sum(lin.params for lin in self.linears) + routed + self.norm_params

    @property
    def norm_params(self) -> int:
        """Parameters outside matmuls: norms, attention sinks, routing biases."""
        return sum(count for _, count in self.other_params)

    def params_by_part(self) -> dict[str, int]:
        """Parameters of the layer split into attention, MLP, shared/routed experts, router,
        norms (attention sinks and q/k/latent norms count as attention)."""
        parts = dict.fromkeys(
            ("attention", "mlp", "shared_experts", "routed_experts", "router", "norms"), 0
        )
        part_of_kind = {OpKind.PROJECTION: "attention", OpKind.FFN: "mlp",
                        OpKind.EXPERT: "shared_experts", OpKind.ROUTER: "router"}
        for lin in self.linears:
            parts[part_of_kind[lin.kind]] += lin.params
        if self.experts:
            parts["routed_experts"] = self.experts.params
        for name, count in self.other_params:
            part = "attention" if name.startswith("attn/") else "router" if name.startswith(
                "moe/") else "norms"
            parts[part] += count
        return parts

    @property
    def active_params(self) -> int:
        """Parameters one token uses: routed experts count only the top-k."""
        if self.experts is None:
            return self.params
        inactive = self.experts.num_experts - self.experts.num_active
        return self.params - inactive * self.experts.params_per_expert
