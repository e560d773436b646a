"""Qwen3-Next configs (``model_type: qwen3_next``): Gated DeltaNet linear attention in three of
every four layers, gated full attention in the rest, a sparse MoE with a gated shared expert.

Layer geometry (transformers ``models/qwen3_next/modeling_qwen3_next.py``), with h =
``hidden_size``:

- which layers are which: ``layer_types`` (``"linear_attention"`` / ``"full_attention"``), else
  layer i (from 0) is full attention when ``(i + 1) % full_attention_interval == 0`` (default 4,
  as ``Qwen3NextConfig`` builds it): layers 3, 7, 11, … of Qwen3-Next-80B-A3B;
- Gated DeltaNet (``Qwen3NextGatedDeltaNet``), with Hk = ``linear_num_key_heads``, dk =
  ``linear_key_head_dim``, Hv = ``linear_num_value_heads``, dv = ``linear_value_head_dim``,
  K = ``linear_conv_kernel_dim``: ``in_proj_qkvz`` h → 2·Hk·dk + 2·Hv·dv (q, k, v and the
  output gate z), ``in_proj_ba`` h → 2·Hv (β and the decay's input a), a depthwise causal
  ``conv1d`` over the conv_dim = 2·Hk·dk + Hv·dv channels of q, k, v (K weights each, no
  bias), ``dt_bias`` and ``A_log`` (Hv each), a gated RMSNorm over dv (``norm``), and
  ``out_proj`` Hv·dv → h; no bias anywhere. It caches nothing per token: each sequence keeps
  Hv·dk·dv recurrent numbers and conv_dim·(K − 1) convolution numbers per layer
  (:class:`~napkin.specs.modules.LinearAttention`);
- gated attention (``Qwen3NextAttention``): ``q_proj`` h → 2·heads·head_dim (the query and a
  sigmoid output gate per head), ``k_proj``/``v_proj`` h → kv_heads·head_dim, ``o_proj``
  heads·head_dim → h, per-head ``q_norm``/``k_norm`` (head_dim each), biases only with
  ``attention_bias``; GQA KV cache as usual;
- the MLP: Qwen-MoE's rules (``decoder_sparse_step``, ``mlp_only_layers``), routed SwiGLU experts
  of ``moe_intermediate_size``, one shared expert of ``shared_expert_intermediate_size`` with
  its own h → 1 sigmoid gate, read as Qwen2-MoE's by :mod:`napkin.specs.hf_layers`.

Not counted: the multi-token-prediction layer the checkpoints ship as ``mtp.*`` tensors (the
config does not declare it; transformers skips it on load). Read and not modelled:
``partial_rotary_factor``, ``rope_theta``, ``rope_scaling``, ``norm_topk_prob``,
``rms_norm_eps``, ``hidden_act``. Rejected with a message naming the field: value heads that
are not a multiple of the key heads, unknown ``layer_types`` values, a ``layer_types`` list of
the wrong length.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from napkin.errors import NapkinError
from napkin.specs.hf_keys import HFConfig
from napkin.specs.hf_layers import attention_shape, decoder_block, is_moe_layer
from napkin.specs.model import ModelSpec
from napkin.specs.modules import (
    AttentionShape,
    Block,
    Linear,
    LinearAttention,
    OpKind,
    Stage,
)

LAYER_TYPES = ("linear_attention", "full_attention")
MAX_HEADS = 1 << 16
MAX_WIDTH = 1 << 24


class Qwen3NextKeys(BaseModel):
    """The ``config.json`` keys only Qwen3-Next has (the rest are read by ``HFConfig``)."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    linear_num_key_heads: int = Field(gt=0, le=MAX_HEADS)
    linear_num_value_heads: int = Field(gt=0, le=MAX_HEADS)
    linear_key_head_dim: int = Field(gt=0, le=MAX_WIDTH)
    linear_value_head_dim: int = Field(gt=0, le=MAX_WIDTH)
    linear_conv_kernel_dim: int = Field(default=4, gt=0, le=1024)
    full_attention_interval: int = Field(default=4, gt=0)


def from_qwen3_next(cfg: HFConfig, raw: dict[str, Any], name: str, source: str) -> ModelSpec:
    """Build the :class:`ModelSpec` of a Qwen3-Next ``config.json`` (``raw``, already read into
    ``cfg`` for the keys every model shares)."""
    try:
        keys = Qwen3NextKeys.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise NapkinError(f"model: {source}: field {field!r}: {err['msg']} "
                          "(a qwen3_next config needs it)") from None
    kinds = _layer_kinds(cfg, keys, source)
    gdn = _linear_attention(keys, source)
    full = attention_shape(cfg, source)
    blocks = []
    for i, kind in enumerate(kinds):
        base = decoder_block(cfg, full, source, is_moe_layer(cfg, i), None)
        blocks.append(_with_mixer(cfg, base, gdn if kind == "linear_attention" else None))
    return ModelSpec(
        name=name, model_type=cfg.model_type, hidden_size=cfg.hidden_size,
        vocab_size=cfg.vocab_size, max_position_embeddings=cfg.max_position_embeddings or 0,
        tie_word_embeddings=cfg.tie_word_embeddings, blocks=tuple(blocks),
    )


def _layer_kinds(cfg: HFConfig, keys: Qwen3NextKeys, source: str) -> list[str]:
    layers = cfg.num_hidden_layers
    if cfg.layer_types is None:
        n = keys.full_attention_interval
        return [LAYER_TYPES[(i + 1) % n == 0] for i in range(layers)]
    if len(cfg.layer_types) != layers:
        raise NapkinError(f"model: {source}: field 'layer_types': {len(cfg.layer_types)} "
                          f"entries for {layers} layers (num_hidden_layers)")
    bad = sorted(set(cfg.layer_types) - set(LAYER_TYPES))
    if bad:
        raise NapkinError(f"model: {source}: field 'layer_types': {bad} are not Qwen3-Next "
                          f"layer types ({', '.join(LAYER_TYPES)})")
    return list(cfg.layer_types)


def _linear_attention(keys: Qwen3NextKeys, source: str) -> LinearAttention:
    hk, hv = keys.linear_num_key_heads, keys.linear_num_value_heads
    if hv % hk:
        raise NapkinError(f"model: {source}: field 'linear_num_value_heads': {hv} must be a "
                          f"multiple of linear_num_key_heads ({hk})")
    return LinearAttention(kind="gdn", num_k_heads=hk, num_v_heads=hv,
                           key_head_dim=keys.linear_key_head_dim,
                           value_head_dim=keys.linear_value_head_dim,
                           conv_kernel=keys.linear_conv_kernel_dim)


def _with_mixer(cfg: HFConfig, base: Block, gdn: LinearAttention | None) -> Block:
    """``base`` (norms, MLP or MoE as :mod:`napkin.specs.hf_layers` builds them) with its token
    mixer replaced by Qwen3-Next's: gated full attention, or Gated DeltaNet (``gdn``)."""
    h, proj = cfg.hidden_size, OpKind.PROJECTION
    rest = tuple(lin for lin in base.linears if not lin.name.startswith("attn/"))
    other = tuple(p for p in base.other_params if not p[0].startswith("attn/"))
    if gdn is None:
        att = base.attention
        d, heads, kv = att.qk_head_dim, att.num_heads, att.num_kv_heads
        bias = bool(cfg.attention_bias)
        linears = (
            Linear("attn/q", proj, h, 2 * heads * d, bias, Stage.ATTN_IN),  # query + gate
            Linear("attn/k", proj, h, kv * d, bias, Stage.ATTN_IN),
            Linear("attn/v", proj, h, kv * d, bias, Stage.ATTN_IN),
            Linear("attn/o", proj, heads * d, h, bias, Stage.ATTN_OUT),
        )
        return Block(attention=att, window=None, linears=linears + rest, experts=base.experts,
                     other_params=(*other, ("attn/q_norm", d), ("attn/k_norm", d)))
    att = AttentionShape(kind=gdn.kind, num_heads=gdn.num_v_heads, num_kv_heads=gdn.num_k_heads,
                         qk_head_dim=gdn.key_head_dim, v_head_dim=gdn.value_head_dim,
                         k_elements=0, v_elements=0)
    linears = (
        Linear("attn/in_proj_qkvz", proj, h, 2 * gdn.key_dim + 2 * gdn.value_dim, False,
               Stage.ATTN_IN),
        Linear("attn/in_proj_ba", proj, h, 2 * gdn.num_v_heads, False, Stage.ATTN_IN),
        Linear("attn/out_proj", proj, gdn.value_dim, h, False, Stage.ATTN_OUT),
    )
    mixer = (("attn/conv1d", gdn.conv_dim * gdn.conv_kernel), ("attn/dt_bias", gdn.num_v_heads),
             ("attn/A_log", gdn.num_v_heads), ("attn/norm", gdn.value_head_dim))
    return Block(attention=att, window=None, linears=linears + rest, experts=base.experts,
                 other_params=other + mixer, linear_attention=gdn)
