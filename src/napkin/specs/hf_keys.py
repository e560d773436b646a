"""The keys of a Hugging Face ``config.json`` that napkin reads for every model family
(:class:`HFConfig`), each bounded so a bad file is one clear error, not a runaway build.
"""

from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

MAX_LAYERS = 10_000
"""Most layers a config may have (one block each is built: 10,000 is ~100× any released model)."""
MAX_WIDTH = 1 << 24
"""Largest hidden, intermediate, head, rank and vocabulary size (16.8 M; 2025 models: < 300 k)."""
MAX_COUNT = 1 << 16
"""Most heads or experts (65,536; 2025 models: at most 384 experts, 128 heads)."""
MAX_POSITIONS = 1 << 34
"""Longest context a config may declare (17 G tokens)."""

Width = Annotated[int, Field(gt=0, le=MAX_WIDTH)]
Count = Annotated[int, Field(gt=0, le=MAX_COUNT)]


class HFConfig(BaseModel):
    """The ``config.json`` keys napkin reads, each size bounded (one clear error, no runaway
    build); other keys are kept but ignored."""

    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)

    model_type: str = "llama"
    """The architecture family, which picks the family's rules: Qwen3 types (``qwen3``,
    ``qwen3_moe``, ``qwen3_vl``…) add per-head q/k norms, Qwen2 types (``qwen2``, ``qwen2_moe``,
    ``qwen2_5_vl``…) q/k/v biases, ``gpt_oss`` attention sinks and a biased router and experts,
    types starting with ``deepseek`` (and ``kimi_k2``) DeepSeek's MoE layer placement,
    ``deepseek_v4``, ``qwen3_next`` and ``kimi_linear`` their own readers; any other value is
    read as Llama-like with SwiGLU MLPs."""
    hidden_size: Width
    """Width h of the residual stream: every projection's input or output, the norms, and the
    embedding and LM head (vocab_size × h)."""
    num_hidden_layers: int = Field(gt=0, le=MAX_LAYERS)
    """Decoder layers; one block is built per layer."""
    num_attention_heads: Count
    """Query heads per layer (tensor_parallel must divide them)."""
    num_key_value_heads: Count | None = None
    """Key/value heads per layer (GQA): sizes the k/v projections and the KV cache per token. None:
    ``num_attention_heads`` (MHA); it must divide them. Not used by MLA."""
    head_dim: Width | None = None
    """Per-head dimension of q, k and v. None: hidden_size / num_attention_heads (which must then
    divide evenly). Not used by MLA."""
    intermediate_size: Width | None = None
    """Inner width of the dense gated MLP (gate/up outputs, down input); required for dense layers.
    MoE experts fall back to it without ``moe_intermediate_size``."""
    vocab_size: Width
    """Vocabulary size: rows of the embedding table and the LM head, whose 2·h·vocab FLOPs run at
    each read-out position."""
    max_position_embeddings: int | None = Field(default=None, gt=0, le=MAX_POSITIONS)
    """Longest context the model takes, tokens: longer contexts and requests (prompt + output) are
    refused. None: no limit checked."""
    tie_word_embeddings: bool = False
    """The LM head shares the embedding table: its parameters are counted once."""
    attention_bias: bool | None = None
    """Biases on the q, k, v and o projections (gpt-oss). None: false. Qwen2 types always bias
    q/k/v and never o."""
    mlp_bias: bool = False
    """Biases on the dense MLP's projections (not on experts)."""
    # sliding windows
    sliding_window: int | None = Field(default=None, gt=0, le=MAX_POSITIONS)
    """Sliding-window width W, tokens: a windowed layer attends to at most W keys and holds W tokens
    of KV. Which layers are windowed: ``layer_types``, else ``use_sliding_window``, else every layer
    (Mistral)."""
    use_sliding_window: bool | None = None
    """Qwen2/Qwen3: true windows the layers from ``max_window_layers`` on, false none. None:
    every layer is windowed when ``sliding_window`` is given."""
    max_window_layers: int | None = Field(default=None, ge=0)
    """Qwen2/Qwen3 with ``use_sliding_window``: index of the first windowed layer (layers below it
    attend fully). None: 0."""
    layer_types: list[str] | None = None
    """Per-layer attention kinds (gpt-oss, newer Qwen): ``"sliding_attention"`` layers use
    ``sliding_window``, the others attend fully. Takes precedence; layers past its end fall back to
    the other keys."""
    # mixture of experts
    num_experts: int | None = Field(
        default=None,
        ge=0,
        le=MAX_COUNT,
        validation_alias=AliasChoices("num_local_experts", "num_experts", "n_routed_experts"),
    )
    """Routed experts per MoE layer (Mixtral's and gpt-oss's ``num_local_experts``, Qwen's
    ``num_experts``, DeepSeek's ``n_routed_experts``). None or 0: a dense model."""
    num_experts_per_tok: int | None = Field(
        default=None,
        ge=0,
        le=MAX_COUNT,
        validation_alias=AliasChoices("num_experts_per_tok", "experts_per_token"),
    )
    """Experts each token is routed to, k (gpt-oss: ``experts_per_token``): the active parameters
    and the experts a step reads, E·(1 − (1 − k/E)^T). Required, 1..num_experts, for MoE."""
    moe_intermediate_size: Width | None = None
    """Inner width of each routed expert's gated MLP (and the unit of DeepSeek's shared experts).
    None: ``intermediate_size``."""
    n_shared_experts: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    """DeepSeek: shared experts every token uses, one gated MLP of n × moe_intermediate_size. None:
    none (or Qwen2-MoE's ``shared_expert_intermediate_size``)."""
    shared_expert_intermediate_size: int | None = Field(default=None, ge=0, le=MAX_WIDTH)
    """Qwen2-MoE: inner width of its one shared expert, which has its own gate (an h → 1
    projection). None or 0: none."""
    first_k_dense_replace: int = Field(default=0, ge=0)
    """DeepSeek (types starting with ``deepseek``, and ``kimi_k2``): the first k layers keep a
    dense MLP."""
    moe_layer_freq: int = Field(default=1, gt=0)
    """DeepSeek: from ``first_k_dense_replace`` on, layer i is MoE when i is a multiple of it."""
    decoder_sparse_step: int = Field(default=1, gt=0)
    """Qwen-MoE (every non-DeepSeek type): layer i (from 0) is MoE when i + 1 is a multiple of it,
    unless in ``mlp_only_layers``."""
    mlp_only_layers: list[int] = Field(default=[])  # (copied per instance by pydantic; a
    # ``default_factory=list`` makes pydantic tokenize the builtin's signature, ~4 ms)
    """Qwen-MoE: indexes (from 0) of layers that keep a dense MLP."""
    topk_method: str | None = None
    """DeepSeek-V3's routing method: ``noaux_tc`` adds a per-expert score correction bias (E
    parameters per MoE layer); other values change nothing."""
    use_routing_bias: bool = False
    """MiniMax-M2 (``minimax_m2``): the same per-expert score correction bias as DeepSeek's
    ``noaux_tc`` (E parameters per MoE layer)."""
    use_qk_norm: bool = False
    """MiniMax-M2: RMSNorms on q and k, shaped by ``qk_norm_type``."""
    qk_norm_type: Literal["per_head", "per_layer"] = "per_head"
    """MiniMax-M2 with ``use_qk_norm``: ``per_layer`` normalizes all heads at once (weights of
    heads·head_dim for q, kv_heads·head_dim for k); ``per_head`` one head_dim weight each, as
    Qwen3 does."""
    # multi-head latent attention
    kv_lora_rank: Width | None = None
    """DeepSeek MLA: width of the compressed KV latent. Given, attention is MLA: one latent of
    kv_lora_rank + qk_rope_head_dim elements cached per token and layer; ``qk_nope_head_dim``,
    ``qk_rope_head_dim`` and ``v_head_dim`` are then required."""
    q_lora_rank: Width | None = None
    """MLA: rank of the low-rank query projection (q_a, then q_b). None or 0: one full query
    projection."""
    qk_nope_head_dim: int | None = Field(default=None, ge=0, le=MAX_WIDTH)
    """MLA: per-head q/k dimension without rotary embedding; the q/k head is qk_nope_head_dim +
    qk_rope_head_dim wide."""
    qk_rope_head_dim: int | None = Field(default=None, ge=0, le=MAX_WIDTH)
    """MLA: per-head rotary part of q/k, whose key part is cached once per token beside the
    latent."""
    v_head_dim: Width | None = None
    """MLA: per-head value dimension (the o projection's input is heads × v_head_dim)."""
    num_nextn_predict_layers: int = Field(default=0, ge=0, le=MAX_LAYERS)
    """DeepSeek-V3/V4 multi-token-prediction (MTP) modules, each one decoder block plus norms and
    a projection; reported apart from the main model's parameters."""
