"""Expert-layer passes of an encoder–decoder (CED) prefill (chapter 3.2.4).

A plain decoder sends each of P prompt tokens through all ``E + D`` layers. The CED path sends
them through the E encoder layers and replays only the last ``replay`` prompt tokens through the
D decoder layers (to build the decoder's sliding-window state): ``E·P + D·min(P, replay)``.
"""

from dataclasses import dataclass, replace

from napkin.accounting.batch import Batch, Segment
from napkin.accounting.ops import CallCost, OpKind
from napkin.errors import require
from napkin.timing.roofline import Deployment


@dataclass(frozen=True)
class LayerPasses:
    prompt_tokens: int
    full: int
    ced: int

    @property
    def ced_frac(self) -> float:
        """CED passes as a share of the full path."""
        return self.ced / self.full


MAX_TOKENS = 100_000_000
"""Largest prompt or replay length accepted (tokens)."""
MAX_LAYERS = 10_000
"""Largest encoder or decoder layer count accepted."""


def expert_layer_passes(prompt_tokens: int, encoder_layers: int = 20, decoder_layers: int = 20,
                        replay_tokens: int = 128) -> LayerPasses:
    """Token-layer passes through expert layers, full path vs CED path."""
    require(1 <= prompt_tokens <= MAX_TOKENS,
            f"prompt: must be in [1, {MAX_TOKENS:,}] tokens, got {prompt_tokens}")
    for name, layers in (("encoder-layers", encoder_layers), ("decoder-layers", decoder_layers)):
        require(0 <= layers <= MAX_LAYERS, f"{name}: must be in [0, {MAX_LAYERS}], got {layers}")
    require(0 <= replay_tokens <= MAX_TOKENS,
            f"replay: must be in [0, {MAX_TOKENS:,}] tokens, got {replay_tokens}")
    require(encoder_layers + decoder_layers >= 1,
            "encoder-layers: with decoder-layers must count at least one layer, got 0 and 0")
    full = (encoder_layers + decoder_layers) * prompt_tokens
    ced = encoder_layers * prompt_tokens + decoder_layers * min(prompt_tokens, replay_tokens)
    return LayerPasses(prompt_tokens, full, ced)


@dataclass(frozen=True)
class CedPath:
    """A CED prefill: the first ``encoder_layers`` layers encode every prompt token, the
    decoder replays the last ``replay_tokens`` (§3.2.4: V4.1 Flash, 20 + 20 layers, 128)."""

    encoder_layers: int
    replay_tokens: int = 128


EXPERT_WORK = frozenset({OpKind.EXPERT, OpKind.ROUTER, OpKind.FFN})
"""Op kinds CED saves on: the expert (or dense FFN) matrices and the router that feeds them."""


def ced_prefill(dep: Deployment, prompt_tokens: int, readout: int, encoder_layers: int,
                replay_tokens: int = 128) -> CallCost:
    """The op list of a P-token prefill from an empty state on the CED path (§3.2.4).

    The first ``encoder_layers`` E layers are the encoder, the rest the decoder. Expert-layer
    work (ops of :data:`EXPERT_WORK`) runs for all P tokens in the encoder and for the last
    ``min(P, replay_tokens)`` tokens in the decoder, so its passes are
    ``E·P + D·min(P, replay)`` (:func:`expert_layer_passes`); every other op (attention,
    projections, embedding, LM head at ``readout`` positions) runs for all P tokens in every
    layer, as in the chapter's figure 3-14 where those parts are still computed. All costs
    come from :meth:`Deployment.cost` on the encoder's and decoder's layers.
    """
    layers = dep.model.num_layers
    require(1 <= encoder_layers < layers,
            f"encoder-layers: must be in [1, {layers - 1}] (the model has {layers} layers), "
            f"got {encoder_layers}")
    require(1 <= replay_tokens <= MAX_TOKENS,
            f"replay: must be in [1, {MAX_TOKENS:,}] tokens, got {replay_tokens}")
    replayed = min(prompt_tokens, replay_tokens)
    require(readout <= replayed,
            f"questions: with CED answers are read at replayed positions, so must be <= "
            f"min(prompt, replay) = {replayed}, got {readout}")
    full = dep.cost(Batch((Segment(0, prompt_tokens, readout),)))
    blocks = dep.model.blocks
    encoder = replace(dep, model=replace(dep.model, blocks=blocks[:encoder_layers]))
    decoder = replace(dep, model=replace(dep.model, blocks=blocks[encoder_layers:]))
    enc = encoder.cost(Batch((Segment(0, prompt_tokens, readout),)))
    dec = decoder.cost(Batch((Segment(prompt_tokens - replayed, replayed, readout),)))
    return CallCost((
        *(op for op in full.ops if op.kind not in EXPERT_WORK),
        *(replace(op, name=f"encoder:{op.name}") for op in enc.ops if op.kind in EXPERT_WORK),
        *(replace(op, name=f"decoder:{op.name}") for op in dec.ops if op.kind in EXPERT_WORK),
    ))
