"""Read a Hugging Face ``config.json`` into a :class:`ModelSpec`.

Supported: Llama 2/3/3.1 and other Llama-like configs (Mistral, Qwen2/2.5 with q/k/v bias,
Qwen3 with per-head q/k RMSNorm, Qwen3-VL's ``text_config``), MoE (Mixtral, Qwen2-MoE with a
gated shared expert, Qwen3-MoE with ``decoder_sparse_step``/``mlp_only_layers``, DeepSeek-V3 with
MLA, shared experts, ``first_k_dense_replace`` and MTP modules; Kimi-K2/K2.5's ``kimi_k2`` with
its rules, Kimi-K2.5's vision tower left out), MiniMax-M2 (per-layer q/k
RMSNorms, a routing bias; its MTP modules are not counted), gpt-oss (attention biases and
sinks, biased experts, alternating sliding-window layers), DeepSeek-V4 (``deepseek_v4``: sliding
window plus compressed KV layers, an indexer, mHC, hash routing; read by
:mod:`napkin.specs.deepseek_v4`, whose docstring lists what it counts and leaves out), Qwen3-Next
(``qwen3_next``: Gated DeltaNet linear attention beside gated full attention; read by
:mod:`napkin.specs.qwen3_next`, as is Qwen3.5's ``text_config``, ``qwen3_5_moe_text``), Kimi
Linear (``kimi_linear``: Kimi Delta Attention linear attention beside MLA, DeepSeek's MoE
placement; read by :mod:`napkin.specs.kimi_linear`). Unknown
``model_type`` values are read as Llama-like with SwiGLU MLPs, as long as the standard keys are
present. Llama 4 (``llama4``'s ``text_config``, ``llama4_text``: a shared expert beside the
routed ones, dense layers of ``intermediate_size_mlp``, chunked attention as sliding windows)
is read through the keys above by :mod:`napkin.specs.llama4`; DeepSeek-V3.2 (``deepseek_v32``:
DeepSeek-V3 with DSA, a lightning indexer and top-k sparse attention) and GLM-5
(``glm_moe_dsa``) by :mod:`napkin.specs.deepseek_v32`.

This module picks a config's reader; the keys every family shares are
:class:`~napkin.specs.hf_keys.HFConfig`'s, and the standard decoder layers
:mod:`napkin.specs.hf_layers`'.
"""

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from napkin.errors import NapkinError
from napkin.specs.files import read_text
from napkin.specs.hf_keys import HFConfig
from napkin.specs.hf_layers import standard_model
from napkin.specs.model import ModelSpec
from napkin.specs.yaml_text import load_json

DSA_TYPES = ("deepseek_v32", "glm_moe_dsa")
"""Read by :mod:`napkin.specs.deepseek_v32`: DeepSeek-V3.2, and GLM-5 (``glm_moe_dsa``:
DeepSeek-V3's MLA and MoE layers at its own sizes, with DeepSeek Sparse Attention's indexer
under the same keys)."""
QWEN3_NEXT_TYPES = ("qwen3_next", "qwen3_5_moe_text", "qwen3_5_text")
"""Read by :mod:`napkin.specs.qwen3_next`: Qwen3-Next, and the language part of Qwen3.5 (its
``text_config``: the same Gated DeltaNet and gated attention, its projections split
differently at the same widths)."""


def load_hf_config(path: Path, name: str | None = None) -> ModelSpec:
    """Read ``path`` (a ``config.json``) into a :class:`ModelSpec` named ``name`` (or the stem)."""
    try:
        raw = load_json(read_text(path, "model"), "model")
    except FileNotFoundError:
        raise NapkinError(f"model: no such file {str(path)!r}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise NapkinError(f"model: cannot read {str(path)!r}: {e}") from None
    except json.JSONDecodeError as e:
        raise NapkinError(f"model: {str(path)!r} is not valid JSON ({e})") from None
    except RecursionError:
        raise NapkinError(f"model: {str(path)!r} is nested too deeply to read") from None
    return from_hf_config(raw, name or path.stem, source=str(path))


def from_hf_config(raw: Any, name: str, source: str = "config.json") -> ModelSpec:
    """Build a :class:`ModelSpec` from a parsed ``config.json`` (dict)."""
    if not isinstance(raw, dict):
        raise NapkinError(f"model: {source} must hold a JSON object, got {type(raw).__name__}")
    if isinstance(raw.get("text_config"), dict):  # vision-language: the language part
        raw = {"tie_word_embeddings": raw.get("tie_word_embeddings", False), **raw["text_config"]}
    if raw.get("model_type") in ("llama4", "llama4_text"):  # Llama 4: read as napkin's keys
        from napkin.specs.llama4 import llama4_keys

        raw = llama4_keys(raw, source)
    if raw.get("model_type") == "kimi_linear":  # Kimi Linear: its key names renamed to ours
        from napkin.specs.kimi_linear import kimi_linear_keys

        raw = kimi_linear_keys(raw)
    try:
        cfg = HFConfig.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise NapkinError(f"model: {source}: field {field!r}: {err['msg']}") from None
    if cfg.model_type in DSA_TYPES:
        from napkin.specs.deepseek_v32 import from_deepseek_v32  # V3's layers plus DSA

        return from_deepseek_v32(cfg, raw, name, source)
    if cfg.model_type == "deepseek_v4":
        from napkin.specs.deepseek_v4 import from_deepseek_v4  # its models: built on use

        return from_deepseek_v4(cfg, raw, name, source)
    if cfg.model_type in QWEN3_NEXT_TYPES:
        from napkin.specs.qwen3_next import from_qwen3_next  # its models: built on use

        return from_qwen3_next(cfg, raw, name, source)
    if cfg.model_type == "kimi_linear":
        from napkin.specs.kimi_linear import from_kimi_linear  # its models: built on use

        return from_kimi_linear(cfg, raw, name, source)
    return standard_model(cfg, name, source)
