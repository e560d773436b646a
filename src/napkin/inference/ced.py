"""Expert-layer passes of an encoder–decoder (CED) prefill (chapter 3.2.4).

A plain decoder sends each of P prompt tokens through all ``E + D`` layers. The CED path sends
them through the E encoder layers and replays only the last ``replay`` prompt tokens through the
D decoder layers (to build the decoder's sliding-window state): ``E·P + D·min(P, replay)``.
"""

from dataclasses import dataclass

from napkin.errors import require


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
