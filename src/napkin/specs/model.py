"""``ModelSpec``: a decoder-only LLM as napkin sees it, with its exact parameter counts.

Built from a Hugging Face ``config.json`` by :mod:`napkin.specs.hf_config`. Counts are exact
integers derived from module shapes (see :mod:`napkin.specs.modules`).
"""

from dataclasses import dataclass
from functools import cached_property

from napkin.errors import require
from napkin.specs.modules import Block


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

    Each module: two norms (``enorm``, ``hnorm``), ``eh_proj`` (2h × h), one decoder block and
    a head norm; it shares the embedding and LM head with the main model, but the Hugging Face
    checkpoint stores both again (``params_as_stored``).
    """

    num_modules: int
    block: Block
    hidden_size: int
    vocab_size: int

    @property
    def params(self) -> int:
        """Unique parameters of all MTP modules."""
        h = self.hidden_size
        per_module = 2 * h + 2 * h * h + self.block.params + h
        return self.num_modules * per_module

    @property
    def params_as_stored(self) -> int:
        """As the checkpoint stores them: plus a copy of the embedding and the head each."""
        return self.params + self.num_modules * 2 * self.vocab_size * self.hidden_size


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer: embeddings, ``blocks`` (one per layer), final norm, LM head."""

    name: str
    model_type: str
    hidden_size: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    blocks: tuple[Block, ...]
    mtp: MTPSpec | None = None

    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def _hash(self) -> int:
        """Hashing every block is slow; specs are frozen, so hash once (caches key on specs)."""
        return hash((self.name, self.model_type, self.hidden_size, self.vocab_size,
                     self.max_position_embeddings, self.tie_word_embeddings, self.blocks,
                     self.mtp))

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
        return self.hidden_size

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
        """
        require(context_tokens >= 0, f"context: must be >= 0 tokens, got {context_tokens}")
        total = 0
        for g in self.layer_groups:
            held = context_tokens if g.block.window is None else min(context_tokens, g.block.window)
            total += g.num_layers * held * g.block.attention.kv_elements_per_token
        return total

    def kv_bytes(self, context_tokens: int, bytes_per_element: float) -> float:
        """KV-cache bytes of one sequence: 2·L·kv_heads·head_dim·bytes per token for GQA/MHA/MQA,
        L·(kv_lora_rank + qk_rope_head_dim)·bytes for MLA; sliding layers capped at the window."""
        return self.kv_elements(context_tokens) * bytes_per_element

    def kv_bytes_per_token_in_window(self, bytes_per_element: float) -> float:
        """KV bytes per token while the context is within every sliding window: all layers
        hold each token, ``Σ_groups layers·kv_elements·bytes`` (equal to
        :meth:`kv_bytes_per_token` for a model without sliding layers)."""
        return sum(g.num_layers * g.block.attention.kv_elements_per_token
                   for g in self.layer_groups) * bytes_per_element

    @property
    def min_window(self) -> int | None:
        """The shortest sliding window of any layer (None: every layer attends in full)."""
        windows = [g.block.window for g in self.layer_groups if g.block.window]
        return min(windows) if windows else None

    def kv_bytes_per_token(self, bytes_per_element: float) -> float:
        """KV bytes per token of context in full-attention terms (sliding layers at 1 token).

        For models with sliding-window layers this is the marginal cost of one more token
        once the context is past the window; use :meth:`kv_bytes` for a given context.
        """
        per_token = sum(
            g.num_layers * g.block.attention.kv_elements_per_token
            for g in self.layer_groups
            if g.block.window is None
        )
        return per_token * bytes_per_element


def check_tensor_parallel(model: ModelSpec, tp: int) -> None:
    """Raise unless ``tp`` GPUs can split ``model``'s attention the way vLLM does.

    vLLM refuses a TP size that does not divide the attention heads (``ModelConfig.
    verify_with_parallel_config``: "Total number of attention heads (N) must be divisible by
    tensor parallel size (T)"). KV heads are split too (``QKVParallelLinear``): with at least
    ``tp`` KV heads each GPU takes ``kv_heads / tp`` of them (``tp`` must divide them); with
    fewer, each GPU holds one KV head and every head is replicated ``tp / kv_heads`` times
    (``kv_heads`` must divide ``tp``), so the KV cache per GPU stops shrinking past
    ``tp = kv_heads``. MLA models count as one (latent) KV head, replicated on every GPU.
    """
    require(tp >= 1, f"tensor_parallel: must be >= 1, got {tp}")
    for attn in dict.fromkeys(g.block.attention for g in model.layer_groups):
        heads, kv = attn.num_heads, attn.num_kv_heads
        require(
            heads % tp == 0,
            f"tensor_parallel: {tp} does not divide {model.name}'s {heads} attention heads "
            f"(vLLM: total number of attention heads must be divisible by tensor parallel size)",
        )
        require(
            kv % tp == 0 if kv >= tp else tp % kv == 0,
            f"tensor_parallel: {tp} and {model.name}'s {kv} KV heads do not split evenly "
            f"(vLLM needs tp to divide the KV heads, or the KV heads to divide tp and be "
            f"replicated tp/kv_heads times)",
        )
