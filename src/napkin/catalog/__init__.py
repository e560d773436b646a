"""The shipped catalog: real Hugging Face ``config.json`` files and accelerator specs.

``MODEL`` arguments are a catalog id (``qwen3-8b``) or a path to a ``config.json``;
``GPU`` arguments are a catalog id (``h100-sxm``).
"""

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from napkin.errors import NapkinError
from napkin.specs.files import read_text
from napkin.specs.hardware import Accelerator
from napkin.specs.hf_config import from_hf_config, load_hf_config
from napkin.specs.model import ModelSpec
from napkin.specs.yaml_text import load_json
from napkin.units import GB, TFLOP, MiB

if TYPE_CHECKING:
    from napkin.specs.encoders import DiT, VisionTower

CATALOG_DIR = Path(__file__).parent
"""The shipped catalog's folder (model configs, accelerators, scenarios, measurements…): a
plain path, not :mod:`importlib.resources` (whose import pulls in ``tempfile`` and ``zipfile``,
~5 ms of every command's start-up; napkin is installed as files, never run from a zip)."""


@dataclass(frozen=True)
class CatalogModel:
    """A shipped model: its id, the Hugging Face repository its config.json comes from, and
    where the shipped copy was taken from when that is not the repository itself."""

    id: str
    hf_repo: str
    copied_from: str = ""


_AIC = ("ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce "
        "aic-core/src/aiconfigurator_core/model_configs/")

MODELS: tuple[CatalogModel, ...] = (
    *(CatalogModel(i, repo) for i, repo in (
        ("qwen3-0.6b", "Qwen/Qwen3-0.6B"),
        ("qwen3-8b", "Qwen/Qwen3-8B"),
        ("qwen3-32b", "Qwen/Qwen3-32B"),
        ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B"),
        ("qwen2.5-7b", "Qwen/Qwen2.5-7B"),
        ("qwen3-vl-4b", "Qwen/Qwen3-VL-4B-Instruct (language part)"),
        ("llama-2-7b", "meta-llama/Llama-2-7b-hf"),
        ("llama-2-70b", "meta-llama/Llama-2-70b-hf"),
        ("llama-3-8b", "meta-llama/Meta-Llama-3-8B"),
        ("llama-3-70b", "meta-llama/Meta-Llama-3-70B"),
        ("llama-3.1-8b", "meta-llama/Llama-3.1-8B"),
        ("llama-3.1-70b", "meta-llama/Llama-3.1-70B"),
        ("llama-3.1-405b", "meta-llama/Llama-3.1-405B"),
        ("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1"),
        ("deepseek-v3", "deepseek-ai/DeepSeek-V3"),
        ("gpt-oss-120b", "openai/gpt-oss-120b"),
        ("gpt-oss-20b", "openai/gpt-oss-20b"),
        ("fish-s2-pro-slow", "fishaudio/s2-pro slow AR (DualARModelArgs as a Qwen3 config)"),
        ("fish-s2-pro-fast", "fishaudio/s2-pro fast AR (DualARModelArgs as a Llama config)"),
    )),
    # The Hugging Face config.json as a Python dict in Girafboy/pytorchKQI (the same file's
    # Llama-2-7b and -70b dicts agree with their Hugging Face configs), written back as JSON.
    CatalogModel("llama-2-13b", "meta-llama/Llama-2-13b-hf",
                 "Girafboy/pytorchKQI@96326902 example/evaluate.py (Llama_2_13b_hf)"),
    # Verbatim copies of the Hugging Face config.json that NVIDIA's aiconfigurator ships
    # (Apache-2.0); read by napkin.specs.deepseek_v4.
    CatalogModel("deepseek-v4-flash", "deepseek-ai/DeepSeek-V4-Flash",
                 _AIC + "deepseek-ai--DeepSeek-V4-Flash_config.json"),
    CatalogModel("deepseek-v4-pro", "deepseek-ai/DeepSeek-V4-Pro",
                 _AIC + "deepseek-ai--DeepSeek-V4-Pro_config.json"),
    CatalogModel("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B",
                 _AIC + "Qwen--Qwen3-235B-A22B_config.json"),
    CatalogModel("deepseek-r1", "deepseek-ai/DeepSeek-R1",
                 _AIC + "deepseek-ai--DeepSeek-R1_config.json"),
    # DeepSeek-V3.1 has DeepSeek-V3's geometry; the config is NVIDIA's NVFP4 release's (no
    # quantization_config: its hf_quant_config.json declares NVFP4 weights and an FP8 KV cache).
    CatalogModel("deepseek-v3.1", "deepseek-ai/DeepSeek-V3.1",
                 _AIC + "nvidia--DeepSeek-V3.1-NVFP4_config.json"),
    CatalogModel("minimax-m2.5", "MiniMaxAI/MiniMax-M2.5",
                 _AIC + "MiniMaxAI--MiniMax-M2.5_config.json"),
    CatalogModel("kimi-k2.5", "moonshotai/Kimi-K2.5",
                 _AIC + "moonshotai--Kimi-K2.5_config.json (the language part is read)"),
    # aiconfigurator's Llama 4 copies keep the architecture keys and drop the token ids,
    # attention-temperature keys, no_rope_layers (the checkpoints' lists equal its default, 3
    # chunked layers of 4) and tie_word_embeddings (false, the default).
    CatalogModel("llama-4-scout", "meta-llama/Llama-4-Scout-17B-16E-Instruct",
                 _AIC + "meta-llama--Llama-4-Scout-17B-16E-Instruct_config.json (trimmed; "
                 "the language part is read)"),
    CatalogModel("llama-4-maverick", "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
                 _AIC + "meta-llama--Llama-4-Maverick-17B-128E-Instruct_config.json (trimmed; "
                 "the language part is read)"),
    CatalogModel("deepseek-v3.2", "deepseek-ai/DeepSeek-V3.2",
                 _AIC + "deepseek-ai--DeepSeek-V3.2_config.json (read by "
                 "napkin.specs.deepseek_v32)"),
    # Read by napkin.specs.qwen3_next. The -Thinking config stands for -Instruct too (their
    # model cards give the same geometry); aiconfigurator shipped it verbatim, then dropped it
    # after this commit.
    # Read by napkin.specs.deepseek_v32 (DSA; the MTP layer is built, not counted in the total).
    CatalogModel("glm-5", "zai-org/GLM-5",
                 _AIC + "nvidia--GLM-5-NVFP4_config.json (NVIDIA's NVFP4 release of GLM-5: the "
                 "base model's geometry; its quantization_config is not read)"),
    # Read by napkin.specs.qwen3_next (the language part; the vision tower and the declared
    # MTP layer are not counted).
    CatalogModel("qwen3.5-397b-a17b", "Qwen/Qwen3.5-397B-A17B",
                 _AIC + "Qwen--Qwen3.5-397B-A17B_config.json (the language part is read)"),
    CatalogModel("qwen3-next-80b-a3b", "Qwen/Qwen3-Next-80B-A3B-Thinking",
                 "ai-dynamo/aiconfigurator@1b7cfb10a6fa06880ad7911db5ddb949882ff76a "
                 "src/aiconfigurator/model_configs/Qwen--Qwen3-Next-80B-A3B-Thinking_config.json"),
    # Read by napkin.specs.kimi_linear. The Hugging Face file (main, transformers_version
    # 4.57.1), as quoted verbatim by two public copies that agree key for key: a checkpoint
    # report that lists it beside every tensor's shape (49,122,681,728 parameters), and the
    # config of Firworks/Kimi-Linear-48B-A3B-Instruct-nvfp4 (the same keys plus its
    # quantization_config). The model card gives -Base the same sizes (48B, 3B activated).
    CatalogModel("kimi-linear-48b-a3b", "moonshotai/Kimi-Linear-48B-A3B-Instruct",
                 "huggingface.co/moonshotai/Kimi-Linear-48B-A3B-Instruct config.json (quoted "
                 "copies; geometry checked against vLLM's models/kimi_linear.py, layers/kda.py)"),
)


def catalog_config(model_id: str) -> dict:
    """The shipped ``config.json`` of catalog model ``model_id``, as a dict."""
    if model_id not in {m.id for m in MODELS}:
        raise NapkinError(f"model: {model_id!r} is not in the catalog")
    return json.loads(CATALOG_DIR.joinpath("models", f"{model_id}.json")
                      .read_text(encoding="utf-8"))


@cache
def load_model(ref: str) -> ModelSpec:
    """A catalog id (case-insensitive) or a path to a Hugging Face ``config.json``."""
    ids = {m.id for m in MODELS}
    if ref.lower() in ids:
        return from_hf_config(catalog_config(ref.lower()), ref.lower(),
                              source=f"catalog {ref.lower()}")
    path = Path(ref)
    if path.is_dir():
        path = path / "config.json"
    if path.suffix == ".json" or path.exists():
        return load_hf_config(path, name=str(ref))
    raise NapkinError(
        f"model: unknown model {ref!r}; give a catalog id ({', '.join(sorted(ids))}) "
        "or a path to a config.json"
    )


def _config_dict(ref: str, kind: str, shipped: dict[str, str]) -> dict:
    """A shipped config by id, or a JSON file at path ``ref``."""
    if ref.lower() in shipped:
        text = CATALOG_DIR.joinpath(shipped[ref.lower()]).read_text(encoding="utf-8")
    else:
        try:
            text = read_text(ref, kind)
        except OSError:
            raise NapkinError(f"{kind}: unknown {kind} {ref!r}; give one of "
                              f"{', '.join(sorted(shipped))} or a config.json path") from None
    try:
        return load_json(text, kind)
    except json.JSONDecodeError as e:
        raise NapkinError(f"{kind}: {ref} is not valid JSON ({e.msg})") from None


VISION_MODELS = {"qwen3-vl-4b": "models/qwen3-vl-4b.json"}
DIFFUSION_MODELS = {"qwen-image-2512": "diffusion/qwen-image-2512.json"}


@cache
def load_vision_tower(ref: str) -> "VisionTower":
    """The ``vision_config`` of a shipped VLM (``qwen3-vl-4b``) or of a config.json path."""
    from napkin.specs.encoders import VisionTower  # its models take 20 ms to build: on use

    raw = _config_dict(ref, "vision model", VISION_MODELS)
    try:
        return VisionTower.model_validate(raw.get("vision_config", raw))
    except ValueError as e:
        raise NapkinError(f"vision model: {ref}: not a vision_config ({_first_line(e)})") from None


@cache
def load_dit(ref: str) -> "DiT":
    """A diffusion transformer's ``transformer/config.json`` (shipped: ``qwen-image-2512``)."""
    from napkin.specs.encoders import DiT

    raw = _config_dict(ref, "diffusion model", DIFFUSION_MODELS)
    try:
        return DiT.model_validate(raw)
    except ValueError as e:
        raise NapkinError(f"diffusion model: {ref}: not a DiT config ({_first_line(e)})") from None


def _first_line(e: Exception) -> str:
    lines = str(e).splitlines()
    return " ".join(lines[1:3]).strip() if len(lines) > 1 else lines[0]


@cache
def accelerators() -> dict[str, Accelerator]:
    """The accelerator catalog, by id, read from ``accelerators.yaml``."""
    from napkin.specs.yaml_text import load_yaml

    entries = load_yaml(CATALOG_DIR.joinpath("accelerators.yaml").read_text(encoding="utf-8"))
    return {e["id"]: _accelerator(e) for e in entries}


@cache
def _accelerator_entries() -> dict[str, str]:
    """Each entry of ``accelerators.yaml`` by id, as text: the file is a list whose every item
    starts ``- id: <id>`` at a line's start, so :func:`load_accelerator` parses its entry alone
    (1 ms; the whole file, 10 ms)."""
    text = CATALOG_DIR.joinpath("accelerators.yaml").read_text(encoding="utf-8")
    items = re.split(r"^(?=- )", text, flags=re.M)[1:]
    return {item.partition("\n")[0].removeprefix("- id:").strip(): item for item in items}


@cache
def _load_accelerator(ref: str) -> Accelerator:
    """The accelerator of catalog id ``ref`` (lower case), from its entry alone."""
    from napkin.specs.yaml_text import load_yaml

    (entry,) = load_yaml(_accelerator_entries()[ref])
    return _accelerator(entry)


def _accelerator(e: dict) -> Accelerator:
    return Accelerator(
        id=e["id"],
        name=e["name"],
        memory_bytes=e["memory_gb"] * GB,
        mem_bytes_per_s=e["mem_bw_gbs"] * GB,
        dense_flops_per_s={k: v * TFLOP for k, v in e["dense_tflops"].items()},
        interconnect=e.get("interconnect", "none"),
        interconnect_bytes_per_s=e.get("interconnect_gbs", 0) * GB,
        sources=dict(e.get("sources", {})),
        notes=e.get("notes", ""),
        confidence=e.get("confidence", "high"),
        device_memory_bytes=(e["device_memory_mib"] * MiB if "device_memory_mib" in e else None),
        sm_clock_hz=e["sm_clock_mhz"] * 1e6 if "sm_clock_mhz" in e else None,
        host_link_bytes_per_s=e["host_link_gbs"] * GB if "host_link_gbs" in e else None,
        architecture=e.get("architecture", ""),
        nvlink_domain=e.get("nvlink_domain"),
        tdp_watts=float(e["tdp_w"]) if "tdp_w" in e else None,
    )


def scenario_file(name: str) -> Path:
    """A shipped scenario or workload file (``chapter-3-1-uniform.yaml``); the repository's
    ``examples/`` folder is this folder."""
    path = CATALOG_DIR.joinpath("scenarios", name)
    if not path.is_file():
        raise NapkinError(f"scenario: no shipped file {name!r}")
    return path


def measurement_file(name: str) -> Path:
    """A shipped measurement table (``catalog/measurements``: ``torchtitan_training.csv``…)."""
    path = CATALOG_DIR.joinpath("measurements", name)
    if not path.is_file():
        raise NapkinError(f"measurements: no shipped file {name!r}")
    return path


def gpu_measurement_file(tables: dict[str, str], gpu: str, what: str) -> Path:
    """The shipped measurement table of ``gpu`` among ``tables`` (GPU id → file name); one
    error naming ``gpu`` and the GPUs with one where it has none (``what``: the table's kind,
    for the message)."""
    if gpu not in tables:
        raise NapkinError(f"gpu: no shipped {what} table for {gpu!r}; tables: "
                          f"{', '.join(tables)}")
    return measurement_file(tables[gpu])


def scaling_data(name: str) -> Path:
    """A shipped scaling-law observation file (``datablations_c4_runs.csv``…)."""
    path = CATALOG_DIR.joinpath("scaling", name)
    if not path.is_file():
        raise NapkinError(f"scaling data: no shipped file {name!r}")
    return path


@cache
def training_records() -> dict[str, dict]:
    """Published training records by id, with sources: pretraining runs (params, tokens,
    GPU-hours) and measured layouts (``layout``, ``measured``: TP/PP/DP, batch, iteration time,
    MFU), the latter checked by ``tests/training/test_published_runs.py``."""
    from napkin.specs.yaml_text import load_yaml

    text = CATALOG_DIR.joinpath("training_records.yaml").read_text(encoding="utf-8")
    return {r["id"]: r for r in load_yaml(text)}


def load_accelerator(ref: str) -> Accelerator:
    """The accelerator with catalog id ``ref`` (case-insensitive)."""
    if ref.lower() not in _accelerator_entries():
        raise NapkinError(
            f"gpu: unknown accelerator {ref!r}; allowed: {', '.join(_accelerator_entries())}")
    return _load_accelerator(ref.lower())
