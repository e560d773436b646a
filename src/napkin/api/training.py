"""One training update and one RL cycle: ``napkin train | rl``."""

from collections.abc import Sequence
from pathlib import Path

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.api.specs import GpuRef, ModelRef, as_field, load_gpu, load_model
from napkin.errors import require
from napkin.units import GB

_HOST_LINK_GBS = 32.0
_CPU_MEM_GBS = 100.0


def _within(value: int, low: int, high: int, field: str) -> None:
    require(low <= value <= high, f"{field}: must be in [{low:,}, {high:,}], got {value}")


def _ref_name(ref: ModelRef | None) -> str | None:
    return ref if ref is None or isinstance(ref, str) else ref.name


@checked
def train(model: ModelRef, *, seq: int = 4096, docs: Sequence[int] | None = None,
          micro_batch: int = 1, accumulation: int = 1, labels: int | None = None,
          head: str = "all", recompute: str = "none", freeze: str | Sequence[str] = (),
          lora_rank: int = 0, qlora: bool = False, optimizer: str = "adamw", zero: int = 0,
          offload: bool = False, devices: int = 1, gpu: GpuRef | None = "h100-sxm",
          gpu_mem_gb: float | None = None, gpu_bw_gbs: float | None = None,
          gpu_tflops: float | None = None, mfu: float | None = None,
          link_gbs: float | None = None,
          grad_dtype: str | None = None, flash: bool = True, pipeline: int = 1,
          virtual_stages: int = 1, sequence_parallel: bool = False, tp: int = 1,
          gpus_per_node: int | None = None, inter_node_gbs: float = 50.0,
          host_link_gbs: float = _HOST_LINK_GBS, cpu_mem_gbs: float = _CPU_MEM_GBS,
          tokens: float | None = None, epochs: float | None = None,
          dataset_tokens: float | None = None,
          usd_per_gpu_hour: float | None = None, precision: str = "bf16",
          compiled: bool = False, async_tp: bool = False, cp: int = 1, ep: int = 1,
          allocator_overhead: float | None = None, eval_share: float = 0.0,
          checkpoint_s: float = 0.0, checkpoint_interval_s: float = 1800.0,
          failures_per_gpu_hour: float | None = None, restart_s: float = 0.0,
          offload_activations: bool = False, offload_params: bool = False,
          optimizer_in_backward: bool = False, overlap_ep: bool = False,
          activations: str = "ffn") -> Result:
    """FLOPs, memory per device, communication and time of one training update; with
    ``tokens`` (or ``epochs`` × ``dataset_tokens``) the whole run.

    An update is ``accumulation`` micro-batches of ``micro_batch`` sequences of ``seq`` tokens
    (or ``docs``, packed document lengths summing to the sequence) on each of ``devices``
    data-parallel ranks, each rank ``tp`` × ``pipeline`` GPUs. FLOPs are itemized (2 per
    multiply-add, backward = dX + dW, frozen modules skip dW; ``recompute`` adds forward work
    back) against 6ND with N the active parameters; the gap is listed (attention pairs added,
    embedding, norms and skipped head positions removed). Memory per device: weights,
    gradients and optimizer states by the ``optimizer`` recipe (``adamw`` 16 B/param,
    ``adamw-fp32-grads`` 18), sharded by ZeRO stage ``zero`` (3 = FSDP) or offloaded, plus
    activations, the loss's logits, a re-run layer under full recompute, FSDP's gathered
    layers and the caching allocator's ``allocator_overhead`` share on top (default: the
    training profile's, fitted on torchtitan's peak memory); whether the parameter state
    alone fits and whether the whole total does are reported apart, in GB (1e9 B) and GiB
    (2^30 B). ``activations``: ``ffn`` (per token per layer ``(18 + 4·ffn/h)·h`` bytes,
    Megatron's generalization to the model's MLP width) or ``korthikanti`` (the paper's and
    the question bank's ``34·h``), plus ``5·a·s`` without FlashAttention. Compute time: by
    the shipped training profile (:func:`napkin.training.efficiency.shipped_profile`, fitted on
    torchtitan's published tables: matmul, attention and elementwise efficiencies per GPU
    architecture, with its held-out error band and warnings outside what it saw), or with
    ``mfu`` every matmul at that share of its peak; gradient and
    weight traffic over ``link_gbs`` GB/s per device (default: the catalog's interconnect per
    direction), ``inter_node_gbs`` beyond ``gpus_per_node`` (default 8, or the GPU's NVLink
    domain: 72 on GB200/GB300 NVL72); the pipeline bubble and exposed
    TP/PP traffic come on top. ``freeze``: globs of frozen modules (``attn/*``, ``mlp/*``,
    ``embed``…; ``!`` un-freezes); ``lora_rank`` > 0 trains adapters only (``qlora``: NF4
    base). ``precision``: ``bf16``, or ``fp8`` / ``fp8-rowwise`` (the block linears at the
    FP8 rate, tensorwise or rowwise scales; the head and attention in BF16); ``compiled``:
    ``torch.compile``'s fused elementwise kernels (a fitted profile's own coefficient);
    ``async_tp``: TP collectives overlapped with the matmuls (Megatron's
    ``--tp-comm-overlap``, torchtitan's async TP); ``offload_activations``: the saved
    activations to host memory and back over ``host_link_gbs``, two layers' worth kept on the
    GPU; ``offload_params``: FSDP's CPU offload (``zero`` 3), the whole state on the host and
    the weight shard copied in for every forward and backward; ``optimizer_in_backward``: one
    layer's gradients held at a time (``accumulation`` 1); ``cp``: context-parallel ranks
    per sequence (each runs 1/cp of the tokens and gathers the others' K and V; FSDP shards
    over ``devices × cp``; GPUs = devices × tp × pipeline × cp); ``ep``: expert-parallel ranks
    (out of devices × cp, TP 1): each holds 1/ep of the routed experts and runs the tokens
    routed to them (the busiest rank's expected share), with every MoE layer's dispatch and
    combine all-to-all on the critical path (``overlap_ep``: under other micro-batches'
    compute, as DeepSeek-V3's DualPipe runs them). A run is
    ``⌈tokens / tokens per update⌉`` updates: wall time (s), GPU-hours, days and $ at
    ``usd_per_gpu_hour`` (default: the price catalog's; a GPU it lacks gets the time
    without $), with what a run spends around its
    updates (:class:`napkin.training.run.Goodput`): ``eval_share`` of the wall time
    evaluating, ``checkpoint_s`` blocking every ``checkpoint_interval_s`` of training, and
    ``failures_per_gpu_hour`` (default Llama 3's 1.97e-5: 419 unexpected interruptions in 54
    days on 16,384 H100) each losing half a checkpoint interval and ``restart_s``.

    ``plot``: the memory per device, stacked, against the device's memory.
    ``value``: :class:`~napkin.training.plan.TrainingResult` — ``plan``
    (:class:`~napkin.training.plan.TrainPlan`) and ``run``
    (:class:`~napkin.training.run.TrainingRun`, None without ``tokens``/``epochs``).
    """
    from napkin.report.train_views import train_doc
    from napkin.specs.model import check_tensor_parallel
    from napkin.timing.comm import nvlink_domain_of
    from napkin.training.efficiency import PRECISIONS, matmul_rate, shipped_profile
    from napkin.training.flops import TrainShape
    from napkin.training.memory import recipe
    from napkin.training.parallel import GRAD_WIRE_BYTES
    from napkin.training.plan import Cluster, TrainingResult, plan_training

    spec = load_model(model)
    documents = tuple(docs) if docs is not None else (seq,)
    frozen = (freeze,) if isinstance(freeze, str) else tuple(freeze)
    shape = TrainShape(documents, micro_batch, accumulation, labels, head, recompute)
    spec.check_context(shape.sequence_tokens, "seq")
    require(link_gbs is None or 0 < link_gbs < float("inf"),
            f"link-gbs: must be a finite number > 0, got {link_gbs}")
    acc = load_gpu(gpu, gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs, gpu_tflops=gpu_tflops)
    link = link_gbs * GB if link_gbs is not None else acc.allreduce_bytes_per_s
    require(precision in PRECISIONS,
            f"precision: must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    require(not async_tp or tp > 1, "async-tp: needs --tp > 1")
    require(not overlap_ep or ep > 1, "overlap-ep: needs --ep > 1")
    require(grad_dtype is None or grad_dtype in GRAD_WIRE_BYTES,
            f"grad-dtype: must be bf16, fp16 or fp32, got {grad_dtype!r}")
    for name, value in (("host-link-gbs", host_link_gbs), ("cpu-mem-gbs", cpu_mem_gbs)):
        require(0 < value < float("inf"), f"{name}: must be a finite number > 0, got {value}")
    require(offload or offload_activations or offload_params or host_link_gbs == _HOST_LINK_GBS,
            "host-link-gbs: applies only with --offload, --offload-activations or "
            "--offload-params")
    require(offload or offload_params or cpu_mem_gbs == _CPU_MEM_GBS,
            "cpu-mem-gbs: applies only with --offload or --offload-params")
    require(0 < inter_node_gbs < float("inf"),
            f"inter-node-gbs: must be a finite number > 0, got {inter_node_gbs}")
    require(1 <= pipeline <= spec.num_layers,
            f"pipeline: must be in [1, {spec.num_layers}] (the layers), got {pipeline}")
    _within(virtual_stages, 1, 1024, "virtual-stages")
    _within(tp, 1, 1024, "tp")
    _within(cp, 1, 1024, "cp")
    _within(ep, 1, 1024, "ep")
    if gpus_per_node is None:  # a node of 8, or the GPU's NVLink domain (NVL72: 72)
        gpus_per_node = nvlink_domain_of(acc)
    _within(gpus_per_node, 1, 1024, "gpus-per-node")
    check_tensor_parallel(spec, tp, "tp")
    rate = matmul_rate(precision)
    require(rate in acc.dense_flops_per_s,
            f"precision: {precision} runs at the {rate.upper()} rate, which {acc.id} lacks "
            f"(it has {', '.join(acc.dense_flops_per_s) or 'none'})")
    profile = shipped_profile()
    require(allocator_overhead is None or 0 <= allocator_overhead <= 10,
            f"allocator-overhead: must be a share in [0, 10], got {allocator_overhead}")
    overhead = profile.allocator_overhead if allocator_overhead is None else allocator_overhead
    cluster = Cluster(acc, devices, zero, offload, link, 0.4 if mfu is None else mfu,
                      tensor_parallel=tp, flash=flash,
                      sequence_parallel=sequence_parallel, pipeline_stages=pipeline,
                      virtual_stages=virtual_stages, gpus_per_node=gpus_per_node,
                      inter_node_bytes_per_s=inter_node_gbs * GB,
                      grad_wire_bytes=None if grad_dtype is None else GRAD_WIRE_BYTES[grad_dtype],
                      host_link_bytes_per_s=host_link_gbs * GB,
                      cpu_mem_bytes_per_s=cpu_mem_gbs * GB, precision=precision,
                      compiled=compiled, async_tp=async_tp, context_parallel=cp,
                      expert_parallel=ep, offload_activations=offload_activations,
                      offload_params=offload_params,
                      optimizer_in_backward=optimizer_in_backward, overlap_ep=overlap_ep,
                      profile=profile if mfu is None else None,
                      allocator_overhead=overhead, activations=activations)
    plan = plan_training(spec, shape, cluster, recipe(optimizer), frozen, lora_rank,
                         qlora=qlora)
    inputs = {"model": spec.name, "documents": list(documents), "micro_batch": micro_batch,
              "accumulation": accumulation, "labels": labels, "head": head,
              "recompute": recompute, "frozen": list(frozen), "lora_rank": lora_rank,
              "qlora": qlora}
    assumptions = {"optimizer": optimizer, "zero": zero, "offload": offload,
                   "devices": devices, "gpu": cluster.acc.id,
                   "compute": (f"training profile {profile.name} (held-out median "
                               f"{profile.holdout_median:.1%}; tokens/s band "
                               f"{profile.band[0]:+.0%} … {profile.band[1]:+.0%})"
                               if mfu is None else f"mfu {mfu:g} of each matmul's peak"),
                   "mfu": mfu,
                   "allocator_overhead": overhead,
                   "allocator_source": ("--allocator-overhead" if allocator_overhead is not None
                                        else f"training profile {profile.name}: measured peak "
                                        "reserved / allocated on torchtitan's runs"),
                   "precision": precision, "compiled": compiled, "async_tp": async_tp,
                   "context_parallel": cp, "expert_parallel": ep,
                   "offload_activations": offload_activations, "offload_params": offload_params,
                   "optimizer_in_backward": optimizer_in_backward, "overlap_ep": overlap_ep,
                   "activations": activations,
                   "link_bytes_per_s": link,
                   "link_source": "--link-gbs" if link_gbs is not None else
                   f"{acc.interconnect or 'no interconnect listed'}: catalog per-direction "
                   "bandwidth (PCIe 4 ×16, 32 GB/s, where none)", "flash_attention": flash,
                   "pipeline_stages": pipeline, "virtual_stages": virtual_stages,
                   "tensor_parallel": tp, "sequence_parallel": sequence_parallel,
                   "gpus_per_node": gpus_per_node, "inter_node_bytes_per_s": inter_node_gbs * GB,
                   "grad_dtype": grad_dtype or "recipe",
                   **({"host_link_bytes_per_s": host_link_gbs * GB,
                       "cpu_mem_bytes_per_s": cpu_mem_gbs * GB}
                      if offload or offload_params else {}),
                   **({"host_link_bytes_per_s": host_link_gbs * GB}
                      if offload_activations else {})}
    run = None
    if tokens is not None or epochs is not None or dataset_tokens is not None:
        from napkin.planning.prices import hourly_price, price_catalog
        from napkin.training.run import LLAMA3_FAILURES_PER_GPU_HOUR, Goodput, training_run

        usd: float | None
        if usd_per_gpu_hour is None and cluster.acc.id not in price_catalog():
            usd, source = None, (f"the price catalog has no {cluster.acc.id}: time without $; "
                                 "give --usd-per-gpu-hour for the cost")
        else:
            usd, source = hourly_price(cluster.acc.id, usd_per_gpu_hour)
        rate = (LLAMA3_FAILURES_PER_GPU_HOUR if failures_per_gpu_hour is None
                else failures_per_gpu_hour)
        goodput = Goodput(eval_share, checkpoint_s, checkpoint_interval_s, rate, restart_s)
        run = training_run(tokens, epochs, dataset_tokens, plan.tokens_per_update,
                           plan.update_s, plan.gpus, usd, source, goodput)
        assumptions.update(usd_per_gpu_hour=usd, price_source=source, eval_share=eval_share,
                           checkpoint_s=checkpoint_s,
                           checkpoint_interval_s=checkpoint_interval_s,
                           failures_per_gpu_hour=rate,
                           failures_source=("--failures-per-gpu-hour"
                                            if failures_per_gpu_hour is not None else
                                            "Llama 3 §3.3.4: 419 unexpected interruptions in "
                                            "54 days on 16,384 H100"), restart_s=restart_s)
    else:
        require(usd_per_gpu_hour is None, "usd-per-gpu-hour: only with --tokens or --epochs")
        for name, value, default in (
                ("eval-share", eval_share, 0.0), ("checkpoint-s", checkpoint_s, 0.0),
                ("checkpoint-interval-s", checkpoint_interval_s, 1800.0),
                ("failures-per-gpu-hour", failures_per_gpu_hour, None),
                ("restart-s", restart_s, 0.0)):
            require(value == default, f"{name}: only with --tokens or --epochs")
    warnings = profile.warnings(cluster.acc, precision) if mfu is None else []
    datasheet = cluster.acc.memory_bytes

    def plotter(path: Path) -> None:
        from napkin.report.train_plots import plot_train_memory

        plot_train_memory(plan.fit, f"{spec.name} on {cluster.acc.id}: memory per device",
                          path, datasheet)

    return Result(train_doc(plan, inputs, assumptions, run, profile if mfu is None else None,
                            warnings, datasheet), TrainingResult(plan, run), plotter)


@checked
def rl(model: ModelRef, *, prompt_len: int = 1024, gen_len: int = 256, keep: int = 16,
       keep_rate: float | None = None, generate: int | None = None, reference: bool = True,
       teacher: ModelRef | None = None,
       reward_model: ModelRef | None = None, head: str = "all", replicas: int = 0,
       method: str = "grpo", optimizer: str = "adamw", gpu: str | None = None, count: int = 8,
       separate: bool = False, rollout_gpus: int | None = None, rollout_tp: int = 1,
       mfu: float = 0.4, calibration: str = "auto",
       usd_per_gpu_hour: float | None = None, compare_generate: int | None = None) -> Result:
    """FLOPs of one RL cycle by role, the models the method keeps loaded, and with ``gpu``
    the cycle's seconds, GPU-hours and dollars.

    A cycle generates ``n = ⌈keep / keep_rate⌉`` answers (``keep_rate`` default ½; a quotient
    within 1e-6 of a whole number is that number: 16 at 0.3333333333 is 48), or ``generate``
    answers, of ``gen_len`` tokens to ``prompt_len``-token prompts (``n·P`` prompt and ``n·G``
    generated tokens; rollout prefill and decode at 2 FLOPs per multiply-add),
    reads each answer with the reference (``reference``), ``teacher`` and ``reward_model``
    (one teacher-forced forward each; ``head``: LM head at all or at labelled positions), and
    updates the policy on the ``keep`` kept samples (forward + backward over
    ``keep·(P + G − 1)`` input tokens, ``keep·G`` labelled); the weight sync
    copies BF16 weights to ``replicas`` generation replicas: ``F_cycle(n) = n(f_g + f_r) + F_u``
    FLOPs. ``method`` (ppo, grpo, dpo) sets the models held, with their parameter state under
    the ``optimizer`` recipe (bytes). With ``gpu`` (a catalog id) on ``count`` training GPUs:
    rollouts through the serving simulator (``calibration``: auto, roofline, a profile name or
    file; TP ``rollout_tp``, on the training GPUs or ``separate`` on ``rollout_gpus``), reads
    and the update at ``FLOPs / (count · peak · mfu)`` s; colocated ``cycle = rollout + reads +
    update + sync``, separate ``max(rollout, reads + update + sync)``; $ = GPUs × cycle hours ×
    ``usd_per_gpu_hour`` (default: the price catalog's).

    ``compare_generate``: the same cycle at this many answers too, role by role (the
    chapter's Fig. 3-26: 32 → 64 answers for 16 kept grows rollout and reference reads, not the
    update). ``plot``: the cycle's FLOPs by role (beside the compared cycle; with ``gpu`` its
    seconds by phase).
    ``value``: dict with ``cycle`` (:class:`~napkin.reinforcement.cycle.RLCycle`), ``models_held``
    (tuple of :class:`~napkin.reinforcement.memory.RoleMemory`), ``compare`` (the compared
    cycle or None) and ``timing``
    (:class:`~napkin.reinforcement.timing.RLTiming`, None without ``gpu``).
    """
    from napkin.reinforcement.cycle import rl_cycle
    from napkin.reinforcement.memory import rl_memory
    from napkin.report.train_views import rl_doc
    from napkin.training.memory import recipe

    spec = load_model(model)
    _within(count, 1, 100_000, "count")
    if rollout_gpus is not None:
        _within(rollout_gpus, 1, 100_000, "rollout-gpus")
    _within(rollout_tp, 1, 64, "rollout-tp")
    spec.check_context(prompt_len + gen_len, "prompt-len + gen-len")
    teacher_spec = (as_field("teacher", lambda: load_model(teacher))
                    if teacher is not None else None)
    reward_spec = (as_field("reward_model", lambda: load_model(reward_model))
                   if reward_model is not None else None)
    require(keep_rate is None or generate is None,
            "generate: give --generate or --keep-rate, not both")
    if generate is not None:
        _within(generate, 1, 100_000, "generate")
    rate = 0.5 if keep_rate is None else keep_rate
    cycle = rl_cycle(spec, prompt_len, gen_len, keep, rate, reference, teacher_spec,
                     reward_spec, head, replicas, generate=generate)
    compare = None
    if compare_generate is not None:
        _within(compare_generate, 1, 100_000, "compare-generate")
        compare = rl_cycle(spec, prompt_len, gen_len, keep, rate, reference, teacher_spec,
                           reward_spec, head, replicas, generate=compare_generate)
    roles = rl_memory(method, spec, recipe(optimizer), reward_spec)
    inputs = {"model": spec.name, "prompt_tokens": prompt_len, "gen_tokens": gen_len,
              "keep": keep, "keep_rate": keep / cycle.generated if generate else rate,
              "generate": cycle.generated, "compare_generate": compare_generate,
              "reference": reference,
              "teacher": _ref_name(teacher), "reward_model": _ref_name(reward_model),
              "head": head, "replicas": replicas, "method": method, "optimizer": optimizer}
    timing = None
    if gpu is not None:
        from napkin.planning.prices import hourly_price
        from napkin.reinforcement.timing import RLPools, rl_timing

        pools = RLPools(gpu, count, (rollout_gpus or count) if separate else count,
                        rollout_tp, not separate, mfu, calibration)
        require(separate or rollout_gpus is None, "rollout-gpus: only with --separate")
        usd, _ = hourly_price(gpu, usd_per_gpu_hour)
        timing = rl_timing(spec, cycle, prompt_len, gen_len, pools, usd)
        inputs.update(gpu=gpu, count=count, separate=separate, rollout_gpus=pools.rollout_gpus,
                      rollout_tp=rollout_tp, mfu=mfu, calibration=calibration,
                      usd_per_gpu_hour=usd)
    else:
        require(usd_per_gpu_hour is None and not separate and rollout_gpus is None,
                "gpu: --usd-per-gpu-hour, --separate and --rollout-gpus need --gpu")
    def plotter(path: Path) -> None:
        from napkin.report.train_plots import plot_rl_cycle

        plot_rl_cycle(cycle, spec.name, path, timing, compare)

    return Result(rl_doc(spec.name, cycle, roles, inputs, timing, compare),
                  {"cycle": cycle, "models_held": roles, "timing": timing, "compare": compare},
                  plotter)


@checked
def run_record(path: str | Path, *, kind: str = "train") -> Result:
    """A run record's options (:mod:`napkin.training.record`): a YAML or JSON file of a
    training (``kind`` ``train``) or RL (``rl``) run's inputs under :func:`train`'s or
    :func:`rl`'s keywords, with its ``name``, ``stage`` and ``source``. Replay it with
    ``napkin.train(**napkin.run_record(path).value["options"])`` (or ``napkin train --run
    FILE``, where command-line options override the file's). ``value``: dict with ``kind``,
    ``record`` (the file's model) and ``options`` (the keywords it sets, ``model`` included).
    """
    from napkin.report.econ_views import result_doc
    from napkin.training.record import read_run_record, record_options

    record = read_run_record(path, kind)
    options = record_options(record)
    rows = [[k, str(v)] for k, v in options.items()]
    notes = [f"{k}: {v}" for k in ("name", "stage", "source", "notes")
             if (v := getattr(record, k)) is not None]
    data = {"kind": kind, "options": options}
    doc = result_doc(f"run record ({kind})", rows, data, {"path": str(path), "kind": kind},
                     notes, ["option", "value"])
    return Result(doc, {"kind": kind, "record": record, "options": options})
