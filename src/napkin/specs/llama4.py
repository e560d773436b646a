"""Llama 4 configs (``model_type`` ``llama4_text``, the ``text_config`` of a ``llama4``
``Llama4ForConditionalGeneration`` config): read as the keys napkin's Llama-like reader
(:mod:`napkin.specs.hf_config`) already has, by :func:`llama4_keys`.

Layer geometry (transformers' ``modeling_llama4.py``: ``Llama4TextDecoderLayer``,
``Llama4TextMoe``, ``Llama4TextAttention``), with h = ``hidden_size``:

- attention: ``q_proj`` h → heads·head_dim, ``k_proj``/``v_proj`` h → kv_heads·head_dim,
  ``o_proj`` heads·head_dim → h (biases with ``attention_bias``), as Llama. The q/k norm of
  ``use_qk_norm`` (Scout) is ``Llama4TextL2Norm``, an RMS normalisation without a weight:
  0 parameters (read as ``use_qk_norm: false``);
- MoE layers, the indexes in ``moe_layers`` (default: every ``interleave_moe_layer_step``-th
  layer, i.e. layers step−1, 2·step−1, …; Scout step 1: all 48, Maverick step 2: the 24 odd
  ones): a router h → E (no bias), E = ``num_local_experts`` routed SwiGLU experts of
  ``intermediate_size`` (``gate_up_proj`` h × 2·inter and ``down_proj`` inter × h each), top
  ``num_experts_per_tok``, and one shared SwiGLU expert of ``intermediate_size`` that every
  token passes (read as ``moe_intermediate_size`` = ``intermediate_size``,
  ``n_shared_experts`` = 1);
- dense layers: one SwiGLU MLP of ``intermediate_size_mlp`` (read as ``intermediate_size``;
  ``intermediate_size`` itself when absent);
- two RMSNorms per layer (h each), a final RMSNorm, embedding and LM head of
  vocab_size × h (untied unless ``tie_word_embeddings``).

Attention span: the layers with RoPE (``no_rope_layers[i]`` = 1; by default every layer but
each ``no_rope_layer_interval``-th, 4: layers 3, 7, 11, … are the NoPE ones) attend within
chunks of ``attention_chunk_size`` tokens (8,192): the token at position p sees the keys from
⌊p/C⌋·C to p, between 1 and C of them. napkin models such a layer as a sliding window of C
keys (read as ``layer_types`` ``sliding_attention`` with ``sliding_window`` = C; a newer
config's own ``layer_types`` ``chunked_attention`` is read the same way). Approximation: a
window is exact for the first chunk and an upper bound past it — a chunked layer attends, on
average over a long sequence, (C+1)/2 keys per token where the window attends C, and holds
(p mod C) + 1 tokens of KV where the window holds C; so its attention FLOPs, decode KV reads
and KV held are overestimated by up to 2× (never underestimated). The NoPE layers attend
the whole context. Without ``attention_chunk_size`` every layer attends in full.

Read and not modelled (elementwise or training only): ``attn_temperature_tuning``,
``floor_scale``, ``attn_scale`` (a per-position query scale of the NoPE layers),
``rope_scaling``, ``rope_theta``, ``router_aux_loss_coef``, ``router_jitter_noise``. Left out:
the vision tower and projector of ``vision_config`` (about 0.87 B parameters for Scout and
Maverick, outside the language model that napkin counts).
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from napkin.errors import NapkinError
from napkin.specs.hf_keys import MAX_COUNT, MAX_LAYERS, MAX_POSITIONS, MAX_WIDTH

LLAMA4_TYPES = frozenset({"llama4", "llama4_text"})
"""``model_type`` values read as Llama 4 (``llama4_text``, also ``llama4`` inside a
``text_config``)."""


class Llama4Keys(BaseModel):
    """The ``config.json`` keys only Llama 4 has (and the ones it reads differently)."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    num_hidden_layers: int = Field(gt=0, le=MAX_LAYERS)
    intermediate_size: int = Field(gt=0, le=MAX_WIDTH)
    """Inner width of each routed expert and of the shared expert."""
    intermediate_size_mlp: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    """Inner width of the dense layers' MLP. None: ``intermediate_size``."""
    num_local_experts: int = Field(default=0, ge=0, le=MAX_COUNT)
    """Routed experts per MoE layer; 0 (absent): every layer is dense."""
    interleave_moe_layer_step: int = Field(default=1, gt=0, le=MAX_LAYERS)
    """Without ``moe_layers``: layer i (from 0) is MoE when i + 1 is a multiple of it."""
    moe_layers: list[int] | None = None
    """Indexes (from 0) of the MoE layers; None: from ``interleave_moe_layer_step``."""
    attention_chunk_size: int | None = Field(default=None, gt=0, le=MAX_POSITIONS)
    """Chunk of the chunked local-attention layers, tokens (modelled as a sliding window)."""
    no_rope_layers: list[int] | None = None
    """Per layer, 1: RoPE and chunked attention, 0: NoPE and full attention. None or empty:
    from ``no_rope_layer_interval``."""
    no_rope_layer_interval: int = Field(default=4, gt=0, le=MAX_LAYERS)
    """Without ``no_rope_layers``: layer i is NoPE when i + 1 is a multiple of it."""
    layer_types: list[str] | None = None
    """Newer configs: ``chunked_attention`` or ``full_attention`` per layer (takes
    precedence over ``no_rope_layers``)."""


def llama4_keys(raw: dict[str, Any], source: str) -> dict[str, Any]:
    """``raw`` (a Llama 4 text config) with the keys napkin's Llama-like reader takes in place
    of Llama 4's: dense and expert widths, shared expert, MoE layer placement, chunked layers
    as sliding windows, weightless q/k norms (see the module docstring)."""
    try:
        keys = Llama4Keys.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise NapkinError(f"model: {source}: field {field!r}: {err['msg']} "
                          "(a Llama 4 config)") from None
    layers = keys.num_hidden_layers
    if keys.moe_layers is not None:
        moe = set(keys.moe_layers)
    else:
        moe = {i for i in range(layers) if (i + 1) % keys.interleave_moe_layer_step == 0}
    out = {
        **raw,
        "intermediate_size": keys.intermediate_size_mlp or keys.intermediate_size,
        "use_qk_norm": False,  # Llama4TextL2Norm has no weight
        "decoder_sparse_step": 1,
        "mlp_only_layers": [i for i in range(layers) if i not in moe],
    }
    if keys.num_local_experts:
        out |= {"moe_intermediate_size": keys.intermediate_size, "n_shared_experts": 1}
    chunk = keys.attention_chunk_size
    out["layer_types"] = [
        "sliding_attention" if chunk and _chunked(keys, i) else "full_attention"
        for i in range(layers)
    ]
    out["sliding_window"] = chunk
    return out


def _chunked(keys: Llama4Keys, i: int) -> bool:
    """Whether layer ``i`` uses chunked local attention (a RoPE layer)."""
    if keys.layer_types is not None and i < len(keys.layer_types):
        return keys.layer_types[i] == "chunked_attention"
    if keys.no_rope_layers and i < len(keys.no_rope_layers):
        return bool(keys.no_rope_layers[i])
    return (i + 1) % keys.no_rope_layer_interval != 0
