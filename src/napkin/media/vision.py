"""Images into a VLM: visual tokens, encoder cost, and the three representations (file, EC, KV).

An image resized to ``H × W`` (multiples of ``p·r``, as the real preprocessor does) is cut into
``p × p`` patches and merged ``r × r``: ``n_v = H·W / (p²·r²)`` visual tokens (chapter 3.3.1:
640×640, p = 16, r = 2 → 1,600 patches → 400 tokens). The encoder cache (EC) holds each token's
features at ``out_hidden_size`` per merger — the final one plus one per DeepStack layer (4 ×
2,560 = 10,240 wide: 400 × 10,240 × 2 B = 7.8125 MiB in BF16); the language model then writes
KV for the same tokens (144 KiB each in Qwen3-VL-4B: 56.25 MiB). The encoder's matmuls are
costed by :func:`napkin.accounting.forward` over full attention within each image.

Reuse: a file is reusable for the same bytes; EC for the same image, preprocessing, encoder and
output format; KV only with the same preceding context, order and positions too.
"""

import math
from dataclasses import dataclass

from napkin.accounting import Precision, forward
from napkin.accounting.batch import Bidirectional
from napkin.accounting.forward import linear_ops
from napkin.accounting.ops import CallCost
from napkin.errors import require
from napkin.specs.encoders import VisionTower
from napkin.specs.model import ModelSpec

QWEN3_VL_MIN_PIXELS = 65_536
"""Qwen3-VL ``preprocessor_config.json``: ``size.shortest_edge`` (256²)."""
QWEN3_VL_MAX_PIXELS = 16_777_216
"""Qwen3-VL ``preprocessor_config.json``: ``size.longest_edge`` (4096²)."""

REUSE_CONDITIONS = {
    "file": "same file bytes",
    "ec": "same image, preprocessing, encoder and output format",
    "kv": "also the same preceding context, order, positions and model state",
}


def smart_resize(height: int, width: int, factor: int, min_pixels: int = QWEN3_VL_MIN_PIXELS,
                 max_pixels: int = QWEN3_VL_MAX_PIXELS) -> tuple[int, int]:
    """Qwen2-VL/Qwen3-VL preprocessing (transformers ``smart_resize``): round each side to the
    nearest multiple of ``factor`` (= patch × merge); if the area leaves
    ``[min_pixels, max_pixels]``, rescale keeping the aspect ratio (floor down, ceil up)."""
    require(height >= factor and width >= factor,
            f"image: height and width must be >= {factor} pixels, got {height}×{width}")
    require(max(height, width) / min(height, width) <= 200,
            f"image: aspect ratio must be <= 200, got {height}×{width}")
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar, w_bar = (math.ceil(height * beta / factor) * factor,
                        math.ceil(width * beta / factor) * factor)
    return h_bar, w_bar


@dataclass(frozen=True)
class ImageCost:
    """One image through the tower and into the language model."""

    height: int
    width: int
    """After preprocessing."""
    patches: int
    tokens: int
    features_bytes: float
    """The final merger's output alone (``n_v × out_hidden_size``): 2,048,000 B at 640×640."""
    ec_bytes: float
    """All mergers' outputs (``n_v × out_hidden_size × mergers``), what an EC holds."""
    kv_bytes: float
    encoder: CallCost


def visual_tokens(height: int, width: int, patch: int, merge: int) -> int:
    """``n_v = H·W / (p²·r²)`` for sides that are multiples of ``p·r``."""
    require(patch >= 1 and merge >= 1, "patch, merge: must be >= 1")
    require(height % (patch * merge) == 0 and width % (patch * merge) == 0,
            f"image: {height}×{width} must be multiples of patch × merge = {patch * merge} "
            "(resize first)")
    return height * width // (patch * patch * merge * merge)


def encoder_cost(tower: VisionTower, patches: int, images: int = 1,
                 precision: Precision | None = None) -> CallCost:
    """The tower's forward on ``images`` images of ``patches`` patches: patch embedding, blocks
    (full attention within each image), and every merger on the merged tokens."""
    precision = precision or Precision.of()
    merged = patches // tower.spatial_merge_size ** 2 * images
    blocks = forward(tower.stack(), Bidirectional(patches, images), precision)
    return CallCost((*linear_ops("vision", (tower.patch_embed,), patches * images, precision),
                     *blocks.ops,
                     *linear_ops("vision", tower.merger, merged, precision, tower.mergers)))


def image_tokens(tower: VisionTower, height: int, width: int,
                 resize: bool = True) -> tuple[int, int, int]:
    """``(H, W, n_v)``: the image's sides after preprocessing (``resize``) and its visual
    tokens."""
    if resize:
        height, width = smart_resize(height, width, tower.patch_size * tower.spatial_merge_size)
    return height, width, visual_tokens(height, width, tower.patch_size,
                                        tower.spatial_merge_size)


def image_cost(tower: VisionTower, language: ModelSpec | None, height: int, width: int,
               resize: bool = True, ec_bytes_per_element: float = 2.0,
               kv_bytes_per_element: float = 2.0) -> ImageCost:
    """Tokens, EC bytes, KV bytes of the visual tokens and encoder FLOPs of one image."""
    height, width, tokens = image_tokens(tower, height, width, resize)
    patches = tokens * tower.spatial_merge_size ** 2
    kv = language.kv_bytes(tokens, kv_bytes_per_element) if language else 0.0
    return ImageCost(height, width, patches, tokens,
                     tokens * tower.out_hidden_size * ec_bytes_per_element,
                     tokens * tower.ec_width * ec_bytes_per_element, kv,
                     encoder_cost(tower, patches))


@dataclass(frozen=True)
class PromptState:
    """EC and KV of a prompt of several images and some text."""

    images: tuple[ImageCost, ...]
    text_tokens: int
    ec_bytes: float
    visual_kv_bytes: float
    text_kv_bytes: float

    @property
    def kv_bytes(self) -> float:
        return self.visual_kv_bytes + self.text_kv_bytes

    @property
    def tokens(self) -> int:
        return sum(i.tokens for i in self.images) + self.text_tokens


def prompt_state(images: list[ImageCost], text_tokens: int, language: ModelSpec,
                 kv_bytes_per_element: float = 2.0) -> PromptState:
    """Chapter 3.3.1: four 640×640 images + 400 text tokens → 31.25 MiB EC, 225 + 56.25 MiB KV
    (KV per token is the language model's, image or text alike)."""
    require(text_tokens >= 0, f"text: must be >= 0 tokens, got {text_tokens}")
    return PromptState(tuple(images), text_tokens, sum(i.ec_bytes for i in images),
                       sum(i.kv_bytes for i in images),
                       language.kv_bytes(text_tokens, kv_bytes_per_element))
