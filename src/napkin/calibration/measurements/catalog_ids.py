"""Catalog ids of the names benchmark files use for GPUs, models and weight formats.

aiconfigurator's systems (``h200_sxm``), Hugging Face repository ids (``Qwen/Qwen3-32B``) and
engines' precision names (``fp8_block``, ``w4a16``) map to napkin's catalog GPU and model ids
and weight formats.
"""

from napkin.calibration.measurements.fields import fail
from napkin.errors import NapkinError

_GPU_ALIASES: dict[str, str] = {
    "h100-sxm": "h100-sxm",
    "h100-pcie": "h100-pcie",
    "h200-sxm": "h200",
    "h800-sxm": "h800",
    "b200-sxm": "b200",
    "b300-sxm": "b300",
    "a100-sxm": "a100-80gb-sxm",
    "a100-80gb-sxm": "a100-80gb-sxm",
    "l40s": "l40s",
    "rtx-pro-6000-server": "rtx-pro-6000",
    "rtxpro6000-blackwell-server": "rtx-pro-6000",
}

_WEIGHT_ALIASES: dict[str, str] = {
    "": "bf16",
    "auto": "bf16",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp8-block": "fp8",
    "fp8-static": "fp8",
    "fp8-dynamic": "fp8",
    "fp8-e4m3": "fp8",
    "w8a8": "int8",
    "int8-sq": "int8",
}

def catalog_gpu_id(system: str) -> str:
    """The napkin GPU id of a benchmark's system name (``h100_sxm`` → ``h100-sxm``).

    Underscores become hyphens; aiconfigurator's ``h200_sxm``, ``b200_sxm``, ``b300_sxm``,
    ``a100_sxm``, ``gb200*`` … map to the catalog ids (``h200``, ``b200``, ``b300``,
    ``a100-80gb-sxm``, ``gb200``).
    A name napkin does not know is returned hyphenated.
    """
    name = system.strip().lower().replace("_", "-")
    if name.startswith("gb200"):
        return "gb200"
    return _GPU_ALIASES.get(name, name)


def weight_format_name(precision: str) -> str:
    """The napkin weight format of a benchmark's precision (empty → ``bf16``).

    ``fp8_block``/``fp8_static`` → ``fp8``; ``w4a16*`` → ``int4-g128``; ``w8a8`` → ``int8``;
    other names (``nvfp4``, ``fp8``, ``int4-g128`` …) pass through lower-cased.
    """
    name = precision.strip().lower().replace("_", "-")
    if name.startswith("w4a16"):
        return "int4-g128"
    return _WEIGHT_ALIASES.get(name, name)


_QUANT_SUFFIXES = ("-fp8", "-nvfp4", "-fp4", "-mxfp4", "-fp8-dynamic", "-w8a8", "-awq",
                   "-gptq")
"""Suffixes of quantized checkpoints (``nvidia/Llama-3.1-8B-Instruct-FP8``): the same
architecture, whose precision the measurement's own column states."""


def _model_key(repo: str) -> str:
    """A repository id normalized for matching: lower case, no quantization suffix
    (:data:`_QUANT_SUFFIXES`), no ``-Instruct``, no ``Meta-``."""
    org, _, name = repo.strip().lower().rpartition("/")
    for suffix in _QUANT_SUFFIXES:
        name = name.removesuffix(suffix)
    name = name.removesuffix("-instruct").removeprefix("meta-")
    return f"{org}/{name}" if org else name


def _unique(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """``key → id`` for the keys that name exactly one id."""
    ids: dict[str, set[str]] = {}
    for key, model_id in pairs:
        ids.setdefault(key, set()).add(model_id)
    return {key: next(iter(v)) for key, v in ids.items() if len(v) == 1}


def _model_tables() -> tuple[dict[str, str], dict[str, str]]:
    """Catalog ids by normalized ``org/name`` and by normalized ``name`` alone."""
    from napkin.catalog import MODELS

    repos = [(m.hf_repo.split()[0], m.id) for m in MODELS]
    full = _unique([(_model_key(r), i) for r, i in repos])
    bare = _unique([(_model_key(r).rpartition("/")[2], i) for r, i in repos])
    return full, bare


def catalog_model_id(hf_id: str) -> str:
    """The napkin catalog id of a Hugging Face repository id (``Qwen/Qwen3-32B`` → ``qwen3-32b``).

    Matches the catalog's ``hf_repo`` case-insensitively, ignoring an ``-Instruct`` suffix and a
    ``Meta-`` name prefix (``meta-llama/Meta-Llama-3.1-8B-Instruct`` → ``llama-3.1-8b``); a
    catalog id is returned as is, and a local path matches by its last component
    (``/models/Qwen3-32B``). Unknown → :class:`NapkinError` pointing to ``napkin models``.
    """
    from napkin.catalog import MODELS

    ref = hf_id.strip()
    if ref.lower() in {m.id for m in MODELS}:
        return ref.lower()
    full, bare = _model_tables()
    key = _model_key(ref.rstrip("/"))
    found = full.get(key) or bare.get(key.rpartition("/")[2])
    if found is None:
        raise NapkinError(
            f"model: {hf_id!r} is not a catalog model; see `napkin models` for the ids "
            "(or give a path to a config.json)"
        )
    return found


def model_ref(value: str, where: str, name: str) -> str:
    """A catalog id for a repository id or catalog id; a ``.json`` path is kept as is."""
    if value.strip().endswith(".json"):
        return value.strip()
    try:
        return catalog_model_id(value)
    except NapkinError as e:
        fail(where, name, str(e).removeprefix("model: "))
