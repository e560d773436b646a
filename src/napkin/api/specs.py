"""Models, accelerators and deployments from keyword arguments (the CLI's common flags)."""

from collections.abc import Callable
from typing import TypeVar

from napkin.accounting.forward import Precision
from napkin.api.boundary import checked
from napkin.catalog import load_accelerator
from napkin.catalog import load_model as _load_catalog_model
from napkin.catalog.checkpoints import resolve_unquantized
from napkin.errors import NapkinError
from napkin.specs.hardware import Accelerator, override
from napkin.specs.model import ModelSpec
from napkin.timing.efficiency import DEFAULT_MBU, DEFAULT_MFU, Efficiency
from napkin.timing.roofline import Deployment
from napkin.units import MS

T = TypeVar("T")

ModelRef = str | ModelSpec
"""A catalog id (``napkin.list_models()``), a path to a Hugging Face ``config.json``, or a
:class:`~napkin.specs.model.ModelSpec`."""
GpuRef = str | Accelerator
"""A catalog id (``napkin.list_gpus()``) or an :class:`~napkin.specs.hardware.Accelerator`."""


@checked
def load_model(model: ModelRef) -> ModelSpec:
    """The model spec of a catalog id or a ``config.json`` path (a spec is returned as is)."""
    return model if isinstance(model, ModelSpec) else _load_catalog_model(model)


def as_field(field: str, load: Callable[[], T]) -> T:
    """``load()``, its ``model:`` errors naming ``field`` instead: a second model of a command
    (``teacher``, ``reward_model``, ``slow``, ``fast``) is the user's field, not ``model``."""
    try:
        return load()
    except NapkinError as e:
        text = str(e)
        if text.startswith("model:"):
            raise NapkinError(f"{field}:{text.removeprefix('model:')}") from None
        raise


@checked
def load_gpu(gpu: GpuRef | None = None, *, gpu_mem_gb: float | None = None,
             gpu_bw_gbs: float | None = None, gpu_tflops: float | None = None) -> Accelerator:
    """A catalog accelerator with optional overrides (memory GB, bandwidth GB/s, dense
    TFLOP/s), or a custom one when ``gpu`` is None and all three overrides are given."""
    base = load_accelerator(gpu) if isinstance(gpu, str) and gpu else gpu or None
    return override(base, gpu_mem_gb, gpu_bw_gbs, gpu_tflops)


def has_gpu(gpu: GpuRef | None, gpu_mem_gb: float | None, gpu_bw_gbs: float | None,
            gpu_tflops: float | None) -> bool:
    """Whether any accelerator argument was given (an empty id counts as none)."""
    return bool(gpu) or any(v is not None for v in (gpu_mem_gb, gpu_bw_gbs, gpu_tflops))


@checked
def deployment(model: ModelRef, gpu: GpuRef | None = None, *, gpu_mem_gb: float | None = None,
               gpu_bw_gbs: float | None = None, gpu_tflops: float | None = None,
               weights: str = "bf16", kv_dtype: str = "bf16", read_embedding: bool = False,
               mfu: float = DEFAULT_MFU, mbu: float = DEFAULT_MBU,
               overhead_ms: float = 0.0, unquantized: str | None = None) -> Deployment:
    """A model on an accelerator at a precision and efficiency (roofline timing).

    ``weights``: bf16 fp16 fp8 int8 int4 int4-g128 int4-g32 mxfp4 (W4A16) mxfp4-w4a4 nvfp4
    q4_k_m fp32; ``kv_dtype``: bf16 fp16 fp8 int8; ``mfu``/``mbu``: achieved shares of peak
    FLOP/s and bandwidth in (0, 1]; ``overhead_ms``: fixed time per call, ms;
    ``unquantized``: parts the checkpoint keeps in BF16, a comma-separated subset of
    attention, router, shared-experts, dense-mlp, lm-head, embedding (default none), or
    ``checkpoint``: what the catalog model's public checkpoint keeps at ``weights``.
    """
    spec = load_model(model)
    return Deployment(spec,
                      load_gpu(gpu, gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs,
                               gpu_tflops=gpu_tflops),
                      Precision.of(weights, kv_dtype, read_embedding,
                                   resolve_unquantized(unquantized, spec.name, weights)),
                      Efficiency(mfu, mbu, overhead_ms * MS))
