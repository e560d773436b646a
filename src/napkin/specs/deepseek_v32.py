"""DeepSeek-V3.2 configs (``model_type: deepseek_v32``, DeepSeek-V3.2-Exp and DeepSeek-V3.2):
DeepSeek-V3's layers (MLA, 256 routed + 1 shared expert, 3 dense layers, one MTP module)
with DeepSeek Sparse Attention (DSA) in every layer, the MTP module's included.

DSA (DeepSeek's reference ``inference/model.py`` of DeepSeek-V3.2-Exp, ``Indexer`` and
``MLA``), with h = ``hidden_size``, H = ``num_attention_heads``, I = ``index_n_heads``,
d = ``index_head_dim``, r = ``kv_lora_rank``, ρ = ``qk_rope_head_dim``, k = ``index_topk``:

- a lightning indexer per layer: ``wq_b`` q_lora_rank → I·d (from MLA's normalised ``q_a``
  output), ``wk`` h → d, ``k_norm`` a LayerNorm of d with weight and bias (2·d), and
  ``weights_proj`` h → I; it caches one key of d numbers per token (FP8 with an FP32 scale in
  the reference) and scores every cached token with its I heads (2·I·d FLOPs per query–key
  pair);
- MLA then attends only to the k tokens the indexer ranks highest (all of them while the
  context is shorter than k). The reference demo computes MLA's scores over the whole cache
  and masks all but those k; the sparse kernels engines run (FlashMLA's token-level sparse
  prefill and FP8 decode kernels, used by vLLM and SGLang) gather only the k selected latent
  entries of r + ρ numbers, while the indexer (DeepGEMM's paged MQA-logits kernel) reads the
  key of every cached token. napkin prices the kernels: k entries read, not the whole cache.

How napkin expresses it, without accounting of its own: the layer's cache is a
:class:`~napkin.specs.modules.CompressedKV` stream of ratio 1 — one entry per token of r + ρ
numbers (MLA's latent and rope key) plus the indexer's key of d numbers — of which a query
attends at most ``top_k`` = k entries (``attended_window`` k tokens) while the indexer scores
all of them (``index_heads`` I, ``index_head_dim`` d). The block's own attention stream is
empty: ``window`` = 0 (no keys attended through it) and an attention shape of kind ``dsa`` that
caches nothing per token (``k_elements`` = ``v_elements`` = 0), so its ``attn/scores`` and
``attn/values`` rows are 0 and the whole cache, held for every token, is the stream's. Per
layer and sequence at context C: KV held C·(r + ρ + d) numbers; a decode step reads
min(C, k − 1)·(r + ρ) latent numbers (the new token's own entry is counted as written) and
C·d indexer numbers, writes r + ρ + d; its attention costs 2·H·(r + ρ) + 2·H·r FLOPs per
attended pair (min(C + 1, k) pairs) and the indexer 2·I·d per pair over all C + 1.

Attention runs in the latent ("absorbed", MQA-like) form, in prefill as in decode, as
FlashMLA's sparse kernels run it: the shape's ``qk_head_dim`` is r + ρ (scores against the
latent and the rope key) and ``v_head_dim`` r; the absorbed per-head projections cost what
``kv_b`` costs per token, so the linears are V3's. A prefill's attention grows as n·min(n, k)
instead of n²/2.

Approximations and limits: the latent and the indexer keys are priced in the one
``--kv-dtype`` (FlashMLA's FP8 sparse-decode cache holds 656 B a token: 512 FP8 latent numbers,
4 FP32 scales and 64 BF16 rope numbers; the reference indexer cache 128 FP8 numbers and one FP32
scale, 132 B); engines that run short prefills (≤ k tokens) as dense MHA over decompressed keys
do fewer FLOPs per pair (2·H·(qk_nope + ρ + v_head_dim) = 81,920 per layer for V3.2 instead of
278,528) than priced here; the indexer's ReLU, head weighting, Hadamard rotation and top-k
selection are elementwise or sorting work, 0 FLOPs like norms. Read and not modelled:
``scale_fmt``, ``quantization_config`` (FP8 weights: napkin's ``--weights`` sets one format).
Rejected with a message naming the field: a config without MLA (``kv_lora_rank``) or without
``q_lora_rank`` (the indexer's query reads MLA's low-rank query), and missing indexer keys.
"""

from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from napkin.errors import NapkinError
from napkin.specs.hf_keys import HFConfig
from napkin.specs.hf_layers import standard_model
from napkin.specs.model import ModelSpec
from napkin.specs.modules import AttentionShape, Block, CompressedKV, Linear, OpKind, Stage

MAX_INDEX = 1 << 24
"""Largest index head count, width and top-k a config may give (16.8 M; V3.2: 64, 128, 2048)."""


class DeepseekV32Keys(BaseModel):
    """The ``config.json`` keys DSA reads (the rest are read by ``HFConfig`` as DeepSeek-V3's)."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    index_n_heads: int = Field(gt=0, le=MAX_INDEX)
    """Indexer query heads I."""
    index_head_dim: int = Field(gt=0, le=MAX_INDEX)
    """Width d of each indexer head and of the indexer key cached per token."""
    index_topk: int = Field(gt=0, le=MAX_INDEX)
    """Tokens k each query attends through MLA."""
    kv_lora_rank: int = Field(gt=0)
    q_lora_rank: int = Field(gt=0)
    qk_rope_head_dim: int = Field(ge=0)


def from_deepseek_v32(cfg: HFConfig, raw: dict[str, Any], name: str, source: str
                      ) -> ModelSpec:
    """Build the :class:`ModelSpec` of a DeepSeek-V3.2 ``config.json`` (``raw``, already read
    into ``cfg``): DeepSeek-V3's model with every block, the MTP module's included, made a DSA
    block (:func:`dsa_block`)."""
    try:
        keys = DeepseekV32Keys.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise NapkinError(f"model: {source}: field {field!r}: {err['msg']} "
                          "(a deepseek_v32 config needs it for DSA)") from None
    base = standard_model(cfg.model_copy(update={"model_type": "deepseek_v3"}), name, source)
    made: dict[Block, Block] = {}

    def dsa(block: Block) -> Block:
        if block not in made:
            made[block] = dsa_block(block, cfg.hidden_size, keys)
        return made[block]

    mtp = replace(base.mtp, block=dsa(base.mtp.block)) if base.mtp else None
    return replace(base, model_type=cfg.model_type,
                   blocks=tuple(dsa(b) for b in base.blocks), mtp=mtp)


def dsa_block(block: Block, hidden_size: int, keys: DeepseekV32Keys) -> Block:
    """DeepSeek-V3's MLA ``block`` with DSA: the indexer's ``attn/indexer/q_b`` (q_lora_rank →
    I·d), ``attn/indexer/k`` (h → d), ``attn/indexer/weights`` (h → I) and ``k_norm`` (2·d),
    and its cache as a ratio-1 compressed stream attended top-k (see the module docstring)."""
    latent, rope = keys.kv_lora_rank, keys.qk_rope_head_dim
    heads, dim = keys.index_n_heads, keys.index_head_dim
    attention = AttentionShape(kind="dsa", num_heads=block.attention.num_heads, num_kv_heads=1,
                               qk_head_dim=latent + rope, v_head_dim=latent, k_elements=0,
                               v_elements=0, latent_dim=latent)
    proj = OpKind.PROJECTION
    indexer = (
        Linear("attn/indexer/q_b", proj, keys.q_lora_rank, heads * dim, False, Stage.ATTN_UP),
        Linear("attn/indexer/k", proj, hidden_size, dim, False, Stage.ATTN_IN),
        Linear("attn/indexer/weights", proj, hidden_size, heads, False, Stage.ATTN_IN),
    )
    n_attn = sum(1 for lin in block.linears if lin.name.startswith("attn/"))
    return replace(
        block,
        attention=attention,
        window=0,
        linears=block.linears[:n_attn] + indexer + block.linears[n_attn:],
        other_params=(*block.other_params, ("attn/indexer/k_norm", 2 * dim)),
        compressed=CompressedKV(ratio=1, entry_elements=latent + rope, top_k=keys.index_topk,
                                index_heads=heads, index_head_dim=dim),
    )
