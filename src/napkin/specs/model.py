"""``ModelSpec``: a decoder-only LLM as napkin sees it, with its exact parameter counts.

Built from a Hugging Face ``config.json`` by :mod:`napkin.specs.hf_config`. Counts are exact
integers derived from module shapes (see :mod:`napkin.specs.modules`).
"""

from dataclasses import dataclass
from functools import cached_property

from napkin.errors import require
from napkin.specs.modules import RECURRENT_STATE_BYTES, Block


@dataclass(frozen=True)
class LayerGroup:
    """Layers that share one block structure (e.g. DeepSeek-V3's 3 dense and 58 MoE layers)."""

    block: Block
    layer_indices: tuple[int, ...]

    @property
    def num_layers(self) -> int:
        return len(self.layer_indices)


@dataclass(frozen=True)
class MTPSpec:
    """DeepSeek-V3 multi-token-prediction modules, reported apart from the main model.

    Each module: two norms (``enorm``, ``hnorm``), ``eh_proj`` (2h × h; DeepSeek-V4 splits it
    into ``e_proj`` and ``h_proj``, h × h each), one decoder block and a head norm, plus
    ``extra_params`` (DeepSeek-V4: the module's own mHC head mixer); it shares the embedding and
    LM head with the main model, but the Hugging Face checkpoint stores both again
    (``params_as_stored``).
    """

    num_modules: int
    block: Block
    hidden_size: int
    vocab_size: int
    extra_params: int = 0

    @property
    def params(self) -> int:
        """Unique parameters of all MTP modules."""
        h = self.hidden_size
        per_module = 2 * h + 2 * h * h + self.block.params + h + self.extra_params
        return self.num_modules * per_module

    @property
    def params_as_stored(self) -> int:
        """As the checkpoint stores them: plus a copy of the embedding and the head each."""
        return self.params + self.num_modules * 2 * self.vocab_size * self.hidden_size


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer: embeddings, ``blocks`` (one per layer), final norm, LM head.

    ``hc_mult`` ≥ 1 (DeepSeek-V4's mHC; 0 for a plain residual stream) keeps that many residual
    streams of ``hidden_size``; a head mixer folds them into one before the final norm (see
    :attr:`final_norm_params`).
    """

    name: str
    model_type: str
    hidden_size: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    blocks: tuple[Block, ...]
    mtp: MTPSpec | None = None
    hc_mult: int = 0

    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def _hash(self) -> int:
        """Hashing every block is slow; specs are frozen, so hash once (caches key on specs)."""
        return hash((self.name, self.model_type, self.hidden_size, self.vocab_size,
                     self.max_position_embeddings, self.tie_word_embeddings, self.blocks,
                     self.mtp, self.hc_mult))

    @property
    def num_layers(self) -> int:
        return len(self.blocks)

    @cached_property
    def layer_groups(self) -> tuple[LayerGroup, ...]:
        """Blocks grouped by identical structure, in order of first appearance."""
        indices: dict[Block, list[int]] = {}
        for i, block in enumerate(self.blocks):
            indices.setdefault(block, []).append(i)
        return tuple(LayerGroup(b, tuple(ix)) for b, ix in indices.items())

    @property
    def embedding_params(self) -> int:
        """The token embedding table, ``vocab_size × hidden_size``."""
        return self.vocab_size * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        """The LM head's own parameters: 0 when tied to the embedding."""
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    @property
    def final_norm_params(self) -> int:
        """The final RMSNorm (``h``), plus, with ``hc_mult`` = m ≥ 1 streams, mHC's head mixer
        ``m·(m·h) + m + 1`` (``hc_head_fn``, ``hc_head_base``, ``hc_head_scale``). The mixer is a
        tiny matmul (2·m²·h FLOPs per token, 131 kFLOP for V4-Flash); like a norm it is counted
        as weights read and 0 FLOPs."""
        h, m = self.hidden_size, self.hc_mult
        return h + (m * m * h + m + 1 if m else 0)

    @cached_property
    def params(self) -> int:
        """All unique parameters of the main model (tied head counted once, MTP excluded)."""
        layers = sum(g.block.params * g.num_layers for g in self.layer_groups)
        return self.embedding_params + layers + self.final_norm_params + self.lm_head_params

    @property
    def non_embedding_params(self) -> int:
        """``params`` minus the embedding and the LM head (Qwen model cards' convention)."""
        return self.params - self.embedding_params - self.lm_head_params

    @cached_property
    def active_params(self) -> int:
        """Parameters one token uses: only the top-k routed experts of each MoE layer."""
        layers = sum(g.block.active_params * g.num_layers for g in self.layer_groups)
        return self.embedding_params + layers + self.final_norm_params + self.lm_head_params

    @property
    def is_moe(self) -> bool:
        return any(b.experts is not None for b in self.blocks)

    def check_context(self, tokens: int, field: str = "context") -> None:
        """Raise unless ``0 <= tokens <= max_position_embeddings`` (when the config gives one)."""
        require(tokens >= 0, f"{field}: must be >= 0 tokens, got {tokens}")
        limit = self.max_position_embeddings
        require(
            not limit or tokens <= limit,
            f"{field}: {tokens} tokens exceeds {self.name}'s max_position_embeddings ({limit})",
        )

    def kv_elements(self, context_tokens: int) -> int:
        """Numbers held in the KV cache for one sequence of ``context_tokens`` tokens.

        Full-attention layers hold every token; sliding-window layers only the last ``window``.
        A layer with a compressed stream (DeepSeek-V4) also holds ``⌊C/ratio⌋`` entries of
        ``entry_elements + index_head_dim`` numbers.
        """
        require(context_tokens >= 0, f"context: must be >= 0 tokens, got {context_tokens}")
        total = 0
        for g in self.layer_groups:
            held = context_tokens if g.block.window is None else min(context_tokens, g.block.window)
            total += g.num_layers * held * g.block.attention.kv_elements_per_token
            c = g.block.compressed
            if c is not None:
                total += g.num_layers * (context_tokens // c.ratio) * c.elements_per_entry
        return total

    def kv_bytes(self, context_tokens: int, bytes_per_element: float) -> float:
        """KV-cache bytes of one sequence: 2·L·kv_heads·head_dim·bytes per token for GQA/MHA/MQA,
        L·(kv_lora_rank + qk_rope_head_dim)·bytes for MLA; sliding layers capped at the window;
        compressed streams ``⌊C/ratio⌋·(head_dim + index_head_dim)·bytes`` per layer."""
        return self.kv_elements(context_tokens) * bytes_per_element

    def _compressed_elements_per_token(self) -> float:
        """Compressed-stream numbers cached per token of context: ``Σ layers·elements/ratio``."""
        return sum(g.num_layers * g.block.compressed.elements_per_entry / g.block.compressed.ratio
                   for g in self.layer_groups if g.block.compressed is not None)

    def kv_bytes_per_token_in_window(self, bytes_per_element: float) -> float:
        """KV bytes per token while the context is within every sliding window: all layers
        hold each token, ``Σ_groups layers·kv_elements·bytes``, plus compressed streams at
        ``elements/ratio`` per token (equal to :meth:`kv_bytes_per_token` for a model without
        sliding layers)."""
        return (sum(g.num_layers * g.block.attention.kv_elements_per_token
                    for g in self.layer_groups)
                + self._compressed_elements_per_token()) * bytes_per_element

    @property
    def min_window(self) -> int | None:
        """The shortest sliding window of any layer (None: every layer attends in full)."""
        windows = [g.block.window for g in self.layer_groups if g.block.window]
        return min(windows) if windows else None

    @property
    def cost_windows(self) -> tuple[int, ...]:
        """Every token span past which some layer's attention stops growing: the sliding
        windows, and ``ratio·top_k`` of compressed-sparse (CSA) layers, ascending. A decode
        step's cost is affine in its context between two of them (minus one)."""
        spans = {g.block.window for g in self.layer_groups if g.block.window}
        spans |= {g.block.compressed.attended_window for g in self.layer_groups
                  if g.block.compressed is not None and g.block.compressed.attended_window}
        return tuple(sorted(spans))

    def kv_devices(self, tp: int) -> float:
        """Over how many of ``tp`` tensor-parallel devices the KV cache is split: each layer's
        KV over ``min(tp, kv_heads)`` of them (past ``tp = kv_heads`` every KV head is
        replicated ``tp / kv_heads`` times, :func:`check_tensor_parallel`; MLA's latent cache,
        one head, sits whole on every device; so does a compressed stream, DeepSeek-V4's entries
        and DeepSeek-V3.2's latents and indexer keys, per token of context
        ``elements_per_entry/ratio``). With layers that differ, the KV-weighted harmonic mean,
        so that KV bytes per device = KV bytes / ``kv_devices(tp)``: DeepSeek-V3 at TP 8 holds
        its whole latent cache on each device (1), Qwen3-235B-A22B (4 KV heads) a quarter (4),
        Llama-3.1-70B (8) an eighth (8)."""
        require(tp >= 1, f"tensor_parallel: must be >= 1, got {tp}")
        total = per_device = 0.0
        for g in self.layer_groups:
            kv = g.num_layers * g.block.attention.kv_elements_per_token
            total += kv
            per_device += kv / min(tp, g.block.attention.num_kv_heads)
            c = g.block.compressed
            if c is not None:  # one head, replicated on every device
                kv = g.num_layers * c.elements_per_entry / c.ratio
                total += kv
                per_device += kv
        return total / per_device if per_device else float(tp)

    @property
    def has_compressed_kv(self) -> bool:
        return any(g.block.compressed is not None for g in self.layer_groups)

    @property
    def has_recurrent_state(self) -> bool:
        """Some layer is linear attention (:class:`~napkin.specs.modules.LinearAttention`): a
        sequence holds a fixed state besides its KV cache."""
        return any(g.block.linear_attention is not None for g in self.layer_groups)

    def state_elements(self) -> tuple[int, int]:
        """(recurrent, convolution) numbers one sequence holds in the linear-attention layers,
        whatever its context: ``Σ layers·num_v_heads·key_head_dim·value_head_dim`` and
        ``Σ layers·conv_dim·(conv_kernel − 1)``; (0, 0) without such layers."""
        recurrent = conv = 0
        for g in self.layer_groups:
            la = g.block.linear_attention
            if la is not None:
                recurrent += g.num_layers * la.recurrent_elements
                conv += g.num_layers * la.conv_elements
        return recurrent, conv

    def state_bytes_per_sequence(self, bytes_per_element: float,
                                 recurrent_bytes_per_element: float = RECURRENT_STATE_BYTES
                                 ) -> float:
        """Bytes of the fixed per-sequence state of the linear-attention layers (0 without
        them): recurrent numbers at ``recurrent_bytes_per_element`` (FP32 by default, see
        :data:`~napkin.specs.modules.RECURRENT_STATE_BYTES`) plus convolution numbers at
        ``bytes_per_element`` (the KV format). It sits beside :meth:`kv_bytes`, which counts
        only the attention layers' cache."""
        recurrent, conv = self.state_elements()
        return recurrent * recurrent_bytes_per_element + conv * bytes_per_element

    def kv_bytes_per_token(self, bytes_per_element: float) -> float:
        """KV bytes per token of context in full-attention terms (sliding layers at 1 token).

        For models with sliding-window layers this is the marginal cost of one more token
        once the context is past the window; use :meth:`kv_bytes` for a given context.
        Compressed streams (DeepSeek-V4) add ``(head_dim + index_head_dim)/ratio`` numbers per
        token and layer (the ``⌊C/ratio⌋`` entries spread over the tokens they pool).
        Linear-attention layers cache nothing per token (their fixed state is
        :meth:`state_bytes_per_sequence`).
        """
        per_token = sum(
            g.num_layers * g.block.attention.kv_elements_per_token
            for g in self.layer_groups
            if g.block.window is None
        )
        return (per_token + self._compressed_elements_per_token()) * bytes_per_element


def check_tensor_parallel(model: ModelSpec, tp: int,
                          field: str = "tensor_parallel") -> None:
    """Raise unless ``tp`` GPUs can split ``model``'s attention the way vLLM does.

    vLLM refuses a TP size that does not divide the attention heads (``ModelConfig.
    verify_with_parallel_config``: "Total number of attention heads (N) must be divisible by
    tensor parallel size (T)"). KV heads are split too (``QKVParallelLinear``): with at least
    ``tp`` KV heads each GPU takes ``kv_heads / tp`` of them (``tp`` must divide them); with
    fewer, each GPU holds one KV head and every head is replicated ``tp / kv_heads`` times
    (``kv_heads`` must divide ``tp``), so the KV cache per GPU stops shrinking past
    ``tp = kv_heads``. MLA models count as one (latent) KV head, replicated on every GPU.
    ``field`` names the user's option or key in the error (``tp`` for the CLI's ``--tp``).
    Linear-attention layers split their q/k heads and value heads over the GPUs without
    replication (vLLM's ``MambaStateShapeCalculator.gated_delta_net_state_shape`` divides
    both by ``tp``), so ``tp`` must divide their q/k heads.
    """
    require(tp >= 1, f"{field}: must be >= 1, got {tp}")
    for attn in dict.fromkeys(g.block.attention for g in model.layer_groups):
        heads, kv = attn.num_heads, attn.num_kv_heads
        require(
            heads % tp == 0,
            f"{field}: {tp} does not divide {model.name}'s {heads} attention heads "
            f"(vLLM: total number of attention heads must be divisible by tensor parallel size)",
        )
        require(
            kv % tp == 0 if kv >= tp else tp % kv == 0,
            f"{field}: {tp} and {model.name}'s {kv} KV heads do not split evenly "
            f"(vLLM needs tp to divide the KV heads, or the KV heads to divide tp and be "
            f"replicated tp/kv_heads times)",
        )
    for la in dict.fromkeys(g.block.linear_attention for g in model.layer_groups
                            if g.block.linear_attention is not None):
        require(
            la.num_k_heads % tp == 0,
            f"{field}: {tp} does not divide {model.name}'s {la.num_k_heads} "
            f"linear-attention key heads (vLLM splits them and the {la.num_v_heads} value "
            f"heads over the GPUs, without replication)",
        )
