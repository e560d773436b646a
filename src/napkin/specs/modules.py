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
    HYPER_CONNECTION = "hyper-connection"


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


def gated_mlp(prefix: str, kind: OpKind, h: int, inter: int, bias: bool) -> tuple[Linear, ...]:
    """A gated (SwiGLU) MLP: gate and up ``h → inter``, down ``inter → h``."""
    return (
        Linear(f"{prefix}/gate", kind, h, inter, bias, Stage.MLP_IN),
        Linear(f"{prefix}/up", kind, h, inter, bias, Stage.MLP_IN),
        Linear(f"{prefix}/down", kind, inter, h, bias, Stage.MLP_OUT),
    )


@dataclass(frozen=True)
class Experts:
    """Routed experts of a MoE layer: ``num_experts`` copies of ``linears``, top-k per token.

    ``routing`` is ``top-k`` (a learned router picks the experts) or ``hash`` (DeepSeek-V4's
    first ``num_hash_layers`` layers: a fixed token-id → experts table picks them, the router
    only weighs them); the cost of a token is the same either way.
    """

    num_experts: int
    num_active: int
    linears: tuple[Linear, ...]
    routing: str = "top-k"

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
    (counted as K, shared by V); ``latent_dim`` is that ``kv_lora_rank`` (0 for GQA). DeepSeek-V4
    (``csa-hca``) stores one ``head_dim`` vector that is both K and V (counted as K). A
    linear-attention layer (``gdn``, see :class:`LinearAttention`) caches nothing per
    token (0 and 0); its heads are the value heads, its KV heads the q/k heads. The same holds
    for ``kda`` (Kimi Delta Attention), whose q/k and value heads are as many.
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
class CompressedKV:
    """A second, compressed KV stream of one layer (DeepSeek-V4's CSA and HCA layers).

    Every ``ratio`` tokens are pooled into one entry of ``entry_elements`` numbers (the layer's
    shared K=V head). A query attends to all entries (HCA, ``top_k`` None) or to the ``top_k``
    entries a lightweight indexer picks (CSA); the indexer scores every entry with
    ``index_heads`` heads of ``index_head_dim`` against its own cached key per entry
    (``index_head_dim`` numbers; 0 without an indexer). Both streams are cached per entry.
    """

    ratio: int
    entry_elements: int
    top_k: int | None = None
    index_heads: int = 0
    index_head_dim: int = 0

    @property
    def elements_per_entry(self) -> int:
        """Numbers cached per compressed entry: the KV entry plus the indexer's key."""
        return self.entry_elements + self.index_head_dim

    @property
    def attended_window(self) -> int | None:
        """Token span whose entries a query attends: ``ratio·top_k`` for CSA (a query reads at
        most ``top_k`` entries), None (everything) for HCA."""
        return None if self.top_k is None else self.ratio * self.top_k


RECURRENT_STATE_BYTES = 4.0
"""Bytes per number of a linear-attention layer's recurrent state: FP32, whatever the KV
format. The reference kernels (flash-linear-attention's ``chunk_gated_delta_rule`` and
``fused_recurrent_gated_delta_rule``, transformers' torch fallbacks) update the state in FP32;
SGLang keeps it in FP32 by default (``mamba_ssm_dtype``, env ``SGLANG_MAMBA_SSM_DTYPE``) and
Qwen3.5's configs ask for it (``"mamba_ssm_dtype": "float32"``). vLLM's default
(``mamba_ssm_cache_dtype=auto``) stores it in the model dtype, BF16: half these bytes. The
convolution state is stored in the KV format (both engines keep it in the activation dtype)."""


@dataclass(frozen=True)
class LinearAttention:
    """A linear-attention token mixer that keeps a fixed state per sequence instead of a KV
    cache: ``gdn`` (Gated DeltaNet, Qwen3-Next's ``linear_attention`` layers) or ``kda`` (Kimi
    Delta Attention, Kimi Linear's ``kda_layers``: the gated delta rule with a decay per key
    channel instead of per head, ``num_k_heads = num_v_heads``; its q, k and v convolutions are
    three separate depthwise convolutions, together the same ``conv_dim`` channels).

    Queries and keys have ``num_k_heads`` heads of ``key_head_dim``, values ``num_v_heads`` of
    ``value_head_dim`` (each q/k head serves ``num_v_heads / num_k_heads`` value heads). q, k and
    v pass a causal depthwise convolution of ``conv_kernel`` taps over ``conv_dim =
    2·num_k_heads·key_head_dim + num_v_heads·value_head_dim`` channels. Per sequence and layer
    the state is the recurrent matrix of each value head, ``num_v_heads·key_head_dim·
    value_head_dim`` numbers (:data:`RECURRENT_STATE_BYTES` each), and the convolution's last
    ``conv_kernel − 1`` inputs, ``conv_dim·(conv_kernel − 1)`` numbers (in the KV format); it
    does not grow with the context.
    """

    kind: str
    num_k_heads: int
    num_v_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int

    @property
    def key_dim(self) -> int:
        """Width of q and of k: ``num_k_heads·key_head_dim``."""
        return self.num_k_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        """Width of v (and of the output gate z): ``num_v_heads·value_head_dim``."""
        return self.num_v_heads * self.value_head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the convolution (q, k and v): ``2·key_dim + value_dim``."""
        return 2 * self.key_dim + self.value_dim

    @property
    def recurrent_elements(self) -> int:
        """Numbers of the recurrent state per sequence: ``num_v_heads·key_head_dim·
        value_head_dim``."""
        return self.num_v_heads * self.key_head_dim * self.value_head_dim

    @property
    def conv_elements(self) -> int:
        """Numbers of the convolution state per sequence: ``conv_dim·(conv_kernel − 1)``."""
        return self.conv_dim * (self.conv_kernel - 1)


@dataclass(frozen=True)
class Block:
    """One decoder layer: attention (full or sliding ``window``), dense linears, MoE experts,
    and optionally a compressed KV stream beside the window (``compressed``), or a
    linear-attention mixer with a per-sequence state instead of attention (``linear_attention``;
    ``attention`` then gives its head geometry and caches nothing per token)."""

    attention: AttentionShape
    window: int | None
    linears: tuple[Linear, ...]
    experts: Experts | None
    other_params: tuple[tuple[str, int], ...]
    compressed: CompressedKV | None = None
    linear_attention: LinearAttention | None = None

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
        norms (attention sinks and q/k/latent norms count as attention); layers with
        hyper-connections (DeepSeek-V4's mHC mixing weights, ``hc/…``) add a
        ``hyper_connections`` part."""
        parts = dict.fromkeys(
            ("attention", "mlp", "shared_experts", "routed_experts", "router", "norms"), 0
        )
        part_of_kind = {OpKind.PROJECTION: "attention", OpKind.FFN: "mlp",
                        OpKind.EXPERT: "shared_experts", OpKind.ROUTER: "router",
                        OpKind.HYPER_CONNECTION: "hyper_connections"}
        if any(lin.kind == OpKind.HYPER_CONNECTION for lin in self.linears):
            parts["hyper_connections"] = 0
        for lin in self.linears:
            parts[part_of_kind[lin.kind]] += lin.params
        if self.experts:
            parts["routed_experts"] = self.experts.params
        prefixes = {"attn/": "attention", "moe/": "router", "hc/": "hyper_connections"}
        for name, count in self.other_params:
            part = next((v for k, v in prefixes.items() if name.startswith(k)), "norms")
            parts[part] = parts.get(part, 0) + count
        return parts

    @property
    def active_params(self) -> int:
        """Parameters one token uses: routed experts count only the top-k."""
        if self.experts is None:
            return self.params
        inactive = self.experts.num_experts - self.experts.num_active
        return self.params - inactive * self.experts.params_per_expert
