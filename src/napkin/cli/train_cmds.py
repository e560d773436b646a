"""``napkin train`` and ``napkin rl``."""

from typing import Annotated

import typer

from napkin.cli.common import (
    BwOpt,
    FiniteOption,
    Format,
    FormatOpt,
    GpuOpt,
    MemOpt,
    ModelArg,
    TflopsOpt,
    accelerator,
    emit,
    parse_ints,
)
from napkin.errors import require
from napkin.units import GB


def train(
    ref: ModelArg,
    seq: Annotated[int, typer.Option("--seq", help="Tokens per sequence P.")] = 4096,
    docs: Annotated[str | None, typer.Option(
        "--docs", help="Packed document lengths, comma-separated (sum = the sequence).")] = None,
    micro_batch: Annotated[int, typer.Option("--micro-batch", help="Sequences B_μ.")] = 1,
    accumulation: Annotated[int, typer.Option("--accumulation", help="Micro-batches a.")] = 1,
    labels: Annotated[int | None, typer.Option("--labels", help="Labelled tokens/sequence.")] =
    None,
    head: Annotated[str, typer.Option("--head", help="LM head on all or labelled.")] = "all",
    recompute: Annotated[str, typer.Option("--recompute", help="none, selective or full.")] =
    "none",
    freeze: Annotated[list[str] | None, typer.Option(
        "--freeze", help="Glob of frozen modules (attn/*, mlp/*, embed…); ! un-freezes.")] = None,
    lora_rank: Annotated[int, typer.Option("--lora-rank", help="LoRA rank (0: off).")] = 0,
    qlora: Annotated[bool, typer.Option("--qlora", help="NF4 base (with --lora-rank).")] = False,
    optimizer: Annotated[str, typer.Option(
        "--optimizer", help="adamw (16 B/param), adamw-fp32-grads (18), adamw-8bit, sgd, "
                            "sgd-momentum.")] = "adamw",
    zero: Annotated[int, typer.Option("--zero", help="ZeRO stage 0–3 (3 = FSDP).")] = 0,
    offload: Annotated[bool, typer.Option("--offload", help="Optimizer states on CPU.")] = False,
    devices: Annotated[int, typer.Option("--devices", help="Data-parallel ranks (each --tp × "
                                                           "--pipeline GPUs).")] = 1,
    gpu: GpuOpt = "h100-sxm", gpu_mem_gb: MemOpt = None, gpu_bw_gbs: BwOpt = None,
    gpu_tflops: TflopsOpt = None,
    mfu: Annotated[float, FiniteOption(
        "--mfu", help="Share of dense peak while computing; bubble and exposed TP/PP traffic "
                      "come on top (the output's achieved_mfu is the end-to-end figure).")] =
    0.4,
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
    gpus_per_node: Annotated[int, typer.Option(
        "--gpus-per-node", min=1, max=1024, help="GPUs on one intra-node link.")] = 8,
    inter_node_gbs: Annotated[float, FiniteOption(
        "--inter-node-gbs", help="Inter-node network per GPU and direction, GB/s (400 Gb/s "
                                 "InfiniBand: 50).")] = 50.0,
    host_link_gbs: Annotated[float, FiniteOption(
        "--host-link-gbs", help="GPU ↔ CPU link per direction for --offload, GB/s "
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
    fmt: FormatOpt = Format.table,
) -> None:
    """FLOPs (itemized, against 6ND), memory per device, communication and time of an update;
    with --tokens or --epochs, the whole run's wall time, GPU-hours, days and cost."""
    from napkin.catalog import load_model
    from napkin.report.train_views import train_doc
    from napkin.training.flops import TrainShape
    from napkin.training.memory import recipe
    from napkin.training.plan import Cluster, plan_training

    model = load_model(ref)
    documents = tuple(parse_ints(docs, "docs")) if docs else (seq,)
    shape = TrainShape(documents, micro_batch, accumulation, labels, head, recompute)
    model.check_context(shape.sequence_tokens, "seq")
    require(link_gbs is None or 0 < link_gbs < float("inf"),
            f"link-gbs: must be a finite number > 0, got {link_gbs}")
    acc = accelerator(gpu, gpu_mem_gb, gpu_bw_gbs, gpu_tflops)
    link = link_gbs * GB if link_gbs is not None else acc.allreduce_bytes_per_s
    wire = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}
    require(grad_dtype is None or grad_dtype in wire,
            f"grad-dtype: must be bf16, fp16 or fp32, got {grad_dtype!r}")
    for name, value in (("host-link-gbs", host_link_gbs), ("cpu-mem-gbs", cpu_mem_gbs)):
        require(0 < value < float("inf"), f"{name}: must be a finite number > 0, got {value}")
    for name, value, default in (("host-link-gbs", host_link_gbs, 32.0),
                                 ("cpu-mem-gbs", cpu_mem_gbs, 100.0)):
        require(offload or value == default, f"{name}: applies only with --offload")
    require(0 < inter_node_gbs < float("inf"),
            f"inter-node-gbs: must be a finite number > 0, got {inter_node_gbs}")
    require(pipeline >= 1 and pipeline <= model.num_layers,
            f"pipeline: must be in [1, {model.num_layers}] (the layers), got {pipeline}")
    from napkin.specs.model import check_tensor_parallel
    check_tensor_parallel(model, tp)
    cluster = Cluster(acc, devices, zero, offload, link, mfu, tensor_parallel=tp, flash=flash,
                      sequence_parallel=sequence_parallel, pipeline_stages=pipeline,
                      virtual_stages=virtual_stages, gpus_per_node=gpus_per_node,
                      inter_node_bytes_per_s=inter_node_gbs * GB,
                      grad_wire_bytes=None if grad_dtype is None else wire[grad_dtype],
                      host_link_bytes_per_s=host_link_gbs * GB,
                      cpu_mem_bytes_per_s=cpu_mem_gbs * GB)
    plan = plan_training(model, shape, cluster, recipe(optimizer), tuple(freeze or ()),
                         lora_rank, qlora=qlora)
    inputs = {"model": model.name, "documents": list(documents), "micro_batch": micro_batch,
              "accumulation": accumulation, "labels": labels, "head": head,
              "recompute": recompute, "frozen": list(freeze or ()), "lora_rank": lora_rank,
              "qlora": qlora}
    assumptions = {"optimizer": optimizer, "zero": zero, "offload": offload,
                   "devices": devices, "gpu": cluster.acc.id, "mfu": mfu,
                   "link_bytes_per_s": link,
                   "link_source": "--link-gbs" if link_gbs is not None else
                   f"{acc.interconnect or 'no interconnect listed'}: catalog per-direction "
                   "bandwidth (PCIe 4 ×16, 32 GB/s, where none)", "flash_attention": flash,
                   "pipeline_stages": pipeline, "virtual_stages": virtual_stages,
                   "tensor_parallel": tp, "sequence_parallel": sequence_parallel,
                   "gpus_per_node": gpus_per_node, "inter_node_bytes_per_s": inter_node_gbs * GB,
                   "grad_dtype": grad_dtype or "recipe",
                   **({"host_link_bytes_per_s": host_link_gbs * GB,
                       "cpu_mem_bytes_per_s": cpu_mem_gbs * GB} if offload else {})}
    run = None
    if tokens is not None or epochs is not None or dataset_tokens is not None:
        from napkin.planning.prices import hourly_price
        from napkin.training.run import training_run

        usd, source = hourly_price(cluster.acc.id, usd_per_gpu_hour)
        run = training_run(tokens, epochs, dataset_tokens, plan.tokens_per_update,
                           plan.update_s, plan.gpus, usd, source)
        assumptions.update(usd_per_gpu_hour=usd, price_source=source)
    else:
        require(usd_per_gpu_hour is None, "usd-per-gpu-hour: only with --tokens or --epochs")
    emit(train_doc(plan, inputs, assumptions, run), fmt)


def rl(
    ref: ModelArg,
    prompt_len: Annotated[int, typer.Option("--prompt-len", help="Prompt tokens P.")] = 1024,
    gen_len: Annotated[int, typer.Option("--gen-len", help="Answer tokens G.")] = 256,
    keep: Annotated[int, typer.Option("--keep", help="Samples kept for the update.")] = 16,
    keep_rate: Annotated[float, FiniteOption("--keep-rate", help="Share of answers kept.")] = 0.5,
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
    fmt: FormatOpt = Format.table,
) -> None:
    """FLOPs of one RL cycle by role: rollout, reference/teacher/reward reads, update, sync;
    the models the method keeps loaded; with --gpu, the cycle's seconds (rollouts through the
    serving simulator), GPU-hours and $ per cycle and per kept sample."""
    from napkin.catalog import load_model
    from napkin.report.train_views import rl_doc
    from napkin.rl.cycle import rl_cycle
    from napkin.rl.memory import rl_memory
    from napkin.training.memory import recipe

    model = load_model(ref)
    model.check_context(prompt_len + gen_len, "prompt-len + gen-len")
    cycle = rl_cycle(model, prompt_len, gen_len, keep, keep_rate, reference,
                     load_model(teacher) if teacher else None,
                     load_model(reward_model) if reward_model else None, head, replicas)
    roles = rl_memory(method, model, recipe(optimizer),
                      load_model(reward_model) if reward_model else None)
    inputs = {"model": model.name, "prompt_tokens": prompt_len, "gen_tokens": gen_len,
              "keep": keep, "keep_rate": keep_rate, "reference": reference,
              "teacher": teacher, "reward_model": reward_model, "head": head,
              "replicas": replicas, "method": method, "optimizer": optimizer}
    timing = None
    if gpu is not None:
        from napkin.planning.prices import hourly_price
        from napkin.rl.timing import RLPools, rl_timing

        pools = RLPools(gpu, count, (rollout_gpus or count) if separate else count,
                        rollout_tp, not separate, mfu, calibration)
        require(separate or rollout_gpus is None, "rollout-gpus: only with --separate")
        usd_per_gpu_hour, _ = hourly_price(gpu, usd_per_gpu_hour)
        timing = rl_timing(model, cycle, prompt_len, gen_len, pools, usd_per_gpu_hour)
        inputs.update(gpu=gpu, count=count, separate=separate, rollout_gpus=pools.rollout_gpus,
                      rollout_tp=rollout_tp, mfu=mfu, calibration=calibration,
                      usd_per_gpu_hour=usd_per_gpu_hour)
    else:
        require(usd_per_gpu_hour is None and not separate and rollout_gpus is None,
                "gpu: --usd-per-gpu-hour, --separate and --rollout-gpus need --gpu")
    emit(rl_doc(model.name, cycle, roles, inputs, timing), fmt)
