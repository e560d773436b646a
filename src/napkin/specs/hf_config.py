"""Read a Hugging Face ``config.json`` into a :class:`ModelSpec`.

Supported: Llama 2/3/3.1 and other Llama-like configs (Mistral, Qwen2/2.5 with q/k/v bias,
Qwen3 with per-head q/k RMSNorm, Qwen3-VL's ``text_config``), MoE (Mixtral, Qwen2-MoE with a
gated shared expert, Qwen3-MoE with ``decoder_sparse_step``/``mlp_only_layers``, DeepSeek-V3 with
MLA, shared experts, ``first_k_dense_replace`` and MTP modules; Kimi-K2/K2.5's ``kimi_k2`` with
its rules, Kimi-K2.5's vision tower left out), MiniMax-M2 (per-layer q/k
RMSNorms, a routing bias; its MTP modules are not counted), gpt-oss (attention biases and
sinks, biased experts, alternating sliding-window layers), DeepSeek-V4 (``deepseek_v4``: sliding
window plus compressed KV layers, an indexer, mHC, hash routing; read by
:mod:`napkin.specs.deepseek_v4`, whose docstring lists what it counts and leaves out), Qwen3-Next
(``qwen3_next``: Gated DeltaNet linear attention beside gated full attention; read by
:mod:`napkin.specs.qwen3_next`, as is Qwen3.5's ``text_config``, ``qwen3_5_moe_text``), Kimi
Linear (``kimi_linear``: Kimi Delta Attention linear attention beside MLA, DeepSeek's MoE
placement; read by :mod:`napkin.specs.kimi_linear`). Unknown
``model_type`` values are read as Llama-like with SwiGLU MLPs, as long as the standard keys are
present. Llama 4 (``llama4``'s ``text_config``, ``llama4_text``: a shared expert beside the
routed ones, dense layers of ``intermediate_size_mlp``, chunked attention as sliding windows)
is read through the keys above by :mod:`napkin.specs.llama4`; DeepSeek-V3.2 (``deepseek_v32``:
DeepSeek-V3 with DSA, a lightning indexer and top-k sparse attention) and GLM-5
(``glm_moe_dsa``) by :mod:`napkin.specs.deepseek_v32`.
"""

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from napkin.errors import NapkinError
from napkin.specs.files import read_text
from napkin.specs.model import ModelSpec, MTPSpec
from napkin.specs.modules import (
    AttentionShape,
    Block,
    Experts,
    Linear,
    OpKind,
    Stage,
    gated_mlp,
)
from napkin.specs.yaml_text import load_json

_QK_NORM_TYPES = {"qwen3", "qwen3_moe", "qwen3_vl", "qwen3_vl_text", "qwen3_vl_moe_text"}
_QKV_BIAS_TYPES = {"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen2_vl_text"}
DSA_TYPES = ("deepseek_v32", "glm_moe_dsa")
"""Read by :mod:`napkin.specs.deepseek_v32`: DeepSeek-V3.2, and GLM-5 (``glm_moe_dsa``:
DeepSeek-V3's MLA and MoE layers at its own sizes, with DeepSeek Sparse Attention's indexer
under the same keys)."""
QWEN3_NEXT_TYPES = ("qwen3_next", "qwen3_5_moe_text", "qwen3_5_text")
"""Read by :mod:`napkin.specs.qwen3_next`: Qwen3-Next, and the language part of Qwen3.5 (its
``text_config``: the same Gated DeltaNet and gated attention, its projections split
differently at the same widths)."""
_DEEPSEEK_LIKE_TYPES = {"kimi_k2", "kimi_linear"}
"""Types built on DeepSeek-V3's layer (Kimi-K2/K2.5: MLA, 384 experts, a shared expert; Kimi
Linear's MoE placement: ``first_k_dense_replace``, ``moe_layer_freq``)."""


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
    mlp_only_layers: list[int] = Field(default_factory=list)
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


def load_hf_config(path: Path, name: str | None = None) -> ModelSpec:
    """Read ``path`` (a ``config.json``) into a :class:`ModelSpec` named ``name`` (or the stem)."""
    try:
        raw = load_json(read_text(path, "model"), "model")
    except FileNotFoundError:
        raise NapkinError(f"model: no such file {str(path)!r}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise NapkinError(f"model: cannot read {str(path)!r}: {e}") from None
    except json.JSONDecodeError as e:
        raise NapkinError(f"model: {str(path)!r} is not valid JSON ({e})") from None
    except RecursionError:
        raise NapkinError(f"model: {str(path)!r} is nested too deeply to read") from None
    return from_hf_config(raw, name or path.stem, source=str(path))


def from_hf_config(raw: Any, name: str, source: str = "config.json") -> ModelSpec:
    """Build a :class:`ModelSpec` from a parsed ``config.json`` (dict)."""
    if not isinstance(raw, dict):
        raise NapkinError(f"model: {source} must hold a JSON object, got {type(raw).__name__}")
    if isinstance(raw.get("text_config"), dict):  # vision-language: the language part
        raw = {"tie_word_embeddings": raw.get("tie_word_embeddings", False), **raw["text_config"]}
    if raw.get("model_type") in ("llama4", "llama4_text"):  # Llama 4: read as napkin's keys
        from napkin.specs.llama4 import llama4_keys

        raw = llama4_keys(raw, source)
    if raw.get("model_type") == "kimi_linear":  # Kimi Linear: its key names renamed to ours
        from napkin.specs.kimi_linear import kimi_linear_keys

        raw = kimi_linear_keys(raw)
    try:
        cfg = HFConfig.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise NapkinError(f"model: {source}: field {field!r}: {err['msg']}") from None
    if cfg.model_type in DSA_TYPES:
        from napkin.specs.deepseek_v32 import from_deepseek_v32  # V3's layers plus DSA

        return from_deepseek_v32(cfg, raw, name, source)
    if cfg.model_type == "deepseek_v4":
        from napkin.specs.deepseek_v4 import from_deepseek_v4  # its models: built on use

        return from_deepseek_v4(cfg, raw, name, source)
    if cfg.model_type in QWEN3_NEXT_TYPES:
        from napkin.specs.qwen3_next import from_qwen3_next  # its models: built on use

        return from_qwen3_next(cfg, raw, name, source)
    if cfg.model_type == "kimi_linear":
        from napkin.specs.kimi_linear import from_kimi_linear  # its models: built on use

        return from_kimi_linear(cfg, raw, name, source)
    attention = _attention_shape(cfg, source)
    blocks = tuple(
        _block(cfg, attention, source, _is_moe_layer(cfg, i), _window(cfg, i))
        for i in range(cfg.num_hidden_layers)
    )
    mtp = None
    if cfg.num_nextn_predict_layers:  # DeepSeek-V3: each MTP module holds one MoE block
        mtp = MTPSpec(
            num_modules=cfg.num_nextn_predict_layers,
            block=_block(cfg, attention, source, moe=bool(cfg.num_experts), window=None),
            hidden_size=cfg.hidden_size,
            vocab_size=cfg.vocab_size,
        )
    return ModelSpec(
        name=name,
        model_type=cfg.model_type,
        hidden_size=cfg.hidden_size,
        vocab_size=cfg.vocab_size,
        max_position_embeddings=cfg.max_position_embeddings or 0,
        tie_word_embeddings=cfg.tie_word_embeddings,
        blocks=blocks,
        mtp=mtp,
    )


def _attention_shape(cfg: HFConfig, source: str) -> AttentionShape:
    heads = cfg.num_attention_heads
    if cfg.kv_lora_rank is not None:
        nope, rope, v_dim = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
        if nope is None or rope is None or v_dim is None:
            raise NapkinError(
                f"model: {source}: an MLA config (kv_lora_rank) also needs qk_nope_head_dim, "
                "qk_rope_head_dim and v_head_dim"
            )
        return AttentionShape(
            kind="mla",
            num_heads=heads,
            num_kv_heads=1,
            qk_head_dim=nope + rope,
            v_head_dim=v_dim,
            k_elements=cfg.kv_lora_rank + rope,
            v_elements=0,
            latent_dim=cfg.kv_lora_rank,
        )
    kv_heads = cfg.num_key_value_heads or heads
    if heads % kv_heads:
        raise NapkinError(
            f"model: {source}: num_attention_heads ({heads}) must be a multiple of "
            f"num_key_value_heads ({kv_heads})"
        )
    if cfg.head_dim is None and cfg.hidden_size % heads:
        raise NapkinError(
            f"model: {source}: hidden_size ({cfg.hidden_size}) must be a multiple of "
            f"num_attention_heads ({heads}), or give head_dim"
        )
    head_dim = cfg.head_dim or cfg.hidden_size // heads
    kind = "mha" if kv_heads == heads else "mqa" if kv_heads == 1 else "gqa"
    return AttentionShape(
        kind=kind,
        num_heads=heads,
        num_kv_heads=kv_heads,
        qk_head_dim=head_dim,
        v_head_dim=head_dim,
        k_elements=kv_heads * head_dim,
        v_elements=kv_heads * head_dim,
    )


def _attention_linears(cfg: HFConfig, att: AttentionShape) -> tuple[list[Linear], list]:
    """Attention projections and the attention-owned small parameters of one layer."""
    h, heads = cfg.hidden_size, att.num_heads
    proj = OpKind.PROJECTION
    other: list[tuple[str, int]] = []
    if cfg.kv_lora_rank is not None and cfg.qk_rope_head_dim is not None:  # MLA
        q_out = heads * att.qk_head_dim
        if cfg.q_lora_rank:
            linears = [
                Linear("attn/q_a", proj, h, cfg.q_lora_rank, False, Stage.ATTN_IN),
                Linear("attn/q_b", proj, cfg.q_lora_rank, q_out, False, Stage.ATTN_UP),
            ]
            other.append(("attn/q_a_norm", cfg.q_lora_rank))
        else:
            linears = [Linear("attn/q", proj, h, q_out, False, Stage.ATTN_IN)]
        kv_b_out = heads * ((cfg.qk_nope_head_dim or 0) + att.v_head_dim)
        linears += [
            Linear("attn/kv_a", proj, h, cfg.kv_lora_rank + cfg.qk_rope_head_dim, False,
                   Stage.ATTN_IN),
            Linear("attn/kv_b", proj, cfg.kv_lora_rank, kv_b_out, False, Stage.ATTN_UP),
            Linear("attn/o", proj, heads * att.v_head_dim, h, False, Stage.ATTN_OUT),
        ]
        other.append(("attn/kv_a_norm", cfg.kv_lora_rank))
        return linears, other
    qkv_bias = cfg.model_type in _QKV_BIAS_TYPES or bool(cfg.attention_bias)
    o_bias = cfg.model_type not in _QKV_BIAS_TYPES and bool(cfg.attention_bias)
    d = att.qk_head_dim
    linears = [
        Linear("attn/q", proj, h, heads * d, qkv_bias, Stage.ATTN_IN),
        Linear("attn/k", proj, h, att.num_kv_heads * d, qkv_bias, Stage.ATTN_IN),
        Linear("attn/v", proj, h, att.num_kv_heads * d, qkv_bias, Stage.ATTN_IN),
        Linear("attn/o", proj, heads * d, h, o_bias, Stage.ATTN_OUT),
    ]
    if cfg.use_qk_norm and cfg.qk_norm_type == "per_layer":
        other += [("attn/q_norm", heads * d), ("attn/k_norm", att.num_kv_heads * d)]
    elif cfg.model_type in _QK_NORM_TYPES or cfg.use_qk_norm:
        other += [("attn/q_norm", d), ("attn/k_norm", d)]
    if cfg.model_type == "gpt_oss":
        other.append(("attn/sinks", heads))
    return linears, other


def _is_moe_layer(cfg: HFConfig, i: int) -> bool:
    if not cfg.num_experts:
        return False
    if cfg.model_type.startswith("deepseek") or cfg.model_type in _DEEPSEEK_LIKE_TYPES:
        return i >= cfg.first_k_dense_replace and i % cfg.moe_layer_freq == 0
    return i not in cfg.mlp_only_layers and (i + 1) % cfg.decoder_sparse_step == 0


def _window(cfg: HFConfig, i: int) -> int | None:
    if cfg.layer_types is not None and i < len(cfg.layer_types):
        return cfg.sliding_window if cfg.layer_types[i] == "sliding_attention" else None
    if cfg.use_sliding_window is not None:  # Qwen2 semantics: layers from max_window_layers on
        if cfg.use_sliding_window and i >= (cfg.max_window_layers or 0):
            return cfg.sliding_window
        return None
    return cfg.sliding_window


def _block(
    cfg: HFConfig, att: AttentionShape, source: str, moe: bool, window: int | None
) -> Block:
    h = cfg.hidden_size
    linears, other = _attention_linears(cfg, att)
    other = [("norms", 2 * h), *other]
    experts = None
    if moe:
        e, k = cfg.num_experts or 0, cfg.num_experts_per_tok
        inter = cfg.moe_intermediate_size or cfg.intermediate_size
        if not k or not inter or k > e:
            raise NapkinError(
                f"model: {source}: a MoE config needs num_experts_per_tok in 1..{e} and "
                "moe_intermediate_size (or intermediate_size)"
            )
        gpt_oss = cfg.model_type == "gpt_oss"
        linears.append(Linear("moe/router", OpKind.ROUTER, h, e, gpt_oss, Stage.MLP_IN))
        if cfg.topk_method == "noaux_tc" or cfg.use_routing_bias:
            other.append(("moe/e_score_correction_bias", e))
        shared = (cfg.n_shared_experts or 0) * inter or (cfg.shared_expert_intermediate_size or 0)
        if shared:
            linears += gated_mlp("moe/shared", OpKind.EXPERT, h, shared, False)
            if cfg.shared_expert_intermediate_size:  # Qwen2-MoE gates its shared expert
                linears.append(Linear("moe/shared_gate", OpKind.ROUTER, h, 1, False, Stage.MLP_IN))
        experts = Experts(e, k, gated_mlp("moe/experts", OpKind.EXPERT, h, inter, gpt_oss))
    else:
        if not cfg.intermediate_size:
            raise NapkinError(f"model: {source}: field 'intermediate_size' is required")
        linears += gated_mlp("mlp", OpKind.FFN, h, cfg.intermediate_size, cfg.mlp_bias)
    return Block(
        attention=att,
        window=window,
        linears=tuple(linears),
        experts=experts,
        other_params=tuple(other),
    )
