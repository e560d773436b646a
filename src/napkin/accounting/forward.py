"""The forward operator list of one call on a batch."""

from dataclasses import dataclass

from napkin.accounting.batch import BatchShape
from napkin.accounting.ops import CallCost, Op
from napkin.specs.dtypes import KVFormat, WeightFormat, kv_format, weight_format
from napkin.specs.model import LayerGroup, ModelSpec
from napkin.specs.modules import Block, OpKind, Stage


@dataclass(frozen=True)
class Precision:
    """Storage formats of weights and KV cache, and the decode weight-read convention.

    ``read_embedding=False`` is the chapter's convention: a step reads every weight except the
    embedding table, whose lookup touches a few rows (counted as 0). ``True`` is the question
    bank's napkin convention: every weight, embedding included (16.4 GB for Qwen3-8B in BF16).
    """

    weights: WeightFormat
    kv: KVFormat
    read_embedding: bool = False

    @classmethod
    def of(cls, weights: str = "bf16", kv: str = "bf16",
           read_embedding: bool = False) -> "Precision":
        """Formats by name (``bf16``, ``int4-g128``, ``fp8``…)."""
        return cls(weight_format(weights), kv_format(kv), read_embedding)


def experts_touched(num_experts: int, top_k: int, tokens: int) -> float:
    """Expected distinct experts a layer reads for ``tokens`` tokens, uniform routing:
    ``E·(1 − (1 − k/E)^T)`` (each token picks k of E; an expert is missed with prob 1 − k/E)."""
    if tokens <= 0:
        return 0.0
    return num_experts * (1 - (1 - top_k / num_experts) ** tokens)


def group_label(model: ModelSpec, block: Block) -> str:
    """``layers`` for uniform models; ``dense``/``moe`` and ``-swa<W>`` where groups differ."""
    if len(model.layer_groups) == 1:
        return "layers"
    label = "moe" if block.experts else "dense"
    return f"{label}-swa{block.window}" if block.window else label


def forward(model: ModelSpec, batch: BatchShape, precision: Precision) -> CallCost:
    """Operators of one forward call: FLOPs (2 per multiply-add), weight and KV bytes.

    Linear ``in × out`` on T tokens: ``2·in·out·T`` FLOPs, weights read once per call.
    Routed experts: ``T·k`` token passes; weights of the experts touched (uniform routing).
    Attention: ``QKᵀ`` = ``2·pairs·heads·qk_head_dim``, ``AV`` = ``2·pairs·heads·v_head_dim``;
    KV read = cached tokens attended, KV written = new tokens. LM head: ``2·h·V`` per read-out.

    MLA (DeepSeek) runs as engines run it: a decode token (one new token per sequence) attends
    in latent space with ``kv_b`` absorbed into the query and output (per pair
    ``heads·(kv_lora_rank + qk_rope_head_dim)`` for scores and ``heads·kv_lora_rank`` for
    values, "MQA with a 576-wide head"); a prefill decompresses its cached latents through
    ``kv_b`` (op ``attn/kv_b_cached``) and attends per head (``qk_head_dim``, ``v_head_dim``).
    The absorbed projections cost what ``kv_b`` costs per token, so linears are unchanged.
    """
    tokens = batch.new_tokens
    if tokens == 0:
        return CallCost(())
    wb, kvb = precision.weights.bytes_per_weight, precision.kv.bytes_per_element
    readout = batch.readout_tokens
    head_bytes = model.embedding_params * wb
    reads_head = readout > 0
    embed_bytes = 0.0
    if precision.read_embedding and not (model.tie_word_embeddings and reads_head):
        embed_bytes = head_bytes
    ops = [Op("embed", "embed", OpKind.EMBEDDING, -1, 0, 0.0, embed_bytes)]
    for group in model.layer_groups:
        ops += _block_ops(model, group, batch, wb, kvb)
    h = model.hidden_size
    ops.append(Op("final_norm", "final_norm", OpKind.NORM, 99, 0, 0.0, h * wb))
    ops.append(
        Op("lm_head", "lm_head", OpKind.LM_HEAD, 100, 0,
           2.0 * h * model.vocab_size * readout, head_bytes if reads_head else 0.0)
    )
    return CallCost(tuple(ops))


def _block_ops(
    model: ModelSpec, group: LayerGroup, batch: BatchShape, wb: float, kvb: float
) -> list[Op]:
    block, n = group.block, group.num_layers
    label = group_label(model, block)
    tokens = batch.new_tokens
    att = block.attention
    pairs = batch.attention_pairs(block.window)
    cached = batch.cached_tokens_read(block.window)
    ops: list[Op] = []
    for lin in block.linears:
        if lin.stage > Stage.ATTN_UP:
            continue
        ops.append(Op(f"{label}/{lin.name}", lin.name, lin.kind, lin.stage, n,
                      2.0 * lin.macs_per_token * tokens * n, lin.params * wb * n))
    # per-pair widths; MLA decode pairs attend in latent space (see the docstring)
    qk_pair_macs = pairs * att.qk_head_dim
    v_pair_macs = pairs * att.v_head_dim
    if att.kind == "mla":
        dpairs = batch.decode_pairs(block.window)
        qk_pair_macs += dpairs * (att.k_elements - att.qk_head_dim)  # latent + rope wide
        v_pair_macs += dpairs * (att.latent_dim - att.v_head_dim)  # latent wide
        kv_b = next(lin for lin in block.linears if lin.name == "attn/kv_b")
        ops.append(Op(f"{label}/attn/kv_b_cached", "attn/kv_b_cached", OpKind.PROJECTION,
                      Stage.ATTN_UP, n,
                      2.0 * kv_b.macs_per_token * batch.prefill_cached_tokens() * n))
    ops.append(Op(
        f"{label}/attn/scores", "attn/scores", OpKind.ATTN_SCORE, Stage.SCORE, n,
        2.0 * qk_pair_macs * att.num_heads * n, 0.0,
        cached * att.k_elements * kvb * n, tokens * att.k_elements * kvb * n,
    ))
    ops.append(Op(
        f"{label}/attn/values", "attn/values", OpKind.ATTN_VALUE, Stage.VALUE, n,
        2.0 * v_pair_macs * att.num_heads * n, 0.0,
        cached * att.v_elements * kvb * n, tokens * att.v_elements * kvb * n,
    ))
    for lin in block.linears:
        if lin.stage > Stage.ATTN_UP:
            ops.append(Op(f"{label}/{lin.name}", lin.name, lin.kind, lin.stage, n,
                          2.0 * lin.macs_per_token * tokens * n, lin.params * wb * n))
    if block.experts:
        ex = block.experts
        touched = experts_touched(ex.num_experts, ex.num_active, tokens)
        for lin in ex.linears:
            ops.append(Op(f"{label}/{lin.name}", lin.name, OpKind.EXPERT, lin.stage, n,
                          2.0 * lin.macs_per_token * tokens * ex.num_active * n,
                          touched * lin.params * wb * n))
    ops.append(Op(f"{label}/norms", "norms", OpKind.NORM, Stage.ATTN_IN, n, 0.0,
                  block.norm_params * wb * n))
    return ops
