"""``napkin train`` and ``napkin rl`` (over :mod:`napkin.api.training`)."""

from pathlib import Path
from typing import Annotated, Any

import typer

from napkin.api import training as api
from napkin.api.text import parse_ints
from napkin.cli.common import (
    BwOpt,
    FiniteOption,
    Format,
    FormatOpt,
    GpuOpt,
    MemOpt,
    PlotOption,
    TflopsOpt,
    emit,
)
from napkin.errors import require

OptionalModelArg = Annotated[str | None, typer.Argument(
    metavar="[MODEL]", help="Catalog id (napkin models) or config.json path (or --run's).")]
RunOpt = Annotated[Path | None, typer.Option(
    "--run", help="Run record (YAML/JSON) to replay; options given here override it.")]


def _source(ctx: typer.Context, name: str) -> str | None:
    """Where a parameter's value came from (``COMMANDLINE``, ``DEFAULT``…), by name: typer
    vendors its own click, whose enum is not ``click``'s."""
    source = ctx.get_parameter_source(name)
    return None if source is None else source.name


def _options(ctx: typer.Context, record: Path | None, kind: str,
             options: dict[str, Any]) -> dict[str, Any]:
    """The API keywords: the run record's values under the options the command line gave."""
    if record is None:
        require(options["model"] is not None, "model: give MODEL or --run FILE")
        return options
    given = {k: v for k, v in options.items()
             if _source(ctx, "ref" if k == "model" else k) == "COMMANDLINE"}
    return {**options, **api.run_record(str(record), kind=kind).value["options"], **given}


def train(
    ctx: typer.Context,
    ref: OptionalModelArg = None,
    seq: Annotated[int, typer.Option("--seq", help="Tokens per sequence P.")] = 4096,
    docs: Annotated[str | None, typer.Option(
        "--docs", help="Packed document lengths, comma-separated (sum = the sequence).")] = None,
    micro_batch: Annotated[int, typer.Option("--micro-batch", help="Sequences B_μ.")] = 1,
    accumulation: Annotated[int, typer.Option("--accumulation", help="Micro-batches a.")] = 1,
    labels: Annotated[int | None, typer.Option("--labels", help="Labelled tokens/sequence.")] =
    None,
    head: Annotated[str, typer.Option("--head", help="LM head on all or labelled.")] = "all",
    recompute: Annotated[str, typer.Option(
        "--recompute", help="none, selective (attention core), selective-op (torchtitan's "
                            "per-op), selective-layer (every second layer) or full.")] = "none",
    freeze: Annotated[list[str] | None, typer.Option(
        "--freeze", help="Glob of frozen modules (attn/*, mlp/*, embed…); ! un-freezes.")] = None,
    lora_rank: Annotated[int, typer.Option("--lora-rank", help="LoRA rank (0: off).")] = 0,
    qlora: Annotated[bool, typer.Option("--qlora", help="NF4 base (with --lora-rank).")] = False,
    optimizer: Annotated[str, typer.Option(
        "--optimizer", help="adamw (16 B/param), adamw-fp32-grads (18), adamw-8bit, "
                            "adamw-bf16 (8: no FP32 master), sgd, sgd-momentum.")] = "adamw",
    zero: Annotated[int, typer.Option("--zero", help="ZeRO stage 0–3 (3 = FSDP).")] = 0,
    offload: Annotated[bool, typer.Option("--offload", help="Optimizer states on CPU.")] = False,
    devices: Annotated[int, typer.Option("--devices", help="Data-parallel ranks (each --tp × "
                                                           "--pipeline GPUs).")] = 1,
    gpu: GpuOpt = "h100-sxm", gpu_mem_gb: MemOpt = None, gpu_bw_gbs: BwOpt = None,
    gpu_tflops: TflopsOpt = None,
    mfu: Annotated[float | None, FiniteOption(
        "--mfu", help="Share of each matmul's dense peak while computing (default: the "
                      "training profile fitted on torchtitan's runs); bubble and exposed "
                      "TP/PP traffic come on top (achieved_mfu is the end-to-end figure).")
    ] = None,
    allocator_overhead: Annotated[float | None, FiniteOption(
        "--allocator-overhead", help="Share of the allocated memory the caching allocator "
                                     "reserves on top (default: the training profile's).")
    ] = None,
    link_gbs: Annotated[float | None, FiniteOption(
        "--link-gbs", help="Gradient/weight link per device, GB/s (default: the GPU's "
                           "interconnect per direction from the catalog, PCIe 4 where none).")]
    = None,
    grad_dtype: Annotated[str | None, typer.Option(
        "--grad-dtype", help="Gradient precision of the reduction on the wire: bf16 or fp32 "
                             "(default: the optimizer recipe's).")] = None,
    flash: Annotated[bool, typer.Option("--flash/--no-flash", help="FlashAttention.")] = True,
    pipeline: Annotated[int, typer.Option("--pipeline", help="Pipeline stages p.")] = 1,
    virtual_stages: Annotated[int, typer.Option(
        "--virtual-stages", min=1, max=1024,
        help="Model chunks per pipeline stage v (interleaved 1F1B; 1: plain 1F1B).")] = 1,
    sequence_parallel: Annotated[bool, typer.Option(
        "--sequence-parallel/--no-sequence-parallel",
        help="Megatron sequence parallelism: norms and dropout split over --tp.")] = False,
    tp: Annotated[int, typer.Option("--tp", min=1, max=1024,
                                    help="Tensor-parallel size t (Megatron).")] = 1,
    gpus_per_node: Annotated[int | None, typer.Option(
        "--gpus-per-node", min=1, max=1024,
        help="GPUs on one NVLink domain (default 8, or 72 on GB200/GB300 NVL72).")] = None,
    inter_node_gbs: Annotated[float, FiniteOption(
        "--inter-node-gbs", help="Inter-node network per GPU and direction, GB/s (400 Gb/s "
                                 "InfiniBand: 50).")] = 50.0,
    host_link_gbs: Annotated[float, FiniteOption(
        "--host-link-gbs", help="GPU ↔ CPU link per direction for --offload and "
                                "--offload-activations, GB/s "
                                "(PCIe 4.0 ×16).")] = 32.0,
    cpu_mem_gbs: Annotated[float, FiniteOption(
        "--cpu-mem-gbs", help="Host memory bandwidth of the offloaded CPU Adam step, GB/s "
                              "(half of 8-channel DDR4-3200's 204.8).")] = 100.0,
    tokens: Annotated[float | None, FiniteOption(
        "--tokens", help="Train on this many tokens: wall time, GPU-hours, days, $.")] = None,
    epochs: Annotated[float | None, FiniteOption(
        "--epochs", help="Or epochs over --dataset-tokens.")] = None,
    dataset_tokens: Annotated[float | None, FiniteOption(
        "--dataset-tokens", help="Tokens of one epoch.")] = None,
    usd_per_gpu_hour: Annotated[float | None, FiniteOption(
        "--usd-per-gpu-hour", help="Price (default: the price catalog's for --gpu).")] = None,
    precision: Annotated[str, typer.Option(
        "--precision", help="Matmul recipe: bf16, fp8 (block linears at the FP8 rate, "
                            "tensorwise scales) or fp8-rowwise.")] = "bf16",
    compiled: Annotated[bool, typer.Option(
        "--compile/--no-compile", help="torch.compile (fused elementwise kernels).")] = False,
    async_tp: Annotated[bool, typer.Option(
        "--async-tp/--no-async-tp",
        help="TP collectives overlapped with the matmuls (needs --tp > 1).")] = False,
    cp: Annotated[int, typer.Option(
        "--cp", min=1, max=1024,
        help="Context-parallel ranks per sequence (FSDP shards over --devices × --cp).")] = 1,
    ep: Annotated[int, typer.Option(
        "--ep", min=1, max=1024,
        help="Expert-parallel ranks (of --devices × --cp, --tp 1): the routed experts split "
             "over them, with dispatch and combine all-to-alls.")] = 1,
    offload_activations: Annotated[bool, typer.Option(
        "--offload-activations/--no-offload-activations",
        help="Saved activations to host memory and back over --host-link-gbs.")] = False,
    overlap_ep: Annotated[bool, typer.Option(
        "--overlap-ep/--no-overlap-ep",
        help="EP all-to-alls under other micro-batches' compute (DeepSeek's DualPipe).")
    ] = False,
    offload_params: Annotated[bool, typer.Option(
        "--offload-params/--no-offload-params",
        help="FSDP's CPU offload (--zero 3): the whole state on the host.")] = False,
    optimizer_in_backward: Annotated[bool, typer.Option(
        "--optimizer-in-backward/--no-optimizer-in-backward",
        help="Step and free each gradient during backward (--accumulation 1).")] = False,
    eval_share: Annotated[float, FiniteOption(
        "--eval-share", help="Share of the run's wall time spent evaluating.")] = 0.0,
    checkpoint_s: Annotated[float, FiniteOption(
        "--checkpoint-s", help="Seconds a checkpoint blocks training (0: asynchronous).")
    ] = 0.0,
    checkpoint_interval_s: Annotated[float, FiniteOption(
        "--checkpoint-interval-s", help="Training seconds between checkpoints.")] = 1800.0,
    failures_per_gpu_hour: Annotated[float | None, FiniteOption(
        "--failures-per-gpu-hour",
        help="Job interruptions per GPU-hour, each losing half a checkpoint interval "
             "(default: Llama 3's 1.97e-5).")] = None,
    restart_s: Annotated[float, FiniteOption(
        "--restart-s", help="Seconds to restart after a failure.")] = 0.0,
    activations: Annotated[str, typer.Option(
        "--activations", help="Activation convention: ffn ((18 + 4·ffn/h)·h bytes per token "
                              "per layer, the model's MLP width) or korthikanti (34·h, the "
                              "paper's 4h MLP and the question bank's).")] = "ffn",
    run: RunOpt = None,
    plot: Annotated[Path | None, PlotOption(
        help="Memory per device, stacked, against the GPU's memory (PNG).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """FLOPs (itemized, against 6ND), memory per device (the parameter state apart, GB and
    GiB), communication and time of an update; with --tokens or --epochs, the whole run's wall
    time, GPU-hours, days and cost."""
    result = api.train(**_options(ctx, run, "train", dict(
                   model=ref, seq=seq, docs=parse_ints(docs, "docs") if docs else None,
                   micro_batch=micro_batch, accumulation=accumulation, labels=labels, head=head,
                   recompute=recompute, freeze=freeze or (), lora_rank=lora_rank, qlora=qlora,
                   optimizer=optimizer, zero=zero, offload=offload, devices=devices, gpu=gpu,
                   gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs, gpu_tflops=gpu_tflops,
                   mfu=mfu, link_gbs=link_gbs, grad_dtype=grad_dtype, flash=flash,
                   pipeline=pipeline, virtual_stages=virtual_stages,
                   sequence_parallel=sequence_parallel, tp=tp, gpus_per_node=gpus_per_node,
                   inter_node_gbs=inter_node_gbs, host_link_gbs=host_link_gbs,
                   cpu_mem_gbs=cpu_mem_gbs, tokens=tokens, epochs=epochs,
                   dataset_tokens=dataset_tokens, usd_per_gpu_hour=usd_per_gpu_hour,
                   precision=precision, compiled=compiled, async_tp=async_tp, cp=cp, ep=ep,
                   allocator_overhead=allocator_overhead, eval_share=eval_share,
                   checkpoint_s=checkpoint_s, checkpoint_interval_s=checkpoint_interval_s,
                   failures_per_gpu_hour=failures_per_gpu_hour, restart_s=restart_s,
                   offload_activations=offload_activations, offload_params=offload_params,
                   optimizer_in_backward=optimizer_in_backward, overlap_ep=overlap_ep,
                   activations=activations)))
    emit(result, fmt)
    if plot is not None:
        result.plot(plot)


def rl(
    ctx: typer.Context,
    ref: OptionalModelArg = None,
    prompt_len: Annotated[int, typer.Option("--prompt-len", help="Prompt tokens P.")] = 1024,
    gen_len: Annotated[int, typer.Option("--gen-len", help="Answer tokens G.")] = 256,
    keep: Annotated[int, typer.Option("--keep", help="Samples kept for the update.")] = 16,
    keep_rate: Annotated[float | None, FiniteOption(
        "--keep-rate", help="Share of answers kept (default 0.5): generates ⌈keep / rate⌉.")
    ] = None,
    generate: Annotated[int | None, typer.Option(
        "--generate", help="Answers generated per cycle (instead of --keep-rate).")] = None,
    compare_generate: Annotated[int | None, typer.Option(
        "--compare-generate", help="Also the same cycle at this many answers, role by role "
                                   "(Fig. 3-26: 32 vs 64).")] = None,
    reference: Annotated[bool, typer.Option("--reference/--no-reference",
                                            help="A reference-model forward per answer.")] = True,
    teacher: Annotated[str | None, typer.Option("--teacher", help="Teacher model.")] = None,
    reward_model: Annotated[str | None, typer.Option("--reward-model", help="Reward model.")] =
    None,
    head: Annotated[str, typer.Option("--head", help="Head in teacher-forced passes.")] = "all",
    replicas: Annotated[int, typer.Option("--replicas", help="Generation replicas to sync.")] = 0,
    method: Annotated[str, typer.Option("--method", help="ppo, grpo or dpo (models held).")] =
    "grpo",
    optimizer: Annotated[str, typer.Option("--optimizer", help="Recipe of trained models.")] =
    "adamw",
    gpu: Annotated[str | None, typer.Option(
        "--gpu", help="Accelerator: time and cost the cycle (rollouts simulated).")] = None,
    count: Annotated[int, typer.Option("--count", min=1, max=100_000,
                                       help="Training GPUs (and rollout GPUs when colocated).")]
    = 8,
    separate: Annotated[bool, typer.Option(
        "--separate", help="A rollout pool of its own (--rollout-gpus), overlapping the "
                           "update.")] = False,
    rollout_gpus: Annotated[int | None, typer.Option(
        "--rollout-gpus", min=1, max=100_000, help="GPUs of a separate rollout pool.")] = None,
    rollout_tp: Annotated[int, typer.Option("--rollout-tp", min=1, max=64,
                                            help="Tensor parallelism of each rollout "
                                                 "replica.")] = 1,
    mfu: Annotated[float, FiniteOption("--mfu", help="MFU of reads and the update (0, 1].")]
    = 0.4,
    calibration: Annotated[str, typer.Option(
        "--calibration", help="Rollout step times: auto (vLLM profile), roofline, a profile "
                              "name or file.")] = "auto",
    usd_per_gpu_hour: Annotated[float | None, FiniteOption(
        "--usd-per-gpu-hour", help="Price (default: the price catalog's for --gpu).")] = None,
    run: RunOpt = None,
    plot: Annotated[Path | None, PlotOption(
        help="FLOPs by role (and with --gpu seconds by phase) of the cycle (PNG).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """FLOPs and tokens of one RL cycle by role: rollout, reference/teacher/reward reads,
    update, sync; the models the method keeps loaded; with --gpu, the cycle's seconds (rollouts
    through the serving simulator), GPU-hours and $ per cycle and per kept sample."""
    result = api.rl(**_options(ctx, run, "rl", dict(
                model=ref, prompt_len=prompt_len, gen_len=gen_len, keep=keep,
                keep_rate=keep_rate, generate=generate,
                reference=reference, teacher=teacher, reward_model=reward_model, head=head,
                replicas=replicas, method=method, optimizer=optimizer, gpu=gpu, count=count,
                separate=separate, rollout_gpus=rollout_gpus, rollout_tp=rollout_tp, mfu=mfu,
                calibration=calibration, usd_per_gpu_hour=usd_per_gpu_hour,
                compare_generate=compare_generate)))
    emit(result, fmt)
    if plot is not None:
        result.plot(plot)
