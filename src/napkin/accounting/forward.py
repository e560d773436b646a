"""The forward operator list of one call on a batch."""

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from napkin.accounting.batch import BatchShape
from napkin.accounting.ops import CallCost, Op
from napkin.specs.dtypes import (
    SIXTEEN_BIT,
    KVFormat,
    WeightFormat,
    kv_format,
    parse_unquantized,
    weight_format,
)
from napkin.specs.model import LayerGroup, ModelSpec
from napkin.specs.modules import (
    RECURRENT_STATE_BYTES,
    Block,
    Linear,
    LinearAttention,
    OpKind,
    Stage,
)


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
    unquantized: frozenset[str] = frozenset()
    """Parts the checkpoint keeps in BF16 (:data:`napkin.specs.dtypes.UNQUANTIZED_ROLES`):
    their weights take 2 bytes each and, when ``weights`` computes below 16 bits, their
    matmuls run at the BF16 rate. Empty (the default): ``weights`` applies to every
    parameter."""

    @classmethod
    def of(cls, weights: str = "bf16", kv: str = "bf16", read_embedding: bool = False,
           unquantized: str | tuple[str, ...] | frozenset[str] | None = None) -> "Precision":
        """Formats by name (``bf16``, ``int4-g128``, ``fp8``…); ``unquantized`` a
        comma-separated subset of ``attention,router,shared-experts,dense-mlp,lm-head,
        embedding``."""
        return cls(weight_format(weights), kv_format(kv), read_embedding,
                   parse_unquantized(unquantized))

    def format_of(self, role: str | None) -> WeightFormat:
        """The format of one part's weights: BF16 for a part in ``unquantized`` when the
        weight format is narrower than 16 bits, else ``weights``."""
        if role in self.unquantized and self.weights.bits_per_weight < 16:
            return BF16
        return self.weights

    def sixteen_bit(self, role: str | None) -> bool:
        """Whether the part's matmuls run at the 16-bit rate while ``weights`` computes below
        16 bits (an unquantized part of an FP8 or FP4 model)."""
        return role in self.unquantized and self.weights.compute not in SIXTEEN_BIT


BF16 = weight_format("bf16")
"""The format an unquantized part keeps (what the public checkpoints store)."""


def role_of(kind: OpKind) -> str | None:
    """The :data:`~napkin.specs.dtypes.UNQUANTIZED_ROLES` entry of a block's or the head's
    matmul of ``kind`` (``EXPERT`` among a block's own linears is a shared expert; routed
    experts, norms and mHC mixers have none: they always take the weight format)."""
    return {OpKind.PROJECTION: "attention", OpKind.ROUTER: "router",
            OpKind.EXPERT: "shared-experts", OpKind.FFN: "dense-mlp",
            OpKind.LM_HEAD: "lm-head", OpKind.EMBEDDING: "embedding"}.get(kind)


def weight_bytes(model: ModelSpec, precision: Precision) -> float:
    """Bytes all of ``model``'s weights occupy: ``params × bytes_per_weight`` of each part's
    format (:meth:`Precision.format_of`), MTP modules apart; a tied head is the embedding table,
    counted once in the ``embedding`` part's format."""
    def nbytes(params: float, role: str | None) -> float:
        return params * precision.format_of(role).bytes_per_weight
    total = (nbytes(model.embedding_params, "embedding") + nbytes(model.lm_head_params, "lm-head")
             + nbytes(model.final_norm_params, None))
    for g in model.layer_groups:
        b = g.block
        layer = sum(nbytes(lin.params, role_of(lin.kind)) for lin in b.linears)
        layer += nbytes(b.experts.params if b.experts else 0, None) + nbytes(b.norm_params, None)
        total += g.num_layers * layer
    return total


def routed_weight_bytes(model: ModelSpec, precision: Precision) -> float:
    """Bytes of the routed experts alone (part of :func:`weight_bytes`): ``Σ layers ×
    experts × params per expert × bytes per weight`` (routed experts always take the weight
    format). Expert parallelism spreads these over every rank of a replica."""
    return sum(g.num_layers * g.block.experts.params for g in model.layer_groups
               if g.block.experts) * precision.weights.bytes_per_weight


def experts_touched(num_experts: int, top_k: int, tokens: int) -> float:
    """Expected distinct experts a layer reads for ``tokens`` tokens, uniform routing:
    ``E·(1 − (1 − k/E)^T)`` (each token picks k of E; an expert is missed with prob 1 − k/E)."""
    if tokens <= 0:
        return 0.0
    return num_experts * (1 - (1 - top_k / num_experts) ** tokens)


def gemm_flops(m: float, n: float, k: float) -> float:
    """FLOPs of an ``M × K · K × N`` product: ``2·M·N·K``."""
    return 2.0 * m * n * k


def gemm_operand_bytes(m: float, n: float, k: float, bytes_per_element: float) -> float:
    """Bytes an ``M × K · K × N`` product reads and writes once each: ``(MK + KN + MN)·b``."""
    return (m * k + k * n + m * n) * bytes_per_element


def linear_flops(lin: Linear, tokens: float) -> float:
    """``2·in·out·T``: one multiply-add (2 FLOPs) per weight per token (bias adds not counted)."""
    return 2.0 * lin.macs_per_token * tokens


def linear_ops(prefix: str, linears: Sequence[Linear], tokens: int, precision: Precision,
               layers: int = 1) -> tuple[Op, ...]:
    """Matmuls outside a :class:`ModelSpec`'s blocks (a patch embedding, a merger, the other
    stream of a two-stream DiT) applied to ``tokens`` tokens in each of ``layers`` layers."""
    wb = precision.weights.bytes_per_weight
    return tuple(Op(f"{prefix}/{lin.name}", lin.name, lin.kind, lin.stage, layers,
                    linear_flops(lin, tokens) * layers, lin.params * wb * layers)
                 for lin in linears)


def group_label(model: ModelSpec, block: Block) -> str:
    """``layers`` for uniform models; where groups differ ``dense``/``moe``, ``-hash`` for
    hash-routed experts, ``-swa<W>`` for a sliding window and ``-csa<r>``/``-hca<r>`` for a
    compressed KV stream (DeepSeek-V4), ``-gdn``/``-kda`` for linear attention (Gated
    DeltaNet, Kimi Delta Attention: :attr:`~napkin.specs.modules.LinearAttention.kind`), then
    ``-2``, ``-3``… should two groups still match."""
    return _group_labels(model)[block]


@lru_cache(maxsize=128)
def _group_labels(model: ModelSpec) -> dict[Block, str]:
    if len(model.layer_groups) == 1:
        return {model.layer_groups[0].block: "layers"}
    labels: dict[Block, str] = {}
    seen: dict[str, int] = {}
    for g in model.layer_groups:
        b = g.block
        label = "moe" if b.experts else "dense"
        if b.experts and b.experts.routing != "top-k":
            label += f"-{b.experts.routing}"
        if b.window:
            label += f"-swa{b.window}"
        if b.compressed:
            label += f"-{'csa' if b.compressed.top_k else 'hca'}{b.compressed.ratio}"
        if b.linear_attention:
            label += f"-{b.linear_attention.kind}"
        seen[label] = seen.get(label, 0) + 1
        labels[b] = label if seen[label] == 1 else f"{label}-{seen[label]}"
    return labels


@dataclass(frozen=True)
class OpRates:
    """One operator's costs per unit of each batch aggregate (see :class:`BatchShape`).

    ``weight_read`` says when ``weight_bytes`` are read: ``always`` (every call), ``readout``
    (only when the call reads out: the LM head), ``no_readout`` (a tied embedding table counted
    as read only when the head does not read it). ``experts`` = (E, k) makes ``weight_bytes``
    a per-expert figure, times the experts the call's tokens touch. ``state_bytes`` is a
    linear-attention layer's fixed state per sequence: read once for each resumed sequence and
    written once for each stepped one (:class:`BatchShape`), whatever their lengths.
    """

    name: str
    module: str
    kind: OpKind
    stage: int
    layers: int
    window: int | None = None
    flops_per_token: float = 0.0
    flops_per_readout: float = 0.0
    flops_per_pair: float = 0.0
    flops_per_decode_pair: float = 0.0
    flops_per_prefill_cached: float = 0.0
    weight_bytes: float = 0.0
    weight_read: str = "always"
    experts: tuple[int, int] | None = None
    kv_read_per_cached: float = 0.0
    kv_write_per_token: float = 0.0
    state_bytes: float = 0.0
    sixteen_bit: bool = False
    """The op's matmul runs at the 16-bit rate (an unquantized part, ``Precision.sixteen_bit``)."""

    def weight_bytes_for(self, tokens: int, readout: int) -> float:
        """Weight bytes this op reads in a call of ``tokens`` new tokens, ``readout`` read-outs."""
        if self.experts is not None:
            return experts_touched(*self.experts, tokens) * self.weight_bytes
        if self.weight_read == "readout":
            return self.weight_bytes if readout > 0 else 0.0
        if self.weight_read == "no_readout":
            return self.weight_bytes if readout == 0 else 0.0
        return self.weight_bytes

    def op(self, batch: BatchShape) -> Op:
        """This op's row for ``batch``."""
        tokens, readout = batch.new_tokens, batch.readout_tokens
        flops = self.flops_per_token * tokens + self.flops_per_readout * readout
        if self.flops_per_pair or self.flops_per_decode_pair:
            flops += self.flops_per_pair * batch.attention_pairs(self.window)
            if self.flops_per_decode_pair:
                flops += self.flops_per_decode_pair * batch.decode_pairs(self.window)
        if self.flops_per_prefill_cached:
            flops += self.flops_per_prefill_cached * batch.prefill_cached_tokens()
        kv_read = 0.0
        if self.kv_read_per_cached:
            kv_read = self.kv_read_per_cached * batch.cached_tokens_read(self.window)
        kv_write = self.kv_write_per_token * tokens
        if self.state_bytes:
            kv_read += self.state_bytes * batch.resumed_sequences()
            kv_write += self.state_bytes * batch.stepped_sequences()
        return Op(self.name, self.module, self.kind, self.stage, self.layers, flops,
                  self.weight_bytes_for(tokens, readout), kv_read, kv_write,
                  sixteen_bit=self.sixteen_bit)


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

    DeepSeek-V4 layers attend over their sliding window (``attn/scores``, ``attn/values``: one
    shared K=V head, cached once) and, in CSA/HCA layers, over the compressed stream and its
    indexer (``attn/compressed_*``, ``attn/indexer_scores``; see :func:`_compressed_rates`).

    Linear-attention layers (Gated DeltaNet, Kimi Delta Attention) have no per-pair work and
    no KV cache: a fixed number of FLOPs per token and a fixed state per sequence, read and
    written once a call (see :func:`_linear_attention_rates`).
    """
    if batch.new_tokens == 0:
        return CallCost(())
    return CallCost(tuple(rates.op(batch) for rates in op_rates(model, precision)))


@lru_cache(maxsize=128)
def op_rates(model: ModelSpec, precision: Precision) -> tuple[OpRates, ...]:
    """Every operator of the model as per-unit rates (the single source of forward costs)."""
    wb, kvb = precision.weights.bytes_per_weight, precision.kv.bytes_per_element
    h = model.hidden_size
    table = model.embedding_params
    embed_bytes = table * precision.format_of("embedding").bytes_per_weight
    embed_read = "never"
    if precision.read_embedding:
        embed_read = "no_readout" if model.tie_word_embeddings else "always"
    rates = [OpRates("embed", "embed", OpKind.EMBEDDING, -1, 0,
                     weight_bytes=0.0 if embed_read == "never" else embed_bytes,
                     weight_read="always" if embed_read == "never" else embed_read)]
    for group in model.layer_groups:
        rates += _block_rates(model, group, precision, kvb)
    rates.append(OpRates("final_norm", "final_norm", OpKind.NORM, 99, 0, weight_bytes=h * wb))
    rates.append(OpRates("lm_head", "lm_head", OpKind.LM_HEAD, 100, 0,
                         flops_per_readout=2.0 * h * model.vocab_size,
                         weight_bytes=table * precision.format_of("lm-head").bytes_per_weight,
                         weight_read="readout", sixteen_bit=precision.sixteen_bit("lm-head")))
    return tuple(rates)


def _compressed_rates(label: str, block: Block, n: int, kvb: float) -> list[OpRates]:
    """Attention over a compressed KV stream (DeepSeek-V4 CSA/HCA), per pair of the token
    span it covers.

    A query at position p sees (p+1)/r entries of ``entry_elements`` numbers (HCA: all; CSA: at
    most ``top_k``, i.e. the token span ``r·top_k``): scores and values cost
    ``2·heads·head_dim`` per entry, so ``2·heads·head_dim/r`` per token pair of that span; a
    decode step reads the entries it attends (``entry_elements·bytes/r`` per cached token of
    the span) and every token adds ``entry_elements/r`` numbers. The indexer (CSA) scores every
    entry, ``2·index_heads·index_head_dim/r`` per token pair over the whole context, and reads
    and writes ``index_head_dim/r`` numbers per token. Entries are counted in fractions (⌊·⌋
    dropped): within one entry per query of the exact count.
    """
    c, att = block.compressed, block.attention
    if c is None:
        return []
    r, heads, span = c.ratio, att.num_heads, c.attended_window
    entry = c.entry_elements * kvb * n / r
    rates = [
        OpRates(f"{label}/attn/compressed_scores", "attn/compressed_scores", OpKind.ATTN_SCORE,
                Stage.SCORE, n, span, flops_per_pair=2.0 * heads * att.qk_head_dim * n / r,
                kv_read_per_cached=entry, kv_write_per_token=entry),
        OpRates(f"{label}/attn/compressed_values", "attn/compressed_values", OpKind.ATTN_VALUE,
                Stage.VALUE, n, span, flops_per_pair=2.0 * heads * att.v_head_dim * n / r),
    ]
    if c.index_heads:
        key = c.index_head_dim * kvb * n / r
        rates.append(OpRates(
            f"{label}/attn/indexer_scores", "attn/indexer_scores", OpKind.ATTN_SCORE,
            Stage.SCORE, n, None, flops_per_pair=2.0 * c.index_heads * c.index_head_dim * n / r,
            kv_read_per_cached=key, kv_write_per_token=key))
    return rates


def _linear_attention_rates(label: str, la: LinearAttention, n: int,
                            kvb: float) -> list[OpRates]:
    """A Gated DeltaNet or Kimi Delta Attention mixer beyond its projections (GDN's
    ``attn/in_proj_*``, ``attn/out_proj``; KDA's ``attn/q``/``k``/``v``, the low-rank decay and
    gate projections ``attn/f_*``/``attn/g_*``, ``attn/b``, ``attn/o``; costed as every
    linear), in ``n`` layers, per token and per sequence.

    - ``attn/conv1d``: the causal depthwise convolution (KDA: three, over q, k and v, the
      same ``conv_dim`` channels in all), ``conv_kernel`` multiply-adds per channel and token:
      ``2·conv_dim·K`` FLOPs per token (its weights are read with the norms');
    - the delta rule, per value head and token, on the head's ``dk × dv`` state S (decayed
      first: GDN ``S ← exp(g)·S`` with one g per head, KDA ``S ← Diag(exp(g))·S`` with one g
      per key channel, fla's ``naive_recurrent_kda``; dk·dv multiplies either way):
      ``Sᵀk`` (dk·dv MACs), the rank-1 update ``S += k·(β(v −
      Sᵀk))ᵀ`` (dk·dv), the output ``Sᵀq`` (dk·dv): ``attn/state_update`` =
      ``4·Hv·dk·dv`` FLOPs per token (the read against k and the update, the analogue of
      attention's scores) and ``attn/state_output`` = ``2·Hv·dk·dv`` (the analogue of its
      values), 6·Hv·dk·dv in all. The decay (dk·dv multiplies), β, the q/k L2 norms, the
      gates and the gated RMSNorm are elementwise and count 0 FLOPs, like norms;
    - the state: ``Hv·dk·dv`` numbers at :data:`~napkin.specs.modules.RECURRENT_STATE_BYTES`
      (FP32) plus ``conv_dim·(K − 1)`` in the KV format, read once per resumed sequence and
      written once per stepped one (``OpRates.state_bytes``) — a decode step moves
      ``2·(4·Hv·dk·dv + kvb·conv_dim·(K − 1))`` bytes per sequence and layer, at any context.

    Prefill is counted with the same per-token rates: the chunked kernels
    (``chunk_gated_delta_rule``, ``chunk_kda``, chunks of 64) add intra-chunk products of about
    ``chunk·(dk + dv)`` MACs per token and head on top, left out.
    """
    dkdv = la.num_v_heads * la.key_head_dim * la.value_head_dim
    state = (la.recurrent_elements * RECURRENT_STATE_BYTES + la.conv_elements * kvb) * n
    return [
        OpRates(f"{label}/attn/conv1d", "attn/conv1d", OpKind.PROJECTION, Stage.ATTN_UP, n,
                flops_per_token=2.0 * la.conv_dim * la.conv_kernel * n),
        OpRates(f"{label}/attn/state_update", "attn/state_update", OpKind.ATTN_SCORE,
                Stage.SCORE, n, flops_per_token=4.0 * dkdv * n, state_bytes=state),
        OpRates(f"{label}/attn/state_output", "attn/state_output", OpKind.ATTN_VALUE,
                Stage.VALUE, n, flops_per_token=2.0 * dkdv * n),
    ]


def _block_rates(model: ModelSpec, group: LayerGroup, precision: Precision,
                 kvb: float) -> list[OpRates]:
    block, n = group.block, group.num_layers
    label, att, window = group_label(model, block), block.attention, block.window
    wb = precision.weights.bytes_per_weight

    def linear(lin: Linear) -> OpRates:
        role = role_of(lin.kind)
        return OpRates(f"{label}/{lin.name}", lin.name, lin.kind, lin.stage, n,
                       flops_per_token=linear_flops(lin, n),
                       weight_bytes=lin.params * precision.format_of(role).bytes_per_weight * n,
                       sixteen_bit=precision.sixteen_bit(role))

    rates = [linear(lin) for lin in block.linears if lin.stage <= Stage.ATTN_UP]
    # per-pair widths; MLA decode pairs attend in latent space (see forward's docstring)
    qk_extra = v_extra = 0
    if att.kind == "mla":
        qk_extra = att.k_elements - att.qk_head_dim  # latent + rope wide instead of qk
        v_extra = att.latent_dim - att.v_head_dim  # latent wide instead of v
        kv_b = next(lin for lin in block.linears if lin.name == "attn/kv_b")
        rates.append(OpRates(f"{label}/attn/kv_b_cached", "attn/kv_b_cached", OpKind.PROJECTION,
                             Stage.ATTN_UP, n,
                             flops_per_prefill_cached=linear_flops(kv_b, n),
                             sixteen_bit=precision.sixteen_bit("attention")))
    heads = att.num_heads
    if block.linear_attention is not None:
        rates += _linear_attention_rates(label, block.linear_attention, n, kvb)
    else:
        rates.append(OpRates(
            f"{label}/attn/scores", "attn/scores", OpKind.ATTN_SCORE, Stage.SCORE, n, window,
            flops_per_pair=2.0 * heads * att.qk_head_dim * n,
            flops_per_decode_pair=2.0 * heads * qk_extra * n,
            kv_read_per_cached=att.k_elements * kvb * n,
            kv_write_per_token=att.k_elements * kvb * n,
        ))
        rates.append(OpRates(
            f"{label}/attn/values", "attn/values", OpKind.ATTN_VALUE, Stage.VALUE, n, window,
            flops_per_pair=2.0 * heads * att.v_head_dim * n,
            flops_per_decode_pair=2.0 * heads * v_extra * n,
            kv_read_per_cached=att.v_elements * kvb * n,
            kv_write_per_token=att.v_elements * kvb * n,
        ))
    if block.compressed:
        rates += _compressed_rates(label, block, n, kvb)
    rates += [linear(lin) for lin in block.linears if lin.stage > Stage.ATTN_UP]
    if block.experts:
        ex = block.experts
        rates += [OpRates(f"{label}/{lin.name}", lin.name, OpKind.EXPERT, lin.stage, n,
                          flops_per_token=linear_flops(lin, ex.num_active * n),
                          weight_bytes=lin.params * wb * n,
                          experts=(ex.num_experts, ex.num_active))
                  for lin in ex.linears]
    rates.append(OpRates(f"{label}/norms", "norms", OpKind.NORM, Stage.ATTN_IN, n,
                         weight_bytes=block.norm_params * wb * n))
    return rates
