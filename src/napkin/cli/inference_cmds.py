"""``napkin call``, ``napkin decode``, ``napkin capacity``, ``napkin moe``."""

from typing import Annotated

import typer

from napkin.accounting.batch import Batch
from napkin.accounting.forward import Precision, forward
from napkin.accounting.series import decode_runs
from napkin.catalog import load_model
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
    WeightsOpt,
    accelerator,
    deployment,
    emit,
    parse_ints,
)
from napkin.errors import require
from napkin.inference.capacity import capacity as capacity_of
from napkin.inference.chain import request_chain
from napkin.inference.decode import decode_table
from napkin.inference.moe import moe_table
from napkin.report import views
from napkin.specs.model import check_tensor_parallel
from napkin.timing import DEFAULT_MBU, DEFAULT_MFU
from napkin.units import GB

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
    calibration: CalibrationOpt = None, tp: TpOpt = 1,
    fmt: FormatOpt = Format.table,
) -> None:
    """Operator list of one prefill; with --gpu, the request chain's TTFT, TPOT, end-to-end."""
    model = load_model(ref)
    require(new >= 1, f"new: must be >= 1 token, got {new}")
    require(batch >= 1, f"batch: must be >= 1, got {batch}")
    require(gen >= 1, f"gen: must be >= 1 token, got {gen}")
    model.check_context(cached + new + gen - 1)
    precision = Precision.of(weights, kv_dtype, read_embedding)
    prefill = forward(model, Batch.uniform(cached, new, batch), precision)
    runs = decode_runs(model, precision, batch, cached + new, gen - 1)
    dep = chain = None
    if gpu or gpu_mem_gb or gpu_bw_gbs or gpu_tflops:
        dep = deployment(model, accelerator(gpu, gpu_mem_gb, gpu_bw_gbs, gpu_tflops), weights,
                         kv_dtype, read_embedding, mfu, mbu, overhead_ms)
        chain = request_chain(dep, new=new, gen=gen, cached=cached, batch=batch)
    calibrated = None
    if calibration is not None:
        from napkin.calibration.predict import calibrated_call
        from napkin.calibration.profile import load_profile

        require(dep is not None, "calibration: needs --gpu (a catalog accelerator)")
        assert dep is not None
        check_tensor_parallel(model, tp)
        calibrated = calibrated_call(load_profile(calibration), model, dep.acc, precision, new,
                                     gen, cached, batch, tp, ref)
    inputs = {"model": model.name, "cached_tokens": cached, "new_tokens": new,
              "gen_tokens": gen, "batch": batch, **(
                  {} if dep else {"weights": weights, "kv_dtype": kv_dtype,
                                  "read_embedding": read_embedding})}
    emit(views.call_doc(model, prefill, runs, dep, chain, inputs, calibrated), fmt)


def decode(
    ref: ModelArg, gpu: GpuOpt = None, batch: BatchesOpt = "1", context: ContextOpt = 4096,
    reserve_gb: ReserveOpt = 0.0, gpu_mem_gb: MemOpt = None, gpu_bw_gbs: BwOpt = None,
    gpu_tflops: TflopsOpt = None, weights: WeightsOpt = "bf16", kv_dtype: KvOpt = "bf16",
    read_embedding: ReadEmbOpt = False, mfu: MfuOpt = DEFAULT_MFU, mbu: MbuOpt = DEFAULT_MBU,
    overhead_ms: OverheadOpt = 0.0, calibration: CalibrationOpt = None, tp: TpOpt = 1,
    fmt: FormatOpt = Format.table,
) -> None:
    """Decode table over batch sizes: memory, fit, step time, tokens/s (question bank task 2)."""
    model = load_model(ref)
    dep = deployment(model, accelerator(gpu, gpu_mem_gb, gpu_bw_gbs, gpu_tflops), weights,
                     kv_dtype, read_embedding, mfu, mbu, overhead_ms)
    batches = parse_ints(batch, "batch")
    table = decode_table(dep, batches, context, reserve_gb * GB)
    inputs = {"model": model.name, "context_tokens": context, "reserve_bytes": reserve_gb * GB}
    calibrated = None
    if calibration is not None:
        from napkin.calibration.predict import calibrated_decode
        from napkin.calibration.profile import load_profile

        check_tensor_parallel(model, tp)
        profile = load_profile(calibration)
        calibrated = (profile, calibrated_decode(profile, model, dep.acc, dep.precision,
                                                 batches, context, tp), tp)
    emit(views.decode_doc(dep, table, inputs, calibrated), fmt)


def capacity(
    ref: ModelArg,
    count: Annotated[int, typer.Option("--count", help="Accelerators (weights sharded).")] = 1,
    context: ContextOpt = 4096,
    avg_context: Annotated[int | None, typer.Option("--avg-context",
                                                    help="Average context, tokens.")] = None,
    reserve_gb: ReserveOpt = 0.0, gpu: GpuOpt = None, gpu_mem_gb: MemOpt = None,
    gpu_bw_gbs: BwOpt = None, gpu_tflops: TflopsOpt = None, weights: WeightsOpt = "bf16",
    kv_dtype: KvOpt = "bf16", fmt: FormatOpt = Format.table,
) -> None:
    """Users whose KV fits at a context on N accelerators (question bank task 3)."""
    model = load_model(ref)
    dep = deployment(model, accelerator(gpu, gpu_mem_gb, gpu_bw_gbs, gpu_tflops), weights,
                     kv_dtype, False, DEFAULT_MFU, DEFAULT_MBU, 0.0)
    cap = capacity_of(dep, count, context, avg_context, reserve_gb * GB)
    inputs = {"model": model.name, "count": count, "context_tokens": context,
              "avg_context_tokens": avg_context, "reserve_bytes_per_device": reserve_gb * GB}
    emit(views.capacity_doc(dep, cap, inputs), fmt)


def moe(
    ref: ModelArg, batch: BatchesOpt = "1,4,16,64",
    context: ContextOpt = 1,
    gpu: Annotated[str, typer.Option("--gpu", help="Accelerator id.")] = "h100-sxm",
    gpu_mem_gb: MemOpt = None,
    gpu_bw_gbs: BwOpt = None, gpu_tflops: TflopsOpt = None, weights: WeightsOpt = "bf16",
    kv_dtype: KvOpt = "bf16", read_embedding: ReadEmbOpt = False, mfu: MfuOpt = DEFAULT_MFU,
    mbu: MbuOpt = DEFAULT_MBU, overhead_ms: OverheadOpt = 0.0, fmt: FormatOpt = Format.table,
) -> None:
    """MoE decode: experts touched, bytes per step, FLOPs per token, compute-bound batch."""
    model = load_model(ref)
    dep = deployment(model, accelerator(gpu, gpu_mem_gb, gpu_bw_gbs, gpu_tflops), weights,
                     kv_dtype, read_embedding, mfu, mbu, overhead_ms)
    table = moe_table(dep, parse_ints(batch, "batch"), context)
    emit(views.moe_doc(dep, table, {"model": model.name, "context_tokens": context}), fmt)
