"""The standard decoder layers of a Hugging Face ``config.json``: attention (MHA, GQA, MQA or
DeepSeek's MLA), the dense MLP or the MoE layer, sliding windows and MTP modules, as the
families' rules shape them (:func:`standard_model`). The families with readers of their own
(:mod:`napkin.specs.hf_config` lists them) build on these blocks.
"""

from napkin.errors import NapkinError
from napkin.specs.hf_keys import HFConfig
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

_QK_NORM_TYPES = {"qwen3", "qwen3_moe", "qwen3_vl", "qwen3_vl_text", "qwen3_vl_moe_text"}
_QKV_BIAS_TYPES = {"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen2_vl_text"}
_DEEPSEEK_LIKE_TYPES = {"kimi_k2", "kimi_linear"}
"""Types built on DeepSeek-V3's layer (Kimi-K2/K2.5: MLA, 384 experts, a shared expert; Kimi
Linear's MoE placement: ``first_k_dense_replace``, ``moe_layer_freq``)."""


def standard_model(cfg: HFConfig, name: str, source: str) -> ModelSpec:
    """The :class:`ModelSpec` of a config read as a standard decoder: one block per layer
    (:func:`decoder_block`) and DeepSeek-V3's MTP modules."""
    attention = attention_shape(cfg, source)
    blocks = tuple(
        decoder_block(cfg, attention, source, is_moe_layer(cfg, i), layer_window(cfg, i))
        for i in range(cfg.num_hidden_layers)
    )
    mtp = None
    if cfg.num_nextn_predict_layers:  # DeepSeek-V3: each MTP module holds one MoE block
        mtp = MTPSpec(
            num_modules=cfg.num_nextn_predict_layers,
            block=decoder_block(cfg, attention, source, moe=bool(cfg.num_experts), window=None),
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


def attention_shape(cfg: HFConfig, source: str) -> AttentionShape:
    """The attention of every layer: MLA where ``kv_lora_rank`` is given, else MHA, GQA or MQA
    by the key/value heads."""
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


def is_moe_layer(cfg: HFConfig, i: int) -> bool:
    """Whether layer ``i`` (from 0) is a MoE layer, by DeepSeek's placement or Qwen-MoE's."""
    if not cfg.num_experts:
        return False
    if cfg.model_type.startswith("deepseek") or cfg.model_type in _DEEPSEEK_LIKE_TYPES:
        return i >= cfg.first_k_dense_replace and i % cfg.moe_layer_freq == 0
    return i not in cfg.mlp_only_layers and (i + 1) % cfg.decoder_sparse_step == 0


def layer_window(cfg: HFConfig, i: int) -> int | None:
    """The sliding window of layer ``i`` (from 0), tokens; None where it attends fully."""
    if cfg.layer_types is not None and i < len(cfg.layer_types):
        return cfg.sliding_window if cfg.layer_types[i] == "sliding_attention" else None
    if cfg.use_sliding_window is not None:  # Qwen2 semantics: layers from max_window_layers on
        if cfg.use_sliding_window and i >= (cfg.max_window_layers or 0):
            return cfg.sliding_window
        return None
    return cfg.sliding_window


def decoder_block(
    cfg: HFConfig, att: AttentionShape, source: str, moe: bool, window: int | None
) -> Block:
    """One decoder layer: norms, ``att``'s projections and the dense MLP or (``moe``) the MoE
    layer, windowed to ``window`` tokens (None: full attention)."""
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
