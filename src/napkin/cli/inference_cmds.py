"""``napkin call``, ``napkin decode``, ``napkin capacity``, ``napkin moe`` (over
:mod:`napkin.api.inference`)."""

from typing import Annotated

import typer

from napkin.api import inference as api
from napkin.api.text import parse_ints
from napkin.cli.common import (
    BwOpt,
    FiniteOption,
    Format,
    FormatOpt,
    GpuOpt,
    KvOpt,
    MbuOpt,
    MemOpt,
    MfuOpt,
    ModelArg,
    OverheadOpt,
    ReadEmbOpt,
    TflopsOpt,
    UnquantizedOpt,
    WeightsOpt,
    emit,
)
from napkin.timing.efficiency import DEFAULT_MBU, DEFAULT_MFU

BatchesOpt = Annotated[str, typer.Option("--batch", help="Batch sizes, comma-separated.")]
ContextOpt = Annotated[int, typer.Option("--context", help="Cached tokens per sequence.")]
ReserveOpt = Annotated[float, FiniteOption("--reserve-gb", help="Memory kept free per device, GB.")]


CalibrationOpt = Annotated[str | None, typer.Option(
    "--calibration", help="Also time with a calibration profile (vllm, trtllm, sglang or a "
                          "profile file), with its hold-out band; needs --gpu.")]
TpOpt = Annotated[int, typer.Option("--tp", help="Tensor-parallel size for --calibration.",
                                    min=1)]


def call(
    ref: ModelArg,
    new: Annotated[int, typer.Option("--new", help="New input tokens P per sequence.")],
    cached: Annotated[int, typer.Option("--cached", help="Cached tokens S per sequence.")] = 0,
    gen: Annotated[int, typer.Option("--gen", help="Output tokens G (1 prefill + G−1 decode)."
                                     )] = 1,
    batch: Annotated[int, typer.Option("--batch", help="Identical sequences B.")] = 1,
    gpu: GpuOpt = None, gpu_mem_gb: MemOpt = None, gpu_bw_gbs: BwOpt = None,
    gpu_tflops: TflopsOpt = None, weights: WeightsOpt = "bf16", kv_dtype: KvOpt = "bf16",
    read_embedding: ReadEmbOpt = False, mfu: MfuOpt = DEFAULT_MFU, mbu: MbuOpt = DEFAULT_MBU,
    overhead_ms: OverheadOpt = 0.0,
    calibration: CalibrationOpt = None, tp: TpOpt = 1, unquantized: UnquantizedOpt = None,
    usd_per_kwh: Annotated[float | None, FiniteOption(
        "--usd-per-kwh", help="Electricity price, $/kWh: energy $ per million tokens.")] = None,
    pue: Annotated[float, FiniteOption(
        "--pue", help="Facility power usage effectiveness (1: the GPU boards alone).")] = 1.0,
    prefill_power_frac: Annotated[float, FiniteOption(
        "--prefill-power-frac", help="Share of board power drawn in prefill.")] = 1.0,
    decode_power_frac: Annotated[float, FiniteOption(
        "--decode-power-frac", help="Share of board power drawn in decode.")] = 0.43,
    fmt: FormatOpt = Format.table,
) -> None:
    """Operator list of one prefill; with --gpu, the request chain's TTFT, TPOT, end-to-end
    and its energy."""
    emit(api.call(ref, new=new, cached=cached, gen=gen, batch=batch, gpu=gpu,
                  gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs, gpu_tflops=gpu_tflops,
                  weights=weights, kv_dtype=kv_dtype, read_embedding=read_embedding, mfu=mfu,
                  mbu=mbu, overhead_ms=overhead_ms, calibration=calibration, tp=tp,
                  unquantized=unquantized, usd_per_kwh=usd_per_kwh, pue=pue,
                  prefill_power_frac=prefill_power_frac,
                  decode_power_frac=decode_power_frac), fmt)


def decode(
    ref: ModelArg, gpu: GpuOpt = None, batch: BatchesOpt = "1", context: ContextOpt = 4096,
    reserve_gb: ReserveOpt = 0.0, gpu_mem_gb: MemOpt = None, gpu_bw_gbs: BwOpt = None,
    gpu_tflops: TflopsOpt = None, weights: WeightsOpt = "bf16", kv_dtype: KvOpt = "bf16",
    read_embedding: ReadEmbOpt = False, mfu: MfuOpt = DEFAULT_MFU, mbu: MbuOpt = DEFAULT_MBU,
    overhead_ms: OverheadOpt = 0.0, calibration: CalibrationOpt = None, tp: TpOpt = 1,
    unquantized: UnquantizedOpt = None, fmt: FormatOpt = Format.table,
) -> None:
    """Decode table over batch sizes: memory held, fit, bytes moved and FLOPs per step, their
    ratio against the GPU's ridge point, step time, tokens/s (question bank task 2)."""
    emit(api.decode_table(ref, gpu=gpu, batch=parse_ints(batch, "batch"), context=context,
                          reserve_gb=reserve_gb, gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs,
                          gpu_tflops=gpu_tflops, weights=weights, kv_dtype=kv_dtype,
                          read_embedding=read_embedding, mfu=mfu, mbu=mbu,
                          overhead_ms=overhead_ms, calibration=calibration, tp=tp,
                          unquantized=unquantized), fmt)


def capacity(
    ref: ModelArg,
    count: Annotated[int, typer.Option("--count", help="Accelerators (weights sharded).")] = 1,
    context: ContextOpt = 4096,
    avg_context: Annotated[int | None, typer.Option("--avg-context",
                                                    help="Average context, tokens.")] = None,
    reserve_gb: ReserveOpt = 0.0, gpu: GpuOpt = None, gpu_mem_gb: MemOpt = None,
    gpu_bw_gbs: BwOpt = None, gpu_tflops: TflopsOpt = None, weights: WeightsOpt = "bf16",
    kv_dtype: KvOpt = "bf16", unquantized: UnquantizedOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Users whose KV fits at a context on N accelerators (question bank task 3)."""
    emit(api.capacity(ref, gpu=gpu, count=count, context=context, avg_context=avg_context,
                      reserve_gb=reserve_gb, gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs,
                      gpu_tflops=gpu_tflops, weights=weights, kv_dtype=kv_dtype,
                      unquantized=unquantized), fmt)


def moe(
    ref: ModelArg, batch: BatchesOpt = "1,4,16,64",
    context: ContextOpt = 1,
    gpu: Annotated[str, typer.Option("--gpu", help="Accelerator id.")] = "h100-sxm",
    gpu_mem_gb: MemOpt = None,
    gpu_bw_gbs: BwOpt = None, gpu_tflops: TflopsOpt = None, weights: WeightsOpt = "bf16",
    kv_dtype: KvOpt = "bf16", read_embedding: ReadEmbOpt = False, mfu: MfuOpt = DEFAULT_MFU,
    mbu: MbuOpt = DEFAULT_MBU, overhead_ms: OverheadOpt = 0.0,
    ep: Annotated[int, typer.Option("--ep", help="GPUs the experts are spread over with "
                                    "data-parallel attention (DEP): the busiest GPU's figures "
                                    "per batch.")] = 1,
    balancedness: Annotated[float | None, FiniteOption(
        "--balancedness", help="With --ep: measured expert-load balance, mean over the busiest "
        "GPU's routed load in (0, 1] (EPLB's 'balancedness'); default: uniform routing.")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """MoE decode: experts touched, bytes per step, FLOPs per token, compute-bound batch."""
    emit(api.moe(ref, batch=parse_ints(batch, "batch"), context=context, gpu=gpu,
                 gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs, gpu_tflops=gpu_tflops,
                 weights=weights, kv_dtype=kv_dtype, read_embedding=read_embedding, mfu=mfu,
                 mbu=mbu, overhead_ms=overhead_ms, ep=ep, balancedness=balancedness), fmt)
