"""``Accelerator``: memory, bandwidth and dense tensor-core rates of one device, with sources."""

from dataclasses import dataclass, field, replace

from napkin.errors import NapkinError, require
from napkin.units import GB, TFLOP

CUSTOM_FORMATS = ("bf16", "fp16", "fp8", "int8", "fp4")  # what --gpu-tflops sets on a custom GPU


@dataclass(frozen=True)
class Accelerator:
    """One device. Rates are dense (no structured sparsity), in base units.

    ``dense_flops_per_s`` maps a compute format (bf16, fp16, fp8, int8, fp4) to FLOP/s (OP/s for
    int8). ``sources`` names where each figure comes from.

    ``memory_bytes`` is the vendor's marketed capacity read as 1e9-byte GB (an H100's "80 GB" is
    80e9 B); every worked example uses it. ``device_memory_bytes`` is what the device reports to
    CUDA (nvidia-smi ``memory.total``: 81,559 MiB = 85.5e9 B on an H100 SXM), source
    ``sources["device_memory"]``; it defaults to ``memory_bytes`` where no public source gives
    it. Serving engines size their KV pools from what the device reports (vLLM:
    ``total memory × gpu_memory_utilization − weights − activations``), so KV-pool derivations
    should start from ``device_memory_bytes``.
    """

    id: str
    name: str
    memory_bytes: float
    mem_bytes_per_s: float
    dense_flops_per_s: dict[str, float]
    interconnect: str = "none"
    interconnect_bytes_per_s: float = 0.0
    sources: dict[str, str] = field(default_factory=dict)
    notes: str = ""
    confidence: str = "high"
    device_memory_bytes: float | None = None
    host_link_bytes_per_s: float | None = None
    """The GPU's link to host memory, bidirectional (catalog ``host_link_gbs``: PCIe Gen5 ×16
    128 GB/s; NVLink-C2C 900 GB/s); None where unpublished."""
    sm_clock_hz: float | None = None
    """The SM's maximum clock (nvidia-smi ``Max Clocks: SM``), source ``sources["clock"]``;
    None where no public source gives it (then :attr:`fixed_time_scale` is 1)."""
    nvlink_domain: int | None = None
    """GPUs in one NVLink domain where it is not a node of 8 (NVL72 racks: 72)."""
    architecture: str = ""
    """The GPU architecture kernels are written for (``ampere``, ``hopper``, ``blackwell`` …);
    empty for a custom device."""
    tdp_watts: float | None = None
    """The board's (module's) maximum power, W (catalog ``tdp_w``); None where unpublished
    (TPUs) or for a custom device."""

    def __post_init__(self) -> None:
        if self.device_memory_bytes is None:  # unknown: what the vendor markets
            object.__setattr__(self, "device_memory_bytes", self.memory_bytes)

    @property
    def allreduce_bytes_per_s(self) -> float:
        """Per-direction link bandwidth a ring all-reduce sees: half the catalog's
        bidirectional interconnect figure, or 32 GB/s (PCIe 4 ×16) where none is listed."""
        return self.interconnect_bytes_per_s / 2 if self.interconnect_bytes_per_s else 32 * GB

    @property
    def host_load_bytes_per_s(self) -> float:
        """Per-direction bandwidth from host memory to the GPU: half the bidirectional host
        link, or 32 GB/s (PCIe 4 ×16) where the catalog has none."""
        return self.host_link_bytes_per_s / 2 if self.host_link_bytes_per_s else 32 * GB

    @property
    def fixed_time_scale(self) -> float:
        """How much longer a fixed time (a kernel launch, a small kernel, a collective's
        latency) takes here than on the reference GPU the fitted profiles' seconds are in (an
        H100 SXM at :data:`REFERENCE_SM_CLOCK_HZ`): that clock / this GPU's SM clock; 1 where
        the clock is unknown. splitwise-sim's A100 and H100 decode times have a fixed time a
        step 1.47× and a time per all-reduce and extra rank 1.45× longer on A100, against a
        clock ratio of 1.40 (:mod:`napkin.calibration.terms`)."""
        return REFERENCE_SM_CLOCK_HZ / self.sm_clock_hz if self.sm_clock_hz else 1.0

    @property
    def device_memory_known(self) -> bool:
        """Whether ``device_memory_bytes`` comes from a source rather than ``memory_bytes``."""
        return "device_memory" in self.sources

    def peak_flops_per_s(self, compute: str) -> float:
        """Dense peak for matmuls in ``compute`` format (e.g. ``bf16``)."""
        try:
            return self.dense_flops_per_s[compute]
        except KeyError:
            have = ", ".join(self.dense_flops_per_s)
            raise NapkinError(
                f"gpu: {self.id} has no dense {compute} rate in the catalog (has: {have}); "
                "pick another --weights format or give --gpu-tflops"
            ) from None


REFERENCE_SM_CLOCK_HZ = 1980e6
"""The H100 SXM's maximum SM clock (nvidia-smi ``Max Clocks: SM 1980 MHz``,
thamada/nvidia-smi ``gls/H100SXMx8_smi.py``): the GPU whose clock a fitted profile's seconds
are read at (:attr:`Accelerator.fixed_time_scale`)."""


OVERRIDE_RANGE = (1e-3, 1e6)
"""Accepted ``--gpu-mem-gb`` (GB), ``--gpu-bw-gbs`` (GB/s) and ``--gpu-tflops`` (TFLOP/s):
from a microcontroller's to a thousand times a 2025 GPU's; outside it times and capacities
underflow or overflow."""


def override(
    acc: Accelerator | None,
    mem_gb: float | None = None,
    bw_gbs: float | None = None,
    tflops: float | None = None,
) -> Accelerator:
    """``acc`` with memory (GB), bandwidth (GB/s) or dense peak (TFLOP/s, every format) replaced.

    With ``acc`` None, all three define a custom device (the question bank's "RTX 4080 with
    32 GB" is ``rtx-4080`` with ``mem_gb=32``).
    """
    lo, hi = OVERRIDE_RANGE
    for name, value in (("gpu-mem-gb", mem_gb), ("gpu-bw-gbs", bw_gbs), ("gpu-tflops", tflops)):
        require(value is None or lo <= value <= hi,
                f"{name}: must be in [{lo:g}, {hi:g}], got {value}")
    if acc is None:
        if mem_gb is None or bw_gbs is None or tflops is None:
            raise NapkinError(
                "gpu: give a catalog id (napkin gpus) or all of --gpu-mem-gb, --gpu-bw-gbs, "
                "--gpu-tflops"
            )
        acc = Accelerator(
            id="custom", name="custom accelerator", memory_bytes=0, mem_bytes_per_s=0,
            dense_flops_per_s={}, sources={"all": "command-line overrides"}, confidence="user",
        )
    changes: dict[str, object] = {}
    sources, said = dict(acc.sources), []
    if mem_gb is not None:
        changes["memory_bytes"] = changes["device_memory_bytes"] = mem_gb * GB
        sources["memory"] = "override --gpu-mem-gb"
        sources.pop("device_memory", None)  # the override is what the device has
        said.append(f"{mem_gb:g} GB")
    if bw_gbs is not None:
        changes["mem_bytes_per_s"] = bw_gbs * GB
        sources["bandwidth"] = "override --gpu-bw-gbs"
        said.append(f"{bw_gbs:g} GB/s")
    if tflops is not None:
        formats = acc.dense_flops_per_s or dict.fromkeys(CUSTOM_FORMATS, 0.0)
        changes["dense_flops_per_s"] = {k: tflops * TFLOP for k in formats}
        sources["compute"] = "override --gpu-tflops (applied to every format)"
        said.append(f"{tflops:g} TFLOP/s")
    if not changes:
        return acc
    if acc.id == "custom":
        return replace(acc, name=f"custom accelerator ({', '.join(said)})", sources=sources,
                       **changes)  # type: ignore[arg-type]
    return replace(acc, id=f"{acc.id}*", name=f"{acc.name} with {', '.join(said)}",
                   sources=sources, **changes)  # type: ignore[arg-type]
