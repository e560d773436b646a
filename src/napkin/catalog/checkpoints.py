"""What the public checkpoints of catalog models store: which parts a quantized checkpoint keeps
in BF16 (:func:`checkpoint_unquantized`), the grouping of a weight-only INT4 one
(:func:`checkpoint_int4`) and whether it declares an FP8 KV cache (:func:`declares_fp8_kv`),
read from the shipped config.json's ``quantization_config`` and, for NVIDIA's NVFP4 releases,
from TensorRT Model Optimizer's exclusions."""

import re

from napkin.catalog import MODELS, catalog_config, load_model
from napkin.errors import NapkinError
from napkin.specs.dtypes import WEIGHT_FORMATS, parse_unquantized

CHECKPOINT = "checkpoint"
"""The ``unquantized`` value that means "what the model's public checkpoint keeps"."""


def resolve_unquantized(value: str | None, model: str, weights: str) -> frozenset[str]:
    """The parts kept in BF16: ``checkpoint`` → :func:`checkpoint_unquantized` of catalog model
    ``model`` at ``weights``; anything else parsed as a comma-separated list of parts."""
    if value is not None and value.strip().lower() == CHECKPOINT:
        if not _in_catalog(model):
            raise NapkinError(f"unquantized: {CHECKPOINT} needs a catalog model (its "
                              f"config.json's quantization_config), not {model!r}; name the "
                              "parts instead")
        return checkpoint_unquantized(model, weights)
    return parse_unquantized(value)


def _in_catalog(model: str) -> bool:
    return model in {m.id for m in MODELS}


def checkpoint_quantization(model: str) -> dict:
    """The ``quantization_config`` of a catalog model's config.json (its language part's for a
    vision-language one); {} for none or a model outside the catalog."""
    if not _in_catalog(model):
        return {}
    raw = catalog_config(model)
    return raw.get("quantization_config") or raw.get("text_config", {}).get(
        "quantization_config") or {}


def declares_fp8_kv(model: str, weights: str) -> bool:
    """Whether the checkpoint a benchmark of catalog model ``model`` at ``weights`` ran declares
    an FP8 KV cache: NVIDIA's NVFP4 releases (TensorRT Model Optimizer) do, in
    hf_quant_config.json's ``kv_cache_quant_algo: FP8``; gpt-oss's own MXFP4 checkpoint (also
    run as ``nvfp4`` by aiconfigurator's sample) does not."""
    return weights == "nvfp4" and checkpoint_quantization(model).get("quant_method") != "mxfp4"


def _int4_groups(quant: dict) -> set[int]:
    """Group sizes of a compressed-tensors config's 4-bit weight groups."""
    groups = [g.get("weights") or {} for g in (quant.get("config_groups") or {}).values()]
    return {g.get("group_size") for g in groups if g.get("num_bits") == 4}


def checkpoint_int4(model: str) -> str:
    """The INT4 format of a catalog model's own weight-only INT4 checkpoint: its config.json's
    ``quantization_config`` group size (Kimi-K2.5: compressed-tensors, 4 bits per group of 32 →
    ``int4-g32``), else ``int4-g128`` (GPTQ/AWQ's usual group). What a benchmark's bare
    ``int4_wo`` runs as."""
    sizes = _int4_groups(checkpoint_quantization(model))
    name = f"int4-g{sizes.pop()}" if len(sizes) == 1 else "int4-g128"
    return name if name in WEIGHT_FORMATS else "int4-g128"


def _roles(patterns: list[str]) -> frozenset[str]:
    """The parts (``UNQUANTIZED_ROLES``) a checkpoint's list of modules left unquantized names
    (``modules_to_not_convert``, compressed-tensors ``ignore``, ModelOpt ``exclude_modules``)."""
    roles = set()
    for p in (p.lower() for p in patterns):
        if "shared_expert" in p:
            roles.add("shared-experts")
        elif "self_attn" in p:
            roles.add("attention")
        elif "router" in p or re.search(r"(^|\.)gate\*?$", p):
            roles.add("router")
        elif "embed" in p:
            roles.add("embedding")
        elif "lm_head" in p:
            roles.add("lm-head")
        elif re.search(r"mlp.{0,4}\(?(gate|up|down)", p):
            roles.add("dense-mlp")
    return frozenset(roles)


NVFP4_KEEPS = {"dense": frozenset({"lm-head"}),
               "moe": frozenset({"lm-head", "attention", "router"})}
"""What NVIDIA's NVFP4 checkpoints (TensorRT Model Optimizer) keep in BF16: the LM head
(ModelOpt's default exclusion for Llama-like models), and for MoE models also attention and the
router (ModelOpt's ``deepseekv2v3`` defaults ``lm_head, *self_attn*, *mlp.gate``; the
``exclude_modules`` of nvidia/MiniMax-M2.5-NVFP4's hf_quant_config.json, as aiconfigurator
ships it: every layer's ``self_attn*`` and ``block_sparse_moe.gate``, and ``lm_head``)."""


def checkpoint_unquantized(model: str, weights: str) -> frozenset[str]:
    """The parts a benchmark row's checkpoint keeps in BF16 at weight format ``weights``.

    From the catalog model's own ``quantization_config`` when ``weights`` is its format (an
    FP8 config for ``fp8``, MXFP4 for any FP4 format — gpt-oss has no other checkpoint —,
    compressed-tensors 4-bit for ``int4*``): gpt-oss keeps attention, router, embedding and
    head; MiniMax-M2.5's FP8 checkpoint router and head; Kimi-K2.5's INT4 one head, attention,
    shared experts and dense MLP. Else, for ``nvfp4``, NVIDIA's checkpoints
    (:data:`NVFP4_KEEPS`); else none."""
    quant = checkpoint_quantization(model)
    method = str(quant.get("quant_method", "")).lower()
    own = ((method == "fp8" and weights == "fp8")
           or (method == "mxfp4" and weights in ("mxfp4", "mxfp4-w4a8", "mxfp4-w4a4", "nvfp4"))
           or (method == "compressed-tensors" and bool(_int4_groups(quant))
               and weights.startswith("int4")))
    if own:
        return _roles([*quant.get("modules_to_not_convert", []), *quant.get("ignore", [])])
    if weights == "nvfp4" and _in_catalog(model):
        return NVFP4_KEEPS["moe" if load_model(model).is_moe else "dense"]
    return frozenset()
