"""Bidirectional transformer stacks: a VLM's vision tower and a diffusion transformer (DiT).

Both are read from their real config files and turned into a :class:`ModelSpec` of blocks (so
:func:`napkin.accounting.forward` costs them like any model) plus the matmuls outside the blocks.
No KV is cached: every token attends to every other once per forward.

- :class:`VisionTower`: Qwen2.5/3-VL ``vision_config`` — a ``Conv3d`` patch embedding
  (``in_channels·temporal_patch·p²`` → ``hidden``), ``depth`` blocks of fused ``qkv``, ``proj``
  and a GELU MLP (``fc1``, ``fc2``, not gated), then a patch merger (``hidden·r²`` →
  ``hidden·r²`` → ``out_hidden_size``) per output: the last layer plus one per DeepStack layer.
- :class:`DiT`: diffusers ``QwenImageTransformer2DModel`` — ``num_layers`` dual-stream MMDiT
  blocks (image and text streams each with q, k, v, out and a 4× GELU MLP, joint attention over
  both), ``img_in``, ``txt_in``, per-sample adaLN modulation (6·d per stream per block), the
  output modulation and ``proj_out``.
"""

from pydantic import BaseModel, ConfigDict, Field

from napkin.specs.model import ModelSpec
from napkin.specs.modules import AttentionShape, Block, Linear, OpKind, Stage

Pos = Field(ge=1)


def _lin(name: str, kind: OpKind, n_in: int, n_out: int, stage: Stage,
         bias: bool = True) -> Linear:
    return Linear(name, kind, n_in, n_out, bias, stage)


def _stack(name: str, model_type: str, hidden: int, heads: int, layers: int,
           linears: tuple[Linear, ...], norm_params: int) -> ModelSpec:
    """``layers`` identical uncached blocks (no embedding table, no LM head)."""
    att = AttentionShape("mha", heads, heads, hidden // heads, hidden // heads, 0, 0)
    block = Block(att, None, linears, None, (("norms", norm_params),))
    return ModelSpec(name, model_type, hidden, 0, 0, False, (block,) * layers)


class VisionTower(BaseModel):
    """A Qwen-VL vision encoder (``vision_config`` of the model's config.json)."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    depth: int = Pos
    hidden_size: int = Pos
    intermediate_size: int = Pos
    num_heads: int = Pos
    patch_size: int = Pos
    spatial_merge_size: int = Pos
    temporal_patch_size: int = 2
    in_channels: int = 3
    out_hidden_size: int = Pos
    deepstack_visual_indexes: tuple[int, ...] = ()

    @property
    def mergers(self) -> int:
        """Patch mergers run per image: the final one plus one per DeepStack layer."""
        return 1 + len(self.deepstack_visual_indexes)

    @property
    def ec_width(self) -> int:
        """Features per visual token in the encoder cache: ``out_hidden_size × mergers``."""
        return self.out_hidden_size * self.mergers

    @property
    def patch_embed(self) -> Linear:
        n_in = self.in_channels * self.temporal_patch_size * self.patch_size ** 2
        return _lin("patch_embed", OpKind.PROJECTION, n_in, self.hidden_size, Stage.ATTN_IN)

    @property
    def merger(self) -> tuple[Linear, Linear]:
        wide = self.hidden_size * self.spatial_merge_size ** 2
        return (_lin("merger/fc1", OpKind.FFN, wide, wide, Stage.MLP_IN),
                _lin("merger/fc2", OpKind.FFN, wide, self.out_hidden_size, Stage.MLP_OUT))

    def stack(self) -> ModelSpec:
        h, i = self.hidden_size, self.intermediate_size
        linears = (
            _lin("attn/qkv", OpKind.PROJECTION, h, 3 * h, Stage.ATTN_UP),
            _lin("attn/proj", OpKind.PROJECTION, h, h, Stage.ATTN_OUT),
            _lin("mlp/fc1", OpKind.FFN, h, i, Stage.MLP_IN),
            _lin("mlp/fc2", OpKind.FFN, i, h, Stage.MLP_OUT),
        )
        return _stack("vision", "vision-tower", h, self.num_heads, self.depth, linears, 4 * h)


class DiT(BaseModel):
    """A two-stream MMDiT (diffusers ``transformer/config.json`` of Qwen-Image)."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    num_layers: int = Pos
    num_attention_heads: int = Pos
    attention_head_dim: int = Pos
    joint_attention_dim: int = Pos
    """Width of the text encoder's hidden states (``txt_in`` maps it to the DiT's width)."""
    in_channels: int = Pos
    """Packed latent channels per position (16 VAE channels × 2×2 patch = 64)."""
    out_channels: int = Pos
    patch_size: int = Pos
    mlp_ratio: int = 4

    @property
    def hidden_size(self) -> int:
        return self.num_attention_heads * self.attention_head_dim

    def stream(self, prefix: str) -> tuple[Linear, ...]:
        """One stream's per-token matmuls in one block: q, k, v, out, MLP up and down."""
        d, f = self.hidden_size, self.mlp_ratio * self.hidden_size
        return (*(_lin(f"{prefix}attn/{p}", OpKind.PROJECTION, d, d, Stage.ATTN_UP)
                  for p in "qkv"),
                _lin(f"{prefix}attn/out", OpKind.PROJECTION, d, d, Stage.ATTN_OUT),
                _lin(f"{prefix}mlp/up", OpKind.FFN, d, f, Stage.MLP_IN),
                _lin(f"{prefix}mlp/down", OpKind.FFN, f, d, Stage.MLP_OUT))

    def modulation(self) -> tuple[Linear, ...]:
        """Per-sample adaLN linears of one block (image and text: shift, scale, gate × 2)."""
        d = self.hidden_size
        return (_lin("img_mod", OpKind.PROJECTION, d, 6 * d, Stage.ATTN_IN),
                _lin("txt_mod", OpKind.PROJECTION, d, 6 * d, Stage.ATTN_IN))

    def image_in_out(self) -> tuple[Linear, Linear]:
        d = self.hidden_size
        out = self.patch_size ** 2 * self.out_channels
        return (_lin("img_in", OpKind.PROJECTION, self.in_channels, d, Stage.ATTN_IN),
                _lin("proj_out", OpKind.PROJECTION, d, out, Stage.MLP_OUT))

    def text_in(self) -> Linear:
        return _lin("txt_in", OpKind.PROJECTION, self.joint_attention_dim, self.hidden_size,
                    Stage.ATTN_IN)

    def norm_out(self) -> Linear:
        d = self.hidden_size
        return _lin("norm_out", OpKind.PROJECTION, d, 2 * d, Stage.MLP_OUT)

    def stack(self) -> ModelSpec:
        """The image stream's blocks (the text stream's matmuls are costed beside them)."""
        return _stack("dit", "mmdit", self.hidden_size, self.num_attention_heads,
                      self.num_layers, self.stream("img/"), 0)
