"""Itemized FLOPs of one training update, from the accounting layer's forward and backward ops.

A micro-batch holds ``micro_batch`` sequences; each sequence packs documents (attention stays
inside a document: causal pairs per document) and has ``labels`` labelled positions (the loss
tokens; all of them by default). The LM head runs on every position (``head="all"``) or only on
labelled ones (``head="labelled"``: hidden states are gathered first). Backward follows
:func:`napkin.accounting.backward` (dW only where modules train; dX where anything upstream
trains). Recomputation adds forward work back: ``full`` re-runs every layer's forward during
backward (checkpoints at layer inputs), ``selective`` only the attention core (QKᵀ, softmax,
AV), as Korthikanti et al. 2022 do; ``selective-op`` is torchtitan's per-op policy (every
block keeps the outputs of its matmuls and attention but re-runs every second matmul in call
order — q, k, v, o, gate, up, down → k, o and up — and the elementwise ops); ``selective-layer``
is torchtitan's every-second-layer policy (half the layers re-run in full). An update
accumulates ``accumulation`` micro-batches.

The gap to ``6ND`` (N all parameters, active ones for MoE; D the tokens) is explained term by
term (:class:`GapTo6ND`).
"""

from dataclasses import dataclass

from napkin.accounting.backward import backward
from napkin.accounting.batch import Batch, Segment
from napkin.accounting.forward import Precision, forward
from napkin.accounting.ops import CallCost, Op, OpKind
from napkin.accounting.rules import train_flops_6nd, train_flops_palm_per_token
from napkin.errors import require
from napkin.specs.model import ModelSpec

ATTENTION = (OpKind.ATTN_SCORE, OpKind.ATTN_VALUE)
RECOMPUTE = ("none", "selective", "selective-op", "selective-layer", "full")
"""Activation recomputation policies (module docstring)."""
BLOCK_LINEARS = (OpKind.PROJECTION, OpKind.FFN, OpKind.EXPERT)
"""The matmuls an FP8 training recipe runs at the low-precision rate: every linear layer of
the blocks (torchao's ``Float8Linear`` swaps each ``nn.Linear``; torchtitan leaves the output
head, the router, attention's QKᵀ and AV, and the norms in BF16)."""


@dataclass(frozen=True)
class TrainShape:
    """What one update processes."""

    documents: tuple[int, ...]
    micro_batch: int = 1
    accumulation: int = 1
    labels: int | None = None
    head: str = "all"
    recompute: str = "none"

    def __post_init__(self) -> None:
        require(len(self.documents) >= 1 and min(self.documents) >= 1,
                "seq: documents must be >= 1 token each")
        require(self.micro_batch >= 1, f"micro-batch: must be >= 1, got {self.micro_batch}")
        require(self.accumulation >= 1, f"accumulation: must be >= 1, got {self.accumulation}")
        require(self.labels is None or 0 <= self.labels <= self.sequence_tokens,
                f"labels: must be between 0 and the {self.sequence_tokens} tokens of a "
                f"sequence, got {self.labels}")
        require(self.head in ("all", "labelled"), f"head: must be all or labelled, got "
                f"{self.head!r}")
        require(self.recompute in RECOMPUTE,
                f"recompute: must be one of {', '.join(RECOMPUTE)}, got {self.recompute!r}")

    @property
    def sequence_tokens(self) -> int:
        return sum(self.documents)

    @property
    def labelled_per_sequence(self) -> int:
        return self.sequence_tokens if self.labels is None else self.labels

    @property
    def tokens_per_update(self) -> int:
        """Input tokens read per update: ``a·B_μ·P``."""
        return self.accumulation * self.micro_batch * self.sequence_tokens

    @property
    def labels_per_update(self) -> int:
        """Labelled tokens normalizing the loss: ``a·B_μ·P_label``."""
        return self.accumulation * self.micro_batch * self.labelled_per_sequence

    def batch(self) -> Batch:
        """One micro-batch as documents (segments); read-outs on the last documents' tail."""
        readout_left = self.labelled_per_sequence if self.head == "labelled" else None
        segments = []
        for doc in reversed(self.documents):
            if readout_left is None:
                out = doc
            else:
                out = min(doc, readout_left)
                readout_left -= out
            segments.append(Segment(0, doc, out, self.micro_batch))
        return Batch(tuple(reversed(segments)))


@dataclass(frozen=True)
class GapTo6ND:
    """``itemized − 6ND`` (FLOPs of one micro-batch) split into its causes; they add up exactly.

    ``attention``: QKᵀ and AV, forward and backward (no parameters, so 6ND misses them);
    ``embedding``: −6·V·h·T for an untied embedding (a lookup, no matmul); ``non_matmul``:
    −6·T·(norms, biases, sinks, routing biases); ``head_skipped``: −6·V·h per position the LM
    head does not evaluate; ``recompute``: forward work re-run in backward; ``frozen``: dX/dW
    that frozen modules skip (≤ 0). For MoE, N counts active parameters (chosen experts).
    """

    attention_flops: float
    embedding_flops: float
    non_matmul_flops: float
    head_skipped_flops: float
    recompute_flops: float
    frozen_flops: float

    @property
    def total_flops(self) -> float:
        return (self.attention_flops + self.embedding_flops + self.non_matmul_flops
                + self.head_skipped_flops + self.recompute_flops + self.frozen_flops)


@dataclass(frozen=True)
class TrainFlops:
    """FLOPs of one micro-batch (forward, backward, recompute) and of the whole update."""

    shape: TrainShape
    forward: CallCost
    backward: CallCost
    recompute_flops: float
    six_nd_flops: float
    """6·N·D for one micro-batch (N: active parameters; D: its tokens)."""
    gap: GapTo6ND
    recomputed: tuple[tuple[Op, float], ...] = ()
    """The forward ops recompute re-runs, each with the share of its layers re-run."""

    @property
    def micro_batch_flops(self) -> float:
        return self.forward.flops + self.backward.flops + self.recompute_flops

    @property
    def update_flops(self) -> float:
        """All micro-batches of one update."""
        return self.shape.accumulation * self.micro_batch_flops

    @property
    def attention_flops(self) -> float:
        """QKᵀ and AV, forward and backward (recompute excluded), per micro-batch."""
        return sum(op.flops for op in self.forward.ops + self.backward.ops if op.kind in ATTENTION)

    def flops_of(self, kinds: tuple[OpKind, ...]) -> float:
        """FLOPs of the ops of ``kinds`` per micro-batch: forward, backward and recompute."""
        return sum(op.flops for op in self.forward.ops + self.backward.ops
                   if op.kind in kinds) + sum(op.flops * share for op, share in self.recomputed
                                             if op.kind in kinds)

    def by_kind(self) -> dict[str, tuple[float, float]]:
        """(forward, backward) FLOPs per op kind, per micro-batch."""
        out: dict[str, list[float]] = {}
        for i, cost in enumerate((self.forward, self.backward)):
            for op in cost.ops:
                out.setdefault(op.kind.value, [0.0, 0.0])[i] += op.flops
        return {k: (v[0], v[1]) for k, v in out.items() if v[0] or v[1]}


def train_flops(model: ModelSpec, shape: TrainShape, frozen: tuple[str, ...] = (),
                precision: Precision | None = None) -> TrainFlops:
    """Itemized FLOPs of one update of ``model`` on ``shape`` with ``frozen`` modules."""
    precision = precision or Precision.of()
    fwd = forward(model, shape.batch(), precision)
    bwd = backward(model, fwd, frozen)
    recomputed = recomputed_ops(model, fwd, shape.recompute)
    recompute = sum(op.flops * share for op, share in recomputed)
    tokens = shape.micro_batch * shape.sequence_tokens
    return TrainFlops(shape, fwd, bwd, recompute, train_flops_6nd(model.active_params, tokens),
                      _gap(model, fwd, bwd, recompute, tokens), recomputed)


def recomputed_ops(model: ModelSpec, fwd: CallCost, recompute: str
                   ) -> tuple[tuple[Op, float], ...]:
    """The forward ops ``recompute`` re-runs in backward and the share of their layers it
    re-runs (module docstring): ``full`` every op inside a layer, ``selective-layer`` the same
    on half the layers, ``selective`` QKᵀ and AV, ``selective-op`` every second linear of a
    block in call order."""
    layer_ops = [op for op in fwd.ops if op.layers]
    if recompute == "full":
        return tuple((op, 1.0) for op in layer_ops)
    if recompute == "selective-layer":
        return tuple((op, 0.5) for op in layer_ops)
    if recompute == "selective":
        return tuple((op, 1.0) for op in layer_ops if op.kind in ATTENTION)
    if recompute == "selective-op":
        second = {lin.name for g in model.layer_groups
                  for lin in g.block.linears[1::2]}
        return tuple((op, 1.0) for op in layer_ops
                     if op.kind in BLOCK_LINEARS and op.module in second)
    return ()


def palm_flops_per_token(model: ModelSpec, seq: int) -> float:
    """:func:`~napkin.accounting.rules.train_flops_palm_per_token` for ``model`` at ``seq``
    tokens: N its active parameters, H and Q its first layer's query heads and dimension."""
    att = model.blocks[0].attention
    return train_flops_palm_per_token(model.active_params, model.num_layers, att.num_heads,
                                      att.qk_head_dim, seq)


def expert_train_flops_per_token(model: ModelSpec) -> float:
    """FLOPs of the routed and shared expert matmuls per training token, forward + backward.

    The ``expert`` ops of :func:`train_flops` on one token, nothing frozen: per MoE layer the
    token passes k routed and s shared SwiGLU experts of three ``h × f`` matmuls, 2 FLOPs per
    multiply-add, and backward (dX + dW) doubles the forward, so in sum
    ``18·n_L·h·f·(k + s)`` FLOPs/token (chapter 3, §3.6.2: 18 = 3 projections × 2 × 3). 0 for
    a dense model. Attention, routers, the LM head, MTP and the optimizer are not in it.
    """
    fwd, bwd = train_flops(model, TrainShape((1,))).by_kind().get("expert", (0.0, 0.0))
    return fwd + bwd


def _gap(model: ModelSpec, fwd: CallCost, bwd: CallCost, recompute: float,
         tokens: int) -> GapTo6ND:
    hv = model.hidden_size * model.vocab_size
    head = next(op.flops for op in fwd.ops if op.kind == OpKind.LM_HEAD)
    readouts = head / (2.0 * hv)
    non_matmul_params = model.final_norm_params
    for g in model.layer_groups:
        b = g.block
        per_layer = b.norm_params + sum(lin.params - lin.macs_per_token for lin in b.linears)
        if b.experts:
            per_layer += b.experts.num_active * sum(lin.params - lin.macs_per_token
                                                    for lin in b.experts.linears)
        non_matmul_params += per_layer * g.num_layers
    return GapTo6ND(
        attention_flops=3.0 * sum(op.flops for op in fwd.ops if op.kind in ATTENTION),
        embedding_flops=0.0 if model.tie_word_embeddings else -6.0 * hv * tokens,
        non_matmul_flops=-6.0 * non_matmul_params * tokens,
        head_skipped_flops=-6.0 * hv * (tokens - readouts),
        recompute_flops=recompute,
        frozen_flops=bwd.flops - 2.0 * fwd.flops,
    )
