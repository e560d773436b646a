"""Image generation by diffusion: ``n_s · n_b · F_step(n_v)`` FLOPs (chapter 3.3.2).

The VAE shrinks an ``H × W`` image by its factor (8) and the DiT packs ``p × p`` latent patches
(2): ``n_v = (H/8/p)·(W/8/p)`` positions (1024 × 1024 → 4,096), the same set at every step.
Each of ``n_s`` denoising steps runs the DiT once per guidance branch ``n_b`` (true CFG: the
conditional and the unconditional prompt, 2): 50 steps → 100 forwards. ``F_step`` is one DiT
forward on ``n_v`` image positions and ``T`` text tokens, costed by
:func:`napkin.accounting.forward` (the image stream's blocks, joint attention over ``n_v + T``)
plus the text stream, the per-sample modulation, and the input/output projections. The text
encoder and the VAE do their own, separate work.
"""

from dataclasses import dataclass

from napkin.accounting import Precision, forward
from napkin.accounting.batch import Bidirectional
from napkin.accounting.forward import linear_ops
from napkin.accounting.ops import CallCost
from napkin.errors import require
from napkin.specs.encoders import DiT

QWEN_IMAGE_VAE_FACTOR = 8
"""Qwen-Image VAE spatial downsampling (``2 ** len(temperal_downsample)``)."""
MAX_VAE_FACTOR = 64
"""Largest VAE downsampling accepted (published VAEs use 8 to 32)."""


def latent_positions(height: int, width: int, patch: int, vae_factor: int) -> int:
    """``(H / f / p) · (W / f / p)``: the DiT's sequence length for one image."""
    require(1 <= vae_factor <= MAX_VAE_FACTOR,
            f"vae-factor: must be an integer in [1, {MAX_VAE_FACTOR}], got {vae_factor}")
    require(patch >= 1, f"patch: must be >= 1, got {patch}")
    unit = vae_factor * patch
    require(height >= unit and width >= unit and height % unit == 0 and width % unit == 0,
            f"size: {height}×{width} must be positive multiples of vae-factor × patch = {unit}")
    return (height // unit) * (width // unit)


def dit_forward(dit: DiT, positions: int, text_tokens: int,
                precision: Precision | None = None) -> CallCost:
    """One DiT forward: image stream on ``positions``, text stream on ``text_tokens``, joint
    attention over both, per-sample modulation, ``img_in``/``proj_out``/``txt_in``/norm_out."""
    require(text_tokens >= 0, f"text-tokens: must be >= 0 tokens, got {text_tokens}")
    precision = precision or Precision.of()
    layers = dit.num_layers
    image = forward(dit.stack(), Bidirectional(positions, extra_keys=text_tokens), precision)
    ops = [*image.ops,
           *linear_ops("dit", dit.image_in_out(), positions, precision),
           *linear_ops("dit", dit.modulation(), 1, precision, layers),
           *linear_ops("dit", (dit.norm_out(),), 1, precision)]
    if text_tokens:
        ops += [*linear_ops("dit", dit.stream("txt/"), text_tokens, precision, layers),
                *linear_ops("dit", (dit.text_in(),), text_tokens, precision)]
    return CallCost(tuple(ops))


@dataclass(frozen=True)
class Generation:
    """One image: positions, forwards and FLOPs of the denoising loop."""

    positions: int
    steps: int
    branches: int
    step_forward: CallCost

    @property
    def forwards(self) -> int:
        """``n_s · n_b``."""
        return self.steps * self.branches

    @property
    def flops(self) -> float:
        """``n_s · n_b · F_step``."""
        return self.forwards * self.step_forward.flops


def image_generation(dit: DiT, height: int, width: int, steps: int = 50, branches: int = 2,
                     text_tokens: int = 512, vae_factor: int = QWEN_IMAGE_VAE_FACTOR,
                     precision: Precision | None = None) -> Generation:
    """Denoising cost of one ``height × width`` image (``branches`` = 2 with true CFG, 1
    without; ``text_tokens`` = 512 is Qwen-Image's default ``max_sequence_length``)."""
    require(steps >= 1, f"steps: must be >= 1, got {steps}")
    require(branches >= 1, f"branches: must be >= 1 (2 with true CFG), got {branches}")
    n_v = latent_positions(height, width, dit.patch_size, vae_factor)
    return Generation(n_v, steps, branches, dit_forward(dit, n_v, text_tokens, precision))
