"""Kimi Linear configs (``model_type: kimi_linear``): Kimi Delta Attention (KDA) linear
attention in three of every four layers, MLA full attention in the rest, a DeepSeek-style MoE
with one shared expert.

The config's keys that napkin's shared reader (:class:`~napkin.specs.hf_keys.HFConfig`)
knows under other names are renamed first by :func:`kimi_linear_keys`:
``num_experts_per_token`` → ``num_experts_per_tok``, ``num_shared_experts`` →
``n_shared_experts``, ``model_max_length`` → ``max_position_embeddings`` (Kimi Linear's
context, 1,048,576 tokens; the config has no ``max_position_embeddings``).

Layer geometry (vLLM ``model_executor/models/kimi_linear.py`` and ``layers/kda.py``; the same
shapes as the checkpoint's tensors), with h = ``hidden_size``:

- which layers are which: ``linear_attn_config.kda_layers`` and ``full_attn_layers``, layer
  numbers counted from 1 (vLLM's ``KimiLinearConfig.is_kda_layer(i)`` tests ``i + 1``): for
  Kimi-Linear-48B-A3B layers 4, 8, …, 24 and 27 are MLA (indexes 3, 7, …, 23, 26 from 0). The
  two lists must cover the layers 1…``num_hidden_layers`` once each;
- KDA (``KimiDeltaAttention``), with H = ``linear_attn_config.num_heads``, d =
  ``linear_attn_config.head_dim`` (the key and the value head), K = ``short_conv_kernel_size``:
  ``q_proj``/``k_proj``/``v_proj`` h → H·d each, the decay's low-rank projection ``f_a_proj``
  h → d and ``f_b_proj`` d → H·d (one decay per key channel), ``b_proj`` h → H (β), the output
  gate's low-rank ``g_a_proj`` h → d and ``g_b_proj`` d → H·d, three depthwise causal
  convolutions ``q_conv1d``/``k_conv1d``/``v_conv1d`` of K taps over H·d channels each (no
  bias), ``A_log`` (H), ``dt_bias`` (H·d), the sigmoid-gated RMSNorm ``o_norm`` over d, and
  ``o_proj`` H·d → h; no bias anywhere. It caches nothing per token: each sequence keeps H·d·d
  recurrent numbers and 3·H·d·(K − 1) convolution numbers per layer
  (:class:`~napkin.specs.modules.LinearAttention`, kind ``kda``; vLLM's
  ``MambaStateShapeCalculator.kda_state_shape``);
- MLA (``KimiMLAAttention``), read by :mod:`napkin.specs.hf_layers` as DeepSeek's with
  ``q_lora_rank`` null: ``q_proj`` h → heads·(qk_nope + qk_rope), ``kv_a_proj_with_mqa`` h →
  kv_lora_rank + qk_rope_head_dim, ``kv_a_layernorm``, ``kv_b_proj`` kv_lora_rank →
  heads·(qk_nope + v_head_dim), ``o_proj``. ``mla_use_nope`` (vLLM asserts it true) applies
  no rotary embedding, but the ``qk_rope_head_dim`` part is still projected and cached: a
  token holds kv_lora_rank + qk_rope_head_dim numbers per MLA layer;
- the MLP: DeepSeek's placement (layer i is MoE from ``first_k_dense_replace`` on when i is a
  multiple of ``moe_layer_freq``), a router h → E with a per-expert score-correction bias
  (``gate.e_score_correction_bias``, E numbers, always present in vLLM's ``KimiMoE``), E routed
  SwiGLU experts of ``moe_intermediate_size``, top ``num_experts_per_token``, and a shared
  SwiGLU expert of ``num_shared_experts × moe_intermediate_size``; dense layers one SwiGLU MLP
  of ``intermediate_size``.

Read and not modelled: ``mla_use_nope``, ``moe_renormalize``, ``moe_router_activation_func``,
``routed_scaling_factor``, ``use_grouped_topk``, ``num_expert_group``, ``topk_group``,
``rope_theta``, ``rms_norm_eps``, ``head_dim`` (72; neither attention kind uses it), and
``num_key_value_heads``. Rejected with a message naming the field: layer lists that miss,
repeat or overrun a layer, a missing ``linear_attn_config`` key, ``num_nextn_predict_layers``
above 0 (no Kimi Linear checkpoint has MTP layers).
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

MAX_HEADS = 1 << 16
MAX_WIDTH = 1 << 24

_RENAMED = {"num_experts_per_token": "num_experts_per_tok",
            "num_shared_experts": "n_shared_experts",
            "model_max_length": "max_position_embeddings"}
"""Kimi Linear's names for keys :class:`~napkin.specs.hf_keys.HFConfig` reads."""


class LinearAttnConfig(BaseModel):
    """``linear_attn_config``: the KDA layers' geometry and the layer lists (numbered from 1)."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    kda_layers: list[int]
    full_attn_layers: list[int]
    num_heads: int = Field(gt=0, le=MAX_HEADS)
    head_dim: int = Field(gt=0, le=MAX_WIDTH)
    short_conv_kernel_size: int = Field(gt=0, le=1024)


class KimiLinearKeys(BaseModel):
    """The ``config.json`` keys only Kimi Linear has (the rest are read by ``HFConfig``)."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    linear_attn_config: LinearAttnConfig


def kimi_linear_keys(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with Kimi Linear's key names renamed to the ones napkin's reader knows (a key
    already present under napkin's name is kept)."""
    out = dict(raw)
    for theirs, ours in _RENAMED.items():
        if theirs in raw and ours not in raw:
            out[ours] = raw[theirs]
    return out


def from_kimi_linear(cfg: HFConfig, raw: dict[str, Any], name: str, source: str) -> ModelSpec:
    """Build the :class:`ModelSpec` of a Kimi Linear ``config.json`` (``raw``, already read
    into ``cfg`` for the keys every model shares)."""
    try:
        keys = KimiLinearKeys.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise NapkinError(f"model: {source}: field {field!r}: {err['msg']} "
                          "(a kimi_linear config needs it)") from None
    if cfg.num_nextn_predict_layers:
        raise NapkinError(f"model: {source}: field 'num_nextn_predict_layers': "
                          f"{cfg.num_nextn_predict_layers}, but napkin reads no Kimi Linear "
                          "MTP layers (vLLM's KimiLinear has none); give 0")
    if cfg.kv_lora_rank is None:
        raise NapkinError(f"model: {source}: field 'kv_lora_rank' is required (Kimi Linear's "
                          "full-attention layers are MLA)")
    lac = keys.linear_attn_config
    kda_at = _kda_layers(lac, cfg.num_hidden_layers, source)
    kda = LinearAttention(kind="kda", num_k_heads=lac.num_heads, num_v_heads=lac.num_heads,
                          key_head_dim=lac.head_dim, value_head_dim=lac.head_dim,
                          conv_kernel=lac.short_conv_kernel_size)
    mla = attention_shape(cfg, source)
    blocks = []
    for i in range(cfg.num_hidden_layers):
        base = decoder_block(cfg, mla, source, is_moe_layer(cfg, i), None)
        if base.experts is not None:  # KimiMoE's gate.e_score_correction_bias
            base = Block(attention=base.attention, window=None, linears=base.linears,
                         experts=base.experts,
                         other_params=(*base.other_params, ("moe/e_score_correction_bias",
                                                            base.experts.num_experts)))
        blocks.append(_with_kda(cfg, base, kda) if i in kda_at else base)
    return ModelSpec(
        name=name, model_type=cfg.model_type, hidden_size=cfg.hidden_size,
        vocab_size=cfg.vocab_size, max_position_embeddings=cfg.max_position_embeddings or 0,
        tie_word_embeddings=cfg.tie_word_embeddings, blocks=tuple(blocks),
    )


def _kda_layers(lac: LinearAttnConfig, layers: int, source: str) -> set[int]:
    """Indexes (from 0) of the KDA layers, the two 1-based lists checked to cover
    1…``layers`` once each."""
    kda, full = lac.kda_layers, lac.full_attn_layers
    every = range(1, layers + 1)
    for key, values in (("kda_layers", kda), ("full_attn_layers", full)):
        bad = sorted({v for v in values if v not in every})
        if bad:
            raise NapkinError(f"model: {source}: field 'linear_attn_config.{key}': layers {bad} "
                              f"are outside 1..{layers} (layers are numbered from 1)")
    twice = sorted({v for v in kda + full if (kda + full).count(v) > 1})
    missing = sorted(set(every) - set(kda) - set(full))
    if twice or missing:
        problem = f"layers {twice} are listed twice" if twice else f"layers {missing} are missing"
        raise NapkinError(f"model: {source}: field 'linear_attn_config.kda_layers': {problem} "
                          f"(kda_layers and full_attn_layers must cover 1..{layers} once each)")
    return {v - 1 for v in kda}


def _with_kda(cfg: HFConfig, base: Block, kda: LinearAttention) -> Block:
    """``base`` (norms, MLP or MoE as :mod:`napkin.specs.hf_layers` builds them) with its MLA
    replaced by KDA (``kda``): projections, low-rank decay and output-gate projections, β."""
    h, proj = cfg.hidden_size, OpKind.PROJECTION
    heads, d, width = kda.num_v_heads, kda.value_head_dim, kda.value_dim
    rest = tuple(lin for lin in base.linears if not lin.name.startswith("attn/"))
    other = tuple(p for p in base.other_params if not p[0].startswith("attn/"))
    att = AttentionShape(kind=kda.kind, num_heads=heads, num_kv_heads=kda.num_k_heads,
                         qk_head_dim=kda.key_head_dim, v_head_dim=d, k_elements=0, v_elements=0)
    linears = (
        Linear("attn/q", proj, h, kda.key_dim, False, Stage.ATTN_IN),
        Linear("attn/k", proj, h, kda.key_dim, False, Stage.ATTN_IN),
        Linear("attn/v", proj, h, width, False, Stage.ATTN_IN),
        Linear("attn/f_a", proj, h, d, False, Stage.ATTN_IN),  # decay, low rank
        Linear("attn/f_b", proj, d, kda.key_dim, False, Stage.ATTN_UP),
        Linear("attn/b", proj, h, heads, False, Stage.ATTN_IN),  # β
        Linear("attn/g_a", proj, h, d, False, Stage.ATTN_IN),  # output gate, low rank
        Linear("attn/g_b", proj, d, width, False, Stage.ATTN_UP),
        Linear("attn/o", proj, width, h, False, Stage.ATTN_OUT),
    )
    mixer = (("attn/conv1d", kda.conv_dim * kda.conv_kernel), ("attn/A_log", heads),
             ("attn/dt_bias", kda.key_dim), ("attn/o_norm", d))
    return Block(attention=att, window=None, linears=linears + rest, experts=base.experts,
                 other_params=other + mixer, linear_attention=kda)
