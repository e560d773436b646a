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


def expert_layer_passes(prompt_tokens: int, encoder_layers: int = 20, decoder_layers: int = 20,
                        replay_tokens: int = 128) -> LayerPasses:
    """Token-layer passes through expert layers, full path vs CED path."""
    require(prompt_tokens >= 1, f"prompt: must be >= 1 token, got {prompt_tokens}")
    full = (encoder_layers + decoder_layers) * prompt_tokens
    ced = encoder_layers * prompt_tokens + decoder_layers * min(prompt_tokens, replay_tokens)
    return LayerPasses(prompt_tokens, full, ced)
