"""DeepSeek-V4 configs (``model_type: deepseek_v4``): hybrid compressed attention, mHC, hash
routing, MTP — read into the same :class:`ModelSpec` blocks as every other model.

Layer geometry (DeepSeek's reference ``inference/model.py``, as ported by TensorRT-LLM's
AutoDeploy ``DeepseekV4ForCausalLM`` and checked against aiconfigurator's ``deepseek_v4.py``
and ``operators/dsv4.rs``), with h = ``hidden_size``, H = ``num_attention_heads``,
d = ``head_dim``, m = ``hc_mult``:

- every layer attends over a sliding window of the last ``sliding_window`` tokens with one
  shared K=V head of d numbers (``num_key_value_heads`` must be 1): query ``wq_a`` h → q_lora,
  ``q_norm``, ``wq_b`` q_lora → H·d; KV ``wkv`` h → d, ``kv_norm``; output in ``o_groups``
  groups, ``wo_a`` (H·d/o_groups) → o_lora each, then ``wo_b`` o_groups·o_lora → h; an
  ``attn_sink`` per head. K and V are the same vector, so it is cached once (as MLA's latent);
- ``compress_ratios[i]`` = 0: that alone (sliding-window attention, SWA);
- = 128 (HCA, heavily compressed): a compressor (``wkv``, ``wgate`` h → d, ``ape`` r×d,
  ``norm`` d) pools every r tokens into one entry; each query also attends to every entry;
- = 4 (CSA, compressed sparse): an overlapping compressor (h → 2d, ``ape`` r×2d) and an
  indexer (``wq_b`` q_lora → index_n_heads·index_head_dim, ``weights_proj`` h →
  index_n_heads, its own overlapping compressor at index_head_dim) that scores every entry;
  each query attends to the ``index_topk`` best;
- the FFN is MoE in every layer (``n_routed_experts`` SwiGLU experts of
  ``moe_intermediate_size``, top ``num_experts_per_tok``, ``n_shared_experts`` shared); the
  first ``num_hash_layers`` route by a fixed token-id table, so their gate has no correction
  bias;
- mHC keeps m residual streams: per layer two mixers ``hc_attn_fn``, ``hc_ffn_fn``
  (m·h → (2+m)·m, counted as matmuls) with bases ((2+m)·m) and scales (3); a head mixer
  (m·h → m) folds the streams before the final norm (counted with it, see
  :attr:`ModelSpec.final_norm_params`);
- ``num_nextn_predict_layers`` MTP modules: ``e_proj``, ``h_proj`` (h × h), ``enorm``,
  ``hnorm``, ``norm``, a full block with ratio ``compress_ratios[num_hidden_layers]`` (the
  configs list one ratio per MTP layer after the main ones; 0 when absent) and its own head
  mixer; reported apart from the main model, as DeepSeek-V3's.

Approximations (also in the accounting's docstring): compressed attention is counted in
fractions of an entry (a query at position p sees (p+1)/r entries, capped at ``index_topk``
for CSA, instead of ⌊(p+1)/r⌋), exact to within one entry per query; the KV cache holds the
window, ⌊C/r⌋ entries of d numbers and, for CSA, ⌊C/4⌋ indexer keys of ``index_head_dim``
numbers, all in the one ``--kv-dtype`` (the reference stores FP8/BF16 entries and FP4 indexer
keys). Left out: the compressors' pending-token state (≤ r tokens of FP32 KV and scores per
layer, about 11 MB per sequence for V4-Flash), the elementwise work of pooling, Sinkhorn
mixing, ReLU scoring and top-k selection (0 FLOPs, like norms), the token-id table of hash
layers (``vocab_size × k`` integers, a lookup table, not parameters) and the activation
memory of the m-wide residual stream.

Read and not modelled (numerics or training only): ``hc_sinkhorn_iters``, ``hc_eps``,
``swiglu_limit``, ``scoring_func``, ``routed_scaling_factor``, ``norm_topk_prob``,
``rope_theta``, ``compress_rope_theta``, ``rope_scaling``, ``expert_dtype`` (the checkpoint's
FP4 experts: napkin's ``--weights`` sets one format for all weights) and
``quantization_config``. Rejected with a message naming the field: ratios other than 0, 4 and
128, more than one KV head, ``o_groups`` not dividing the heads, fewer ratios than layers,
``qk_rope_head_dim`` above ``head_dim``, and ``first_k_dense_replace``/``moe_layer_freq``
other than their defaults (V4 has no dense layers).
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from napkin.errors import NapkinError
from napkin.specs.hf_keys import HFConfig
from napkin.specs.model import ModelSpec, MTPSpec
from napkin.specs.modules import (
    AttentionShape,
    Block,
    CompressedKV,
    Experts,
    Linear,
    OpKind,
    Stage,
    gated_mlp,
)

SUPPORTED_RATIOS = (0, 4, 128)
CSA_RATIO = 4  # the reference overlaps and indexes only ratio-4 compressors


class DeepseekV4Keys(BaseModel):
    """The ``config.json`` keys only DeepSeek-V4 has (the rest are read by ``HFConfig``)."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    head_dim: int = Field(gt=0)
    q_lora_rank: int = Field(gt=0)
    o_lora_rank: int = Field(gt=0)
    o_groups: int = Field(gt=0)
    qk_rope_head_dim: int = Field(ge=0)
    sliding_window: int = Field(gt=0)
    compress_ratios: list[int]
    index_n_heads: int = Field(gt=0)
    index_head_dim: int = Field(gt=0)
    index_topk: int = Field(gt=0)
    hc_mult: int = Field(ge=1)
    num_hash_layers: int = Field(default=0, ge=0)
    num_key_value_heads: int = 1
    first_k_dense_replace: int = 0
    moe_layer_freq: int = 1


def from_deepseek_v4(cfg: HFConfig, raw: dict[str, Any], name: str, source: str) -> ModelSpec:
    """Build the :class:`ModelSpec` of a DeepSeek-V4 ``config.json`` (``raw``, already read
    into ``cfg`` for the keys every model shares)."""
    try:
        v4 = DeepseekV4Keys.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise NapkinError(f"model: {source}: field {field!r}: {err['msg']} "
                          "(a deepseek_v4 config needs it)") from None
    _check(cfg, v4, source)
    att = AttentionShape(kind="csa-hca", num_heads=cfg.num_attention_heads, num_kv_heads=1,
                         qk_head_dim=v4.head_dim, v_head_dim=v4.head_dim,
                         k_elements=v4.head_dim, v_elements=0)
    layers = cfg.num_hidden_layers
    blocks = tuple(_block(cfg, v4, att, v4.compress_ratios[i], i < v4.num_hash_layers)
                   for i in range(layers))
    mtp = None
    if cfg.num_nextn_predict_layers:
        ratio = v4.compress_ratios[layers] if len(v4.compress_ratios) > layers else 0
        h, m = cfg.hidden_size, v4.hc_mult
        mtp = MTPSpec(num_modules=cfg.num_nextn_predict_layers,
                      block=_block(cfg, v4, att, ratio, hash_routed=False),
                      hidden_size=h, vocab_size=cfg.vocab_size, extra_params=m * m * h + m + 1)
    return ModelSpec(
        name=name, model_type=cfg.model_type, hidden_size=cfg.hidden_size,
        vocab_size=cfg.vocab_size, max_position_embeddings=cfg.max_position_embeddings or 0,
        tie_word_embeddings=cfg.tie_word_embeddings, blocks=blocks, mtp=mtp,
        hc_mult=v4.hc_mult,
    )


def _check(cfg: HFConfig, v4: DeepseekV4Keys, source: str) -> None:
    def fail(msg: str) -> NapkinError:
        return NapkinError(f"model: {source}: {msg}")

    bad = sorted(set(v4.compress_ratios) - set(SUPPORTED_RATIOS))
    if bad:
        raise fail(f"field 'compress_ratios': ratio(s) {bad} are not modelled; allowed: "
                   f"{', '.join(map(str, SUPPORTED_RATIOS))} (SWA, CSA, HCA)")
    if len(v4.compress_ratios) < cfg.num_hidden_layers:
        raise fail(f"field 'compress_ratios': {len(v4.compress_ratios)} ratios for "
                   f"{cfg.num_hidden_layers} layers (num_hidden_layers)")
    if v4.num_key_value_heads != 1:
        raise fail(f"field 'num_key_value_heads': deepseek_v4 shares one K=V head, got "
                   f"{v4.num_key_value_heads}")
    if cfg.num_attention_heads % v4.o_groups:
        raise fail(f"field 'o_groups': {v4.o_groups} must divide num_attention_heads "
                   f"({cfg.num_attention_heads})")
    if v4.qk_rope_head_dim > v4.head_dim:
        raise fail(f"field 'qk_rope_head_dim': {v4.qk_rope_head_dim} exceeds head_dim "
                   f"({v4.head_dim})")
    if v4.first_k_dense_replace or v4.moe_layer_freq != 1:
        raise fail("fields 'first_k_dense_replace'/'moe_layer_freq': deepseek_v4 is MoE in "
                   "every layer; dense layers are not modelled")
    e, k = cfg.num_experts or 0, cfg.num_experts_per_tok or 0
    if not cfg.moe_intermediate_size or not 1 <= k <= e:
        raise fail(f"a deepseek_v4 config needs moe_intermediate_size and num_experts_per_tok "
                   f"in 1..{e} (n_routed_experts)")


def _compressor(prefix: str, h: int, dim: int, ratio: int) -> tuple[list[Linear], list]:
    """``wkv``, ``wgate`` h → c·dim (c = 2 for the overlapping ratio-4 compressor), ``ape``
    ratio × c·dim, ``norm`` dim."""
    width = (2 if ratio == CSA_RATIO else 1) * dim
    proj = OpKind.PROJECTION
    return ([Linear(f"{prefix}/kv", proj, h, width, False, Stage.ATTN_IN),
             Linear(f"{prefix}/gate", proj, h, width, False, Stage.ATTN_IN)],
            [(f"{prefix}/ape", ratio * width), (f"{prefix}/norm", dim)])


def _block(cfg: HFConfig, v4: DeepseekV4Keys, att: AttentionShape, ratio: int,
           hash_routed: bool) -> Block:
    h, heads, d = cfg.hidden_size, cfg.num_attention_heads, v4.head_dim
    proj, g = OpKind.PROJECTION, v4.o_groups
    linears = [
        Linear("attn/q_a", proj, h, v4.q_lora_rank, False, Stage.ATTN_IN),
        Linear("attn/q_b", proj, v4.q_lora_rank, heads * d, False, Stage.ATTN_UP),
        Linear("attn/kv", proj, h, d, False, Stage.ATTN_IN),
        Linear("attn/o_a", proj, heads * d // g, g * v4.o_lora_rank, False, Stage.ATTN_OUT),
        Linear("attn/o_b", proj, g * v4.o_lora_rank, h, False, Stage.ATTN_OUT),
    ]
    other: list[tuple[str, int]] = [("norms", 2 * h), ("attn/q_norm", v4.q_lora_rank),
                                    ("attn/kv_norm", d), ("attn/sinks", heads)]
    compressed = None
    if ratio:
        lins, params = _compressor("attn/compressor", h, d, ratio)
        linears += lins
        other += params
        if ratio == CSA_RATIO:
            ih, idim = v4.index_n_heads, v4.index_head_dim
            linears += [Linear("attn/indexer/q_b", proj, v4.q_lora_rank, ih * idim, False,
                               Stage.ATTN_UP),
                        Linear("attn/indexer/weights", proj, h, ih, False, Stage.ATTN_IN)]
            lins, params = _compressor("attn/indexer/compressor", h, idim, ratio)
            linears += lins
            other += params
            compressed = CompressedKV(ratio, d, v4.index_topk, ih, idim)
        else:
            compressed = CompressedKV(ratio, d)
    m = v4.hc_mult
    mix = (2 + m) * m
    linears += [Linear("hc/attn_mix", OpKind.HYPER_CONNECTION, m * h, mix, False, Stage.ATTN_IN),
                Linear("hc/ffn_mix", OpKind.HYPER_CONNECTION, m * h, mix, False, Stage.MLP_IN)]
    other += [("hc/attn_base", mix), ("hc/attn_scale", 3), ("hc/ffn_base", mix),
              ("hc/ffn_scale", 3)]
    e, k = cfg.num_experts or 0, cfg.num_experts_per_tok or 0
    inter = cfg.moe_intermediate_size or 0  # _check required it
    linears.append(Linear("moe/router", OpKind.ROUTER, h, e, False, Stage.MLP_IN))
    if not hash_routed:  # a learned top-k keeps a load-balancing correction bias per expert
        other.append(("moe/e_score_correction_bias", e))
    if cfg.n_shared_experts:
        linears += gated_mlp("moe/shared", OpKind.EXPERT, h, cfg.n_shared_experts * inter, False)
    experts = Experts(e, k, gated_mlp("moe/experts", OpKind.EXPERT, h, inter, False),
                      routing="hash" if hash_routed else "top-k")
    return Block(attention=att, window=v4.sliding_window, linears=tuple(linears),
                 experts=experts, other_params=tuple(other), compressed=compressed)
